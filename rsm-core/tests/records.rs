//! Every record of every batch of the kafka-python legacy segments (`tests/data/legacy`, written by
//! `tools/legacy-segments.py`): magic 0 and 1, plain and gzip, snappy and lz4 wrappers, v1 with log-append
//! time, and the mixed v0/v1/v2 segment. Each batch's record count, first and last offsets and largest
//! timestamp must be what kafka-python read (`<name>.batches`).

use rsm_core::error::{ErrorKind, Result};
use rsm_core::format::batch::{Batch, BatchIter};
use rsm_core::format::records::compression::{self, Codec};
use rsm_core::format::records::{DecodeLimits, DecodedBatch, TimestampType, decode_batch};

mod common;
use common::{CASES, expected, log};

#[test]
fn every_record_of_every_legacy_fixture_decodes_as_kafka_python_read_it() {
    let limits = DecodeLimits::default();
    let mut total = 0;
    for name in CASES {
        let bytes = log(name);
        let want = expected(name);
        let batches: Vec<Batch<'_>> = BatchIter::new(&bytes, 0, true).map(Result::unwrap).collect();
        assert_eq!(batches.len(), want.len(), "{name}");
        for (i, (b, w)) in batches.iter().zip(&want).enumerate() {
            let d = decode_batch(b, &limits).unwrap_or_else(|e| panic!("{name} batch {i}: {e}"));
            let at = format!("{name} batch {i} ({w:?})");
            let offsets: Vec<i64> = d.records.iter().map(|r| r.offset).collect();
            let first_to_last: Vec<i64> = (w.first_offset..=w.last_offset).collect();
            assert_eq!(offsets, first_to_last, "{at}");
            assert_eq!(d.records.len(), w.records as usize, "{at}");
            assert_eq!((d.base_offset, d.last_offset, d.magic), (w.first_offset, w.last_offset, w.magic), "{at}");
            let max_ts = d.records.iter().map(|r| r.timestamp).max().unwrap();
            assert_eq!(max_ts, w.max_timestamp, "{at}");
            let want_type = match (w.magic, name.contains("log-append-time")) {
                (0, _) => TimestampType::NoTimestampType,
                (1, true) => TimestampType::LogAppendTime,
                _ => TimestampType::CreateTime,
            };
            assert!(d.records.iter().all(|r| r.timestamp_type == want_type), "{at}");
            if w.magic == 0 {
                assert!(d.records.iter().all(|r| r.timestamp == -1), "{at}");
            }
            assert!(d.records.iter().all(|r| r.value.is_some()), "{at}: kafka-python wrote a value in each");
            assert_eq!((d.producer_id, d.producer_epoch, d.transactional, d.control), (-1, -1, false, None), "{at}");
            total += d.records.len();
        }
    }
    assert!(total > 3000, "{total} records");
}

/// The value of a legacy message (a wrapper's compressed message set).
fn value(b: &Batch<'_>) -> Vec<u8> {
    let bytes = b.bytes();
    let mut at = if b.magic() == 0 { 18 } else { 26 };
    let key = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    at += 4 + key.max(0) as usize;
    let len = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    bytes[at + 4..at + 4 + len].to_vec()
}

#[test]
fn magic_0_lz4_has_the_broken_header_checksum_of_kafka_3160() {
    let v0 = log("v0-lz4");
    let v1 = log("v1-lz4");
    let first = |bytes| BatchIter::new(bytes, 0, true).next().unwrap().unwrap();
    let (b0, b1) = (first(&v0), first(&v1));
    assert_eq!((b0.magic(), b0.compression(), b1.magic(), b1.compression()), (0, 3, 1, 3));
    let (old, new) = (value(&b0), value(&b1));
    // lz4_flex checks the header checksum, and magic 0's is wrong: only the magic-0 path reads it.
    let e = compression::lz4(&old, 1 << 20, "batch at offset 1011").unwrap_err().to_string();
    assert!(e.contains("batch at offset 1011") && e.contains("HeaderChecksumError"), "{e}");
    assert!(compression::lz4_magic0(&old, 1 << 20, "t").is_ok());
    assert!(compression::decompress(Codec::Lz4, &new, 1 << 20, "t").is_ok());
    // A correct checksum is fine on the magic-0 path too (Kafka ignores it there).
    assert!(compression::lz4_magic0(&new, 1 << 20, "t").is_ok());
}

#[test]
fn every_codec_of_the_fixtures_reads_under_a_tight_limit_and_not_under_a_tighter_one() {
    for name in ["v0-gzip", "v1-snappy", "v1-lz4"] {
        let bytes = log(name);
        let b = BatchIter::new(&bytes, 0, true).next().unwrap().unwrap();
        let inflated = decode_batch(&b, &DecodeLimits::default()).unwrap();
        let set: usize = inflated.records.iter().map(|r| r.value.as_ref().map_or(0, Vec::len)).sum();
        assert!(decode_batch(&b, &DecodeLimits { max_batch_bytes: 1 << 20 }).is_ok(), "{name}");
        let e = decode_batch(&b, &DecodeLimits { max_batch_bytes: set / 2 }).unwrap_err().to_string();
        assert!(e.contains(&format!("batch at offset {}", b.base_offset())) && e.contains("max_batch_bytes"), "{e}");
    }
}

/// A legacy message as Kafka lays it out, with a valid CRC-32.
fn message(magic: u8, offset: i64, attributes: u8, timestamp: i64, key: Option<&[u8]>, value: &[u8]) -> Vec<u8> {
    let mut body = vec![magic, attributes];
    if magic == 1 {
        body.extend_from_slice(&timestamp.to_be_bytes());
    }
    for field in [key, Some(value)] {
        match field {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(f) => {
                body.extend_from_slice(&(f.len() as i32).to_be_bytes());
                body.extend_from_slice(f);
            }
        }
    }
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    compression::compress(Codec::Gzip, bytes)
}

fn decode_one(bytes: &[u8]) -> Result<DecodedBatch> {
    decode_batch(&BatchIter::new(bytes, 0, true).next().unwrap().unwrap(), &DecodeLimits::default())
}

/// (offset, timestamp, type) of a record.
type Seen = (i64, i64, TimestampType);

/// (offset, timestamp, type) of each record.
fn seen(d: &DecodedBatch) -> Vec<Seen> {
    d.records.iter().map(|r| (r.offset, r.timestamp, r.timestamp_type)).collect()
}

#[test]
fn legacy_wrappers_give_offsets_and_timestamps_as_kafkas_deep_iterator() {
    use TimestampType::*;
    let v1_inner: Vec<u8> = (0..3).flat_map(|i| message(1, i, 0, 100 + i, None, b"v")).collect();
    let v0_inner: Vec<u8> = (50..53).flat_map(|i| message(0, i, 0, 0, Some(b"k"), b"v")).collect();
    let cases: Vec<(&str, Vec<u8>, Vec<Seen>)> = vec![
        // magic 1: relative inner offsets, the wrapper's offset is the last one's.
        (
            "v1 create time",
            message(1, 20, 1, 999, None, &gzip(&v1_inner)),
            vec![(18, 100, CreateTime), (19, 101, CreateTime), (20, 102, CreateTime)],
        ),
        (
            "v1 log-append time",
            message(1, 20, 1 | 0x08, 999, None, &gzip(&v1_inner)),
            vec![(18, 999, LogAppendTime), (19, 999, LogAppendTime), (20, 999, LogAppendTime)],
        ),
        // A wrapper offset of 0 (some librdkafka versions): base 0.
        (
            "v1 wrapper offset 0",
            message(1, 0, 1, 999, None, &gzip(&v1_inner)),
            vec![(0, 100, CreateTime), (1, 101, CreateTime), (2, 102, CreateTime)],
        ),
        // magic 0: inner offsets are absolute, no timestamps.
        (
            "v0",
            message(0, 52, 1, 0, None, &gzip(&v0_inner)),
            vec![(50, -1, NoTimestampType), (51, -1, NoTimestampType), (52, -1, NoTimestampType)],
        ),
        // A plain v1 message with log-append time keeps its own timestamp.
        ("plain v1", message(1, 7, 0x08, 555, Some(b"k"), b"v"), vec![(7, 555, LogAppendTime)]),
    ];
    for (name, bytes, want) in cases {
        let d = decode_one(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(seen(&d), want, "{name}");
        assert_eq!((d.base_offset, d.last_offset), (want[0].0, i64::from_be_bytes(bytes[..8].try_into().unwrap())));
    }
    // A partial message at the end of the set ends it, as Kafka's DataLogInputStream.
    let mut cut = v1_inner.clone();
    cut.extend_from_slice(&message(1, 3, 0, 103, None, b"v")[..20]);
    assert_eq!(decode_one(&message(1, 20, 1, 999, None, &gzip(&cut))).unwrap().records.len(), 3);
}

#[test]
fn legacy_wrappers_kafka_refuses_are_corrupt() {
    let inner = message(1, 0, 0, 1, None, b"v");
    let nested = message(1, 0, 1, 1, None, &gzip(&inner));
    let mut bad_crc = inner.clone();
    *bad_crc.last_mut().unwrap() ^= 1;
    let zstd = zstd::encode_all(&inner[..], 1).unwrap();
    let cases = [
        ("nested", message(1, 5, 1, 1, None, &gzip(&nested)), "compressed too"),
        ("empty", message(1, 5, 1, 1, None, &gzip(&[])), "no inner message"),
        ("zstd", message(1, 5, 4, 1, None, &zstd), "codec 4"),
        ("codec 6", message(1, 5, 6, 1, None, &inner), "codec 6"),
        ("inner crc", message(1, 5, 1, 1, None, &gzip(&bad_crc)), "CRC-32"),
        ("wrapper below inner", message(1, 5, 1, 1, None, &gzip(&message(1, 9, 0, 1, None, b"v"))), "below"),
        ("not gzip", message(1, 5, 1, 1, None, b"not gzip at all"), "gzip"),
        ("tiny inner size", message(1, 5, 1, 1, None, &gzip(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3])), "size 3"),
    ];
    for (name, bytes, part) in cases {
        let e = decode_one(&bytes).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{name}: {e}");
        assert!(e.to_string().contains(part) && e.to_string().contains("batch at offset 5"), "{name}: {e}");
    }
}
