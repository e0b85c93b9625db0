//! A small Kafka partition with transactions and compressed batches, for the tests of `rsm_records_fetch`:
//! the Rust ones (`records_tests.rs`) and the C and C++ hosts' (through `rsm-c-fixture`, which includes this
//! file). The batches are written by rsm-core's batch writer (`encode_batch_with`, `encode_control_batch`):
//! Kafka's v2 format with their CRC-32C, the compressed ones gzip and xerial-framed snappy as Kafka's
//! producer writes them.
//!
//! `txns-0`, two closed segments and an active one:
//! ```text
//! segment 0 (offsets 0-12)
//!   0-3    plain producer, gzip
//!   4-6    transaction of producer 7 (aborted below)
//!   7-8    transaction of producer 8 (aborted in segment 1)
//!   9      abort marker of producer 7        .txnindex: (7, 4, 9, lso 7)
//!   10-12  plain producer, snappy: a null key, an empty value, headers (one null), a tombstone
//! segment 1 (offsets 13-20)
//!   13-14  transaction of producer 8, continued
//!   15     abort marker of producer 8        .txnindex: (8, 7, 15, lso 16)
//!   16-17  transaction of producer 9, gzip
//!   18     commit marker of producer 9
//!   19-20  plain producer, log-append time
//! segment 2 (active, offset 21)
//! ```
//! A `read_committed` fetch of segment 0 needs segment 1's transaction index to drop 7 and 8: the search
//! of segment 0's is not complete (its entry's last stable offset, 7, is below the fetch's end).

use rsm_core::format::records::compression::Codec;
use rsm_core::format::records::{Record, TimestampType};
use rsm_core::testkit::log_writer::{
    BatchOptions, empty_producer_snapshot, encode_batch_with, encode_control_batch, leader_epoch_checkpoint,
    segment_file_name,
};
use rsm_core::{Error, Result, Uuid};
use std::path::{Path, PathBuf};

/// The topic id of `txns-0`.
pub const TOPIC_ID: Uuid = Uuid::new(0x7478_6e73_0000_0001, 0x0000_0000_0000_0002);
/// The first record's timestamp; record `o` has `FIRST_TIMESTAMP + o` (create time).
pub const FIRST_TIMESTAMP: i64 = 1_700_000_000_000;

/// One record of the fixture, as a consumer gets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    pub offset: i64,
    pub timestamp: i64,
    /// Kafka's timestamp type id: 0 create time, 1 log-append time.
    pub timestamp_type: i32,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data { aborted: bool },
    Abort,
    Commit,
}

struct BatchSpec {
    base: i64,
    count: i64,
    producer: i64,
    transactional: bool,
    kind: Kind,
    codec: Option<Codec>,
    log_append_time: bool,
}

/// Where the segments start; the last is the active one.
pub const SEGMENT_BASES: [i64; 3] = [0, 13, 21];

fn batches() -> Vec<BatchSpec> {
    let b = |base, count, producer, transactional, kind, codec, log_append_time| BatchSpec {
        base,
        count,
        producer,
        transactional,
        kind,
        codec,
        log_append_time,
    };
    let ok = Kind::Data { aborted: false };
    let aborted = Kind::Data { aborted: true };
    let (gzip, snappy) = (Some(Codec::Gzip), Some(Codec::Snappy));
    vec![
        b(0, 4, -1, false, ok, gzip, false),
        b(4, 3, 7, true, aborted, None, false),
        b(7, 2, 8, true, aborted, None, false),
        b(9, 1, 7, true, Kind::Abort, None, false),
        b(10, 3, -1, false, ok, snappy, false),
        b(13, 2, 8, true, aborted, None, false),
        b(15, 1, 8, true, Kind::Abort, None, false),
        b(16, 2, 9, true, ok, gzip, false),
        b(18, 1, 9, true, Kind::Commit, None, false),
        b(19, 2, -1, false, ok, None, true),
        b(21, 1, -1, false, ok, None, false),
    ]
}

/// The data record at `offset` as written (its create time).
fn record(offset: i64) -> Rec {
    let mut r = Rec {
        offset,
        timestamp: FIRST_TIMESTAMP + offset,
        timestamp_type: 0,
        key: Some(format!("k-{offset}").into_bytes()),
        value: Some(format!("v-{offset}-{}", "payload".repeat(6)).into_bytes()),
        headers: vec![],
    };
    match offset {
        10 => r.key = None,
        11 => {
            r.value = Some(vec![]);
            r.headers =
                vec![("trace".into(), Some(b"t-11".to_vec())), ("none".into(), None), ("".into(), Some(vec![]))];
        }
        12 => r.value = None,
        _ => {}
    }
    r
}

/// The `.txnindex` entries of each closed segment: producer, first offset, marker offset, last stable
/// offset.
const TXN_INDEX: [&[(i64, i64, i64, i64)]; 2] = [&[(7, 4, 9, 7)], &[(8, 7, 15, 16)]];

/// What a fetch of all of closed segment `segment` from its first offset returns at `committed` or not:
/// the records and the next offset.
pub fn expected(segment: usize, committed: bool) -> (Vec<Rec>, i64) {
    let (from, to) = (SEGMENT_BASES[segment], SEGMENT_BASES[segment + 1]);
    let mut out = Vec::new();
    for b in batches().iter().filter(|b| b.base >= from && b.base < to) {
        if let Kind::Data { aborted } = b.kind
            && !(committed && aborted)
        {
            for o in b.base..b.base + b.count {
                let mut r = record(o);
                if b.log_append_time {
                    r.timestamp = log_append_time(b);
                    r.timestamp_type = 1;
                }
                out.push(r);
            }
        }
    }
    (out, to)
}

fn log_append_time(b: &BatchSpec) -> i64 {
    FIRST_TIMESTAMP + 1000 + b.base
}

/// Writes `dir/txns-0` (replacing it) and returns its path.
pub fn write_partition(dir: &Path) -> Result<PathBuf> {
    let p = dir.join("txns-0");
    let io = |what: &Path, e| Error::from_io(what.display(), e);
    if p.exists() {
        std::fs::remove_dir_all(&p).map_err(|e| io(&p, e))?;
    }
    std::fs::create_dir_all(&p).map_err(|e| io(&p, e))?;
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![
        (p.join("partition.metadata"), format!("version: 0\ntopic_id: {TOPIC_ID}\n").into_bytes()),
        (p.join("leader-epoch-checkpoint"), leader_epoch_checkpoint(&[(0, 0)]).into_bytes()),
    ];
    let all = batches();
    for (i, &base) in SEGMENT_BASES.iter().enumerate() {
        let next = SEGMENT_BASES.get(i + 1).copied().unwrap_or(i64::MAX);
        let mut log = Vec::new();
        for b in all.iter().filter(|b| b.base >= base && b.base < next) {
            log.extend(encode(b));
        }
        files.push((p.join(segment_file_name(base, "log")), log));
        files.push((p.join(segment_file_name(base, "index")), vec![]));
        files.push((p.join(segment_file_name(base, "timeindex")), vec![]));
        if let Some(entries) = TXN_INDEX.get(i) {
            let mut idx = Vec::new();
            for &(pid, first, last, lso) in *entries {
                idx.extend(0i16.to_be_bytes());
                for v in [pid, first, last, lso] {
                    idx.extend(v.to_be_bytes());
                }
            }
            files.push((p.join(segment_file_name(base, "txnindex")), idx));
        }
        if i > 0 {
            files.push((p.join(segment_file_name(base, "snapshot")), empty_producer_snapshot()));
        }
    }
    for (path, bytes) in files {
        std::fs::write(&path, bytes).map_err(|e| io(&path, e))?;
    }
    Ok(p)
}

/// A whole batch, CRC-32C included. A producer's batches have epoch 0 and, its data, sequence 0.
fn encode(b: &BatchSpec) -> Vec<u8> {
    let timestamp = FIRST_TIMESTAMP + b.base;
    let (producer_epoch, base_sequence) = if b.producer < 0 { (-1, -1) } else { (0, 0) };
    if let Kind::Abort | Kind::Commit = b.kind {
        return encode_control_batch(b.base, 0, b.producer, producer_epoch, b.kind == Kind::Commit, 3, timestamp);
    }
    let records: Vec<Record> = (b.base..b.base + b.count).map(|o| to_write(record(o))).collect();
    let options = BatchOptions {
        compression: b.codec,
        producer_id: b.producer,
        producer_epoch,
        base_sequence,
        transactional: b.transactional,
        log_append_time: b.log_append_time.then(|| log_append_time(b)),
    };
    encode_batch_with(b.base, 0, &records, &options)
}

/// A record of the fixture as the batch writer takes it (a header value may be null).
fn to_write(r: Rec) -> Record {
    Record {
        offset: r.offset,
        timestamp: r.timestamp,
        timestamp_type: TimestampType::CreateTime,
        key: r.key,
        value: r.value,
        headers: r.headers,
    }
}
