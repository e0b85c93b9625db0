//! The transforms' tests: the heuristic's decisions, round trips of every way a chunk is stored, and damaged
//! or misdescribed stored bytes refused.

use super::undo::{decompress_prefix, with_dctx};
use super::*;
use crate::format::chunk::{ChunkEntry, Rdi, RdiObject, StoredFrame, Transform};
use crate::model::Uuid;
use crate::testkit::log_writer::{Record, encode_batch};
use bytes::Bytes;
use std::ops::Range;

/// JSON-like records: compressible.
fn json_batches(n: usize) -> Vec<u8> {
    let mut log = Vec::new();
    for i in 0..n {
        let recs: Vec<Record> = (0..10)
            .map(|j| Record {
                value: Some(format!(r#"{{"order":{i},"line":{j},"sku":"ABC-{j:04}","qty":1}}"#).into_bytes()),
                timestamp: 1000 + i as i64,
                ..Default::default()
            })
            .collect();
        log.extend(encode_batch(i as i64 * 10, 0, &recs));
    }
    log
}

/// `log` as one batch whose attributes name gzip (the bytes stay as they are: only the codec bits
/// matter to the heuristic).
fn marked_compressed(mut log: Vec<u8>) -> Vec<u8> {
    let mut pos = 0;
    while pos < log.len() {
        let size = 12 + u32::from_be_bytes(log[pos + 8..pos + 12].try_into().unwrap()) as usize;
        log[pos + 22] |= 1; // attributes (i16 at 21): low byte, codec gzip
        pos += size;
    }
    log
}

fn entry(original: &[u8], stored: &[u8], transform: Transform) -> ChunkEntry {
    ChunkEntry {
        first_offset: 0,
        last_offset: 9,
        first_timestamp: 0,
        last_timestamp: 0,
        data_length: original.len() as u32,
        rdi: Rdi {
            object: RdiObject::Log,
            transform,
            segment_start_offset: 0,
            segment_id: Uuid::ONE,
            stored_position: 0,
            stored_length: stored.len() as u32,
            crc32c: crate::checksum::crc32c(original),
            original_position: 0,
            stored_crc32c: crate::checksum::crc32c(stored),
        },
    }
}

#[test]
fn decisions_follow_the_heuristic() {
    let json = json_batches(50);
    let producer = marked_compressed(json.clone());
    let mut rng = crate::testkit::log_writer::Rng::new(7);
    let noise: Vec<u8> = (0..20_000).map(|_| rng.next_u64() as u8).collect();
    let on = CompressionConfig::default();
    let off = CompressionConfig { heuristic: false, ..on };
    let strict = CompressionConfig { min_saving_percent: 99, ..on };
    // (case, settings, chunk, decision)
    let cases: [(&str, CompressionConfig, &[u8], Decision); 6] = [
        ("JSON, heuristic on", on, &json, Decision::Compressed),
        ("JSON, heuristic off", off, &json, Decision::Compressed),
        ("producer-compressed, heuristic on", on, &producer, Decision::ProducerCompressed),
        ("producer-compressed, heuristic off", off, &producer, Decision::Compressed),
        ("noise, heuristic on", on, &noise, Decision::TooLittleSaving),
        ("JSON, a 99% saving asked for", strict, &json, Decision::TooLittleSaving),
    ];
    for (case, config, chunk, want) in cases {
        let (got, stored) = ChunkCompressor::new(config).unwrap().apply(chunk, 0).unwrap();
        assert_eq!(got, want, "{case}");
        assert_eq!(stored.is_some(), want == Decision::Compressed, "{case}");
        if let Some(s) = stored {
            let c = entry(chunk, &s, Transform::Zstd);
            assert_eq!(&undo(&c, Bytes::from(s), "k").unwrap()[..], chunk, "{case}: round trip");
        }
    }
    assert_eq!(producer_compressed_bytes(&producer, 0), producer.len() as u64);
    assert_eq!(producer_compressed_bytes(&json, 0), 0);
}

#[test]
fn damaged_or_misdescribed_stored_bytes_are_corrupt() {
    let json = json_batches(30);
    let (_, stored) = ChunkCompressor::new(CompressionConfig::default()).unwrap().apply(&json, 0).unwrap();
    let stored = stored.unwrap();
    assert!(stored.len() * 3 < json.len(), "JSON compresses: {} of {}", stored.len(), json.len());
    let good = entry(&json, &stored, Transform::Zstd);
    for i in 0..stored.len() {
        let mut bad = stored.clone();
        bad[i] ^= 0x10;
        let e = undo(&good, Bytes::from(bad), "t/0/x.log").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "byte {i}: {e}");
        assert!(e.to_string().contains("t/0/x.log: chunk at position 0"), "byte {i}: {e}");
    }
    // A frame whose stored CRC matches (the entry was written for it) but that decodes to other lengths
    // than the entry says: the output buffer is the entry's length, never the frame's.
    for (case, data_length, says) in
        [("shorter", json.len() - 1, "does not decompress"), ("longer", json.len() + 1, "decompresses to")]
    {
        let c = ChunkEntry { data_length: data_length as u32, ..good };
        let e = undo(&c, Bytes::from(stored.clone()), "k").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{case}: {e}");
        assert!(e.to_string().contains(says), "{case}: {e}");
    }
    // A valid frame of other bytes: caught by the original CRC.
    let other = json_batches(31);
    let (_, other_stored) = ChunkCompressor::new(CompressionConfig::default()).unwrap().apply(&other, 0).unwrap();
    let other_stored = other_stored.unwrap();
    let c = ChunkEntry {
        data_length: other.len() as u32,
        rdi: Rdi {
            stored_length: other_stored.len() as u32,
            stored_crc32c: crate::checksum::crc32c(&other_stored),
            ..good.rdi
        },
        ..good
    };
    let e = undo(&c, Bytes::from(other_stored), "k").unwrap_err();
    assert!(e.to_string().contains("CRC-32C"), "{e}");
    let e = undo(&good, Bytes::from(stored[1..].to_vec()), "k").unwrap_err();
    assert!(e.to_string().contains("stored bytes, its entry says"), "{e}");
}

#[test]
fn frame_sizes_are_whole_blocks() {
    // (frame size, block size, what a copy uses)
    for (frame, block, want) in
        [(0, 65_536, 0), (262_144, 65_536, 262_144), (100_000, 4096, 98_304), (1000, 4096, 4096), (7, 0, 7)]
    {
        let c = CompressionConfig { frame_size: frame, ..CompressionConfig::default() };
        assert_eq!(c.frame_size_for(block), want, "{frame} in blocks of {block}");
    }
}

#[test]
fn stored_frames_are_those_holding_the_range() {
    // A chunk of 100,000 bytes stored at 1,000 in 7 frames of 16,384 (the last of 1,696 bytes), whose
    // stored lengths are 100, 200, ..., 700.
    let mut c = entry(&[0; 100_000], &[0; 2_800], Transform::ZstdFrames);
    c.rdi.stored_position = 1_000;
    let frames: Vec<StoredFrame> = (1..=7).map(|k| StoredFrame { stored_length: k * 100, stored_crc32c: 0 }).collect();
    // (wanted, the frames, the original bytes they hold, their stored range)
    let cases = [
        (0..1, 0..1, 0..16_384, 1_000..1_100),
        (16_383..16_385, 0..2, 0..32_768, 1_000..1_300),
        (20_000..40_000, 1..3, 16_384..49_152, 1_100..1_600),
        (32_768..49_152, 2..3, 32_768..49_152, 1_300..1_600),
        (98_304..100_000, 6..7, 98_304..100_000, 3_100..3_800),
        (0..100_000, 0..7, 0..100_000, 1_000..3_800),
    ];
    for (wanted, want_frames, within, stored) in cases {
        assert_eq!(stored_frames(&c, &frames, 16_384, &wanted), (want_frames, within, stored), "{wanted:?}");
    }
}

#[test]
fn frames_compress_alone_and_undo_as_far_as_asked() {
    let json = json_batches(400);
    let step = 16_384;
    let (decision, frames) = ChunkCompressor::new(CompressionConfig { heuristic: false, ..Default::default() })
        .unwrap()
        .apply_frames(&json, 0, step as u32)
        .unwrap();
    assert_eq!(decision, Decision::Compressed);
    let Frames { bytes, lengths } = frames.unwrap();
    assert_eq!(lengths.len(), json.len().div_ceil(step));
    let mut at = 0;
    for (n, want) in lengths.iter().zip(json.chunks(step)) {
        // Each one an independent zstd frame (decoded by zstd alone) of its piece of the chunk.
        let got = zstd::bulk::decompress(&bytes[at..at + *n as usize], want.len()).unwrap();
        assert!(got == want);
        at += *n as usize;
    }
    assert_eq!(at, bytes.len());
    let one = ChunkCompressor::new(CompressionConfig::default()).unwrap().apply(&json, 0).unwrap().1.unwrap();
    assert!(bytes.len() < one.len() * 3 / 2, "frames of 16 KiB: {} bytes, one frame {}", bytes.len(), one.len());

    // In a manifest: chunk 1 of `sample()` becomes this chunk, stored in frames.
    let mut m = crate::format::manifest::tests::sample();
    let (e, table) = framed_entry(&entry(&json, &bytes, Transform::None), Transform::ZstdFrames, 0, &bytes, &lengths);
    assert_eq!(e.rdi.stored_crc32c, crate::checksum::crc32c(&bytes), "the frames' CRCs combine to the whole's");
    assert_eq!((e.rdi.stored_length as usize, e.rdi.transform), (bytes.len(), Transform::ZstdFrames));
    m.chunks[1] = e;
    m.frames = Some(crate::format::manifest::FrameTable { frame_size: step as u32, chunks: vec![vec![], table] });
    let stored_of = |frames: Range<usize>| {
        let start: usize = lengths[..frames.start].iter().map(|&n| n as usize).sum();
        let len: usize = lengths[frames].iter().map(|&n| n as usize).sum();
        &bytes[start..start + len]
    };
    let n = lengths.len();
    // (frames, up to, the original bytes expected)
    let cases = [
        (0..n, json.len(), 0..json.len()),
        (0..1, 100, 0..100),
        (2..4, 3 * step + 4096, 2 * step..3 * step + 4096),
        (n - 1..n, json.len(), (n - 1) * step..json.len()),
    ];
    for (frames, upto, want) in cases {
        let got = undo_frames(&m, 1, frames.clone(), stored_of(frames.clone()), upto as u64, "k", None).unwrap();
        assert!(got[..] == json[want.clone()], "frames {frames:?} up to {upto}");
    }
    // A flipped stored byte in frame 2, the stored bytes of another frame, or too few of them: corrupt,
    // naming the object, the chunk and the frame, before anything is decompressed.
    let mut bad = stored_of(2..4).to_vec();
    bad[lengths[2] as usize / 2] ^= 0x10;
    let e = undo_frames(&m, 1, 2..4, &bad, (4 * step) as u64, "t/0/x.log", None).unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{e}");
    assert!(
        e.to_string().contains("t/0/x.log: chunk at position 0 (chunk 1") && e.to_string().contains("frame 2"),
        "{e}"
    );
    let e = undo_frames(&m, 1, 2..3, stored_of(3..4), (3 * step) as u64, "k", None).unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{e}");
    let e = undo_frames(&m, 1, 2..4, &stored_of(2..4)[1..], (4 * step) as u64, "k", None).unwrap_err();
    assert!(e.to_string().contains("its frame table says"), "{e}");
    // A frame whose CRC matches (the table written for it) but that decodes to another length: corrupt.
    let mut short = m.clone();
    short.chunks[1].data_length -= 1;
    let e = undo_frames(&short, 1, n - 1..n, stored_of(n - 1..n), json.len() as u64, "k", None).unwrap_err();
    assert!(e.to_string().contains(&format!("frame {}", n - 1)), "{e}");
    // Two zstd frames in one frame's place (its table entry written for it): refused before decoding.
    let mut two = m.clone();
    let mut doubled = stored_of(n - 1..n).to_vec();
    doubled.extend_from_slice(&zstd::bulk::compress(b"more", 3).unwrap());
    let t = &mut two.frames.as_mut().unwrap().chunks[1][n - 1];
    (t.stored_length, t.stored_crc32c) = (doubled.len() as u32, crate::checksum::crc32c(&doubled));
    let e = undo_frames(&two, 1, n - 1..n, &doubled, json.len() as u64, "k", None).unwrap_err();
    assert!(e.to_string().contains("is not one zstd frame"), "{e}");
    // A chunk not in frames is not undone as frames, and a framed one not as one frame.
    assert!(undo_frames(&m, 0, 0..1, &[], 10, "k", None).is_err());
    assert!(undo(&m.chunks[1], Bytes::from(bytes.clone()), "k").is_err());
}

#[test]
fn a_prefix_decodes_only_as_far_as_asked_and_refuses_what_a_chunk_cannot_hold() {
    let original = json_batches(400);
    assert!(original.len() > 200_000, "{}", original.len());
    let frame = zstd::bulk::compress(&original, 3).unwrap();
    let prefix = |frame: &[u8], len: usize, frame_len: usize| {
        let mut out = b"before".to_vec();
        with_dctx(|d| decompress_prefix(d, frame, len, frame_len, &mut out)).map(|()| out[6..].to_vec())
    };
    for len in [0, 1, 4096, 65_536, 100_003, original.len() - 1, original.len()] {
        let got = prefix(&frame, len, original.len()).unwrap();
        assert!(got[..] == original[..len], "prefix of {len} bytes");
    }
    // A frame cut short, or asked for more than it holds, is an error naming how far it got.
    let e = prefix(&frame[..frame.len() / 2], original.len(), original.len()).unwrap_err();
    assert!(e.contains("cut short"), "{e}");
    let e = prefix(&frame, original.len() + 1, original.len() + 1).unwrap_err();
    assert!(e.contains(&format!("ends after {} bytes", original.len())), "{e}");
    // A frame whose window is larger than the chunk it stands for is refused before anything is
    // allocated for it.
    assert!(prefix(&frame, 10, 1024).is_err());
    // Not a frame at all.
    assert!(prefix(&original[..1000], 10, original.len()).is_err());
    // The context is kept between calls, a failed one included: the next decode is right.
    assert!(prefix(&frame, 4096, original.len()).unwrap()[..] == original[..4096]);
}
