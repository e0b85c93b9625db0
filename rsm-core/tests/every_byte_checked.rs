//! Every byte of a small stored segment (its log, its index bundle, its manifest) damaged in turn, one at a
//! time, and the segment read back through every path (the whole log, a position range, by offset, by
//! timestamp, each index): each read returns the original bytes or fails as corrupt, never anything else;
//! with its chunks stored as they are, and compressed.

use bytes::Bytes;
use rsm_core::backend::{MemoryBackend, StorageBackend};
use rsm_core::format::batch::BatchIter;
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::transform::CompressionConfig;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::{
    ErrorKind, IndexType, RemoteLogSegmentMetadata, RemoteStorageManager, Result, TieredConfig, TieredStorage, Uuid,
};
use std::sync::Arc;

/// What every path returns on the undamaged segment.
#[derive(Debug, PartialEq)]
struct Reads {
    whole: Vec<u8>,
    range: Vec<u8>,
    by_offset: (u64, Vec<u8>),
    by_timestamp: Option<u64>,
    indexes: Vec<Option<Bytes>>,
}

/// One outcome per path: its value, or the kind of its error.
type Outcome<T> = std::result::Result<T, ErrorKind>;

struct Read {
    whole: Outcome<Vec<u8>>,
    range: Outcome<Vec<u8>>,
    by_offset: Outcome<(u64, Vec<u8>)>,
    by_timestamp: Outcome<Option<u64>>,
    indexes: Vec<Outcome<Option<Bytes>>>,
}

fn kind<T>(r: Result<T>) -> Outcome<T> {
    r.map_err(|e| e.kind())
}

async fn read_all(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, at: (i64, i64), offset: i64, ts: i64) -> Read {
    let whole = match rsm.fetch_log_segment(md, 0, None).await {
        Ok(s) => kind(collect(s).await),
        Err(e) => Err(e.kind()),
    };
    let range = match rsm.fetch_log_segment(md, at.0, Some(at.1)).await {
        Ok(s) => kind(collect(s).await),
        Err(e) => Err(e.kind()),
    };
    let by_offset = match rsm.position_of_offset(md, offset).await {
        Ok(p) => match rsm.fetch_log_segment(md, p as i64, Some(p as i64 + 5000)).await {
            Ok(s) => kind(collect(s).await.map(|b| (p, b))),
            Err(e) => Err(e.kind()),
        },
        Err(e) => Err(e.kind()),
    };
    let by_timestamp = kind(rsm.position_of_timestamp(md, ts).await);
    let mut indexes = Vec::new();
    for t in IndexType::ALL {
        indexes.push(match rsm.fetch_index(md, t).await {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == ErrorKind::NotFound && t == IndexType::Transaction => Ok(None),
            Err(e) => Err(e.kind()),
        });
    }
    Read { whole, range, by_offset, by_timestamp, indexes }
}

/// Each path gave the original value or failed as corrupt; returns how many failed.
fn judge(what: &str, got: Read, want: &Reads) -> usize {
    fn one<T: PartialEq + std::fmt::Debug>(what: &str, path: &str, got: Outcome<T>, want: &T) -> usize {
        match got {
            Ok(v) => {
                assert!(&v == want, "{what}, {path}: different bytes returned with success");
                0
            }
            Err(ErrorKind::Corrupt) => 1,
            Err(k) => panic!("{what}, {path}: failed as {k}, not as corrupt"),
        }
    }
    let mut failed = one(what, "whole", got.whole, &want.whole)
        + one(what, "range", got.range, &want.range)
        + one(what, "by offset", got.by_offset, &want.by_offset)
        + one(what, "by timestamp", got.by_timestamp, &want.by_timestamp);
    for (i, (g, w)) in got.indexes.into_iter().zip(&want.indexes).enumerate() {
        failed += one(what, &format!("index {i}"), g, w);
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_damaged_byte_is_caught_or_harmless() {
    every_damaged_byte(None).await;
}

/// The same with the segment's chunks compressed (`compression.enabled`): every byte of the zstd frames is
/// covered too (the stored CRC, checked before decompression).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_damaged_byte_of_a_compressed_segment_is_caught_or_harmless() {
    every_damaged_byte(Some(CompressionConfig::default())).await;
}

async fn every_damaged_byte(compression: Option<CompressionConfig>) {
    let tmp = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 24 << 10,
        records: 400,
        records_per_batch: 8,
        value_bytes: 60,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 10,
        seed: 9,
        compression: None,
    };
    let dir = generate_partition(&tmp.path().join("t-0"), &spec).unwrap();
    let partition = LocalPartition::open(&dir).unwrap();
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    // Small chunks and blocks, so the segment has several of each.
    let config = TieredConfig { chunk_size: 64 << 10, block_size: 4 << 10, compression, ..TieredConfig::default() };
    let rsm = TieredStorage::new(backend.clone(), config.clone());
    rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let compressed = rsm.manifest(&md).await.unwrap().chunks.iter().filter(|c| c.is_transformed()).count();
    assert_eq!(compressed > 0, compression.is_some(), "{compressed} chunks compressed");
    let log = std::fs::read(&data.log_segment).unwrap();
    let batches: Vec<_> = BatchIter::new(&log, 0, true).map(|b| b.unwrap()).collect();
    let mid = &batches[batches.len() / 2];
    let at = (batches[batches.len() / 3].position() as i64, (mid.position() + 3000) as i64);
    let (offset, ts) = (mid.base_offset() + 1, mid.max_timestamp());

    let original = read_all(&rsm, &md, at, offset, ts).await;
    let want = Reads {
        whole: original.whole.unwrap(),
        range: original.range.unwrap(),
        by_offset: original.by_offset.unwrap(),
        by_timestamp: original.by_timestamp.unwrap(),
        indexes: original.indexes.into_iter().map(Result::unwrap).collect(),
    };
    assert!(want.whole == log, "the undamaged segment reads back whole");

    let keys = rsm.keys(&md);
    for key in [&keys.log, &keys.indexes, &keys.manifest] {
        let stored = backend.get_range(key, 0..u64::MAX).await.unwrap();
        let mut caught = 0;
        for i in 0..stored.len() {
            let mut damaged = stored.to_vec();
            damaged[i] ^= 0xff;
            backend.put_bytes(key, Bytes::from(damaged)).await.unwrap();
            // A fresh manager: no manifest cached from before the damage.
            let fresh = TieredStorage::new(backend.clone(), config.clone());
            let failed = judge(&format!("{key} byte {i}"), read_all(&fresh, &md, at, offset, ts).await, &want);
            caught += (failed > 0) as usize;
        }
        backend.put_bytes(key, stored.clone()).await.unwrap();
        // Every byte of each object is covered by a check on some path.
        assert_eq!(caught, stored.len(), "{key}: every damaged byte is caught by some read");
    }
}
