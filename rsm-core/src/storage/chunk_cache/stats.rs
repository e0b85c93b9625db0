//! What a chunk cache has done: [`ChunkCacheStats`], the snapshot its users read, and the counters behind
//! it, with the prefetched chunks no reader has used yet (to count the read-ahead's bytes used and wasted).

use super::ChunkKey;
use super::disk::DiskTier;
use super::lock;
use crate::storage::cache::CacheStats;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a chunk cache has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkCacheStats {
    /// The memory tier: hits, misses, evictions, chunks and bytes held.
    pub memory: CacheStats,
    /// The disk tier (all zero without one): hits, misses, evictions, files and bytes held.
    pub disk: CacheStats,
    /// Disk files that failed their check, were deleted and fetched again.
    pub disk_dropped: u64,
    /// Disk writes that failed (the chunk was served, but not kept on disk).
    pub disk_write_failures: u64,
    /// Chunks loaded from the store (each one ranged read for stores read directly).
    pub loads: u64,
    /// Their bytes.
    pub loaded_bytes: u64,
    /// Chunks loaded ahead of a sequential reader.
    pub prefetched: u64,
    /// Bytes of prefetched chunks that a reader then used.
    pub prefetched_bytes_used: u64,
    /// Bytes of prefetched chunks evicted from memory before any reader used them.
    pub prefetched_bytes_wasted: u64,
    /// Reads by a random reader that missed, served from the store around the cache (only the blocks asked
    /// for; on a chunk's second miss its whole load runs in the background, counted in `loads`).
    pub bypassed: u64,
    /// Their bytes.
    pub bypassed_bytes: u64,
}

/// The counts of a chunk cache's loads, read-ahead and reads around it (the tiers count their own hits and
/// misses).
#[derive(Default)]
pub(super) struct Counters {
    loads: AtomicU64,
    loaded_bytes: AtomicU64,
    prefetches: AtomicU64,
    prefetched_used: AtomicU64,
    prefetched_wasted: AtomicU64,
    bypassed: AtomicU64,
    bypassed_bytes: AtomicU64,
    /// Prefetched chunks no reader has used yet, with their lengths.
    prefetched: Mutex<HashMap<ChunkKey, u64>>,
}

impl Counters {
    /// A chunk of `len` bytes loaded from the store.
    pub(super) fn loaded(&self, len: u64) {
        self.loads.fetch_add(1, Ordering::Relaxed);
        self.loaded_bytes.fetch_add(len, Ordering::Relaxed);
    }

    /// A read around the cache of `len` bytes.
    pub(super) fn bypassed(&self, len: u64) {
        self.bypassed.fetch_add(1, Ordering::Relaxed);
        self.bypassed_bytes.fetch_add(len, Ordering::Relaxed);
    }

    /// The read-ahead of chunk `key`, of `len` bytes, started.
    pub(super) fn prefetch_started(&self, key: ChunkKey, len: u64) {
        lock(&self.prefetched).insert(key, len);
        self.prefetches.fetch_add(1, Ordering::Relaxed);
    }

    /// The read-ahead of chunk `key` failed: it will not be counted as used or wasted.
    pub(super) fn prefetch_failed(&self, key: &ChunkKey) {
        lock(&self.prefetched).remove(key);
    }

    /// Counts a prefetched chunk's bytes as used, the first time a reader takes it.
    pub(super) fn used(&self, key: &ChunkKey) {
        if let Some(len) = lock(&self.prefetched).remove(key) {
            self.prefetched_used.fetch_add(len, Ordering::Relaxed);
        }
    }

    /// Counts the bytes of the prefetched chunks among `evicted` (from the memory tier) as wasted.
    pub(super) fn evicted(&self, evicted: Vec<(ChunkKey, bytes::Bytes)>) {
        if evicted.is_empty() {
            return;
        }
        let mut prefetched = lock(&self.prefetched);
        for (k, _) in evicted {
            if let Some(len) = prefetched.remove(&k) {
                self.prefetched_wasted.fetch_add(len, Ordering::Relaxed);
            }
        }
    }

    /// Forgets the prefetched chunks `pred` accepts (their segment is gone).
    pub(super) fn forget(&self, pred: impl Fn(&ChunkKey) -> bool) {
        lock(&self.prefetched).retain(|k, _| !pred(k));
    }

    /// The counts, with the memory tier's and the disk tier's.
    pub(super) fn snapshot(&self, memory: CacheStats, disk: Option<&DiskTier>) -> ChunkCacheStats {
        ChunkCacheStats {
            memory,
            disk: disk.map(|d| d.stats()).unwrap_or_default(),
            disk_dropped: disk.map_or(0, |d| d.dropped()),
            disk_write_failures: disk.map_or(0, |d| d.write_failures()),
            loads: self.loads.load(Ordering::Relaxed),
            loaded_bytes: self.loaded_bytes.load(Ordering::Relaxed),
            prefetched: self.prefetches.load(Ordering::Relaxed),
            prefetched_bytes_used: self.prefetched_used.load(Ordering::Relaxed),
            prefetched_bytes_wasted: self.prefetched_wasted.load(Ordering::Relaxed),
            bypassed: self.bypassed.load(Ordering::Relaxed),
            bypassed_bytes: self.bypassed_bytes.load(Ordering::Relaxed),
        }
    }
}
