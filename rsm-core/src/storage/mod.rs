//! [`TieredStorage`]: the one [`RemoteStorageManager`] implementation, over any [`StorageBackend`], split by
//! job:
//! - [`layout`]: where each object of a segment lives (keys made and read back);
//! - [`copy`](self#copy): scan, uploads, manifest;
//! - [`fetch`]: the planner (position, offset or timestamp to chunk reads) and the checks on what streams;
//! - [`chunk_source`]: the seam between the planner and the store ([`ChunkSource`]): where a chunk's bytes
//!   come from (the backend, undoing per-chunk transforms, `compression.*`, `encryption.*`; a cache over it);
//! - [`cache`]: the bounded, weighted LRU cache type (manifests, remote indexes);
//! - `manifest_cache`: manifests read, checked against their keys and kept, single-flight, the next
//!   segment's read ahead (`manifest.cache.*`); `index_cache`: remote indexes read, checked and kept
//!   (`index.cache.bytes`);
//! - [`chunk_cache`]: whole checked chunks in memory and on disk (the disk tier in `chunk_cache/disk.rs`,
//!   the policy of each read in `chunk_cache/policy.rs`), one cache per process and settings,
//!   single-flight, with read-ahead for sequential readers (`fetch.cache.*`, `fetch.prefetch.chunks`);
//! - `local_read`: a fetch read straight from a local object file into the caller's buffer, each block
//!   checked as it lands ([`LocalLogReader`]);
//! - [`single`]: the one-object layout (`segment.layout=single`): its trailer, and its manifest found from it;
//! - `maintenance`: scan and find segments, orphans and their sweep, verify, key rotation;
//! - [`aiven`]: the segments Aiven's plugin stored, found and read through the same contract
//!   (`aiven.read.enabled`);
//! - [`settings`]: the settings, [`TieredConfig`].
//!
//! # Copy
//! The scan of the `.log` (every batch checked, the chunk table cut on batch boundaries), the upload of the
//! `.log` and of the index bundle run at once (with chunk transforms, `compression.enabled` or
//! `encryption.enabled`, the `.log` is transformed chunk by chunk and uploaded after the scan); the
//! manifest, written last, is the commit point. With `segment.layout=single` the same bytes go into one
//! upload of one `.segment` object (log, indexes, manifest, trailer: [`single`]), its own commit point, and
//! the copy returns the trailer as the segment's custom metadata. A failed copy removes what it wrote.

pub mod aiven;
mod batches;
pub mod cache;
pub mod chunk_cache;
pub mod chunk_source;
mod copy;
mod copy_failures;
pub mod fetch;
mod index_cache;
pub mod layout;
mod local_read;
mod maintenance;
mod manifest_cache;
mod read_budget;
mod recheck;
pub mod settings;
pub mod single;
pub mod transactions;

pub use crate::format::trailer::Trailer;
pub use aiven::StoredFormat;
pub use cache::{Cache, CacheStats};
pub use chunk_cache::{CachedChunks, ChunkCache, ChunkCacheConfig, ChunkCacheStats, DiskCacheConfig, SegmentEndHook};
pub use chunk_source::{BackendChunks, ChunkSource};
pub use layout::{
    Placement, SegmentKey, SegmentKeys, SegmentLayout, Suffix, parse_segment_key, partition_prefix, placement,
    segment_keys,
};
pub use local_read::{LocalLogReader, LogRead};
pub use settings::{EncryptionConfig, TieredConfig};

use crate::backend::{ByteStream, StorageBackend};
use crate::error::{Error, ErrorKind, Result};
use crate::format::manifest::Manifest;
use crate::model::{CustomMetadata, IndexType, LogSegmentData, RemoteLogSegmentMetadata, Uuid};
use crate::rsm::RemoteStorageManager;
use async_trait::async_trait;
use bytes::Bytes;
use index_cache::IndexCache;
use manifest_cache::ManifestCache;
use std::sync::Arc;

/// The safety age of [`TieredStorage::sweep_orphans`] for callers without a better one: an object of an
/// uncommitted segment, or a temporary upload object, last written an hour ago or more belongs to no copy
/// still running (an upload in flight keeps writing, so its objects stay young).
pub const ORPHAN_MIN_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Kafka's remote storage contract over any backend.
#[derive(Debug)]
pub struct TieredStorage {
    /// Segments Aiven's plugin stored, when `aiven.read.enabled`.
    aiven: Option<aiven::AivenSegments>,
    backend: Arc<dyn StorageBackend>,
    chunks: Arc<dyn ChunkSource>,
    config: TieredConfig,
    /// The chunk cache between the planner and the backend, when `fetch.cache.bytes` is set.
    chunk_cache: Option<ChunkCache>,
    /// Manifests by segment (`manifest.cache.*`).
    manifests: ManifestCache,
    /// Remote indexes by segment and type (SR-34), weighed by their bytes.
    indexes: IndexCache,
    /// Failed copies whose objects are looked for again (`copy.cleanup.recheck.ms`).
    rechecks: Arc<recheck::CleanupRechecks>,
    /// Log segments whose copy is failing, for their failures to be logged once, not per attempt.
    copy_failures: copy_failures::CopyFailures,
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
    /// When the manifest does not read as this store's segment but reads whole as a segment written under
    /// another key prefix (the store listed without the `key.prefix` its segments were written under, or
    /// with another): that prefix. `manifest` is then the error the read under this store's prefix gave.
    pub stored_under: Option<String>,
}

/// What [`TieredStorage::orphans`] found: (key, bytes) each, sorted by key, and the incomplete multipart
/// uploads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Orphans {
    /// Objects of segments without a manifest (an upload cut short before its commit point).
    pub uncommitted: Vec<(String, u64)>,
    /// Temporary objects of interrupted uploads.
    pub temporary: Vec<(String, u64)>,
    /// Multipart uploads to segments' keys never completed nor aborted (a crash mid-upload), sorted by key:
    /// invisible in listings, billed until aborted
    /// ([`StorageBackend::list_incomplete_uploads`]).
    pub uploads: Vec<crate::backend::IncompleteUpload>,
}

impl Orphans {
    /// Every object key (the uploads are aborted, not deleted: [`TieredStorage::abort_uploads`]).
    pub fn keys(&self) -> Vec<String> {
        self.uncommitted.iter().chain(&self.temporary).map(|(k, _)| k.clone()).collect()
    }

    /// Bytes in all, the uploads' parts included.
    pub fn bytes(&self) -> u64 {
        let objects: u64 = self.uncommitted.iter().chain(&self.temporary).map(|(_, b)| b).sum();
        objects + self.upload_bytes()
    }

    /// Bytes of the uploads' parts (those the store told).
    pub fn upload_bytes(&self) -> u64 {
        self.uploads.iter().filter_map(|u| u.bytes).sum()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.uncommitted.is_empty() && self.temporary.is_empty() && self.uploads.is_empty()
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
    /// For a segment not in our format, how its bytes were checked and what carries no check (empty for
    /// ours: every chunk and index by its CRC-32C in the manifest).
    pub checked_by: &'static str,
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
        let keyring = config.encryption.as_ref().map(|e| Arc::new(e.keyring.clone()));
        let direct: Arc<dyn ChunkSource> =
            Arc::new(BackendChunks::new(backend.clone(), config.key_prefix.clone()).with_keyring(keyring));
        let manifests = ManifestCache::new(
            backend.clone(),
            config.key_prefix.clone(),
            config.segment_layout,
            config.manifest_cache_entries,
            config.manifest_cache_ttl,
        );
        let chunks = match &chunk_cache {
            Some(c) => {
                // A sequential reader nearing a segment's end: the next segment's manifest, then its first
                // chunks, are read ahead, so that the reader meets no cold read at the boundary.
                let next = manifests.next_manifests();
                let cached = c
                    .over(direct, store, config.key_prefix.clone())
                    .over_local_files(backend.capabilities().reads_local_files);
                let ahead = cached.clone();
                let hook: SegmentEndHook = Arc::new(move |m| {
                    let ahead = ahead.clone();
                    next.load_after(m, move |n| ahead.read_ahead_from_start(&n));
                });
                Arc::new(cached.at_segment_end(hook)) as Arc<dyn ChunkSource>
            }
            None => direct,
        };
        let indexes = IndexCache::new(config.index_cache_bytes);
        let aiven =
            config.aiven.clone().map(|a| aiven::AivenSegments::new(backend.clone(), a, config.fetch_concurrency));
        TieredStorage {
            aiven,
            backend,
            chunks,
            config,
            chunk_cache,
            manifests,
            indexes,
            rechecks: Arc::default(),
            copy_failures: Default::default(),
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
        self.indexes.forget(id);
        self.chunks.forget(id);
        if let Some(a) = &self.aiven {
            a.forget(id);
        }
    }

    /// The keys of a segment.
    pub fn keys(&self, metadata: &RemoteLogSegmentMetadata) -> SegmentKeys {
        segment_keys(&self.config.key_prefix, metadata)
    }

    /// Reads and decodes the manifest at `key`, refused as corrupt when it describes another segment than the
    /// one its key names.
    pub async fn read_manifest(&self, key: &str) -> Result<Manifest> {
        self.manifests.read(key).await
    }

    /// The manifest of a segment (cached); not found when the segment was never committed or was deleted.
    pub async fn manifest(&self, metadata: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        metadata.validate()?;
        self.manifests.get(metadata).await
    }

    /// The manifest of a segment read from the store now, the cache bypassed (and refreshed): whether this
    /// store holds the segment, as a host proves before it deletes the local copy of its offsets. Not found
    /// when the store lacks it; corrupt when its manifest does not read or describes another segment.
    pub async fn read_segment_manifest(&self, metadata: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        metadata.validate()?;
        self.manifests.load(metadata).await
    }

    /// Deletes what a copy that was given up on wrote (the caller dropped it mid-way: its own cleanup did
    /// not run), as [`RemoteStorageManager::delete_log_segment_data`] does, and looks again later
    /// (`copy.cleanup.recheck.ms`) for a write the store applied after this.
    pub async fn remove_abandoned_copy(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        // Scheduled first: a caller that bounds this delete in time may drop it mid-way too.
        self.recheck_later(metadata);
        self.delete_log_segment_data(metadata).await
    }

    /// Cancels the pending second looks at failed copies' objects (`copy.cleanup.recheck.ms`), for a host
    /// closing the store: what they would have deleted is left to `rsm sweep` and `rsm audit`. The future
    /// ends once their tasks have.
    pub fn cancel_cleanup_rechecks(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let tasks = self.rechecks.cancel_all();
        async move {
            for t in tasks {
                let _ = t.await;
            }
        }
    }

    /// Logs a failed copy of `metadata`'s segment (`error`, and how its cleanup went): at WARN the first
    /// failure of the log segment's copy and once a minute while it keeps failing, with the attempts so far,
    /// otherwise at DEBUG. A host that gives up on a copy itself (the facade's
    /// `copy.timeout.ms`) logs it here too.
    pub fn copy_failed(&self, metadata: &RemoteLogSegmentMetadata, error: &str, cleanup: &str) {
        let f = self.copy_failures.failed(metadata, std::time::Instant::now());
        let (segment, attempts, failing_for_s) = (&metadata.remote_log_segment_id, f.attempts, f.failing_for.as_secs());
        if f.warn {
            tracing::warn!(%segment, attempts, failing_for_s, error, cleanup,
                "copy failed (logged again at WARN after a minute if the segment's copy keeps failing)");
        } else {
            tracing::debug!(%segment, attempts, failing_for_s, error, cleanup, "copy failed");
        }
    }

    /// Schedules the second look at a failed copy's objects, when `copy.cleanup.recheck.ms` asks for one.
    fn recheck_later(&self, metadata: &RemoteLogSegmentMetadata) {
        if let Some(after) = self.config.copy_cleanup_recheck {
            let stem = self.keys(metadata).shared_prefix().to_string();
            let id = &metadata.remote_log_segment_id;
            self.rechecks.schedule(self.backend.clone(), id.id, id.to_string(), stem, after);
        }
    }

    /// Tells the storage manager of a copied segment, as a host that keeps the remote log's metadata knows
    /// it (the engine, before reading the segment before it): a sequential reader nearing the end of the
    /// segment before then has this one's manifest and first chunks read ahead without a listing of the
    /// store. Segments copied or read through this storage manager are known already.
    pub fn note_segment(&self, metadata: &RemoteLogSegmentMetadata) {
        self.manifests.known().note(metadata);
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
        // A copy again under the same id: the second look at an earlier attempt's objects would delete this
        // one's.
        self.rechecks.cancel(&metadata.remote_log_segment_id.id);
        let result = self.copy_segment(metadata, data, &keys).await;
        match &result {
            Err(e) => {
                let all = [keys.manifest, keys.segment, keys.log, keys.indexes];
                let cleanup = match self.backend.delete_many(&all).await {
                    // The store refuses the keys themselves (a topic name that tries to leave the store's
                    // root): nothing was written under them, so there is nothing to clean.
                    Err(ce) if ce.kind() == ErrorKind::InvalidArgument => {
                        "nothing to remove: the store refuses its keys, so nothing was written".to_string()
                    }
                    Err(ce) => {
                        self.recheck_later(metadata);
                        format!(
                            "removing its objects failed too, tried again after copy.cleanup.recheck.ms: {}",
                            ce.full_message()
                        )
                    }
                    Ok(()) => {
                        self.recheck_later(metadata);
                        "its objects were removed".to_string()
                    }
                };
                self.copy_failed(metadata, &e.full_message(), &cleanup);
            }
            Ok(_) => {
                if let Some((attempts, took)) = self.copy_failures.succeeded(metadata, std::time::Instant::now()) {
                    tracing::info!(segment = %metadata.remote_log_segment_id, failed_attempts = attempts,
                        failing_for_s = took.as_secs(), "copied after failed attempts");
                }
            }
        }
        result
            .map(|trailer| trailer.map(|t| t.custom_metadata()))
            .map_err(|e| e.context(format!("copy of segment {}", metadata.remote_log_segment_id)))
    }

    async fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start_position: i64,
        end_position: Option<i64>,
    ) -> Result<ByteStream> {
        let m = match self.locate(metadata).await? {
            aiven::Located::Ours(m) => m,
            aiven::Located::Aiven(s) => return self.aiven_fetch(s, start_position, end_position),
        };
        let (start, end) = fetch::fetch_bounds(&m, start_position, end_position)?;
        Ok(self.stream_range(m, start, end))
    }

    async fn fetch_index(&self, metadata: &RemoteLogSegmentMetadata, index_type: IndexType) -> Result<Bytes> {
        self.indexes
            .get_or_load(metadata.remote_log_segment_id.id, index_type, || async {
                let m = match self.locate(metadata).await? {
                    aiven::Located::Ours(m) => m,
                    aiven::Located::Aiven(s) => return self.aiven_index(&s, index_type).await,
                };
                let id = &metadata.remote_log_segment_id;
                let loc = m
                    .index(index_type)
                    .ok_or_else(|| Error::not_found(format!("{index_type} index of segment {id}")))?;
                let at = placement(&self.config.key_prefix, &m);
                index_cache::read_index(self.backend.as_ref(), &at, loc, index_type, id).await
            })
            .await
    }

    async fn delete_log_segment_data(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        metadata.validate()?;
        let keys = self.keys(metadata);
        self.forget(&metadata.remote_log_segment_id.id);
        if Trailer::of_metadata(metadata).is_some() {
            // A one-object segment, as its metadata says: one object, one request.
            self.backend.delete(&keys.segment).await?;
        } else {
            // Either layout (the metadata does not say): the commit points first, a split segment's manifest
            // and a one-object segment's object in one request; from then on the segment does not exist for
            // readers.
            self.backend.delete_many(&[keys.manifest.clone(), keys.segment.clone()]).await?;
            self.backend.delete_many(&[keys.log.clone(), keys.indexes.clone()]).await?;
        }
        // A segment Aiven's plugin stored, when they are read: its objects too (whichever exist).
        self.delete_aiven(metadata).await?;
        // Then what an upload of this segment interrupted by a crash left (the broker deletes a segment
        // whose copy never finished): the temporary objects of its keys, whatever their age.
        let temporary: Vec<String> =
            self.backend.list_temporary(keys.shared_prefix()).await?.into_iter().map(|t| t.meta.key).collect();
        if !temporary.is_empty() {
            tracing::info!(segment = %metadata.remote_log_segment_id, count = temporary.len(),
                "deleting temporary objects of an interrupted upload of the segment");
            self.backend.delete_many(&temporary).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod layout_tests;
