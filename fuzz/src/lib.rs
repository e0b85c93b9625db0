//! The fuzz targets: one function per parser of untrusted bytes, each given arbitrary bytes. A target
//! panics only when the code under test breaks a rule it must keep: a parser that panics or overflows
//! (the harness builds with debug assertions, so overflow panics), allocates past libFuzzer's limit, or
//! accepts bytes that its own encoder then writes differently (round trips, where an encoder exists).
//!
//! The libFuzzer harness (`fuzz/libfuzzer`, run by `tools/fuzz`) calls these, and `cargo test` replays
//! every kept input of [`TARGETS`] (`fuzz/corpus/<target>/` and the crashes once found,
//! `fuzz/regressions/<target>/`) through them, so a fixed finding stays fixed.

use rsm_core::format::batch::{BatchIter, batch_size_at};
use rsm_core::format::chunk::{ChunkEntry, Chunker, frame_count};
use rsm_core::format::codec::Reader;
use rsm_core::format::index::{
    OffsetIndexWriter, TimeIndexWriter, check_producer_snapshot, read_offset_index, read_time_index,
};
use rsm_core::format::manifest::{MAGIC, Manifest};
use rsm_core::format::partition::parse_leader_epochs;
use rsm_core::format::records::compression::{self, Codec};
use rsm_core::format::records::{DecodeLimits, decode_batch};
use rsm_core::format::remote_index::RemoteIndexFiles;
use rsm_core::format::trailer::{TRAILER_LEN, Trailer};
use rsm_core::format::transform::stored_frames;
use rsm_core::storage::fetch::plan_reads;
use rsm_core::storage::single::{self, TAIL_READ};
use rsm_facade::wire::{decode_metadata, encode_metadata};
use rsm_metadata::records;

pub mod seeds;

/// A fuzz target: arbitrary bytes in, a panic when a rule is broken.
pub type Target = fn(&[u8]);

/// Every target by name, as the harness and the corpus directories name them.
pub const TARGETS: &[(&str, Target)] = &[
    ("batches", batches),
    ("chunker", chunker),
    ("indexes", indexes),
    ("chunk_entry", chunk_entry),
    ("manifest", manifest),
    ("segment_object", segment_object),
    ("remote_index", remote_index),
    ("leader_epochs", leader_epochs),
    ("wire_metadata", wire_metadata),
    ("metadata_records", metadata_records),
    ("records", records),
    ("decompress_gzip", decompress_gzip),
    ("decompress_snappy", decompress_snappy),
    ("decompress_lz4", decompress_lz4),
    ("decompress_zstd", decompress_zstd),
    ("aiven", aiven),
];

/// What Aiven's plugin stored and Kafka kept for it, as a store and a metadata topic hand it over: its JSON
/// manifest, its custom metadata (tagged fields) and its list of chunk sizes, each parsed without a panic or an
/// allocation the input does not pay for. A manifest accepted has chunks that cover its log exactly, in order,
/// each stored after the one before.
pub fn aiven(data: &[u8]) {
    use rsm_core::format::aiven::{AivenCustomMetadata, AivenManifest, decode_chunk_sizes};
    let _ = AivenCustomMetadata::parse(data, "fuzz");
    if let Ok(sizes) = decode_chunk_sizes(data, "fuzz") {
        assert!(sizes.len() <= data.len(), "{} sizes from {} bytes", sizes.len(), data.len());
    }
    let Ok(m) = AivenManifest::parse(data, "fuzz") else { return };
    let _ = m.metadata();
    let chunks = &m.chunks;
    let (mut original, mut stored) = (0u64, 0u64);
    for i in 0..chunks.len().min(1 << 12) {
        let c = chunks.chunk(i);
        assert_eq!(c.original.start, original, "chunk {i} follows the one before");
        assert!(c.original.end > c.original.start && c.original.end <= chunks.original_file_size as u64);
        assert_eq!(chunks.chunk_at(c.original.start), Some(i), "chunk {i} holds its first byte");
        assert!(c.stored.start >= stored && c.stored.end >= c.stored.start, "chunk {i} stored in order");
        (original, stored) = (c.original.end, c.stored.end);
    }
    if chunks.len() <= 1 << 12 {
        assert_eq!(original, chunks.original_file_size as u64, "the chunks cover the log");
        assert_eq!(chunks.chunk_at(original), None);
    }
}

/// A one-object segment (`segment.layout=single`) as a reader without its custom metadata meets it: the
/// trailer found in the object's last [`TAIL_READ`] bytes and checked against its size, then the manifest it
/// locates, checked against it. What is accepted lies inside the object: the manifest ends where the
/// trailer starts, the stored log where the index bundle starts, and the trailer reads back as written.
pub fn segment_object(data: &[u8]) {
    let key = "t-AAAAAAAAAAAAAAAAAAAAAA/0/00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA.segment";
    let size = data.len() as u64;
    let tail = &data[data.len().saturating_sub(TAIL_READ as usize)..];
    let Ok(t) = Trailer::of_tail(tail, size, key) else { return };
    assert_eq!(t.object_size(), size, "the trailer ends the object");
    assert_eq!(Trailer::decode(&t.encode(), key).ok(), Some(t), "a trailer reads back as written");
    let manifest = &data[t.manifest_position as usize..data.len() - TRAILER_LEN];
    assert_eq!(manifest.len() as u64, t.manifest_length as u64);
    if let Ok(m) = single::manifest_of(manifest, t, key) {
        assert!(t.indexes_position <= t.manifest_position);
        assert_eq!(m.chunks.last().map_or(0, |c| c.stored_range().end), t.indexes_position);
    }
}

/// The decompression limit of the record targets: small, so that a bomb is found fast.
pub const FUZZ_LIMIT: usize = 1 << 20;

/// The first 8 bytes as a number (zero-padded), and the rest.
fn take_u64(data: &[u8]) -> (u64, &[u8]) {
    let n = data.len().min(8);
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&data[..n]);
    (u64::from_be_bytes(b), &data[n..])
}

/// Record batches and legacy message sets, with and without CRC checks: every batch read lies inside the
/// input, in order, and the iterator ends.
pub fn batches(data: &[u8]) {
    let _ = batch_size_at(data, 0);
    for verify in [false, true] {
        let mut at = 0u64;
        for b in BatchIter::new(data, 7, verify) {
            let Ok(b) = b else { break };
            assert_eq!(b.position(), 7 + at, "batches are back to back");
            at += b.size() as u64;
            assert!(at <= data.len() as u64);
            let _ = (b.base_offset(), b.last_offset(), b.partition_leader_epoch(), b.attributes());
            let _ = (b.base_timestamp(), b.max_timestamp(), b.record_count(), b.stored_crc(), b.computed_crc());
            assert!(b.last_offset() >= b.base_offset(), "a batch's last offset is not below its first");
        }
    }
}

/// Batches cut into chunks with block CRCs: the chunks tile the bytes read, on batch boundaries, and every
/// CRC is the CRC of its bytes.
pub fn chunker(data: &[u8]) {
    let (params, data) = take_u64(data);
    let target = 1 + (params & 0xffff);
    // Blocks of 16 bytes and up: single-byte blocks only make every run slow, they test nothing more.
    let block = 16 + ((params >> 16) & 0x3fff) as u32;
    let mut c = Chunker::new(target, block, 0, rsm_core::Uuid::new(1, 2));
    let mut end = 0usize;
    for b in BatchIter::new(data, 0, false) {
        let Ok(b) = b else { break };
        c.push(&b);
        end += b.size();
    }
    let table = c.finish();
    let mut at = 0u64;
    let mut blocks = table.block_crcs.iter();
    for chunk in &table.chunks {
        assert_eq!(chunk.original_position(), at, "chunks tile the log");
        let bytes = &data[chunk.original_position() as usize..chunk.end() as usize];
        chunk.verify(bytes, "fuzz").expect("a chunk's CRC is its bytes'");
        for piece in bytes.chunks(table.block_size as usize) {
            assert_eq!(blocks.next(), Some(&rsm_core::checksum::crc32c(piece)), "block CRC");
        }
        at = chunk.end();
    }
    assert_eq!(at, end as u64, "the chunks cover every batch");
    assert!(blocks.next().is_none(), "no block CRC left over");
}

/// `.index`, `.timeindex` and a producer snapshot: whatever is accepted is sorted, inside the log, and written
/// back the same; a snapshot only with its version and CRC right.
pub fn indexes(data: &[u8]) {
    let (base, data) = take_u64(data);
    let (log_size, data) = take_u64(data);
    let base = base as i64;
    if let Ok(entries) = read_offset_index("fuzz.index", base, data, log_size) {
        // Written back with the entry size the reader chose (8 bytes, or KIP-1333's 12).
        let long = !entries.is_empty() && data.len() == entries.len() * 12;
        let mut w = if long { OffsetIndexWriter::long(base) } else { OffsetIndexWriter::new(base) };
        for e in &entries {
            assert!(e.position < log_size.max(1));
            w.append(e.offset, e.position);
        }
        assert_eq!(w.bytes(), data, "offset index round trip");
    }
    if let Ok(entries) = read_time_index("fuzz.timeindex", base, data) {
        let mut w = TimeIndexWriter::new(base);
        for e in &entries {
            w.append(e.timestamp, e.offset);
        }
        assert_eq!(w.bytes(), data, "time index round trip");
    }
    // A producer snapshot: accepted only with version 1 and a CRC-32C over the rest that matches.
    if check_producer_snapshot("fuzz.snapshot", data).is_ok() && !data.is_empty() {
        assert_eq!(&data[..2], &[0, 1], "version 1");
        assert_eq!(&data[2..6], &rsm_core::checksum::crc32c(&data[6..]).to_be_bytes(), "its CRC");
    }
}

/// A remoteLogIndex entry, as read and with its CRC made right (so the fuzzer gets past it): what decodes
/// encodes to bytes that decode to the same entry.
pub fn chunk_entry(data: &[u8]) {
    let mut fixed = data.to_vec();
    if fixed.len() >= 8 {
        let end = (4 + i16::from_be_bytes([fixed[2], fixed[3]]).max(0) as usize).min(fixed.len());
        let crc = rsm_core::checksum::crc32c(&fixed[8.min(end)..end]);
        fixed[4..8].copy_from_slice(&crc.to_be_bytes());
    }
    for bytes in [data, &fixed[..]] {
        let mut r = Reader::new(bytes, "fuzz");
        if let Ok(e) = ChunkEntry::decode(&mut r) {
            assert!(r.position() <= bytes.len());
            let _ = (e.end(), e.stored_range());
            let mut out = Vec::new();
            e.encode(&mut out);
            assert_eq!(out.len(), e.encoded_len());
            let again = ChunkEntry::decode(&mut Reader::new(&out, "fuzz")).expect("what we write reads back");
            assert_eq!(again, e, "chunk entry round trip");
        }
    }
}

/// A manifest, as read and with its CRC made right: what decodes encodes to the same manifest, and the
/// fetch planner and block checks over it stay inside the log for any range.
pub fn manifest(data: &[u8]) {
    let (range, data) = take_u64(data);
    let mut fixed = data.to_vec();
    if fixed.len() >= 10 {
        fixed[..4].copy_from_slice(MAGIC);
        let n = fixed.len() - 4;
        let crc = rsm_core::checksum::crc32c(&fixed[..n]);
        fixed[n..].copy_from_slice(&crc.to_be_bytes());
    }
    for bytes in [data, &fixed[..]] {
        let Ok(m) = Manifest::decode(bytes, "fuzz") else { continue };
        let again = Manifest::decode(&m.encode(), "fuzz").expect("what we write reads back");
        assert_eq!(again, m, "manifest round trip");
        for loc in m.indexes.iter().flatten() {
            assert!(loc.position.checked_add(loc.length).is_some(), "an index's end is a position");
        }
        let log_end = m.chunks.last().map_or(0, |c| c.end());
        let start = (range >> 32) % (log_end + 2);
        let end = start + (range & 0xffff_ffff);
        let reads = plan_reads(&m, start, end, 1 << 20);
        let mut at = reads.first().map_or(0, |r| r.start);
        for r in &reads {
            assert_eq!(r.start, at, "reads follow each other");
            assert!(r.start < r.end && r.end <= log_end, "a read stays inside the log");
            at = r.end;
            if r.end - r.start <= 1 << 20 {
                let zeros = vec![0u8; (r.end - r.start) as usize];
                let _ = m.check_blocks(r.clone(), &zeros, "fuzz");
            }
        }
        // A read's frames, for each chunk in frames: within the table, holding the read, inside the chunk's
        // stored range.
        for (i, c) in m.chunks.iter().enumerate() {
            let Some((size, frames)) = m.frames_of(i) else { continue };
            assert_eq!(frames.len(), frame_count(c.data_length, size), "a chunk's frames are its frame count");
            let len = c.data_length as u64;
            if len == 0 {
                continue;
            }
            let a = start % len;
            let b = (a + 1 + (range & 0xffff)).min(len);
            let (k, within, stored) = stored_frames(c, frames, size, &(a..b));
            assert!(k.start < k.end && k.end <= frames.len(), "frames {k:?} of {}", frames.len());
            assert!(within.start <= a && b <= within.end && within.end <= len, "{within:?} holds {a}..{b}");
            let r = c.stored_range();
            assert!(r.start <= stored.start && stored.end <= r.end, "{stored:?} inside {r:?}");
        }
        let aligned = m.align(start..end);
        assert!(aligned.start <= start.max(aligned.start) && aligned.end <= log_end.max(aligned.start));
        let _ = (m.chunk_at_position(start), m.chunk_for_offset(start as i64), m.chunk_for_timestamp(end as i64));
    }
}

/// SR-32's remote index files (remoteLogIndex, remoteOffsetIndex, remoteTimeIndex) as found on disk: the
/// three cut from the input at lengths it gives, looked up by offset and by timestamp.
pub fn remote_index(data: &[u8]) {
    let (cuts, data) = take_u64(data);
    let (probe, data) = take_u64(data);
    let a = ((cuts & 0xffff) as usize).min(data.len());
    let b = (a + ((cuts >> 16) & 0xffff) as usize).min(data.len());
    let base = (cuts >> 32) as i64 * 1000;
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (ext, bytes) in
        [("remoteLogIndex", &data[..a]), ("remoteOffsetIndex", &data[a..b]), ("remoteTimeIndex", &data[b..])]
    {
        std::fs::write(dir.path().join(format!("{base:020}.{ext}")), bytes).expect("write a file");
    }
    let Ok(files) = RemoteIndexFiles::open(dir.path(), 1 << 20) else { return };
    for offset in [probe as i64, base, base.saturating_add(probe as u32 as i64), i64::MAX, i64::MIN] {
        if let Ok(Some(e)) = files.lookup_offset(offset) {
            assert!(e.last_offset >= offset, "the entry found reaches the offset");
        }
    }
    for ts in [probe as i64, i64::MIN, i64::MAX] {
        let _ = files.lookup_timestamp(ts);
    }
}

/// A leader-epoch checkpoint: no allocation by its count line, and what is accepted has that many entries.
pub fn leader_epochs(data: &[u8]) {
    if let Ok(epochs) = parse_leader_epochs(data, "fuzz") {
        assert!(epochs.len() <= data.len() / 4 + 1);
    }
}

/// The metadata encoding JNI passes: what decodes encodes to bytes that decode to the same metadata.
pub fn wire_metadata(data: &[u8]) {
    if let Ok(md) = decode_metadata(data) {
        let again = decode_metadata(&encode_metadata(&md)).expect("what we write reads back");
        assert_eq!(again, md, "metadata round trip");
    }
}

/// A record value of Kafka's `__remote_log_metadata` topic: what decodes encodes to bytes that decode to
/// the same event, are their own encoding, and are never longer than the input (our encoding is Kafka's
/// canonical one: minimal varints, version 0, no unknown or default tagged fields). The same bytes as a
/// tombstone's key (KIP-1266) read as one of the key designs or as unrecognized, never as an error.
pub fn metadata_records(data: &[u8]) {
    // The same bytes as a tombstone's key (KIP-1266): any key reads as one of the designs or as unrecognized.
    match records::decode_record(Some(data), None) {
        Ok(records::MetadataRecord::Tombstone(records::Tombstone::Unrecognized { len })) => assert_eq!(len, data.len()),
        Ok(records::MetadataRecord::Tombstone(_)) => {}
        other => panic!("a key without a value is a tombstone: {other:?}"),
    }
    if let Ok(event) = records::decode(data) {
        let bytes = records::encode(&event);
        assert!(bytes.len() <= data.len(), "the canonical encoding is not longer than what was read");
        let again = records::decode(&bytes).expect("what we write reads back");
        assert_eq!(again, event, "metadata record round trip");
        assert_eq!(records::encode(&again), bytes, "our encoding is its own");
    }
}

/// Every batch of a log decoded, records and all, under a 1 MiB limit: no panic, and what decodes holds no
/// more bytes than the batch inflated to (the limit, or the batch itself when it is not compressed).
pub fn records(data: &[u8]) {
    let limits = DecodeLimits { max_batch_bytes: FUZZ_LIMIT };
    for b in BatchIter::new(data, 0, false) {
        let Ok(b) = b else { break };
        let Ok(d) = decode_batch(&b, &limits) else { continue };
        let held: usize = d
            .records
            .iter()
            .map(|r| {
                let headers: usize = r.headers.iter().map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len)).sum();
                r.key.as_ref().map_or(0, Vec::len) + r.value.as_ref().map_or(0, Vec::len) + headers
            })
            .sum();
        // A header key read with UTF-8 replacement grows by at most 3 bytes for each byte replaced.
        assert!(held <= 3 * FUZZ_LIMIT.max(b.size()), "records hold {held} bytes of a {}-byte batch", b.size());
        assert!(d.control.is_none() || d.records.is_empty(), "a control batch has no data records");
        if d.magic < 2 {
            assert!(d.producer_id == -1 && !d.transactional && d.control.is_none(), "legacy batches have no producer");
        }
    }
}

/// Arbitrary bytes through one codec under a 1 MiB limit: no panic, and no output past the limit.
fn decompress_under_limit(codec: Codec, data: &[u8]) {
    if let Ok(out) = compression::decompress(codec, data, FUZZ_LIMIT, "fuzz") {
        assert!(out.len() <= FUZZ_LIMIT, "{} gave {} bytes", codec.name(), out.len());
    }
}

/// gzip ([`compression::gzip`]).
pub fn decompress_gzip(data: &[u8]) {
    decompress_under_limit(Codec::Gzip, data);
}

/// snappy, xerial-framed or raw ([`compression::snappy`]).
pub fn decompress_snappy(data: &[u8]) {
    decompress_under_limit(Codec::Snappy, data);
}

/// Kafka's LZ4 frame, and magic 0's with its header checksum recomputed ([`compression::lz4_magic0`]).
pub fn decompress_lz4(data: &[u8]) {
    decompress_under_limit(Codec::Lz4, data);
    if let Ok(out) = compression::lz4_magic0(data, FUZZ_LIMIT, "fuzz") {
        assert!(out.len() <= FUZZ_LIMIT, "lz4 (magic 0) gave {} bytes", out.len());
    }
}

/// zstd ([`compression::zstd`]).
pub fn decompress_zstd(data: &[u8]) {
    decompress_under_limit(Codec::Zstd, data);
}
