//! Per-chunk compression (`compression.*`), end to end: segments of compressible JSON-like records and of
//! batches the producer already compressed (gzip, written by `kafka-protocol`), copied with compression off,
//! on, and on without the heuristic, read back byte for byte through every path (a whole fetch, position
//! ranges, by offset, by timestamp, `verify`) with the chunk cache off, in memory, and on disk; the manifest
//! says per chunk what was done; a store mixing segments copied with different settings reads back; damaged
//! compressed bytes read as corrupt, never as other bytes.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::records::{Compression, Record as KRecord, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use rsm_core::backend::{CountingLayer, MemoryBackend, Op, StorageBackend};
use rsm_core::format::batch::BatchIter;
use rsm_core::format::chunk::Transform;
use rsm_core::format::manifest::Manifest;
use rsm_core::format::transform::CompressionConfig;
use rsm_core::storage::DiskCacheConfig;
use rsm_core::testkit::LogSegment;
use rsm_core::testkit::log_writer::{Record, encode_batch};
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::{ErrorKind, RemoteStorageManager, TieredConfig, TieredStorage, TopicIdPartition, TopicPartition, Uuid};
use std::sync::Arc;

const RECORDS_PER_BATCH: usize = 20;
const FIRST_TS: i64 = 1_700_000_000_000;

/// What a segment's batches hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Data {
    /// JSON-like values in uncompressed batches: compressible.
    Json,
    /// The same values in batches the producer compressed with gzip (`kafka-protocol` writes one record a
    /// batch).
    Gzip,
}

fn json_value(offset: i64) -> Vec<u8> {
    format!(
        r#"{{"id":{offset},"user":"user-{}","event":"page_view","path":"/products/{}/reviews","agent":"Mozilla/5.0 (X11; Linux x86_64)","ms":{}}}"#,
        offset % 97,
        offset % 13,
        offset * 7 % 1000
    )
    .into_bytes()
}

/// One batch of `RECORDS_PER_BATCH` records from `offset`, as `data` says.
fn batch(data: Data, offset: i64) -> Vec<u8> {
    let ts = |i: i64| FIRST_TS + (offset + i) * 3;
    match data {
        Data::Json => {
            let recs: Vec<Record> = (0..RECORDS_PER_BATCH as i64)
                .map(|i| Record {
                    key: Some(format!("k{}", (offset + i) % 50).into_bytes()),
                    value: Some(json_value(offset + i)),
                    headers: vec![],
                    timestamp: ts(i),
                })
                .collect();
            encode_batch(offset, 0, &recs)
        }
        Data::Gzip => {
            let recs: Vec<KRecord> = (0..RECORDS_PER_BATCH as i64)
                .map(|i| KRecord {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: 0,
                    producer_id: -1,
                    producer_epoch: -1,
                    timestamp_type: TimestampType::Creation,
                    offset: offset + i,
                    sequence: -1,
                    timestamp: ts(i),
                    key: Some(Bytes::from(format!("k{}", (offset + i) % 50))),
                    value: Some(Bytes::from(json_value(offset + i))),
                    headers: IndexMap::new(),
                })
                .collect();
            let mut buf = BytesMut::new();
            let options = RecordEncodeOptions { version: 2, compression: Compression::Gzip };
            RecordBatchEncoder::encode(&mut buf, &recs, &options).unwrap();
            buf.to_vec()
        }
    }
}

/// A segment of about `bytes` bytes of batches of `data` from `start_offset`, of partition `tp`, with empty
/// offset and time indexes (a reader of ours needs none).
fn segment(tp: &TopicIdPartition, data: Data, start_offset: i64, bytes: usize) -> LogSegment {
    let batches = bytes / batch(data, 0).len();
    let mut log = Vec::new();
    for b in 0..batches {
        log.extend(batch(data, start_offset + (b * RECORDS_PER_BATCH) as i64));
    }
    LogSegment::write(tp, start_offset, log, FIRST_TS)
}

fn partition() -> TopicIdPartition {
    TopicIdPartition::new(Uuid::random(), TopicPartition::new("events", 0))
}

/// Small chunks and blocks, so that a segment has several of each.
fn config(compression: Option<CompressionConfig>) -> TieredConfig {
    TieredConfig { chunk_size: 64 << 10, block_size: 4 << 10, compression, ..TieredConfig::default() }
}

/// Frames of 16 KiB: four blocks, about four frames a chunk.
const FRAME: u32 = 16 << 10;
const OFF: Option<CompressionConfig> = None;
const ON: Option<CompressionConfig> =
    Some(CompressionConfig { level: 3, heuristic: true, min_saving_percent: 10, frame_size: FRAME });
const ALWAYS: Option<CompressionConfig> =
    Some(CompressionConfig { level: 3, heuristic: false, min_saving_percent: 10, frame_size: FRAME });
/// One zstd frame per chunk (`compression.frame.size=0`): the format before frames.
const ON_ONE_FRAME: Option<CompressionConfig> =
    Some(CompressionConfig { level: 3, heuristic: true, min_saving_percent: 10, frame_size: 0 });
const ALWAYS_ONE_FRAME: Option<CompressionConfig> =
    Some(CompressionConfig { level: 3, heuristic: false, min_saving_percent: 10, frame_size: 0 });

/// Checks the manifest against the stored object: chunks tile the log, stored ranges tile the object in
/// order, compressed chunks are in frames of `frame_size` (one frame when 0), each an independent zstd frame
/// of its original bytes; returns how many chunks are compressed.
async fn check_manifest(
    backend: &Arc<dyn StorageBackend>,
    rsm: &TieredStorage,
    s: &LogSegment,
    frame_size: u32,
) -> (Arc<Manifest>, usize) {
    let m = rsm.manifest(&s.md).await.unwrap();
    let object = backend.get_range(&rsm.keys(&s.md).log, 0..u64::MAX).await.unwrap();
    let mut stored_at = 0;
    for c in &m.chunks {
        assert_eq!(c.stored_range().start, stored_at, "stored ranges tile the object");
        stored_at = c.stored_range().end;
        let stored = &object[c.stored_range().start as usize..c.stored_range().end as usize];
        assert_eq!(rsm_core::checksum::crc32c(stored), c.rdi.stored_crc32c, "the stored CRC is the stored bytes'");
        assert_eq!(rsm_core::checksum::crc32c(&s.log[c.original_position() as usize..c.end() as usize]), c.rdi.crc32c);
        let original = &s.log[c.original_position() as usize..c.end() as usize];
        if c.rdi.transform == Transform::None {
            assert!(stored == original, "stored as is");
        }
        let want = if frame_size > 0 { Transform::ZstdFrames } else { Transform::Zstd };
        assert!(matches!(c.rdi.transform, Transform::None) || c.rdi.transform == want, "{:?}", c.rdi.transform);
        if let Some((size, frames)) = m.frames_of(m.chunk_at_position(c.original_position()).unwrap()) {
            // Each frame decodes alone (by zstd itself) to its frame of the original bytes.
            assert_eq!((size, frames.len()), (frame_size, original.len().div_ceil(frame_size as usize)));
            let mut at = 0;
            for (f, want) in frames.iter().zip(original.chunks(frame_size as usize)) {
                let bytes = &stored[at..at + f.stored_length as usize];
                assert_eq!(rsm_core::checksum::crc32c(bytes), f.stored_crc32c);
                assert!(zstd::bulk::decompress(bytes, want.len()).unwrap() == want, "an independent frame");
                at += bytes.len();
            }
            assert_eq!(at, stored.len(), "the frames are the chunk's stored bytes");
        }
    }
    assert_eq!(stored_at, object.len() as u64);
    assert_eq!(m.log_length, s.log.len() as u64, "the manifest keeps the original length");
    let compressed = m.chunks.iter().filter(|c| c.is_transformed()).count();
    let bytes = backend.get_range(&rsm.keys(&s.md).manifest, 0..u64::MAX).await.unwrap();
    let version = u16::from_be_bytes([bytes[4], bytes[5]]);
    let want = match (compressed, frame_size) {
        (0, _) => 2,
        (_, 0) => 3,
        _ => 5,
    };
    assert_eq!(version, want, "version 3 (one frame) or 5 (frames) only with a compressed chunk");
    (m, compressed)
}

#[derive(Clone, Copy, Debug)]
enum CacheKind {
    Off,
    Memory,
    Disk,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_path_returns_the_original_bytes_for_every_setting_data_and_cache() {
    // (settings, data, chunks compressed: all, none)
    let cases = [
        ("compression off", OFF, Data::Json, false),
        ("compression off", OFF, Data::Gzip, false),
        ("heuristic on", ON, Data::Json, true),
        ("heuristic on", ON, Data::Gzip, false),
        ("heuristic off", ALWAYS, Data::Json, true),
        ("heuristic off", ALWAYS, Data::Gzip, true),
        ("heuristic on, one frame a chunk", ON_ONE_FRAME, Data::Json, true),
        ("heuristic off, one frame a chunk", ALWAYS_ONE_FRAME, Data::Gzip, true),
    ];
    let tp = partition();
    for (i, (settings, compression, data, all_compressed)) in cases.into_iter().enumerate() {
        let s = segment(&tp, data, i as i64 * 100_000, 600_000);
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let writer = TieredStorage::new(backend.clone(), config(compression));
        writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        let (m, compressed) = check_manifest(&backend, &writer, &s, compression.map_or(0, |c| c.frame_size)).await;
        let case = format!("{settings}, {data:?}");
        assert_eq!(compressed, if all_compressed { m.chunks.len() } else { 0 }, "{case}: chunks compressed");
        let object = backend.get_range(&writer.keys(&s.md).log, 0..u64::MAX).await.unwrap();
        if data == Data::Json && all_compressed {
            assert!(object.len() * 4 < s.log.len(), "{case}: JSON shrinks: {} of {}", object.len(), s.log.len());
        }
        for cache in [CacheKind::Off, CacheKind::Memory, CacheKind::Disk] {
            let case = format!("{case}, cache {cache:?}");
            let disk = tempfile::tempdir().unwrap();
            // The reader's own compression settings do not matter: what was done is in the manifest.
            let mut read_config = config(OFF);
            match cache {
                CacheKind::Off => {}
                CacheKind::Memory => read_config.fetch_cache_bytes = 64 << 20,
                CacheKind::Disk => {
                    read_config.fetch_cache_disk =
                        Some(DiskCacheConfig { path: disk.path().to_path_buf(), capacity_bytes: 64 << 20 })
                }
            }
            let reader = TieredStorage::open(backend.clone(), read_config, &format!("mem://{case}")).unwrap();
            s.assert_reads_back(&reader, &m, &case).await;
            if let CacheKind::Disk = cache {
                // Memory holds nothing: the second pass is served from the disk tier.
                reader.chunk_cache().unwrap().flush().await;
                s.assert_reads_back(&reader, &m, &format!("{case}, again")).await;
                let stats = reader.chunk_cache_stats().unwrap();
                assert!(stats.disk.hits > 0 && stats.disk_dropped == 0, "{case}: {stats:?}");
            }
        }
    }
}

/// A fetch of a few bytes inside a chunk compressed as one frame reads its whole stored range, once.
#[tokio::test]
async fn a_small_read_of_a_chunk_of_one_frame_reads_its_whole_stored_range() {
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let backend: Arc<dyn StorageBackend> = counting;
    let s = segment(&partition(), Data::Json, 0, 900_000);
    let rsm = TieredStorage::new(backend.clone(), config(ON_ONE_FRAME));
    rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let m = rsm.manifest(&s.md).await.unwrap();
    let c = m.chunks[2];
    assert!(c.is_transformed() && c.rdi.stored_length < c.data_length / 4, "{c:?}");
    let before = counts.snapshot().get(Op::Get);
    let at = c.original_position() as i64 + 1000;
    let got = collect(rsm.fetch_log_segment(&s.md, at, Some(at + 9)).await.unwrap()).await.unwrap();
    assert!(got[..] == s.log[at as usize..at as usize + 10]);
    let after = counts.snapshot().get(Op::Get);
    assert_eq!(after.requests - before.requests, 1, "one ranged read");
    assert_eq!(after.bytes_received - before.bytes_received, c.rdi.stored_length as u64, "the whole stored chunk");
}

/// One store, one partition: segments copied with compression off, on, and on without the heuristic at
/// another level, by three writers; every reader reads them all back, whatever its own settings.
#[tokio::test]
async fn a_store_mixing_settings_reads_back() {
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let tp = partition();
    let level_19 = Some(CompressionConfig { level: 19, heuristic: false, min_saving_percent: 0, frame_size: FRAME });
    let written = [
        (OFF, Data::Json),
        (ON, Data::Json),
        (level_19, Data::Gzip),
        (ON, Data::Gzip),
        (OFF, Data::Gzip),
        (ON_ONE_FRAME, Data::Json),
    ];
    let mut segments = Vec::new();
    for (i, (compression, data)) in written.into_iter().enumerate() {
        let s = segment(&tp, data, i as i64 * 100_000, 400_000);
        let writer = TieredStorage::new(backend.clone(), config(compression));
        writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        segments.push(s);
    }
    for reader_compression in [OFF, ON] {
        let reader = TieredStorage::new(backend.clone(), config(reader_compression));
        let listed = reader.list_segments(Some(&tp)).await.unwrap();
        let compressed: Vec<bool> = listed.iter().map(|m| m.chunks.iter().any(|c| c.is_transformed())).collect();
        assert_eq!(compressed, [false, true, true, false, false, true], "by key, that is by start offset");
        for (i, s) in segments.iter().enumerate() {
            let m = reader.manifest(&s.md).await.unwrap();
            s.assert_reads_back(&reader, &m, &format!("segment {i}, reader compression {reader_compression:?}")).await;
        }
    }
}

/// Damage to a compressed chunk's stored bytes fails every path that reads the chunk as corrupt, naming
/// the chunk; a cache keeps nothing of it; once repaired it reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_compressed_bytes_read_as_corrupt() {
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let s = segment(&partition(), Data::Json, 0, 900_000);
    let writer = TieredStorage::new(backend.clone(), config(ON_ONE_FRAME));
    writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let m = writer.manifest(&s.md).await.unwrap();
    let c = m.chunks[1];
    assert!(c.is_transformed());
    let key = writer.keys(&s.md).log;
    let good = backend.get_range(&key, 0..u64::MAX).await.unwrap();
    let inside = c.original_position() as i64 + 100;
    let offset_in_chunk =
        BatchIter::new(&s.log[c.original_position() as usize..c.end() as usize], c.original_position(), false)
            .nth(1)
            .unwrap()
            .unwrap()
            .base_offset();
    let stored = c.stored_range();
    // (where in the stored chunk: its frame header, its middle, its last byte)
    for at in [stored.start, stored.start + 5, (stored.start + stored.end) / 2, stored.end - 1] {
        let mut bad = good.to_vec();
        bad[at as usize] ^= 0x01;
        backend.put_bytes(&key, Bytes::from(bad)).await.unwrap();
        for cache in [0, 64 << 20] {
            let case = format!("byte {at}, cache {cache}");
            let rsm = TieredStorage::new(
                backend.clone(),
                TieredConfig { fetch_cache_bytes: cache, fetch_prefetch_chunks: 0, ..config(OFF) },
            );
            let errors = [
                collect(rsm.fetch_log_segment(&s.md, 0, None).await.unwrap()).await.map(|_| ()),
                collect(rsm.fetch_log_segment(&s.md, inside, Some(inside + 10)).await.unwrap()).await.map(|_| ()),
                rsm.position_of_offset(&s.md, offset_in_chunk).await.map(|_| ()),
                rsm.verify(&s.md).await.map(|_| ()),
            ];
            for (path, r) in errors.into_iter().enumerate() {
                let e = r.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{case}, path {path}: {e}");
                let text = e.full_message();
                assert!(
                    text.contains(&format!("chunk at position {}", c.original_position())),
                    "{case}, path {path}: {text}"
                );
            }
            // Other chunks still read.
            let c0 = m.chunks[0];
            let got = collect(rsm.fetch_log_segment(&s.md, 0, Some(c0.end() as i64 - 1)).await.unwrap()).await.unwrap();
            assert!(got[..] == s.log[..c0.end() as usize], "{case}");
            if cache > 0 {
                // The failure was not kept: repaired, the chunk reads through the same cache.
                backend.put_bytes(&key, good.clone()).await.unwrap();
                let got = collect(rsm.fetch_log_segment(&s.md, inside, Some(inside + 10)).await.unwrap()).await;
                assert!(got.unwrap()[..] == s.log[inside as usize..inside as usize + 11], "{case}");
            }
        }
    }
    backend.put_bytes(&key, good).await.unwrap();
    let rsm = TieredStorage::new(backend.clone(), config(OFF));
    s.assert_reads_back(&rsm, &m, "repaired").await;
}

/// A read of part of a compressed chunk decompresses it only as far as its last block, and checks what it
/// serves block by block: a stored frame that decodes to other bytes (its stored CRC made to match, as a
/// writer's bug or a deliberate swap would) fails from the first block that differs, a read of the blocks
/// before it still reads, and a whole read fails on the chunk's CRC.
#[tokio::test]
async fn a_compressed_chunk_decoding_to_other_bytes_fails_from_its_first_wrong_block() {
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let s = segment(&partition(), Data::Json, 0, 900_000);
    let writer = TieredStorage::new(backend.clone(), config(ALWAYS_ONE_FRAME));
    writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let mut m = (*writer.manifest(&s.md).await.unwrap()).clone();
    let last = m.chunks.len() - 1;
    let c = m.chunks[last];
    let bs = m.block_size as u64;
    assert!(c.is_transformed() && c.data_length as u64 > 3 * bs, "{c:?}");
    let keys = writer.keys(&s.md);
    let object = backend.get_range(&keys.log, 0..u64::MAX).await.unwrap();
    let mut other = s.log[c.original_position() as usize..c.end() as usize].to_vec();
    other[bs as usize + 10] ^= 0x20;
    let frame = zstd::bulk::compress(&other, 3).unwrap();
    let mut stored = object[..c.stored_range().start as usize].to_vec();
    stored.extend_from_slice(&frame);
    m.chunks[last].rdi.stored_length = frame.len() as u32;
    m.chunks[last].rdi.stored_crc32c = rsm_core::checksum::crc32c(&frame);
    backend.put_bytes(&keys.log, Bytes::from(stored)).await.unwrap();
    backend.put_bytes(&keys.manifest, Bytes::from(m.encode())).await.unwrap();

    let reader = TieredStorage::new(backend.clone(), config(OFF));
    let at = c.original_position() as i64;
    let first = collect(reader.fetch_log_segment(&s.md, at, Some(at + 100)).await.unwrap()).await.unwrap();
    assert!(first[..] == s.log[at as usize..=at as usize + 100], "the first block is the original's");
    for (from, to) in [(at + bs as i64, at + bs as i64 + 20), (at, at + 2 * bs as i64), (at + 10, c.end() as i64 - 1)] {
        let e = collect(reader.fetch_log_segment(&s.md, from, Some(to)).await.unwrap()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{from}..={to}: {e}");
        let text = e.full_message();
        let block = format!("block {}..{}", c.original_position() + bs, c.original_position() + 2 * bs);
        assert!(text.contains(&block) || text.contains("CRC"), "{from}..={to}: {text}");
    }
    let e = reader.verify(&s.md).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
}

/// Counts the `.log` uploads of a file ([`StorageBackend::put_file`]) and of a stream.
#[derive(Debug)]
struct LogUploads {
    inner: Arc<dyn StorageBackend>,
    files: std::sync::atomic::AtomicUsize,
    streams: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl rsm_core::backend::LayeredBackend for LogUploads {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &std::path::Path, len: u64) -> rsm_core::Result<()> {
        if key.ends_with(".log") {
            self.files.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.inner.put_file(key, path, len).await
    }

    async fn put_stream(&self, key: &str, data: rsm_core::backend::ByteStream) -> rsm_core::Result<()> {
        if key.ends_with(".log") {
            self.streams.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.inner.put_stream(key, data).await
    }
}

/// Compression on but no chunk compressed (the producer compressed them all) writes what compression off
/// writes, byte for byte: the `.log` object and a version-2 manifest; and like it, uploads the file as it
/// is (the kernel's copy path on a filesystem store) rather than stream it through the transforming pass,
/// which compressible batches still take.
#[tokio::test]
async fn nothing_compressed_writes_what_compression_off_writes() {
    let uploads = |data, compression| async move {
        let s = segment(&partition(), data, 0, 300_000);
        let counted = Arc::new(LogUploads {
            inner: Arc::new(MemoryBackend::new()),
            files: Default::default(),
            streams: Default::default(),
        });
        let rsm = TieredStorage::new(counted.clone(), config(compression));
        rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        (
            counted.files.load(std::sync::atomic::Ordering::SeqCst),
            counted.streams.load(std::sync::atomic::Ordering::SeqCst),
        )
    };
    assert_eq!(uploads(Data::Gzip, ON).await, (1, 0), "producer-compressed: the file as it is");
    assert_eq!(uploads(Data::Gzip, OFF).await, (1, 0), "compression off: the file as it is");
    assert_eq!(uploads(Data::Json, ON).await, (0, 1), "compressible: through the transforming pass");

    let s = segment(&partition(), Data::Gzip, 0, 300_000);
    let mut written = Vec::new();
    for compression in [OFF, ON] {
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let rsm = TieredStorage::new(backend.clone(), config(compression));
        rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        let keys = rsm.keys(&s.md);
        let manifest = backend.get_range(&keys.manifest, 0..u64::MAX).await.unwrap();
        let log = backend.get_range(&keys.log, 0..u64::MAX).await.unwrap();
        assert_eq!(&manifest[..6], b"RSMM\0\x02", "{compression:?}");
        assert!(log == s.log, "{compression:?}: the object is the file");
        written.push(manifest);
    }
    assert_eq!(written[0], written[1], "the same manifest bytes");
}

/// A compressed copy whose upload fails leaves no object behind, and a retry succeeds.
#[tokio::test]
async fn a_failed_compressed_copy_leaves_nothing() {
    use rsm_core::backend::layers::{Fault, FaultLayer, FaultRule};
    let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let faults = Arc::new(FaultLayer::new(store.clone()));
    faults.add_rule(FaultRule { op: Some(Op::Put), key: "*.log".into(), fault: Fault::transient(), times: Some(1) });
    let s = segment(&partition(), Data::Json, 0, 300_000);
    let rsm = TieredStorage::new(faults.clone(), config(ON));
    let e = rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    assert_eq!(store.list("").await.unwrap(), vec![], "nothing left");
    rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let m = rsm.manifest(&s.md).await.unwrap();
    s.assert_reads_back(&rsm, &m, "after a retry").await;
}
