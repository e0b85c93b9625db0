//! The chunk cache's disk tier and its sharing within a process, through `TieredStorage::open` as a host
//! opens stores: a restart keeps the disk tier and reads from it without a request; a damaged cache file,
//! whatever byte is damaged, is dropped and the chunk fetched again, never served; storage managers with the
//! same settings share one cache, and different stores never meet in it; a random read that misses costs
//! what it would without a cache (the second miss too: the chunk is loaded behind it), and a disk hit reads
//! only the blocks asked for and writes nothing; over local files a reader never waits for a chunk's load.
//!
//! A chunk enters the cache on its second miss (or for a sequential reader): a whole-segment fetch reads its
//! first piece around the cache, so the tests below fetch twice to fill it.

use rsm_core::backend::layers::{Fault, FaultLayer, FaultRule};
use rsm_core::backend::{CountingLayer, MemoryBackend, Op, RequestCounts, StorageBackend};
use rsm_core::format::manifest::Manifest;
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::transform::CompressionConfig;
use rsm_core::storage::{BackendChunks, ChunkSource, DiskCacheConfig};
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::{LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager, TieredConfig, TieredStorage, Uuid};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

struct Segment {
    _tmp: tempfile::TempDir,
    md: RemoteLogSegmentMetadata,
    data: LogSegmentData,
    log: Vec<u8>,
}

fn segment(bytes: usize, seed: u64) -> Segment {
    let tmp = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: bytes,
        records: (bytes / 40) as u64,
        records_per_batch: 8,
        value_bytes: 60,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 10,
        seed,
        compression: None,
    };
    let dir = generate_partition(&tmp.path().join("t-0"), &spec).unwrap();
    let partition = LocalPartition::open(&dir).unwrap();
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let log = std::fs::read(&data.log_segment).unwrap();
    Segment { _tmp: tmp, md, data, log }
}

fn config(memory: u64, disk: &Path) -> TieredConfig {
    TieredConfig {
        chunk_size: 64 << 10,
        block_size: 4 << 10,
        fetch_cache_bytes: memory,
        fetch_prefetch_chunks: 0,
        fetch_cache_disk: Some(DiskCacheConfig { path: disk.to_path_buf(), capacity_bytes: 64 << 20 }),
        ..TieredConfig::default()
    }
}

fn log_gets(counts: &RequestCounts) -> u64 {
    counts.snapshot().get(Op::Get).requests
}

fn cache_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "chunk"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_disk_tier_survives_a_restart_and_serves_without_a_request() {
    let seg = segment(300 << 10, 1);
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let backend: Arc<dyn StorageBackend> = counting;
    let disk = tempfile::tempdir().unwrap();
    let cfg = config(8 << 20, disk.path());

    let rsm = TieredStorage::open(backend.clone(), cfg.clone(), "memory:one").unwrap();
    rsm.copy_log_segment_data(&seg.md, &seg.data).await.unwrap();
    for _ in 0..2 {
        assert!(collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    }
    let chunks = rsm.manifest(&seg.md).await.unwrap().chunks.len();
    assert!(chunks >= 4, "several chunks: {chunks}");
    rsm.chunk_cache().unwrap().flush().await;
    assert_eq!(cache_files(disk.path()).len(), chunks, "each chunk is a file");
    drop(rsm);

    // A restart: a new cache (the old one went with its last storage manager) over the same directory.
    let rsm = TieredStorage::open(backend.clone(), cfg.clone(), "memory:one").unwrap();
    rsm.manifest(&seg.md).await.unwrap();
    let before = log_gets(&counts);
    assert!(collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    assert_eq!(log_gets(&counts) - before, 0, "every chunk came from disk");
    let s = rsm.chunk_cache_stats().unwrap();
    assert_eq!((s.disk.hits, s.loads, s.disk.entries), (chunks as u64, 0, chunks as u64), "{s:?}");
    // And from disk again the second time: a disk hit reads its blocks from the file, it does not fill memory.
    assert!(collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    let s = rsm.chunk_cache_stats().unwrap();
    assert_eq!((s.disk.hits, s.memory.entries, log_gets(&counts) - before), (2 * chunks as u64, 0, 0), "{s:?}");

    // A second opening of the same directory with other settings in this process is refused by name.
    let other = TieredConfig { fetch_cache_bytes: 4 << 20, ..cfg.clone() };
    let e = TieredStorage::open(backend.clone(), other, "memory:one").unwrap_err();
    assert_eq!(e.config_key(), Some("fetch.cache.disk.path"), "{e}");

    // A deleted segment leaves nothing in either tier.
    rsm.delete_log_segment_data(&seg.md).await.unwrap();
    let s = rsm.chunk_cache_stats().unwrap();
    assert_eq!((s.memory.entries, s.disk.entries), (0, 0), "{s:?}");
    assert!(cache_files(disk.path()).is_empty(), "its files are gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_damaged_byte_of_a_cache_file_is_dropped_and_fetched_again() {
    let seg = segment(8 << 10, 2);
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let disk = tempfile::tempdir().unwrap();
    // No memory tier: every read goes to the disk file.
    let rsm = TieredStorage::open(counting.clone(), config(0, disk.path()), "memory:damage").unwrap();
    rsm.copy_log_segment_data(&seg.md, &seg.data).await.unwrap();
    for _ in 0..2 {
        assert!(collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    }
    let cache = rsm.chunk_cache().unwrap().clone();
    cache.flush().await;
    let files = cache_files(disk.path());
    assert_eq!(files.len(), 1, "one chunk: {files:?}");
    let good = std::fs::read(&files[0]).unwrap();
    assert!(good == seg.log, "the file holds the chunk's original bytes");

    for i in 0..good.len() {
        let mut damaged = good.clone();
        damaged[i] ^= 0xff;
        std::fs::write(&files[0], &damaged).unwrap();
        let (dropped, gets) = (cache.stats().disk_dropped, log_gets(&counts));
        let got = collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await;
        assert!(got.unwrap() == seg.log, "byte {i}: the original bytes");
        assert_eq!(cache.stats().disk_dropped, dropped + 1, "byte {i}: the damaged file was dropped");
        assert_eq!(log_gets(&counts), gets + 1, "byte {i}: and the chunk fetched again");
        cache.flush().await;
        assert!(std::fs::read(&files[0]).unwrap() == good, "byte {i}: a good copy replaced it");
    }
    // A truncated file, and one gone behind the cache's back, too.
    std::fs::write(&files[0], &good[..good.len() - 1]).unwrap();
    assert!(collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    cache.flush().await;
    std::fs::remove_file(&files[0]).unwrap();
    assert!(collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managers_with_the_same_settings_share_one_cache_and_stores_stay_apart() {
    let seg = segment(200 << 10, 3);
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let disk = tempfile::tempdir().unwrap();
    let cfg = config(8 << 20, disk.path());
    let a = TieredStorage::open(counting.clone(), cfg.clone(), "memory:shared").unwrap();
    a.copy_log_segment_data(&seg.md, &seg.data).await.unwrap();
    for _ in 0..2 {
        assert!(collect(a.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    }

    let b = TieredStorage::open(counting.clone(), cfg.clone(), "memory:shared").unwrap();
    b.manifest(&seg.md).await.unwrap();
    let before = log_gets(&counts);
    assert!(collect(b.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    assert_eq!(log_gets(&counts), before, "the second manager reads the first one's cache");
    assert_eq!(a.chunk_cache_stats(), b.chunk_cache_stats(), "one cache, one set of counts");

    // Another store, same segment id: its own entries, read from its own store.
    let c = TieredStorage::open(counting.clone(), cfg, "memory:elsewhere").unwrap();
    c.manifest(&seg.md).await.unwrap();
    let before = log_gets(&counts);
    assert!(collect(c.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap() == seg.log);
    assert!(log_gets(&counts) > before, "another store's chunks are not this one's");
}

/// How the storage manager reading the first segment knows of the second.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Successor {
    /// A fresh manager: it has met neither segment, so it lists the store to find the next one.
    Listed,
    /// A fresh manager told of the second segment by its host (as the engine does from its metadata).
    Noted,
    /// The manager that copied both: it knows the second segment and holds its manifest.
    Copied,
}

/// A sequential reader nearing a segment's end gets the next segment's manifest and first chunks ahead,
/// so its first fetch of the next segment reads nothing from the store; the next segment is found by a
/// listing only when the manager has not met it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_reader_nearing_a_segments_end_gets_the_next_segment_ahead() {
    // (how, listings, reads of the second segment's manifest) during the first segment's read.
    let cases = [(Successor::Listed, 1, 1), (Successor::Noted, 0, 1), (Successor::Copied, 0, 0)];
    for (how, lists_expected, manifest_reads) in cases {
        next_segment_ahead(how, lists_expected, manifest_reads).await;
    }
}

async fn next_segment_ahead(how: Successor, lists_expected: u64, manifest_reads: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 256 << 10,
        records: 16_000,
        records_per_batch: 8,
        value_bytes: 60,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 10,
        seed: 4,
        compression: None,
    };
    let partition = LocalPartition::open(&generate_partition(&tmp.path().join("t-0"), &spec).unwrap()).unwrap();
    let segs: Vec<_> = partition.closed_segments().iter().take(2).cloned().collect();
    assert_eq!(segs.len(), 2, "two closed segments");
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    // Reads of manifests, counted by a rule that matches them and does nothing to them.
    let manifests = Arc::new(FaultLayer::new(counting.clone()).with_rule(FaultRule {
        op: Some(Op::Get),
        key: "*.manifest".into(),
        fault: Fault::Delay(std::time::Duration::ZERO),
        times: None,
    }));
    let disk = tempfile::tempdir().unwrap();
    let cfg = TieredConfig { fetch_prefetch_chunks: 2, ..config(8 << 20, disk.path()) };
    let store = format!("memory:next:{how:?}");
    let rsm = TieredStorage::open(manifests.clone(), cfg, &store).unwrap();
    let mds: Vec<_> = segs.iter().map(|s| partition.segment_metadata(s, 1, 0).unwrap()).collect();
    for (s, md) in segs.iter().zip(&mds) {
        rsm.copy_log_segment_data(md, &partition.segment_data(s).unwrap()).await.unwrap();
    }
    let reader = match how {
        Successor::Copied => rsm,
        Successor::Listed | Successor::Noted => {
            // A fresh manager: no manifest cached by the copies, no segment met.
            let cfg = rsm.config().clone();
            drop(rsm);
            let fresh = TieredStorage::open(manifests.clone(), cfg, &store).unwrap();
            if how == Successor::Noted {
                fresh.note_segment(&mds[1]);
            }
            fresh
        }
    };
    let what = format!("{how:?}");

    // A random read of the first segment's last chunk: no look ahead.
    let len = std::fs::metadata(&partition.segment_data(&segs[0]).unwrap().log_segment).unwrap().len() as i64;
    collect(reader.fetch_log_segment(&mds[0], len - 100, None).await.unwrap()).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let lists = || counts.snapshot().get(Op::List).requests;
    let manifest_gets = || manifests.injected() as u64;
    assert_eq!(lists(), 0, "{what}: a random reader is not read ahead");
    let manifests_before = manifest_gets();

    // A catch-up reader: fetches one after another to the end.
    let mut pos = 0;
    while pos < len {
        collect(reader.fetch_log_segment(&mds[0], pos, Some(pos + 40_000)).await.unwrap()).await.unwrap();
        pos += 40_001;
    }
    let before = reader.manifest_cache_stats().hits;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(lists(), lists_expected, "{what}: listings for the next segment");
    assert_eq!(manifest_gets() - manifests_before, manifest_reads, "{what}: reads of the next segment's manifest");
    let gets = counts.snapshot().get(Op::Get).requests;
    reader.manifest(&mds[1]).await.unwrap();
    assert_eq!(counts.snapshot().get(Op::Get).requests, gets, "{what}: the next segment's manifest was read ahead");
    assert_eq!(reader.manifest_cache_stats().hits, before + 1, "{what}");
    // And its first chunks: the reader's first fetch of the next segment reads nothing from the store.
    let next = reader.manifest(&mds[1]).await.unwrap();
    let first = next.chunks[0].data_length as i64;
    let got = collect(reader.fetch_log_segment(&mds[1], 0, Some(first - 1)).await.unwrap()).await.unwrap();
    let log = std::fs::read(&partition.segment_data(&segs[1]).unwrap().log_segment).unwrap();
    assert!(got == log[..first as usize], "{what}");
    assert_eq!(counts.snapshot().get(Op::Get).requests, gets, "{what}: no cold read at the segment boundary");
}

/// A random read that misses reads only the blocks it asked for, as it would without a cache; when missed
/// again, the chunks it touched are loaded whole in the background while it reads its blocks, then served
/// from memory; with only a disk tier, a hit
/// reads the blocks it serves from the file and writes nothing to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_random_miss_costs_what_no_cache_costs_and_a_disk_hit_writes_nothing() {
    let seg = segment(600 << 10, 4);
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let disk = tempfile::tempdir().unwrap();
    let rsm = TieredStorage::open(counting.clone(), config(8 << 20, disk.path()), "memory:random").unwrap();
    rsm.copy_log_segment_data(&seg.md, &seg.data).await.unwrap();
    let manifest = rsm.manifest(&seg.md).await.unwrap();
    // About 100 KiB from the middle of a chunk (past its first block): two chunks touched, neither whole.
    let (start, end) = (manifest.chunks[3].original_position() + 5000, manifest.chunks[3].end() + 40_000);
    let blocks = manifest.align(start..end);
    let fetch = || async {
        let got = collect(rsm.fetch_log_segment(&seg.md, start as i64, Some(end as i64 - 1)).await.unwrap()).await;
        assert!(got.unwrap() == seg.log[start as usize..end as usize]);
    };
    let received = || counts.snapshot().get(Op::Get).bytes_received;

    let (before, gets) = (received(), log_gets(&counts));
    fetch().await;
    assert_eq!(received() - before, blocks.end - blocks.start, "only the blocks asked for");
    assert_eq!(log_gets(&counts) - gets, 1, "in one ranged read across the chunk boundary, as without a cache");
    let s = rsm.chunk_cache_stats().unwrap();
    assert_eq!((s.bypassed, s.loads, s.memory.entries), (1, 0, 0), "{s:?}");

    // Missed again: the reader reads its blocks as before, and both chunks are loaded whole behind it.
    let (before, gets) = (received(), log_gets(&counts));
    fetch().await;
    rsm.chunk_cache().unwrap().flush().await;
    let whole = manifest.chunks[3].data_length as u64 + manifest.chunks[4].data_length as u64;
    assert_eq!(received() - before, blocks.end - blocks.start + whole, "its blocks, then both chunks whole");
    assert_eq!(log_gets(&counts) - gets, 3, "one ranged read for the reader, one per chunk loaded");
    let (gets, s) = (log_gets(&counts), rsm.chunk_cache_stats().unwrap());
    assert_eq!((s.bypassed, s.loads, s.memory.entries), (2, 2, 2), "{s:?}");
    fetch().await;
    assert_eq!(log_gets(&counts), gets, "then from memory");

    // A disk-only cache: the chunks' files, read in part, never rewritten nor touched.
    rsm.chunk_cache().unwrap().flush().await;
    drop(rsm);
    let disk_only = TieredStorage::open(counting.clone(), config(0, disk.path()), "memory:random").unwrap();
    disk_only.manifest(&seg.md).await.unwrap();
    let files = cache_files(disk.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let times: Vec<_> = files.iter().map(|f| std::fs::metadata(f).unwrap().modified().unwrap()).collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let gets = log_gets(&counts);
    let got = collect(disk_only.fetch_log_segment(&seg.md, start as i64, Some(end as i64 - 1)).await.unwrap()).await;
    assert!(got.unwrap() == seg.log[start as usize..end as usize]);
    assert_eq!(log_gets(&counts), gets, "from the disk tier");
    assert_eq!(disk_only.chunk_cache_stats().unwrap().disk.hits, 2);
    let after: Vec<_> = files.iter().map(|f| std::fs::metadata(f).unwrap().modified().unwrap()).collect();
    assert_eq!(times, after, "a hit writes nothing");
}

/// A memory tier of one chunk beside a disk tier: a quarter of it (the bound on bytes loaded in the
/// background) is less than a chunk, yet a random reader's second miss still loads the chunk when no other
/// load is in flight, so the disk tier fills and the next read is a disk hit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_tier_smaller_than_four_chunks_still_fills() {
    let seg = segment(600 << 10, 4);
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let disk = tempfile::tempdir().unwrap();
    let rsm = TieredStorage::open(counting.clone(), config(64 << 10, disk.path()), "memory:small").unwrap();
    rsm.copy_log_segment_data(&seg.md, &seg.data).await.unwrap();
    let manifest = rsm.manifest(&seg.md).await.unwrap();
    let len = manifest.chunks[2].data_length as u64;
    assert!(len > (64 << 10) / 4 && len <= 64 << 10, "a chunk fits the tier and passes its bound: {len}");
    let (start, end) = (manifest.chunks[2].original_position() + 5000, manifest.chunks[2].original_position() + 9000);
    let fetch = || async {
        let got = collect(rsm.fetch_log_segment(&seg.md, start as i64, Some(end as i64 - 1)).await.unwrap()).await;
        assert!(got.unwrap() == seg.log[start as usize..end as usize]);
    };
    fetch().await;
    fetch().await;
    rsm.chunk_cache().unwrap().flush().await;
    let s = rsm.chunk_cache_stats().unwrap();
    assert_eq!((s.bypassed, s.loads), (2, 1), "the second miss loaded the chunk: {s:?}");
    assert_eq!(cache_files(disk.path()).len(), 1, "and the disk tier has it");
    let gets = log_gets(&counts);
    fetch().await;
    assert_eq!(log_gets(&counts), gets, "the third read is served by the cache");
}

/// A load in the background (here read-ahead, hung in the store) that never ends because its runtime shut
/// down gives back its share of the bounds: `flush` on another runtime returns rather than waiting for it
/// forever, and the cache loads the chunk again for the next reader.
#[test]
fn a_background_load_dropped_by_a_runtime_shutting_down_is_not_waited_for() {
    let seg = segment(300 << 10, 5);
    let faults = Arc::new(FaultLayer::new(Arc::new(MemoryBackend::new())));
    let disk = tempfile::tempdir().unwrap();
    let cfg = TieredConfig { fetch_prefetch_chunks: 2, ..config(8 << 20, disk.path()) };
    let first = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (rsm, manifest) = first.block_on(async {
        let rsm = TieredStorage::open(faults.clone(), cfg, "memory:shutdown").unwrap();
        rsm.copy_log_segment_data(&seg.md, &seg.data).await.unwrap();
        let manifest = rsm.manifest(&seg.md).await.unwrap();
        (rsm, manifest)
    });
    let cache = rsm.chunk_cache().unwrap().clone();
    let hang = FaultRule { op: Some(Op::Get), key: "*.log".into(), fault: Fault::Hang, times: None };
    faults.add_rule(hang);
    let direct = Arc::new(rsm_core::storage::BackendChunks::new(faults.clone(), String::new()));
    let ahead = cache.over(direct, "memory:shutdown", String::new());
    let gets = faults.calls(Op::Get);
    first.block_on(async {
        ahead.read_ahead_from_start(&manifest);
        // Let the loads start and hang in the store.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    });
    assert!(faults.calls(Op::Get) > gets, "the read-ahead reached the store");
    drop(first);

    faults.clear();
    let second = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    second.block_on(async {
        let flushed = tokio::time::timeout(std::time::Duration::from_secs(10), cache.flush()).await;
        assert!(flushed.is_ok(), "flush waited for loads that will never end");
        let got = collect(rsm.fetch_log_segment(&seg.md, 0, None).await.unwrap()).await.unwrap();
        assert!(got == seg.log, "the chunks load again");
    });
}

/// A source whose whole-chunk reads (a cache's loads) never end, counted; other reads go to `inner`.
#[derive(Debug)]
struct WholeChunkLoadsHang {
    inner: Arc<dyn ChunkSource>,
    loads: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl ChunkSource for WholeChunkLoadsHang {
    async fn read(&self, m: &Arc<Manifest>, range: Range<u64>) -> rsm_core::Result<bytes::Bytes> {
        if m.chunks.iter().any(|c| c.original_position() == range.start && c.end() == range.end) {
            self.loads.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
        self.inner.read(m, range).await
    }

    fn checks(&self) -> bool {
        self.inner.checks()
    }
}

/// Over local files a compressed chunk's reader never waits for the chunk's load: a random reader that
/// meets it in flight reads only its own blocks. Here every whole-chunk load hangs in the store, so a read
/// that waited for one would never end. A random reader's miss starts no load while another runs (each load
/// takes a core from the readers), and a sequential reader loads nothing and reads nothing ahead (it reads
/// every block once anyway; a load would undo its chunk a second time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_local_files_a_reader_never_waits_for_a_chunks_load() {
    let seg = segment(600 << 10, 6);
    let backend = Arc::new(MemoryBackend::new());
    let disk = tempfile::tempdir().unwrap();
    let compression = CompressionConfig { heuristic: false, frame_size: 16 << 10, ..CompressionConfig::default() };
    let cfg = TieredConfig {
        compression: Some(compression),
        fetch_cache_disk: None,
        fetch_prefetch_chunks: 2,
        ..config(8 << 20, disk.path())
    };
    let rsm = TieredStorage::open(backend.clone(), cfg, "memory:local").unwrap();
    rsm.copy_log_segment_data(&seg.md, &seg.data).await.unwrap();
    let manifest = rsm.manifest(&seg.md).await.unwrap();
    assert!(manifest.chunks.iter().all(|c| c.is_transformed()), "every chunk compressed");
    let direct = Arc::new(BackendChunks::new(backend.clone(), String::new()));
    let cache = rsm.chunk_cache().unwrap().clone();
    let loads = Arc::new(AtomicUsize::new(0));
    let hang = WholeChunkLoadsHang { inner: direct, loads: loads.clone() };
    let local = cache.over(Arc::new(hang), "memory:local", String::new());
    let local = local.over_local_files(true);
    let (local, manifest, log) = (&local, &manifest, &seg.log);
    let read = |range: Range<u64>| async move {
        let got = tokio::time::timeout(Duration::from_secs(10), local.read(manifest, range.clone())).await;
        let got = got.unwrap_or_else(|_| panic!("the read of {range:?} waited for a chunk's load"));
        assert!(got.unwrap() == log[range.start as usize..range.end as usize], "bytes {range:?}");
    };

    // A random reader: its first miss marks chunk 3, its second starts the chunk's load (which hangs), the
    // third meets that load in flight and reads its own blocks.
    let c = manifest.chunks[3].original_position();
    for _ in 0..3 {
        read(c + 5000..c + 30_000).await;
    }
    let s = cache.stats();
    assert_eq!((s.bypassed, s.loads, s.memory.entries), (3, 0, 0), "{s:?}");
    // A load runs as a task of its own: wait for it to reach the store (reads are undone in place and do not
    // yield to it).
    let loads = &loads;
    let started = |n: usize| async move {
        for _ in 0..1000 {
            if loads.load(Ordering::SeqCst) >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        loads.load(Ordering::SeqCst)
    };
    assert_eq!(started(1).await, 1, "chunk 3's load, started by its second miss");

    // Chunk 7 missed twice by a random reader while chunk 3's load runs: read around, no second load.
    let c = manifest.chunks[7].original_position();
    for _ in 0..2 {
        read(c + 4096..c + 20_000).await;
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1, "no load of chunk 7 beside chunk 3's");

    // A sequential reader: chunk 5 read on from where its previous read ended, with read-ahead set. Each
    // read takes its own blocks; no chunk is loaded, neither its own nor the next ones.
    let c = manifest.chunks[5].original_position();
    for k in 0..3 {
        read(c + 100 + k * 15_000..c + 100 + (k + 1) * 15_000).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = cache.stats();
    assert_eq!((s.bypassed, s.loads, s.prefetched, s.memory.entries), (8, 0, 0, 0), "{s:?}");
    assert_eq!(loads.load(Ordering::SeqCst), 1, "a sequential reader loaded a chunk");
}
