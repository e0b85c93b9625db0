//! The one-object layout (`segment.layout=single`): a segment stored as one `.segment` object,
//!
//! ```text
//! stored log (what `.log` would hold, from byte 0) ‖ index bundle (what `.indexes` would hold)
//!   ‖ manifest (encoded as `.manifest` would be) ‖ trailer (32 bytes)
//! trailer = b"RSMSEG01" ‖ indexes position u64 LE ‖ manifest position u64 LE ‖ manifest length u32 LE
//!   ‖ CRC-32C of the 28 bytes before it, u32 LE
//! ```
//!
//! written by one upload (one PUT below the store's multipart threshold), so the object is its own commit
//! point: no reader ever sees part of a segment. Every chunk's stored position and every index's position in
//! its bundle are what they would be in the split layout, so the manifest's format is unchanged; only where
//! the bundle starts ([`StoredAs::Single`]) is new, and the trailer says it.
//!
//! A copy returns the trailer as the segment's custom metadata ([`Trailer::custom_metadata`]: a tag byte and
//! the trailer, 33 bytes), which Kafka keeps with the segment's metadata and hands back to every fetch and
//! delete: with it a reader knows the layout and reads the manifest with one exact ranged read, and a delete
//! deletes the one key. Without it (a host that drops custom metadata, `rsm` tools reading by manifest) the
//! manifest is found from the object's tail (`read_manifest`).

use crate::backend::StorageBackend;
use crate::checksum::crc32c;
use crate::error::{Error, Result};
use crate::format::manifest::{Manifest, StoredAs};
use crate::model::{CustomMetadata, RemoteLogSegmentMetadata};
use bytes::{Bytes, BytesMut};

/// The trailer's first 8 bytes.
pub const TRAILER_MAGIC: &[u8; 8] = b"RSMSEG01";
/// The trailer's length.
pub const TRAILER_LEN: usize = 32;
/// The first byte of a single-layout segment's custom metadata; the trailer follows.
pub const SINGLE_OBJECT_TAG: u8 = 0x01;
/// How much of an object's end a reader without the trailer reads first: the trailer and, for all but the
/// largest segments (a 1 GiB segment's manifest is about 64 KiB of block CRCs and its chunk table), the whole
/// manifest, in one request.
pub const TAIL_READ: u64 = 128 << 10;

/// Where a one-object segment's pieces lie: the last 32 bytes of its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trailer {
    /// Where the index bundle starts (the stored log's length).
    pub indexes_position: u64,
    /// Where the manifest starts.
    pub manifest_position: u64,
    /// The manifest's length.
    pub manifest_length: u32,
}

impl Trailer {
    /// The 32 bytes written at the object's end.
    pub fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut out = [0u8; TRAILER_LEN];
        out[..8].copy_from_slice(TRAILER_MAGIC);
        out[8..16].copy_from_slice(&self.indexes_position.to_le_bytes());
        out[16..24].copy_from_slice(&self.manifest_position.to_le_bytes());
        out[24..28].copy_from_slice(&self.manifest_length.to_le_bytes());
        let crc = crc32c(&out[..28]);
        out[28..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a trailer back: corrupt, naming `key`, unless `bytes` is 32 bytes with the magic, a matching CRC
    /// and the index bundle before the manifest.
    pub fn decode(bytes: &[u8], key: &str) -> Result<Self> {
        let bad = |why: &str| Error::corrupt(format!("one-object segment {key}: its trailer {why}"));
        let b: &[u8; TRAILER_LEN] = bytes.try_into().map_err(|_| bad(&format!("is {} bytes, not 32", bytes.len())))?;
        if &b[..8] != TRAILER_MAGIC {
            return Err(bad("lacks its magic (not a one-object segment, or cut short)"));
        }
        let word = |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(b[28..].try_into().expect("4 bytes"));
        if crc != crc32c(&b[..28]) {
            return Err(bad("fails its CRC-32C"));
        }
        let t = Trailer {
            indexes_position: word(8..16),
            manifest_position: word(16..24),
            manifest_length: u32::from_le_bytes(b[24..28].try_into().expect("4 bytes")),
        };
        if t.indexes_position > t.manifest_position || t.manifest_position.checked_add(t.object_tail()).is_none() {
            return Err(bad(&format!(
                "puts the indexes at {} after the manifest at {}",
                t.indexes_position, t.manifest_position
            )));
        }
        Ok(t)
    }

    /// The manifest and the trailer: what follows the index bundle.
    fn object_tail(&self) -> u64 {
        self.manifest_length as u64 + TRAILER_LEN as u64
    }

    /// The size of the object this trailer ends.
    pub fn object_size(&self) -> u64 {
        self.manifest_position + self.object_tail()
    }

    /// The segment's custom metadata: [`SINGLE_OBJECT_TAG`] and the trailer (33 bytes).
    pub fn custom_metadata(&self) -> CustomMetadata {
        let mut v = Vec::with_capacity(1 + TRAILER_LEN);
        v.push(SINGLE_OBJECT_TAG);
        v.extend_from_slice(&self.encode());
        CustomMetadata(v)
    }

    /// Where a one-object segment's pieces lie, as its manifest's reader keeps it ([`Manifest::stored_as`]).
    pub fn stored_as(&self) -> StoredAs {
        StoredAs::Single {
            indexes_position: self.indexes_position,
            manifest_position: self.manifest_position,
            manifest_length: self.manifest_length,
        }
    }

    /// The trailer of the one-object segment whose manifest `m` is, as its reader found it; `None` for a split
    /// segment's.
    pub fn of_manifest(m: &Manifest) -> Option<Self> {
        match m.stored_as {
            StoredAs::Split => None,
            StoredAs::Single { indexes_position, manifest_position, manifest_length } => {
                Some(Trailer { indexes_position, manifest_position, manifest_length })
            }
        }
    }

    /// The trailer a segment's custom metadata carries, when it is a one-object segment's
    /// ([`Trailer::custom_metadata`]); `None` for none or any other (another version's, a damaged one: the
    /// reader then finds the layout from the store).
    pub fn of_metadata(md: &RemoteLogSegmentMetadata) -> Option<Self> {
        let CustomMetadata(c) = md.custom_metadata.as_ref()?;
        match c.split_first() {
            Some((&SINGLE_OBJECT_TAG, rest)) => Trailer::decode(rest, "(custom metadata)").ok(),
            _ => None,
        }
    }
}

/// The manifest and trailer bytes a copy appends after the index bundle, and the trailer: the stored log is
/// `indexes_position` bytes, the bundle `indexes_length`.
pub(super) fn manifest_and_trailer(manifest: &[u8], indexes_position: u64, indexes_length: u64) -> (Bytes, Trailer) {
    let trailer = Trailer {
        indexes_position,
        manifest_position: indexes_position + indexes_length,
        manifest_length: u32::try_from(manifest.len()).expect("a manifest is far below 4 GiB"),
    };
    let mut out = BytesMut::with_capacity(manifest.len() + TRAILER_LEN);
    out.extend_from_slice(manifest);
    out.extend_from_slice(&trailer.encode());
    (out.freeze(), trailer)
}

/// Reads the manifest of the one-object segment `key`, and where its data lies. With `known` (from the
/// segment's custom metadata): one ranged read of the manifest and trailer, the trailer checked equal to
/// the known one. Without: one read of the object's last [`TAIL_READ`] bytes, the trailer checked (magic,
/// CRC, the manifest ending where it starts, within the object), and one more ranged read only when the
/// manifest began before the tail read. A damaged or missing trailer, or a manifest that does not fit the
/// trailer, is corrupt, naming `key`. The manifest is not checked against its key here (the caller does).
pub(super) async fn read_manifest(backend: &dyn StorageBackend, key: &str, known: Option<Trailer>) -> Result<Manifest> {
    let (bytes, trailer) = match known {
        Some(t) => {
            let want = t.manifest_position..t.object_size();
            let got = match backend.get_range(key, want.clone()).await {
                // The range starts past the object's end: it is shorter than the copy wrote it.
                Err(e) if e.kind() == crate::ErrorKind::InvalidArgument => Bytes::new(),
                r => r?,
            };
            if got.len() as u64 != want.end - want.start {
                return Err(Error::corrupt(format!(
                    "one-object segment {key}: {} bytes from {}, where its metadata puts {} bytes of manifest and \
                     trailer (the object is shorter)",
                    got.len(),
                    want.start,
                    want.end - want.start
                )));
            }
            let found = Trailer::decode(&got[got.len() - TRAILER_LEN..], key)?;
            if found != t {
                return Err(Error::corrupt(format!(
                    "one-object segment {key}: its trailer {found:?} is not the one its metadata carries ({t:?})"
                )));
            }
            (got.slice(..t.manifest_length as usize), t)
        }
        None => {
            let (tail, size) = backend.get_tail(key, TAIL_READ).await?;
            let t = Trailer::of_tail(&tail, size, key)?;
            let tail_start = size - tail.len() as u64;
            let manifest_end = size - TRAILER_LEN as u64;
            let bytes = if t.manifest_position >= tail_start {
                tail.slice((t.manifest_position - tail_start) as usize..(manifest_end - tail_start) as usize)
            } else {
                let head = backend.get_range(key, t.manifest_position..tail_start).await?;
                if head.len() as u64 != tail_start - t.manifest_position {
                    return Err(Error::corrupt(format!(
                        "one-object segment {key}: a read of {}..{tail_start} returned {} bytes",
                        t.manifest_position,
                        head.len()
                    )));
                }
                let mut all = BytesMut::with_capacity(t.manifest_length as usize);
                all.extend_from_slice(&head);
                all.extend_from_slice(&tail[..(manifest_end - tail_start) as usize]);
                all.freeze()
            };
            (bytes, t)
        }
    };
    manifest_of(&bytes, trailer, key)
}

impl Trailer {
    /// The trailer at the end of `tail`, the last bytes of the one-object segment `key` of `size` bytes,
    /// checked against the object: corrupt, naming `key`, when the object is too short to hold one, the
    /// trailer is damaged, or its manifest does not end where the trailer starts.
    pub fn of_tail(tail: &[u8], size: u64, key: &str) -> Result<Self> {
        if tail.len() as u64 > size {
            return Err(Error::corrupt(format!(
                "one-object segment {key}: a tail of {} bytes of an object of {size}",
                tail.len()
            )));
        }
        if size < TRAILER_LEN as u64 || tail.len() < TRAILER_LEN {
            return Err(Error::corrupt(format!(
                "one-object segment {key}: {size} bytes, too short to hold its 32-byte trailer"
            )));
        }
        let t = Trailer::decode(&tail[tail.len() - TRAILER_LEN..], key)?;
        if t.object_size() != size {
            return Err(Error::corrupt(format!(
                "one-object segment {key}: its trailer puts a manifest of {} bytes at {}, ending at {}, but the \
                 object is {size} bytes (cut short, or appended to)",
                t.manifest_length,
                t.manifest_position,
                t.object_size()
            )));
        }
        Ok(t)
    }
}

/// The manifest of the one-object segment `key` from its bytes (those `trailer` locates), checked against
/// the trailer: the stored log fills the object up to the index bundle, and every index lies in the bundle;
/// with where its data lies ([`StoredAs::Single`]).
pub fn manifest_of(bytes: &[u8], trailer: Trailer, key: &str) -> Result<Manifest> {
    let mut m = Manifest::decode(bytes, key)?;
    let stored_end = m.chunks.last().map_or(0, |c| c.stored_range().end);
    let bundle = trailer.manifest_position - trailer.indexes_position;
    let index_end = m.indexes.iter().flatten().map(|l| l.position.saturating_add(l.length)).max().unwrap_or(0);
    if stored_end != trailer.indexes_position || index_end > bundle {
        return Err(Error::corrupt(format!(
            "one-object segment {key}: its manifest's chunks end at {stored_end} and indexes at {index_end} of the \
             bundle, where its trailer puts the indexes at {} ({bundle} bytes)",
            trailer.indexes_position
        )));
    }
    m.stored_as = trailer.stored_as();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailer_reads_back_and_any_damage_is_refused_naming_the_key() {
        let t = Trailer { indexes_position: 1000, manifest_position: 1200, manifest_length: 300 };
        let b = t.encode();
        assert_eq!(Trailer::decode(&b, "k").unwrap(), t);
        assert_eq!(t.object_size(), 1532);
        let custom = t.custom_metadata();
        assert_eq!(custom.0.len(), 33);
        assert_eq!(custom.0[0], SINGLE_OBJECT_TAG);
        // (case, the damage, what the error says)
        let flip = |i: usize| {
            let mut d = b.to_vec();
            d[i] ^= 1;
            d
        };
        let reordered = Trailer { indexes_position: 2000, manifest_position: 1200, manifest_length: 1 }.encode();
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("magic", flip(0), "lacks its magic"),
            ("a position", flip(9), "fails its CRC-32C"),
            ("the length", flip(25), "fails its CRC-32C"),
            ("the CRC", flip(31), "fails its CRC-32C"),
            ("cut short", b[..31].to_vec(), "is 31 bytes"),
            ("indexes after the manifest", reordered.to_vec(), "after the manifest"),
        ];
        for (case, bytes, says) in cases {
            let e = Trailer::decode(&bytes, "pre/t-x/0/seg.segment").unwrap_err();
            let text = e.to_string();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{case}");
            assert!(text.contains("pre/t-x/0/seg.segment") && text.contains(says), "{case}: {text}");
        }
    }
}
