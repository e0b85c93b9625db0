//! [`CachedChunks`]: one store's chunks read through a chunk cache, the [`ChunkSource`] the fetch planner
//! reads from when the storage manager has a cache.

use super::{ChunkCache, ChunkKey, Shared};
use crate::error::Result;
use crate::format::manifest::Manifest;
use crate::model::Uuid;
use crate::storage::chunk_source::ChunkSource;
use crate::storage::layout::placement;
use async_trait::async_trait;
use bytes::Bytes;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// What [`CachedChunks`] calls when a sequential reader's read-ahead reaches the end of a segment: the
/// storage manager then loads the next segment's manifest.
pub type SegmentEndHook = Arc<dyn Fn(&Arc<Manifest>) + Send + Sync>;

/// One store's chunks read through a [`ChunkCache`] ([`ChunkCache::over`]). Cloning is cheap.
#[derive(Clone)]
pub struct CachedChunks {
    pub(super) cache: ChunkCache,
    pub(super) inner: Arc<dyn ChunkSource>,
    pub(super) scope: u64,
    pub(super) key_prefix: Arc<str>,
    pub(super) at_segment_end: Option<SegmentEndHook>,
    /// The store's objects are files this process reads ([`CachedChunks::over_local_files`]).
    pub(super) local_files: bool,
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

    /// The cache's key of chunk `i` of the segment of `m` in this store.
    pub(super) fn key(&self, m: &Manifest, i: usize) -> ChunkKey {
        (self.scope, m.metadata.remote_log_segment_id.id, i as u32)
    }

    /// The blocks `want` (within one chunk, widened to whole blocks) read from the store around the cache,
    /// checked.
    async fn bypass(&self, m: &Arc<Manifest>, want: Range<u64>) -> Result<Bytes> {
        let blocks = m.align(want.clone());
        let bytes = self.inner.read(m, blocks.clone()).await?;
        if !self.inner.checks() {
            m.check_blocks(blocks.clone(), &bytes, &placement(&self.key_prefix, m).log)?;
        }
        self.cache.shared.counters.bypassed(bytes.len() as u64);
        Ok(bytes.slice((want.start - blocks.start) as usize..(want.end - blocks.start) as usize))
    }
}

impl Shared {
    /// For a random reader's miss of chunk `i` asking for `want`, whether to read around the cache
    /// (`false`: load the chunk, joining its load in flight if there is one). Its first miss marks it; a
    /// later one also starts its whole load in the background, or, when the reader wants its every block
    /// anyway, loads it. Decided under the doorkeeper's lock, so that of the readers missing a chunk at once,
    /// one starts the load and those after it wait for it.
    fn admit_around(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, i: usize, want: &Range<u64>) -> bool {
        let key = src.key(m, i);
        let mut seen = self.doorkeeper.lock();
        if self.loading.running(&key) {
            return false;
        }
        if !seen.note_miss(key) {
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
        let key = src.key(m, i);
        let mut seen = self.doorkeeper.lock();
        if self.loading.running(&key) || !seen.note_miss(key) || self.in_flight.any_running() {
            return;
        }
        self.spawn_load(src, m, i, false);
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
            return src.bypass(manifest, range).await;
        }
        let id = manifest.metadata.remote_log_segment_id.id;
        let sequential = s.sequential.is_sequential((src.scope, id), &range);
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
            let key = src.key(manifest, i);
            let want = range.start.max(c.original_position())..range.end.min(c.end());
            let within = (want.start - c.original_position())..(want.end - c.original_position());
            let part = if let Some(whole) = s.tiers.memory.get(&key) {
                s.counters.used(&key);
                Part::Ready(whole.slice(within.start as usize..within.end as usize))
            } else if src.local_files && manifest.block_size > 0 {
                // Over local files a read costs its own transform and never waits: a miss, even of a chunk
                // whose load is in flight, reads only its blocks; a random reader's chunk is filled behind it.
                if let Some(b) = s.tiers.read_disk_range(key, manifest, i, want.clone(), &what).await {
                    Part::Ready(b)
                } else {
                    if !sequential {
                        s.fill_behind(src, manifest, i);
                    }
                    Part::Around(want)
                }
            } else if s.loading.running(&key) {
                Part::Load(i, within)
            } else if let Some(b) = s.tiers.read_disk_range(key, manifest, i, want.clone(), &what).await {
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
                Part::Around(r) => src.bypass(manifest, r).await,
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
        s.tiers.memory.remove_where(this);
        s.counters.forget(this);
        s.tiers.forget_on_disk(this);
    }
}
