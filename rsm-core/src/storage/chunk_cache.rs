//! The chunk cache: a [`ChunkSource`] that wraps another, keeps whole checked chunks in memory (bounded in
//! bytes, least recently used evicted first), loads each chunk once however many readers ask for it at the
//! same time (single-flight), and reads ahead for sequential readers.
//!
//! A chunk enters the cache only after its blocks and its entry's CRC-32C matched; a failed load is not
//! remembered (the next reader tries again). A read is sequential when it starts after the previous read of
//! the same segment started and no later than where that read ended: the broker's catch-up pattern (open at
//! the next batch, read about a mebibyte, close) is. Then the next `prefetch` chunks are loaded in the
//! background; a random reader gets none.

use super::cache::{Cache, CacheStats};
use super::chunk_source::ChunkSource;
use super::layout::segment_keys;
use crate::error::Result;
use crate::format::manifest::Manifest;
use crate::model::Uuid;
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// A chunk: its segment and its index in the chunk table.
type ChunkKey = (Uuid, usize);

/// How many segments' last read positions are remembered for sequential detection.
const TRACKED_SEGMENTS: usize = 4096;

/// The settings of a [`ChunkCache`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkCacheConfig {
    /// Bytes of whole chunks kept in memory.
    pub capacity_bytes: u64,
    /// Chunks read ahead for a sequential reader.
    pub prefetch_chunks: usize,
}

/// What a chunk cache has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkCacheStats {
    /// The cache of whole chunks: hits, misses, evictions, bytes held.
    pub chunks: CacheStats,
    /// Chunks loaded from the inner source (each one GET for stores read directly).
    pub loads: u64,
    /// Chunks loaded ahead of a sequential reader.
    pub prefetched: u64,
    /// Bytes of prefetched chunks that a reader then used.
    pub prefetched_bytes_used: u64,
}

struct Shared {
    inner: Arc<dyn ChunkSource>,
    key_prefix: String,
    chunks: Cache<ChunkKey, Bytes>,
    /// Loads in flight: the first reader of a chunk loads it, the others wait for the same cell.
    loading: Mutex<HashMap<ChunkKey, Arc<OnceCell<Bytes>>>>,
    /// Per segment, the start and end of its last read.
    last_read: Mutex<lru::LruCache<Uuid, (u64, u64)>>,
    /// Prefetched chunks no reader has used yet.
    prefetched: Mutex<std::collections::HashSet<ChunkKey>>,
    config: ChunkCacheConfig,
    loads: AtomicU64,
    prefetches: AtomicU64,
    prefetched_used: AtomicU64,
}

/// Whole checked chunks in memory over another [`ChunkSource`]; see the module documentation.
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

impl ChunkCache {
    /// A cache over `inner`, for the segments under `key_prefix` (named in errors).
    pub fn new(inner: Arc<dyn ChunkSource>, key_prefix: String, config: ChunkCacheConfig) -> Self {
        let tracked = std::num::NonZeroUsize::new(TRACKED_SEGMENTS).expect("non-zero");
        ChunkCache {
            shared: Arc::new(Shared {
                inner,
                key_prefix,
                chunks: Cache::new(config.capacity_bytes, |b: &Bytes| b.len() as u64),
                loading: Mutex::new(HashMap::new()),
                last_read: Mutex::new(lru::LruCache::new(tracked)),
                prefetched: Mutex::new(std::collections::HashSet::new()),
                config,
                loads: AtomicU64::new(0),
                prefetches: AtomicU64::new(0),
                prefetched_used: AtomicU64::new(0),
            }),
        }
    }

    /// What the cache has done so far.
    pub fn stats(&self) -> ChunkCacheStats {
        let s = &self.shared;
        ChunkCacheStats {
            chunks: s.chunks.stats(),
            loads: s.loads.load(Ordering::Relaxed),
            prefetched: s.prefetches.load(Ordering::Relaxed),
            prefetched_bytes_used: s.prefetched_used.load(Ordering::Relaxed),
        }
    }
}

impl Shared {
    /// Chunk `i` of the segment, whole and checked: from the cache, from a load in flight, or loaded now.
    async fn chunk(&self, m: &Arc<Manifest>, i: usize) -> Result<Bytes> {
        let key = (m.metadata.remote_log_segment_id.id, i);
        if let Some(b) = self.chunks.get(&key) {
            if lock(&self.prefetched).remove(&key) {
                self.prefetched_used.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            return Ok(b);
        }
        let cell = lock(&self.loading).entry(key).or_insert_with(|| Arc::new(OnceCell::new())).clone();
        let loaded = cell
            .get_or_try_init(|| async {
                // A load that ended between this reader's miss and its taking the cell left the chunk in
                // the cache (it is inserted before its cell is dropped): use it rather than read it again.
                if let Some(b) = self.chunks.peek(&key) {
                    return Ok(b);
                }
                let c = m.chunks[i];
                let what = segment_keys(&self.key_prefix, &m.metadata).log;
                let bytes = self.inner.read(m, c.position()..c.end()).await?;
                if !self.inner.checks() {
                    m.check_blocks(c.position()..c.end(), &bytes, &what)?;
                }
                c.verify(&bytes, &what)?;
                self.loads.fetch_add(1, Ordering::Relaxed);
                self.chunks.insert(key, bytes.clone());
                Ok::<_, crate::Error>(bytes)
            })
            .await
            .cloned();
        let mut loading = lock(&self.loading);
        if loading.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            loading.remove(&key);
        }
        loaded
    }

    /// Whether a read of `range` continues the segment's previous read; records it either way.
    fn sequential(&self, id: Uuid, range: &Range<u64>) -> bool {
        let mut last = lock(&self.last_read);
        let seq = last.get(&id).is_some_and(|&(start, end)| range.start > start && range.start <= end);
        last.put(id, (range.start, range.end));
        seq
    }
}

#[async_trait]
impl ChunkSource for ChunkCache {
    async fn read(&self, manifest: &Arc<Manifest>, range: Range<u64>) -> Result<Bytes> {
        let s = &self.shared;
        let Some(first) = manifest.chunk_at_position(range.start) else {
            return s.inner.read(manifest, range).await;
        };
        let mut parts = Vec::new();
        let mut last = first;
        for (i, c) in manifest.chunks.iter().enumerate().skip(first).take_while(|(_, c)| c.position() < range.end) {
            let whole = s.chunk(manifest, i).await?;
            let from = range.start.max(c.position()) - c.position();
            let to = range.end.min(c.end()) - c.position();
            parts.push(whole.slice(from as usize..to as usize));
            last = i;
        }
        if s.config.prefetch_chunks > 0 && s.sequential(manifest.metadata.remote_log_segment_id.id, &range) {
            let id = manifest.metadata.remote_log_segment_id.id;
            let ahead = (last + 1..manifest.chunks.len()).take(s.config.prefetch_chunks);
            for i in ahead {
                let busy = s.config.capacity_bytes == 0 || lock(&s.loading).contains_key(&(id, i));
                if busy || s.chunks.get_quiet(&(id, i)) {
                    continue;
                }
                lock(&s.prefetched).insert((id, i));
                s.prefetches.fetch_add(1, Ordering::Relaxed);
                let (shared, m) = (self.shared.clone(), manifest.clone());
                tokio::spawn(async move {
                    if let Err(e) = shared.chunk(&m, i).await {
                        lock(&shared.prefetched).remove(&(id, i));
                        tracing::debug!(segment = %id, chunk = i, error = %e, "read-ahead failed; a reader will load it");
                    }
                });
            }
        }
        Ok(match parts.len() {
            1 => parts.pop().expect("one part"),
            _ => {
                let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
                for p in parts {
                    out.extend_from_slice(&p);
                }
                out.freeze()
            }
        })
    }

    fn checks(&self) -> bool {
        true
    }
}
