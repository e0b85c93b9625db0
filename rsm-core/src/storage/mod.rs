//! [`TieredStorage`]: the one [`RemoteStorageManager`] implementation, over any [`StorageBackend`], split by
//! job:
//! - [`layout`]: where each object of a segment lives (keys);
//! - [`copy`](self#copy): scan, uploads, manifest;
//! - [`fetch`]: the planner (position, offset or timestamp to chunk reads) and the checks on what streams;
//! - [`chunk_source`]: the seam between the planner and the store ([`ChunkSource`]): where a chunk's bytes
//!   come from (the backend, undoing per-chunk compression, `compression.*`; a cache over it);
//! - [`cache`]: the bounded, weighted LRU cache type (manifests, remote indexes);
//! - [`chunk_cache`]: whole checked chunks in memory and on disk (the disk tier in `disk_cache`), one cache
//!   per process and settings, single-flight, with read-ahead for sequential readers (`fetch.cache.*`,
//!   `fetch.prefetch.chunks`);
//! - [`settings`]: the settings, [`TieredConfig`].
//!
//! # Copy
//! The scan of the `.log` (every batch checked, the chunk table cut on batch boundaries), the upload of the
//! `.log` and of the index bundle run at once (with `compression.enabled`, the `.log` is compressed chunk by
//! chunk and uploaded after the scan); the manifest, written last, is the commit point. A failed copy
//! removes what it wrote.

pub mod cache;
pub mod chunk_cache;
pub mod chunk_source;
mod copy;
mod disk_cache;
pub mod fetch;
pub mod layout;
pub mod settings;
mod single_flight;

pub use cache::{Cache, CacheStats};
pub use chunk_cache::{CachedChunks, ChunkCache, ChunkCacheConfig, ChunkCacheStats, DiskCacheConfig, SegmentEndHook};
pub use chunk_source::{BackendChunks, ChunkSource};
pub use layout::{SegmentKey, SegmentKeys, Suffix, parse_segment_key, partition_prefix, segment_keys};
pub use settings::{EncryptionConfig, TieredConfig};

use crate::backend::{ByteStream, StorageBackend};
use crate::error::{Error, ErrorKind, Result};
use crate::format::manifest::Manifest;
use crate::model::{CustomMetadata, IndexType, LogSegmentData, RemoteLogSegmentMetadata, TopicIdPartition, Uuid};
use crate::rsm::RemoteStorageManager;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::sync::Arc;

/// The safety age of [`TieredStorage::sweep_orphans`] for callers without a better one: an object of an
/// uncommitted segment, or a temporary upload object, last written an hour ago or more belongs to no copy
/// still running (an upload in flight keeps writing, so its objects stay young).
pub const ORPHAN_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Kafka's remote storage contract over any backend.
#[derive(Debug)]
pub struct TieredStorage {
    backend: Arc<dyn StorageBackend>,
    chunks: Arc<dyn ChunkSource>,
    config: TieredConfig,
    /// The chunk cache between the planner and the backend, when `fetch.cache.bytes` is set.
    chunk_cache: Option<ChunkCache>,
    manifests: Arc<Cache<Uuid, Arc<Manifest>>>,
    manifest_loads: single_flight::SingleFlight<Uuid, Arc<Manifest>>,
    /// Index loads in flight: concurrent cold readers of one index share one ranged read.
    index_loads: single_flight::SingleFlight<(Uuid, IndexType), Bytes>,
    /// Remote indexes by segment and type (SR-34), weighed by their bytes.
    indexes: Cache<(Uuid, IndexType), Bytes>,
}

/// Reads and decodes the manifest at `key` of `backend`, and checks that it is the manifest of the segment
/// its key names (partition, start offset, segment id): correct bytes of another segment are wrong bytes, so
/// a manifest copied, moved or restored over another segment's key is corrupt, naming both.
async fn read_manifest(backend: &dyn StorageBackend, key_prefix: &str, key: &str) -> Result<Manifest> {
    let bytes = backend.get_range(key, 0..u64::MAX).await?;
    let m = Manifest::decode(&bytes, key)?;
    let md = &m.metadata;
    match layout::parse_segment_key(key_prefix, key) {
        Some(k) if k.suffix == Suffix::Manifest && k.names(md) => Ok(m),
        named => Err(Error::corrupt(format!(
            "manifest {key} describes segment {} (offsets {}..={}), not {}: it belongs to another segment",
            md.remote_log_segment_id,
            md.start_offset,
            md.end_offset,
            named.map_or("a segment manifest's key".to_string(), |k| format!(
                "the segment its key names ({}:{} from offset {})",
                k.topic_id_partition, k.segment_id, k.start_offset
            )),
        ))),
    }
}

/// Loads the manifest of the segment after one that a sequential reader is finishing, into the manifest
/// cache, so that the reader's first fetch of it waits for no manifest: one listing of the keys that start
/// at the next offset, then one read per manifest found. Once per segment.
struct NextManifests {
    backend: Arc<dyn StorageBackend>,
    key_prefix: String,
    manifests: Arc<Cache<Uuid, Arc<Manifest>>>,
    /// The segments whose successor was looked for.
    asked: std::sync::Mutex<lru::LruCache<Uuid, ()>>,
}

impl NextManifests {
    fn new(
        backend: Arc<dyn StorageBackend>,
        key_prefix: String,
        manifests: Arc<Cache<Uuid, Arc<Manifest>>>,
    ) -> Arc<Self> {
        let asked = std::sync::Mutex::new(lru::LruCache::new(std::num::NonZeroUsize::new(4096).expect("non-zero")));
        Arc::new(NextManifests { backend, key_prefix, manifests, asked })
    }

    fn load_after(self: &Arc<Self>, m: &Arc<Manifest>) {
        let md = &m.metadata;
        if self.asked.lock().unwrap_or_else(|p| p.into_inner()).put(md.remote_log_segment_id.id, ()).is_some() {
            return;
        }
        let prefix = format!(
            "{}{:020}-",
            partition_prefix(&self.key_prefix, &md.remote_log_segment_id.topic_id_partition),
            md.end_offset.saturating_add(1)
        );
        let this = self.clone();
        tokio::spawn(async move {
            let found = match this.backend.list(&prefix).await {
                Ok(found) => found,
                Err(e) => {
                    return tracing::debug!(prefix, error = %e, "cannot list the next segment; its fetch will read its manifest");
                }
            };
            for o in found.into_iter().filter(|o| o.key.ends_with(".manifest")) {
                match read_manifest(this.backend.as_ref(), &this.key_prefix, &o.key).await {
                    Ok(next) => {
                        let _ = this.manifests.insert(next.metadata.remote_log_segment_id.id, Arc::new(next));
                    }
                    Err(e) => tracing::debug!(key = o.key, error = %e, "cannot read the next segment's manifest ahead"),
                }
            }
        });
    }
}

/// One segment found by [`TieredStorage::scan_segments`].
#[derive(Debug)]
pub struct ListedSegment {
    /// The key of its manifest.
    pub manifest_key: String,
    /// The manifest, or why it cannot be read (missing, damaged).
    pub manifest: Result<Manifest>,
    /// The segment's objects the listing lacks (`.log`, `.indexes`).
    pub missing: Vec<&'static str>,
}

/// What [`TieredStorage::orphans`] found: (key, bytes) each, sorted by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Orphans {
    /// Objects of segments without a manifest (an upload cut short before its commit point).
    pub uncommitted: Vec<(String, u64)>,
    /// Temporary objects of interrupted uploads.
    pub temporary: Vec<(String, u64)>,
}

impl Orphans {
    /// Every key.
    pub fn keys(&self) -> Vec<String> {
        self.uncommitted.iter().chain(&self.temporary).map(|(k, _)| k.clone()).collect()
    }

    /// Bytes in all.
    pub fn bytes(&self) -> u64 {
        self.uncommitted.iter().chain(&self.temporary).map(|(_, b)| b).sum()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.uncommitted.is_empty() && self.temporary.is_empty()
    }
}

/// What [`TieredStorage::verify`] checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Chunks read and checked.
    pub chunks: usize,
    /// Log bytes read.
    pub bytes: u64,
    /// Index files read and checked.
    pub indexes: usize,
}

impl TieredStorage {
    /// A storage manager over `backend`, with a chunk cache of its own in memory when `fetch.cache.bytes`
    /// is set and never a disk tier (tests, tools); a host opens stores with [`TieredStorage::open`].
    pub fn new(backend: Arc<dyn StorageBackend>, mut config: TieredConfig) -> Self {
        config.fetch_cache_disk = None;
        let cache = config.chunk_cache().map(|c| ChunkCache::new(c).expect("a cache without a disk tier opens"));
        Self::build(backend, config, cache, "")
    }

    /// A storage manager over `backend`, the store named `store` (its URL), reading chunks through the
    /// process's chunk cache for these settings ([`ChunkCache::for_process`]) when they ask for one,
    /// its disk tier included; fails when the disk tier cannot be opened, naming the setting.
    pub fn open(backend: Arc<dyn StorageBackend>, config: TieredConfig, store: &str) -> Result<Self> {
        let cache = config.chunk_cache().map(ChunkCache::for_process).transpose()?;
        Ok(Self::build(backend, config, cache, store))
    }

    fn build(
        backend: Arc<dyn StorageBackend>,
        config: TieredConfig,
        chunk_cache: Option<ChunkCache>,
        store: &str,
    ) -> Self {
        let keyring =
            config.encryption.as_ref().map(|e| Arc::new(e.keyring.clone()) as Arc<dyn crate::crypto::KeyRing>);
        let direct: Arc<dyn ChunkSource> =
            Arc::new(BackendChunks::new(backend.clone(), config.key_prefix.clone()).with_keyring(keyring));
        let manifests =
            Arc::new(Cache::with_entries(config.manifest_cache_entries).with_ttl(config.manifest_cache_ttl));
        let chunks = match &chunk_cache {
            Some(c) => {
                let next = NextManifests::new(backend.clone(), config.key_prefix.clone(), manifests.clone());
                let hook: SegmentEndHook = Arc::new(move |m| next.load_after(m));
                Arc::new(c.over(direct, store, config.key_prefix.clone()).at_segment_end(hook)) as Arc<dyn ChunkSource>
            }
            None => direct,
        };
        let indexes = Cache::new(config.index_cache_bytes, |b: &Bytes| b.len() as u64);
        TieredStorage {
            backend,
            chunks,
            config,
            chunk_cache,
            manifests,
            manifest_loads: single_flight::SingleFlight::new(),
            index_loads: single_flight::SingleFlight::new(),
            indexes,
        }
    }

    /// The same storage manager reading chunks through `chunks` (a cache, a transform) instead.
    pub fn with_chunk_source(mut self, chunks: Arc<dyn ChunkSource>) -> Self {
        self.chunks = chunks;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn StorageBackend> {
        &self.backend
    }

    /// The settings.
    pub fn config(&self) -> &TieredConfig {
        &self.config
    }

    /// Hits and misses of the manifest cache.
    pub fn manifest_cache_stats(&self) -> CacheStats {
        self.manifests.stats()
    }

    /// The chunk cache, when there is one (`fetch.cache.bytes`, `fetch.cache.disk.*`).
    pub fn chunk_cache(&self) -> Option<&ChunkCache> {
        self.chunk_cache.as_ref()
    }

    /// What the chunk cache has done, when there is one (`fetch.cache.bytes`).
    pub fn chunk_cache_stats(&self) -> Option<ChunkCacheStats> {
        self.chunk_cache.as_ref().map(ChunkCache::stats)
    }

    /// Hits, misses and bytes of the remote index cache.
    pub fn index_cache_stats(&self) -> CacheStats {
        self.indexes.stats()
    }

    /// Forgets what the caches hold of one segment.
    fn forget(&self, id: &Uuid) {
        self.manifests.remove(id);
        self.indexes.remove_where(|(s, _)| s == id);
        self.chunks.forget(id);
    }

    /// The keys of a segment.
    pub fn keys(&self, metadata: &RemoteLogSegmentMetadata) -> SegmentKeys {
        segment_keys(&self.config.key_prefix, metadata)
    }

    /// Reads and decodes the manifest at `key`, refused as corrupt when it describes another segment than the
    /// one its key names.
    pub async fn read_manifest(&self, key: &str) -> Result<Manifest> {
        read_manifest(self.backend.as_ref(), &self.config.key_prefix, key).await
    }

    /// Key rotation of one segment: unwraps the data key of the manifest at `manifest_key` with the KEK it
    /// names (from `keyring`) and wraps it under the KEK `new_id`, rewriting the manifest only (one read,
    /// one write; the backend's put replaces it whole, the chunks are untouched). `Ok(false)` when it is
    /// already under `new_id` (a rerun skips it); an error for a segment that is not encrypted.
    pub async fn rewrap_segment(
        &self,
        manifest_key: &str,
        keyring: &dyn crate::crypto::KeyRing,
        new_id: &str,
    ) -> Result<bool> {
        let mut m = self.read_manifest(manifest_key).await?;
        let Some(envelope) = &m.encryption else {
            return Err(Error::invalid(format!("manifest {manifest_key}: the segment is not encrypted")));
        };
        if envelope.kek_id == new_id {
            return Ok(false);
        }
        let id = m.metadata.remote_log_segment_id.id;
        let rewrapped = envelope
            .rewrap(keyring, new_id, id, m.metadata.start_offset)
            .map_err(|e| e.context(format!("manifest {manifest_key}")))?;
        m.encryption = Some(rewrapped);
        self.backend.put_bytes(manifest_key, Bytes::from(m.encode())).await?;
        self.manifests.remove(&id);
        Ok(true)
    }

    /// The manifest of a segment (cached); not found when the segment was never committed or was deleted.
    pub async fn manifest(&self, metadata: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        metadata.validate()?;
        let id = metadata.remote_log_segment_id.id;
        // Served from the cache only for the same segment as the caller names it: metadata with this id but
        // another partition or start offset names other keys, which a cold read would not find.
        let same = |m: &Manifest| {
            m.metadata.remote_log_segment_id == metadata.remote_log_segment_id
                && m.metadata.start_offset == metadata.start_offset
        };
        if let Some(m) = self.manifests.get(&id).filter(|m| same(m)) {
            return Ok(m);
        }
        // Concurrent cold readers of a segment share one read of its manifest.
        self.manifest_loads
            .run(id, || async {
                if let Some(m) = self.manifests.peek(&id).filter(|m| same(m)) {
                    return Ok(m);
                }
                let key = self.keys(metadata).manifest;
                let m = self.read_manifest(&key).await.map_err(|e| match e.kind() {
                    ErrorKind::NotFound => {
                        Error::not_found(format!("segment {} (manifest {key})", metadata.remote_log_segment_id))
                    }
                    _ => e,
                })?;
                // The key names the caller's segment (read_manifest checked the manifest against it); its
                // offsets must be the caller's too.
                if m.metadata.end_offset != metadata.end_offset {
                    return Err(Error::corrupt(format!(
                        "manifest {key} describes segment {} with offsets {}..={}, not {}..={} as asked",
                        m.metadata.remote_log_segment_id,
                        m.metadata.start_offset,
                        m.metadata.end_offset,
                        metadata.start_offset,
                        metadata.end_offset
                    )));
                }
                let m = Arc::new(m);
                self.manifests.insert(id, m.clone());
                Ok(m)
            })
            .await
    }

    /// Every committed segment under the partition `tp` (or under the whole prefix when `None`), by key;
    /// fails on the first manifest that cannot be read (see [`TieredStorage::scan_segments`] for a listing that
    /// goes on).
    pub async fn list_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<Manifest>> {
        self.scan_segments(tp).await?.into_iter().map(|s| s.manifest).collect()
    }

    /// Every committed segment under the partition `tp` (or the whole prefix), by key, each with its manifest
    /// or the reason it cannot be read, and the segment objects the listing lacks: one damaged segment does
    /// not hide the others. One listing, then one read per manifest.
    pub async fn scan_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<ListedSegment>> {
        let prefix = layout::scope_prefix(&self.config.key_prefix, tp);
        let objects = self.backend.list(&prefix).await?;
        let present: std::collections::HashSet<&str> = objects.iter().map(|o| o.key.as_str()).collect();
        let mut out = Vec::new();
        for o in &objects {
            let Some(stem) = o.key.strip_suffix(".manifest") else { continue };
            let missing = [".log", ".indexes"]
                .into_iter()
                .filter(|ext| !present.contains(format!("{stem}{ext}").as_str()))
                .collect();
            out.push(ListedSegment {
                manifest_key: o.key.clone(),
                manifest: self.read_manifest(&o.key).await,
                missing,
            });
        }
        Ok(out)
    }

    /// The committed segment with id `id` anywhere under the prefix: one listing and one manifest read,
    /// whatever state the other segments are in.
    pub async fn find_segment(&self, id: &Uuid) -> Result<Manifest> {
        let suffix = format!("-{id}.manifest");
        let objects = self.backend.list(&self.config.key_prefix).await?;
        let key = objects
            .iter()
            .find(|o| o.key.ends_with(&suffix))
            .ok_or_else(|| Error::not_found(format!("segment {id} in the store")))?;
        self.read_manifest(&key.key).await
    }

    /// The leftovers of interrupted uploads under the partition `tp` (or the whole prefix when `None`): the
    /// objects of segments that have no manifest (failed copies whose cleanup did not finish) and the store's
    /// temporary upload objects ([`StorageBackend::list_temporary`]: the `.rsm-tmp-*` files of the
    /// filesystem and HDFS stores that a crash mid-upload leaves), each only when last written at least
    /// `min_age` ago, so copies still in flight are left alone ([`ORPHAN_MIN_AGE`] is the safety age to use
    /// unless the caller knows better). Two listings; nothing is changed.
    pub async fn orphans(&self, tp: Option<&TopicIdPartition>, min_age: std::time::Duration) -> Result<Orphans> {
        let prefix = layout::scope_prefix(&self.config.key_prefix, tp);
        let objects = self.backend.list(&prefix).await?;
        let temporary = self.backend.list_temporary(&prefix).await?;
        let committed: std::collections::HashSet<&str> =
            objects.iter().filter_map(|o| o.key.strip_suffix(".manifest")).collect();
        let now = std::time::SystemTime::now();
        let old = |o: &crate::backend::ObjectMeta| {
            o.last_modified.is_some_and(|t| now.duration_since(t).unwrap_or_default() >= min_age)
        };
        let mut out = Orphans::default();
        for o in objects.iter().filter(|o| old(o)) {
            let stem = o.key.rsplit_once('.').map(|(s, _)| s).unwrap_or(&o.key);
            if (o.key.ends_with(".log") || o.key.ends_with(".indexes")) && !committed.contains(stem) {
                out.uncommitted.push((o.key.clone(), o.size));
            }
        }
        out.temporary = temporary.iter().filter(|t| old(&t.meta)).map(|t| (t.meta.key.clone(), t.meta.size)).collect();
        out.uncommitted.sort();
        out.temporary.sort();
        Ok(out)
    }

    /// Deletes what [`TieredStorage::orphans`] lists. Returns the deleted keys, sorted.
    pub async fn sweep_orphans(
        &self,
        tp: Option<&TopicIdPartition>,
        min_age: std::time::Duration,
    ) -> Result<Vec<String>> {
        let found = self.orphans(tp, min_age).await?;
        let mut keys = found.keys();
        if !keys.is_empty() {
            tracing::info!(
                segment_objects = found.uncommitted.len(),
                temporary = found.temporary.len(),
                min_age_s = min_age.as_secs(),
                "deleting objects of uncommitted segments and temporary objects of interrupted uploads"
            );
            self.backend.delete_many(&keys).await?;
        }
        keys.sort();
        Ok(keys)
    }

    /// Reads every chunk and index of a segment and checks them against the manifest: each chunk's blocks
    /// and its entry's CRC-32C, up to `fetch.concurrency` chunks at a time.
    pub async fn verify(&self, md: &RemoteLogSegmentMetadata) -> Result<VerifyReport> {
        let m = self.manifest(md).await?;
        let key = self.keys(md).log;
        let mut report = VerifyReport::default();
        let reads = m.chunks.iter().map(|c| {
            let (chunks, m, key, c) = (self.chunks.clone(), m.clone(), key.clone(), *c);
            async move {
                let bytes = chunks.read(&m, c.original_position()..c.end()).await?;
                m.check_blocks(c.original_position()..c.end(), &bytes, &key)?;
                c.verify(&bytes, &key)?;
                Ok::<_, Error>(bytes.len() as u64)
            }
        });
        let mut checked = futures::stream::iter(reads).buffered(self.config.fetch_concurrency);
        while let Some(n) = checked.next().await {
            report.bytes += n?;
            report.chunks += 1;
        }
        for t in IndexType::ALL {
            if m.index(t).is_some() {
                self.fetch_index(md, t).await?;
                report.indexes += 1;
            }
        }
        Ok(report)
    }
}

#[async_trait]
impl RemoteStorageManager for TieredStorage {
    async fn copy_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<CustomMetadata>> {
        metadata.validate()?;
        let keys = self.keys(metadata);
        self.forget(&metadata.remote_log_segment_id.id);
        let result = self.copy_segment(metadata, data, &keys).await;
        if let Err(e) = &result {
            tracing::warn!(segment = %metadata.remote_log_segment_id, error = %e.full_message(), "copy failed; removing its objects");
            let all = [keys.manifest, keys.log, keys.indexes];
            match self.backend.delete_many(&all).await {
                Ok(()) => {}
                // The store refuses the keys themselves (a topic name that tries to leave the store's root):
                // nothing was written under them, so there is nothing to clean.
                Err(ce) if ce.kind() == ErrorKind::InvalidArgument => {
                    tracing::debug!(segment = %metadata.remote_log_segment_id, error = %ce.full_message(),
                        "no cleanup after a failed copy: the store refuses its keys, so nothing was written");
                }
                Err(ce) => {
                    tracing::warn!(segment = %metadata.remote_log_segment_id, error = %ce.full_message(),
                        "cleanup after a failed copy failed; the objects are garbage without a manifest");
                }
            }
        }
        result.map(|_| None).map_err(|e| e.context(format!("copy of segment {}", metadata.remote_log_segment_id)))
    }

    async fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start_position: i32,
        end_position: Option<i32>,
    ) -> Result<ByteStream> {
        let m = self.manifest(metadata).await?;
        let id = &metadata.remote_log_segment_id;
        if start_position < 0 || start_position as u64 >= m.log_length {
            return Err(Error::invalid(format!(
                "start position {start_position} is outside segment {id} of {} bytes",
                m.log_length
            )));
        }
        let end = match end_position {
            Some(e) if e < start_position => {
                return Err(Error::invalid(format!(
                    "end position {e} is before start position {start_position} in segment {id}"
                )));
            }
            Some(e) => (e as u64 + 1).min(m.log_length),
            None => m.log_length,
        };
        Ok(self.stream_range(m, start_position as u64, end))
    }

    async fn fetch_index(&self, metadata: &RemoteLogSegmentMetadata, index_type: IndexType) -> Result<Bytes> {
        let cache_key = (metadata.remote_log_segment_id.id, index_type);
        if let Some(b) = self.indexes.get(&cache_key) {
            return Ok(b);
        }
        self.index_loads
            .run(cache_key, || async {
                if let Some(b) = self.indexes.peek(&cache_key) {
                    return Ok(b);
                }
                let m = self.manifest(metadata).await?;
                let id = &metadata.remote_log_segment_id;
                let loc = m
                    .index(index_type)
                    .ok_or_else(|| Error::not_found(format!("{index_type} index of segment {id}")))?;
                let key = self.keys(metadata).indexes;
                let bytes = self.backend.get_range(&key, loc.position..loc.position + loc.length).await?;
                if bytes.len() as u64 != loc.length || crc32c::crc32c(&bytes) != loc.crc32c {
                    return Err(Error::corrupt(format!(
                        "{index_type} index of segment {id} in {key}: {} bytes do not match the manifest's length {} \
                         and CRC",
                        bytes.len(),
                        loc.length
                    )));
                }
                self.indexes.insert(cache_key, bytes.clone());
                Ok(bytes)
            })
            .await
    }

    async fn delete_log_segment_data(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        metadata.validate()?;
        let keys = self.keys(metadata);
        self.forget(&metadata.remote_log_segment_id.id);
        // The manifest first: from then on the segment does not exist for readers.
        self.backend.delete(&keys.manifest).await?;
        self.backend.delete_many(&[keys.log, keys.indexes]).await?;
        // Then what an upload of this segment interrupted by a crash left (the broker deletes a segment
        // whose copy never finished): the temporary objects of its keys, whatever their age.
        let stem = keys.manifest.strip_suffix("manifest").unwrap_or(&keys.manifest);
        let temporary: Vec<String> = self.backend.list_temporary(stem).await?.into_iter().map(|t| t.meta.key).collect();
        if !temporary.is_empty() {
            tracing::info!(segment = %metadata.remote_log_segment_id, count = temporary.len(),
                "deleting temporary objects of an interrupted upload of the segment");
            self.backend.delete_many(&temporary).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::fetch::FIRST_READ_BYTES;
    use super::*;

    /// The default CRC block size.
    const BLOCK: u64 = crate::format::chunk::DEFAULT_BLOCK_SIZE as u64;
    use crate::backend::layers::{Fault, FaultLayer, FaultRule, LayeredBackend};
    use crate::backend::{CountingLayer, MemoryBackend, Op};
    use crate::model::IndexType;
    use crate::testkit::rsm_contract::{Fixture, collect};
    use std::ops::Range;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Tracks how many ranged reads are in flight at once, and the reads started (a store bills a request
    /// that was started and then cancelled) with the bytes they asked for. Each read waits 5 ms.
    #[derive(Debug)]
    struct InFlight {
        inner: Arc<dyn StorageBackend>,
        now: AtomicUsize,
        max: AtomicUsize,
        started: AtomicUsize,
        started_bytes: AtomicUsize,
    }

    impl InFlight {
        fn new() -> Self {
            InFlight {
                inner: Arc::new(MemoryBackend::new()),
                now: 0.into(),
                max: 0.into(),
                started: 0.into(),
                started_bytes: 0.into(),
            }
        }
    }

    #[async_trait]
    impl LayeredBackend for InFlight {
        fn inner(&self) -> &Arc<dyn StorageBackend> {
            &self.inner
        }
        async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
            self.started.fetch_add(1, Ordering::SeqCst);
            self.started_bytes.fetch_add((range.end - range.start) as usize, Ordering::SeqCst);
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let r = self.inner.get_range(key, range).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            r
        }
    }

    /// A segment of about 16 MiB in 4 MiB chunks (the default) copied to a backend: big enough for a
    /// fetch to take several reads after the first.
    struct Big {
        rsm: TieredStorage,
        md: RemoteLogSegmentMetadata,
        log: Vec<u8>,
        m: Arc<Manifest>,
        _dir: tempfile::TempDir,
    }

    async fn big_segment(backend: Arc<dyn StorageBackend>) -> Big {
        let dir = tempfile::tempdir().unwrap();
        let partition = crate::testkit::fixture_partition(dir.path(), 16 << 20, 100_000);
        let seg = partition.closed_segments()[0].clone();
        let md = partition.segment_metadata(&seg, 1, 0).unwrap();
        let data = partition.segment_data(&seg).unwrap();
        let rsm = TieredStorage::new(backend, TieredConfig::default());
        rsm.copy_log_segment_data(&md, &data).await.unwrap();
        let log = std::fs::read(&data.log_segment).unwrap();
        let m = rsm.manifest(&md).await.unwrap();
        assert!(m.chunks.len() >= 4 && m.chunks[0].data_length > 3 << 20, "4 MiB chunks: {}", m.chunks.len());
        Big { rsm, md, log, m, _dir: dir }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_run_concurrently_but_bounded_and_in_order() {
        let tracker = Arc::new(InFlight::new());
        let big = big_segment(tracker.clone()).await;
        for concurrency in [1, 3] {
            tracker.max.store(0, Ordering::SeqCst);
            let cfg = TieredConfig { fetch_concurrency: concurrency, ..TieredConfig::default() };
            let rsm = TieredStorage::new(tracker.clone(), cfg);
            let got = collect(rsm.fetch_log_segment(&big.md, 0, None).await.unwrap()).await.unwrap();
            assert!(got == big.log, "concurrency {concurrency}: bytes in order");
            assert_eq!(
                tracker.max.load(Ordering::SeqCst),
                concurrency,
                "reads in flight at most and at least {concurrency}"
            );
        }
    }

    #[tokio::test]
    async fn sweep_removes_only_old_uncommitted_objects() {
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let f = Fixture::new(backend.clone(), "sweep");
        let (_, md0, data0) = f.segment(0);
        let (_, md1, _) = f.segment(1);
        f.rsm.copy_log_segment_data(&md0, &data0).await.unwrap();
        // The leftovers of a copy of segment 1 that died before its manifest.
        let orphan = f.rsm.keys(&md1);
        backend.put_bytes(&orphan.log, Bytes::from_static(b"partial")).await.unwrap();
        backend.put_bytes(&orphan.indexes, Bytes::from_static(b"partial")).await.unwrap();
        let tp = md0.remote_log_segment_id.topic_id_partition.clone();
        let young = f.rsm.sweep_orphans(Some(&tp), std::time::Duration::from_secs(3600)).await.unwrap();
        assert!(young.is_empty(), "a copy that may be in flight is left alone: {young:?}");
        let mut swept = f.rsm.sweep_orphans(Some(&tp), std::time::Duration::ZERO).await.unwrap();
        swept.sort();
        let mut want = vec![orphan.log.clone(), orphan.indexes.clone()];
        want.sort();
        assert_eq!(swept, want);
        let left = backend.list(&partition_prefix(&f.config.key_prefix, &tp)).await.unwrap();
        assert_eq!(left.len(), 3, "the committed segment stays whole: {left:?}");
        assert!(collect(f.fresh_rsm().fetch_log_segment(&md0, 0, None).await.unwrap()).await.is_ok());
    }

    #[tokio::test]
    async fn a_fetch_inside_a_chunk_reads_at_most_a_fetch_first() {
        let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let Big { rsm, md, log, .. } = big_segment(counting).await;
        let start = 1000i32;
        let bytes_before = counts.snapshot().get(Op::Get).bytes_received;
        let mut s = rsm.fetch_log_segment(&md, start, None).await.unwrap();
        let first = s.next().await.unwrap().unwrap();
        // The first read covers the fetch's first FIRST_READ_BYTES, widened to the 64 KiB blocks around them.
        let read_end = (start as u64 + FIRST_READ_BYTES).div_ceil(BLOCK) * BLOCK;
        assert_eq!(first.len() as u64, read_end - start as u64, "the first read is cut");
        assert_eq!(counts.snapshot().get(Op::Get).bytes_received - bytes_before, read_end);
        // The rest still arrives whole and in order.
        let mut all = first.to_vec();
        while let Some(b) = s.next().await {
            all.extend_from_slice(&b.unwrap());
        }
        assert!(all == log[start as usize..]);
    }

    /// The broker's read of one fetch: about a mebibyte from a batch boundary, then close. It is one ranged
    /// read wherever it starts, and a reader that wants more costs one read more, not a read-ahead burst.
    #[tokio::test]
    async fn a_broker_fetch_costs_one_or_two_ranged_reads() {
        let tracker = Arc::new(InFlight::new());
        let Big { rsm, md, log, m, .. } = big_segment(tracker.clone()).await;
        let c1 = m.chunks[1];
        let fetch = (1u64 << 20) + (16 << 10);
        let chunk = |at: u64| m.chunks[m.chunk_at_position(at).unwrap()];
        // Blocks are 64 KiB from each chunk's start (the last of a chunk shorter).
        let floor = |at: u64| chunk(at).original_position() + (at - chunk(at).original_position()) / BLOCK * BLOCK;
        let ceil = |at: u64| (floor(at - 1) + BLOCK).min(chunk(at - 1).end());
        let first = |at: u64| ceil(at + FIRST_READ_BYTES) - floor(at);
        let past = |at: u64| chunk(at).end() - at;
        // (case, start, bytes the reader takes, reads started, bytes asked for)
        let cases = [
            (
                "inside a chunk, far from its end",
                c1.original_position() + 1000,
                fetch,
                1,
                first(c1.original_position() + 1000),
            ),
            ("at a chunk's start", c1.original_position(), fetch, 1, FIRST_READ_BYTES),
            ("near a chunk's end, across it", c1.end() - (100 << 10), fetch, 1, first(c1.end() - (100 << 10))),
            (
                "a little more than the first read: then the rest of that chunk",
                c1.original_position() + 1000,
                first(c1.original_position() + 1000),
                2,
                first(c1.original_position() + 1000) + past(ceil(c1.original_position() + 1000 + FIRST_READ_BYTES)),
            ),
        ];
        for (case, start, wanted, requests, bytes) in cases {
            let (r0, b0) = (tracker.started.load(Ordering::SeqCst), tracker.started_bytes.load(Ordering::SeqCst));
            let mut s = rsm.fetch_log_segment(&md, start as i32, None).await.unwrap();
            let mut got = Vec::new();
            while (got.len() as u64) < wanted {
                got.extend_from_slice(&s.next().await.unwrap().unwrap());
            }
            drop(s);
            tokio::task::yield_now().await;
            assert!(got[..] == log[start as usize..start as usize + got.len()], "{case}: bytes");
            assert_eq!(tracker.started.load(Ordering::SeqCst) - r0, requests, "{case}: ranged reads started");
            assert_eq!((tracker.started_bytes.load(Ordering::SeqCst) - b0) as u64, bytes, "{case}: bytes asked for");
        }
    }

    /// Every byte a fetch returns was checked, wherever the fetch starts and ends and however its reads cut
    /// the chunks; damage outside the blocks a fetch reads does not fail it.
    #[tokio::test]
    async fn every_byte_a_fetch_returns_was_checked() {
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let Big { rsm, md, log, m, .. } = big_segment(backend.clone()).await;
        let c1 = m.chunks[1];
        // Start 100 KiB before chunk 1: the first read ends inside chunk 1, the second reads its rest.
        let start = c1.original_position() - (100 << 10);
        assert!(start + FIRST_READ_BYTES > c1.original_position() && start + FIRST_READ_BYTES < c1.end());
        let key = rsm.keys(&md).log;
        let c0 = m.chunks[0];
        // (case, where the damage is, the chunk the error names: None when the fetch succeeds)
        for (case, damage_at, named) in [
            ("in the part of chunk 1 the first read carries", c1.original_position() + 1000, Some(c1)),
            ("in the part of chunk 1 the second read carries", c1.end() - 1000, Some(c1)),
            ("in chunk 0, the one the fetch starts inside", start + 10, Some(c0)),
            ("in chunk 0, in a block before the fetch", c0.original_position() + 10, None),
        ] {
            let mut damaged = log.clone();
            damaged[damage_at as usize] ^= 0x40;
            backend.put_bytes(&key, Bytes::from(damaged)).await.unwrap();
            let fresh = TieredStorage::new(backend.clone(), TieredConfig::default());
            let r = collect(fresh.fetch_log_segment(&md, start as i32, Some(c1.end() as i32 - 1)).await.unwrap()).await;
            match (r, named) {
                (Err(e), Some(c)) => {
                    assert_eq!(e.kind(), ErrorKind::Corrupt, "{case}: {e}");
                    assert!(
                        e.to_string().contains(&format!("chunk at position {}", c.original_position())),
                        "{case}: {e}"
                    );
                }
                (Ok(bytes), None) => assert!(bytes[..] == log[start as usize..c1.end() as usize], "{case}"),
                (other, _) => panic!("{case}: {:?}", other.map(|b| b.len())),
            }
        }
    }

    /// A cached manifest is served only to metadata naming the same segment: the segment's id with another
    /// start offset or partition names keys that do not exist, cached or not.
    #[tokio::test]
    async fn a_cached_manifest_serves_only_its_own_segment() {
        let f = Fixture::new(Arc::new(MemoryBackend::new()), "cache-identity");
        let (_, md, data) = f.segment(0);
        f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        f.rsm.manifest(&md).await.unwrap();
        let mut moved = md.clone();
        moved.start_offset += 1;
        let mut elsewhere = md.clone();
        elsewhere.remote_log_segment_id.topic_id_partition.topic_partition.partition += 1;
        for (what, other) in [("start offset", moved), ("partition", elsewhere)] {
            let e = f.rsm.manifest(&other).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotFound, "another {what}: {e}");
        }
        assert_eq!(f.rsm.manifest(&md).await.unwrap().metadata, md, "the segment itself still reads");
    }

    /// SR-34: a remote index fetched once is served from memory; a failed load is not remembered; a deleted
    /// segment's indexes are gone with it; the bound is in bytes.
    #[tokio::test]
    async fn remote_indexes_are_cached() {
        let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let f = Fixture::new(counting.clone(), "index-cache");
        let (_, md, data) = f.segment(0);
        f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        let gets = || counts.snapshot().get(Op::Get).requests;
        let rsm = f.fresh_rsm();
        let first = rsm.fetch_index(&md, IndexType::Offset).await.unwrap();
        let before = gets();
        assert_eq!(rsm.fetch_index(&md, IndexType::Offset).await.unwrap(), first);
        assert_eq!(gets(), before, "a hit costs no request");
        let s = rsm.index_cache_stats();
        assert_eq!((s.hits, s.misses, s.entries, s.weight), (1, 1, 1, first.len() as u64));

        // Eight cold readers of one index at once share one ranged read (slow, so that they overlap).
        let rule = FaultRule {
            op: Some(Op::Get),
            key: "*.indexes".into(),
            fault: Fault::Delay(std::time::Duration::from_millis(20)),
            times: None,
        };
        let slow = Arc::new(FaultLayer::new(counting.clone()).with_rule(rule));
        let cold = TieredStorage::new(slow, f.config.clone());
        cold.manifest(&md).await.unwrap();
        let before = gets();
        let reads = futures::future::join_all((0..8).map(|_| cold.fetch_index(&md, IndexType::Timestamp))).await;
        assert!(reads.iter().all(|r| r.as_ref().is_ok_and(|b| !b.is_empty())));
        assert_eq!(gets(), before + 1, "one read for eight concurrent readers");

        // A damaged bundle fails the load, and the failure is not kept: once repaired, the index reads.
        let key = rsm.keys(&md).indexes;
        let store: Arc<dyn StorageBackend> = counting.clone();
        let good = store.get_range(&key, 0..u64::MAX).await.unwrap();
        let mut bad = good.to_vec();
        let time = rsm.manifest(&md).await.unwrap().index(IndexType::Timestamp).unwrap();
        bad[time.position as usize] ^= 1;
        store.put_bytes(&key, Bytes::from(bad)).await.unwrap();
        assert_eq!(rsm.fetch_index(&md, IndexType::Timestamp).await.unwrap_err().kind(), ErrorKind::Corrupt);
        store.put_bytes(&key, good).await.unwrap();
        rsm.fetch_index(&md, IndexType::Timestamp).await.unwrap();

        rsm.delete_log_segment_data(&md).await.unwrap();
        assert_eq!(rsm.fetch_index(&md, IndexType::Offset).await.unwrap_err().kind(), ErrorKind::NotFound);

        // A budget smaller than the index keeps nothing.
        let tiny = TieredStorage::new(counting.clone(), TieredConfig { index_cache_bytes: 8, ..f.config.clone() });
        f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        tiny.fetch_index(&md, IndexType::Offset).await.unwrap();
        assert_eq!(tiny.index_cache_stats().entries, 0);
    }

    /// A storage manager with the chunk cache over `backend`, where `big` was copied.
    fn cached(backend: Arc<dyn StorageBackend>, bytes: u64, prefetch: usize) -> TieredStorage {
        let config =
            TieredConfig { fetch_cache_bytes: bytes, fetch_prefetch_chunks: prefetch, ..TieredConfig::default() };
        TieredStorage::new(backend, config)
    }

    /// The broker's read of a fetch: open at `pos`, take about a mebibyte, close.
    async fn broker_fetch(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, pos: u64) -> Vec<u8> {
        let mut s = rsm.fetch_log_segment(md, pos as i32, None).await.unwrap();
        let mut got = Vec::new();
        while got.len() < 1 << 20 {
            match s.next().await {
                Some(b) => got.extend_from_slice(&b.unwrap()),
                None => break,
            }
        }
        got.truncate(1 << 20);
        got
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_readers_of_a_chunk_share_one_read_and_failures_are_not_kept() {
        let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let rule = FaultRule {
            op: Some(Op::Get),
            key: "*.log".into(),
            fault: Fault::Delay(std::time::Duration::from_millis(30)),
            times: None,
        };
        let faults = Arc::new(FaultLayer::new(counting.clone()).with_rule(rule));
        let Big { md, log, m, .. } = big_segment(faults.clone()).await;
        let rsm = Arc::new(cached(faults.clone(), 64 << 20, 0));
        let at = m.chunks[1].original_position() + 5000;
        let gets = || counts.snapshot().get(Op::Get).requests;
        let before = gets();
        let readers: Vec<_> = (0..8)
            .map(|_| {
                let (rsm, md) = (rsm.clone(), md.clone());
                tokio::spawn(async move {
                    collect(rsm.fetch_log_segment(&md, at as i32, Some(at as i32 + 100_000)).await.unwrap())
                        .await
                        .unwrap()
                })
            })
            .collect();
        for r in readers {
            assert!(r.await.unwrap()[..] == log[at as usize..at as usize + 100_001]);
        }
        assert_eq!(gets() - before, 2, "eight cold readers, one read of the manifest and one of the chunk");
        let s = rsm.chunk_cache_stats().unwrap();
        assert_eq!(s.loads, 1);

        // A failed load is not kept: the next reader loads the chunk again, and gets it.
        faults.clear();
        faults.add_rule(FaultRule {
            op: Some(Op::Get),
            key: "*.log".into(),
            fault: Fault::transient(),
            times: Some(1),
        });
        let at2 = m.chunks[2].original_position();
        let e =
            collect(rsm.fetch_log_segment(&md, at2 as i32, Some(at2 as i32 + 10)).await.unwrap()).await.unwrap_err();
        assert!(e.is_transient(), "{e}");
        let got = collect(rsm.fetch_log_segment(&md, at2 as i32, Some(at2 as i32 + 10)).await.unwrap()).await.unwrap();
        assert!(got[..] == log[at2 as usize..at2 as usize + 11]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_cache_holds_its_bound_and_a_damaged_chunk_is_never_kept() {
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let Big { md, log, m, .. } = big_segment(backend.clone()).await;
        let two_chunks = m.chunks[0].data_length as u64 * 2 + 1;
        let rsm = cached(backend.clone(), two_chunks, 0);
        assert!(collect(rsm.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap() == log);
        let s = rsm.chunk_cache_stats().unwrap().memory;
        assert!(s.weight <= two_chunks && s.entries == 2 && s.evictions >= 2, "{s:?}");

        let key = rsm.keys(&md).log;
        let mut damaged = log.clone();
        damaged[m.chunks[3].original_position() as usize + 7] ^= 1;
        backend.put_bytes(&key, Bytes::from(damaged)).await.unwrap();
        let fresh = cached(backend.clone(), 64 << 20, 0);
        let at = m.chunks[3].original_position() as i32;
        for _ in 0..2 {
            let e = collect(fresh.fetch_log_segment(&md, at, Some(at + 10)).await.unwrap()).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        }
        assert_eq!(fresh.chunk_cache_stats().unwrap().memory.entries, 0, "nothing unchecked was kept");
    }

    /// Read-ahead counts as used only when a reader takes the chunk, and as wasted when it is evicted unread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn prefetched_chunks_count_as_used_when_read_and_wasted_when_evicted_unread() {
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let Big { md, m, .. } = big_segment(backend.clone()).await;
        let other = big_segment(backend.clone()).await;
        assert_ne!(md.remote_log_segment_id, other.md.remote_log_segment_id);
        let chunk = m.chunks[1].data_length as u64;
        // Room for five chunks: a quarter of it lets one chunk at a time be read ahead.
        let rsm = cached(backend.clone(), 5 * chunk, 1);
        let stats = || rsm.chunk_cache_stats().unwrap();
        let settle = || async {
            for _ in 0..200 {
                if rsm.chunk_cache().unwrap().prefetch_in_flight() == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        broker_fetch(&rsm, &md, 0).await;
        broker_fetch(&rsm, &md, 1 << 20).await;
        settle().await;
        let s = stats();
        assert_eq!((s.prefetched, s.prefetched_bytes_used), (1, 0), "chunk 1 read ahead, not yet read: {s:?}");
        let c1 = m.chunks[1].original_position();
        broker_fetch(&rsm, &md, c1).await;
        assert_eq!(stats().prefetched_bytes_used, chunk, "a reader took it");

        // Chunk 2 read ahead, then never read: two other segments' worth of reads evict it.
        broker_fetch(&rsm, &md, c1 + (1 << 20)).await;
        settle().await;
        assert_eq!(stats().prefetched, 2);
        collect(rsm.fetch_log_segment(&other.md, 0, None).await.unwrap()).await.unwrap();
        collect(rsm.fetch_log_segment(&other.md, 0, None).await.unwrap()).await.unwrap();
        let s = stats();
        assert!(s.prefetched_bytes_wasted >= m.chunks[2].data_length as u64, "{s:?}");
    }

    /// A catch-up reader (broker fetches one after another) is read ahead and reads each chunk about once;
    /// a random reader gets no read-ahead.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sequential_readers_are_read_ahead_and_random_ones_not() {
        let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let Big { md, log, m, .. } = big_segment(counting.clone()).await;
        let log_gets = || counts.snapshot().get(Op::Get).requests;

        let rsm = cached(counting.clone(), 64 << 20, 2);
        rsm.manifest(&md).await.unwrap();
        let before = log_gets();
        let mut pos = 0u64;
        while pos + (1 << 20) <= log.len() as u64 {
            let got = broker_fetch(&rsm, &md, pos).await;
            assert!(got[..] == log[pos as usize..pos as usize + got.len()], "at {pos}");
            pos += 1 << 20;
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let s = rsm.chunk_cache_stats().unwrap();
        assert!(s.prefetched >= 2 && s.prefetched_bytes_used > 0, "{s:?}");
        assert!(
            log_gets() - before <= m.chunks.len() as u64,
            "each chunk about once: {} reads for {} chunks",
            log_gets() - before,
            m.chunks.len()
        );

        let random = cached(counting.clone(), 64 << 20, 2);
        for pos in [9u64 << 20, 1 << 20, 13 << 20, 5 << 20] {
            let at = m.chunks[m.chunk_at_position(pos).unwrap()].original_position();
            broker_fetch(&random, &md, at).await;
        }
        assert_eq!(random.chunk_cache_stats().unwrap().prefetched, 0, "no read-ahead for a random reader");
    }

    #[tokio::test]
    async fn an_early_close_costs_one_read() {
        let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let f = Fixture::new(counting, "early-close");
        let (_, md, data) = f.segment(0);
        f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        let (before, bytes_before) =
            (counts.snapshot().get(Op::Get).requests, counts.snapshot().get(Op::Get).bytes_received);
        let mut s = f.rsm.fetch_log_segment(&md, 0, None).await.unwrap();
        let first = s.next().await.unwrap().unwrap();
        assert!(first.len() >= 17, "a batch header is there");
        drop(s);
        tokio::task::yield_now().await;
        assert_eq!(
            counts.snapshot().get(Op::Get).requests - before,
            1,
            "one ranged read for the header, not the segment"
        );
        assert!(counts.snapshot().get(Op::Get).bytes_received - bytes_before <= FIRST_READ_BYTES);
    }
}
