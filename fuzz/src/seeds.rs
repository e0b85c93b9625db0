//! A first input for every target, made by our own encoders (and the kafka-python segments of
//! `rsm-core/tests/data/legacy`), so that the fuzzer starts from bytes that get past every header. The
//! corpus replay runs them too; `rsm-fuzz-seeds DIR` writes them as `DIR/<target>/seed-<n>`.

use rsm_core::crypto::{CHUNK_OVERHEAD, KeyEnvelope, NONCE_BYTES, WRAPPED_LEN, Wrapped, sealed_blocks_len};
use rsm_core::format::batch::{BatchIter, V2_HEADER_LEN};
use rsm_core::format::chunk::{Chunker, StoredFrame, Transform, frame_count};
use rsm_core::format::index::{OffsetIndexWriter, TimeIndexWriter};
use rsm_core::format::manifest::{FrameTable, Manifest};
use rsm_core::format::records::compression::{self, Codec};
use rsm_core::format::records::{DecodeLimits, decode_batch};
use rsm_core::format::remote_index::RemoteIndexFiles;
use rsm_core::model::{CustomMetadata, RemoteLogSegmentState};
use rsm_core::testkit::log_writer::{BatchOptions, Record, encode_batch_with, encode_control_batch};
use rsm_core::{RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition, Uuid};
use rsm_metadata::{
    MetadataEvent, RemoteLogSegmentMetadataSnapshot, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
};
use std::collections::BTreeMap;
use std::path::Path;

/// A few uncompressed v2 batches of `n` records each.
fn v2_log(batches: usize, n: usize) -> Vec<u8> {
    v2_log_with(batches, n, &BatchOptions::default())
}

/// A few v2 batches of `n` records each, written as `options` say.
fn v2_log_with(batches: usize, n: usize, options: &BatchOptions) -> Vec<u8> {
    let mut log = Vec::new();
    for b in 0..batches {
        let records: Vec<Record> = (0..n)
            .map(|i| Record {
                key: (i % 2 == 0).then(|| format!("k{i}").into_bytes()),
                value: Some(vec![b as u8; 20 + i]),
                headers: vec![("h".into(), vec![1])],
                timestamp: 1_000 + (b * n + i) as i64,
            })
            .collect();
        log.extend(encode_batch_with(100 + (b * n) as i64, 3, &records, options));
    }
    log
}

/// The first bytes of each kafka-python legacy segment kept for the tests, cut on a batch boundary.
fn legacy_logs() -> Vec<Vec<u8>> {
    legacy_segments(&["v0-none", "v0-gzip", "v1-none", "v1-snappy", "mixed-v0-v1-v2"])
}

/// The first bytes (at most 4 KiB, whole batches) of the named kafka-python legacy segments.
fn legacy_segments(names: &[&str]) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rsm-core/tests/data/legacy");
    names
        .iter()
        .filter_map(|n| std::fs::read(dir.join(format!("{n}.log"))).ok())
        .map(|log| {
            let mut end = 0;
            for b in BatchIter::new(&log, 0, false).map_while(Result::ok) {
                if end + b.size() > 4096 && end > 0 {
                    break;
                }
                end += b.size();
            }
            log[..end].to_vec()
        })
        .collect()
}

/// Seeds of the record targets: v2 batches of every codec (one with log-append time, one transactional), a
/// transactional commit marker, the legacy wrappers of every codec; each codec's payload for its decompression target.
fn record_seeds(out: &mut Vec<(&'static str, Vec<u8>)>) {
    let log = v2_log(2, 6);
    // A commit marker of producer 9 (coordinator epoch 7).
    let control = encode_control_batch(500, 3, 9, 0, true, 7, 5);
    out.push(("records", [&log[..], &control].concat()));
    for (codec, target) in [
        (Codec::Gzip, "decompress_gzip"),
        (Codec::Snappy, "decompress_snappy"),
        (Codec::Lz4, "decompress_lz4"),
        (Codec::Zstd, "decompress_zstd"),
    ] {
        // One with log-append time, one transactional.
        let log_append_time = (codec == Codec::Zstd).then_some(2_000);
        let transactional = codec == Codec::Lz4;
        let producer = if transactional { (11, 2, 0) } else { (-1, -1, -1) };
        let options = BatchOptions {
            compression: Some(codec),
            producer_id: producer.0,
            producer_epoch: producer.1,
            base_sequence: producer.2,
            transactional,
            log_append_time,
        };
        out.push(("records", v2_log_with(2, 6, &options)));
        let first = BatchIter::new(&log, 0, false).next().expect("a batch").expect("ours").bytes();
        out.push((target, compression::compress(codec, &first[V2_HEADER_LEN..])));
    }
    let raw = snap::raw::Encoder::new().compress_vec(&log).expect("snappy");
    out.push(("decompress_snappy", raw));
    for l in legacy_segments(&["v0-lz4", "v0-snappy", "v1-lz4", "v1-gzip-log-append-time"]) {
        // The first wrapper's value, a message set as its codec holds it (v0-lz4: magic 0's LZ4 framing).
        // (A wrapper's key is null: its value starts after the value length.)
        let b = BatchIter::new(&l, 0, false).next().expect("a batch").expect("kafka-python's");
        if b.compression() == Codec::Lz4.id() {
            let value = if b.magic() == 0 { 26 } else { 34 };
            out.push(("decompress_lz4", b.bytes()[value..].to_vec()));
        }
        out.push(("records", l));
    }
    // Every seed gets past the checks: whole batches that decode, payloads that decompress.
    for (target, bytes) in out.iter() {
        let ok = match *target {
            "records" => BatchIter::new(bytes, 0, true)
                .all(|b| b.and_then(|b| decode_batch(&b, &DecodeLimits::default())).is_ok()),
            "decompress_gzip" => compression::gzip(bytes, 1 << 20, "seed").is_ok(),
            "decompress_snappy" => compression::snappy(bytes, 1 << 20, "seed").is_ok(),
            "decompress_lz4" => compression::lz4_magic0(bytes, 1 << 20, "seed").is_ok(),
            "decompress_zstd" => compression::zstd(bytes, 1 << 20, "seed").is_ok(),
            _ => true,
        };
        assert!(ok, "a {target} seed does not decode");
    }
}

fn metadata() -> RemoteLogSegmentMetadata {
    let tp = TopicIdPartition::new(Uuid::new(5, 6), TopicPartition::new("orders", 3));
    RemoteLogSegmentMetadata::new(
        RemoteLogSegmentId::new(tp, Uuid::new(7, 8)),
        100,
        139,
        1_039,
        1,
        2_000,
        4096,
        BTreeMap::from([(3, 100)]),
    )
    .expect("valid metadata")
}

fn manifest(log: &[u8], chunk: u64, block: u32) -> Manifest {
    let md = metadata();
    let mut c = Chunker::new(chunk, block, md.start_offset, md.remote_log_segment_id.id);
    for b in BatchIter::new(log, 0, true) {
        c.push(&b.expect("our batches"));
    }
    let table = c.finish();
    Manifest {
        metadata: md,
        log_length: log.len() as u64,
        chunk_target: chunk as u32,
        indexes: [None; 5],
        chunks: table.chunks,
        block_size: table.block_size,
        block_crcs: table.block_crcs,
        encryption: None,
        frames: None,
        stored_as: Default::default(),
    }
}

/// The manifest of `log` as a transformed copy writes it: every chunk stored in fewer bytes than it holds,
/// packed one after the other (zstd; with `encrypted`, every other chunk compressed then encrypted, a nonce
/// and a tag more, and the rest encrypted only, a nonce and a tag more per 256-byte block, under a wrapped
/// data key).
fn transformed(log: &[u8], encrypted: bool) -> Manifest {
    let mut m = manifest(log, 1024, 256);
    let mut at = 0u64;
    for (i, c) in m.chunks.iter_mut().enumerate() {
        let original = (c.end() - c.original_position()) as u32;
        let (transform, stored) = match (encrypted, i % 2) {
            (false, _) => (Transform::Zstd, original / 3 + 1),
            (true, 0) => (Transform::ZstdAes256Gcm, original / 3 + 1 + CHUNK_OVERHEAD as u32),
            (true, _) => (Transform::Aes256Gcm, sealed_blocks_len(original as u64, 256) as u32),
        };
        c.rdi.transform = transform;
        c.rdi.stored_position = at;
        c.rdi.stored_length = stored;
        c.rdi.stored_crc32c = c.rdi.crc32c ^ 0x5a5a_5a5a;
        at += stored as u64;
    }
    if encrypted {
        m.encryption = Some(KeyEnvelope {
            kek_id: "kek-2026".into(),
            wrapped: Wrapped::Local { nonce: [7; NONCE_BYTES], wrapped: [9; WRAPPED_LEN] },
        });
    }
    m
}

/// The manifest of `log` as a copy with frames of 512 bytes writes it (version 5): every chunk compressed
/// in frames (with `encrypted`, every other chunk in frames each sealed, a nonce and a tag more a frame, and
/// the rest encrypted block by block, under a wrapped data key), each frame a third of its bytes.
fn framed(log: &[u8], encrypted: bool) -> Manifest {
    const FRAME: u32 = 512;
    let mut m = manifest(log, 1024, 256);
    let mut at = 0u64;
    let mut table = Vec::new();
    for (i, c) in m.chunks.iter_mut().enumerate() {
        let original = c.data_length;
        let (transform, overhead) = match (encrypted, i % 2) {
            (false, _) => (Transform::ZstdFrames, 0),
            (true, 0) => (Transform::ZstdFramesAes256Gcm, CHUNK_OVERHEAD as u32),
            (true, _) => (Transform::Aes256Gcm, 0),
        };
        let frames: Vec<StoredFrame> = match transform {
            Transform::Aes256Gcm => Vec::new(),
            _ => (0..frame_count(original, FRAME) as u32)
                .map(|k| {
                    let len = (original - k * FRAME).min(FRAME);
                    StoredFrame { stored_length: len / 3 + 1 + overhead, stored_crc32c: c.rdi.crc32c ^ k }
                })
                .collect(),
        };
        let stored = match transform {
            Transform::Aes256Gcm => sealed_blocks_len(original as u64, 256) as u32,
            _ => frames.iter().map(|f| f.stored_length).sum(),
        };
        c.rdi.transform = transform;
        c.rdi.stored_position = at;
        c.rdi.stored_length = stored;
        c.rdi.stored_crc32c = c.rdi.crc32c ^ 0x5a5a_5a5a;
        at += stored as u64;
        table.push(frames);
    }
    m.frames = Some(FrameTable { frame_size: FRAME, chunks: table });
    if encrypted {
        m.encryption = Some(KeyEnvelope {
            kek_id: "kek-2026".into(),
            wrapped: Wrapped::Local { nonce: [7; NONCE_BYTES], wrapped: [9; WRAPPED_LEN] },
        });
    }
    m
}

/// Seeds, by target name.
pub fn all() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let log = v2_log(4, 10);
    out.push(("batches", log.clone()));
    for l in legacy_logs() {
        out.push(("batches", l.clone()));
        out.push(("chunker", [&0x0000_0400_0000_0800u64.to_be_bytes()[..], &l].concat()));
    }
    out.push(("chunker", [&0x0000_0100_0000_0200u64.to_be_bytes()[..], &log].concat()));

    let (mut oi, mut ti) = (OffsetIndexWriter::new(100), TimeIndexWriter::new(100));
    let mut long = OffsetIndexWriter::long(100);
    for (i, b) in BatchIter::new(&log, 0, false).map_while(Result::ok).enumerate() {
        oi.append(b.last_offset(), b.position());
        long.append(b.last_offset(), b.position());
        ti.append(1_000 + i as i64 * 10, b.last_offset());
    }
    let header = [100u64.to_be_bytes(), (log.len() as u64).to_be_bytes()].concat();
    out.push(("indexes", [&header[..], oi.bytes()].concat()));
    out.push(("indexes", [&header[..], long.bytes()].concat()));
    out.push(("indexes", [&header[..], ti.bytes()].concat()));

    let m = manifest(&log, 1024, 256);
    let mut entry = Vec::new();
    m.chunks[0].encode(&mut entry);
    out.push(("chunk_entry", entry));
    for (range, m) in [(0x0000_0000_0000_0400u64, m), (0x0000_0100_0000_1000, manifest(&log, 1 << 20, 64 << 10))] {
        out.push(("manifest", [&range.to_be_bytes()[..], &m.encode()].concat()));
    }

    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut files = RemoteIndexFiles::open(dir.path(), 1 << 20).expect("open remote index files");
    files.append_segment(100, &manifest(&log, 1024, 256).chunks).expect("append");
    let read = |ext: &str| std::fs::read(dir.path().join(format!("{:020}.{ext}", 0))).unwrap_or_default();
    let (l, o, t) = (read("remoteLogIndex"), read("remoteOffsetIndex"), read("remoteTimeIndex"));
    let cuts = (l.len() as u64) | ((o.len() as u64) << 16);
    out.push(("remote_index", [&cuts.to_be_bytes()[..], &120u64.to_be_bytes(), &l, &o, &t].concat()));

    // Manifests of versions 3 (compressed chunks) and 4 (encrypted, and compressed then encrypted), so the
    // fuzzer starts past the transform fields and the encryption block.
    for (range, m) in
        [(0x0000_0000_0000_0400u64, transformed(&log, false)), (0x0000_0200_0000_0300, transformed(&log, true))]
    {
        let bytes = m.encode();
        let want = if m.encryption.is_some() { 4 } else { 3 };
        let back = Manifest::decode(&bytes, "seed").expect("a transformed manifest seed decodes");
        assert_eq!((m.version(), back), (want, m), "transformed manifest seed");
        out.push(("manifest", [&range.to_be_bytes()[..], &bytes].concat()));
    }

    // Manifests of version 5 (chunks in frames, and in frames each sealed) and 6 (a KMS's blob), so the fuzzer
    // starts past the frame table and the encryption flag.
    // Version 6: a data key a KMS wrapped (a blob of the length AWS's have), with frames and without.
    let kms = |mut m: Manifest| {
        m.encryption = Some(KeyEnvelope { kek_id: "kms".into(), wrapped: Wrapped::Provider(vec![0xb1; 184]) });
        m
    };
    for (range, m) in [
        (0x0000_0000_0000_0300u64, framed(&log, false)),
        (0x0000_0100_0000_0200, framed(&log, true)),
        (0x0000_0100_0000_0200, kms(framed(&log, true))),
        (0x0000_0000_0000_0300, kms(transformed(&log, true))),
    ] {
        let bytes = m.encode();
        let back = Manifest::decode(&bytes, "seed").expect("a framed manifest seed decodes");
        let version =
            if m.encryption.as_ref().is_some_and(|e| matches!(e.wrapped, Wrapped::Provider(_))) { 6 } else { 5 };
        assert_eq!((m.version(), back), (version, m), "framed manifest seed");
        out.push(("manifest", [&range.to_be_bytes()[..], &bytes].concat()));
    }

    // One-object segments: the log, no index bundle or a small one, the manifest and the trailer.
    for (m, bundle) in [(manifest(&log, 1024, 256), 0usize), (transformed(&log, false), 16)] {
        let stored: Vec<u8> = match m.chunks.last() {
            Some(c) if c.stored_range().end == log.len() as u64 => log.clone(),
            Some(c) => vec![7; c.stored_range().end as usize],
            None => Vec::new(),
        };
        let encoded = m.encode();
        let trailer = rsm_core::storage::Trailer {
            indexes_position: stored.len() as u64,
            manifest_position: (stored.len() + bundle) as u64,
            manifest_length: encoded.len() as u32,
        };
        let object = [&stored[..], &vec![0; bundle], &encoded, &trailer.encode()].concat();
        let read = rsm_core::storage::single::manifest_of(&encoded, trailer, "seed");
        assert_eq!(read.expect("a one-object seed reads").chunks, m.chunks, "one-object seed");
        out.push(("segment_object", object));
    }
    // A manifest of version 1 (no block CRCs), as an older build wrote it.
    let v1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rsm-core/tests/data/manifest-v1/segment.manifest");
    out.push((
        "manifest",
        [&0x0000_0010_0000_0100u64.to_be_bytes()[..], &std::fs::read(v1).expect("v1 manifest")].concat(),
    ));

    // Aiven's manifests, as its plugin writes them (fixed and variable chunk indexes, encryption metadata,
    // the segment's metadata), its custom metadata and a list of chunk sizes.
    let ids = r#""remoteLogSegmentMetadata":{"remoteLogSegmentId":{"topicIdPartition":{"topicId":"AAAAAAAAAAAAAAAAAAAAAQ","topicPartition":{"topic":"t","partition":0}},"id":"AAAAAAAAAAAAAAAAAAAAAg"},"startOffset":0,"endOffset":9,"maxTimestampMs":1,"brokerId":0,"eventTimestampMs":2,"segmentLeaderEpochs":{"0":0}}"#;
    let indexes = r#""segmentIndexes":{"offset":{"position":0,"size":8},"timestamp":{"position":8,"size":12},"producerSnapshot":{"position":20,"size":0},"leaderEpoch":{"position":20,"size":12},"transaction":null}"#;
    out.push(("aiven", format!(r#"{{"version":"1","chunkIndex":{{"type":"fixed","originalChunkSize":4096,"originalFileSize":9132,"transformedChunkSize":4124,"finalTransformedChunkSize":968}},{indexes},"compression":false,"encryption":{{"dataKey":"key1:AAEC","aad":"AAEC"}},{ids}}}"#).into_bytes()));
    out.push(("aiven", format!(r#"{{"version":"1","chunkIndex":{{"type":"variable","originalChunkSize":4096,"originalFileSize":9132,"transformedChunks":"KLUv/SARiQAAAAAAAwAAC6sCAAACCwAAA5A="}},{indexes},"compression":true,{ids}}}"#).into_bytes()));
    out.push(("aiven", vec![3, 0, 2, 0xac, 0x02, 1, 2, 1, b'p', 2, 2, 1, b'k']));
    out.push(("aiven", [&3i32.to_be_bytes()[..], &100i32.to_be_bytes(), &[1], &[0, 10], &5i32.to_be_bytes()].concat()));

    record_seeds(&mut out);
    out.push(("leader_epochs", b"0\n3\n0 0\n2 100\n5 2000\n".to_vec()));
    out.push(("wire_metadata", rsm_facade::wire::encode_metadata(&metadata())));

    // One record of each api key, as Kafka writes them (our encoder's bytes equal Kafka's: see
    // rsm-metadata/tests/kafka_records.rs).
    let md = metadata();
    let mut finished = md.clone();
    finished.state = RemoteLogSegmentState::CopySegmentFinished;
    finished.custom_metadata = Some(CustomMetadata(vec![1, 2, 3]));
    finished.txn_idx_empty = true;
    let update = RemoteLogSegmentMetadataUpdate::of(&finished, RemoteLogSegmentState::CopySegmentFinished, 2_001, 1);
    let delete = RemotePartitionDeleteMetadata {
        topic_id_partition: md.remote_log_segment_id.topic_id_partition.clone(),
        state: RemotePartitionDeleteState::DeletePartitionMarked,
        event_timestamp_ms: 3_000,
        broker_id: 0,
    };
    for event in [
        MetadataEvent::Segment(md.clone()),
        MetadataEvent::SegmentUpdate(update),
        MetadataEvent::PartitionDelete(delete),
        MetadataEvent::Snapshot(RemoteLogSegmentMetadataSnapshot::of(&finished)),
    ] {
        out.push(("metadata_records", rsm_metadata::records::encode(&event)));
    }
    out
}
