//! Chunk loads: a reader's load of a chunk it missed (single-flight: the first reader of a chunk loads it,
//! those meeting the load wait for its result), and the loads in the background (a sequential reader's
//! read-ahead, a random reader's chunk filled behind it), bounded by their bytes in flight, with the signal of
//! each one's end that [`ChunkCache::flush`](super::ChunkCache::flush) waits for.

use super::policy::Budget;
use super::tiers::check_chunk;
use super::{CachedChunks, ChunkKey, Shared};
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::single_flight::Flight;
use crate::storage::layout::placement;
use bytes::Bytes;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// The most bytes of chunks loaded in the background (read ahead, or filled after a second random miss) at
/// once for a cache with only a disk tier (with a memory tier: a quarter of it).
const DISK_ONLY_BACKGROUND_BYTES: u64 = 64 << 20;

/// The loads running in the background, their bytes, and the signal of each one's end
/// ([`ChunkCache::flush`](super::ChunkCache::flush)). Apart from the cache, so that a load's end is signalled
/// after the load has let go of the cache: once `flush` returns, no load holds it open.
#[derive(Default)]
pub(super) struct InFlight {
    bytes: AtomicU64,
    loads: AtomicU64,
    done: Notify,
}

impl InFlight {
    /// Bytes being loaded in the background now.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Whether a load runs in the background now.
    pub(super) fn any_running(&self) -> bool {
        self.loads.load(Ordering::Acquire) > 0
    }

    /// Waits until no load runs in the background.
    pub(super) async fn wait_until_none_run(&self) {
        loop {
            let done = self.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if !self.any_running() {
                break;
            }
            done.await;
        }
    }
}

/// A background load's share of the bytes in flight and of the loads
/// [`ChunkCache::flush`](super::ChunkCache::flush) waits for, given back when it ends however it ends: done,
/// failed, panicked, or dropped unrun by a runtime shutting down.
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

impl Shared {
    /// Chunk `i` after a miss in memory: from a load in flight, from disk, or read from `src` now.
    pub(super) async fn load(
        self: &Arc<Self>,
        src: &CachedChunks,
        m: &Arc<Manifest>,
        i: usize,
        reader: bool,
    ) -> Result<Bytes> {
        self.load_claimed(src, m, i, reader, self.loading.claim(src.key(m, i))).await
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
        let key = src.key(m, i);
        let loaded = self
            .loading
            .finish(flight, || async {
                // A load that ended between this reader's miss and its taking the cell left the chunk in
                // memory (it is inserted before its cell is dropped): use it rather than read it again.
                if let Some(b) = self.tiers.memory.peek(&key) {
                    return Ok(b);
                }
                let what = placement(&src.key_prefix, m).log;
                if let Some(b) = self.tiers.read_disk(key, m, i, &what).await {
                    self.keep_in_memory(key, b.clone());
                    return Ok(b);
                }
                let c = m.chunks[i];
                let bytes = src.inner.read(m, c.original_position()..c.end()).await?;
                if !src.inner.checks() {
                    check_chunk(m, i, &bytes, &what)?;
                }
                self.counters.loaded(bytes.len() as u64);
                self.keep_in_memory(key, bytes.clone());
                self.tiers.write_disk(key, bytes.clone());
                Ok::<_, Error>(bytes)
            })
            .await;
        if reader && loaded.is_ok() {
            self.counters.used(&key);
        }
        loaded
    }

    /// Keeps a chunk in the memory tier, counting the bytes of the prefetched chunks it evicts as wasted.
    fn keep_in_memory(&self, key: ChunkKey, bytes: Bytes) {
        self.counters.evicted(self.tiers.memory.insert(key, bytes));
    }

    /// Loads chunks `ahead` of the segment in the background, skipping those held or loading, while the
    /// bytes in flight stay within their bound.
    pub(super) fn prefetch(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, ahead: Range<usize>) {
        for i in ahead {
            let key = src.key(m, i);
            if self.loading.running(&key) || self.tiers.memory.get_quiet(&key) {
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

    /// Whether a background load of `len` bytes could start now, by the rule [`Self::spawn_load`] applies when
    /// it starts one.
    pub(super) fn background_room(&self, len: u64) -> Budget {
        if !self.in_flight.any_running() {
            Budget::Idle
        } else if self.fits_in_background(self.in_flight.bytes(), len) {
            Budget::Room
        } else {
            Budget::Full
        }
    }

    /// Whether `len` more bytes may be loaded in the background beside the `before` bytes in flight: always
    /// when none are, else within [`Self::background_budget`].
    fn fits_in_background(&self, before: u64, len: u64) -> bool {
        before == 0 || before + len <= self.background_budget()
    }

    /// Claims the load of chunk `i` and runs it in the background (read ahead when `ahead`, else filled
    /// after a second random miss), unless the bytes in flight would pass their bound: then `false`. A load
    /// when none is in flight always runs, so that a memory tier smaller than four chunks (beside a disk
    /// tier, say) still fills: in flight are then at most one chunk or the bound, whichever is larger.
    pub(super) fn spawn_load(self: &Arc<Self>, src: &CachedChunks, m: &Arc<Manifest>, i: usize, ahead: bool) -> bool {
        let id = m.metadata.remote_log_segment_id.id;
        let key = src.key(m, i);
        let len = m.chunks[i].data_length as u64;
        let before = self.in_flight.bytes.fetch_add(len, Ordering::Relaxed);
        if !self.fits_in_background(before, len) {
            self.in_flight.bytes.fetch_sub(len, Ordering::Relaxed);
            return false;
        }
        if ahead {
            self.counters.prefetch_started(key, len);
        }
        let flight = self.loading.claim(key);
        self.in_flight.loads.fetch_add(1, Ordering::AcqRel);
        let running = BackgroundLoad { in_flight: self.in_flight.clone(), len };
        let (shared, src, m) = (self.clone(), src.clone(), m.clone());
        tokio::spawn(async move {
            let running = running;
            if let Err(e) = shared.load_claimed(&src, &m, i, false, flight).await {
                shared.counters.prefetch_failed(&key);
                tracing::debug!(segment = %id, chunk = i, error = %e, "background load failed; a reader will load it");
            }
            // The cache let go of first, then the load's end signalled.
            drop((shared, src, m));
            drop(running);
        });
        true
    }
}
