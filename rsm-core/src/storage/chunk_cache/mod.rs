//! The chunk cache: whole checked chunks in memory (bounded in bytes, least recently used evicted first) and
//! optionally on disk (its disk tier, `disk.rs`: bounded in bytes, kept across restarts), shared by
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

mod disk;

use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::model::Uuid;
use crate::single_flight::{Flight, SingleFlight};
use crate::storage::cache::{Cache, CacheStats};
use crate::storage::chunk_source::ChunkSource;
use crate::storage::layout::placement;
use async_trait::async_trait;
use bytes::Bytes;
use disk::{ChunkKey, DiskTier};
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::{Notify, Semaphore};

/// How many segments' last read positions are remembered for sequential detection.
const TRACKED_SEGMENTS: usize = 4096;

/// How many chunks missed once are remembered (the doorkeeper): the next miss of one loads it whole.
const SEEN_CHUNKS: usize = 65536;

/// The most bytes of chunks loaded in the background (read ahead, or filled after a second random miss) at
/// once for a cache with only a disk tier (with a memory tier: a quarter of it).
const DISK_ONLY_BACKGROUND_BYTES: u64 = 64 << 20;

/// Disk writes in flight at once (each holds its chunk until written); a chunk loaded while they are all
/// busy, behind a disk slower than the store, is not written to disk.
const DISK_WRITES_IN_FLIGHT: usize = 16;

/// The setting that names the disk tier's directory, named in its errors.
pub const DISK_PATH_KEY: &str = "fetch.cache.disk.path";

/// The disk tier of a [`ChunkCache`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCacheConfig {
    /// The directory of the cache's files, owned by the cache.
    pub path: PathBuf,
    /// Bytes of files kept.
    pub capacity_bytes: u64,
}

/// The settings of a [`ChunkCache`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkCacheConfig {
    /// Bytes of whole chunks kept in memory.
    pub capacity_bytes: u64,
    /// Chunks read ahead for a sequential reader.
    pub prefetch_chunks: usize,
    /// The disk tier, if any.
    pub disk: Option<DiskCacheConfig>,
}

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

struct Shared {
    memory: Cache<ChunkKey, Bytes>,
    disk: Option<Arc<DiskTier>>,
    disk_writes: Arc<Semaphore>,
    /// Loads in flight: the first reader of a chunk loads it, the others wait for its result.
    loading: SingleFlight<ChunkKey, Bytes>,
    /// Per store and segment, the start and end of its last read.
    last_read: Mutex<lru::LruCache<(u64, Uuid), (u64, u64)>>,
    /// Chunks missed once and read around the cache (the doorkeeper).
    seen: Mutex<lru::LruCache<ChunkKey, ()>>,
    bypassed: AtomicU64,
    bypassed_bytes: AtomicU64,
    /// Prefetched chunks no reader has used yet, with their lengths (0 while loading).
    prefetched: Mutex<HashMap<ChunkKey, u64>>,
    /// The loads in the background and their bytes.
    in_flight: Arc<InFlight>,
    /// Background loads running, and the signal of each one's end ([`ChunkCache::flush`]).
    config: ChunkCacheConfig,
    loads: AtomicU64,
    loaded_bytes: AtomicU64,
    prefetches: AtomicU64,
    prefetched_used: AtomicU64,
    prefetched_wasted: AtomicU64,
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
    // Every critical section below leaves its map consistent, so a poisoned lock is usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The caches of this process, by their settings ([`ChunkCache::for_process`]).
static PROCESS_CACHES: Mutex<Vec<(ChunkCacheConfig, Weak<Shared>)>> = Mutex::new(Vec::new());

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
        let disk = match &config.disk {
            Some(d) => Some(Arc::new(DiskTier::open(&d.path, d.capacity_bytes, DISK_PATH_KEY)?)),
            None => None,
        };
        let tracked = std::num::NonZeroUsize::new(TRACKED_SEGMENTS).expect("non-zero");
        Ok(ChunkCache {
            shared: Arc::new(Shared {
                memory: Cache::new(config.capacity_bytes, |b: &Bytes| b.len() as u64),
                disk,
                disk_writes: Arc::new(Semaphore::new(DISK_WRITES_IN_FLIGHT)),
                loading: SingleFlight::new(),
                last_read: Mutex::new(lru::LruCache::new(tracked)),
                seen: Mutex::new(lru::LruCache::new(std::num::NonZeroUsize::new(SEEN_CHUNKS).expect("non-zero"))),
                bypassed: AtomicU64::new(0),
                bypassed_bytes: AtomicU64::new(0),
                prefetched: Mutex::new(HashMap::new()),
                in_flight: Arc::new(InFlight::default()),
                config,
                loads: AtomicU64::new(0),
                loaded_bytes: AtomicU64::new(0),
                prefetches: AtomicU64::new(0),
                prefetched_used: AtomicU64::new(0),
                prefetched_wasted: AtomicU64::new(0),
            }),
        })
    }

    /// The process's cache with these settings: every storage manager of the process opened with the same
    /// cache settings shares one (its memory, its disk directory and its counts), and it lives while one of
    /// them does. A disk directory already in use with other settings is refused, naming [`DISK_PATH_KEY`].
    pub fn for_process(config: ChunkCacheConfig) -> Result<Self> {
        let mut caches = lock(&PROCESS_CACHES);
        caches.retain(|(_, w)| w.strong_count() > 0);
        if let Some(shared) = caches.iter().find(|(c, _)| *c == config).and_then(|(_, w)| w.upgrade()) {
            return Ok(ChunkCache { shared });
        }
        if let Some(d) = &config.disk
            && caches.iter().any(|(c, _)| c.disk.as_ref().is_some_and(|o| o.path == d.path))
        {
            return Err(Error::config(
                DISK_PATH_KEY,
                format!(
                    "the cache directory {} is in use in this process with other cache settings; give each setting its own directory",
                    d.path.display()
                ),
            ));
        }
        let cache = ChunkCache::new(config.clone())?;
        caches.push((config, Arc::downgrade(&cache.shared)));
        Ok(cache)
    }

    /// What the cache has done so far.
    pub fn stats(&self) -> ChunkCacheStats {
        let s = &self.shared;
        let disk = s.disk.as_ref();
        ChunkCacheStats {
            memory: s.memory.stats(),
            disk: disk.map(|d| d.stats()).unwrap_or_default(),
            disk_dropped: disk.map_or(0, |d| d.dropped()),
            disk_write_failures: disk.map_or(0, |d| d.write_failures()),
            loads: s.loads.load(Ordering::Relaxed),
            loaded_bytes: s.loaded_bytes.load(Ordering::Relaxed),
            prefetched: s.prefetches.load(Ordering::Relaxed),
            prefetched_bytes_used: s.prefetched_used.load(Ordering::Relaxed),
            prefetched_bytes_wasted: s.prefetched_wasted.load(Ordering::Relaxed),
            bypassed: s.bypassed.load(Ordering::Relaxed),
            bypassed_bytes: s.bypassed_bytes.load(Ordering::Relaxed),
        }
    }

    /// Bytes being read ahead now.
    #[cfg(test)]
    pub(crate) fn prefetch_in_flight(&self) -> u64 {
        self.shared.in_flight.bytes.load(Ordering::Relaxed)
    }

    /// Waits for the background loads and then the disk writes in flight to end (at shutdown, or before
    /// looking at the cache or its directory).
    pub async fn flush(&self) {
        let s = &self.shared;
        loop {
            let done = s.in_flight.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if s.in_flight.loads.load(Ordering::Acquire) == 0 {
                break;
            }
            done.await;
        }
        let all = DISK_WRITES_IN_FLIGHT as u32;
        if let Ok(permits) = self.shared.disk_writes.acquire_many(all).await {
            drop(permits);
        }
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

/// What [`CachedChunks`] calls when a sequential reader's read-ahead reaches the end of a segment: the
/// storage manager then loads the next segment's manifest.
pub type SegmentEndHook = Arc<dyn Fn(&Arc<Manifest>) + Send + Sync>;

/// One store's chunks read through a [`ChunkCache`] ([`ChunkCache::over`]). Cloning is cheap.
#[derive(Clone)]
pub struct CachedChunks {
    cache: ChunkCache,
    inner: Arc<dyn ChunkSource>,
    scope: u64,
    key_prefix: Arc<str>,
    at_segment_end: Option<SegmentEndHook>,
    /// The store's objects are files this process reads ([`CachedChunks::over_local_files`]).
    local_files: bool,
}

impl fmt::Debug for CachedChunks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedChunks").field("inner", &self.inner).field("scope", &self.scope).finish()
    }
}

impl CachedChunks {
    /// The cache it reads through.
    pub fn cache(&self) -> &ChunkCache {
        &self.cache
    }

    /// The same, over a store whose objects are files this process reads
    /// ([`crate::backend::StorageBackend::reads_local_files`]) when `local`: the chunks of a segment stored as
    /// it is are then read from the store and never kept (the page cache holds them already, and a copy
    /// in the cache, in fresh memory, would only slow the reads beside it); transformed chunks are cached,
    /// as decompressing or decrypting them again costs more than a copy.
    pub fn over_local_files(mut self, local: bool) -> Self {
        self.local_files = local;
        self
    }

    /// Whether the bytes `range` of the segment of `m` are read from the store and not kept: over local
    /// files, each chunk they touch stored as it is with its block CRCs.
    fn read_through(&self, m: &Manifest, range: &Range<u64>) -> bool {
        self.local_files
            && m.block_size > 0
            && m.encryption.is_none()
            && m.chunks
                .iter()
                .skip_while(|c| c.end() <= range.start)
                .take_while(|c| c.original_position() < range.end)
                .all(|c| !c.is_transformed())
    }

    /// Reads the first `prefetch_chunks` chunks of the segment of `m` ahead, as for a sequential reader (the
    /// segment after the one such a reader is finishing), within the same bound on bytes in flight; never
    /// over local files, where a sequential reader reads nothing ahead.
    pub fn read_ahead_from_start(&self, m: &Arc<Manifest>) {
        let s = &self.cache.shared;
        if s.config.prefetch_chunks > 0 && s.config.capacity_bytes > 0 && !self.local_files {
            s.prefetch(self, m, 0..s.config.prefetch_chunks.min(m.chunks.len()));
        }
    }

    /// The same, calling `hook` (at most once per read) when a sequential reader's read-ahead reaches the
    /// segment's last chunk.
    pub fn at_segment_end(mut self, hook: SegmentEndHook) -> Self {
        self.at_segment_end = Some(hook);
        self
    }
}

/// Checks `bytes` as chunk `i` of the segment `m` describes, whole: its blocks, or its entry's CRC without
/// block CRCs.
fn check_chunk(m: &Manifest, i: usize, bytes: &[u8], what: &str) -> Result<()> {
    let c = m.chunks[i];
    if m.block_size == 0 {
        return c.verify(bytes, what);
    }
    m.check_blocks(c.original_position()..c.end(), bytes, what)
}

impl Shared {
    /// Chunk `i` after a miss in memory: from a load in flight, from disk, or read from `src` now.
    async fn load(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, i: usize, reader: bool) -> Result<Bytes> {
        let key = (src.scope, m.metadata.remote_log_segment_id.id, i as u32);
        self.load_claimed(src, m, i, reader, self.loading.claim(key)).await
    }

    /// [`Self::load`] with its part in the load claimed already.
    async fn load_claimed(
        self: &Arc<Self>,
        src: &CachedChunks,
        m: &Arc<Manifest>,
        i: usize,
        reader: bool,
        flight: Flight<ChunkKey, Bytes>,
    ) -> Result<Bytes> {
        let key = (src.scope, m.metadata.remote_log_segment_id.id, i as u32);
        let loaded = self
            .loading
            .finish(flight, || async {
                // A load that ended between this reader's miss and its taking the cell left the chunk in
                // memory (it is inserted before its cell is dropped): use it rather than read it again.
                if let Some(b) = self.memory.peek(&key) {
                    return Ok(b);
                }
                let what = placement(&src.key_prefix, m).log;
                if let Some(b) = self.read_disk(key, m, i, &what).await {
                    self.keep_in_memory(key, b.clone());
                    return Ok(b);
                }
                let c = m.chunks[i];
                let bytes = src.inner.read(m, c.original_position()..c.end()).await?;
                if !src.inner.checks() {
                    check_chunk(m, i, &bytes, &what)?;
                }
                self.loads.fetch_add(1, Ordering::Relaxed);
                self.loaded_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                self.keep_in_memory(key, bytes.clone());
                self.write_disk(key, bytes.clone());
                Ok::<_, Error>(bytes)
            })
            .await;
        if reader && loaded.is_ok() {
            self.used(&key);
        }
        loaded
    }

    /// Counts a prefetched chunk's bytes as used, the first time a reader takes it.
    fn used(&self, key: &ChunkKey) {
        if let Some(len) = lock(&self.prefetched).remove(key) {
            self.prefetched_used.fetch_add(len, Ordering::Relaxed);
        }
    }

    fn keep_in_memory(&self, key: ChunkKey, bytes: Bytes) {
        let evicted = self.memory.insert(key, bytes);
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

    /// The chunk from the disk tier, checked; `None` when it has no good copy.
    async fn read_disk(&self, key: ChunkKey, m: &Arc<Manifest>, i: usize, what: &str) -> Option<Bytes> {
        let disk = self.disk.clone()?;
        if !disk.contains(&key) {
            disk.get(&key, |_| Ok(())); // counts the miss; no file is read
            return None;
        }
        let (m, what) = (m.clone(), what.to_string());
        tokio::task::spawn_blocking(move || disk.get(&key, |b| check_chunk(&m, i, b, &what))).await.ok().flatten()
    }

    /// Writes the chunk to the disk tier in the background, unless the tier has it or is busy.
    fn write_disk(&self, key: ChunkKey, bytes: Bytes) {
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
    async fn read_disk_range(
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

    /// The blocks `want` (within one chunk, widened to whole blocks) read from the store around the cache,
    /// checked.
    async fn bypass(&self, src: &CachedChunks, m: &Arc<Manifest>, want: Range<u64>) -> Result<Bytes> {
        let blocks = m.align(want.clone());
        let bytes = src.inner.read(m, blocks.clone()).await?;
        if !src.inner.checks() {
            m.check_blocks(blocks.clone(), &bytes, &placement(&src.key_prefix, m).log)?;
        }
        self.bypassed.fetch_add(1, Ordering::Relaxed);
        self.bypassed_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes.slice((want.start - blocks.start) as usize..(want.end - blocks.start) as usize))
    }

    /// For a random reader's miss of chunk `i` asking for `want`, whether to read around the cache
    /// (`false`: load the chunk, joining its load in flight if there is one). Its first miss marks it; a
    /// later one also starts its whole load in the background, or, when the reader wants its every block
    /// anyway, loads it. Decided under the doorkeeper's lock, so that of the readers missing a chunk at once,
    /// one starts the load and those after it wait for it.
    fn admit_around(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, i: usize, want: &Range<u64>) -> bool {
        let key = (src.scope, m.metadata.remote_log_segment_id.id, i as u32);
        let mut seen = lock(&self.seen);
        if self.loading.running(&key) {
            return false;
        }
        if seen.put(key, ()).is_none() {
            return true;
        }
        let c = m.chunks[i];
        let blocks = m.align(want.clone());
        if blocks.start <= c.original_position() && blocks.end >= c.end() {
            return false;
        }
        self.spawn_load(src, m, i, false);
        true
    }

    /// Over local files, a miss of chunk `i` by a random reader, read around the cache: its second miss (the
    /// first only marks it) loads the chunk whole in the background while no other load runs, unless its
    /// load runs already.
    fn fill_behind(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, i: usize) {
        let key = (src.scope, m.metadata.remote_log_segment_id.id, i as u32);
        let mut seen = lock(&self.seen);
        if self.loading.running(&key) || seen.put(key, ()).is_none() || self.in_flight.loads.load(Ordering::Acquire) > 0
        {
            return;
        }
        self.spawn_load(src, m, i, false);
    }

    /// Whether a read of `range` continues the segment's previous read; records it either way.
    fn sequential(&self, key: (u64, Uuid), range: &Range<u64>) -> bool {
        let mut last = lock(&self.last_read);
        let seq = last.get(&key).is_some_and(|&(start, end)| range.start > start && range.start <= end);
        last.put(key, (range.start, range.end));
        seq
    }

    /// Loads chunks `ahead` of the segment in the background, skipping those held or loading, while the
    /// bytes in flight stay within their bound.
    fn prefetch(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, ahead: Range<usize>) {
        let id = m.metadata.remote_log_segment_id.id;
        for i in ahead {
            let key = (src.scope, id, i as u32);
            if self.loading.running(&key) || self.memory.get_quiet(&key) {
                continue;
            }
            if !self.spawn_load(src, m, i, true) {
                break;
            }
        }
    }

    /// The most bytes of chunks loaded in the background at once: a quarter of the memory tier, or with only
    /// a disk tier a quarter of it up to [`DISK_ONLY_BACKGROUND_BYTES`].
    fn background_budget(&self) -> u64 {
        match &self.config.disk {
            Some(d) if self.config.capacity_bytes == 0 => (d.capacity_bytes / 4).min(DISK_ONLY_BACKGROUND_BYTES),
            _ => self.config.capacity_bytes / 4,
        }
    }

    /// Claims the load of chunk `i` and runs it in the background (read ahead when `ahead`, else filled
    /// after a second random miss), unless the bytes in flight would pass their bound: then `false`. A load
    /// when none is in flight always runs, so that a memory tier smaller than four chunks (beside a disk
    /// tier, say) still fills: in flight are then at most one chunk or the bound, whichever is larger.
    fn spawn_load(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, i: usize, ahead: bool) -> bool {
        let id = m.metadata.remote_log_segment_id.id;
        let key = (src.scope, id, i as u32);
        let len = m.chunks[i].data_length as u64;
        let before = self.in_flight.bytes.fetch_add(len, Ordering::Relaxed);
        if before > 0 && before + len > self.background_budget() {
            self.in_flight.bytes.fetch_sub(len, Ordering::Relaxed);
            return false;
        }
        if ahead {
            lock(&self.prefetched).insert(key, len);
            self.prefetches.fetch_add(1, Ordering::Relaxed);
        }
        let flight = self.loading.claim(key);
        self.in_flight.loads.fetch_add(1, Ordering::AcqRel);
        let running = BackgroundLoad { in_flight: self.in_flight.clone(), len };
        let (shared, src, m) = (self.clone(), src.clone(), m.clone());
        tokio::spawn(async move {
            let running = running;
            if let Err(e) = shared.load_claimed(&src, &m, i, false, flight).await {
                lock(&shared.prefetched).remove(&key);
                tracing::debug!(segment = %id, chunk = i, error = %e, "background load failed; a reader will load it");
            }
            // The cache let go of first, then the load's end signalled.
            drop((shared, src, m));
            drop(running);
        });
        true
    }
}

/// The loads running in the background, their bytes, and the signal of each one's end
/// ([`ChunkCache::flush`]). Apart from the cache, so that a load's end is signalled after the load has let go
/// of the cache: once `flush` returns, no load holds it open.
#[derive(Default)]
struct InFlight {
    bytes: AtomicU64,
    loads: AtomicU64,
    done: Notify,
}

/// A background load's share of the bytes in flight and of the loads [`ChunkCache::flush`] waits for, given
/// back when it ends however it ends: done, failed, panicked, or dropped unrun by a runtime shutting down.
struct BackgroundLoad {
    in_flight: Arc<InFlight>,
    len: u64,
}

impl Drop for BackgroundLoad {
    fn drop(&mut self) {
        self.in_flight.bytes.fetch_sub(self.len, Ordering::Relaxed);
        if self.in_flight.loads.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.in_flight.done.notify_waiters();
        }
    }
}

#[async_trait]
impl ChunkSource for CachedChunks {
    async fn read(&self, manifest: &Arc<Manifest>, range: Range<u64>) -> Result<Bytes> {
        let src = self;
        let s = &src.cache.shared;
        let Some(first) = manifest.chunk_at_position(range.start) else {
            return src.inner.read(manifest, range).await;
        };
        if src.read_through(manifest, &range) {
            return s.bypass(src, manifest, range).await;
        }
        let id = manifest.metadata.remote_log_segment_id.id;
        let sequential = s.sequential((src.scope, id), &range);
        let what = placement(&src.key_prefix, manifest).log;
        // What each chunk needs, in order: bytes in hand, a whole-chunk load, or a read around the cache
        // (contiguous ones merged into one ranged read); the loads and reads then run at once, so a read
        // across a chunk boundary waits for the store once, as it would without a cache.
        enum Part {
            Ready(Bytes),
            Load(usize, Range<u64>),
            Around(Range<u64>),
        }
        let mut plan: Vec<Part> = Vec::new();
        let mut last = first;
        for (i, c) in
            manifest.chunks.iter().enumerate().skip(first).take_while(|(_, c)| c.original_position() < range.end)
        {
            let key = (src.scope, id, i as u32);
            let want = range.start.max(c.original_position())..range.end.min(c.end());
            let within = (want.start - c.original_position())..(want.end - c.original_position());
            let part = if let Some(whole) = s.memory.get(&key) {
                s.used(&key);
                Part::Ready(whole.slice(within.start as usize..within.end as usize))
            } else if src.local_files && manifest.block_size > 0 {
                // Over local files a read costs its own transform and never waits: a miss, even of a chunk
                // whose load is in flight, reads only its blocks; a random reader's chunk is filled behind it.
                if let Some(b) = s.read_disk_range(key, manifest, i, want.clone(), &what).await {
                    Part::Ready(b)
                } else {
                    if !sequential {
                        s.fill_behind(src, manifest, i);
                    }
                    Part::Around(want)
                }
            } else if s.loading.running(&key) {
                Part::Load(i, within)
            } else if let Some(b) = s.read_disk_range(key, manifest, i, want.clone(), &what).await {
                Part::Ready(b)
            } else if !sequential && manifest.block_size > 0 && !s.admit_around(src, manifest, i, &want) {
                // A load began since the check above, or the chunk is missed again and asked for whole: load
                // it (with its other readers).
                Part::Load(i, within)
            } else if !sequential && manifest.block_size > 0 {
                // Missed by a random reader: only what it asked for (a chunk without block CRCs can only be
                // checked whole, so it is loaded whole).
                Part::Around(want)
            } else {
                Part::Load(i, within)
            };
            // Contiguous reads around the cache are merged into one ranged read.
            match (plan.last_mut(), part) {
                (Some(Part::Around(r)), Part::Around(w)) if r.end == w.start => r.end = w.end,
                (_, part) => plan.push(part),
            }
            last = i;
        }
        let parts = futures::future::try_join_all(plan.into_iter().map(|p| async move {
            match p {
                Part::Ready(b) => Ok(b),
                Part::Load(i, within) => {
                    Ok(s.load(src, manifest, i, true).await?.slice(within.start as usize..within.end as usize))
                }
                Part::Around(r) => s.bypass(src, manifest, r).await,
            }
        }))
        .await?;
        if s.config.prefetch_chunks > 0 && s.config.capacity_bytes > 0 && sequential && !src.local_files {
            let end = last + 1 + s.config.prefetch_chunks;
            s.prefetch(src, manifest, last + 1..end.min(manifest.chunks.len()));
            if end >= manifest.chunks.len()
                && let Some(hook) = &src.at_segment_end
            {
                hook(manifest);
            }
        }
        Ok(crate::storage::chunk_source::join_parts(parts, range.end - range.start))
    }

    fn checks(&self) -> bool {
        true
    }

    fn forget(&self, segment: &Uuid) {
        let s = &self.cache.shared;
        let this = |k: &ChunkKey| k.0 == self.scope && k.1 == *segment;
        s.memory.remove_where(this);
        lock(&s.prefetched).retain(|k, _| !this(k));
        if let Some(disk) = &s.disk {
            disk.forget(this);
        }
    }
}
