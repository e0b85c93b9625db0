//! The chunk entry: SR-32's remoteLogIndex entry, and the RDI (remote data identifier) it carries.
//!
//! Entry layout (big-endian): magic i16 (0), length i16 (bytes after this field), crc u32 (CRC-32C of the
//! bytes after the crc field), firstOffset i64, lastOffset i64, firstTimestamp i64, lastTimestamp i64,
//! dataLength u32 (the chunk's original length; SR-32's i32 read unsigned, so every length the encoder
//! writes reads back), rdiLength i16, rdi.
//!
//! Our RDI names the object, where the chunk is stored and where it belongs, apart: a transform (compression,
//! encryption) changes the stored position and length, never the original ones.
//! - version 2 (56 bytes, written by manifest versions 3 to 5 for a transformed chunk only): version 1's
//!   fields, then the CRC-32C u32 of the chunk's stored (transformed) bytes, so that damage to them is caught
//!   before they are undone, and every stored byte is covered by a check even where the transform would not
//!   notice (a zstd frame header field that does not change the output). For a chunk stored in frames it
//!   covers all its frames, so a read of the whole chunk is checked as any other's; a read of some frames
//!   checks each against its own CRC in the manifest's frame table;
//! - version 1 (52 bytes, written by manifest version 2, and by version 3 for a chunk stored as is):
//!   version u8 (1), object u8 (0 = a segment's `.log` object), transform u8 (0 = none; version 2 only:
//!   1 = zstd, 2 = AES-256-GCM, 3 = zstd then AES-256-GCM, 4 = zstd frames, 5 = zstd frames each then
//!   AES-256-GCM; 4 and 5 only in a manifest of version 5, whose frame table says where each frame is
//!   stored, see [`crate::format::manifest`]), reserved u8, the segment's start offset i64 and id (16 bytes) (which with the partition
//!   give the object key), stored position u64 (in the object), stored length u32, CRC-32C u32 of the
//!   chunk's original bytes, original position u64 (in the segment's `.log` file);
//! - version 0 (44 bytes, manifest version 1): the same without the original position, which then equals
//!   the stored position (chunks stored in place).

use crate::crypto::ChunkBinding;
use crate::error::{Error, Result};
use crate::format::batch::Batch;
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

/// The reflected CRC-32C polynomial (Castagnoli).
const POLY: u32 = 0x82F6_3B78;

/// `a * b` modulo the CRC-32C polynomial, both reflected (bit 31 is `x^0`).
fn multmodp(a: u32, mut b: u32) -> u32 {
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                return p;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
}

/// The operator that appends `len` bytes in [`crc32c_combine`]: `x^(8 len)` modulo the polynomial. Computed
/// once per length, it makes each combine 32 steps, where the `crc32c` crate's `crc32c_combine` recomputes it every time
/// (about 14 µs each, which for 16,384 blocks a GiB was a sixth of a copy).
pub fn crc32c_shift(len: u64) -> u32 {
    let mut p = 1u32 << 31;
    let mut square = 1u32 << 30;
    for _ in 0..3 {
        square = multmodp(square, square);
    }
    let mut n = len;
    while n != 0 {
        if n & 1 != 0 {
            p = multmodp(square, p);
        }
        square = multmodp(square, square);
        n >>= 1;
    }
    p
}

/// The CRC-32C of `a` followed by `b`, from `crc_a`, `crc_b` and `shift = crc32c_shift(b.len())`.
pub fn crc32c_combine(crc_a: u32, crc_b: u32, shift: u32) -> u32 {
    multmodp(shift, crc_a) ^ crc_b
}

/// The block size of the CRC-32Cs inside each chunk, when the settings do not say (`chunk.block.size`).
pub const DEFAULT_BLOCK_SIZE: u32 = 64 << 10;

/// The chunk table of a segment: the chunks, and a CRC-32C of every block of `block_size` bytes inside each
/// chunk (blocks start at each chunk's start; a chunk's last block may be shorter), chunk after chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkTable {
    /// The chunks, in order.
    pub chunks: Vec<ChunkEntry>,
    /// The block size.
    pub block_size: u32,
    /// The block CRC-32Cs, in order.
    pub block_crcs: Vec<u32>,
}

/// Cuts a stream of batches into chunks of about `target` bytes, on batch boundaries, with a CRC-32C of every
/// block of each chunk.
#[derive(Debug)]
pub struct Chunker {
    target: u64,
    segment_start_offset: i64,
    segment_id: Uuid,
    table: ChunkTable,
    open: Option<ChunkEntry>,
    /// Bytes of the open block, and their CRC.
    block_fill: u32,
    block_crc: u32,
    /// Blocks of the open chunk so far.
    chunk_blocks: usize,
    /// [`crc32c_shift`] of a whole block.
    block_shift: u32,
    /// One past the last offset pushed so far.
    next_offset: Option<i64>,
}

impl Chunker {
    /// A chunker for the segment (`segment_start_offset`, `segment_id`) aiming at `target` bytes a chunk
    /// (a batch larger than that is a chunk of its own), with blocks of `block_size` bytes (at least 1).
    pub fn new(target: u64, block_size: u32, segment_start_offset: i64, segment_id: Uuid) -> Self {
        let table = ChunkTable { block_size: block_size.max(1), ..ChunkTable::default() };
        let block_shift = crc32c_shift(table.block_size as u64);
        Chunker {
            block_shift,
            target: target.max(1),
            segment_start_offset,
            segment_id,
            table,
            open: None,
            block_fill: 0,
            block_crc: 0,
            chunk_blocks: 0,
            next_offset: None,
        }
    }

    /// Ends the open chunk: its last block, and its CRC-32C combined from its blocks' (no second pass over
    /// the bytes).
    fn close(&mut self) {
        if let Some(mut c) = self.open.take() {
            if self.block_fill > 0 {
                self.table.block_crcs.push(self.block_crc);
            }
            let n = self.chunk_blocks + (self.block_fill > 0) as usize;
            let blocks = &self.table.block_crcs[self.table.block_crcs.len() - n..];
            let bs = self.table.block_size as u64;
            let mut crc = 0u32;
            let mut left = c.data_length as u64;
            for &b in blocks {
                let len = left.min(bs);
                let shift = if len == bs { self.block_shift } else { crc32c_shift(len) };
                crc = crc32c_combine(crc, b, shift);
                left -= len;
            }
            c.rdi.crc32c = crc;
            c.rdi.stored_crc32c = crc;
            self.table.chunks.push(c);
            (self.block_fill, self.block_crc, self.chunk_blocks) = (0, 0, 0);
        }
    }

    /// Adds the next batch; its bytes (still in cache from the batch check) are summed into the CRC-32C of
    /// the blocks they fall in. A legacy wrapper's first offset is inside its compressed bytes: a chunk that
    /// starts with one records the lowest offset it can hold, one past the previous batch's last (the
    /// segment's start offset for the first), so that the chunk's offsets are never claimed too high.
    pub fn push(&mut self, batch: &Batch<'_>) {
        let size = batch.size() as u64;
        let first_offset = if batch.is_legacy_wrapper() {
            self.next_offset.unwrap_or(self.segment_start_offset).min(batch.base_offset())
        } else {
            batch.base_offset()
        };
        self.next_offset = batch.last_offset().checked_add(1);
        if let Some(open) = &self.open
            && open.data_length as u64 + size > self.target
        {
            self.close();
        }
        let open = self.open.get_or_insert(ChunkEntry {
            first_offset,
            last_offset: batch.last_offset(),
            first_timestamp: batch.base_timestamp(),
            last_timestamp: batch.max_timestamp(),
            data_length: 0,
            rdi: Rdi {
                object: RdiObject::Log,
                transform: Transform::None,
                segment_start_offset: self.segment_start_offset,
                segment_id: self.segment_id,
                stored_position: batch.position(),
                stored_length: 0,
                crc32c: 0,
                original_position: batch.position(),
                stored_crc32c: 0,
            },
        });
        open.last_offset = batch.last_offset();
        open.last_timestamp = open.last_timestamp.max(batch.max_timestamp());
        open.data_length += size as u32;
        open.rdi.stored_length = open.data_length;
        let mut bytes = batch.bytes();
        while !bytes.is_empty() {
            let n = ((self.table.block_size - self.block_fill) as usize).min(bytes.len());
            self.block_crc = crate::checksum::crc32c_append(self.block_crc, &bytes[..n]);
            self.block_fill += n as u32;
            bytes = &bytes[n..];
            if self.block_fill == self.table.block_size {
                self.table.block_crcs.push(self.block_crc);
                (self.block_fill, self.block_crc) = (0, 0);
                self.chunk_blocks += 1;
            }
        }
    }

    /// The chunk table.
    pub fn finish(mut self) -> ChunkTable {
        self.close();
        self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::batch::BatchIter;
    use crate::format::writer::{Record, encode_batch};

    fn batches(n: usize) -> Vec<u8> {
        let mut log = Vec::new();
        for i in 0..n {
            let recs: Vec<Record> = (0..3)
                .map(|j| Record {
                    value: Some(vec![b'x'; 100 + i]),
                    timestamp: 1000 + (i * 3 + j) as i64,
                    ..Default::default()
                })
                .collect();
            log.extend(encode_batch(i as i64 * 3, 0, &recs));
        }
        log
    }

    #[test]
    fn chunks_cover_the_log_on_batch_boundaries_with_true_crcs() {
        let log = batches(20);
        for verify in [true, false] {
            let mut c = Chunker::new(1000, 100, 0, Uuid::ONE);
            for b in BatchIter::new(&log, 0, verify) {
                let b = b.unwrap();
                c.push(&b);
            }
            let table = c.finish();
            assert_eq!(table.block_size, 100);
            let chunks = table.chunks;
            let mut blocks = table.block_crcs.iter();
            assert!(chunks.len() > 3, "{}", chunks.len());
            let mut pos = 0;
            for ch in &chunks {
                assert_eq!(ch.original_position(), pos);
                let data = &log[pos as usize..ch.end() as usize];
                ch.verify(data, "t").unwrap();
                assert_eq!(crate::checksum::crc32c(data), ch.rdi.crc32c);
                for block in data.chunks(100) {
                    assert_eq!(
                        blocks.next(),
                        Some(&crate::checksum::crc32c(block)),
                        "a CRC per block, from the chunk's start"
                    );
                }
                assert!(ch.data_length <= 1000 || ch.first_offset == ch.last_offset - 2);
                pos = ch.end();
            }
            assert_eq!(pos, log.len() as u64);
            assert_eq!(blocks.next(), None);
            assert_eq!(chunks[0].first_offset, 0);
            assert_eq!(chunks.last().unwrap().last_offset, 59);
        }
    }

    #[test]
    fn crcs_combine_as_the_crc_of_the_concatenation() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for (a, b) in [(0, 0), (0, 5), (7, 0), (1, 1), (100, 19_000), (3, 17_000), (19_999, 1)] {
            let (x, y) = data.split_at(a);
            let y = &y[..b];
            let whole = crate::checksum::crc32c(&[x, y].concat());
            let got = crc32c_combine(crate::checksum::crc32c(x), crate::checksum::crc32c(y), crc32c_shift(b as u64));
            assert_eq!(got, whole, "{a} + {b} bytes");
            assert_eq!(
                got,
                crc32c::crc32c_combine(crate::checksum::crc32c(x), crate::checksum::crc32c(y), b),
                "{a} + {b}: as the crate's"
            );
        }
    }

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
            assert_eq!(err.kind(), crate::ErrorKind::Corrupt, "{case}");
            assert!(err.to_string().contains(says), "{case}: {err}");
        }
    }
}
