//! The read's side of chunk transforms: a chunk's stored bytes checked against their CRCs, then decrypted and
//! decompressed, whole, block by block or frame by frame, never into more memory than the chunk's entry says.

use crate::backend::UNDONE;
use crate::crypto::DataKey;
use crate::error::{Error, Result};
use crate::format::chunk::{ChunkEntry, StoredFrame, Transform, crc32c_combine, crc32c_shift};
use crate::format::manifest::Manifest;
use bytes::Bytes;
use std::ops::Range;

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
    Ok(UNDONE.bytes(key.open_blocks(c, index, within, stored, block, what)?))
}

/// The original bytes of chunk `c` from its `stored` bytes (the whole stored range) when it is not stored
/// in frames (those need the manifest's frame table: [`undo_frames`]): checks their length
/// and stored CRC-32C, decrypts them when encrypted (chunk `index` of its manifest, under the segment's
/// data `key`; block by block in blocks of `block` bytes, the manifest's block size, when
/// [`undoes_by_block`]), decompresses them when compressed into a buffer of exactly the entry's original length,
/// and checks the result against the entry's length and CRC-32C. `what` (the object key) is named in
/// errors; every failure of the stored bytes is [`crate::error::ErrorKind::Corrupt`].
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
        UNDONE.bytes(match undoes_by_block(c) {
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
/// is [`crate::error::ErrorKind::Corrupt`] naming the chunk's position and the frame.
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
    let mut out: Vec<u8> = UNDONE.take((upto - first) as usize);
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
    Ok(UNDONE.bytes(out))
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
pub(super) fn with_dctx<T>(f: impl FnOnce(&mut zstd::zstd_safe::DCtx<'static>) -> T) -> T {
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
pub(super) fn decompress_prefix(
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
