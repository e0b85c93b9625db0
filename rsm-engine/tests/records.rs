//! `RemoteLogManager::read_records` against an independent writer and decoder: the partitions of
//! `tests/data/records/` (written by kafka-python's record builders: every codec, legacy v0/v1 wrappers,
//! transactional producers with commits and aborts; see `tools/record-fixtures.py`) are tiered by the
//! engine, then read from **every** offset of every copied segment under both isolation levels, and
//! paged through with the returned next offsets, each answer compared record by record with what
//! kafka-python's reader wrote down. A last case keeps the segments holding four abort markers local, so
//! `read_committed` must find them in the partition directory's transaction indexes.

mod common;
use base64::Engine as _;
use common::*;
use rsm_core::format::records::Record;
use rsm_core::format::records::isolation::IsolationLevel;
use rsm_engine::{RecordsRequest, RemoteLogManager, Role};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/records")
}

/// A record in the fixtures' JSON shape.
fn json(r: &Record) -> Value {
    let bytes = |b: Option<&[u8]>| match b {
        None => (Value::Null, false),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => (Value::from(s), false),
            Err(_) => (Value::from(base64::engine::general_purpose::STANDARD.encode(b)), true),
        },
    };
    let (key, key_base64) = bytes(r.key.as_deref());
    let (value, value_base64) = bytes(r.value.as_deref());
    let headers: Vec<Value> = r
        .headers
        .iter()
        .map(|(k, v)| {
            let (value, value_base64) = bytes(v.as_deref());
            serde_json::json!({"key": k, "value": value, "value_base64": value_base64})
        })
        .collect();
    serde_json::json!({"offset": r.offset, "timestamp": r.timestamp, "timestamp_type": r.timestamp_type.name(),
        "key": key, "key_base64": key_base64, "value": value, "value_base64": value_base64, "headers": headers})
}

fn expected(name: &str, level: IsolationLevel, below: i64) -> Vec<Value> {
    let file = data().join(format!("{name}.{level}.jsonl"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["offset"].as_i64().unwrap() < below)
        .collect()
}

fn log_bases(dir: &Path) -> Vec<i64> {
    let mut b: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".log")?.parse().ok())
        .collect();
    b.sort();
    b
}

/// Copies the fixture `name` to `root`, keeping out the segments after `hold_back` (so it is the active
/// segment; they are put back after the copy, and all stay local), and tiers it. Returns the engine, the partition and the offset
/// below which everything is remote.
async fn tiered(
    root: &Path,
    name: &str,
    hold_back: Option<i64>,
) -> (RemoteLogManager, rsm_core::TopicIdPartition, i64) {
    let dir = root.join(name);
    let held = root.join("held");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&held).unwrap();
    std::fs::create_dir_all(root.join("store")).unwrap();
    for e in std::fs::read_dir(data().join(name)).unwrap() {
        let e = e.unwrap();
        let base = e.file_name().to_str().and_then(|n| n.split('.').next()?.parse::<i64>().ok());
        let to = match (base, hold_back) {
            (Some(b), Some(h)) if b > h => &held,
            _ => &dir,
        };
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    let clock = Clock::new();
    let engine = RemoteLogManager::with_local_metadata(
        clock.config(&[("retention.ms", "-1")]),
        fs_storage(&root.join("store")),
        &root.join("metadata"),
    )
    .unwrap();
    let tp = engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    let copied = engine.run_partition(&tp).await.unwrap().copy.copied.len();
    assert!(copied >= 3, "{name}: {copied} segments copied");
    let remote_end = *log_bases(&dir).last().unwrap();
    for e in std::fs::read_dir(&held).unwrap() {
        let e = e.unwrap();
        std::fs::rename(e.path(), dir.join(e.file_name())).unwrap();
    }
    (engine, tp, remote_end)
}

fn request(offset: i64, isolation: IsolationLevel, max_records: usize, max_bytes: u32) -> RecordsRequest {
    RecordsRequest { offset, isolation, max_records, max_bytes, ..RecordsRequest::default() }
}

const LEVELS: [IsolationLevel; 2] = [IsolationLevel::ReadUncommitted, IsolationLevel::ReadCommitted];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_offset_of_every_fixture_reads_as_kafka_python_wrote_it() {
    for name in ["codecs-0", "legacy-0", "txn-0"] {
        let t = tempfile::tempdir().unwrap();
        let (engine, tp, remote_end) = tiered(t.path(), name, None).await;
        for level in LEVELS {
            let want = expected(name, level, remote_end);
            assert!(want.len() > 400, "{name} {level}: {} records expected", want.len());
            for offset in 0..remote_end {
                // Small reads, so answers cross batch and segment ends and stop at the byte bound: each
                // answer holds exactly the expected records from the offset asked to the next offset it
                // gives.
                let got = engine.read_records(&tp, &request(offset, level, 4, 2_000)).await.unwrap();
                assert!(got.next_offset > offset, "{name} {level}: no progress at {offset}");
                let records: Vec<Value> = got.records.iter().map(json).collect();
                let want: Vec<&Value> = want
                    .iter()
                    .filter(|r| (offset..got.next_offset).contains(&r["offset"].as_i64().unwrap()))
                    .collect();
                assert!(records.len() <= 4, "{name} {level} from offset {offset}: {} records", records.len());
                assert_eq!(records.iter().collect::<Vec<_>>(), want, "{name} {level} from offset {offset}");
            }
            // Paged through with the offsets each answer gives, all records once, in order.
            let (mut next, mut all) = (0, Vec::new());
            loop {
                let got = engine.read_records(&tp, &request(next, level, 7, 1_000)).await.unwrap();
                all.extend(got.records.iter().map(json));
                assert!(got.next_offset > next, "{name} {level}: no progress at {next}");
                next = got.next_offset;
                if got.at_end || next >= remote_end {
                    break;
                }
            }
            assert_eq!(all, want, "{name} {level}: paged");
        }
        engine.close().await.unwrap();
    }
}

/// txn-0's segment 447 holds the abort markers of transactions that began in segments 0 and 304; kept
/// local (with every later segment), `read_committed` of the copied segments finds them in the partition
/// directory, as Kafka's fetch searches local segments after remote ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_finds_abort_markers_still_local() {
    let t = tempfile::tempdir().unwrap();
    let (engine, tp, remote_end) = tiered(t.path(), "txn-0", Some(447)).await;
    assert_eq!(remote_end, 447, "segments from 447 on stay local");
    let want = expected("txn-0", IsolationLevel::ReadCommitted, remote_end);
    let uncommitted = expected("txn-0", IsolationLevel::ReadUncommitted, remote_end);
    assert!(want.len() < uncommitted.len(), "the copied segments hold aborted records");
    let got = engine.read_records(&tp, &request(0, IsolationLevel::ReadCommitted, 10_000, 1 << 20)).await.unwrap();
    let mut all: Vec<Value> = got.records.iter().map(json).collect();
    let mut next = got.next_offset;
    while next < remote_end {
        let got = engine.read_records(&tp, &request(next, IsolationLevel::ReadCommitted, 10_000, 1 << 20)).await;
        let Ok(got) = got else { break };
        all.extend(got.records.iter().map(json));
        next = got.next_offset;
        if got.at_end {
            break;
        }
    }
    assert_eq!(all, want);
    engine.close().await.unwrap();
}
