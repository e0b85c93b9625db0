//! The copy's side of chunk transforms: whether to compress a chunk, its compressed bytes (one zstd frame or
//! independent frames), and the entry that describes what is stored.

use crate::error::{Error, Result};
use crate::format::batch::BatchIter;
use crate::format::chunk::{ChunkEntry, StoredFrame, Transform, crc32c_combine, crc32c_shift};

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
