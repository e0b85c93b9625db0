//! Round trips of v2 batches with every codec (written by the batch writer, compressed by
//! [`compress`]), log-append time, control batches, legacy wrappers built by hand, and the bounds: a batch
//! past the limit, damaged payloads.

use super::compression::{Codec, XERIAL_BLOCK_BYTES, XERIAL_MAGIC, compress, decompress};
use super::*;
use crate::format::batch::{ATTRIBUTES_OFFSET, BatchIter, CRC_OFFSET, V2_HEADER_LEN};
use crate::testkit::log_writer::{BatchOptions, Record as Written, encode_batch_with, encode_control_batch};

/// A v2 batch of `records` at `base`, its records section compressed with `codec` (if any).
fn batch(base: i64, records: &[Written], codec: Option<Codec>) -> Vec<u8> {
    encode_batch_with(base, 0, records, &BatchOptions { compression: codec, ..BatchOptions::default() })
}

/// `b` with `bits` set in its attributes and its CRC-32C made right again: a batch the writer does not write.
fn with_attributes(mut b: Vec<u8>, bits: i16) -> Vec<u8> {
    let attributes = i16::from_be_bytes([b[ATTRIBUTES_OFFSET], b[ATTRIBUTES_OFFSET + 1]]) | bits;
    b[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    fix_crc(&mut b);
    b
}

fn fix_crc(b: &mut [u8]) {
    let crc = crate::checksum::crc32c(&b[ATTRIBUTES_OFFSET..]);
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
        let got = decode(&batch(592, &w, codec), &DecodeLimits::default()).unwrap();
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
        let options = BatchOptions { compression: codec, log_append_time: Some(777_000), ..BatchOptions::default() };
        let got = decode(&encode_batch_with(0, 0, &w, &options), &DecodeLimits::default()).unwrap();
        assert_eq!(got.records.len(), w.len(), "{codec:?}");
        assert!(got.records.iter().all(|r| r.timestamp == 777_000 && r.timestamp_type == TimestampType::LogAppendTime));
    }
}

/// A control batch of producer 42 (epoch 3) whose one record has `key`: written as a transactional batch, the
/// control bit set after (the writer writes only commit and abort markers, uncompressed).
fn control(key: Option<Vec<u8>>, codec: Option<Codec>) -> Vec<u8> {
    let rec = Written { key, value: Some(vec![0, 0, 0, 0, 0, 5]), headers: vec![], timestamp: 9 };
    let options = BatchOptions {
        compression: codec,
        producer_id: 42,
        producer_epoch: 3,
        transactional: true,
        ..BatchOptions::default()
    };
    with_attributes(encode_batch_with(30, 0, &[rec], &options), 0x20)
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
    for commit in [false, true] {
        let got = decode(&encode_control_batch(30, 0, 42, 3, commit, 5, 9), &DecodeLimits::default()).unwrap();
        let want = if commit { ControlType::Commit } else { ControlType::Abort };
        assert_eq!((got.control, got.records.len()), (Some(want), 0));
        assert_eq!((got.producer_id, got.producer_epoch, got.transactional), (42, 3, true));
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
        let b = batch(592, &w, Some(codec));
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
        let bytes = batch(0, &w, codec);
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
        let mut b = batch(0, &w, None);
        b[57..61].copy_from_slice(&count.to_be_bytes());
        fix_crc(&mut b);
        let e = decode(&b, &DecodeLimits::default()).unwrap_err();
        assert!(e.to_string().contains(what) || count == 6, "{count}: {e}");
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt);
    }
    // A count of 2^31-1 over a few bytes allocates nothing by the count.
    let mut b = batch(0, &w, Some(Codec::Lz4));
    b[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
    fix_crc(&mut b);
    assert!(decode(&b, &DecodeLimits::default()).is_err());
}

#[test]
fn unknown_codecs_are_corrupt() {
    for id in 5..8 {
        let b = with_attributes(batch(0, &written(2), None), id);
        let e = decode(&b, &DecodeLimits::default()).unwrap_err();
        assert!(e.to_string().contains(&format!("unknown compression codec {id}")), "{e}");
    }
}

/// Incompressible-ish bytes: `n` of a xorshift stream, in a few distinct runs so that the codecs find some.
fn mixed(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|i| {
            if i % 4096 < 2048 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            } else {
                (i % 251) as u8
            }
        })
        .collect()
}

#[test]
fn compress_writes_each_codec_as_kafkas_java_producer_does() {
    let data = mixed(200 << 10);
    // gzip: one member, no name, mtime 0, level 6 (XFL 0), OS 255.
    let gz = compress(Codec::Gzip, &data);
    assert_eq!(gz[..10], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    // snappy: the xerial header (version 1, compatible 1), then blocks of at most 32 KiB of input.
    let sn = compress(Codec::Snappy, &data);
    assert_eq!(sn[..16], [&XERIAL_MAGIC[..], &[0, 0, 0, 1, 0, 0, 0, 1]].concat()[..]);
    let (mut at, mut blocks) = (16, Vec::new());
    while at < sn.len() {
        let len = u32::from_be_bytes(sn[at..at + 4].try_into().unwrap()) as usize;
        blocks.push(snap::raw::decompress_len(&sn[at + 4..at + 4 + len]).unwrap());
        at += 4 + len;
    }
    assert_eq!(blocks.len(), data.len().div_ceil(XERIAL_BLOCK_BYTES));
    let (last, full) = blocks.split_last().unwrap();
    assert!(full.iter().all(|&n| n == XERIAL_BLOCK_BYTES) && *last <= XERIAL_BLOCK_BYTES, "{blocks:?}");
    assert_eq!(blocks.iter().sum::<usize>(), data.len());
    // lz4: FLG 0x60 (version 1, independent blocks, no checksums, no content size), BD 0x40 (64 KiB blocks),
    // the header checksum (xxhash32 of FLG and BD, second byte), then blocks of at most 64 KiB and the end mark.
    let lz = compress(Codec::Lz4, &data);
    assert_eq!(lz[..6], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40]);
    assert_eq!(lz[6], (twox_hash::XxHash32::oneshot(0, &lz[4..6]) >> 8) as u8);
    let (mut at, mut n) = (7, 0);
    loop {
        let word = u32::from_le_bytes(lz[at..at + 4].try_into().unwrap());
        at += 4;
        if word == 0 {
            break;
        }
        let size = (word & 0x7fff_ffff) as usize;
        assert!(size <= 64 << 10, "a block of {size} bytes");
        at += size;
        n += 1;
    }
    assert_eq!((at, n), (lz.len(), data.len().div_ceil(64 << 10)), "no content checksum after the end mark");
    // zstd: streamed, so no content size in the frame header, and no checksum (FHD bit 2).
    let zs = compress(Codec::Zstd, &data);
    assert!(matches!(zstd::zstd_safe::get_frame_content_size(&zs), Ok(None)), "no content size");
    assert_eq!(zs[4] & 0x04, 0, "no content checksum");
    for (codec, c) in [(Codec::Gzip, gz), (Codec::Snappy, sn), (Codec::Lz4, lz), (Codec::Zstd, zs)] {
        assert_eq!(decompress(codec, &c, 1 << 20, "t").unwrap(), data, "{codec:?}");
        let empty = compress(codec, &[]);
        assert_eq!(decompress(codec, &empty, 1 << 20, "t").unwrap(), b"", "{codec:?} of nothing");
    }
    assert_eq!(compress(Codec::Snappy, &[]), [&XERIAL_MAGIC[..], &[0, 0, 0, 1, 0, 0, 0, 1]].concat());
}
