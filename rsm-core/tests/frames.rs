//! Chunks compressed in independent zstd frames (`compression.frame.size`, manifest version 5), end to end
//! through the real writer and reader: every transform (none, zstd in one frame, AES-256-GCM, both in one
//! frame, zstd frames, zstd frames each sealed) reads back byte for byte over reads at a chunk's start, in its
//! middle, across a frame and a chunk boundary, in the last short frame, of a whole chunk and of the whole
//! segment; a 1 MiB read in the middle of a chunk reads only the frames holding it; damaged frames, frame
//! tables that do not match the frames, and frames swapped read as corrupt naming the object and the frame,
//! never as other bytes.

use bytes::Bytes;
use rsm_core::backend::{CountingLayer, MemoryBackend, Op, StorageBackend};
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::chunk::Transform;
use rsm_core::format::manifest::Manifest;
use rsm_core::testkit::LogSegment;
use rsm_core::testkit::log_writer::{Record, encode_batch};
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::{ErrorKind, RemoteStorageManager, TieredConfig, TieredStorage, TopicIdPartition, TopicPartition, Uuid};
use std::sync::Arc;

const FIRST_TS: i64 = 1_700_000_000_000;
/// Frames of 16 KiB in chunks of 64 KiB (blocks of 4 KiB): about four frames a chunk, the last shorter.
const FRAME: u64 = 16 << 10;

/// A segment of about `bytes` bytes of JSON-like batches from `start_offset`.
fn segment(tp: &TopicIdPartition, start_offset: i64, bytes: usize) -> LogSegment {
    let mut log = Vec::new();
    let mut offset = start_offset;
    while log.len() < bytes {
        let recs: Vec<Record> = (0..20)
            .map(|i| Record {
                key: Some(format!("k{}", (offset + i) % 50).into_bytes()),
                value: Some(
                    format!(
                        r#"{{"id":{},"user":"user-{}","path":"/products/{}/reviews","ms":{}}}"#,
                        offset + i,
                        (offset + i) * 7 % 997,
                        i % 13,
                        (offset + i) * 31 % 1000
                    )
                    .into_bytes(),
                ),
                headers: vec![],
                timestamp: FIRST_TS + (offset + i) * 3,
            })
            .collect();
        log.extend(encode_batch(offset, 0, &recs));
        offset += 20;
    }
    LogSegment::write(tp, start_offset, log, FIRST_TS)
}

fn partition() -> TopicIdPartition {
    TopicIdPartition::new(Uuid::random(), TopicPartition::new("frames", 0))
}

/// Settings read as an operator writes them: `extra`, a keyring of one key (written in `dir`), encrypting
/// with `encryption`.
fn settings(dir: &std::path::Path, encryption: bool, extra: &[(&str, &str)]) -> TieredConfig {
    let key = dir.join("kek");
    std::fs::write(&key, "3a".repeat(32)).unwrap();
    let mut pairs: Vec<(String, String)> = vec![
        ("encryption.keys".into(), "kek".into()),
        ("encryption.key.kek.file".into(), key.display().to_string()),
        ("encryption.enabled".into(), encryption.to_string()),
    ];
    if encryption {
        pairs.push(("encryption.key.id".into(), "kek".into()));
    }
    pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let p = props(pairs);
    let mut r = ConfigReader::new(&p);
    let c = TieredConfig::read(&mut r).unwrap();
    r.finish().unwrap();
    c
}

/// Small chunks, blocks and frames, every chunk compressed (the heuristic off), frames of `frame`.
fn small(frame: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("chunk.size", "65536"),
        ("chunk.block.size", "4096"),
        ("compression.enabled", "true"),
        ("compression.heuristic.enabled", "false"),
        ("compression.frame.size", frame),
    ]
}

async fn fetch(rsm: &TieredStorage, s: &LogSegment, from: u64, to: u64) -> rsm_core::Result<Vec<u8>> {
    collect(rsm.fetch_log_segment(&s.md, from as i64, Some(to as i64)).await?).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transform_round_trips_over_every_kind_of_read() {
    let dir = tempfile::tempdir().unwrap();
    let tp = partition();
    let plain = [("chunk.size", "65536"), ("chunk.block.size", "4096")];
    // (case, settings, encryption, the transform of every chunk, manifest version)
    type Case = (&'static str, Vec<(&'static str, &'static str)>, bool, Transform, u8);
    let cases: [Case; 6] = [
        ("none", plain.to_vec(), false, Transform::None, 2),
        ("zstd, one frame a chunk", small("0"), false, Transform::Zstd, 3),
        ("AES-256-GCM", plain.to_vec(), true, Transform::Aes256Gcm, 4),
        ("zstd then AES-256-GCM, one frame a chunk", small("0"), true, Transform::ZstdAes256Gcm, 4),
        ("zstd frames", small("16384"), false, Transform::ZstdFrames, 5),
        ("zstd frames, each then AES-256-GCM", small("16384"), true, Transform::ZstdFramesAes256Gcm, 5),
    ];
    for (i, (case, extra, encryption, transform, version)) in cases.into_iter().enumerate() {
        let s = segment(&tp, i as i64 * 100_000, 500_000);
        let log = &s.log;
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let writer = TieredStorage::new(backend.clone(), settings(dir.path(), encryption, &extra));
        writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        let manifest = backend.get_range(&writer.keys(&s.md).manifest, 0..u64::MAX).await.unwrap();
        assert_eq!(&manifest[..6], &[b'R', b'S', b'M', b'M', 0, version], "{case}");
        let m = Manifest::decode(&manifest, "m").unwrap();
        assert!(m.chunks.iter().all(|c| c.rdi.transform == transform), "{case}: {:?}", m.chunks[0].rdi.transform);
        // A chunk whose last frame is short (its length not a multiple of the frame size), inside the log.
        let (k, c) =
            m.chunks.iter().enumerate().skip(1).find(|(_, c)| !(c.data_length as u64).is_multiple_of(FRAME)).unwrap();
        assert!(k + 1 < m.chunks.len() && c.data_length as u64 > 3 * FRAME, "{case}: {c:?}");
        let (start, end) = (c.original_position(), c.end());
        let last_frame = start + (c.data_length as u64 - 1) / FRAME * FRAME;
        // (read, first and last byte)
        let reads = [
            ("at the chunk's start", start, start + 99),
            ("in the chunk's middle", start + 20_000, start + 40_000),
            ("across a frame boundary", start + FRAME - 7, start + FRAME + 7),
            ("across a chunk boundary", end - 50, end + 50),
            ("in the last, short frame", last_frame + 1, end - 2),
            ("a whole chunk", start, end - 1),
            ("from a frame's start to the next chunk's middle", start + 2 * FRAME, end + 30_000),
            ("the whole segment", 0, log.len() as u64 - 1),
        ];
        for cache in [0u64, 64 << 20] {
            let mut config = settings(dir.path(), false, &[]);
            config.fetch_cache_bytes = cache;
            // A reader holding only the key; its own compression settings do not matter.
            let reader = TieredStorage::open(backend.clone(), config, &format!("mem://{case}/{cache}")).unwrap();
            for (what, from, to) in reads {
                let got = fetch(&reader, &s, from, to).await.unwrap();
                assert!(got[..] == log[from as usize..=to as usize], "{case}, cache {cache}: {what} differs");
            }
            let whole = collect(reader.fetch_log_segment(&s.md, 0, None).await.unwrap()).await.unwrap();
            assert!(whole == *log, "{case}, cache {cache}: the whole segment differs");
            let m = reader.manifest(&s.md).await.unwrap();
            s.assert_reads_back(&reader, &m, &format!("{case}, cache {cache}")).await;
        }
    }
}

/// A 1 MiB fetch in the middle of a 4 MiB chunk compressed in frames of 256 KiB (the defaults) reads, in one
/// ranged read, only the frames holding it; compressed as one frame it reads the whole chunk.
#[tokio::test]
async fn a_mid_chunk_read_reads_only_the_frames_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let s = segment(&partition(), 0, 9 << 20);
    const MIB: u64 = 1 << 20;
    for encryption in [false, true] {
        for frame in [None, Some("0")] {
            let case = format!("encryption {encryption}, frame size {frame:?}");
            let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
            let counts = counting.counts();
            let backend: Arc<dyn StorageBackend> = counting;
            let mut extra = vec![("compression.enabled", "true")];
            extra.extend(frame.map(|f| ("compression.frame.size", f)));
            let rsm = TieredStorage::new(backend.clone(), settings(dir.path(), encryption, &extra));
            rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
            let m = rsm.manifest(&s.md).await.unwrap();
            let c = m.chunks[0];
            assert!(c.data_length as u64 > 3 * MIB && c.is_transformed(), "{case}: {c:?}");
            let (from, to) = (c.original_position() + 3 * MIB / 2 + 1000, c.original_position() + 5 * MIB / 2 + 999);
            let before = counts.snapshot().get(Op::Get);
            let got = fetch(&rsm, &s, from, to).await.unwrap();
            assert!(got[..] == s.log[from as usize..=to as usize], "{case}");
            let after = counts.snapshot().get(Op::Get);
            let (requests, bytes) = (after.requests - before.requests, after.bytes_received - before.bytes_received);
            assert_eq!(requests, 1, "{case}: one ranged read");
            match m.frames_of(0) {
                None => assert_eq!(bytes, c.rdi.stored_length as u64, "{case}: the whole chunk"),
                Some((size, frames)) => {
                    assert_eq!(size, 256 << 10, "{case}");
                    // The read widened to 64 KiB blocks: 1.5 MiB (the start of frame 6) to 2.5 MiB + 64 KiB
                    // (inside frame 10): frames 6 to 10, five of the sixteen.
                    let want: u64 = frames[6..=10].iter().map(|f| f.stored_length as u64).sum();
                    assert_eq!(bytes, want, "{case}: the stored bytes of frames 6 to 10");
                    assert!(bytes * 3 < c.rdi.stored_length as u64, "{case}: {bytes} of {}", c.rdi.stored_length);
                }
            }
        }
    }
}

/// The object's bytes, and `object` with `edit` applied, written back.
async fn put(backend: &Arc<dyn StorageBackend>, key: &str, object: &[u8], edit: impl FnOnce(&mut Vec<u8>)) {
    let mut b = object.to_vec();
    edit(&mut b);
    backend.put_bytes(key, Bytes::from(b)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_or_misplaced_frames_read_as_corrupt_naming_the_object_and_the_frame() {
    let dir = tempfile::tempdir().unwrap();
    for encryption in [false, true] {
        let s = segment(&partition(), 0, 400_000);
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let writer = TieredStorage::new(backend.clone(), settings(dir.path(), encryption, &small("16384")));
        writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        let keys = writer.keys(&s.md);
        let good = (*writer.manifest(&s.md).await.unwrap()).clone();
        let object = backend.get_range(&keys.log, 0..u64::MAX).await.unwrap().to_vec();
        let fresh = || TieredStorage::new(backend.clone(), settings(dir.path(), false, &[]));
        let c = good.chunks[1];
        let (_, frames) = good.frames_of(1).unwrap();
        assert!(frames.len() >= 4, "{frames:?}");
        // Frame k of chunk 1: its stored range in the object and its original bytes.
        let stored = |k: usize| {
            let start = c.stored_range().start + frames[..k].iter().map(|f| f.stored_length as u64).sum::<u64>();
            start as usize..(start + frames[k].stored_length as u64) as usize
        };
        let original =
            |k: usize| c.original_position() + k as u64 * FRAME..c.original_position() + (k as u64 + 1) * FRAME;
        let case = |what: &str| format!("{what}, encryption {encryption}");
        let corrupt = |r: rsm_core::Result<Vec<u8>>, what: &str, says: &[&str]| {
            let e = r.map(|b| b.len()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}");
            let text = e.full_message();
            for piece in says {
                assert!(text.contains(piece), "{what}: {text}");
            }
        };

        // One stored byte of frame 2 flipped: a read of it, of the chunk and of the segment is corrupt naming
        // the object, the chunk and the frame; a read of frame 0 reads only frame 0 and is served.
        let flip = stored(2).start + frames[2].stored_length as usize / 2;
        put(&backend, &keys.log, &object, |b| b[flip] ^= 0x08).await;
        let rsm = fresh();
        let pos = format!("chunk at position {}", c.original_position());
        let says = [keys.log.as_str(), pos.as_str(), "frame 2"];
        corrupt(fetch(&rsm, &s, original(2).start + 5, original(2).start + 10).await, &case("frame 2"), &says);
        corrupt(fetch(&rsm, &s, c.original_position(), c.end() - 1).await, &case("chunk 1"), &says);
        corrupt(collect(rsm.fetch_log_segment(&s.md, 0, None).await.unwrap()).await, &case("segment"), &says);
        corrupt(rsm.verify(&s.md).await.map(|_| Vec::new()), &case("verify"), &["frame 2"]);
        let (a, b) = (original(0).start + 3, original(0).start + 300);
        assert!(fetch(&rsm, &s, a, b).await.unwrap()[..] == s.log[a as usize..=b as usize], "{}", case("frame 0"));
        backend.put_bytes(&keys.log, Bytes::from(object.clone())).await.unwrap();

        // The frame table's lengths of frames 1 and 2 off by one (their sum kept, so the manifest decodes):
        // frame 1's bytes no longer match its CRC.
        let mut m = good.clone();
        let t = &mut m.frames.as_mut().unwrap().chunks[1];
        (t[1].stored_length, t[2].stored_length) = (t[1].stored_length + 1, t[2].stored_length - 1);
        backend.put_bytes(&keys.manifest, Bytes::from(m.encode())).await.unwrap();
        let rsm = fresh();
        corrupt(
            fetch(&rsm, &s, original(1).start, original(1).start + 10).await,
            &case("off by one"),
            &[keys.log.as_str(), "frame 1", "CRC-32C"],
        );
        // Off by one alone: the frames no longer add up to the chunk, and the manifest does not decode.
        let mut m = good.clone();
        m.frames.as_mut().unwrap().chunks[1][1].stored_length += 1;
        backend.put_bytes(&keys.manifest, Bytes::from(m.encode())).await.unwrap();
        corrupt(
            fetch(&fresh(), &s, 0, 10).await,
            &case("off by one, unbalanced"),
            &[keys.manifest.as_str(), "frames hold"],
        );
        // A frame table of another frame size (more frames than the table holds), and one claiming a frame
        // more than the chunk holds.
        let mut m = good.clone();
        m.frames.as_mut().unwrap().frame_size = 8 << 10;
        backend.put_bytes(&keys.manifest, Bytes::from(m.encode())).await.unwrap();
        corrupt(fetch(&fresh(), &s, 0, 10).await, &case("half the frame size"), &[keys.manifest.as_str()]);
        let mut m = good.clone();
        let extra = rsm_core::format::chunk::StoredFrame { stored_length: 30, stored_crc32c: 1 };
        m.frames.as_mut().unwrap().chunks[1].push(extra);
        backend.put_bytes(&keys.manifest, Bytes::from(m.encode())).await.unwrap();
        corrupt(fetch(&fresh(), &s, 0, 10).await, &case("a frame more"), &[keys.manifest.as_str()]);

        // Frames 1 and 2 swapped in the object, and in the table (so their CRCs match): sealed, frame 1 does
        // not open where frame 2 belongs; not sealed, they decompress to other bytes, which the block CRCs
        // catch. Never the swapped bytes.
        let (r1, r2) = (stored(1), stored(2));
        put(&backend, &keys.log, &object, |b| {
            let mut swapped = object[r2.clone()].to_vec();
            swapped.extend_from_slice(&object[r1.clone()]);
            b.splice(r1.start..r2.end, swapped);
        })
        .await;
        let mut m = good.clone();
        m.frames.as_mut().unwrap().chunks[1].swap(1, 2);
        backend.put_bytes(&keys.manifest, Bytes::from(m.encode())).await.unwrap();
        let rsm = fresh();
        let says: &[&str] = if encryption {
            &[keys.log.as_str(), "frame 1", "does not decrypt"]
        } else {
            &[keys.log.as_str(), "block"]
        };
        corrupt(fetch(&rsm, &s, original(1).start + 5, original(1).start + 10).await, &case("swapped"), says);
        corrupt(
            fetch(&rsm, &s, c.original_position(), c.end() - 1).await,
            &case("swapped, whole chunk"),
            &[keys.log.as_str()],
        );

        // Restored, it reads.
        backend.put_bytes(&keys.log, Bytes::from(object.clone())).await.unwrap();
        backend.put_bytes(&keys.manifest, Bytes::from(good.encode())).await.unwrap();
        let rsm = fresh();
        let m = rsm.manifest(&s.md).await.unwrap();
        s.assert_reads_back(&rsm, &m, &case("restored")).await;
    }
}
