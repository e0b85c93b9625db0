//! Reads of a segment's log straight from its object file into the caller's buffer, for a store whose
//! objects are files this process reads itself ([`StorageBackend::open_local`]): each byte is copied once,
//! from the page cache into that buffer, and each block is checked there against its CRC right after it
//! lands, while it is still in the processor's cache, before the read returns. No task, no channel, no
//! buffer of its own but one block where a fetch starts or ends inside a block.
//!
//! Only for a segment stored as it is (no chunk compressed or encrypted) with block CRCs, which a chunk cache
//! over such a store never keeps: [`TieredStorage::open_read`] decides, and streams otherwise.
//!
//! [`StorageBackend::open_local`]: crate::backend::StorageBackend::open_local

use super::TieredStorage;
use crate::backend::LocalObject;
use crate::error::Result;
use crate::format::chunk::ChunkEntry;
use crate::format::manifest::Manifest;
use crate::model::RemoteLogSegmentMetadata;
use bytes::{Buf, Bytes};
use std::sync::Arc;

/// A fetch of `start..end` of a segment's log read from its local object file ([`TieredStorage::local_log_reader`]).
#[derive(Debug)]
pub struct LocalLogReader {
    object: Box<dyn LocalObject>,
    manifest: Arc<Manifest>,
    key: String,
    /// The next original byte to serve.
    position: u64,
    /// The end of the fetch (exclusive).
    end: u64,
    /// Checked bytes of a block read whole (the fetch starts or ends inside it, or the caller's buffer is
    /// shorter than it), from `position` on: served before anything else.
    pending: Bytes,
}

impl LocalLogReader {
    /// Fills the front of `buf` with the next bytes of the fetch and returns how many (0 at its end, or
    /// for an empty `buf`). Whole blocks that fit go straight into `buf` and are checked there; a block that
    /// does not fit is read and checked apart and served over the next calls. Every byte returned was
    /// checked; on an error, what `buf` holds is not to be used.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.pending.is_empty() && self.position < self.end {
            let limit = self.end.min(self.position.saturating_add(buf.len() as u64));
            let whole = self.manifest.whole_blocks_end(self.position, limit);
            if whole > self.position {
                let n = (whole - self.position) as usize;
                self.object.read_exact_at(&mut buf[..n], self.position)?;
                self.manifest.check_blocks(self.position..whole, &buf[..n], &self.key)?;
                self.position = whole;
                return Ok(n);
            }
            // The block holding `position`, read whole and checked; the fetch's part of it is served.
            let block = self.manifest.align(self.position..self.position + 1);
            let mut bytes = vec![0u8; (block.end - block.start) as usize];
            self.object.read_exact_at(&mut bytes, block.start)?;
            self.manifest.check_blocks(block.clone(), &bytes, &self.key)?;
            let to = self.end.min(block.end);
            self.pending =
                Bytes::from(bytes).slice((self.position - block.start) as usize..(to - block.start) as usize);
            self.position = to;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.advance(n);
        Ok(n)
    }

    /// Bytes readable without reading the file: what is left of a block read whole.
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }

    /// Discards up to `n` bytes without reading them (a block read whole counts first); returns how many
    /// (fewer only at the end).
    pub fn skip(&mut self, n: u64) -> u64 {
        let from_pending = n.min(self.pending.len() as u64);
        self.pending.advance(from_pending as usize);
        let rest = (n - from_pending).min(self.end - self.position);
        self.position += rest;
        from_pending + rest
    }
}

/// How a fetch's bytes are read, as [`TieredStorage::open_read`] decided: straight from the segment's local
/// object file, or as a stream of checked reads through the chunk source.
pub enum LogRead {
    /// From the local object file, into the caller's buffers.
    Local(LocalLogReader),
    /// Streamed ([`TieredStorage::stream_range`]).
    Stream(crate::backend::ByteStream),
}

impl std::fmt::Debug for LogRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogRead::Local(local) => f.debug_tuple("Local").field(local).finish(),
            LogRead::Stream(_) => f.write_str("Stream"),
        }
    }
}

impl TieredStorage {
    /// Opens a fetch of bytes `start_position..=end_position` (to the end of the segment without an end) of
    /// a committed segment's log, deciding once how it is read: straight from the local object file when
    /// the store keeps objects as files this process reads
    /// ([`crate::backend::StorageBackend::open_local`]) and the segment is stored as it is with block CRCs
    /// (a chunk cache never keeps such a segment's chunks, see [`super::CachedChunks::over_local_files`]),
    /// otherwise as a stream. The manifest is looked up and the positions checked once, as
    /// [`crate::rsm::RemoteStorageManager::fetch_log_segment`] checks them.
    pub async fn open_read(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start_position: i64,
        end_position: Option<i64>,
    ) -> Result<LogRead> {
        let manifest = match self.locate(metadata).await? {
            super::aiven::Located::Ours(m) => m,
            super::aiven::Located::Aiven(s) => {
                return self.aiven_fetch(s, start_position, end_position).map(LogRead::Stream);
            }
        };
        let (start, end) = super::fetch::fetch_bounds(&manifest, start_position, end_position)?;
        Ok(match self.local_reader(&manifest, start, end)? {
            Some(local) => LogRead::Local(local),
            None => LogRead::Stream(self.stream_range(manifest, start, end)),
        })
    }

    /// [`TieredStorage::open_read`]'s local read alone: `None` where it would stream.
    pub async fn local_log_reader(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start_position: i64,
        end_position: Option<i64>,
    ) -> Result<Option<LocalLogReader>> {
        let manifest = self.manifest(metadata).await?;
        let (start, end) = super::fetch::fetch_bounds(&manifest, start_position, end_position)?;
        self.local_reader(&manifest, start, end)
    }

    /// A reader of the original bytes `start..end` of the log of `manifest`'s segment from its local object
    /// file, or `None` when the store has no local files or the segment is not stored as it is with block
    /// CRCs.
    fn local_reader(&self, manifest: &Arc<Manifest>, start: u64, end: u64) -> Result<Option<LocalLogReader>> {
        if manifest.block_size == 0
            || manifest.encryption.is_some()
            || manifest.chunks.iter().any(ChunkEntry::is_transformed)
        {
            return Ok(None);
        }
        let key = super::layout::placement(&self.config.key_prefix, manifest).log;
        let Some(object) = self.backend.open_local(&key)? else {
            return Ok(None);
        };
        let manifest = manifest.clone();
        Ok(Some(LocalLogReader { object, manifest, key, position: start, end, pending: Bytes::new() }))
    }
}
