//! Copying a whole partition directory: `rsm_copy_partition`, the C face of the facade's
//! [`Store::copy_partition`](rsm_facade::Store::copy_partition), so a C host follows the same rule as
//! `rsm copy` (closed segments only; those already whole in the store skipped).

use crate::boundary::{entry, out_arg, str_arg};
use crate::result::{rsm_error, rsm_result};
use crate::store::{blocking_store_of, rsm_store};
use std::ffi::c_char;
use std::path::Path;

/// What `rsm_copy_partition` did, in segments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rsm_partition_copy {
    /// Closed segments copied by this call.
    pub copied: usize,
    /// Closed segments left alone because a whole copy of each was already in the store.
    pub skipped: usize,
    /// Of the copied ones, those whose earlier copy in the store was incomplete or unreadable.
    pub redone: usize,
}

/// Copies the closed segments of the Kafka partition directory `partition_dir` (`<topic>-<partition>`,
/// with its `partition.metadata`) to the store, recording `broker_id` in their metadata; the active
/// segment is never copied. With `skip_whole`, a segment whose whole copy (a readable manifest of the same
/// offsets and size, every object present) is already in the store is skipped, so a rerun after a crash
/// copies only what is missing; without it every closed segment is copied again under a new segment id.
/// One copy of a directory runs at a time: a second, in this process or another, is refused while the
/// first holds the directory's lock.
///
/// Arguments: `partition_dir` must be a partition directory (a missing or malformed one is
/// `RSM_RESULT_INVALID_ARGUMENT` or `RSM_RESULT_NOT_FOUND`, naming it); `result_out` must not be NULL.
///
/// Ownership: `partition_dir` is borrowed for the call; `*result_out` is written (zeros on failure,
/// though segments copied before a failure stay copied and whole).
///
/// # Safety
/// `partition_dir` is NULL or NUL-terminated; `result_out` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_copy_partition(
    store: *const rsm_store,
    partition_dir: *const c_char,
    broker_id: i32,
    skip_whole: bool,
    result_out: *mut rsm_partition_copy,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(result_out, "result_out", rsm_partition_copy::default())?;
            let s = blocking_store_of(store, "rsm_copy_partition")?;
            let dir = Path::new(str_arg(partition_dir, "partition_dir")?);
            let (partition, _lock) = rsm_facade::open_partition_for_copy(dir)?;
            let done = s.copy_partition(&partition, broker_id, skip_whole, |_| {})?;
            out.set(rsm_partition_copy {
                copied: done.copied.len(),
                skipped: done.skipped.len(),
                redone: done.redone.len(),
            });
            Ok(())
        })
    }
}
