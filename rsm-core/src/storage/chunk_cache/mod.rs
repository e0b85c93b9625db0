//! The chunk cache: whole checked chunks in memory (bounded in bytes, least recently used evicted first) and
//! optionally on disk (its disk tier: bounded in bytes, kept across restarts), shared by
//! every storage manager of a process that has the same cache settings ([`ChunkCache::for_process`]).
//!
//! A [`ChunkCache`] is the store of chunks; [`CachedChunks`] is the [`ChunkSource`] that reads one store's
//! chunks through it, keyed by the store (a hash of its URL and key prefix), the segment and the chunk. A
//! chunk is loaded once however many readers ask for it at the same time (single-flight). A chunk enters
//! either tier only after its blocks and its entry's CRC-32C matched; a failed load is not remembered (the
//! next reader tries again); a disk file is checked again each time it is read.
//!
//! A read is sequential when it starts after the previous read of the same segment started and no later
//! than where that read ended: the broker's catch-up pattern (open at the next batch, read about a
//! mebibyte, close) is. Then the next `prefetch_chunks` chunks are loaded in the background, with at most a
//! quarter of the memory tier's bytes in flight in all (or one chunk, when none is in flight); a random reader
//! gets none.
//!
//! A cache never makes a read slower than no cache would: a random reader that misses reads only the blocks
//! it asked for, around the cache. The first miss of a chunk only marks it (a doorkeeper, as TinyLFU
//! admits); the second also loads the chunk whole in the background, within the same bound on bytes in
//! flight as the read-ahead, while its reader goes on with its own blocks; readers meeting that load wait
//! for it, together. A sequential reader loads its chunks whole. A disk-tier hit reads and checks only the
//! blocks asked for, and writes nothing.
//!
//! Over a store whose objects are files this process reads ([`CachedChunks::over_local_files`]), chunks stored
//! as they are go straight to the store and are never kept: the page cache holds them already, and a copy in
//! the cache, in fresh memory, only slowed every read pattern measured (`catch_up` in `benches/README.md`).
//! Compressed or encrypted chunks are cached there, but a read there never waits for a chunk's load: reading
//! its own blocks costs it only their transform, so every miss (a sequential reader's too, and one that meets
//! the chunk's load in flight) reads around the cache. Only a random reader's second miss loads the chunk
//! whole, in the background, if no other load runs (a load there is all processor time, taken from the
//! readers). A sequential reader there loads nothing and reads nothing ahead: it reads each block once
//! anyway, and a load behind it would undo the whole chunk a second time in fresh memory (catch-up at
//! 0.5-0.9x the speed of no cache, `catch_up` in `benches/README.md`).
//!
//! # Layout
//! The policy apart from the mechanism it drives:
//! - `policy.rs`: what a read does with each chunk it touches (serve it from memory or disk, join its load,
//!   load it and wait, read around the cache), one pure function of plain facts, and the rules of a whole
//!   read (around the cache altogether over local files; read ahead);
//!
//! and the mechanism, each part in a file of its own:
//! - `config.rs`: the settings ([`ChunkCacheConfig`], [`DiskCacheConfig`]);
//! - `stats.rs`: what the cache has done ([`ChunkCacheStats`]) and the counters behind it;
//! - `registry.rs`: the caches of this process, one per settings ([`ChunkCache::for_process`]);
//! - `tiers.rs`: the memory tier, and the disk tier as the cache uses it (files checked against the
//!   manifest, written in the background); `disk.rs`: the disk tier itself, a directory of chunk files;
//! - `loads.rs`: the loads of chunks, single-flight, and those in the background within their bound on bytes
//!   in flight;
//! - `readers.rs`: what the cache remembers of its readers: their last reads (sequential or random) and the
//!   chunks they missed (the doorkeeper);
//! - `cached_chunks.rs`: [`CachedChunks`], one store's chunks read through the cache: for each chunk a read
//!   touches it gathers the facts, asks the policy, and carries the decision out.

mod cached_chunks;
mod config;
mod disk;
mod loads;
mod policy;
mod readers;
mod registry;
mod stats;
mod tiers;

pub use cached_chunks::{CachedChunks, SegmentEndHook};
pub use config::{ChunkCacheConfig, DISK_PATH_KEY, DiskCacheConfig};
pub use stats::ChunkCacheStats;

use crate::error::Result;
use crate::model::Uuid;
use crate::single_flight::SingleFlight;
use crate::storage::chunk_source::ChunkSource;
use bytes::Bytes;
use loads::InFlight;
use readers::{Doorkeeper, SequentialDetector};
use stats::Counters;
use std::fmt;
use std::sync::{Arc, Mutex};
use tiers::Tiers;

/// A chunk of one store: the store's scope hash, the segment id, the chunk's index in the chunk table.
pub(crate) type ChunkKey = (u64, Uuid, u32);

/// One cache, shared by its [`ChunkCache`] handles and the loads running in its background.
struct Shared {
    config: ChunkCacheConfig,
    /// The memory tier and the disk tier.
    tiers: Tiers,
    /// Loads in flight: the first reader of a chunk loads it, the others wait for its result.
    loading: SingleFlight<ChunkKey, Bytes>,
    /// The loads in the background and their bytes.
    in_flight: Arc<InFlight>,
    /// Per store and segment, the start and end of its last read.
    sequential: SequentialDetector,
    /// Chunks missed by random readers.
    doorkeeper: Doorkeeper,
    counters: Counters,
}

/// Whole checked chunks in memory and on disk; see the module documentation. Cloning shares the cache.
#[derive(Clone)]
pub struct ChunkCache {
    shared: Arc<Shared>,
}

impl fmt::Debug for ChunkCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkCache").field("config", &self.shared.config).field("stats", &self.stats()).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section of the cache leaves its map consistent, so a poisoned lock is usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A stable 64-bit hash (FNV-1a) of a store's identity, for cache keys and file names.
fn scope_hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0]) {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

impl ChunkCache {
    /// A cache of its own with these settings, opening its disk tier if it has one (errors name
    /// [`DISK_PATH_KEY`]).
    pub fn new(config: ChunkCacheConfig) -> Result<Self> {
        Ok(ChunkCache {
            shared: Arc::new(Shared {
                tiers: Tiers::open(&config)?,
                loading: SingleFlight::new(),
                in_flight: Arc::new(InFlight::default()),
                sequential: SequentialDetector::new(),
                doorkeeper: Doorkeeper::new(),
                counters: Counters::default(),
                config,
            }),
        })
    }

    /// The process's cache with these settings: every storage manager of the process opened with the same
    /// cache settings shares one (its memory, its disk directory and its counts), and it lives while one of
    /// them does. A disk directory already in use with other settings is refused, naming [`DISK_PATH_KEY`].
    pub fn for_process(config: ChunkCacheConfig) -> Result<Self> {
        registry::process_cache(config)
    }

    /// What the cache has done so far.
    pub fn stats(&self) -> ChunkCacheStats {
        let s = &self.shared;
        s.counters.snapshot(s.tiers.memory.stats(), s.tiers.disk())
    }

    /// Bytes being read ahead now.
    #[cfg(test)]
    pub(crate) fn prefetch_in_flight(&self) -> u64 {
        self.shared.in_flight.bytes()
    }

    /// Waits for the background loads and then the disk writes in flight to end (at shutdown, or before
    /// looking at the cache or its directory).
    pub async fn flush(&self) {
        self.shared.in_flight.wait_until_none_run().await;
        self.shared.tiers.wait_for_disk_writes().await;
    }

    /// The chunks of one store, read through this cache from `inner`. `store` names the store (its URL:
    /// hashed, never logged) and `key_prefix` its objects; together they keep stores apart in the cache and
    /// on disk.
    pub fn over(&self, inner: Arc<dyn ChunkSource>, store: &str, key_prefix: String) -> CachedChunks {
        let scope = scope_hash(&[store, &key_prefix]);
        CachedChunks {
            cache: self.clone(),
            inner,
            scope,
            key_prefix: key_prefix.into(),
            at_segment_end: None,
            local_files: false,
        }
    }
}
