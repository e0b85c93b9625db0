//! Fetch streams: an [`rsm_stream`] handle opened on a segment's bytes (`rsm_fetch`, Kafka's
//! `fetchLogSegment`) or on one of its indexes (`rsm_fetch_index`, Kafka's `fetchIndex`), read with
//! `rsm_stream_read` and closed with `rsm_stream_close`. The process's registry of streams is here with the
//! lookup every call on a stream makes.

use crate::boundary::{entry, entry_plain, optional_out_arg, out_arg, ref_arg};
use crate::handles::{STREAMS, as_handle, not_on_runtime};
use crate::result::{rsm_error, rsm_result};
use crate::store::{blocking_store_of, rsm_store};
use crate::types::{self, rsm_segment_metadata};
use rsm_core::{Error, ErrorKind, IndexType, Result};
use rsm_facade::SegmentReader;
use std::sync::Mutex;

/// `rsm_fetch`'s `end_position` that means "to the end of the segment".
pub const RSM_END_OF_SEGMENT: i64 = -1;

/// An open read of a segment range or an index: a handle from `rsm_fetch` or `rsm_fetch_index`, read with
/// `rsm_stream_read`, closed with `rsm_stream_close`. Opaque.
pub struct rsm_stream {
    _private: [u8; 0],
}

/// Registers a reader as a new stream handle, which the caller owns.
pub(crate) fn new_stream(reader: SegmentReader) -> *mut rsm_stream {
    as_handle(STREAMS.insert(Mutex::new(reader)))
}

/// Runs `f` on the reader of a stream handle, refusing one a panic left unusable.
pub(crate) fn with_stream<T>(s: *const rsm_stream, f: impl FnOnce(&mut SegmentReader) -> Result<T>) -> Result<T> {
    let stream = STREAMS.get(s as usize, "stream")?;
    let mut reader = stream.lock().map_err(|_| {
        Error::new(ErrorKind::Storage, "`stream` is unusable: a panic interrupted an earlier call on it; close it")
    })?;
    f(&mut reader)
}

/// `end_position` as the core takes it.
pub(crate) fn end_of(end_position: i64) -> Result<Option<i64>> {
    match end_position {
        RSM_END_OF_SEGMENT => Ok(None),
        e if e < 0 => {
            Err(Error::invalid(format!("`end_position` {e} is negative (RSM_END_OF_SEGMENT, -1, reads to the end)")))
        }
        e => Ok(Some(e)),
    }
}

/// Opens a read of the segment's bytes from `start_position` to `end_position` inclusive
/// (`RSM_END_OF_SEGMENT`: to its end; an end past the segment's stops at its end), Kafka's
/// `fetchLogSegment`. Every byte the stream returns was checked against the manifest's CRCs.
///
/// Arguments: `start_position` must be a byte of the segment (0 to its size - 1) and `end_position`
/// `RSM_END_OF_SEGMENT` or at least `start_position`; anything else is `RSM_RESULT_INVALID_ARGUMENT`,
/// naming the position. `metadata` and `stream_out` must not be NULL.
///
/// Ownership: `metadata` is borrowed for the call. On success `*stream_out` is a new stream handle the
/// caller owns and must pass to `rsm_stream_close`; on failure it is NULL.
///
/// # Safety
/// `metadata` is NULL or valid; `stream_out` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_fetch(
    store: *const rsm_store,
    metadata: *const rsm_segment_metadata,
    start_position: i64,
    end_position: i64,
    stream_out: *mut *mut rsm_stream,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(stream_out, "stream_out", std::ptr::null_mut())?;
            let s = blocking_store_of(store, "rsm_fetch")?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            let end = end_of(end_position)?;
            let reader = s.fetch(&md, start_position, end)?;
            out.set(new_stream(reader));
            Ok(())
        })
    }
}

/// Opens a read of one of the segment's indexes (`index_type`: an `rsm_index_type`, 0 to 4; any other
/// value is `RSM_RESULT_INVALID_ARGUMENT`), Kafka's `fetchIndex`. A transaction index the segment did not
/// have is `RSM_RESULT_NOT_FOUND`. `metadata` and `stream_out` must not be NULL.
///
/// Ownership: as `rsm_fetch`.
///
/// # Safety
/// As `rsm_fetch`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_fetch_index(
    store: *const rsm_store,
    metadata: *const rsm_segment_metadata,
    index_type: i32,
    stream_out: *mut *mut rsm_stream,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(stream_out, "stream_out", std::ptr::null_mut())?;
            let s = blocking_store_of(store, "rsm_fetch_index")?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            let kind =
                usize::try_from(index_type).ok().and_then(|i| IndexType::ALL.get(i).copied()).ok_or_else(|| {
                    Error::invalid(format!("`index_type` {index_type} is not an rsm_index_type (0 to 4)"))
                })?;
            let bytes = s.fetch_index(&md, kind)?;
            out.set(new_stream(SegmentReader::bytes(bytes)));
            Ok(())
        })
    }
}

/// Reads up to `len` bytes of a stream into `buf`: `*n` receives how many, at least 1 unless `len` is 0
/// (short reads are normal: as many as the stream holds, waiting for the store only when it holds none),
/// and 0 at the end of the stream. A failed stream (say a chunk failing its CRC) reports the error once,
/// then reads as ended.
///
/// Ownership: `buf` is borrowed for the call (NULL only when `len` is 0, else
/// `RSM_RESULT_INVALID_ARGUMENT`). `n` may be NULL: the count is then not reported (the bytes are still
/// read into `buf`); otherwise `*n` is written (0 on failure).
/// Threads: calls on one stream are serialised, so two threads reading one stream get disjoint pieces in
/// an order they cannot predict; use one stream per reader.
///
/// # Safety
/// `buf` is NULL or points to `len` writable bytes; `n` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_stream_read(
    stream: *mut rsm_stream,
    buf: *mut u8,
    len: usize,
    n: *mut usize,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let n = optional_out_arg(n, "n", 0)?;
            if buf.is_null() && len > 0 {
                return Err(Error::invalid(format!("`buf` is NULL but `len` is {len}")));
            }
            not_on_runtime("rsm_stream_read")?;
            let read = if len == 0 {
                with_stream(stream, |_| Ok(0))?
            } else {
                // SAFETY: `buf` has `len` writable bytes by the caller's contract (not NULL: checked above),
                // and nothing else writes them during the call.
                let dst = std::slice::from_raw_parts_mut(buf, len);
                // A local object file is read straight into `buf`; a stream's piece is copied into it.
                with_stream(stream, |s| s.read_into(dst))?
            };
            if let Some(n) = n {
                n.set(read);
            }
            Ok(())
        })
    }
}

/// Closes a stream handle: stops the read and frees its buffers now.
///
/// Returns `RSM_RESULT_OK`, also for NULL; `RSM_RESULT_INVALID_ARGUMENT` when the handle is not open
/// (closed already: harmless).
#[unsafe(no_mangle)]
pub extern "C" fn rsm_stream_close(stream: *mut rsm_stream) -> rsm_result {
    entry_plain(|| {
        if stream.is_null() || STREAMS.remove(stream as usize) { rsm_result::Ok } else { rsm_result::InvalidArgument }
    })
}
