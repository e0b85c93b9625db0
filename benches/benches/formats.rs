//! Format micro-benchmarks: scanning record batches (with and without the CRC-32C check) over 256 MiB of
//! realistic v2 batches in memory, cutting the same batches into 4 MiB chunks as a copy does, and encoding
//! and decoding the manifest of a 1 GiB segment (256 chunks of 4 MiB), and compressing a 4 MiB chunk of
//! the same batches with zstd (as one frame, and in frames of 256 KiB) and undoing it (checks included), as a
//! copy and a read with `compression.*` on do.

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use rsm_benches::{DataShape, MIB, batch_buffer, synthetic_manifest};
use rsm_core::format::batch::BatchIter;
use rsm_core::format::chunk::{Chunker, Transform};
use rsm_core::format::manifest::{FrameTable, Manifest};
use rsm_core::format::transform::{self, ChunkCompressor, CompressionConfig};
use std::hint::black_box;

/// Size of the in-memory log scanned per iteration.
const SCAN_BYTES: usize = 256 * MIB;

/// Walks every batch of `buf`, checking CRCs when `verify`, and returns the record count.
fn scan(buf: &[u8], verify: bool) -> u64 {
    let mut records = 0u64;
    for b in BatchIter::new(buf, 0, verify) {
        records += b.expect("generated batches are valid").record_count() as u64;
    }
    records
}

fn batch_scan(c: &mut Criterion) {
    let buf = batch_buffer(SCAN_BYTES, DataShape::default());
    let batches = BatchIter::new(&buf, 0, false).count();
    eprintln!("batch_scan: {} bytes, {batches} batches of about {} bytes", buf.len(), buf.len() / batches);
    let mut g = c.benchmark_group("batch_scan_256MiB");
    // One iteration takes about 0.1 s: flat sampling keeps a 3 s measurement possible.
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.throughput(Throughput::Bytes(buf.len() as u64));
    for (name, verify) in [("crc32c", true), ("no_crc", false)] {
        g.bench_with_input(BenchmarkId::from_parameter(name), &verify, |b, &verify| {
            b.iter(|| scan(black_box(&buf), verify))
        });
    }
    g.finish();
}

/// The copy's scan: check every batch's CRC-32C (as a copy with `copy.verify.checksums` on does, or not)
/// and feed the chunker, which computes the CRC-32C of every 64 KiB block and combines them per chunk.
fn chunking(buf: &[u8], verify: bool) -> usize {
    let block = rsm_core::format::chunk::DEFAULT_BLOCK_SIZE;
    let mut chunker = Chunker::new(4 << 20, block, 0, rsm_core::Uuid::new(1, 2));
    for b in BatchIter::new(buf, 0, verify) {
        let b = b.expect("generated batches are valid");
        chunker.push(&b);
    }
    chunker.finish().chunks.len()
}

fn chunker(c: &mut Criterion) {
    let buf = batch_buffer(SCAN_BYTES, DataShape::default());
    let mut g = c.benchmark_group("scan_and_chunk_256MiB");
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.throughput(Throughput::Bytes(buf.len() as u64));
    for (name, verified) in [("verify_batches", true), ("no_verify", false)] {
        g.bench_with_input(BenchmarkId::from_parameter(name), &verified, |b, &verified| {
            b.iter(|| chunking(black_box(&buf), verified))
        });
    }
    g.finish();
}

fn manifest(c: &mut Criterion) {
    let m = synthetic_manifest(1 << 30, 4 << 20);
    assert_eq!(m.chunks.len(), 256);
    let bytes = m.encode();
    let mut g = c.benchmark_group("manifest_1GiB_256_chunks");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("encode", |b| b.iter(|| black_box(&m).encode()));
    g.bench_function("decode", |b| {
        b.iter(|| Manifest::decode(black_box(&bytes), "bench.manifest").expect("valid manifest"))
    });
    g.finish();
}

/// One 4 MiB chunk compressed at levels 1, 3 and 9 (the heuristic off, so each is compressed), and read
/// back: stored CRC, decompression into the entry's length, original CRC. The generated values are
/// incompressible (the frames come out a little larger than the chunk): the worst case, the one the
/// heuristic keeps from being stored.
fn chunk_compression(c: &mut Criterion) {
    let buf = batch_buffer(4 * MIB, DataShape::default());
    let mut chunker = Chunker::new(8 << 20, 64 << 10, 0, rsm_core::Uuid::new(1, 2));
    for b in BatchIter::new(&buf, 0, false) {
        chunker.push(&b.expect("generated batches are valid"));
    }
    let entry = chunker.finish().chunks[0];
    let mut g = c.benchmark_group("chunk_compression_4MiB");
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.throughput(Throughput::Bytes(buf.len() as u64));
    for level in [1, 3, 9] {
        let config = CompressionConfig { level, heuristic: false, min_saving_percent: 0, frame_size: 0 };
        let mut compressor = ChunkCompressor::new(config).expect("a valid level");
        let stored = compressor.apply(&buf, 0).expect("compresses").1.expect("compressed");
        eprintln!("chunk_compression: level {level}: {} of {} bytes stored", stored.len(), buf.len());
        g.bench_function(BenchmarkId::new("compress", level), |b| {
            b.iter(|| compressor.apply(black_box(&buf), 0).expect("compresses"))
        });
        // The same chunk in independent frames of 256 KiB (`compression.frame.size`'s default), by the same
        // context.
        g.bench_function(BenchmarkId::new("compress_frames_256KiB", level), |b| {
            b.iter(|| compressor.apply_frames(black_box(&buf), 0, 256 << 10).expect("compresses"))
        });
        let e = transform::compressed_entry(&entry, 0, &stored);
        g.bench_function(BenchmarkId::new("undo", level), |b| {
            b.iter(|| transform::undo(black_box(&e), stored.clone(), "bench.log").expect("undoes"))
        });
    }
    g.finish();
}

/// One 4 MiB chunk of JSON-like events (compressible about 6 to 1) at level 3, as one zstd frame and in
/// independent frames of 256 KiB (`compression.frame.size`'s default, a copy's cost), and a 1 MiB read in
/// its middle undone (a read's cost): as one frame, decompressed from the chunk's start to the read's last
/// block; in frames, the five frames holding the read, their CRCs checked, the last decompressed to the
/// read's last block.
fn json_chunk(c: &mut Criterion) {
    const FRAME: u32 = 256 << 10;
    let buf = rsm_benches::json_batch_buffer(4 * MIB);
    let mut chunker = Chunker::new(8 << 20, 64 << 10, 0, rsm_core::Uuid::new(1, 2));
    for b in BatchIter::new(&buf, 0, false) {
        chunker.push(&b.expect("generated batches are valid"));
    }
    let entry = chunker.finish().chunks[0];
    let config = CompressionConfig { level: 3, heuristic: false, min_saving_percent: 0, frame_size: 0 };
    let mut z = ChunkCompressor::new(config).expect("a valid level");
    let one = z.apply(&buf, 0).expect("compresses").1.expect("compressed");
    let frames = z.apply_frames(&buf, 0, FRAME).expect("compresses").1.expect("compressed");
    eprintln!(
        "json_chunk: {} bytes; one frame {} bytes stored ({:.3}), frames of 256 KiB {} ({:.3}, {:+.1}%)",
        buf.len(),
        one.len(),
        one.len() as f64 / buf.len() as f64,
        frames.bytes.len(),
        frames.bytes.len() as f64 / buf.len() as f64,
        (frames.bytes.len() as f64 / one.len() as f64 - 1.0) * 100.0
    );
    let mut g = c.benchmark_group("json_chunk_4MiB");
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.throughput(Throughput::Bytes(buf.len() as u64));
    g.bench_function("compress_one_frame", |b| b.iter(|| z.apply(black_box(&buf), 0).expect("compresses")));
    g.bench_function("compress_frames_256KiB", |b| {
        b.iter(|| z.apply_frames(black_box(&buf), 0, FRAME).expect("compresses"))
    });
    // The read: 1 MiB from 1.5 MiB + 1000, widened to 64 KiB blocks: 1.5 MiB to 2.5 MiB + 64 KiB.
    let upto = (5 * MIB / 2 + (64 << 10)) as u64;
    g.throughput(Throughput::Bytes(MIB as u64));
    let e = transform::compressed_entry(&entry, 0, &one);
    // (The stored chunk is copied per iteration, as the `undo` benchmarks above do: about 2% of this one.)
    g.bench_function("undo_1MiB_read_one_frame", |b| {
        b.iter(|| {
            transform::undo_chunk_prefix(&e, 0, one.clone(), "bench.log", None, 64 << 10, upto as usize)
                .expect("undoes")
        })
    });
    let mut m = synthetic_manifest(entry.data_length as u64, 8 << 20);
    let (fe, table) = transform::framed_entry(&entry, Transform::ZstdFrames, 0, &frames.bytes, &frames.lengths);
    let (k, _, range) = transform::stored_frames(&fe, &table, FRAME, &((3 * MIB / 2) as u64..upto));
    m.chunks = vec![fe];
    m.frames = Some(FrameTable { frame_size: FRAME, chunks: vec![table] });
    let read = &frames.bytes[range.start as usize..range.end as usize];
    g.bench_function("undo_1MiB_read_frames_256KiB", |b| {
        b.iter(|| transform::undo_frames(&m, 0, k.clone(), black_box(read), upto, "bench.log", None).expect("undoes"))
    });
    g.finish();
}

criterion_group!(benches, batch_scan, chunker, manifest, chunk_compression, json_chunk);
criterion_main!(benches);
