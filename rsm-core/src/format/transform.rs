//! Chunk transforms: per-chunk zstd compression, decided chunk by chunk when a segment is copied and undone
//! when the chunk is read.
//!
//! Design:
//! - **What is stored.** A segment's `.log` object is its chunks' stored bytes back to back, in order: a chunk
//!   left as it is occupies its original bytes; a compressed chunk (`compression.frame.size`, 256 KiB by
//!   default) its original bytes cut into frames of the frame size (whole blocks; the last frame may be
//!   shorter), each compressed as an independent zstd frame (no dictionary, so each frame decodes alone),
//!   the frames back to back in order ([`Transform::ZstdFrames`]; with encryption each frame then sealed on
//!   its own, [`Transform::ZstdFramesAes256Gcm`]); with `compression.frame.size=0` one zstd frame of the
//!   whole chunk ([`Transform::Zstd`], the format before frames). The chunk entry says which ([`Transform`])
//!   and keeps the original position and length (the `.log` file's) apart from the stored ones (the
//!   object's); the manifest's frame table (version 5) gives each frame's stored length and CRC-32C.
//! - **What the CRCs cover.** The entry's CRC-32C and the manifest's block CRCs cover the chunk's *original*
//!   bytes, compressed or not, so every reader checks what it serves the same way. A compressed chunk's entry
//!   (RDI version 2) adds the CRC-32C of its *stored* bytes: they are checked before zstd sees them, so a
//!   damaged stored byte is caught even where the decoder would not notice it, and never decodes to other
//!   bytes that are then served.
//! - **How a read maps onto a compressed chunk.** A read of part of a chunk in frames
//!   ([`crate::format::manifest::Manifest::align`] widens it to whole blocks) is one ranged read of the stored
//!   bytes of the frames holding it ([`stored_frames`]); each frame's stored length and CRC-32C are checked
//!   against the frame table before it is opened or decompressed ([`undo_frames`]), and the last frame is
//!   decompressed only up to the read's last block: a 1 MiB fetch in the middle of a 4 MiB chunk reads and
//!   decompresses about 1.25 MiB of it (5 frames of 256 KiB), not the 2.5 MiB on average up to its last
//!   block from the chunk's start. A read of a whole chunk reads all its frames and checks the entry's stored
//!   CRC (over all of them) and, decompressed, its length and original CRC. A chunk of one frame is read
//!   whole: its stored CRC is checked, then a read to the chunk's end decompresses it all and checks the
//!   length and the original CRC, a read that ends before decompresses only up to its last block. Either
//!   way the reader checks what it serves against the manifest's block CRCs before it serves a byte.
//! - **Memory.** Decompression never allocates by a length read from a zstd frame: its output buffer has the
//!   capacity the entry's original length gives ([`ChunkEntry::data_length`], bounded by the manifest's
//!   checked chunk table; for frames, the frames' original lengths the frame size gives), a decoder that
//!   streams refuses a window larger than the frame, and a frame that decodes to more or fewer bytes is
//!   corrupt.
//! - **When a chunk is compressed.** With the heuristic on, a chunk most of whose bytes are in batches the
//!   producer already compressed (record batch attributes' codec other than none) is left as it is without
//!   trying, and one whose compression would save less than `min_saving_percent` of its bytes is left as it is
//!   after trying (the saving of all its frames together); with the heuristic off every chunk is compressed.
//!   Frames cost a little ratio (each starts without the history of the ones before it: about 4% more
//!   stored bytes of JSON-like records at 256 KiB, 0.158 of the original against 0.152 for one frame per
//!   4 MiB chunk) and nothing at copy (one zstd context compresses them one after the other).

use crate::crypto::DataKey;
use crate::error::{Error, Result};
use crate::format::batch::BatchIter;
use crate::format::chunk::{ChunkEntry, StoredFrame, Transform, crc32c_combine, crc32c_shift};
use crate::format::manifest::Manifest;
use bytes::Bytes;
use std::ops::Range;

/// The default of `compression.frame.size`: 256 KiB, four default blocks.
pub const DEFAULT_FRAME_SIZE: u32 = 256 << 10;

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
    /// `compression.frame.size`: the original bytes of each independent zstd frame of a chunk, a multiple of
    /// the block size (default [`DEFAULT_FRAME_SIZE`]; a copy rounds another value down to whole blocks, at
    /// least one); 0 stores each chunk as one frame (manifest versions 3 and 4, as before frames).
    pub frame_size: u32,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig { level: 3, heuristic: true, min_saving_percent: 10, frame_size: DEFAULT_FRAME_SIZE }
    }
}

impl CompressionConfig {
    /// The frame size a copy with blocks of `block_size` bytes uses: 0 (one frame per chunk) when
    /// [`CompressionConfig::frame_size`] is 0, else it rounded down to whole blocks, at least one.
    pub fn frame_size_for(&self, block_size: u32) -> u32 {
        match (self.frame_size, block_size) {
            (0, _) => 0,
            (f, 0) => f,
            (f, b) => (f / b).max(1) * b,
        }
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

/// A chunk compressed frame by frame ([`ChunkCompressor::apply_frames`]): the frames back to back, and the
/// stored length of each, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frames {
    /// The frames' bytes, back to back.
    pub bytes: Vec<u8>,
    /// Each frame's length in `bytes`.
    pub lengths: Vec<u32>,
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
        if self.too_little_saving(len, compressed.len()) {
            return Ok((Decision::TooLittleSaving, None));
        }
        Ok((Decision::Compressed, Some(compressed)))
    }

    /// Whether the heuristic leaves a chunk of `len` bytes that compresses to `compressed` bytes as it is.
    fn too_little_saving(&self, len: u64, compressed: usize) -> bool {
        let saved = len.saturating_sub(compressed as u64);
        self.config.heuristic && (saved == 0 || saved * 100 < len * self.config.min_saving_percent as u64)
    }

    /// What to store for `chunk` (as [`ChunkCompressor::apply`]) cut into frames of `frame_size` original
    /// bytes (the last one may be shorter), each compressed as an independent zstd frame by the same
    /// context: the frames, or `None` to store the chunk as it is, with the reason. The heuristic judges the
    /// saving of all the frames together. A `frame_size` of 0 is one frame.
    pub fn apply_frames(&mut self, chunk: &[u8], position: u64, frame_size: u32) -> Result<(Decision, Option<Frames>)> {
        let len = chunk.len() as u64;
        if self.config.heuristic && producer_compressed_bytes(chunk, position) * 2 > len {
            return Ok((Decision::ProducerCompressed, None));
        }
        let step = if frame_size == 0 { chunk.len().max(1) } else { frame_size as usize };
        let groups = chunk.len().div_ceil(step);
        // Room for every frame's bound, so that the buffer never moves: each frame is written in place.
        let bound: usize = chunk.chunks(step).map(|g| zstd::zstd_safe::compress_bound(g.len())).sum();
        let mut bytes = Vec::with_capacity(bound);
        let mut lengths = Vec::with_capacity(groups);
        for (k, group) in chunk.chunks(step).enumerate() {
            let at = bytes.len();
            let mut tail = std::io::Cursor::new(&mut bytes);
            tail.set_position(at as u64);
            self.zstd.compress_to_buffer(group, &mut tail).map_err(|e| {
                Error::storage(
                    format!("zstd compression of frame {k} of the chunk at position {position} ({len} bytes)"),
                    e,
                )
            })?;
            lengths.push((bytes.len() - at) as u32);
        }
        if self.too_little_saving(len, bytes.len()) {
            return Ok((Decision::TooLittleSaving, None));
        }
        Ok((Decision::Compressed, Some(Frames { bytes, lengths })))
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

/// The entry of chunk `c` stored in frames by `transform` ([`Transform::is_framed`]) as `stored`, the
/// frames back to back, `lengths` long each, at `position` in the object, and its frames as the frame table
/// keeps them: each frame's stored length and CRC-32C, and the entry's stored CRC over all of them (combined
/// from the frames', no second pass).
pub fn framed_entry(
    c: &ChunkEntry,
    transform: Transform,
    position: u64,
    stored: &[u8],
    lengths: &[u32],
) -> (ChunkEntry, Vec<StoredFrame>) {
    let mut frames = Vec::with_capacity(lengths.len());
    let (mut at, mut whole) = (0usize, 0u32);
    for &n in lengths {
        let crc = crate::checksum::crc32c(&stored[at..at + n as usize]);
        whole = crc32c_combine(whole, crc, crc32c_shift(n as u64));
        frames.push(StoredFrame { stored_length: n, stored_crc32c: crc });
        at += n as usize;
    }
    let mut e = *c;
    e.rdi.transform = transform;
    e.rdi.stored_position = position;
    e.rdi.stored_length = stored.len() as u32;
    e.rdi.stored_crc32c = whole;
    (e, frames)
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

/// The original bytes of chunk `c` from its `stored` bytes (the whole stored range) when it is not stored
/// in frames (those need the manifest's frame table: [`undo_frames`]): checks their length
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
    if c.rdi.transform.is_framed() {
        return Err(Error::invalid(format!("{}: is stored in frames, which need the manifest's frame table", chunk())));
    }
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
            let mut out = Vec::with_capacity(len);
            // A context of its own: the window of a whole chunk is not kept in the thread's.
            let mut dctx = zstd::zstd_safe::DCtx::create();
            decompress_prefix(&mut dctx, &stored, len, c.data_length as usize, &mut out)
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

/// Where the frames holding the original bytes `wanted` (relative to the chunk's start, not empty) of chunk
/// `c`, stored in `frames` of `frame_size` original bytes, are: the frames' indexes, the original bytes they
/// hold (relative to the chunk's start) and their stored range in the object, which one ranged read reads.
pub fn stored_frames(
    c: &ChunkEntry,
    frames: &[StoredFrame],
    frame_size: u32,
    wanted: &Range<u64>,
) -> (Range<usize>, Range<u64>, Range<u64>) {
    let len = c.data_length as u64;
    let step = (frame_size as u64).max(1);
    let last = (wanted.end.div_ceil(step) as usize).min(frames.len());
    let first = ((wanted.start / step) as usize).min(last.saturating_sub(1));
    let stored_len = |r: Range<usize>| frames[r].iter().map(|f| f.stored_length as u64).sum::<u64>();
    let start = c.stored_range().start + stored_len(0..first);
    let within = (first as u64 * step).min(len)..(last as u64 * step).min(len);
    (first..last, within, start..start + stored_len(first..last))
}

/// The original bytes of chunk `i` of `m`, stored in frames, from the frames `frames` (as
/// [`stored_frames`] gives them) up to `upto` (relative to the chunk's start; the read's last block),
/// from their `stored` bytes. First every frame's stored length and CRC-32C is checked against the frame
/// table (and, when the frames are the whole chunk, the entry's stored length and CRC), before anything is
/// decrypted or decompressed; then each frame is opened (under the segment's data `key`, when encrypted) and
/// decompressed into a buffer of exactly its original length (the last one only up to `upto`), never a
/// length the zstd frame gives. The result starts at the first frame's first byte. A read of the whole
/// chunk is checked against the entry's length and CRC; a shorter one is not, the caller checks it against
/// the manifest's block CRCs. `what` (the object key) is named in errors, every failure of the stored bytes
/// is [`crate::ErrorKind::Corrupt`] naming the chunk's position and the frame.
pub fn undo_frames(
    m: &Manifest,
    i: usize,
    frames: Range<usize>,
    stored: &[u8],
    upto: u64,
    what: &str,
    key: Option<&DataKey>,
) -> Result<Bytes> {
    let c = m.chunks.get(i).ok_or_else(|| Error::invalid(format!("{what}: there is no chunk {i}")))?;
    let chunk = || {
        format!(
            "{what}: chunk at position {} (chunk {i}, offsets {}..={}, stored at {}..{})",
            c.original_position(),
            c.first_offset,
            c.last_offset,
            c.stored_range().start,
            c.stored_range().end
        )
    };
    let (frame_size, table) = m
        .frames_of(i)
        .ok_or_else(|| Error::invalid(format!("{}: is not stored in frames the manifest describes", chunk())))?;
    let len = c.data_length as u64;
    let step = frame_size as u64;
    let upto = upto.min(len).min(frames.end as u64 * step);
    if frames.is_empty() || frames.end > table.len() || upto <= (frames.end as u64 - 1) * step {
        return Err(Error::invalid(format!(
            "{}: frames {}..{} up to byte {upto} are not a read of its {} frames",
            chunk(),
            frames.start,
            frames.end,
            table.len()
        )));
    }
    let wanted = &table[frames.clone()];
    let want: u64 = wanted.iter().map(|f| f.stored_length as u64).sum();
    if stored.len() as u64 != want {
        return Err(Error::corrupt(format!(
            "{}: {} stored bytes for frames {}..{}, its frame table says {want}",
            chunk(),
            stored.len(),
            frames.start,
            frames.end
        )));
    }
    let whole = frames.start == 0 && frames.end == table.len() && upto == len;
    let (mut at, mut all) = (0usize, 0u32);
    for (k, f) in frames.clone().zip(wanted) {
        let piece = &stored[at..at + f.stored_length as usize];
        let crc = crate::checksum::crc32c(piece);
        if crc != f.stored_crc32c {
            return Err(Error::corrupt(format!(
                "{}: frame {k} (stored at {}..{}) has CRC-32C {crc:#010x}, its frame table says {:#010x}",
                chunk(),
                c.stored_range().start + at as u64,
                c.stored_range().start + (at + piece.len()) as u64,
                f.stored_crc32c
            )));
        }
        all = crc32c_combine(all, crc, crc32c_shift(f.stored_length as u64));
        at += piece.len();
    }
    if whole && (all != c.rdi.stored_crc32c || want != c.rdi.stored_length as u64) {
        return Err(Error::corrupt(format!(
            "{}: its {want} stored bytes have CRC-32C {all:#010x}, its entry says {} bytes of {:#010x}",
            chunk(),
            c.rdi.stored_length,
            c.rdi.stored_crc32c
        )));
    }
    let key = match c.rdi.transform.is_encrypted() {
        false => None,
        true => Some(key.ok_or_else(|| {
            Error::invalid(format!("{}: is encrypted, and no data key was given to decrypt it", chunk()))
        })?),
    };
    let first = frames.start as u64 * step;
    let mut out: Vec<u8> = Vec::with_capacity((upto - first) as usize);
    let mut opened = Vec::new();
    let mut at = 0usize;
    with_dctx(|dctx| {
        for (k, f) in frames.clone().zip(wanted) {
            let piece = &stored[at..at + f.stored_length as usize];
            at += piece.len();
            let original = k as u64 * step..((k as u64 + 1) * step).min(len);
            let frame = match key {
                None => piece,
                Some(key) => {
                    let absolute = c.original_position() + original.start..c.original_position() + original.end;
                    key.open_frame(c, i, k, absolute, piece, what, &mut opened)?;
                    &opened[..]
                }
            };
            let frame_len = (original.end - original.start) as usize;
            let n = (upto.min(original.end) - original.start) as usize;
            let from = out.len();
            let done = if n == frame_len {
                decompress_frame(dctx, frame, frame_len, &mut out)
            } else if frame_len <= KEPT_WINDOW {
                decompress_prefix(dctx, frame, n, frame_len, &mut out)
            } else {
                // A window this large is not kept in the thread's context after the read.
                decompress_prefix(&mut zstd::zstd_safe::DCtx::create(), frame, n, frame_len, &mut out)
            };
            done.and_then(|()| match out.len() - from {
                got if got == n => Ok(()),
                got => Err(format!("decompresses to {got} bytes, not {n}")),
            })
            .map_err(|e| {
                Error::corrupt(format!(
                    "{}: frame {k} (original bytes {}..{}): {e}",
                    chunk(),
                    c.original_position() + original.start,
                    c.original_position() + original.end
                ))
            })?;
        }
        Ok(())
    })?;
    if whole {
        c.verify(&out, what)?;
    }
    Ok(Bytes::from(out))
}

/// The largest frame whose streaming decode's window buffer the thread's context keeps for the next read
/// ([`DCTX`]): a default frame's (256 KiB) is, one of a frame size of many MiB is not.
const KEPT_WINDOW: usize = 1 << 20;

thread_local! {
    /// Each thread's zstd decompression context, kept between reads (a context costs about 100 KiB to make,
    /// and a streaming decode's window buffer, at most [`KEPT_WINDOW`] and its block, is kept in it for the
    /// next).
    static DCTX: std::cell::RefCell<zstd::zstd_safe::DCtx<'static>> =
        std::cell::RefCell::new(zstd::zstd_safe::DCtx::create());
}

/// Runs `f` with this thread's zstd decompression context.
fn with_dctx<T>(f: impl FnOnce(&mut zstd::zstd_safe::DCtx<'static>) -> T) -> T {
    DCTX.with(|d| f(&mut d.borrow_mut()))
}

/// Decompresses the one zstd `frame` of `len` original bytes onto the end of `out`, which must have room for
/// them: a one-shot decode writes straight into `out`, no window allocated. It writes exactly `len` bytes
/// or fails: the bytes are first checked to be exactly one zstd frame that declares `len` bytes of content
/// (ours always do), and the decoder then refuses output that differs from what the frame declares; `out`'s
/// capacity, sized by the caller from the frame table, bounds it in any case.
fn decompress_frame(
    dctx: &mut zstd::zstd_safe::DCtx<'static>,
    frame: &[u8],
    len: usize,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    use zstd::zstd_safe::{find_frame_compressed_size, get_error_name, get_frame_content_size};
    match find_frame_compressed_size(frame) {
        Ok(n) if n == frame.len() => {}
        Ok(n) => return Err(format!("is not one zstd frame (one of {n} of its {} bytes)", frame.len())),
        Err(c) => return Err(get_error_name(c).to_string()),
    }
    match get_frame_content_size(frame) {
        Ok(Some(n)) if n == len as u64 => {}
        Ok(Some(n)) => return Err(format!("its zstd frame declares {n} bytes, not {len}")),
        Ok(None) | Err(_) => return Err(format!("its zstd frame does not declare its {len} bytes")),
    }
    if out.capacity() - out.len() < len {
        return Err(format!("no room for {len} bytes"));
    }
    let at = out.len();
    let mut tail = std::io::Cursor::new(out);
    tail.set_position(at as u64);
    dctx.decompress(&mut tail, frame).map_err(|c| get_error_name(c).to_string())?;
    Ok(())
}

/// Appends to `out` the first `len` bytes a zstd frame of `frame_len` original bytes decompresses to,
/// decoding no further than needed; an error when the frame is damaged or ends before `len` bytes. Memory
/// is bounded by the frame, never by what the zstd frame says: the output grows by `len` at most, and the
/// decoder refuses a window larger than the frame (a frame of ours never needs one: its window is at most
/// its content).
fn decompress_prefix(
    dctx: &mut zstd::zstd_safe::DCtx<'static>,
    frame: &[u8],
    len: usize,
    frame_len: usize,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    use zstd::zstd_safe::{DParameter, InBuffer, OutBuffer, ResetDirective, get_error_name};
    let error = |c| get_error_name(c).to_string();
    dctx.reset(ResetDirective::SessionOnly).map_err(error)?;
    let window_log = usize::BITS - frame_len.saturating_sub(1).leading_zeros();
    dctx.set_parameter(DParameter::WindowLogMax(window_log.max(10))).map_err(error)?;
    let (start, end) = (out.len(), out.len() + len);
    out.reserve(len);
    let mut input = InBuffer::around(frame);
    while out.len() < end {
        let before = (input.pos(), out.len());
        let mut output = OutBuffer::around_pos(&mut *out, before.1);
        let hint = dctx.decompress_stream(&mut output, &mut input).map_err(error)?;
        if out.len() >= end {
            break;
        }
        if hint == 0 {
            return Err(format!("the frame ends after {} bytes", out.len() - start));
        }
        if (input.pos(), out.len()) == before {
            return Err(format!("the frame is cut short after {} bytes", out.len() - start));
        }
    }
    out.truncate(end);
    Ok(())
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
        let frames: Vec<StoredFrame> =
            (1..=7).map(|k| StoredFrame { stored_length: k * 100, stored_crc32c: 0 }).collect();
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
        let (e, table) =
            framed_entry(&entry(&json, &bytes, Transform::None), Transform::ZstdFrames, 0, &bytes, &lengths);
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
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{e}");
        assert!(
            e.to_string().contains("t/0/x.log: chunk at position 0 (chunk 1") && e.to_string().contains("frame 2"),
            "{e}"
        );
        let e = undo_frames(&m, 1, 2..3, stored_of(3..4), (3 * step) as u64, "k", None).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{e}");
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
}
