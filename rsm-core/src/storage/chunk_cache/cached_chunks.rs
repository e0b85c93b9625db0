//! [`CachedChunks`]: one store's chunks read through a chunk cache, the [`ChunkSource`] the fetch planner
//! reads from when the storage manager has a cache.

use super::policy::{self, Budget, ChunkFacts, ChunkRead, DoorkeeperVerdict, Reader};
use super::{ChunkCache, ChunkKey};
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

/// What a read needs of one chunk, in order: bytes in hand, a whole-chunk load, or a read around the cache
/// (contiguous ones merged into one ranged read); the loads and reads then run at once, so a read across a
/// chunk boundary waits for the store once, as it would without a cache.
enum Part {
    /// The bytes asked for, from memory or disk.
    Ready(Bytes),
    /// Chunk `.0` loaded whole (or its load in flight waited for), its bytes `.1` taken.
    Load(usize, Range<u64>),
    /// The bytes read around the cache.
    Around(Range<u64>),
}

/// One store's chunks read through a [`ChunkCache`] ([`ChunkCache::over`]). Cloning is cheap.
#[derive(Clone)]
pub struct CachedChunks {
    /// The cache it reads through.
    pub(super) cache: ChunkCache,
    /// The store's chunks, read on a miss.
    pub(super) inner: Arc<dyn ChunkSource>,
    /// The store's part of the cache's keys: a hash of its URL and key prefix.
    pub(super) scope: u64,
    /// The prefix of the store's object keys, from which a segment's log object is named in errors.
    pub(super) key_prefix: Arc<str>,
    /// Called when a sequential reader's read-ahead reaches a segment's end ([`CachedChunks::at_segment_end`]).
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
    /// ([`crate::backend::Capabilities::reads_local_files`]) when `local`: the chunks of a segment stored as
    /// it is are then read from the store and never kept (the page cache holds them already, and a copy
    /// in the cache, in fresh memory, would only slow the reads beside it); transformed chunks are cached,
    /// as decompressing or decrypting them again costs more than a copy.
    pub fn over_local_files(mut self, local: bool) -> Self {
        self.local_files = local;
        self
    }

    /// Whether the bytes `range` of the segment of `m` are read from the store and not kept
    /// ([`policy::reads_through`]).
    fn read_through(&self, m: &Manifest, range: &Range<u64>) -> bool {
        let touched =
            m.chunks.iter().skip_while(|c| c.end() <= range.start).take_while(|c| c.original_position() < range.end);
        policy::reads_through(
            self.local_files,
            m.block_size > 0,
            m.encryption.is_some(),
            touched.map(|c| c.is_transformed()),
        )
    }

    /// Reads the first `prefetch_chunks` chunks of the segment of `m` ahead, as for a sequential reader (the
    /// segment after the one such a reader is finishing), within the same bound on bytes in flight; never
    /// over local files, where a sequential reader reads nothing ahead.
    pub fn read_ahead_from_start(&self, m: &Arc<Manifest>) {
        let s = &self.cache.shared;
        if policy::reads_ahead(Reader::Sequential, self.local_files, s.config.prefetch_chunks, s.config.capacity_bytes)
        {
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

    /// What a read of `range`, by `reader`, needs of chunk `i` (which `range` touches) of the segment of `m`,
    /// whose log object is `what`: the policy's decision from the facts gathered, carried out as far as
    /// planning goes (a disk copy read, the doorkeeper told, a load started behind the reader).
    async fn plan_chunk(&self, m: &Arc<Manifest>, i: usize, range: &Range<u64>, reader: Reader, what: &str) -> Part {
        let s = &self.cache.shared;
        let c = m.chunks[i];
        let key = self.key(m, i);
        let want = range.start.max(c.original_position())..range.end.min(c.end());
        let within = (want.start - c.original_position())..(want.end - c.original_position());
        let blocks = m.align(want.clone());
        // What is known of the chunk before looking in the cache: each lookup's fact at what it is when the
        // lookup finds nothing.
        let before_lookups = ChunkFacts {
            in_memory: false,
            loading: false,
            on_disk: false,
            reader,
            doorkeeper: DoorkeeperVerdict::FirstMiss,
            budget: Budget::Idle,
            local_files: self.local_files,
            block_crcs: m.block_size > 0,
            asks_whole_chunk: blocks.start <= c.original_position() && blocks.end >= c.end(),
        };
        let in_memory = s.tiers.memory.get(&key);
        let mut disk_copy_failed = false;
        loop {
            let read = match &in_memory {
                // A hit looks nothing else up (it takes no lock but the memory tier's): the policy serves every
                // hit from memory, whatever the rest.
                Some(_) => policy::decide(&ChunkFacts { in_memory: true, ..before_lookups }),
                None => self.decide_miss(m, i, before_lookups, disk_copy_failed),
            };
            match (read, &in_memory) {
                (ChunkRead::FromMemory, Some(whole)) => {
                    s.counters.used(&key);
                    return Part::Ready(whole.slice(within.start as usize..within.end as usize));
                }
                (ChunkRead::FromMemory, None) => unreachable!("only a chunk in memory is served from memory"),
                (ChunkRead::FromDisk, _) => match s.tiers.read_disk_range(key, m, i, want.clone(), what).await {
                    Some(b) => return Part::Ready(b),
                    // The file failed its check (and is gone): decided again without it.
                    None => disk_copy_failed = true,
                },
                // One call either way: the first reader of a chunk loads it, those meeting its load wait for it.
                (ChunkRead::JoinLoad | ChunkRead::LoadAndWait { .. }, _) => return Part::Load(i, within),
                (ChunkRead::ReadAround { .. }, _) => return Part::Around(want),
            }
        }
    }

    /// What the read does with chunk `i` of the segment of `m`, missed in memory: `before_lookups` completed
    /// with what the cache holds and runs, looked up during a turn at the doorkeeper, and the doorkeeper's part
    /// of the decision carried out in that same turn (the miss noted, the load behind the reader started), so
    /// that of the readers missing a chunk at once, the one that starts its load is seen doing so by those
    /// after it. `disk_copy_failed`: the disk tier's file of the chunk failed its check in this read.
    fn decide_miss(
        &self,
        m: &Arc<Manifest>,
        i: usize,
        before_lookups: ChunkFacts,
        disk_copy_failed: bool,
    ) -> ChunkRead {
        let s = &self.cache.shared;
        let key = self.key(m, i);
        let mut turn = s.doorkeeper.lock();
        let facts = ChunkFacts {
            loading: s.loading.running(&key),
            on_disk: !disk_copy_failed && s.tiers.on_disk(&key),
            doorkeeper: if turn.missed_before(&key) {
                DoorkeeperVerdict::MissedBefore
            } else {
                DoorkeeperVerdict::FirstMiss
            },
            budget: s.background_room(m.chunks[i].data_length as u64),
            ..before_lookups
        };
        let read = policy::decide(&facts);
        if let ChunkRead::ReadAround { note_miss: true, .. } | ChunkRead::LoadAndWait { note_miss: true } = read {
            turn.note_miss(key);
        }
        if let ChunkRead::ReadAround { load_behind: true, .. } = read {
            s.spawn_load(self, m, i, false);
        }
        read
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
        let reader =
            if s.sequential.is_sequential((src.scope, id), &range) { Reader::Sequential } else { Reader::Random };
        let what = placement(&src.key_prefix, manifest).log;
        let mut plan: Vec<Part> = Vec::new();
        let mut last = first;
        for (i, _) in
            manifest.chunks.iter().enumerate().skip(first).take_while(|(_, c)| c.original_position() < range.end)
        {
            let part = src.plan_chunk(manifest, i, &range, reader, &what).await;
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
        if policy::reads_ahead(reader, src.local_files, s.config.prefetch_chunks, s.config.capacity_bytes) {
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
