//! The chunk cache's two tiers as its reads and loads use them: the memory tier (whole chunks, bounded in
//! bytes), and the disk tier (`disk.rs`), whose files are checked against the manifest on every read and
//! written in the background, a bounded number at once.

use super::ChunkKey;
use super::config::{ChunkCacheConfig, DISK_PATH_KEY};
use super::disk::DiskTier;
use crate::error::Result;
use crate::format::manifest::Manifest;
use crate::storage::cache::Cache;
use bytes::Bytes;
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Disk writes in flight at once (each holds its chunk until written); a chunk loaded while they are all
/// busy, behind a disk slower than the store, is not written to disk.
const DISK_WRITES_IN_FLIGHT: usize = 16;

/// The memory tier and, if the cache has one, the disk tier.
pub(super) struct Tiers {
    /// Whole checked chunks, least recently used evicted first.
    pub(super) memory: Cache<ChunkKey, Bytes>,
    disk: Option<Arc<DiskTier>>,
    /// One permit per disk write in flight.
    disk_writes: Arc<Semaphore>,
}

impl Tiers {
    /// The tiers `config` asks for, opening the disk tier if there is one (errors name [`DISK_PATH_KEY`]).
    pub(super) fn open(config: &ChunkCacheConfig) -> Result<Self> {
        let disk = match &config.disk {
            Some(d) => Some(Arc::new(DiskTier::open(&d.path, d.capacity_bytes, DISK_PATH_KEY)?)),
            None => None,
        };
        Ok(Tiers {
            memory: Cache::new(config.capacity_bytes, |b: &Bytes| b.len() as u64),
            disk,
            disk_writes: Arc::new(Semaphore::new(DISK_WRITES_IN_FLIGHT)),
        })
    }

    /// The disk tier, if the cache has one.
    pub(super) fn disk(&self) -> Option<&DiskTier> {
        self.disk.as_deref()
    }

    /// Whether the disk tier holds a file of the chunk (not yet checked), without counting a lookup.
    pub(super) fn on_disk(&self, key: &ChunkKey) -> bool {
        self.disk.as_ref().is_some_and(|d| d.contains(key))
    }

    /// The chunk from the disk tier, checked; `None` when it has no good copy.
    pub(super) async fn read_disk(&self, key: ChunkKey, m: &Arc<Manifest>, i: usize, what: &str) -> Option<Bytes> {
        let disk = self.disk.clone()?;
        if !disk.contains(&key) {
            disk.get(&key, |_| Ok(())); // counts the miss; no file is read
            return None;
        }
        let (m, what) = (m.clone(), what.to_string());
        tokio::task::spawn_blocking(move || disk.get(&key, |b| check_chunk(&m, i, b, &what))).await.ok().flatten()
    }

    /// Writes the chunk to the disk tier in the background, unless the tier has it or is busy.
    pub(super) fn write_disk(&self, key: ChunkKey, bytes: Bytes) {
        let Some(disk) = self.disk.clone() else { return };
        if disk.contains(&key) {
            return;
        }
        let Ok(permit) = self.disk_writes.clone().try_acquire_owned() else { return };
        tokio::task::spawn_blocking(move || {
            disk.put(key, &bytes);
            // The tier before the permit: once `flush` holds every permit, no write holds the tier open.
            drop(disk);
            drop(permit);
        });
    }

    /// The blocks `want` (within chunk `i`, widened to whole blocks) from the disk tier's file of the chunk,
    /// checked, without reading the rest of the file or promoting it to memory; `None` when the tier has no
    /// good copy.
    pub(super) async fn read_disk_range(
        &self,
        key: ChunkKey,
        m: &Arc<Manifest>,
        i: usize,
        want: Range<u64>,
        what: &str,
    ) -> Option<Bytes> {
        let disk = self.disk.clone()?;
        if !disk.contains(&key) {
            return None;
        }
        let c = m.chunks[i];
        let blocks = m.align(want.clone());
        let (m, what) = (m.clone(), what.to_string());
        let in_chunk = blocks.start - c.original_position()..blocks.end - c.original_position();
        let start = blocks.start;
        // A fetch's blocks are read in place (a hop to the blocking pool and back costs more than the read).
        let bytes = crate::blocking::read_in_place_or_pool(in_chunk.end - in_chunk.start, move || {
            disk.get_range(&key, c.data_length as u64, in_chunk, |b| m.check_blocks(blocks, b, &what))
        })
        .await
        .ok()
        .flatten()?;
        Some(bytes.slice((want.start - start) as usize..(want.end - start) as usize))
    }

    /// Waits for the disk writes in flight to end.
    pub(super) async fn wait_for_disk_writes(&self) {
        let all = DISK_WRITES_IN_FLIGHT as u32;
        if let Ok(permits) = self.disk_writes.acquire_many(all).await {
            drop(permits);
        }
    }

    /// Deletes the files of every chunk `pred` accepts from the disk tier.
    pub(super) fn forget_on_disk(&self, pred: impl Fn(&ChunkKey) -> bool) {
        if let Some(disk) = &self.disk {
            disk.forget(pred);
        }
    }
}

/// Checks `bytes` as chunk `i` of the segment `m` describes, whole: its blocks, or its entry's CRC without
/// block CRCs.
pub(super) fn check_chunk(m: &Manifest, i: usize, bytes: &[u8], what: &str) -> Result<()> {
    let c = m.chunks[i];
    if m.block_size == 0 {
        return c.verify(bytes, what);
    }
    m.check_blocks(c.original_position()..c.end(), bytes, what)
}
