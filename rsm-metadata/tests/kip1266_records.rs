//! KIP-1266 records (keys, tombstones, version 1's tagged `BrokerLeaderEpoch` and `EndOffset`) read with
//! `records::decode_record` and applied to a `MetadataStore`. The bytes are `tests/data/kip-1266/records.txt`,
//! hand-assembled from the proposals' schemas by `tools/kip1266-fixtures.py` (no Kafka release writes
//! them; the script checks its version 0 bytes against Kafka 4.4.0's own). The expected events below are
//! the script's values, stated case by case.

use RemoteLogSegmentState::*;
use rsm_core::model::{
    CustomMetadata, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition,
    TopicPartition, Uuid,
};
use rsm_metadata::cache::MetadataStore;
use rsm_metadata::records::{
    MetadataRecord, RecordTags, SEGMENT_KEY_LEN, SegmentKey, Tombstone, decode, decode_record, decode_with_tags,
};
use rsm_metadata::{
    MetadataEvent, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata, RemotePartitionDeleteState,
};
use std::path::Path;

const TOPIC_ID: Uuid = Uuid::new(0x0123456789abcdef, 0xfedcba9876543210_u64 as i64);
const SEG: Uuid = Uuid::new(0x1111111111111111, 0x2222222222222222);

fn tp() -> TopicIdPartition {
    TopicIdPartition::new(TOPIC_ID, TopicPartition::new("orders", 3))
}

fn segment(txn_idx_empty: bool) -> MetadataEvent {
    MetadataEvent::Segment(RemoteLogSegmentMetadata {
        remote_log_segment_id: RemoteLogSegmentId::new(tp(), SEG),
        start_offset: 100,
        end_offset: 199,
        max_timestamp_ms: 1_700_000_000_000,
        broker_id: 1,
        event_timestamp_ms: 1_700_000_000_123,
        segment_size_in_bytes: 4096,
        segment_leader_epochs: [(4, 100), (5, 150)].into_iter().collect(),
        custom_metadata: Some(CustomMetadata(vec![1, 2])),
        state: CopySegmentStarted,
        txn_idx_empty,
    })
}

fn update(state: RemoteLogSegmentState) -> MetadataEvent {
    MetadataEvent::SegmentUpdate(RemoteLogSegmentMetadataUpdate {
        remote_log_segment_id: RemoteLogSegmentId::new(tp(), SEG),
        event_timestamp_ms: 1_700_000_000_456,
        custom_metadata: None,
        state,
        broker_id: 1,
    })
}

fn tags(version: u16, broker_leader_epoch: Option<i32>, end_offset: Option<i64>) -> RecordTags {
    RecordTags { version, broker_leader_epoch, end_offset }
}

fn key(state_id: i8) -> SegmentKey {
    SegmentKey { topic_id: TOPIC_ID, partition: 3, segment_id: SEG, state_id }
}

fn event(e: MetadataEvent, t: RecordTags) -> MetadataRecord {
    MetadataRecord::Event(e, t)
}

fn tombstone(state_id: i8) -> MetadataRecord {
    MetadataRecord::Tombstone(Tombstone::Segment(key(state_id)))
}

/// The cases, by name and in order, as `CASES` in tools/kip1266-fixtures.py.
fn cases() -> Vec<(&'static str, MetadataRecord)> {
    vec![
        ("v1_segment_started_epoch_7", event(segment(false), tags(1, Some(7), None))),
        ("v1_segment_started_txn_idx_empty_epoch_7", event(segment(true), tags(1, Some(7), None))),
        ("v1_segment_started_no_tags", event(segment(false), tags(1, None, None))),
        ("v1_update_finished_epoch_7_end_199", event(update(CopySegmentFinished), tags(1, Some(7), Some(199)))),
        ("v1_update_delete_finished_end_199", event(update(DeleteSegmentFinished), tags(1, None, Some(199)))),
        (
            "v1_partition_delete_marked_epoch_9_end_5000",
            event(
                MetadataEvent::PartitionDelete(RemotePartitionDeleteMetadata {
                    topic_id_partition: tp(),
                    state: RemotePartitionDeleteState::DeletePartitionMarked,
                    event_timestamp_ms: 1_700_000_000_789,
                    broker_id: 3000,
                }),
                tags(1, Some(9), Some(5000)),
            ),
        ),
        ("v1_update_unknown_tag_9", event(update(CopySegmentFinished), tags(1, None, Some(199)))),
        // Tag 1 is not EndOffset in version 0: an unknown field, skipped like tag 30.
        ("v0_update_unknown_tags_1_and_30", event(update(CopySegmentFinished), tags(0, None, None))),
        ("keyed_v0_update_finished", event(update(CopySegmentFinished), tags(0, None, None))),
        ("keyed_v1_update_finished", event(update(CopySegmentFinished), tags(1, None, Some(199)))),
        ("tombstone_copy_segment_started", tombstone(0)),
        ("tombstone_copy_segment_finished", tombstone(1)),
        ("tombstone_delete_segment_started", tombstone(2)),
        ("tombstone_delete_segment_finished", tombstone(3)),
        ("tombstone_unknown_state_9", tombstone(9)),
        ("tombstone_string_key", MetadataRecord::Tombstone(Tombstone::Unrecognized { len: 19 })),
        ("tombstone_empty_key", MetadataRecord::Tombstone(Tombstone::Unrecognized { len: 0 })),
    ]
}

type Bytes = Option<Vec<u8>>;

fn unhex(s: &str) -> Bytes {
    (s != "-").then(|| (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect())
}

/// `(case, key, value)` as the file has them (an empty hex field is an empty key).
fn fixture() -> Vec<(String, Bytes, Bytes)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kip-1266/records.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 3, "{l}");
            (f[0].to_string(), unhex(f[1]), unhex(f[2]))
        })
        .collect()
}

#[test]
fn every_case_reads_as_the_proposal_means_it() {
    let table = cases();
    let file = fixture();
    let names: Vec<&str> = file.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, table.iter().map(|(n, _)| *n).collect::<Vec<_>>(), "the file holds the table's cases");
    for ((name, key, value), (_, want)) in file.iter().zip(table) {
        let got = decode_record(key.as_deref(), value.as_deref()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn values_decode_alone_whatever_the_key() {
    for ((name, _, value), (_, want)) in fixture().into_iter().zip(cases()) {
        let (Some(value), MetadataRecord::Event(e, t)) = (value, want) else { continue };
        assert_eq!(decode(&value).unwrap(), e, "{name}");
        assert_eq!(decode_with_tags(&value).unwrap(), (e.clone(), t), "{name}");
        // A key changes nothing about a record with a value, even one that is not a segment key.
        assert_eq!(decode_record(Some(b"anything"), Some(&value)).unwrap(), MetadataRecord::Event(e, t), "{name}");
    }
}

#[test]
fn a_segment_key_is_the_proposals_37_bytes() {
    let file = fixture();
    let bytes = file.iter().find(|(n, _, _)| n == "keyed_v0_update_finished").unwrap().1.clone().unwrap();
    assert_eq!(bytes.len(), SEGMENT_KEY_LEN);
    let k = SegmentKey::decode(&bytes).unwrap();
    assert_eq!(k, key(1));
    assert_eq!(k.state(), Some(CopySegmentFinished));
    assert_eq!(k.encode().to_vec(), bytes);
    assert_eq!(SegmentKey::new(&RemoteLogSegmentId::new(tp(), SEG), CopySegmentFinished), k);
    assert_eq!(key(9).state(), None);
    assert!(SegmentKey::decode(&bytes[..36]).is_none());
    assert!(SegmentKey::decode(&[bytes.clone(), vec![0]].concat()).is_none());
    let shown = Tombstone::Segment(k).to_string();
    assert!(shown.contains(&SEG.to_string()) && shown.contains("COPY_SEGMENT_FINISHED"), "{shown}");
}

#[test]
fn a_record_with_neither_key_nor_value_is_an_error_saying_so() {
    let err = decode_record(None, None).unwrap_err().to_string();
    assert!(err.contains("neither a key nor a value"), "{err}");
}

#[test]
fn every_truncation_of_a_version_1_value_is_an_error_and_damage_never_panics() {
    for (name, key, value) in fixture() {
        if let Some(value) = &value {
            for len in 0..value.len() {
                let err =
                    decode_record(key.as_deref(), Some(&value[..len])).expect_err(&format!("{name} cut to {len}"));
                assert!(err.to_string().contains("at offset"), "{name}/{len}: {err}");
            }
            for at in 0..value.len() {
                for flip in [0x01, 0x80, 0xff] {
                    let mut bad = value.clone();
                    bad[at] ^= flip;
                    let _ = decode_record(key.as_deref(), Some(&bad));
                }
            }
        }
        if let Some(key) = &key {
            for len in 0..key.len() {
                // Any key without a value is a tombstone: never an error, never a panic.
                assert!(decode_record(Some(&key[..len]), None).is_ok(), "{name} key cut to {len}");
            }
        }
    }
}

#[test]
fn a_wrongly_sized_end_offset_tag_is_an_error_naming_it() {
    let file = fixture();
    let mut value = file.iter().find(|(n, _, _)| n == "v1_update_delete_finished_end_199").unwrap().2.clone().unwrap();
    // The value ends with its tagged fields: count 1, tag 1, size 8, then the offset.
    let at = value.len() - 9;
    assert_eq!(&value[at - 2..at + 1], &[1, 1, 8]);
    value[at] = 7;
    value.pop();
    let err = decode(&value).unwrap_err().to_string();
    assert!(err.contains("EndOffset") && err.contains("expected 8"), "{err}");
}

fn record(name: &str) -> MetadataRecord {
    let (_, key, value) = fixture().into_iter().find(|(n, _, _)| n == name).unwrap();
    decode_record(key.as_deref(), value.as_deref()).unwrap()
}

fn apply(store: &mut MetadataStore, name: &str) -> Option<RemoteLogSegmentMetadata> {
    match record(name) {
        MetadataRecord::Event(e, _) => {
            store.apply(&e).unwrap_or_else(|e| panic!("{name}: {e}"));
            None
        }
        MetadataRecord::Tombstone(t) => store.apply_tombstone(&t),
    }
}

#[test]
fn a_tombstone_forgets_its_segment_and_others_change_nothing() {
    let mut store = MetadataStore::new();
    apply(&mut store, "v1_segment_started_epoch_7");
    apply(&mut store, "keyed_v1_update_finished");
    let p = store.partition(&tp()).unwrap();
    assert_eq!(p.segments().len(), 1);
    assert_eq!(p.segment_for_offset(5, 160).map(|s| s.remote_log_segment_id.id), Some(SEG));
    assert_eq!(p.highest_offset_for_epoch(5), Some(199));

    // Keys that name nothing held: the string key of the other proposal, an empty key, another partition.
    assert_eq!(apply(&mut store, "tombstone_string_key"), None);
    assert_eq!(apply(&mut store, "tombstone_empty_key"), None);
    let other = SegmentKey { partition: 4, ..key(1) };
    assert_eq!(store.apply_tombstone(&Tombstone::Segment(other)), None);
    let other = SegmentKey { segment_id: Uuid::new(1, 1), ..key(1) };
    assert_eq!(store.apply_tombstone(&Tombstone::Segment(other)), None);
    assert_eq!(store.partition(&tp()).unwrap().segments().len(), 1, "nothing was forgotten");

    // The segment's own tombstone: forgotten, found by no query; the next one finds nothing to forget.
    let gone = apply(&mut store, "tombstone_copy_segment_started").expect("the segment was held");
    assert_eq!(gone.state, CopySegmentFinished);
    let p = store.partition(&tp()).unwrap();
    assert!(p.segments().is_empty());
    assert!(p.segment_for_offset(5, 160).is_none());
    assert!(p.segments_for_epoch(4).is_empty());
    assert_eq!(apply(&mut store, "tombstone_delete_segment_finished"), None);
}

#[test]
fn tombstones_after_a_finished_deletion_find_nothing_and_fail_nothing() {
    // The order a broker writes them in (pull request 22774): the deletion, then one tombstone per state.
    let mut store = MetadataStore::new();
    for name in ["v1_segment_started_epoch_7", "keyed_v0_update_finished"] {
        apply(&mut store, name);
    }
    store.apply(&update(DeleteSegmentStarted)).unwrap();
    apply(&mut store, "v1_update_delete_finished_end_199");
    assert!(store.partition(&tp()).unwrap().segments().is_empty());
    for name in [
        "tombstone_copy_segment_started",
        "tombstone_copy_segment_finished",
        "tombstone_delete_segment_started",
        "tombstone_delete_segment_finished",
        "tombstone_unknown_state_9",
    ] {
        assert_eq!(apply(&mut store, name), None, "{name}");
    }
    // The same segment id again after its tombstones (a new copy) is accepted as new.
    apply(&mut store, "v1_segment_started_no_tags");
    assert_eq!(store.partition(&tp()).unwrap().segments().len(), 1);
}

/// Pull request 22459's design: one text key for all of a segment's records, naming its partition and end
/// offset. Its tombstone forgets the segment of that end offset only once its deletion started; a live copy
/// of the same offsets (a copy done again after an abandoned one) is never forgotten by it.
#[test]
fn a_text_keyed_tombstone_forgets_only_a_segment_being_deleted() {
    use rsm_metadata::records::EndOffsetKey;
    let id = TOPIC_ID.to_string();
    let key = |text: &str| match decode_record(Some(text.as_bytes()), None).unwrap() {
        MetadataRecord::Tombstone(t) => t,
        other => panic!("{text}: {other:?}"),
    };
    let named = EndOffsetKey { topic_id: TOPIC_ID, partition: 3, end_offset: 199, broker_leader_epoch: 7 };
    // Both forms of the text (with and without the topic's name) and what is not one.
    let cases: [(String, Option<&EndOffsetKey>); 6] = [
        (format!("{id}:orders:3:199:7"), Some(&named)),
        (format!("{id}:3:199:7"), Some(&named)),
        ("0123:orders:3:199:7".into(), None),
        (format!("{id}:orders:3:199"), None),
        (format!("{id}:orders:xy:199:7"), None),
        (format!("{id}:a:b:3:199:7"), None),
    ];
    for (text, want) in &cases {
        match (key(text), want) {
            (Tombstone::EndOffset(k), Some(w)) => assert_eq!(&k, *w, "{text}"),
            (Tombstone::Unrecognized { len }, None) => assert_eq!(len, text.len(), "{text}"),
            (got, _) => panic!("{text}: {got:?}"),
        }
    }

    let tombstone = key(&format!("{id}:orders:3:199:7"));
    let mut store = MetadataStore::new();
    apply(&mut store, "v1_segment_started_epoch_7");
    apply(&mut store, "keyed_v1_update_finished");
    assert_eq!(store.apply_tombstone(&tombstone), None, "a finished copy ending at 199 is live: kept");
    assert_eq!(store.partition(&tp()).unwrap().segments().len(), 1);
    let other_end = key(&format!("{id}:orders:3:198:7"));
    store.apply(&update(DeleteSegmentStarted)).unwrap();
    assert_eq!(store.apply_tombstone(&other_end), None, "another end offset names another segment");
    let gone = store.apply_tombstone(&tombstone).expect("the segment being deleted is forgotten");
    assert_eq!((gone.remote_log_segment_id.id, gone.end_offset), (SEG, 199));
    assert!(store.partition(&tp()).unwrap().segments().is_empty());
}
