//! A small Kafka partition with transactions and compressed batches, written byte by byte, for the tests of
//! `rsm_records_fetch`: the Rust ones (`records_tests.rs`) and the C and C++ hosts' (through
//! `rsm-c-fixture`, which includes this file). The batches are Kafka's v2 format with their CRC-32C; the
//! compressed ones are gzip (stored deflate blocks) and xerial-framed snappy (literals and back
//! references), both encoded here so the fixture needs no compressor.
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

use rsm_core::format::batch::{ATTRIBUTES_OFFSET, BatchIter, CRC_OFFSET};
use rsm_core::format::writer::{empty_producer_snapshot, leader_epoch_checkpoint, segment_file_name};
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
    /// Kafka's codec id: 0 none, 1 gzip, 2 snappy.
    codec: i16,
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
    vec![
        b(0, 4, -1, false, ok, 1, false),
        b(4, 3, 7, true, aborted, 0, false),
        b(7, 2, 8, true, aborted, 0, false),
        b(9, 1, 7, true, Kind::Abort, 0, false),
        b(10, 3, -1, false, ok, 2, false),
        b(13, 2, 8, true, aborted, 0, false),
        b(15, 1, 8, true, Kind::Abort, 0, false),
        b(16, 2, 9, true, ok, 1, false),
        b(18, 1, 9, true, Kind::Commit, 0, false),
        b(19, 2, -1, false, ok, 0, true),
        b(21, 1, -1, false, ok, 0, false),
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

fn varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn bytes_field(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => varint(out, -1),
        Some(b) => {
            varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// One v2 record: attributes, deltas, key, value, headers, prefixed by its length.
fn encode_record(out: &mut Vec<u8>, ts_delta: i64, offset_delta: i64, r: &Rec) {
    let mut rec = vec![0u8];
    varint(&mut rec, ts_delta);
    varint(&mut rec, offset_delta);
    bytes_field(&mut rec, r.key.as_deref());
    bytes_field(&mut rec, r.value.as_deref());
    varint(&mut rec, r.headers.len() as i64);
    for (k, v) in &r.headers {
        bytes_field(&mut rec, Some(k.as_bytes()));
        bytes_field(&mut rec, v.as_deref());
    }
    varint(out, rec.len() as i64);
    out.extend_from_slice(&rec);
}

/// A whole batch, CRC-32C included.
fn encode(b: &BatchSpec) -> Vec<u8> {
    let base_ts = FIRST_TIMESTAMP + b.base;
    let mut body = Vec::new();
    match b.kind {
        Kind::Data { .. } => {
            for o in b.base..b.base + b.count {
                encode_record(&mut body, o - b.base, o - b.base, &record(o));
            }
        }
        Kind::Abort | Kind::Commit => {
            // Control record: key (version 0, type 0 abort / 1 commit), value (version 0, coordinator epoch).
            let mut key = 0i16.to_be_bytes().to_vec();
            key.extend(i16::from(b.kind == Kind::Commit).to_be_bytes());
            let mut value = 0i16.to_be_bytes().to_vec();
            value.extend(3i32.to_be_bytes());
            let control = Rec { key: Some(key), value: Some(value), headers: vec![], ..record(b.base) };
            encode_record(&mut body, 0, 0, &control);
        }
    }
    let body = match b.codec {
        0 => body,
        1 => gzip_stored(&body),
        2 => xerial_snappy(&body),
        c => unreachable!("codec {c}"),
    };
    let max_ts = if b.log_append_time { log_append_time(b) } else { base_ts + b.count - 1 };
    let mut attributes = b.codec;
    if b.log_append_time {
        attributes |= 0x08;
    }
    if b.transactional {
        attributes |= 0x10;
    }
    if b.kind != (Kind::Data { aborted: false }) && b.kind != (Kind::Data { aborted: true }) {
        attributes |= 0x20;
    }
    let mut out = Vec::with_capacity(61 + body.len());
    out.extend(b.base.to_be_bytes());
    out.extend(((49 + body.len()) as i32).to_be_bytes());
    out.extend(0i32.to_be_bytes()); // partition leader epoch
    out.push(2); // magic
    out.extend([0; 4]); // crc, below
    out.extend(attributes.to_be_bytes());
    out.extend(((b.count - 1) as i32).to_be_bytes());
    out.extend(base_ts.to_be_bytes());
    out.extend(max_ts.to_be_bytes());
    out.extend(b.producer.to_be_bytes());
    out.extend((if b.producer < 0 { -1i16 } else { 0 }).to_be_bytes());
    out.extend(
        (if b.producer < 0 || b.kind == Kind::Abort || b.kind == Kind::Commit { -1 } else { 0i32 }).to_be_bytes(),
    );
    out.extend((b.count as i32).to_be_bytes());
    out.extend(body);
    let crc = BatchIter::new(&out, 0, false).next_complete().ok().flatten().expect("a whole batch").computed_crc();
    debug_assert_eq!(CRC_OFFSET + 4, ATTRIBUTES_OFFSET);
    out[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    out
}

/// CRC-32 (IEEE), gzip's trailer checksum.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

/// A gzip member of stored (uncompressed) deflate blocks: valid gzip that any reader inflates.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let mut chunks = data.chunks(65535).peekable();
    if data.is_empty() {
        out.extend([1, 0, 0, 0xff, 0xff]);
    }
    while let Some(c) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        out.extend((c.len() as u16).to_le_bytes());
        out.extend((!(c.len() as u16)).to_le_bytes());
        out.extend_from_slice(c);
    }
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// Snappy as Kafka's Java clients write it: the xerial header, then one block (its length, then a raw
/// snappy block of literals and 1-byte-offset copies found by a naive search).
fn xerial_snappy(data: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut n = data.len() as u64;
    while n >= 0x80 {
        raw.push((n as u8) | 0x80);
        n >>= 7;
    }
    raw.push(n as u8);
    let literal = |raw: &mut Vec<u8>, lit: &[u8]| {
        for c in lit.chunks(256) {
            if c.len() <= 60 {
                raw.push(((c.len() - 1) as u8) << 2);
            } else {
                raw.push(60 << 2);
                raw.push((c.len() - 1) as u8);
            }
            raw.extend_from_slice(c);
        }
    };
    let (mut i, mut lit_start) = (0, 0);
    while i < data.len() {
        // The longest match (4 to 11 bytes) within the 2047 bytes before `i`.
        let mut best = (0, 0);
        for off in 1..=i.min(2047) {
            let len = (0..11.min(data.len() - i)).take_while(|&k| data[i - off + k] == data[i + k]).count();
            if len > best.0 {
                best = (len, off);
            }
        }
        if best.0 >= 4 {
            literal(&mut raw, &data[lit_start..i]);
            let (len, off) = best;
            raw.push((((off >> 8) as u8) << 5) | (((len - 4) as u8) << 2) | 1);
            raw.push(off as u8);
            i += len;
            lit_start = i;
        } else {
            i += 1;
        }
    }
    literal(&mut raw, &data[lit_start..]);
    let mut out = vec![0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
    out.extend(1i32.to_be_bytes());
    out.extend(1i32.to_be_bytes());
    out.extend((raw.len() as u32).to_be_bytes());
    out.extend(raw);
    out
}
