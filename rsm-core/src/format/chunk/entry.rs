//! The chunk entry (SR-32's remoteLogIndex entry) and its RDI: their types, encoding and decoding.

use crate::crypto::ChunkBinding;
use crate::error::{Error, Result};
use crate::format::codec::Reader;
use crate::model::Uuid;

/// Current entry magic.
pub const ENTRY_MAGIC: i16 = 0;
/// Size of an entry before its RDI.
pub const ENTRY_FIXED_LEN: usize = 46;
/// Size of our RDI as written for a chunk stored as is (version 1).
pub const RDI_LEN: usize = 52;
/// Size of our RDI as written for a transformed chunk (version 2).
pub const RDI_V2_LEN: usize = 56;
/// Size of a version-0 RDI (manifest version 1).
pub const RDI_V0_LEN: usize = 44;

/// Which object of a segment holds a chunk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum RdiObject {
    /// The segment's `.log` object.
    Log = 0,
}

/// How a chunk's bytes were transformed before storing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Transform {
    /// Stored as is.
    None = 0,
    /// One zstd frame of the chunk's original bytes (see [`crate::format::transform`]).
    Zstd = 1,
    /// The original bytes encrypted with AES-256-GCM under the segment's data key block by block (the
    /// manifest's integrity blocks): `nonce ‖ ciphertext ‖ tag` per block, so a read of part of the chunk
    /// decrypts only its blocks (see [`crate::crypto`]); manifest version 4 only.
    Aes256Gcm = 2,
    /// One zstd frame of the original bytes, then encrypted with AES-256-GCM as one piece, `nonce ‖
    /// ciphertext ‖ tag` (compress, then encrypt; the frame is read whole anyway); manifest version 4 only.
    ZstdAes256Gcm = 3,
    /// The original bytes cut into frames of the manifest's frame size (whole blocks; the last one may be
    /// shorter), each compressed as an independent zstd frame, the frames back to back in order; the
    /// manifest's frame table gives each frame's stored length and CRC-32C, so a read of part of the chunk
    /// reads and decompresses only the frames holding it; manifest version 5 only.
    ZstdFrames = 4,
    /// [`Transform::ZstdFrames`] with each frame then encrypted with AES-256-GCM on its own, `nonce ‖
    /// ciphertext ‖ tag`, bound to its chunk, index and original position (see [`crate::crypto`]); manifest
    /// version 5 only.
    ZstdFramesAes256Gcm = 5,
}

impl Transform {
    /// Whether the stored bytes are encrypted.
    pub fn is_encrypted(self) -> bool {
        matches!(self, Transform::Aes256Gcm | Transform::ZstdAes256Gcm | Transform::ZstdFramesAes256Gcm)
    }

    /// Whether the (decrypted) bytes are zstd: one frame, or with [`Transform::is_framed`] one frame per
    /// frame of the manifest's frame size.
    pub fn is_compressed(self) -> bool {
        matches!(
            self,
            Transform::Zstd | Transform::ZstdAes256Gcm | Transform::ZstdFrames | Transform::ZstdFramesAes256Gcm
        )
    }

    /// Whether the chunk is stored as independent frames, each described by the manifest's frame table
    /// (manifest version 5).
    pub fn is_framed(self) -> bool {
        matches!(self, Transform::ZstdFrames | Transform::ZstdFramesAes256Gcm)
    }
}

/// One frame of a chunk stored in frames ([`Transform::is_framed`]), as the manifest's frame table keeps it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct StoredFrame {
    /// Length of the frame's stored bytes (its zstd frame, sealed when encrypted).
    pub stored_length: u32,
    /// CRC-32C of the frame's stored bytes.
    pub stored_crc32c: u32,
}

/// How many frames of `frame_size` bytes a chunk of `data_length` original bytes is cut into (0 when
/// `frame_size` is 0).
pub fn frame_count(data_length: u32, frame_size: u32) -> usize {
    if frame_size == 0 { 0 } else { (data_length as usize).div_ceil(frame_size as usize) }
}

/// Where a chunk lives, and its checksum.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Rdi {
    /// The object holding the chunk.
    pub object: RdiObject,
    /// Transformation applied.
    pub transform: Transform,
    /// Start offset of the segment owning the object.
    pub segment_start_offset: i64,
    /// Id of the segment owning the object.
    pub segment_id: Uuid,
    /// Byte position of the stored chunk in the object.
    pub stored_position: u64,
    /// Stored length (equals the data length when untransformed).
    pub stored_length: u32,
    /// CRC-32C of the chunk's original bytes.
    pub crc32c: u32,
    /// Byte position of the chunk's original bytes in the segment's `.log` file.
    pub original_position: u64,
    /// CRC-32C of the chunk's stored bytes: for a transformed chunk written in RDI version 2; for a chunk
    /// stored as is, not written and equal to [`Rdi::crc32c`] (its stored bytes are its original ones).
    pub stored_crc32c: u32,
}

impl Rdi {
    /// The version this RDI is written in: 2 for a transformed chunk (it carries the stored CRC), else 1.
    fn version(&self) -> u8 {
        if self.transform == Transform::None { 1 } else { 2 }
    }

    /// Its encoded length.
    fn encoded_len(&self) -> usize {
        if self.version() == 1 { RDI_LEN } else { RDI_V2_LEN }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.version(), self.object as u8, self.transform as u8, 0]);
        out.extend_from_slice(&self.segment_start_offset.to_be_bytes());
        out.extend_from_slice(&self.segment_id.to_bytes());
        out.extend_from_slice(&self.stored_position.to_be_bytes());
        out.extend_from_slice(&self.stored_length.to_be_bytes());
        out.extend_from_slice(&self.crc32c.to_be_bytes());
        out.extend_from_slice(&self.original_position.to_be_bytes());
        if self.version() == 2 {
            out.extend_from_slice(&self.stored_crc32c.to_be_bytes());
        }
    }

    /// Decodes an RDI of version 0, 1 or 2 (its first byte), checking its length against its version; a
    /// transformed chunk needs version 2 (the stored CRC), and version 2 is only for one.
    fn decode(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b, "chunk RDI");
        let version = r.u8()?;
        if !matches!((version, b.len()), (0, RDI_V0_LEN) | (1, RDI_LEN) | (2, RDI_V2_LEN)) {
            return Err(Error::corrupt(format!("chunk RDI: version {version}, length {} unsupported", b.len())));
        }
        let object = match r.u8()? {
            0 => RdiObject::Log,
            o => return Err(Error::corrupt(format!("chunk RDI: unknown object {o}"))),
        };
        let transform = match r.u8()? {
            0 => Transform::None,
            1 if version >= 2 => Transform::Zstd,
            2 if version >= 2 => Transform::Aes256Gcm,
            3 if version >= 2 => Transform::ZstdAes256Gcm,
            4 if version >= 2 => Transform::ZstdFrames,
            5 if version >= 2 => Transform::ZstdFramesAes256Gcm,
            t => return Err(Error::corrupt(format!("chunk RDI: unknown transform {t} (RDI version {version})"))),
        };
        if version == 2 && transform == Transform::None {
            // One encoding per entry: a chunk stored as is is written in version 1.
            return Err(Error::corrupt("chunk RDI: version 2 for a chunk stored as is"));
        }
        let _reserved = r.u8()?;
        let segment_start_offset = r.i64()?;
        let segment_id = Uuid::from_bytes(r.bytes(16)?.try_into().expect("16 bytes"));
        let stored_position = r.u64()?;
        let stored_length = r.u32()?;
        let crc32c = r.u32()?;
        let original_position = if version == 0 { stored_position } else { r.u64()? };
        let stored_crc32c = if version >= 2 { r.u32()? } else { crc32c };
        Ok(Rdi {
            object,
            transform,
            segment_start_offset,
            segment_id,
            stored_position,
            stored_length,
            crc32c,
            original_position,
            stored_crc32c,
        })
    }
}

/// One chunk: a run of whole record batches, indexed as a remoteLogIndex entry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkEntry {
    /// Base offset of the first batch.
    pub first_offset: i64,
    /// Last offset of the last batch.
    pub last_offset: i64,
    /// Base timestamp of the first batch.
    pub first_timestamp: i64,
    /// Largest max timestamp of the chunk's batches.
    pub last_timestamp: i64,
    /// Length of the chunk's original bytes.
    pub data_length: u32,
    /// Where it is stored.
    pub rdi: Rdi,
}

impl ChunkEntry {
    /// Byte position of the chunk in the original `.log` file ([`ChunkEntry::stored_range`] says where it
    /// is stored).
    pub fn original_position(&self) -> u64 {
        self.rdi.original_position
    }

    /// One past the chunk's last byte in the original `.log` file.
    pub fn end(&self) -> u64 {
        self.rdi.original_position + self.data_length as u64
    }

    /// Where the chunk is stored in its object: position and length after any transform.
    pub fn stored_range(&self) -> std::ops::Range<u64> {
        self.rdi.stored_position..self.rdi.stored_position + self.rdi.stored_length as u64
    }

    /// Whether the chunk is stored transformed (compressed, encrypted): a read of any of its bytes then reads,
    /// checks and undoes its stored bytes (all of them for one zstd frame; for frames or an encrypted chunk
    /// not compressed, those of the frames or blocks holding the bytes).
    pub fn is_transformed(&self) -> bool {
        self.rdi.transform != Transform::None
    }

    /// Encoded size of this entry (as written: RDI version 1, or 2 for a transformed chunk).
    pub fn encoded_len(&self) -> usize {
        ENTRY_FIXED_LEN + self.rdi.encoded_len()
    }

    /// Appends the SR-32 encoding.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&ENTRY_MAGIC.to_be_bytes());
        out.extend_from_slice(&((self.encoded_len() - 4) as i16).to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.first_offset.to_be_bytes());
        out.extend_from_slice(&self.last_offset.to_be_bytes());
        out.extend_from_slice(&self.first_timestamp.to_be_bytes());
        out.extend_from_slice(&self.last_timestamp.to_be_bytes());
        out.extend_from_slice(&self.data_length.to_be_bytes());
        out.extend_from_slice(&(self.rdi.encoded_len() as i16).to_be_bytes());
        self.rdi.encode(out);
        let crc = crate::checksum::crc32c(&out[start + 8..]);
        out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
    }

    /// Decodes one entry (with an RDI of version 0 or 1) from the front of `r`, checking magic, length and
    /// CRC.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let at = r.position();
        let magic = r.i16()?;
        if magic != ENTRY_MAGIC {
            return Err(Error::corrupt(format!("remote log index entry at byte {at}: unknown magic {magic}")));
        }
        let length = r.i16()?;
        if length < (ENTRY_FIXED_LEN - 4) as i16 {
            return Err(Error::corrupt(format!("remote log index entry at byte {at}: length {length} too small")));
        }
        let body = r.bytes(length as usize)?;
        let stored_crc = u32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
        let computed = crate::checksum::crc32c(&body[4..]);
        if stored_crc != computed {
            return Err(Error::corrupt(format!(
                "remote log index entry at byte {at}: CRC {stored_crc:#010x}, computed {computed:#010x}"
            )));
        }
        let mut b = Reader::new(&body[4..], "remote log index entry");
        let first_offset = b.i64()?;
        let last_offset = b.i64()?;
        let first_timestamp = b.i64()?;
        let last_timestamp = b.i64()?;
        let data_length = b.u32()?;
        let rdi_len = b.i16()?;
        if rdi_len < 0 || b.remaining() != rdi_len as usize {
            return Err(Error::corrupt(format!(
                "remote log index entry at byte {at}: data length {data_length}, RDI length {rdi_len} inconsistent"
            )));
        }
        let rdi = Rdi::decode(b.bytes(rdi_len as usize)?)?;
        if rdi.original_position.checked_add(data_length as u64).is_none()
            || rdi.stored_position.checked_add(rdi.stored_length as u64).is_none()
        {
            return Err(Error::corrupt(format!(
                "remote log index entry at byte {at}: a chunk at position {} (stored at {}) ends past the largest \
                 position",
                rdi.original_position, rdi.stored_position
            )));
        }
        Ok(ChunkEntry { first_offset, last_offset, first_timestamp, last_timestamp, data_length, rdi })
    }

    /// Checks `data` (the chunk's original bytes) against this entry's length and CRC.
    pub fn verify(&self, data: &[u8], what: &str) -> Result<()> {
        if data.len() != self.data_length as usize {
            return Err(Error::corrupt(format!(
                "{what}: chunk at position {} has {} bytes, its entry says {}",
                self.original_position(),
                data.len(),
                self.data_length
            )));
        }
        self.check_crc(crate::checksum::crc32c(data), what)
    }

    /// Checks `crc`, the CRC-32C of the chunk's bytes as read, against this entry's.
    pub fn check_crc(&self, crc: u32, what: &str) -> Result<()> {
        if crc != self.rdi.crc32c {
            return Err(Error::corrupt(format!(
                "{what}: chunk at position {} (offsets {}..={}) has CRC-32C {crc:#010x}, its entry says {:#010x}",
                self.original_position(),
                self.first_offset,
                self.last_offset,
                self.rdi.crc32c
            )));
        }
        Ok(())
    }
}

impl From<&ChunkEntry> for ChunkBinding {
    /// What encryption binds the chunk to: its segment, object, transform and original range.
    fn from(c: &ChunkEntry) -> Self {
        ChunkBinding {
            segment_id: c.rdi.segment_id,
            segment_start_offset: c.rdi.segment_start_offset,
            object: c.rdi.object as u8,
            transform: c.rdi.transform as u8,
            original_position: c.rdi.original_position,
            data_length: c.data_length,
            first_offset: c.first_offset,
            last_offset: c.last_offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trip_and_crc_check() {
        let e = ChunkEntry {
            first_offset: 10,
            last_offset: 20,
            first_timestamp: 5,
            last_timestamp: 9,
            data_length: 300,
            rdi: Rdi {
                object: RdiObject::Log,
                transform: Transform::None,
                segment_start_offset: 10,
                segment_id: Uuid::new(5, 6),
                stored_position: 77,
                stored_length: 120,
                crc32c: 0xdead,
                original_position: 1_000,
                stored_crc32c: 0xdead,
            },
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(buf.len(), 98);
        assert_eq!(&buf[..4], &[0, 0, 0, 94]); // magic 0, length 94
        assert_eq!(buf[46], 1, "RDI version 1");
        let d = ChunkEntry::decode(&mut Reader::new(&buf, "t")).unwrap();
        assert_eq!(d, e);
        assert_eq!(
            (d.original_position(), d.end(), d.stored_range()),
            (1_000, 1_300, 77..197),
            "original apart from stored"
        );
        buf[20] ^= 1;
        let err = ChunkEntry::decode(&mut Reader::new(&buf, "t")).unwrap_err();
        assert!(err.to_string().contains("CRC"), "{err}");
        let err = e.verify(&[0u8; 300], "seg").unwrap_err();
        assert!(err.to_string().contains("offsets 10..=20"), "{err}");
    }

    /// Re-seals an encoded entry's CRC after an edit.
    fn reseal(buf: &mut [u8]) {
        let crc = crate::checksum::crc32c(&buf[8..]);
        buf[4..8].copy_from_slice(&crc.to_be_bytes());
    }

    #[test]
    fn a_transformed_entry_carries_rdi_version_2_with_the_stored_crc() {
        let e = ChunkEntry {
            first_offset: 10,
            last_offset: 20,
            first_timestamp: 5,
            last_timestamp: 9,
            data_length: 300,
            rdi: Rdi {
                object: RdiObject::Log,
                transform: Transform::Zstd,
                segment_start_offset: 10,
                segment_id: Uuid::new(5, 6),
                stored_position: 77,
                stored_length: 120,
                crc32c: 0xdead,
                original_position: 1_000,
                stored_crc32c: 0xbeef,
            },
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!((buf.len(), e.encoded_len()), (102, 102));
        assert_eq!(&buf[..4], &[0, 0, 0, 98], "magic 0, length 98");
        assert_eq!((buf[46], buf[48]), (2, 1), "RDI version 2, transform zstd");
        assert_eq!(&buf[98..], &0xbeef_u32.to_be_bytes(), "the stored CRC last");
        let d = ChunkEntry::decode(&mut Reader::new(&buf, "t")).unwrap();
        assert_eq!(d, e);
        assert!(d.is_transformed());

        // An entry stored as is stays RDI version 1, and its stored CRC is its CRC.
        let plain = ChunkEntry { rdi: Rdi { transform: Transform::None, stored_crc32c: 0xdead, ..e.rdi }, ..e };
        let mut buf1 = Vec::new();
        plain.encode(&mut buf1);
        assert_eq!((buf1.len(), buf1[46]), (98, 1));
        assert_eq!(ChunkEntry::decode(&mut Reader::new(&buf1, "t")).unwrap(), plain);

        // (case, the edit, a piece of the error)
        type Edit = fn(&mut Vec<u8>);
        let cases: [(&str, Edit, &str); 3] = [
            ("a transform in a version-1 RDI (no stored CRC)", |b| b[48] = 1, "unknown transform 1 (RDI version 1)"),
            ("an unknown transform", |b| b[48] = 7, "unknown transform 7"),
            ("a version-2 RDI of version 1's length", |b| b[46] = 2, "version 2, length 52"),
        ];
        let mut untransformed_v2 = buf.clone();
        untransformed_v2[48] = 0;
        reseal(&mut untransformed_v2);
        let err = ChunkEntry::decode(&mut Reader::new(&untransformed_v2, "t")).unwrap_err();
        assert!(err.to_string().contains("version 2 for a chunk stored as is"), "{err}");
        for (case, edit, says) in cases {
            let mut b = buf1.clone();
            edit(&mut b);
            reseal(&mut b);
            let err = ChunkEntry::decode(&mut Reader::new(&b, "t")).unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{case}");
            assert!(err.to_string().contains(says), "{case}: {err}");
        }
    }
}
