//! The reader pool over real Kafka segments copied by `TieredStorage` to the in-memory store (with faults
//! injected by `FaultLayer`), and a real local metadata log in a temp dir.

use futures::FutureExt;
use rsm_core::backend::layers::{Fault, FaultLayer, FaultRule};
use rsm_core::backend::{MemoryBackend, Op, StorageBackend};
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::batch::BatchIter;
use rsm_core::format::partition::LocalPartition;
use rsm_core::storage::{TieredConfig, TieredStorage};
use rsm_core::testkit::fixture_partition;
use rsm_core::{ErrorKind, RemoteLogSegmentMetadata, RemoteLogSegmentState, RemoteStorageManager, TopicIdPartition};
use rsm_engine::reader::{ReadRequest, ReaderPool, ReaderPoolConfig};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::{RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Real segments copied and marked copied in the metadata; a cold storage manager to read through.
struct Setup {
    _tmp: tempfile::TempDir,
    tp: TopicIdPartition,
    faults: Arc<FaultLayer>,
    /// Reads through a storage manager whose caches the copies did not warm.
    storage: Arc<TieredStorage>,
    metadata: Arc<LocalMetadataManager>,
    /// The copied segments (state copy finished) with their local `.log` files.
    segments: Vec<(RemoteLogSegmentMetadata, PathBuf)>,
}

/// A partition of about four 1 MiB segments, of which the closed ones from `first` on are copied.
async fn setup(first: usize) -> Setup {
    setup_with(first, &[]).await
}

/// [`setup`] with these settings added for both storage managers.
async fn setup_with(first: usize, settings: &[(&str, &str)]) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let partition: LocalPartition = fixture_partition(tmp.path(), 1 << 20, 20_000);
    let tp = partition.topic_id_partition.clone();
    let faults = Arc::new(FaultLayer::new(Arc::new(MemoryBackend::new())));
    let p = props([("chunk.size", "65536")].into_iter().chain(settings.iter().copied()));
    let mut r = ConfigReader::new(&p);
    let config = TieredConfig::read(&mut r).unwrap();
    r.finish().unwrap();
    let backend: Arc<dyn StorageBackend> = faults.clone();
    let copier = TieredStorage::new(backend.clone(), config.clone());
    let storage = Arc::new(TieredStorage::new(backend, config));
    let metadata = Arc::new(
        LocalMetadataManager::open(LocalMetadataConfig {
            fsync: false,
            ..LocalMetadataConfig::new(tmp.path().join("meta"))
        })
        .unwrap(),
    );
    metadata.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
    let mut segments = Vec::new();
    for seg in &partition.closed_segments()[first..] {
        let md = partition.segment_metadata(seg, 1, 1_700_000_000_000).unwrap();
        let data = partition.segment_data(seg).unwrap();
        metadata.add_remote_log_segment_metadata(&md).await.unwrap();
        copier.copy_log_segment_data(&md, &data).await.unwrap();
        let done =
            RemoteLogSegmentMetadataUpdate::of(&md, RemoteLogSegmentState::CopySegmentFinished, 1_700_000_000_001, 1);
        metadata.update_remote_log_segment_metadata(&done).await.unwrap();
        segments.push((done.apply_to(&md), seg.log.clone()));
    }
    assert!(segments.len() >= 2, "fixture too small: {} segments", segments.len());
    Setup { _tmp: tmp, tp, faults, storage, metadata, segments }
}

impl Setup {
    fn pool(&self, readers: usize, queue: usize) -> Arc<ReaderPool> {
        let metadata: Arc<dyn RemoteLogMetadataManager> = self.metadata.clone();
        let config = ReaderPoolConfig { readers, queue };
        Arc::new(ReaderPool::start(config, &tokio::runtime::Handle::current(), metadata, self.storage.clone()).unwrap())
    }

    fn request(&self, offset: i64, max_bytes: u32, timeout: Duration) -> ReadRequest {
        ReadRequest { partition: self.tp.clone(), offset, max_bytes, deadline: Instant::now() + timeout }
    }

    /// An offset in the middle of segment `i`.
    fn middle(&self, i: usize) -> i64 {
        let md = &self.segments[i].0;
        (md.start_offset + md.end_offset) / 2
    }

    fn fault(&self, op: Op, fault: Fault, times: Option<usize>) {
        self.faults.add_rule(FaultRule { op: Some(op), key: "*".into(), fault, times });
    }
}

/// The position and size of the batch of `log` holding `offset`, found by scanning the file.
fn batch_of(log: &[u8], offset: i64) -> (usize, usize) {
    for b in BatchIter::new(log, 0, true) {
        let b = b.unwrap();
        if b.base_offset() <= offset && offset <= b.last_offset() {
            return (b.position() as usize, b.size());
        }
    }
    panic!("no batch holds offset {offset}");
}

#[tokio::test(start_paused = true)]
async fn reads_by_offset_return_the_segment_bytes_from_the_batch_position() {
    let s = setup(0).await;
    let pool = s.pool(2, 4);
    for (i, (md, log)) in s.segments.iter().enumerate() {
        let log = std::fs::read(log).unwrap();
        let offsets = [md.start_offset, md.start_offset + 7, s.middle(i), md.end_offset];
        for offset in offsets {
            let (position, size) = batch_of(&log, offset);
            for max_bytes in [1u32, 100_000, 1 << 20, u32::MAX] {
                let case = format!("segment {i}, offset {offset}, max_bytes {max_bytes}");
                let got = pool.read(s.request(offset, max_bytes, Duration::from_secs(30))).await.unwrap();
                assert_eq!(got.segment.remote_log_segment_id, md.remote_log_segment_id, "{case}");
                assert_eq!(got.start_position as usize, position, "{case}");
                let want_len = (max_bytes as usize).max(size).min(log.len() - position);
                assert_eq!(got.bytes.len(), want_len, "{case}");
                assert!(got.bytes[..] == log[position..position + want_len], "{case}: bytes differ from the file");
                let first = BatchIter::new(&got.bytes, position as u64, true).next().unwrap().unwrap();
                assert!(first.base_offset() <= offset && offset <= first.last_offset(), "{case}");
            }
        }
    }
    assert_eq!(pool.queued(), 0);
    pool.shutdown().await;
}

/// A consumer reading on through a segment's end: the pool tells the storage manager (a cold one, which
/// copied nothing) each segment's successor from the metadata, so the chunk cache's read-ahead into the next
/// segment reads its manifest by its key, lists nothing, and the consumer's first read there waits for no
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_reading_on_gets_the_next_segment_ahead_without_a_listing() {
    let s = setup_with(0, &[("fetch.cache.bytes", "16777216"), ("fetch.prefetch.chunks", "2")]).await;
    let pool = s.pool(1, 4);
    let (first, next) = (&s.segments[0].0, &s.segments[1].0);
    let mut offset = first.start_offset;
    while offset <= first.end_offset {
        let got = pool.read(s.request(offset, 100_000, Duration::from_secs(30))).await.unwrap();
        let whole = BatchIter::new(&got.bytes, got.start_position as u64, false).map_while(|b| b.ok());
        offset = whole.last().expect("a whole batch").last_offset() + 1;
    }
    assert_eq!(offset, next.start_offset, "the consumer read the first segment to its end");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.faults.calls(Op::List), 0, "no listing for the next segment");
    let gets = s.faults.calls(Op::Get);
    let got = pool.read(s.request(next.start_offset, 1000, Duration::from_secs(30))).await.unwrap();
    assert_eq!(got.segment.remote_log_segment_id, next.remote_log_segment_id);
    assert_eq!(s.faults.calls(Op::Get), gets, "the next segment's manifest and first chunk were read ahead");
    pool.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_reads_at_once_with_busy() {
    let s = setup(0).await;
    let pool = s.pool(1, 2);
    s.fault(Op::Get, Fault::Hang, None);
    let offset = s.middle(0);
    let spawn = |pool: &Arc<ReaderPool>| {
        let (pool, req) = (pool.clone(), s.request(offset, 1 << 20, Duration::from_secs(60)));
        tokio::spawn(async move { pool.read(req).await })
    };
    let first = spawn(&pool);
    while pool.in_flight() < 1 {
        tokio::task::yield_now().await;
    }
    let queued = [spawn(&pool), spawn(&pool)];
    while pool.queued() < 2 {
        tokio::task::yield_now().await;
    }
    for _ in 0..3 {
        let refused = pool.read(s.request(offset, 1 << 20, Duration::from_secs(60))).now_or_never();
        let e = refused.expect("refused without waiting").unwrap_err();
        assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Busy, true), "{e}");
        assert!(e.to_string().contains("queue is full (2 reads waiting"), "{e}");
        assert!(e.to_string().contains(&format!("offset {offset}")), "{e}");
    }
    assert_eq!((pool.in_flight(), pool.queued()), (1, 2), "the refused reads changed nothing");
    pool.shutdown().await;
    for q in queued {
        let e = q.await.unwrap().unwrap_err();
        assert!(e.to_string().contains("shut down") && e.to_string().contains("never started"), "{e}");
        assert!(e.is_transient(), "{e}");
    }
    let e = first.await.unwrap().unwrap_err();
    assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Storage, true), "the hung read ends at its deadline: {e}");
    assert!(e.to_string().contains("still running at the deadline"), "{e}");
    let e = pool.read(s.request(offset, 1, Duration::from_secs(1))).await.unwrap_err();
    assert!(e.to_string().contains("shut down"), "{e}");
}

#[tokio::test(start_paused = true)]
async fn shutdown_fails_queued_reads_and_lets_the_read_in_flight_finish() {
    let s = setup(0).await;
    let pool = s.pool(1, 2);
    s.fault(Op::Get, Fault::Delay(Duration::from_secs(5)), Some(1));
    let offset = s.middle(1);
    let req = s.request(offset, 4096, Duration::from_secs(60));
    let first = tokio::spawn({
        let (pool, req) = (pool.clone(), req.clone());
        async move { pool.read(req).await }
    });
    while pool.in_flight() < 1 {
        tokio::task::yield_now().await;
    }
    let queued = tokio::spawn({
        let pool = pool.clone();
        async move { pool.read(req).await }
    });
    while pool.queued() < 1 {
        tokio::task::yield_now().await;
    }
    pool.shutdown().await;
    let got = first.await.unwrap().unwrap();
    assert_eq!(got.segment.remote_log_segment_id, s.segments[1].0.remote_log_segment_id);
    let e = queued.await.unwrap().unwrap_err();
    assert!(e.to_string().contains("shut down"), "{e}");
    assert_eq!(s.faults.injected(), 1);
}

#[tokio::test(start_paused = true)]
async fn transient_faults_are_retried_and_the_read_succeeds() {
    let s = setup(0).await;
    let pool = s.pool(1, 1);
    s.fault(Op::Get, Fault::transient(), Some(3));
    let offset = s.middle(0);
    let got = pool.read(s.request(offset, 10_000, Duration::from_secs(30))).await.unwrap();
    assert_eq!(s.faults.injected(), 3, "three failed attempts before the one that succeeded");
    let log = std::fs::read(&s.segments[0].1).unwrap();
    let (position, _) = batch_of(&log, offset);
    assert_eq!(got.start_position as usize, position);
    assert!(got.bytes[..] == log[position..position + got.bytes.len()]);
    pool.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_store_failing_past_the_deadline_gives_a_transient_error_by_the_deadline() {
    let s = setup(0).await;
    let pool = s.pool(1, 1);
    s.fault(Op::Get, Fault::transient(), None);
    let offset = s.middle(1);
    let req = s.request(offset, 10_000, Duration::from_secs(3));
    let deadline = req.deadline;
    let e = pool.read(req).await.unwrap_err();
    assert!(Instant::now() <= deadline, "answered after the deadline");
    assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Storage, true), "{e}");
    let attempts: u32 = e.field("attempts").unwrap().parse().unwrap();
    assert!(attempts >= 3, "retried: {attempts} attempts");
    assert_eq!(s.faults.injected(), attempts as usize, "one failed get per attempt");
    let text = e.to_string();
    assert!(text.contains(&s.tp.to_string()) && text.contains(&format!("offset {offset}")), "{text}");
    assert!(text.contains("injected fault"), "names the last error: {text}");
    pool.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_permanent_failure_fails_at_once() {
    let s = setup(0).await;
    let pool = s.pool(1, 1);
    s.fault(Op::Get, Fault::permanent(ErrorKind::Storage), None);
    let offset = s.middle(0);
    let e = pool.read(s.request(offset, 10_000, Duration::from_secs(30))).await.unwrap_err();
    assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Storage, false), "{e}");
    assert_eq!(s.faults.injected(), 1, "not retried");
    assert_eq!(e.field("offset"), Some(offset.to_string().as_str()), "{e}");
    pool.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_segment_deleted_between_lookup_and_fetch_is_reported_deleted() {
    let s = setup(0).await;
    let pool = s.pool(1, 1);
    // The read's first store call waits, after its metadata lookup; the segment is deleted meanwhile.
    s.fault(Op::Get, Fault::Delay(Duration::from_secs(10)), Some(1));
    let md = s.segments[1].0.clone();
    let offset = s.middle(1);
    let read = tokio::spawn({
        let (pool, req) = (pool.clone(), s.request(offset, 10_000, Duration::from_secs(60)));
        async move { pool.read(req).await }
    });
    while s.faults.injected() < 1 {
        tokio::task::yield_now().await;
    }
    let started =
        RemoteLogSegmentMetadataUpdate::of(&md, RemoteLogSegmentState::DeleteSegmentStarted, 1_700_000_000_002, 1);
    s.metadata.update_remote_log_segment_metadata(&started).await.unwrap();
    s.storage.delete_log_segment_data(&md).await.unwrap();
    let e = read.await.unwrap().unwrap_err();
    assert_eq!((e.kind(), e.is_transient()), (ErrorKind::NotFound, false), "{e}");
    let text = e.to_string();
    assert!(text.contains("was deleted while being read"), "{text}");
    assert!(
        text.contains(&md.remote_log_segment_id.id.to_string()) && text.contains(&format!("offset {offset}")),
        "{text}"
    );
    // A later read of the offset: no copied segment holds it any more.
    let e = pool.read(s.request(offset, 10_000, Duration::from_secs(60))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    pool.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn offsets_out_of_the_remote_range_are_not_found_naming_the_offset() {
    let s = setup(1).await;
    let pool = s.pool(1, 1);
    let earliest = s.segments[0].0.start_offset;
    let highest = s.segments.last().unwrap().0.end_offset;
    assert!(earliest > 0, "the first segment is not copied");
    for offset in [0, earliest - 1, highest + 1, i64::MAX] {
        let e = pool.read(s.request(offset, 10_000, Duration::from_secs(30))).await.unwrap_err();
        assert_eq!((e.kind(), e.is_transient()), (ErrorKind::NotFound, false), "{e}");
        let text = e.to_string();
        assert!(text.contains(&format!("offset {offset} of {}", s.tp)) && text.contains("out of range"), "{text}");
        assert!(text.contains(&format!("{earliest} to {highest}")), "{text}");
    }
    let ok = pool.read(s.request(earliest, 1, Duration::from_secs(30))).await.unwrap();
    assert_eq!(ok.start_position, 0);
    pool.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_read_whose_deadline_passes_while_queued_fails_without_an_attempt() {
    let s = setup(0).await;
    let pool = s.pool(1, 1);
    s.fault(Op::Get, Fault::Delay(Duration::from_secs(20)), Some(1));
    let offset = s.middle(0);
    let first = tokio::spawn({
        let (pool, req) = (pool.clone(), s.request(offset, 1000, Duration::from_secs(60)));
        async move { pool.read(req).await }
    });
    while pool.in_flight() < 1 {
        tokio::task::yield_now().await;
    }
    let gets = s.faults.calls(Op::Get);
    let e = pool.read(s.request(offset, 1000, Duration::from_secs(5))).await.unwrap_err();
    assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Storage, true), "{e}");
    assert!(e.to_string().contains("deadline passed while it was queued"), "{e}");
    assert_eq!(e.field("attempts"), Some("0"), "{e}");
    first.await.unwrap().unwrap();
    assert!(s.faults.calls(Op::Get) > gets, "the first read went on");
    pool.shutdown().await;
}
