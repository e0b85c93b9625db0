//! Chunk transforms: per-chunk zstd compression, decided chunk by chunk when a segment is copied and undone
//! when the chunk is read.
//!
//! Design:
//! - **What is stored.** A segment's `.log` object is its chunks' stored bytes back to back, in order: a chunk
//!   left as it is occupies its original bytes, a compressed chunk one zstd frame of them (no dictionary, so
//!   each chunk decodes alone). The chunk entry says which ([`Transform`]) and keeps the original position and
//!   length (the `.log` file's) apart from the stored ones (the object's).
//! - **What the CRCs cover.** The entry's CRC-32C and the manifest's block CRCs cover the chunk's *original*
//!   bytes, compressed or not, so every reader checks what it serves the same way. A compressed chunk's entry
//!   (RDI version 2) adds the CRC-32C of its *stored* bytes: they are checked before zstd sees them, so a
//!   damaged stored byte is caught even where the decoder would not notice it, and never decodes to other
//!   bytes that are then served.
//! - **How a read maps onto a compressed chunk.** A read of any byte of a compressed chunk reads its whole
//!   stored range and checks the stored CRC. A read to the chunk's end decompresses it all and checks the
//!   length and the original CRC; a read that ends before ([`crate::format::manifest::Manifest::align`]
//!   widens it to whole blocks) decompresses only up to its last block, which the reader checks against the
//!   manifest's block CRCs, as it does any read, before it serves a byte: a 1 MiB fetch from the start of a
//!   4 MiB chunk decompresses about 1 MiB, not 4.
//! - **Memory.** Decompression never allocates by a length read from the frame: its output buffer has the
//!   capacity the entry's original length gives ([`ChunkEntry::data_length`], bounded by the manifest's
//!   checked chunk table), and a frame that decodes to more or fewer bytes is corrupt.
//! - **When a chunk is compressed.** With the heuristic on, a chunk most of whose bytes are in batches the
//!   producer already compressed (record batch attributes' codec other than none) is left as it is without
//!   trying, and one whose compression would save less than `min_saving_percent` of its bytes is left as it is
//!   after trying; with the heuristic off every chunk is compressed.

use crate::crypto::DataKey;
use crate::error::{Error, Result};
use crate::format::batch::BatchIter;
use crate::format::chunk::{ChunkEntry, Transform};
use bytes::Bytes;

/// The settings of chunk compression (`compression.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressionConfig {
    /// `compression.level`: the zstd level, 1 to 22 (default 3).
    pub level: i32,
    /// `compression.heuristic.enabled`: leave a chunk as it is when the producer compressed most of it, or
    /// when compressing saves too little (default true).
    pub heuristic: bool,
    /// `compression.min.saving.percent`: with the heuristic on, the least share of a chunk's bytes that
    /// compressing must save for the chunk to be stored compressed, 0 to 99 (default 10; 0 keeps any
    /// saving of at least a byte).
    pub min_saving_percent: u32,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig { level: 3, heuristic: true, min_saving_percent: 10 }
    }
}

/// What a [`ChunkCompressor`] did with one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Stored compressed.
    Compressed,
    /// Left as it is: most of its bytes are in batches the producer compressed (heuristic).
    ProducerCompressed,
    /// Left as it is: compressing saved less than the threshold (heuristic).
    TooLittleSaving,
}

/// How many of the bytes of `chunk` (whole batches, the first at `position` in the `.log`) are in batches
/// whose producer compressed them (a v2 batch's or a legacy wrapper's codec other than none). Bytes that do
/// not parse as batches count as uncompressed.
pub fn producer_compressed_bytes(chunk: &[u8], position: u64) -> u64 {
    BatchIter::new(chunk, position, false)
        .map_while(|b| b.ok())
        .filter(|b| b.compression() != 0)
        .map(|b| b.size() as u64)
        .sum()
}

/// Compresses chunks with one zstd context, deciding per chunk (see the module documentation).
pub struct ChunkCompressor {
    config: CompressionConfig,
    zstd: zstd::bulk::Compressor<'static>,
}

impl std::fmt::Debug for ChunkCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkCompressor").field("config", &self.config).finish()
    }
}

impl ChunkCompressor {
    /// A compressor with these settings.
    pub fn new(config: CompressionConfig) -> Result<Self> {
        let zstd = zstd::bulk::Compressor::new(config.level)
            .map_err(|e| Error::config("compression.level", format!("zstd refuses level {}: {e}", config.level)))?;
        Ok(ChunkCompressor { config, zstd })
    }

    /// What to store for `chunk`, the original bytes of a chunk whose first batch is at `position` in the
    /// `.log`: its compressed bytes, or `None` to store it as it is, with the reason.
    pub fn apply(&mut self, chunk: &[u8], position: u64) -> Result<(Decision, Option<Vec<u8>>)> {
        let len = chunk.len() as u64;
        if self.config.heuristic && producer_compressed_bytes(chunk, position) * 2 > len {
            return Ok((Decision::ProducerCompressed, None));
        }
        let compressed = self.zstd.compress(chunk).map_err(|e| {
            Error::storage(format!("zstd compression of the chunk at position {position} ({len} bytes)"), e)
        })?;
        let saved = len.saturating_sub(compressed.len() as u64);
        if self.config.heuristic && (saved == 0 || saved * 100 < len * self.config.min_saving_percent as u64) {
            return Ok((Decision::TooLittleSaving, None));
        }
        Ok((Decision::Compressed, Some(compressed)))
    }
}

/// The entry of chunk `c` stored compressed as `stored` at `position` in the object: transform zstd, the
/// stored length and the stored bytes' CRC-32C (the original length and CRC stay).
pub fn compressed_entry(c: &ChunkEntry, position: u64, stored: &[u8]) -> ChunkEntry {
    transformed_entry(c, Transform::Zstd, position, stored)
}

/// The entry of chunk `c` stored transformed by `transform` as `stored` at `position` in the object: the
/// transform, the stored length and the stored bytes' CRC-32C (the original length and CRC stay).
pub fn transformed_entry(c: &ChunkEntry, transform: Transform, position: u64, stored: &[u8]) -> ChunkEntry {
    let mut e = *c;
    e.rdi.transform = transform;
    e.rdi.stored_position = position;
    e.rdi.stored_length = stored.len() as u32;
    e.rdi.stored_crc32c = crate::checksum::crc32c(stored);
    e
}

/// The original bytes of chunk `c`, not encrypted, from its `stored` bytes: [`undo_chunk`] without a data
/// key (an encrypted chunk is then an error).
pub fn undo(c: &ChunkEntry, stored: impl Into<Bytes>, what: &str) -> Result<Bytes> {
    undo_chunk(c, 0, stored, what, None, 0)
}

/// Whether a read of some of chunk `c`'s bytes can read and undo only the blocks holding them: an
/// encrypted chunk that is not compressed, sealed block by block ([`DataKey::seal_blocks`]).
pub fn undoes_by_block(c: &ChunkEntry) -> bool {
    c.rdi.transform == Transform::Aes256Gcm
}

/// Where the blocks holding the original bytes `wanted` (relative to chunk `c`'s start) of a chunk sealed
/// block by block (blocks of `block` bytes) are stored: the original bytes those whole blocks hold
/// (relative to the chunk's start) and their stored range in the object.
pub fn stored_blocks(
    c: &ChunkEntry,
    wanted: &std::ops::Range<u64>,
    block: u32,
) -> (std::ops::Range<u64>, std::ops::Range<u64>) {
    let len = c.data_length as u64;
    let step = if block == 0 { len.max(1) } else { block as u64 };
    let first = wanted.start / step;
    let within = first * step..(wanted.end.div_ceil(step) * step).min(len);
    let start = c.stored_range().start + crate::crypto::sealed_blocks_len(first * step, step as u32);
    (within.clone(), start..start + crate::crypto::sealed_blocks_len(within.end - within.start, step as u32))
}

/// The original bytes `within` (whole blocks, relative to the chunk's start; see [`stored_blocks`]) of chunk
/// `index` (entry `c`, sealed block by block in blocks of `block` bytes) from their `stored` blocks,
/// decrypted and authenticated under the segment's data `key`. Only those blocks are checked: the
/// caller checks the original bytes against the manifest's block CRCs.
pub fn undo_blocks(
    c: &ChunkEntry,
    index: usize,
    within: std::ops::Range<u64>,
    stored: &[u8],
    what: &str,
    key: Option<&DataKey>,
    block: u32,
) -> Result<Bytes> {
    let key = key.ok_or_else(|| {
        Error::invalid(format!(
            "{what}: chunk at position {} is encrypted, and no data key was given to decrypt it",
            c.original_position()
        ))
    })?;
    Ok(Bytes::from(key.open_blocks(c, index, within, stored, block, what)?))
}

/// The original bytes of chunk `c` from its `stored` bytes (the whole stored range): checks their length
/// and stored CRC-32C, decrypts them when encrypted (chunk `index` of its manifest, under the segment's
/// data `key`; block by block in blocks of `block` bytes, the manifest's block size, when
/// [`undoes_by_block`]), decompresses them when compressed into a buffer of exactly the entry's original length,
/// and checks the result against the entry's length and CRC-32C. `what` (the object key) is named in
/// errors; every failure of the stored bytes is [`crate::ErrorKind::Corrupt`].
pub fn undo_chunk(
    c: &ChunkEntry,
    index: usize,
    stored: impl Into<Bytes>,
    what: &str,
    key: Option<&DataKey>,
    block: u32,
) -> Result<Bytes> {
    undo_chunk_prefix(c, index, stored, what, key, block, c.data_length as usize)
}

/// The first `len` original bytes of chunk `c` (at most its length) from its `stored` bytes (the whole stored
/// range), as [`undo_chunk`] gives them, but a compressed chunk is decompressed only that far. A prefix
/// shorter than the chunk is not checked against the chunk's CRC (which covers all of it): the caller
/// checks it against the manifest's block CRCs ([`crate::format::manifest::Manifest::check_blocks`]), so
/// `len` should end on a block boundary.
pub fn undo_chunk_prefix(
    c: &ChunkEntry,
    index: usize,
    stored: impl Into<Bytes>,
    what: &str,
    key: Option<&DataKey>,
    block: u32,
    len: usize,
) -> Result<Bytes> {
    let stored: Bytes = stored.into();
    let len = len.min(c.data_length as usize);
    let whole = len == c.data_length as usize;
    let chunk = || {
        format!(
            "{what}: chunk at position {} (offsets {}..={}, stored at {}..{})",
            c.original_position(),
            c.first_offset,
            c.last_offset,
            c.stored_range().start,
            c.stored_range().end
        )
    };
    if stored.len() as u64 != c.rdi.stored_length as u64 {
        return Err(Error::corrupt(format!(
            "{}: {} stored bytes, its entry says {}",
            chunk(),
            stored.len(),
            c.rdi.stored_length
        )));
    }
    let crc = crate::checksum::crc32c(&stored);
    if crc != c.rdi.stored_crc32c {
        return Err(Error::corrupt(format!(
            "{}: stored bytes have CRC-32C {crc:#010x}, its entry says {:#010x}",
            chunk(),
            c.rdi.stored_crc32c
        )));
    }
    let stored = if c.rdi.transform.is_encrypted() {
        let key = key.ok_or_else(|| {
            Error::invalid(format!("{}: is encrypted, and no data key was given to decrypt it", chunk()))
        })?;
        Bytes::from(match undoes_by_block(c) {
            true => key.open_blocks(c, index, 0..c.data_length as u64, &stored, block, what)?,
            false => key.open_chunk(c, index, &stored, what)?,
        })
    } else {
        stored
    };
    let original = match c.rdi.transform.is_compressed() {
        false => stored,
        true if !whole => {
            let out = decompress_prefix(&stored, len, c.data_length as usize)
                .map_err(|e| Error::corrupt(format!("{}: its first {len} bytes do not decompress: {e}", chunk())))?;
            return Ok(Bytes::from(out));
        }
        true => {
            let want = c.data_length as usize;
            let out = zstd::bulk::decompress(&stored, want)
                .map_err(|e| Error::corrupt(format!("{}: does not decompress to {want} bytes: {e}", chunk())))?;
            if out.len() != want {
                return Err(Error::corrupt(format!(
                    "{}: decompresses to {} bytes, its entry says {want}",
                    chunk(),
                    out.len()
                )));
            }
            Bytes::from(out)
        }
    };
    c.verify(&original, what)?;
    Ok(if whole { original } else { original.slice(..len) })
}

/// The first `len` bytes a zstd frame of a chunk of `chunk_len` bytes decompresses to, decoding no further
/// than needed; an error when the frame is damaged or ends before `len` bytes. Memory is bounded by the
/// chunk, never by what the frame says: the output is allocated by `len`, and the decoder refuses a window
/// larger than the chunk (a frame of ours never needs one: its window is at most its content).
fn decompress_prefix(frame: &[u8], len: usize, chunk_len: usize) -> std::result::Result<Vec<u8>, String> {
    use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer, get_error_name};
    let error = |c| get_error_name(c).to_string();
    let mut dctx = DCtx::create();
    let window_log = usize::BITS - chunk_len.saturating_sub(1).leading_zeros();
    dctx.set_parameter(DParameter::WindowLogMax(window_log.max(10))).map_err(error)?;
    let mut out: Vec<u8> = Vec::with_capacity(len);
    let mut input = InBuffer::around(frame);
    while out.len() < len {
        let before = (input.pos(), out.len());
        let mut output = OutBuffer::around_pos(&mut out, before.1);
        let hint = dctx.decompress_stream(&mut output, &mut input).map_err(error)?;
        if out.len() >= len {
            break;
        }
        if hint == 0 {
            return Err(format!("the frame ends after {} bytes", out.len()));
        }
        if (input.pos(), out.len()) == before {
            return Err(format!("the frame is cut short after {} bytes", out.len()));
        }
    }
    out.truncate(len);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::chunk::{Rdi, RdiObject};
    use crate::format::writer::{Record, encode_batch};
    use crate::model::Uuid;

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
        let mut rng = crate::format::writer::Rng::new(7);
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
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "byte {i}: {e}");
            assert!(e.to_string().contains("t/0/x.log: chunk at position 0"), "byte {i}: {e}");
        }
        // A frame whose stored CRC matches (the entry was written for it) but that decodes to other lengths
        // than the entry says: the output buffer is the entry's length, never the frame's.
        for (case, data_length, says) in
            [("shorter", json.len() - 1, "does not decompress"), ("longer", json.len() + 1, "decompresses to")]
        {
            let c = ChunkEntry { data_length: data_length as u32, ..good };
            let e = undo(&c, Bytes::from(stored.clone()), "k").unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{case}: {e}");
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
    fn a_prefix_decodes_only_as_far_as_asked_and_refuses_what_a_chunk_cannot_hold() {
        let original = json_batches(400);
        assert!(original.len() > 200_000, "{}", original.len());
        let frame = zstd::bulk::compress(&original, 3).unwrap();
        for len in [0, 1, 4096, 65_536, 100_003, original.len() - 1, original.len()] {
            let got = decompress_prefix(&frame, len, original.len()).unwrap();
            assert!(got[..] == original[..len], "prefix of {len} bytes");
        }
        // A frame cut short, or asked for more than it holds, is an error naming how far it got.
        let e = decompress_prefix(&frame[..frame.len() / 2], original.len(), original.len()).unwrap_err();
        assert!(e.contains("cut short"), "{e}");
        let e = decompress_prefix(&frame, original.len() + 1, original.len() + 1).unwrap_err();
        assert!(e.contains(&format!("ends after {} bytes", original.len())), "{e}");
        // A frame whose window is larger than the chunk it stands for is refused before anything is
        // allocated for it.
        assert!(decompress_prefix(&frame, 10, 1024).is_err());
        // Not a frame at all.
        assert!(decompress_prefix(&original[..1000], 10, original.len()).is_err());
    }
}
