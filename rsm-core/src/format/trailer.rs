//! The trailer of a one-object segment (`segment.layout=single`, see [`crate::storage::single`]): the last
//! 32 bytes of its `.segment` object, which say where its index bundle and its manifest lie.
//!
//! ```text
//! trailer = b"RSMSEG01" ‖ indexes position u64 LE ‖ manifest position u64 LE ‖ manifest length u32 LE
//!   ‖ CRC-32C of the 28 bytes before it, u32 LE
//! ```
//!
//! A copy also returns it as the segment's custom metadata: [`SINGLE_OBJECT_TAG`] and the trailer, 33 bytes
//! ([`Trailer::custom_metadata`]).

use crate::checksum::crc32c;
use crate::error::{Error, Result};
use crate::format::manifest::{Manifest, StoredAs};
use crate::model::{CustomMetadata, RemoteLogSegmentMetadata};

/// The trailer's first 8 bytes.
pub const TRAILER_MAGIC: &[u8; 8] = b"RSMSEG01";
/// The trailer's length.
pub const TRAILER_LEN: usize = 32;
/// The first byte of a single-layout segment's custom metadata; the trailer follows.
pub const SINGLE_OBJECT_TAG: u8 = 0x01;

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
            assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{case}");
            assert!(text.contains("pre/t-x/0/seg.segment") && text.contains(says), "{case}: {text}");
        }
    }
}
