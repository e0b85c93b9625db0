//! The seam between the fetch planner and the store: where a chunk's original bytes come from.
//!
//! The planner works in original positions of the segment's `.log` file only; a [`ChunkSource`] turns a
//! range of those into bytes. Today that is [`BackendChunks`], one ranged read of the stored object; a chunk
//! cache wraps a source, and a transform (decompression, decryption) is a source that maps a chunk's original
//! position to its stored position and length, which the chunk entries keep apart.

use super::layout::segment_keys;
use crate::backend::StorageBackend;
use crate::error::{Error, Result};
use crate::format::chunk::Transform;
use crate::format::manifest::Manifest;
use async_trait::async_trait;
use bytes::Bytes;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// Where the original bytes of a segment's chunks come from.
#[async_trait]
pub trait ChunkSource: Send + Sync + fmt::Debug + 'static {
    /// The original bytes `range` of the `.log` of the segment `manifest` describes, exactly
    /// `range.end - range.start` of them or an error. `range` lies inside the manifest's chunks (it may
    /// start or end inside one, and span several).
    async fn read(&self, manifest: &Arc<Manifest>, range: Range<u64>) -> Result<Bytes>;

    /// Whether the bytes this source returns were already checked against the manifest's CRCs (a cache
    /// keeps only checked chunks); the fetch path then does not check them again.
    fn checks(&self) -> bool {
        false
    }

    /// Drops whatever the source keeps of the segment `segment` (a cache's entries), once it is deleted.
    fn forget(&self, segment: &crate::model::Uuid) {
        let _ = segment;
    }
}

/// Chunks read from the backend: a range over chunks stored as they are is one ranged read of the
/// segment's `.log` object, at the stored positions the chunk entries give.
#[derive(Debug)]
pub struct BackendChunks {
    backend: Arc<dyn StorageBackend>,
    key_prefix: String,
}

impl BackendChunks {
    /// Chunks of the segments under `key_prefix` in `backend`.
    pub fn new(backend: Arc<dyn StorageBackend>, key_prefix: String) -> Self {
        BackendChunks { backend, key_prefix }
    }

    /// The stored range that holds the original bytes `range`: the chunks it covers must be stored as they
    /// are, one after another.
    fn stored_range(manifest: &Manifest, key: &str, range: &Range<u64>) -> Result<Range<u64>> {
        let first = manifest
            .chunk_at_position(range.start)
            .ok_or_else(|| Error::invalid(format!("object {key}: position {} is in no chunk", range.start)))?;
        let mut stored_start = None;
        let mut next_stored = 0;
        for c in manifest.chunks[first..].iter().take_while(|c| c.position() < range.end) {
            if c.rdi.transform != Transform::None {
                return Err(Error::corrupt(format!(
                    "object {key}: chunk at position {} has transform {:?}, which this source does not undo",
                    c.position(),
                    c.rdi.transform
                )));
            }
            let from = c.stored_range().start + range.start.saturating_sub(c.position());
            match stored_start {
                None => stored_start = Some(from),
                Some(_) if from != next_stored => {
                    return Err(Error::corrupt(format!(
                        "object {key}: chunk at position {} is not stored right after the one before it",
                        c.position()
                    )));
                }
                Some(_) => {}
            }
            next_stored = c.stored_range().end;
        }
        let start = stored_start.expect("the first chunk holds range.start");
        Ok(start..start + (range.end - range.start))
    }
}

#[async_trait]
impl ChunkSource for BackendChunks {
    async fn read(&self, manifest: &Arc<Manifest>, range: Range<u64>) -> Result<Bytes> {
        let key = segment_keys(&self.key_prefix, &manifest.metadata).log;
        let stored = Self::stored_range(manifest, &key, &range)?;
        let bytes = self.backend.get_range(&key, stored.clone()).await?;
        if bytes.len() as u64 != stored.end - stored.start {
            return Err(Error::corrupt(format!(
                "object {key}: read {}..{} returned {} bytes",
                stored.start,
                stored.end,
                bytes.len()
            )));
        }
        Ok(bytes)
    }
}
