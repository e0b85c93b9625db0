//! The behaviour of [`TieredStorage`] as a whole: what fetches cost in reads, concurrency, the manifest,
//! index and chunk caches, read-ahead and the sweep of orphans.

use super::fetch::FIRST_READ_BYTES;
use super::*;

/// The default CRC block size.
const BLOCK: u64 = crate::format::chunk::DEFAULT_BLOCK_SIZE as u64;
use crate::backend::layers::{Fault, FaultLayer, FaultRule, LayeredBackend};
use crate::backend::{CountingLayer, MemoryBackend, Op};
use crate::model::IndexType;
use crate::testkit::rsm_contract::{Fixture, collect};
use futures::StreamExt;
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
    /// The longest read asked for with an end.
    longest: AtomicUsize,
}

impl InFlight {
    fn new() -> Self {
        InFlight {
            inner: Arc::new(MemoryBackend::new()),
            now: 0.into(),
            max: 0.into(),
            started: 0.into(),
            started_bytes: 0.into(),
            longest: 0.into(),
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
        if range.end != u64::MAX {
            // Not a read "to the end" (a manifest's).
            self.longest.fetch_max((range.end - range.start) as usize, Ordering::SeqCst);
        }
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
    // A reader whose `chunk.size` is a quarter of the segment's chunks (as chunks of one large batch are):
    // a fetch and a verify read them in parts of 1 MiB, three at once (the budget, 3 x 1 MiB), where a read
    // of a whole chunk would hold 4 MiB.
    let cfg = TieredConfig { fetch_concurrency: 3, chunk_size: 1 << 20, ..TieredConfig::default() };
    let rsm = TieredStorage::new(tracker.clone(), cfg);
    tracker.max.store(0, Ordering::SeqCst);
    tracker.longest.store(0, Ordering::SeqCst);
    let got = collect(rsm.fetch_log_segment(&big.md, 0, None).await.unwrap()).await.unwrap();
    assert!(got == big.log, "bytes in order");
    assert_eq!(tracker.max.load(Ordering::SeqCst), 3, "a fetch: parts of large chunks, as many as the budget holds");
    let longest = tracker.longest.load(Ordering::SeqCst) as u64;
    assert!(longest <= super::fetch::FIRST_READ_BYTES, "a fetch: no read past the first is over 1 MiB: {longest}");
    tracker.max.store(0, Ordering::SeqCst);
    tracker.longest.store(0, Ordering::SeqCst);
    let report = rsm.verify(&big.md).await.unwrap();
    assert_eq!(
        (report.bytes, report.chunks),
        (big.log.len() as u64, big.m.chunks.len()),
        "a verify: every chunk whole"
    );
    assert_eq!(tracker.max.load(Ordering::SeqCst), 3, "a verify: parts of large chunks, as many as the budget holds");
    let longest = tracker.longest.load(Ordering::SeqCst) as u64;
    assert!(longest <= 1 << 20, "a verify: reads of 1 MiB at most: {longest}");
    // A flipped byte in the middle of a chunk read in parts fails the verify, naming the object.
    let key = rsm.keys(&big.md).log;
    let mut stored = tracker.inner.get_range(&key, 0..u64::MAX).await.unwrap().to_vec();
    stored[(5 << 20) + 12345] ^= 1;
    tracker.inner.put_bytes(&key, Bytes::from(stored)).await.unwrap();
    let e = rsm.verify(&big.md).await.unwrap_err().to_string();
    assert!(e.contains("CRC-32C") && e.contains(&key), "{e}");
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

/// A store with incomplete multipart uploads (as S3 lists them): the uploads given, minus those aborted.
#[derive(Debug)]
struct Uploads {
    inner: Arc<dyn StorageBackend>,
    uploads: std::sync::Mutex<Vec<crate::backend::IncompleteUpload>>,
}

#[async_trait]
impl LayeredBackend for Uploads {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }
    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<crate::backend::IncompleteUpload>> {
        Ok(self.uploads.lock().unwrap().iter().filter(|u| u.key.starts_with(prefix)).cloned().collect())
    }
    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        self.uploads.lock().unwrap().retain(|u| (u.key.as_str(), u.upload_id.as_str()) != (key, upload_id));
        Ok(())
    }
}

#[tokio::test]
async fn incomplete_uploads_to_segments_keys_past_the_safety_age_are_orphans_aborted_by_the_sweep() {
    let now = std::time::SystemTime::now();
    let ago = |s: u64| Some(now - std::time::Duration::from_secs(s));
    let memory: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let f = Fixture::new(memory.clone(), "uploads");
    let (_, md0, data0) = f.segment(0);
    let (_, md1, _) = f.segment(1);
    let (_, md2, _) = f.segment(2);
    let upload = |key: &str, id: &str, initiated, last_part| crate::backend::IncompleteUpload {
        key: key.to_string(),
        upload_id: id.to_string(),
        initiated,
        last_part,
        parts: 1,
        bytes: Some(5 << 20),
    };
    let (k1, k2) = (f.rsm.keys(&md1).log, f.rsm.keys(&md2).log);
    let stranger = format!("{}notes.bin", f.config.key_prefix);
    let uploads = Uploads {
        inner: memory.clone(),
        uploads: std::sync::Mutex::new(vec![
            // A crash two hours ago.
            upload(&k1, "old", ago(7200), ago(7000)),
            // Started two hours ago, a part sent a minute ago: still writing.
            upload(&k2, "writing", ago(7200), ago(60)),
            // Someone else's upload under the prefix, and one with no time at all: left alone.
            upload(&stranger, "other", ago(7200), None),
            upload(&k2, "timeless", None, None),
        ]),
    };
    let counting = Arc::new(CountingLayer::new(Arc::new(uploads)));
    let rsm = TieredStorage::new(counting.clone(), f.config.clone());
    rsm.copy_log_segment_data(&md0, &data0).await.unwrap();
    let tp = md0.remote_log_segment_id.topic_id_partition.clone();

    let found = rsm.orphans(Some(&tp), std::time::Duration::from_secs(3600)).await.unwrap();
    let ids: Vec<&str> = found.uploads.iter().map(|u| u.upload_id.as_str()).collect();
    assert_eq!(ids, ["old"], "{found:?}");
    assert_eq!((found.upload_bytes(), found.bytes(), found.is_empty()), (5 << 20, 5 << 20, false));
    let ids = |o: &Orphans| o.uploads.iter().map(|u| u.upload_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&rsm.orphans(Some(&tp), std::time::Duration::from_secs(30)).await.unwrap()), ["old", "writing"]);

    let before = counting.counts().snapshot();
    let swept = rsm.sweep_orphans(Some(&tp), std::time::Duration::from_secs(3600)).await.unwrap();
    assert_eq!(swept, std::slice::from_ref(&k1), "the aborted upload's key");
    let counted = counting.counts().snapshot().since(&before);
    assert_eq!((counted.get(Op::List).requests, counted.get(Op::Delete).requests), (2, 1), "{counted}");
    let left = StorageBackend::list_incomplete_uploads(counting.as_ref(), &f.config.key_prefix).await.unwrap();
    let left: Vec<&str> = left.iter().map(|u| u.upload_id.as_str()).collect();
    assert_eq!(left, ["writing", "other", "timeless"], "only the old upload to a segment's key was aborted");
    assert!(collect(rsm.fetch_log_segment(&md0, 0, None).await.unwrap()).await.is_ok(), "the segment stays whole");
}

#[tokio::test]
async fn a_store_without_multipart_uploads_lists_none_and_aborts_nothing() {
    let counting: Arc<dyn StorageBackend> = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    assert!(counting.list_incomplete_uploads("").await.unwrap().is_empty());
    counting.abort_upload("a/b", "id").await.unwrap();
}

#[tokio::test]
async fn a_fetch_inside_a_chunk_reads_at_most_a_fetch_first() {
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let Big { rsm, md, log, .. } = big_segment(counting).await;
    let start = 1000i64;
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
        let mut s = rsm.fetch_log_segment(&md, start as i64, None).await.unwrap();
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
        let r = collect(fresh.fetch_log_segment(&md, start as i64, Some(c1.end() as i64 - 1)).await.unwrap()).await;
        match (r, named) {
            (Err(e), Some(c)) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{case}: {e}");
                assert!(e.to_string().contains(&format!("chunk at position {}", c.original_position())), "{case}: {e}");
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
    let config = TieredConfig { fetch_cache_bytes: bytes, fetch_prefetch_chunks: prefetch, ..TieredConfig::default() };
    TieredStorage::new(backend, config)
}

/// The broker's read of a fetch: open at `pos`, take about a mebibyte, close.
async fn broker_fetch(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, pos: u64) -> Vec<u8> {
    let mut s = rsm.fetch_log_segment(md, pos as i64, None).await.unwrap();
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
                collect(rsm.fetch_log_segment(&md, at as i64, Some(at as i64 + 100_000)).await.unwrap()).await.unwrap()
            })
        })
        .collect();
    for r in readers {
        assert!(r.await.unwrap()[..] == log[at as usize..at as usize + 100_001]);
    }
    // The first reader reads its blocks around the cache; the second, meeting a chunk missed once, reads its
    // blocks too and starts the chunk's whole load; the six others wait for that load, together.
    assert_eq!(gets() - before, 4, "eight cold readers: the manifest, two readers' blocks, the chunk once");
    let s = rsm.chunk_cache_stats().unwrap();
    assert_eq!((s.bypassed, s.loads), (2, 1), "{s:?}");

    // A failed load is not kept: the next reader loads the chunk again, and gets it.
    faults.clear();
    faults.add_rule(FaultRule { op: Some(Op::Get), key: "*.log".into(), fault: Fault::transient(), times: Some(1) });
    let at2 = m.chunks[2].original_position();
    let e = collect(rsm.fetch_log_segment(&md, at2 as i64, Some(at2 as i64 + 10)).await.unwrap()).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    let got = collect(rsm.fetch_log_segment(&md, at2 as i64, Some(at2 as i64 + 10)).await.unwrap()).await.unwrap();
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
    let at = m.chunks[3].original_position() as i64;
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
    // The first fetch, a random one as far as anyone knows, reads its blocks around the cache.
    assert!(
        log_gets() - before <= m.chunks.len() as u64 + 1,
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
    assert_eq!(counts.snapshot().get(Op::Get).requests - before, 1, "one ranged read for the header, not the segment");
    assert!(counts.snapshot().get(Op::Get).bytes_received - bytes_before <= FIRST_READ_BYTES);
}

/// KIP-1333: a segment whose offset index has 12-byte entries (a broker after `IBP_4_4_IV1` writes them)
/// copies, serves that index byte for byte, and reads by offset as any other.
#[tokio::test]
async fn an_offset_index_of_12_byte_entries_copies_and_is_served_as_it_is() {
    use crate::format::partition::LocalPartition;
    use crate::testkit::log_writer::{PartitionWriter, Record};
    let tmp = tempfile::tempdir().unwrap();
    let mut w = PartitionWriter::create(&tmp.path().join("long-0"), Uuid::random(), 256 << 10, 4096).unwrap();
    w.long_index_entries();
    for i in 0..3_000i64 {
        let value = Some(vec![i as u8; 300]);
        w.append(&[Record { key: None, value, headers: vec![], timestamp: 1_700_000_000_000 + i }]).unwrap();
    }
    let partition = LocalPartition::open(&w.finish().unwrap()).unwrap();
    let seg = partition.closed_segments()[1].clone();
    let md = partition.segment_metadata(&seg, 1, 1_700_000_000_000).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let local = std::fs::read(&data.offset_index).unwrap();
    // Entries of 12 bytes, as many as there are 4 KiB steps in the segment's 256 KiB, so not 8-byte ones.
    assert!(local.len().is_multiple_of(12) && local.len() / 12 > 50, "{} bytes", local.len());
    let entries =
        crate::format::index::read_offset_index("local", md.start_offset, &local, md.segment_size_in_bytes as u64)
            .unwrap();
    assert_eq!(entries.len(), local.len() / 12);

    let f = Fixture::new(Arc::new(MemoryBackend::new()), "long-index");
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let rsm = f.fresh_rsm();
    assert_eq!(rsm.fetch_index(&md, IndexType::Offset).await.unwrap(), local, "served as the broker wrote it");
    // Each entry's offset is found at the batch the index names (one record a batch here).
    for e in [entries[0], entries[entries.len() / 2], entries[entries.len() - 1]] {
        assert_eq!(rsm.position_of_offset(&md, e.offset).await.unwrap() as u64, e.position, "{e:?}");
    }
}
