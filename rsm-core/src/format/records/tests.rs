//! Round trips of v2 batches with every codec (compressed here with the codec crates), log-append time,
//! control batches, legacy wrappers built by hand, and the bounds: a batch past the limit, damaged payloads.

use super::compression::{Codec, XERIAL_MAGIC, decompress};
use super::*;
use crate::format::batch::{ATTRIBUTES_OFFSET, BatchIter, CRC_OFFSET, V2_HEADER_LEN};
use crate::format::writer::{Record as Written, encode_batch};
use std::io::Write;

/// `bytes` compressed with `codec` as a Kafka producer would (snappy: xerial framing, 32 KiB blocks).
pub(crate) fn compress(codec: Codec, bytes: &[u8]) -> Vec<u8> {
    match codec {
        Codec::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(bytes).unwrap();
            e.finish().unwrap()
        }
        Codec::Snappy => {
            let mut out = XERIAL_MAGIC.to_vec();
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            for block in bytes.chunks(32 * 1024) {
                let c = snap::raw::Encoder::new().compress_vec(block).unwrap();
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            out
        }
        Codec::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(bytes).unwrap();
            e.finish().unwrap()
        }
        Codec::Zstd => zstd::encode_all(bytes, 3).unwrap(),
    }
}

/// A v2 batch of `records` at `base`: its records section compressed with `codec` (if any), `extra`
/// attribute bits set, its length and CRC-32C made right.
fn batch(base: i64, records: &[Written], codec: Option<Codec>, extra: i16) -> Vec<u8> {
    let plain = encode_batch(base, 0, records);
    let section = match codec {
        None => plain[V2_HEADER_LEN..].to_vec(),
        Some(c) => compress(c, &plain[V2_HEADER_LEN..]),
    };
    let mut out = plain[..V2_HEADER_LEN].to_vec();
    out.extend_from_slice(&section);
    let len = (out.len() - 12) as i32;
    out[8..12].copy_from_slice(&len.to_be_bytes());
    let attributes = i16::from(codec.map_or(0, Codec::id)) | extra;
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    fix_crc(&mut out);
    out
}

fn fix_crc(b: &mut [u8]) {
    let crc = crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]);
    b[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
}

fn decode(bytes: &[u8], limits: &DecodeLimits) -> Result<DecodedBatch> {
    let batch = BatchIter::new(bytes, 0, true).next().expect("a batch").expect("a whole batch");
    decode_batch(&batch, limits)
}

fn written(n: usize) -> Vec<Written> {
    (0..n)
        .map(|i| Written {
            key: (i % 3 != 0).then(|| format!("key-{i}").into_bytes()),
            value: (i % 5 != 4).then(|| format!("value {i} ").repeat(i % 7 + 1).into_bytes()),
            headers: if i % 2 == 0 { vec![("h".into(), vec![i as u8]), ("ü".into(), vec![])] } else { vec![] },
            timestamp: 1_000 + (i as i64 * 7) % 50,
        })
        .collect()
}

const CODECS: [Option<Codec>; 5] = [None, Some(Codec::Gzip), Some(Codec::Snappy), Some(Codec::Lz4), Some(Codec::Zstd)];

#[test]
fn timestamp_types_are_named_as_kafka_names_them() {
    let names = [TimestampType::NoTimestampType, TimestampType::CreateTime, TimestampType::LogAppendTime]
        .map(TimestampType::name);
    assert_eq!(names, ["NoTimestampType", "CreateTime", "LogAppendTime"]);
    assert_eq!(DecodeLimits::default().max_batch_bytes, 64 << 20);
}

#[test]
fn v2_batches_of_every_codec_read_back_as_written() {
    let w = written(200);
    for codec in CODECS {
        let got = decode(&batch(592, &w, codec, 0), &DecodeLimits::default()).unwrap();
        assert_eq!((got.base_offset, got.last_offset, got.magic), (592, 791, 2), "{codec:?}");
        assert_eq!((got.producer_id, got.producer_epoch, got.transactional, got.control), (-1, -1, false, None));
        assert_eq!(got.records.len(), w.len(), "{codec:?}");
        for (i, (r, w)) in got.records.iter().zip(&w).enumerate() {
            assert_eq!(
                (r.offset, r.timestamp, r.timestamp_type),
                (592 + i as i64, w.timestamp, TimestampType::CreateTime)
            );
            assert_eq!((&r.key, &r.value), (&w.key, &w.value), "{codec:?} record {i}");
            let headers: Vec<_> = w.headers.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
            assert_eq!(r.headers, headers, "{codec:?} record {i}");
        }
    }
}

#[test]
fn raw_snappy_without_xerial_framing_reads_too() {
    let data = b"not framed ".repeat(100);
    let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    assert_eq!(decompress(Codec::Snappy, &raw, 1 << 20, "t").unwrap(), data);
    // Two xerial streams one after the other, as snappy-java reads them.
    let mut two = compress(Codec::Snappy, b"first ");
    two.extend(compress(Codec::Snappy, b"second"));
    assert_eq!(decompress(Codec::Snappy, &two, 1 << 20, "t").unwrap(), b"first second");
}

#[test]
fn log_append_time_gives_every_record_the_batch_max_timestamp() {
    let w = written(20);
    for codec in CODECS {
        let mut b = batch(0, &w, codec, 0x08);
        b[35..43].copy_from_slice(&777_000i64.to_be_bytes());
        fix_crc(&mut b);
        let got = decode(&b, &DecodeLimits::default()).unwrap();
        assert!(got.records.iter().all(|r| r.timestamp == 777_000 && r.timestamp_type == TimestampType::LogAppendTime));
    }
}

/// A control batch of producer 42 whose one record has `key`.
fn control(key: Option<Vec<u8>>, codec: Option<Codec>) -> Vec<u8> {
    let rec = Written { key, value: Some(vec![0, 0, 0, 0, 0, 5]), headers: vec![], timestamp: 9 };
    let mut b = batch(30, &[rec], codec, 0x30);
    b[43..51].copy_from_slice(&42i64.to_be_bytes());
    b[51..53].copy_from_slice(&3i16.to_be_bytes());
    fix_crc(&mut b);
    b
}

#[test]
fn control_batches_give_their_marker_and_no_records() {
    let cases = [
        (vec![0, 0, 0, 0], ControlType::Abort),
        (vec![0, 0, 0, 1], ControlType::Commit),
        (vec![0, 0, 0, 5], ControlType::Unknown(5)),
        // A newer key version is read as version 0, as Kafka does.
        (vec![0, 3, 0, 1, 9], ControlType::Commit),
    ];
    for (key, want) in cases {
        for codec in [None, Some(Codec::Zstd)] {
            let bytes = control(Some(key.clone()), codec);
            let got = decode(&bytes, &DecodeLimits::default()).unwrap();
            assert_eq!((got.control, got.records.len()), (Some(want), 0), "{key:?}");
            assert_eq!((got.producer_id, got.producer_epoch, got.transactional), (42, 3, true));
            let b = BatchIter::new(&bytes, 0, true).next().unwrap().unwrap();
            assert!(is_control(&b));
        }
    }
    for bad in [None, Some(vec![0, 0, 1]), Some(vec![0xff, 0xff, 0, 0])] {
        let e = decode(&control(bad.clone(), None), &DecodeLimits::default()).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{bad:?}: {e}");
    }
}

#[test]
fn a_batch_that_inflates_past_the_limit_is_an_error_naming_it() {
    // 10 MiB of zeros in one record, limit 1 MiB.
    let w = [Written { value: Some(vec![0; 10 << 20]), ..Default::default() }];
    let limits = DecodeLimits { max_batch_bytes: 1 << 20 };
    for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let b = batch(592, &w, Some(codec), 0);
        assert!(b.len() < 1 << 20, "{codec:?} compresses the zeros");
        let e = decode(&b, &limits).unwrap_err().to_string();
        for part in ["batch at offset 592", codec.name(), "1048576", "DecodeLimits::max_batch_bytes"] {
            assert!(e.contains(part), "{codec:?}: {e:?} lacks {part:?}");
        }
        assert!(decode(&b, &DecodeLimits { max_batch_bytes: 11 << 20 }).is_ok(), "{codec:?} under a larger limit");
    }
    // zstd with its content size in the frame header (the bulk API), and raw snappy: refused before inflating.
    let zeros = vec![0u8; 10 << 20];
    let bulk = zstd::bulk::compress(&zeros, 3).unwrap();
    let raw = snap::raw::Encoder::new().compress_vec(&zeros).unwrap();
    for (codec, bytes) in [(Codec::Zstd, bulk), (Codec::Snappy, raw)] {
        let e = decompress(codec, &bytes, 1 << 20, "batch at offset 7").unwrap_err().to_string();
        assert!(e.contains("batch at offset 7") && e.contains("max_batch_bytes"), "{e}");
        assert_eq!(decompress(codec, &bytes, 10 << 20, "t").unwrap().len(), 10 << 20, "exactly at the limit");
    }
}

#[test]
fn truncated_and_garbage_payloads_are_errors_not_panics() {
    let data: Vec<u8> = (0..20_000u32).flat_map(|i| (i % 251).to_be_bytes()).collect();
    for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let c = compress(codec, &data);
        assert_eq!(decompress(codec, &c, 1 << 20, "t").unwrap(), data);
        for cut in (1..c.len()).step_by(c.len() / 97 + 1) {
            match decompress(codec, &c[..cut], 1 << 20, "batch at offset 3") {
                Err(e) => assert!(e.to_string().contains("batch at offset 3"), "{e}"),
                // xerial framing has no end mark: a cut between blocks is a shorter stream.
                Ok(out) => assert!(codec == Codec::Snappy && data.starts_with(&out), "{codec:?} cut at {cut} decoded"),
            }
        }
        for at in (0..c.len()).step_by(c.len() / 89 + 1) {
            let mut g = c.clone();
            g[at] ^= 0x5a;
            if let Ok(out) = decompress(codec, &g, 1 << 20, "t") {
                assert!(out.len() <= 1 << 20);
            }
        }
        let garbage: Vec<u8> = (0..3000u32).map(|i| (i * 7919 % 256) as u8).collect();
        assert!(decompress(codec, &garbage, 1 << 20, "t").is_err(), "{codec:?} garbage");
        let _ = decompress(codec, &[], 1 << 20, "t");
    }
}

#[test]
fn damaged_records_are_errors_not_panics() {
    let w = [Written { key: Some(vec![1; 30]), value: Some(vec![2; 30]), ..Default::default() }];
    for codec in [None, Some(Codec::Gzip)] {
        let bytes = batch(0, &w, codec, 0);
        for cut in V2_HEADER_LEN..bytes.len() {
            let mut b = bytes.clone();
            b[cut] = 0x7f;
            if let Ok(Some(batch)) = BatchIter::new(&b, 0, false).next_complete() {
                let _ = decode_batch(&batch, &DecodeLimits::default());
            }
            let mut t = bytes[..cut].to_vec();
            t[8..12].copy_from_slice(&(cut as i32 - 12).to_be_bytes());
            if let Ok(Some(batch)) = BatchIter::new(&t, 0, false).next_complete() {
                assert!(decode_batch(&batch, &DecodeLimits::default()).is_err(), "{codec:?} cut at {cut} decoded");
            }
        }
    }
}

#[test]
fn a_record_count_that_disagrees_with_the_records_is_corrupt() {
    let w = written(5);
    for (count, what) in [(4i32, "bytes after its 4 records"), (6, "record 5"), (-1, "record count -1")] {
        let mut b = batch(0, &w, None, 0);
        b[57..61].copy_from_slice(&count.to_be_bytes());
        fix_crc(&mut b);
        let e = decode(&b, &DecodeLimits::default()).unwrap_err();
        assert!(e.to_string().contains(what) || count == 6, "{count}: {e}");
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt);
    }
    // A count of 2^31-1 over a few bytes allocates nothing by the count.
    let mut b = batch(0, &w, Some(Codec::Lz4), 0);
    b[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    fix_crc(&mut b);
    assert!(decode(&b, &DecodeLimits::default()).is_err());
}

#[test]
fn unknown_codecs_are_corrupt() {
    for id in 5..8 {
        let mut b = batch(0, &written(2), None, id);
        fix_crc(&mut b);
        let e = decode(&b, &DecodeLimits::default()).unwrap_err();
        assert!(e.to_string().contains(&format!("unknown compression codec {id}")), "{e}");
    }
}
