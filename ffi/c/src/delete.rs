//! `rsm_delete`: Kafka's `deleteLogSegmentData`, removing a segment's objects from a store. A module of its
//! own because the header lists it between the fetch streams and the segment list (see `lib.rs`).

use crate::boundary::{entry, ref_arg};
use crate::result::{rsm_error, rsm_result};
use crate::store::{blocking_store_of, rsm_store};
use crate::types::{self, rsm_segment_metadata};

/// Deletes a segment's objects (Kafka's `deleteLogSegmentData`); deleting a segment that is gone is not
/// an error.
///
/// Ownership: `metadata` (not NULL) is borrowed for the call.
///
/// # Safety
/// `metadata` is NULL or valid; `err` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_delete(
    store: *const rsm_store,
    metadata: *const rsm_segment_metadata,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let s = blocking_store_of(store, "rsm_delete")?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            s.delete(&md)
        })
    }
}
