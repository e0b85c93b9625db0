//! [`Store`]: a [`TieredStorage`] over a layered backend opened by URL, with Kafka's operations as blocking
//! calls (and as futures for the faces that run them as tasks), bounded by `fetch.timeout.ms` and
//! `copy.timeout.ms`, and the counters every face reports.

use crate::metrics::STORE_METRICS;
use crate::reader::SegmentReader;
use crate::runtime::runtime;
use crate::{cost, reader};
use bytes::Bytes;
#[cfg(doc)]
use rsm_core::backend::layers::{CountingLayer, Layer, RetryConfig, RetryLayer, TracingLayer};
use rsm_core::backend::{CountSnapshot, IncompleteUpload, ObjectMeta, RequestCounts, TemporaryObject};
use rsm_core::format::manifest::Manifest;
use rsm_core::storage::{ListedSegment, LogRead, VerifyReport};
use rsm_core::{
    CustomMetadata, Error, IndexType, LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager, Result,
    TieredStorage, TopicIdPartition,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A store opened by URL: a [`TieredStorage`] over the layered backend.
#[derive(Debug)]
pub struct Store {
    pub(crate) storage: Arc<TieredStorage>,
    pub(crate) counts: Arc<RequestCounts>,
    pub(crate) prices: Option<cost::PriceTable>,
    /// The circuit breaker's counters, when it is on (`store.breaker.failures` > 0).
    pub(crate) breaker: Option<Arc<rsm_core::backend::layers::BreakerStats>>,
    /// The waits of fetches and copies that passed `fetch.timeout.ms` or `copy.timeout.ms`.
    pub(crate) timeouts: Arc<std::sync::atomic::AtomicU64>,
}

/// Which counter request counts come from ([`Store::requests_by_topic`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountLevel {
    /// The store's own client: every HTTP request it sent (each retry, multipart part and batch), what a
    /// cloud bill counts (S3, Azure, GCS).
    Store,
    /// The contract's level: one request per storage call (stores whose client counts nothing: filesystem,
    /// HDFS, memory).
    Contract,
}

impl CountLevel {
    /// A few words saying what is counted, for a report's heading.
    pub fn describe(self) -> &'static str {
        match self {
            CountLevel::Store => "HTTP requests the store's client sent",
            CountLevel::Contract => "calls on the store",
        }
    }
}

/// Closing a store cancels its pending second looks at failed copies (`copy.cleanup.recheck.ms`), and,
/// outside the runtime (a host's thread: the C ABI's `rsm_store_close`, the plugin's `close`), waits for
/// their tasks to end, so none outlives the store.
impl Drop for Store {
    fn drop(&mut self) {
        let ended = self.storage.cancel_cleanup_rechecks();
        if tokio::runtime::Handle::try_current().is_err() {
            runtime().block_on(ended);
        }
    }
}

impl Store {
    /// The storage manager.
    pub fn storage(&self) -> &TieredStorage {
        &self.storage
    }

    /// Re-wraps the data key of the segment whose manifest is `manifest_key` under key-encryption key
    /// `new_id` of this store's keyring (`encryption.keys`), rewriting only the manifest. `false` when it
    /// is under `new_id` already. A store without keys is a config error naming `encryption.keys`.
    pub fn rewrap(&self, manifest_key: &str, new_id: &str) -> Result<bool> {
        let encryption = self.storage.config().encryption.as_ref().ok_or_else(|| {
            Error::config("encryption.keys", "no key-encryption keys are set: list the old and the new key ids")
        })?;
        runtime().block_on(self.storage.rewrap_segment(manifest_key, &encryption.keyring, new_id))
    }

    /// The storage manager, shared (the tiering engine keeps one).
    pub fn shared_storage(&self) -> Arc<TieredStorage> {
        Arc::clone(&self.storage)
    }

    /// Requests, failures and bytes so far, by operation, at the contract's level (a store's client may
    /// make more requests underneath: retries, multipart parts).
    pub fn counts(&self) -> CountSnapshot {
        self.counts.snapshot()
    }

    /// The requests the store's client really sent (over HTTP: every retry, multipart part and batch), for
    /// the stores that count them (S3, Azure, GCS).
    pub fn store_requests(&self) -> Option<CountSnapshot> {
        self.storage.backend().store_requests().map(|c| c.snapshot())
    }

    /// [`Store::counts`] by topic: each topic that had a request, by name (requests about no topic, such as
    /// a listing of the whole store, count in the totals only; topics beyond
    /// [`rsm_core::backend::MAX_TOPICS`] count together under [`rsm_core::backend::OTHER_TOPICS`]).
    pub fn counts_by_topic(&self) -> BTreeMap<String, CountSnapshot> {
        self.counts.topics()
    }

    /// [`Store::store_requests`] by topic (by each request's path, or a listing's prefix), for the stores
    /// that count them.
    pub fn store_requests_by_topic(&self) -> Option<BTreeMap<String, CountSnapshot>> {
        self.storage.backend().store_requests().map(|c| c.topics())
    }

    /// What a bill counts, by topic: the store's own requests when its client counts them
    /// ([`Store::store_requests_by_topic`]), else the contract's ([`Store::counts_by_topic`]); with which.
    pub fn requests_by_topic(&self) -> (CountLevel, BTreeMap<String, CountSnapshot>) {
        match self.store_requests_by_topic() {
            Some(t) => (CountLevel::Store, t),
            None => (CountLevel::Contract, self.counts_by_topic()),
        }
    }

    /// The price table of the `cost.*` settings, when any is set ([`cost`]).
    pub fn prices(&self) -> Option<&cost::PriceTable> {
        self.prices.as_ref()
    }

    /// Copies a segment (see [`RemoteStorageManager::copy_log_segment_data`]): [`Store::copy_async`] run to
    /// its end on [`runtime`].
    pub fn copy(&self, md: &RemoteLogSegmentMetadata, data: &LogSegmentData) -> Result<Option<CustomMetadata>> {
        runtime().block_on(self.copy_async(md, data))
    }

    /// [`Store::copy`] as a future, for a face that runs it as a task of [`runtime`] (the C ABI's
    /// `rsm_copy_async`).
    pub async fn copy_async(
        &self,
        md: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<CustomMetadata>> {
        let copy = self.storage.copy_log_segment_data(md, data);
        let Some(limit) = self.storage.config().copy_timeout else { return copy.await };
        match tokio::time::timeout(limit, copy).await {
            Ok(r) => r,
            Err(_) => {
                // The copy's future is dropped mid-way: what it wrote is deleted here (its own cleanup did not
                // run), within the same bound, so no part of the attempt stays visible; and looked for again
                // after `copy.cleanup.recheck.ms`, for a write still in flight now that the store applies
                // later, and for a delete that fails too.
                let cleanup = tokio::time::timeout(limit, self.storage.remove_abandoned_copy(md)).await;
                let left = match cleanup {
                    Ok(Ok(())) => "what it wrote was deleted".to_string(),
                    Ok(Err(e)) => format!("deleting what it wrote failed too ({e})"),
                    Err(_) => "deleting what it wrote timed out too".to_string(),
                };
                self.timeouts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // As the storage manager logs a copy that fails, whose cleanup never ran here.
                let waited = format!("took longer than copy.timeout.ms ({} ms)", limit.as_millis());
                self.storage.copy_failed(md, &waited, &left);
                if let Some(b) = &self.breaker {
                    b.gave_up(&format!("the copy of segment {} timed out", md.remote_log_segment_id));
                }
                Err(rsm_core::Error::retriable(
                    format!(
                        "the copy of segment {} took longer than copy.timeout.ms ({} ms): {left}",
                        md.remote_log_segment_id,
                        limit.as_millis()
                    ),
                    "timed out",
                ))
            }
        }
    }

    /// Opens a reader of the segment's bytes `start..=end` (see [`RemoteStorageManager::fetch_log_segment`]):
    /// [`Store::fetch_async`] run to its end on [`runtime`].
    pub fn fetch(&self, md: &RemoteLogSegmentMetadata, start: i64, end: Option<i64>) -> Result<SegmentReader> {
        runtime().block_on(self.fetch_async(md, start, end))
    }

    /// [`Store::fetch`] as a future (the C ABI's `rsm_fetch_async`). The reader is read blocking, off the
    /// runtime's threads.
    pub async fn fetch_async(
        &self,
        md: &RemoteLogSegmentMetadata,
        start: i64,
        end: Option<i64>,
    ) -> Result<SegmentReader> {
        let wait = self.fetch_wait(md);
        let open = || async {
            Ok(match self.storage.open_read(md, start, end).await? {
                LogRead::Local(local) => SegmentReader::local(local),
                LogRead::Stream(stream) => SegmentReader::stream(stream).with_wait(wait.clone()),
            })
        };
        wait.bound_again(open).await
    }

    /// The exact bytes of an index (see [`RemoteStorageManager::fetch_index`]), within `fetch.timeout.ms`.
    pub fn fetch_index(&self, md: &RemoteLogSegmentMetadata, index: IndexType) -> Result<Bytes> {
        let wait = self.fetch_wait(md);
        runtime().block_on(wait.bound_again(|| self.storage.fetch_index(md, index)))
    }

    /// How long a fetch of `md` waits on the store at a time (`fetch.timeout.ms`), and what its timeout
    /// names: the segment and its key.
    fn fetch_wait(&self, md: &RemoteLogSegmentMetadata) -> reader::Wait {
        let keys = rsm_core::storage::layout::segment_keys(&self.storage.config().key_prefix, md);
        reader::Wait::new(
            self.storage.config().fetch_timeout,
            format!("segment {} (key {})", md.remote_log_segment_id, keys.shared_prefix()),
            self.breaker.clone(),
            self.timeouts.clone(),
        )
    }

    /// Deletes a segment (see [`RemoteStorageManager::delete_log_segment_data`]): [`Store::delete_async`]
    /// run to its end on [`runtime`].
    pub fn delete(&self, md: &RemoteLogSegmentMetadata) -> Result<()> {
        runtime().block_on(self.delete_async(md))
    }

    /// [`Store::delete`] as a future (the C ABI's `rsm_delete_async`).
    pub async fn delete_async(&self, md: &RemoteLogSegmentMetadata) -> Result<()> {
        self.storage.delete_log_segment_data(md).await
    }

    /// Deletes what failed or interrupted copies left under the partition `tp` (or the whole store): the
    /// objects of segments without a manifest and the store's temporary upload objects, and aborts the
    /// incomplete multipart uploads to segments' keys, each only when last written `min_age` ago or more
    /// ([`rsm_core::storage::ORPHAN_MIN_AGE`], one hour, unless the caller knows better). Returns the deleted
    /// keys and the aborted uploads' keys; see [`TieredStorage::sweep_orphans`].
    pub fn sweep_orphans(&self, tp: Option<&TopicIdPartition>, min_age: std::time::Duration) -> Result<Vec<String>> {
        runtime().block_on(self.storage.sweep_orphans(tp, min_age))
    }

    /// What [`Store::sweep_orphans`] would delete, changing nothing; see [`TieredStorage::orphans`].
    pub fn orphans(
        &self,
        tp: Option<&TopicIdPartition>,
        min_age: std::time::Duration,
    ) -> Result<rsm_core::storage::Orphans> {
        runtime().block_on(self.storage.orphans(tp, min_age))
    }

    /// Committed segments of one partition, or of the whole store.
    pub fn list_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<Manifest>> {
        runtime().block_on(self.storage.list_segments(tp))
    }

    /// Committed segments of one partition or of the whole store, each with its manifest or why it cannot be
    /// read (see [`TieredStorage::scan_segments`]).
    pub fn scan_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<ListedSegment>> {
        runtime().block_on(self.storage.scan_segments(tp))
    }

    /// The committed segment with id `id`, whatever state the others are in.
    pub fn find_segment(&self, id: &rsm_core::Uuid) -> Result<Manifest> {
        runtime().block_on(self.storage.find_segment(id))
    }

    /// Every object under the store's key prefix (segments' objects and anything else there), with its
    /// size and last write, then the temporary objects of uploads (in flight or interrupted): what an
    /// audit compares with the metadata. Two listings.
    pub fn list_objects(&self) -> Result<(Vec<ObjectMeta>, Vec<TemporaryObject>)> {
        let backend = self.storage.backend();
        let prefix = &self.storage.config().key_prefix;
        runtime().block_on(async { Ok((backend.list(prefix).await?, backend.list_temporary(prefix).await?)) })
    }

    /// Deletes objects by key (what [`Store::list_objects`] listed); deleting what is gone succeeds.
    pub fn delete_objects(&self, keys: &[String]) -> Result<()> {
        runtime().block_on(self.storage.backend().delete_many(keys))
    }

    /// The multipart uploads under the store's key prefix never completed nor aborted (in flight, or cut
    /// short by a crash: invisible to [`Store::list_objects`], billed), with their parts' bytes; none on a
    /// store without multipart uploads. See [`rsm_core::backend::StorageBackend::list_incomplete_uploads`].
    pub fn list_incomplete_uploads(&self) -> Result<Vec<IncompleteUpload>> {
        let prefix = &self.storage.config().key_prefix;
        runtime().block_on(self.storage.backend().list_incomplete_uploads(prefix))
    }

    /// Aborts `uploads` (what [`Store::list_incomplete_uploads`] or [`Store::orphans`] listed), one request
    /// each; an upload already gone is no error.
    pub fn abort_uploads(&self, uploads: &[IncompleteUpload]) -> Result<()> {
        runtime().block_on(self.storage.abort_uploads(uploads))
    }

    /// Byte position of the batch holding `offset`, as Kafka and [`Store::fetch`] take it.
    pub fn position_of_offset(&self, md: &RemoteLogSegmentMetadata, offset: i64) -> Result<i64> {
        runtime().block_on(self.storage.position_of_offset(md, offset)).and_then(kafka_position)
    }

    /// Byte position of the first batch with a timestamp at or after `timestamp`, as Kafka and
    /// [`Store::fetch`] take it.
    pub fn position_of_timestamp(&self, md: &RemoteLogSegmentMetadata, timestamp: i64) -> Result<Option<i64>> {
        runtime().block_on(self.storage.position_of_timestamp(md, timestamp))?.map(kafka_position).transpose()
    }

    /// Reads the manifest at `key` (refused as corrupt when it is not the segment its key names).
    pub fn read_manifest(&self, key: &str) -> Result<Manifest> {
        runtime().block_on(self.storage.read_manifest(key))
    }

    /// Every Aiven segment under `aiven.key.prefix` (of partition `tp` only, when given): empty without
    /// `aiven.read.enabled`.
    pub fn scan_aiven_segments(
        &self,
        tp: Option<&TopicIdPartition>,
    ) -> Result<Vec<rsm_core::storage::aiven::ListedAivenSegment>> {
        runtime().block_on(self.storage.scan_aiven_segments(tp))
    }

    /// The metadata of the Aiven segment with id `id`, found from the store alone.
    pub fn find_aiven_segment(&self, id: &rsm_core::Uuid) -> Result<RemoteLogSegmentMetadata> {
        runtime().block_on(self.storage.find_aiven_segment(id)).map(|(_, md)| md)
    }

    /// Whether segment `md` is in the store, and in which format (ours, or Aiven's plugin's when
    /// `aiven.read.enabled`): its manifest read and checked against it; not found when neither holds it.
    pub fn stored_format(&self, md: &RemoteLogSegmentMetadata) -> Result<rsm_core::storage::StoredFormat> {
        runtime().block_on(self.storage.stored_format(md))
    }

    /// The manifest of a segment.
    pub fn manifest(&self, md: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        runtime().block_on(self.storage.manifest(md))
    }

    /// Reads and checks every chunk and index of a segment.
    pub fn verify(&self, md: &RemoteLogSegmentMetadata) -> Result<VerifyReport> {
        runtime().block_on(self.storage.verify(md))
    }

    /// The values of [`STORE_METRICS`], in its order: the caches' counters, the circuit breaker's and the
    /// store's, what a host publishes as its metrics.
    pub fn cache_metrics(&self) -> [u64; STORE_METRICS.len()] {
        let s = &self.storage;
        let c = s.chunk_cache_stats().unwrap_or_default();
        let (i, m) = (s.index_cache_stats(), s.manifest_cache_stats());
        let http = s.backend().store_requests().map(|c| c.snapshot());
        // Bytes read from the store: what its client received over HTTP, or the contract's reads' bytes.
        let read = http.as_ref().unwrap_or(&self.counts.snapshot()).get(rsm_core::backend::Op::Get).bytes_received;
        let http = http.unwrap_or_default();
        [
            c.memory.hits,
            c.memory.misses,
            c.memory.evictions,
            c.memory.weight,
            c.disk.hits,
            c.disk.misses,
            c.disk.evictions,
            c.disk.weight,
            c.disk_dropped,
            c.loads,
            c.loaded_bytes,
            c.prefetched,
            c.prefetched_bytes_used,
            c.prefetched_bytes_wasted,
            c.bypassed,
            c.bypassed_bytes,
            i.hits,
            i.misses,
            i.evictions,
            i.weight,
            m.hits,
            m.misses,
            self.breaker.as_ref().map_or(0, |b| match b.state() {
                rsm_core::backend::layers::BreakerState::Closed => 0,
                rsm_core::backend::layers::BreakerState::Open => 1,
                rsm_core::backend::layers::BreakerState::HalfOpen => 2,
            }),
            self.breaker.as_ref().map_or(0, |b| b.times_opened()),
            self.breaker.as_ref().map_or(0, |b| b.calls_refused()),
            self.breaker.as_ref().map_or(0, |b| b.time_down().as_millis() as u64),
            self.timeouts.load(std::sync::atomic::Ordering::Relaxed),
            http.throttled,
            http.retries_refused,
            read,
        ]
    }
}

/// A position as Kafka holds it since KIP-1333 (a long); one that does not fit is stored data gone wrong.
fn kafka_position(p: u64) -> Result<i64> {
    i64::try_from(p)
        .map_err(|_| rsm_core::Error::corrupt(format!("position {p} does not fit a Kafka position (int64)")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::config::{STORE_URL_KEY, props};

    #[test]
    fn store_urls_and_settings_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        Store::open(&url, &props([("chunk.size", "1048576"), ("broker.id", "3"), ("retry.max.attempts", "2")]))
            .unwrap();
        let e = Store::open(&url, &props([("chunk.sise", "1")])).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `chunk.sise`: unknown setting");
        let e = Store::open(&url, &props([("chunk.size", "12")])).unwrap_err();
        assert!(e.to_string().starts_with("invalid configuration `chunk.size`: 12 is out of range"), "{e}");
        let e = Store::open("ftp://x", &BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("unsupported store URL scheme `ftp`"), "{e}");
        let e = Store::open("file://relative", &BTreeMap::new()).unwrap_err();
        assert_eq!(e.config_key(), Some(STORE_URL_KEY));
        assert!(e.to_string().contains("absolute path"), "{e}");
    }

    #[test]
    fn the_store_url_setting_is_required_and_named() {
        let e = Store::open_settings(&props([("chunk.size", "1048576")])).unwrap_err();
        assert!(e.to_string().starts_with("invalid configuration `store.url`: is required"), "{e}");
        let e = Store::open_settings(&props([("store.url", "ftp://x")])).unwrap_err();
        assert!(e.to_string().starts_with("invalid configuration `store.url`: unsupported store URL scheme"), "{e}");
        let e = Store::open_settings(&props([("store.url", "memory:"), ("chunk.sise", "1")])).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `chunk.sise`: unknown setting");
        Store::open_settings(&props([("store.url", " memory: "), ("broker.id", "1")])).unwrap();
    }

    #[cfg(feature = "s3")]
    #[test]
    fn retry_settings_are_refused_for_stores_that_retry_themselves() {
        let p = props([("s3.endpoint.url", "http://127.0.0.1:1"), ("retry.max.attempts", "5")]);
        let e = Store::open("s3://bucket/prefix", &p).unwrap_err();
        assert_eq!(e.config_key(), Some("retry.max.attempts"), "{e}");
    }
}
