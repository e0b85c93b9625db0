//! `records::encode` and `records::decode` against the bytes Kafka's own `RemoteLogMetadataSerde` writes
//! (Kafka 3.9.2, 4.0.0 and 4.4.0: `tests/data/kafka-<version>/records.txt`, written by
//! `tools/metadata-fixtures`). `CASES` below is the same table, case by case and by name, as `CASES` in
//! `tools/metadata-fixtures/src/main/java/MetadataFixtures.java`; every expected byte comes from Kafka.

use RemoteLogSegmentState::*;
use RemotePartitionDeleteState::*;
use rsm_core::model::{
    CustomMetadata, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition,
    TopicPartition, Uuid,
};
use rsm_metadata::records::{decode, encode};
use rsm_metadata::{
    MetadataEvent, RemoteLogSegmentMetadataSnapshot, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
};
use std::collections::BTreeMap;
use std::path::Path;

const VERSIONS: [&str; 3] = ["3.9.2", "4.0.0", "4.4.0"];
const NON_ASCII: &str = "zahlungsströme-日本-😀";

fn tp_a() -> TopicIdPartition {
    TopicIdPartition::new(
        Uuid::new(0x0123456789abcdef, 0xfedcba9876543210_u64 as i64),
        TopicPartition::new("orders", 0),
    )
}
fn tp_b() -> TopicIdPartition {
    TopicIdPartition::new(Uuid::new(-1, 1), TopicPartition::new(NON_ASCII, i32::MAX))
}
fn tp_c() -> TopicIdPartition {
    TopicIdPartition::new(Uuid::new(i64::MIN, i64::MAX), TopicPartition::new("a", 7))
}
const SEG1: Uuid = Uuid::new(0x1111111111111111, 0x2222222222222222);
const SEG2: Uuid = Uuid::new(-2, -3);

fn epochs(pairs: &[(i32, i64)]) -> BTreeMap<i32, i64> {
    pairs.iter().copied().collect()
}
fn many_epochs() -> BTreeMap<i32, i64> {
    (0..130).map(|i| (i, 10 * i as i64)).collect()
}
fn custom(bytes: &[u8]) -> Option<CustomMetadata> {
    Some(CustomMetadata(bytes.to_vec()))
}
fn custom_of_length(n: usize) -> Option<CustomMetadata> {
    Some(CustomMetadata((0..n).map(|i| (i * 7) as u8).collect()))
}

#[allow(clippy::too_many_arguments)]
fn segment(
    tp: TopicIdPartition,
    id: Uuid,
    start: i64,
    end: i64,
    max_ts: i64,
    broker: i32,
    event_ts: i64,
    size: i32,
    segment_leader_epochs: BTreeMap<i32, i64>,
    custom_metadata: Option<CustomMetadata>,
    state: RemoteLogSegmentState,
    txn_idx_empty: bool,
) -> MetadataEvent {
    MetadataEvent::Segment(RemoteLogSegmentMetadata {
        remote_log_segment_id: RemoteLogSegmentId::new(tp, id),
        start_offset: start,
        end_offset: end,
        max_timestamp_ms: max_ts,
        broker_id: broker,
        event_timestamp_ms: event_ts,
        segment_size_in_bytes: size,
        segment_leader_epochs,
        custom_metadata,
        state,
        txn_idx_empty,
    })
}

#[allow(clippy::too_many_arguments)]
fn snapshot(
    segment_id: Uuid,
    start: i64,
    end: i64,
    max_ts: i64,
    broker: i32,
    event_ts: i64,
    size: i32,
    segment_leader_epochs: BTreeMap<i32, i64>,
    custom_metadata: Option<CustomMetadata>,
    state: RemoteLogSegmentState,
    txn_idx_empty: bool,
) -> MetadataEvent {
    MetadataEvent::Snapshot(RemoteLogSegmentMetadataSnapshot {
        segment_id,
        start_offset: start,
        end_offset: end,
        max_timestamp_ms: max_ts,
        broker_id: broker,
        event_timestamp_ms: event_ts,
        segment_leader_epochs,
        segment_size_in_bytes: size,
        custom_metadata,
        state,
        txn_idx_empty,
    })
}

fn update(
    tp: TopicIdPartition,
    id: Uuid,
    event_ts: i64,
    custom_metadata: Option<CustomMetadata>,
    state: RemoteLogSegmentState,
    broker: i32,
) -> MetadataEvent {
    MetadataEvent::SegmentUpdate(RemoteLogSegmentMetadataUpdate {
        remote_log_segment_id: RemoteLogSegmentId::new(tp, id),
        event_timestamp_ms: event_ts,
        custom_metadata,
        state,
        broker_id: broker,
    })
}

fn delete(tp: TopicIdPartition, state: RemotePartitionDeleteState, event_ts: i64, broker: i32) -> MetadataEvent {
    MetadataEvent::PartitionDelete(RemotePartitionDeleteMetadata {
        topic_id_partition: tp,
        state,
        event_timestamp_ms: event_ts,
        broker_id: broker,
    })
}

/// The table: the same cases, by name and in order, as `CASES` in MetadataFixtures.java.
#[rustfmt::skip]
fn cases() -> Vec<(&'static str, MetadataEvent)> {
    vec![
        ("segment_started_one_epoch", segment(tp_a(), SEG1, 0, 99,
            1_700_000_000_000, 1, 1_700_000_000_123, 4096, epochs(&[(0, 0)]), None,
            CopySegmentStarted, false)),
        ("segment_finished_epochs_custom", segment(tp_a(), SEG2, 1000, 1999,
            -1, 3, -1, 1 << 20, epochs(&[(1, 1000), (4, 1500), (9, 1900)]), custom(&[0, 1, 2, 0x7f, 0x80, 0xff]),
            CopySegmentFinished, false)),
        ("segment_txn_idx_empty", segment(tp_b(), SEG1, 0, 0, 0, 0, 0, 0,
            epochs(&[(0, 0)]), custom(&[]), DeleteSegmentStarted, true)),
        ("segment_big_offsets", segment(tp_c(), SEG2, i64::MAX - 1000,
            i64::MAX, i64::MAX, i32::MAX, i64::MAX, i32::MAX,
            epochs(&[(i32::MAX, i64::MAX - 1000)]), custom_of_length(200),
            DeleteSegmentFinished, false)),
        ("segment_non_ascii_many_epochs", segment(tp_b(), SEG2, 0, 1290, -1,
            -1, -1, 123_456, many_epochs(), None, CopySegmentStarted,
            false)),
        ("segment_empty_epochs", segment(tp_a(), SEG1, 0, 1, 2, 3, 4, 5,
            epochs(&[]), None, CopySegmentStarted, false)),
        ("update_finished_custom", update(tp_a(), SEG1, 1_700_000_000_456,
            custom(&[0xde, 0xad, 0xbe, 0xef]), CopySegmentFinished, 1)),
        ("update_delete_started", update(tp_b(), SEG2, -1, None,
            DeleteSegmentStarted, 2)),
        ("update_delete_finished", update(tp_c(), SEG1, i64::MAX,
            custom(&[]), DeleteSegmentFinished, i32::MAX)),
        ("partition_delete_marked", delete(tp_a(),
            DeletePartitionMarked, 1_700_000_000_789, 3000)),
        ("partition_delete_started", delete(tp_b(),
            DeletePartitionStarted, -1, 0)),
        ("partition_delete_finished", delete(tp_c(),
            DeletePartitionFinished, i64::MAX, i32::MAX)),
        ("snapshot_started", snapshot(SEG1, 0, 99, 1, 1, 2, 4096,
            epochs(&[(0, 0)]), None, CopySegmentStarted, false)),
        ("snapshot_finished_txn_idx_empty", snapshot(SEG2, 5, 10, -1, 7,
            -1, 1 << 30, epochs(&[(3, 5), (4, 8)]), custom(&[1, 2, 3]), CopySegmentFinished,
            true)),
        ("snapshot_empty_epochs", snapshot(SEG1, 0, 0, 0, 0, 0, 0, epochs(&[]),
            custom(&[]), DeleteSegmentStarted, false)),
    ]
}

/// What a Kafka version's serde did with a case.
#[derive(Debug)]
enum Kafka {
    /// The bytes it wrote.
    Wrote(Vec<u8>),
    /// The version can not express the case (3.9 has no `txnIdxEmpty`).
    Unsupported,
    /// Kafka's constructors refuse the event (empty leader epochs).
    Rejected,
}

fn fixture(version: &str) -> Vec<(String, Kafka)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/kafka-{version}/records.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut f = l.split(' ');
            let name = f.next().unwrap().to_string();
            let what = match f.next().unwrap() {
                "unsupported" => Kafka::Unsupported,
                "rejected" => Kafka::Rejected,
                hex => Kafka::Wrote(
                    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect(),
                ),
            };
            (name, what)
        })
        .collect()
}

/// Every Kafka-written value of every version, with its case's name and event.
fn kafka_values() -> Vec<(String, MetadataEvent, Vec<u8>)> {
    let table = cases();
    let mut out = Vec::new();
    for version in VERSIONS {
        for (name, what) in fixture(version) {
            if let Kafka::Wrote(bytes) = what {
                let event = table.iter().find(|(n, _)| *n == name).expect("a case of the table").1.clone();
                out.push((format!("{version}/{name}"), event, bytes));
            }
        }
    }
    out
}

#[test]
fn the_fixtures_hold_the_table_case_for_case() {
    let names: Vec<&str> = cases().iter().map(|(n, _)| *n).collect();
    for version in VERSIONS {
        let got: Vec<String> = fixture(version).into_iter().map(|(n, _)| n).collect();
        assert_eq!(got, names, "kafka-{version}/records.txt has the table's cases, in order");
        for (name, what) in fixture(version) {
            let want_rejected = name.ends_with("_empty_epochs");
            assert_eq!(matches!(what, Kafka::Rejected), want_rejected, "{version}/{name}: {what:?}");
            // 3.9 has no txnIdxEmpty: it can write no event where it is true.
            let want_unsupported = version == "3.9.2" && name.ends_with("txn_idx_empty");
            assert_eq!(matches!(what, Kafka::Unsupported), want_unsupported, "{version}/{name}: {what:?}");
        }
    }
}

#[test]
fn encode_writes_kafkas_bytes() {
    // Every version writes message version 0 and the same bytes (3.9 reads 4.x's TxnIndexEmpty tag as an
    // unknown tagged field), so our bytes must equal every version's.
    let table = cases();
    let mut compared = 0;
    for (name, event, bytes) in kafka_values() {
        assert_eq!(encode(&event), bytes, "{name}");
        compared += 1;
    }
    assert_eq!(compared, 3 * (table.len() - 2) - 2, "every Kafka-written value was compared");
}

#[test]
fn decode_reads_what_kafka_wrote() {
    for (name, event, bytes) in kafka_values() {
        assert_eq!(decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}")), event, "{name}");
    }
}

#[test]
fn versions_write_the_same_bytes() {
    let all: Vec<Vec<(String, Kafka)>> = VERSIONS.iter().map(|v| fixture(v)).collect();
    for (i, (name, what)) in all[2].iter().enumerate() {
        for other in &all[..2] {
            if let (Kafka::Wrote(a), (_, Kafka::Wrote(b))) = (what, &other[i]) {
                assert_eq!(a, b, "{name}");
            }
        }
    }
}

#[test]
fn decode_of_encode_round_trips() {
    for (name, event) in cases() {
        assert_eq!(decode(&encode(&event)).unwrap_or_else(|e| panic!("{name}: {e}")), event, "{name}");
    }
}

#[test]
fn every_truncation_is_an_error() {
    for (name, _, bytes) in kafka_values() {
        for len in 0..bytes.len() {
            let err = decode(&bytes[..len]).expect_err(&format!("{name} cut to {len} bytes"));
            assert!(err.to_string().contains("at offset"), "{name}/{len}: {err}");
        }
    }
}

#[test]
fn trailing_bytes_are_an_error() {
    for (name, _, mut bytes) in kafka_values() {
        bytes.push(0);
        let err = decode(&bytes).expect_err(&name).to_string();
        assert!(err.contains("trailing"), "{name}: {err}");
    }
}

#[test]
fn damaged_bytes_never_panic() {
    for (_, _, bytes) in kafka_values() {
        for at in 0..bytes.len() {
            for flip in [0x01, 0x40, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                let _ = decode(&bad);
            }
        }
    }
}

fn value_of(version: &str, case: &str) -> Vec<u8> {
    match fixture(version).into_iter().find(|(n, _)| n == case) {
        Some((_, Kafka::Wrote(b))) => b,
        other => panic!("{version}/{case}: {other:?}"),
    }
}

#[test]
fn a_flipped_length_names_its_field() {
    // partition_delete_marked: frame (3 bytes), then the topic name's compact length at offset 3 (7: "orders").
    let good = value_of("4.4.0", "partition_delete_marked");
    assert_eq!(good[3], 7);
    let mut bad = good.clone();
    bad[3] = 0x7f;
    let err = decode(&bad).unwrap_err().to_string();
    assert!(err.contains("RemotePartitionDeleteMetadataRecord"), "{err}");
    assert!(err.contains("field TopicIdPartition.Name at offset 3"), "{err}");
    assert!(err.contains("longer than"), "{err}");

    // update_finished_custom: the custom metadata's length (4 bytes + 1) follows the id, broker and time.
    let good = value_of("4.4.0", "update_finished_custom");
    let at = 3 + 1 + 6 + 16 + 4 + 1 + 16 + 1 + 4 + 8;
    assert_eq!(good[at], 5);
    let mut bad = good.clone();
    bad[at] = 0x60;
    let err = decode(&bad).unwrap_err().to_string();
    assert!(err.contains(&format!("field CustomMetadata at offset {at}")), "{err}");

    // segment_non_ascii_many_epochs: 130 leader epochs, a two-byte count; a count past the value's end.
    let good = value_of("3.9.2", "segment_non_ascii_many_epochs");
    let name = NON_ASCII.len();
    let at = 3 + 1 + name + 16 + 4 + 1 + 16 + 1 + 8 + 8 + 4 + 8 + 8;
    assert_eq!(&good[at..at + 2], &[0x83, 0x01], "131 = 130 + 1 as a varint");
    let mut bad = good.clone();
    bad[at + 1] = 0x7f;
    let err = decode(&bad).unwrap_err().to_string();
    assert!(err.contains(&format!("field SegmentLeaderEpochs at offset {at}")), "{err}");
}

#[test]
fn a_duplicate_leader_epoch_is_an_error() {
    // snapshot_finished_txn_idx_empty has epochs 3 and 4: make the second one 3.
    let good = value_of("4.4.0", "snapshot_finished_txn_idx_empty");
    let first = 3 + 16 + 8 + 8 + 4 + 8 + 8 + 1;
    assert_eq!(&good[first..first + 4], &3i32.to_be_bytes());
    let second = first + 13;
    assert_eq!(&good[second..second + 4], &4i32.to_be_bytes());
    let mut bad = good.clone();
    bad[second + 3] = 3;
    let err = decode(&bad).unwrap_err().to_string();
    assert!(err.contains("leader epoch 3 given twice"), "{err}");
}
