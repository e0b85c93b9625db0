//! Positions: the byte in a segment where a fetch for an offset (`rsm_position_of_offset`) or for a
//! timestamp (`rsm_position_of_timestamp`) starts.

use crate::boundary::{entry, out_arg, ref_arg};
use crate::result::{rsm_error, rsm_result};
use crate::store::{blocking_store_of, rsm_store};
use crate::types::{self, rsm_segment_metadata};

/// The byte position of the batch holding `offset` in the segment (or, in a gap of a compacted segment,
/// of the first batch after it): where a fetch for it starts.
///
/// Arguments: `offset` must be one of the segment's, from `metadata->start_offset` to
/// `metadata->end_offset` inclusive; an offset outside that range, below it as above it, is
/// `RSM_RESULT_INVALID_ARGUMENT` naming the offset and the range. `metadata` and `position` must not be
/// NULL.
///
/// Ownership: `metadata` is borrowed for the call; `*position` is written (-1 on failure).
///
/// # Safety
/// `metadata` is NULL or valid; `position` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_position_of_offset(
    store: *const rsm_store,
    metadata: *const rsm_segment_metadata,
    offset: i64,
    position: *mut i64,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(position, "position", -1)?;
            let s = blocking_store_of(store, "rsm_position_of_offset")?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            // The core refuses an offset outside the segment, below its start as past its end.
            out.set(s.position_of_offset(&md, offset)?);
            Ok(())
        })
    }
}

/// The byte position of the first batch of the segment with a timestamp at or after `timestamp_ms`, or -1
/// when no batch is that late. A search, not a lookup: every `timestamp_ms` is valid, so one before the
/// segment's first record (`INT64_MIN` included) gives the first batch's position, 0, and one after its
/// last (`INT64_MAX` included) gives -1, with `RSM_RESULT_OK` at both ends. `metadata` and `position` must
/// not be NULL.
///
/// Ownership: `metadata` is borrowed for the call; `*position` is written (-1 on failure, and when no
/// batch is that late).
///
/// # Safety
/// `metadata` is NULL or valid; `position` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_position_of_timestamp(
    store: *const rsm_store,
    metadata: *const rsm_segment_metadata,
    timestamp_ms: i64,
    position: *mut i64,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(position, "position", -1)?;
            let s = blocking_store_of(store, "rsm_position_of_timestamp")?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            if let Some(p) = s.position_of_timestamp(&md, timestamp_ms)? {
                out.set(p);
            }
            Ok(())
        })
    }
}
