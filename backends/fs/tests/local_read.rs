//! Fetches read straight from the filesystem store's object files into the caller's buffer
//! (`TieredStorage::local_log_reader`): the bytes of every start, end and buffer size are the segment's own
//! (read from the partition's `.log`, not through the SDK), a damaged block fails the read that reaches it as
//! corrupt and naming it, and the reader is used only where it may be (a segment stored as it is, no
//! fault layer, with or without a chunk cache); each of its reads counts as one get in the counting layer.

use futures::StreamExt;
use rsm_backend_fs::FsBackend;
use rsm_core::backend::layers::{CountingLayer, FaultLayer};
use rsm_core::backend::{Op, StorageBackend};
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::transform::CompressionConfig;
use rsm_core::storage::{LocalLogReader, LogRead};
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::{ErrorKind, RemoteLogSegmentMetadata, RemoteStorageManager, TieredConfig, TieredStorage, Uuid};
use std::path::PathBuf;
use std::sync::Arc;

const BLOCK: usize = 4 << 10;

/// A copied segment: the store, its metadata, the original log bytes, the stored log object's path.
struct Copied {
    _tmp: tempfile::TempDir,
    backend: Arc<dyn StorageBackend>,
    md: RemoteLogSegmentMetadata,
    log: Vec<u8>,
    stored_log: PathBuf,
}

async fn copied(config: TieredConfig) -> Copied {
    let tmp = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 200 << 10,
        records: 3000,
        records_per_batch: 8,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 3,
        compression: None,
    };
    let dir = generate_partition(&tmp.path().join("t-0"), &spec).unwrap();
    let partition = LocalPartition::open(&dir).unwrap();
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let backend: Arc<dyn StorageBackend> = Arc::new(FsBackend::create(tmp.path().join("store"), false).unwrap());
    TieredStorage::new(backend.clone(), config).copy_log_segment_data(&md, &data).await.unwrap();
    let log = std::fs::read(&data.log_segment).unwrap();
    let stored_log = rsm_core::testkit::files_under(&tmp.path().join("store"))
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(".log"))
        .unwrap();
    Copied { _tmp: tmp, backend, md, log, stored_log }
}

/// Small chunks and blocks, so a segment has many of each.
fn plain() -> TieredConfig {
    TieredConfig { chunk_size: 32 << 10, block_size: BLOCK as u32, ..TieredConfig::default() }
}

/// Everything a reader serves, read with buffers of `size` bytes.
fn drain(r: &mut LocalLogReader, size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; size];
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            return out;
        }
        assert!(n <= size);
        out.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_start_end_and_buffer_size_serves_the_segments_own_bytes() {
    let c = copied(plain()).await;
    let rsm = TieredStorage::new(c.backend.clone(), plain());
    let len = c.log.len();
    assert!(len > 40 * BLOCK, "{len} bytes: many blocks");
    // (start, end inclusive or None, buffer sizes): block starts and middles, chunk edges, the last byte.
    let ends: [(usize, Option<usize>); 7] = [
        (0, None),
        (1, None),
        (BLOCK, Some(3 * BLOCK - 1)),
        (BLOCK + 17, Some(5 * BLOCK + 3)),
        ((32 << 10) - 1, Some((32 << 10) + 1)),
        (len / 2 + 5, Some(len / 2 + 5)),
        (len - 1, None),
    ];
    for (start, end) in ends {
        for size in [1, 7, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5, 1 << 20] {
            let mut r = rsm
                .local_log_reader(&c.md, start as i64, end.map(|e| e as i64))
                .await
                .unwrap()
                .expect("a segment stored as it is, on local files");
            let want = &c.log[start..end.map_or(len, |e| e + 1)];
            let got = drain(&mut r, size);
            assert!(got == want, "{start}..{end:?} with {size}-byte reads: {} bytes, want {}", got.len(), want.len());
        }
    }
    // The same positions are refused as the streamed fetch refuses them.
    for (start, end) in [(-1, None), (len as i64, None), (10, Some(9))] {
        let local = rsm.local_log_reader(&c.md, start, end).await.unwrap_err();
        let streamed = rsm.fetch_log_segment(&c.md, start, end).await.err().unwrap();
        assert_eq!((local.kind(), local.message()), (streamed.kind(), streamed.message()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_block_fails_the_read_that_reaches_it_and_nothing_before() {
    let c = copied(plain()).await;
    let rsm = TieredStorage::new(c.backend.clone(), plain());
    let mut stored = std::fs::read(&c.stored_log).unwrap();
    let at = 10 * BLOCK + 100;
    stored[at] ^= 0x40;
    std::fs::write(&c.stored_log, &stored).unwrap();

    // Blocks are cut within chunks, and chunks on batch boundaries: the damaged one, from the manifest.
    let block = rsm.manifest(&c.md).await.unwrap().align(at as u64..at as u64 + 1);
    let mut r = rsm.local_log_reader(&c.md, 0, None).await.unwrap().unwrap();
    let mut buf = vec![0u8; 4 * BLOCK];
    let mut served = Vec::new();
    let e = loop {
        match r.read(&mut buf) {
            Ok(n) => {
                assert!(n > 0, "the end before the damaged block");
                served.extend_from_slice(&buf[..n]);
            }
            Err(e) => break e,
        }
    };
    assert!(served.len() as u64 <= block.start, "nothing of the damaged block served: {}", served.len());
    assert!(served.len() as u64 + 4 * BLOCK as u64 > block.start, "the read that reached it failed");
    assert_eq!(served[..], c.log[..served.len()], "what was served before it is the segment's");
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    let named = format!("block {}..{}", block.start, block.end);
    assert!(e.message().contains(&named) && e.message().contains(".log"), "{e}");
    // A read of one byte inside it fails too: the block is checked whole.
    let mut one = rsm.local_log_reader(&c.md, at as i64, Some(at as i64)).await.unwrap().unwrap();
    assert_eq!(one.read(&mut [0u8; 1]).unwrap_err().kind(), ErrorKind::Corrupt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skips_count_what_was_held_first_and_stop_at_the_end() {
    let c = copied(plain()).await;
    let rsm = TieredStorage::new(c.backend.clone(), plain());
    let mut r = rsm.local_log_reader(&c.md, 10, Some(3 * BLOCK as i64)).await.unwrap().unwrap();
    let mut two = [0u8; 2];
    assert_eq!(r.read(&mut two).unwrap(), 2, "a block read whole, two bytes served");
    assert_eq!(r.buffered(), BLOCK - 12);
    assert_eq!(r.skip(BLOCK as u64), BLOCK as u64);
    assert_eq!(r.read(&mut two).unwrap(), 2);
    assert_eq!(two[..], c.log[10 + 2 + BLOCK..10 + 4 + BLOCK]);
    assert_eq!(r.skip(u64::MAX), 3 * BLOCK as u64 + 1 - (10 + 4 + BLOCK) as u64);
    assert_eq!(r.read(&mut two).unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_for_plain_segments_without_faults_and_each_read_is_counted() {
    let c = copied(plain()).await;
    // With a chunk cache too: over local files, a plain segment's chunks are never kept (the page cache
    // holds them), neither by the local reader nor by a streamed fetch, sequential or not.
    let cached = TieredConfig { fetch_cache_bytes: 16 << 20, ..plain() };
    let rsm = TieredStorage::new(c.backend.clone(), cached);
    let mut r = rsm.local_log_reader(&c.md, 0, None).await.unwrap().expect("read from the file, cache or not");
    assert_eq!(drain(&mut r, 4 * BLOCK), c.log[..]);
    for (start, end) in [(0, 3 * BLOCK), (3 * BLOCK, 9 * BLOCK), (BLOCK + 7, 2 * BLOCK)] {
        let got = rsm.fetch_log_segment(&c.md, start as i64, Some(end as i64 - 1)).await.unwrap();
        let got: Vec<u8> = got.map(|b| b.unwrap().to_vec()).concat().await;
        assert_eq!(got[..], c.log[start..end], "{start}..{end}");
    }
    let s = rsm.chunk_cache_stats().unwrap();
    assert_eq!((s.loads, s.prefetched, s.memory.entries, s.memory.hits), (0, 0, 0, 0), "{s:?}");
    assert_eq!(s.bypassed, 3, "{s:?}");
    // Faults are injected in get_range: a fault layer sends every read there.
    let faulty: Arc<dyn StorageBackend> = Arc::new(FaultLayer::new(c.backend.clone()));
    assert!(TieredStorage::new(faulty, plain()).local_log_reader(&c.md, 0, None).await.unwrap().is_none());
    // The counting layer counts each read as one get of its bytes.
    let counting = Arc::new(CountingLayer::new(c.backend.clone()));
    let counts = counting.counts();
    let rsm = TieredStorage::new(counting, plain());
    let mut r = rsm.local_log_reader(&c.md, 0, Some(8 * BLOCK as i64 - 1)).await.unwrap().unwrap();
    let before = counts.snapshot();
    assert_eq!(drain(&mut r, 4 * BLOCK), c.log[..8 * BLOCK]);
    let gets = counts.snapshot().since(&before).get(Op::Get);
    // Each byte is read once: whole blocks into the caller's buffer, and the block the fetch ends inside
    // read whole once.
    assert!(gets.requests >= 2, "{gets:?}");
    let served = 8 * BLOCK as u64;
    assert!(gets.bytes_received >= served && gets.bytes_received < served + BLOCK as u64, "{gets:?}");

    // A compressed segment is streamed.
    let compressed = TieredConfig { compression: Some(CompressionConfig::default()), ..plain() };
    let z = copied(compressed.clone()).await;
    let rsm = TieredStorage::new(z.backend.clone(), compressed);
    let transformed = rsm.manifest(&z.md).await.unwrap().chunks.iter().any(|c| c.is_transformed());
    assert!(transformed, "the generated values compress");
    assert!(rsm.local_log_reader(&z.md, 0, None).await.unwrap().is_none());
    // `open_read` decides the same, once: a stream of the compressed segment, a local read of the plain one.
    assert!(matches!(rsm.open_read(&z.md, 0, None).await.unwrap(), LogRead::Stream(_)));
    let rsm = TieredStorage::new(c.backend.clone(), plain());
    match rsm.open_read(&c.md, BLOCK as i64 + 7, None).await.unwrap() {
        LogRead::Local(mut r) => assert_eq!(drain(&mut r, 4 * BLOCK), c.log[BLOCK + 7..]),
        LogRead::Stream(_) => panic!("a plain segment over local files is read from its file"),
    }
    let e = rsm.open_read(&c.md, c.log.len() as i64, None).await.unwrap_err();
    assert!(e.to_string().contains("outside segment"), "positions checked as a fetch checks them: {e}");
}
