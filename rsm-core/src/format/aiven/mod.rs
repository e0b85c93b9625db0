//! The stored format of Aiven's tiered-storage plugin for Kafka (1.x, `segment.format=kafka`), read so that
//! every segment it tiered stays readable after an operator switches to this plugin; new copies are ours.
//! Written from the definition of that format (its manifest, chunk index, size codec, key and encryption
//! classes), not from its code.
//!
//! A segment is three objects under `{prefix}{topic}-{topic id}/{partition}/{start offset:020}-{segment id}`
//! (the stem our own layout uses, [`crate::storage::segment_keys`]), unless its custom metadata names another
//! prefix or stem ([`AivenCustomMetadata`]):
//! - `.log`: the segment's log cut into chunks of one original size; each chunk stored as it is, or
//!   compressed as one zstd frame, then (when encrypted) sealed as `IV ‖ ciphertext ‖ tag` (AES-256-GCM);
//! - `.indexes`: the offset, time, producer-snapshot, leader-epoch and (when there is one) transaction
//!   indexes one after another, each sealed as one piece when encrypted, never compressed;
//! - `.rsm-manifest`: JSON ([`AivenManifest`]), written last.
//!
//! What can be checked: an encrypted chunk or index by its AES-GCM tag; a chunk not encrypted by the CRCs of
//! the record batches it holds (Kafka's own: CRC-32C of a v2 batch, CRC-32 of a v0/v1 message), which the
//! read checks batch by batch before serving them; an index not encrypted only by its shape (Kafka checks an
//! index it fetches in the same way).

mod chunk_sizes;
mod custom_metadata;
mod manifest;

pub use chunk_sizes::decode as decode_chunk_sizes;
pub use custom_metadata::AivenCustomMetadata;
pub use manifest::{AivenChunk, AivenEncryption, AivenManifest, ChunkIndex};

use crate::error::{Error, Result};
use crate::model::RemoteLogSegmentMetadata;

/// The keys of an Aiven segment's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AivenKeys {
    /// The chunked `.log`.
    pub log: String,
    /// The `.indexes` blob.
    pub indexes: String,
    /// The `.rsm-manifest`.
    pub manifest: String,
}

impl AivenKeys {
    /// The keys of segment `md` stored by Aiven's plugin under `key_prefix`, or under the prefix and stem its
    /// custom metadata names (`custom`, when the segment has Aiven's).
    pub fn of(key_prefix: &str, md: &RemoteLogSegmentMetadata, custom: Option<&AivenCustomMetadata>) -> Self {
        let ours = crate::storage::segment_keys("", md);
        let stem = ours.log.strip_suffix(".log").unwrap_or(&ours.log);
        let prefix = custom.and_then(|c| c.object_prefix.as_deref()).unwrap_or(key_prefix);
        let stem = custom.and_then(|c| c.object_key.as_deref()).unwrap_or(stem);
        AivenKeys {
            log: format!("{prefix}{stem}.log"),
            indexes: format!("{prefix}{stem}.indexes"),
            manifest: format!("{prefix}{stem}.rsm-manifest"),
        }
    }

    /// Every key, the manifest (the commit point) first, as a delete removes them.
    pub fn all(&self) -> [String; 3] {
        [self.manifest.clone(), self.log.clone(), self.indexes.clone()]
    }
}

/// Undoes the compression of one chunk (one zstd frame), which must give exactly `original_len` bytes;
/// `what` names the chunk for errors.
pub fn decompress_chunk(frame: &[u8], original_len: usize, what: &str) -> Result<Vec<u8>> {
    let out = zstd::bulk::decompress(frame, original_len)
        .map_err(|e| Error::corrupt(format!("{what}: not a zstd frame of {original_len} bytes: {e}")))?;
    if out.len() != original_len {
        return Err(Error::corrupt(format!("{what}: decompresses to {} bytes, not {original_len}", out.len())));
    }
    Ok(out)
}
