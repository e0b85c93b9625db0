//! Kafka's record-batch codecs, decompressed within a bound: gzip, snappy (raw, and the xerial framing
//! Kafka's Java clients write), lz4 (Kafka's LZ4 frame, and the broken header checksum of magic-0 messages)
//! and zstd. Public for the fuzz targets, which feed these arbitrary bytes. [`compress`] writes each codec
//! as Kafka's Java producer does (for the test kit's batch writer, `testkit::log_writer::encode_batch_with`).
//!
//! Every function takes a `limit`: the output buffer never holds more than `limit` bytes, and output that
//! would exceed it is an error naming the batch (`what`) and the codec and telling how to raise the limit
//! ([`DecodeLimits::max_batch_bytes`](super::DecodeLimits)). Nothing is preallocated by a length read from
//! the input: the buffer grows geometrically (while it moves to a larger one both are live, so at the peak
//! at most 1.5 × `limit`). The codecs' own working memory is bounded apart from the
//! output: gzip's 32 KiB window, one snappy block at a time (checked against the budget before it is
//! allocated), lz4's block buffers (at most 2 × 4 MiB + 64 KiB, the largest block an LZ4 frame declares),
//! and zstd's window, which is refused past the limit rounded up to a power of two (at least 2 MiB, the
//! window of Kafka's default level 3, so what Kafka writes at its default level always decodes).
//!
//! Damaged or truncated input is a "corrupt" error naming the batch; nothing here panics on input.

use crate::error::{Error, Result};
use std::io::{Read, Write};

/// A compression codec of Kafka's attributes (bits 0-2); 0 (none) is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// 1: gzip (RFC 1952).
    Gzip,
    /// 2: snappy, xerial-framed (or raw).
    Snappy,
    /// 3: an LZ4 frame.
    Lz4,
    /// 4: zstd (message format v2 only).
    Zstd,
}

impl Codec {
    /// The codec of an attributes id (1 to 4); `None` for 0 (no compression) and for ids Kafka does not know.
    pub fn from_id(id: u8) -> Option<Codec> {
        match id {
            1 => Some(Codec::Gzip),
            2 => Some(Codec::Snappy),
            3 => Some(Codec::Lz4),
            4 => Some(Codec::Zstd),
            _ => None,
        }
    }

    /// Its id in the attributes.
    pub fn id(self) -> u8 {
        match self {
            Codec::Gzip => 1,
            Codec::Snappy => 2,
            Codec::Lz4 => 3,
            Codec::Zstd => 4,
        }
    }

    /// Kafka's name for it (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

/// snappy-java's `SnappyOutputStream` block: the most input one xerial block holds (its default, which Kafka
/// keeps).
pub const XERIAL_BLOCK_BYTES: usize = 32 * 1024;

/// `bytes` compressed with `codec` as Kafka's Java producer writes a batch's records section:
/// - gzip: one gzip member (`GZIPOutputStream`: no name, mtime 0, OS 255 as JDK 16 and later write it) at
///   deflate level 6, Java's default;
/// - snappy: snappy-java's xerial framing, its header (magic, version 1, compatible version 1) then for
///   every [`XERIAL_BLOCK_BYTES`] of input a u32 big-endian length and a raw snappy block;
/// - lz4: one LZ4 frame as `Lz4BlockOutputStream` writes it: independent 64 KiB blocks, no block checksum,
///   no content size and no content checksum (FLG 0x60, BD 0x40, the header checksum right), the form
///   Kafka's reader requires (it refuses linked blocks and block sizes other than 64 KiB to 4 MiB);
/// - zstd: one frame at level 3 (Kafka's default), streamed, so with no content size and no checksum, as
///   zstd-jni's `ZstdOutputStream` writes it.
///
/// Empty input gives each codec's empty stream (snappy: the header alone). Never panics: the encoders
/// write into memory, which cannot fail.
pub fn compress(codec: Codec, bytes: &[u8]) -> Vec<u8> {
    const INFALLIBLE: &str = "compressing into memory does not fail";
    match codec {
        Codec::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(bytes).expect(INFALLIBLE);
            e.finish().expect(INFALLIBLE)
        }
        Codec::Snappy => {
            let mut out = Vec::with_capacity(XERIAL_HEADER_LEN + snap::raw::max_compress_len(bytes.len()));
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes()); // version
            out.extend_from_slice(&1i32.to_be_bytes()); // compatible version
            let mut encoder = snap::raw::Encoder::new();
            for block in bytes.chunks(XERIAL_BLOCK_BYTES) {
                // A block of 32 KiB is far below snappy's largest input: this does not fail.
                let c = encoder.compress_vec(block).expect(INFALLIBLE);
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            out
        }
        Codec::Lz4 => {
            use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
            let info = FrameInfo::new()
                .block_size(BlockSize::Max64KB)
                .block_mode(BlockMode::Independent)
                .block_checksums(false)
                .content_checksum(false)
                .content_size(None);
            let mut e = FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(bytes).expect(INFALLIBLE);
            e.finish().expect(INFALLIBLE)
        }
        // Level 3 is a valid level and the output is memory: nothing here can fail.
        Codec::Zstd => zstd::stream::encode_all(bytes, 3).expect(INFALLIBLE),
    }
}

/// Decompresses `bytes` with `codec` into at most `limit` bytes; `what` names the batch in errors (e.g.
/// "batch at offset 592"). Lz4 here is the standard frame (message formats 1 and 2); magic-0 messages use
/// [`lz4_magic0`].
pub fn decompress(codec: Codec, bytes: &[u8], limit: usize, what: &str) -> Result<Vec<u8>> {
    match codec {
        Codec::Gzip => gzip(bytes, limit, what),
        Codec::Snappy => snappy(bytes, limit, what),
        Codec::Lz4 => lz4(bytes, limit, what),
        Codec::Zstd => zstd(bytes, limit, what),
    }
}

/// The error for output past `limit`: names the batch, the codec and the limit, and how to raise it.
pub fn limit_error(what: &str, codec: Codec, limit: usize) -> Error {
    Error::invalid(format!(
        "{what}: its {} data inflates past {limit} bytes, the most one batch may take; raise \
         DecodeLimits::max_batch_bytes to decode it",
        codec.name()
    ))
}

fn corrupt(what: &str, codec: Codec, detail: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("{what}: its {} data does not decompress: {detail}", codec.name()))
}

/// The least the output buffer grows by.
const MIN_GROWTH: usize = 32 * 1024;

/// The next capacity of an output buffer of `cap` bytes that may hold at most `limit`: twice as much, or
/// the limit itself once doubling again would pass it (so that no step is a tiny one near the end).
fn next_capacity(cap: usize, limit: usize) -> usize {
    let next = cap.saturating_mul(2).max(MIN_GROWTH);
    if next.saturating_mul(2) > limit { limit } else { next }
}

/// Makes room for `need` bytes in `out` (`need <= limit`), growing geometrically but never past `limit`.
fn reserve(out: &mut Vec<u8>, need: usize, limit: usize) {
    if out.capacity() < need {
        let target = next_capacity(out.capacity(), limit).max(need);
        out.reserve_exact(target - out.len());
    }
}

/// Reads all of `reader` into a buffer of at most `limit` bytes: one byte more is the limit error.
fn read_bounded(mut reader: impl Read, codec: Codec, limit: usize, what: &str) -> Result<Vec<u8>> {
    let mut read = |buf: &mut [u8]| loop {
        match reader.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(corrupt(what, codec, e)),
            Ok(n) => return Ok(n.min(buf.len())),
        }
    };
    let mut out = Vec::new();
    let mut len = 0;
    loop {
        if len == out.len() {
            if len == limit {
                // Full: anything more is past the limit.
                return match read(&mut [0u8; 1])? {
                    0 => Ok(out),
                    _ => Err(limit_error(what, codec, limit)),
                };
            }
            let next = next_capacity(len, limit);
            reserve(&mut out, next, limit);
            out.resize(next, 0);
        }
        match read(&mut out[len..])? {
            0 => break,
            n => len += n,
        }
    }
    out.truncate(len);
    Ok(out)
}

/// gzip, as Kafka's `GZIPInputStream` reads it: one or more members, each with its CRC-32 and size checked.
pub fn gzip(bytes: &[u8], limit: usize, what: &str) -> Result<Vec<u8>> {
    read_bounded(flate2::read::MultiGzDecoder::new(bytes), Codec::Gzip, limit, what)
}

/// The xerial snappy-java stream header: magic, then version and compatible version (i32 each).
pub const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;

/// snappy as Kafka's `SnappyInputStream` (snappy-java) reads it: the xerial framing (its header, then blocks
/// of a u32 big-endian length and a raw snappy block; a header again where streams were concatenated), or,
/// without the header, one raw snappy block. Each block's declared size is checked against what is left of
/// the limit before it is allocated.
pub fn snappy(bytes: &[u8], limit: usize, what: &str) -> Result<Vec<u8>> {
    let codec = Codec::Snappy;
    let mut decoder = snap::raw::Decoder::new();
    let mut block = |out: &mut Vec<u8>, block: &[u8]| -> Result<()> {
        let n = snap::raw::decompress_len(block).map_err(|e| corrupt(what, codec, e))?;
        if n > limit - out.len() {
            return Err(limit_error(what, codec, limit));
        }
        let start = out.len();
        reserve(out, start + n, limit);
        out.resize(start + n, 0);
        let written = decoder.decompress(block, &mut out[start..]).map_err(|e| corrupt(what, codec, e))?;
        out.truncate(start + written);
        Ok(())
    };
    let mut out = Vec::new();
    if !bytes.starts_with(&XERIAL_MAGIC) {
        block(&mut out, bytes)?;
        return Ok(out);
    }
    let mut rest = bytes;
    while !rest.is_empty() {
        if rest.starts_with(&XERIAL_MAGIC) {
            rest = rest.get(XERIAL_HEADER_LEN..).ok_or_else(|| corrupt(what, codec, "truncated xerial header"))?;
            continue;
        }
        let Some((len, body)) = rest.split_first_chunk::<4>() else {
            return Err(corrupt(what, codec, format_args!("{} bytes left, short of a block length", rest.len())));
        };
        let len = u32::from_be_bytes(*len) as usize;
        if len > body.len() {
            return Err(corrupt(what, codec, format_args!("block of {len} bytes with {} left", body.len())));
        }
        let (data, tail) = body.split_at(len);
        block(&mut out, data)?;
        rest = tail;
    }
    Ok(out)
}

/// The LZ4 frame magic number (little-endian 0x184D2204).
const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
const LZ4_FLG_DICT_ID: u8 = 0x01;
const LZ4_FLG_CONTENT_CHECKSUM: u8 = 0x04;
const LZ4_FLG_CONTENT_SIZE: u8 = 0x08;
const LZ4_FLG_BLOCK_CHECKSUM: u8 = 0x10;

/// Kafka's LZ4 (message formats 1 and 2): one LZ4 frame, its header checksum checked. Bytes after the
/// frame's end mark are ignored, as Kafka's `KafkaLZ4BlockInputStream` ignores them.
pub fn lz4(bytes: &[u8], limit: usize, what: &str) -> Result<Vec<u8>> {
    lz4_frame(bytes, limit, what, false)
}

/// LZ4 as magic-0 messages hold it: Kafka before 0.10 computed the frame's header checksum over the magic
/// number too (KAFKA-3160), so Kafka reads magic 0 without checking it; here it is computed again before the
/// frame is decoded.
pub fn lz4_magic0(bytes: &[u8], limit: usize, what: &str) -> Result<Vec<u8>> {
    lz4_frame(bytes, limit, what, true)
}

fn lz4_frame(bytes: &[u8], limit: usize, what: &str, fix_header_checksum: bool) -> Result<Vec<u8>> {
    let codec = Codec::Lz4;
    let bad = |detail: &str| corrupt(what, codec, detail);
    if bytes.len() < 7 || bytes[..4] != LZ4_MAGIC {
        return Err(bad("not an LZ4 frame (no frame magic number)"));
    }
    let flg = bytes[4];
    let header_len =
        7 + if flg & LZ4_FLG_CONTENT_SIZE != 0 { 8 } else { 0 } + if flg & LZ4_FLG_DICT_ID != 0 { 4 } else { 0 };
    let max_block = match (bytes[5] >> 4) & 0x07 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return Err(bad("the frame declares no valid block size")),
    };
    let header = bytes.get(..header_len).ok_or_else(|| bad("truncated frame header"))?;
    if flg & LZ4_FLG_CONTENT_SIZE != 0 {
        let size = u64::from_le_bytes(header[6..14].try_into().expect("8 bytes"));
        if size > limit as u64 {
            return Err(limit_error(what, codec, limit));
        }
    }
    // Walk the blocks to the end mark, so that the decoder is given exactly one frame whose every block
    // is there: it never sizes a buffer by a block the input does not hold.
    let block_checksum = if flg & LZ4_FLG_BLOCK_CHECKSUM != 0 { 4 } else { 0 };
    let mut at = header_len;
    loop {
        let word = bytes.get(at..at + 4).ok_or_else(|| bad("truncated before its end mark"))?;
        at += 4;
        let word = u32::from_le_bytes(word.try_into().expect("4 bytes"));
        if word == 0 {
            break;
        }
        let size = (word & 0x7fff_ffff) as usize;
        if size > max_block {
            return Err(bad("a block is larger than the frame's block size"));
        }
        at = at + size + block_checksum;
        if at > bytes.len() {
            return Err(bad("truncated inside a block"));
        }
    }
    if flg & LZ4_FLG_CONTENT_CHECKSUM != 0 {
        at += 4;
        if at > bytes.len() {
            return Err(bad("truncated inside its content checksum"));
        }
    }
    let mut header = header.to_vec();
    if fix_header_checksum {
        let hash = twox_hash::XxHash32::oneshot(0, &header[4..header_len - 1]);
        header[header_len - 1] = (hash >> 8) as u8;
    }
    let frame = std::io::Cursor::new(header).chain(&bytes[header_len..at]);
    read_bounded(lz4_flex::frame::FrameDecoder::new(frame), codec, limit, what)
}

/// The smallest zstd window refused: the window of Kafka's default level (3) is 2 MiB.
const ZSTD_MIN_WINDOW_LOG: u32 = 21;
/// zstd's largest window (64-bit).
const ZSTD_MAX_WINDOW_LOG: u32 = 31;

/// zstd, streamed: one or more frames. A frame that declares more content than `limit`, or a window larger
/// than `limit` rounded up to a power of two (and at least 2 MiB), is the limit error before anything is
/// allocated for it.
pub fn zstd(bytes: &[u8], limit: usize, what: &str) -> Result<Vec<u8>> {
    let codec = Codec::Zstd;
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(bytes)
        && size > limit as u64
    {
        return Err(limit_error(what, codec, limit));
    }
    let window_log =
        (usize::BITS - limit.saturating_sub(1).leading_zeros()).clamp(ZSTD_MIN_WINDOW_LOG, ZSTD_MAX_WINDOW_LOG);
    let mut decoder = zstd::stream::read::Decoder::with_buffer(bytes).map_err(|e| corrupt(what, codec, e))?;
    decoder.window_log_max(window_log).map_err(|e| corrupt(what, codec, e))?;
    read_bounded(decoder, codec, limit, what).map_err(|e| {
        // zstd refuses a window past window_log_max with this message: the limit, not damage.
        if e.message().contains("too much memory") { limit_error(what, codec, limit) } else { e }
    })
}
