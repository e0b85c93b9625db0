//! Legacy message formats (magic 0 and 1, plain and gzip, snappy and lz4 wrappers, v1 with create and with
//! log-append time, and a segment mixing v0, v1 and v2 as an upgrade leaves it), from segments that
//! kafka-python wrote (`tools/legacy-segments.py`, an encoder no one here wrote). Each batch as kafka-python
//! reads it (`<name>.batches`) is what our reader must see; each segment is copied in small chunks and read
//! back by every path, byte for byte.

use bytes::Bytes;
use rsm_core::backend::MemoryBackend;
use rsm_core::format::batch::BatchIter;
use rsm_core::format::transform::CompressionConfig;
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::{
    LogSegmentData, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteStorageManager, TieredConfig, TieredStorage,
    TopicIdPartition, TopicPartition, Uuid,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

mod common;
use common::{CASES, Expected, data_dir, expected};

fn metadata(log: &[u8], batches: &[Expected]) -> RemoteLogSegmentMetadata {
    let tp = TopicIdPartition::new(Uuid::random(), TopicPartition::new("legacy", 0));
    let max_ts = batches.iter().map(|b| b.max_timestamp).max().unwrap();
    RemoteLogSegmentMetadata::new(
        RemoteLogSegmentId::generate_new(tp),
        batches[0].first_offset,
        batches.last().unwrap().last_offset,
        max_ts,
        0,
        0,
        log.len() as i32,
        BTreeMap::from([(0, batches[0].first_offset)]),
    )
    .unwrap()
}

fn segment_data(name: &str, dir: &Path) -> LogSegmentData {
    let snapshot = dir.join(format!("{name}.snapshot"));
    std::fs::write(&snapshot, b"").unwrap();
    let d = data_dir();
    LogSegmentData {
        log_segment: d.join(format!("{name}.log")),
        offset_index: d.join(format!("{name}.index")),
        time_index: d.join(format!("{name}.timeindex")),
        transaction_index: None,
        producer_snapshot_index: snapshot,
        leader_epoch_index: Bytes::new(),
    }
}

/// Small chunks and blocks, so that every segment has many chunks and a fetch crosses them; chunks
/// compressed as `compression` says.
fn storage(compression: Option<CompressionConfig>) -> TieredStorage {
    let config = TieredConfig { chunk_size: 4096, block_size: 1024, compression, ..TieredConfig::default() };
    TieredStorage::new(Arc::new(MemoryBackend::new()), config)
}

#[test]
fn our_reader_sees_each_batch_as_kafka_python_does() {
    for name in CASES {
        let log = std::fs::read(data_dir().join(format!("{name}.log"))).unwrap();
        let want = expected(name);
        let got: Vec<Expected> = BatchIter::new(&log, 0, true)
            .map(|b| b.unwrap_or_else(|e| panic!("{name}: {e}")))
            .zip(&want)
            .map(|(b, w)| Expected {
                position: b.position(),
                size: b.size(),
                magic: b.magic(),
                offset_field: b.base_offset(),
                // A wrapper's first offset is inside its compressed bytes, which we never open.
                first_offset: if b.is_legacy_wrapper() { w.first_offset } else { b.base_offset() },
                last_offset: b.last_offset(),
                records: if b.is_legacy_wrapper() { w.records } else { b.record_count() },
                max_timestamp: b.max_timestamp(),
                compression: b.compression(),
            })
            .collect();
        assert_eq!(got, want, "{name}");
        let wrappers = want.iter().filter(|w| w.magic < 2 && w.compression != 0).count();
        let counts_unknown =
            BatchIter::new(&log, 0, false).filter(|b| b.as_ref().unwrap().record_count() == -1).count();
        assert_eq!(counts_unknown, wrappers, "{name}: a wrapper's record count is unknown, never a guess");
    }
}

#[tokio::test]
async fn legacy_segments_round_trip_by_every_path() {
    // Stored as they are, and every chunk compressed (the heuristic off: wrappers are compressed already).
    let always = CompressionConfig { heuristic: false, ..CompressionConfig::default() };
    for compression in [None, Some(always)] {
        legacy_segments_round_trip(compression).await;
    }
}

async fn legacy_segments_round_trip(compression: Option<CompressionConfig>) {
    let tmp = tempfile::tempdir().unwrap();
    for name in CASES {
        let log = std::fs::read(data_dir().join(format!("{name}.log"))).unwrap();
        let batches = expected(name);
        let md = metadata(&log, &batches);
        let rsm = storage(compression);
        rsm.copy_log_segment_data(&md, &segment_data(name, tmp.path())).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = rsm.manifest(&md).await.unwrap();
        assert!(m.chunks.iter().all(|c| c.is_transformed() == compression.is_some()), "{name}: {compression:?}");

        // Chunks end on batch boundaries, claim no offset too high and the last offsets Kafka sees.
        let m = rsm.manifest(&md).await.unwrap();
        assert!(m.chunks.len() > 3, "{name}: {} chunks", m.chunks.len());
        for c in &m.chunks {
            let first =
                batches.iter().find(|b| b.position == c.original_position()).expect("a chunk starts on a batch");
            let last = batches.iter().rfind(|b| b.position < c.end()).unwrap();
            assert_eq!(last.position + last.size as u64, c.end(), "{name}: a chunk ends on a batch");
            assert!(
                c.first_offset <= first.first_offset,
                "{name}: chunk at {} claims {}",
                c.original_position(),
                c.first_offset
            );
            assert_eq!(c.last_offset, last.last_offset, "{name}");
        }

        let whole = collect(rsm.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap();
        assert!(whole == log, "{name}: the whole segment comes back byte for byte");
        for (i, b) in batches.iter().enumerate().step_by(7) {
            let end = (b.position as usize + 3000).min(log.len()) - 1;
            let got = collect(rsm.fetch_log_segment(&md, b.position as i64, Some(end as i64)).await.unwrap()).await;
            assert!(got.unwrap() == log[b.position as usize..=end], "{name}: range from batch {i}");
            // Every offset a batch holds (inside a wrapper too) resolves to that batch.
            for offset in [b.first_offset, b.last_offset, (b.first_offset + b.last_offset) / 2] {
                let p = rsm.position_of_offset(&md, offset).await.unwrap();
                assert_eq!(p as u64, b.position, "{name}: offset {offset}");
            }
            // A v0 message has no timestamp: a lookup skips it (a v0 segment answers none).
            let ts = b.max_timestamp.max(0);
            let by_time = rsm.position_of_timestamp(&md, ts).await.unwrap();
            let want = batches.iter().find(|x| x.max_timestamp >= ts).map(|x| x.position);
            assert_eq!(by_time, want, "{name}: timestamp {ts}");
            assert_eq!(by_time.is_none(), name.starts_with("v0"), "{name}");
        }
        let offset_index = std::fs::read(data_dir().join(format!("{name}.index"))).unwrap();
        assert_eq!(rsm.fetch_index(&md, rsm_core::IndexType::Offset).await.unwrap(), offset_index);
    }
}

#[tokio::test]
async fn a_damaged_legacy_message_is_refused_by_the_copy() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["v0-none", "v1-gzip", "mixed-v0-v1-v2"] {
        let batches = expected(name);
        let mut log = std::fs::read(data_dir().join(format!("{name}.log"))).unwrap();
        let victim = batches[batches.len() / 3];
        // A byte of the message's value (inside its CRC-32, outside any length field).
        log[victim.position as usize + victim.size - 2] ^= 0x10;
        let mut data = segment_data(name, tmp.path());
        data.log_segment = tmp.path().join(format!("{name}.log"));
        std::fs::write(&data.log_segment, &log).unwrap();
        let md = metadata(&log, &batches);
        let e = storage(None).copy_log_segment_data(&md, &data).await.unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&format!("position {}", victim.position)), "{name}: {text}");
        assert!(text.contains(if victim.magic < 2 { "CRC-32 " } else { "CRC-32C" }), "{name}: {text}");
    }
}
