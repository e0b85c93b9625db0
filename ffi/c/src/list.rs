//! The segment list: `rsm_list_segments` returns an [`rsm_segment_list`] of the committed segments a store
//! holds, read with `rsm_segment_list_len` and `rsm_segment_list_get` and freed with
//! `rsm_segment_list_free`.

use crate::boundary::{entry, out_arg};
use crate::result::{rsm_error, rsm_result};
use crate::store::{blocking_store_of, rsm_store};
use crate::types::{self, ListedMetadata, rsm_segment_metadata, rsm_topic_id_partition};
use rsm_core::Result;

/// The committed segments of a partition, as `rsm_list_segments` returns them: the metadata of each, in
/// memory the list owns.
pub struct rsm_segment_list {
    pub(crate) entries: Vec<ListedMetadata>,
}

/// Lists the committed segments of a partition (`partition` NULL: of the whole store), oldest first, each
/// with the metadata its copy was given; pass an entry straight to `rsm_fetch` and the others.
///
/// Ownership: `partition` is borrowed for the call. On success `*list_out` is a list the caller owns and
/// frees with `rsm_segment_list_free`; on failure it is NULL. `list_out` must not be NULL
/// (`RSM_RESULT_INVALID_ARGUMENT`).
///
/// # Safety
/// `partition` is NULL or valid; `list_out` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_list_segments(
    store: *const rsm_store,
    partition: *const rsm_topic_id_partition,
    list_out: *mut *mut rsm_segment_list,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(list_out, "list_out", std::ptr::null_mut())?;
            let s = blocking_store_of(store, "rsm_list_segments")?;
            let tp = match partition.as_ref() {
                None => None,
                Some(p) => Some(types::topic_id_partition(p, "partition")?),
            };
            let entries = s.list_segments(tp.as_ref())?.iter().map(ListedMetadata::of).collect::<Result<Vec<_>>>()?;
            out.set(Box::into_raw(Box::new(rsm_segment_list { entries })));
            Ok(())
        })
    }
}

/// The number of segments in a list (0 for NULL).
///
/// # Safety
/// `list` is NULL or a list the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_segment_list_len(list: *const rsm_segment_list) -> usize {
    // SAFETY: the caller's contract.
    unsafe { list.as_ref() }.map_or(0, |l| l.entries.len())
}

/// The metadata of segment `i` of a list, or NULL when `list` is NULL or `i` is out of range. The struct
/// and everything it points to are owned by the list, valid until `rsm_segment_list_free(list)`.
///
/// # Safety
/// `list` is NULL or a list the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_segment_list_get(list: *const rsm_segment_list, i: usize) -> *const rsm_segment_metadata {
    // SAFETY: the caller's contract.
    unsafe { list.as_ref() }.and_then(|l| l.entries.get(i)).map_or(std::ptr::null(), |e| &e.c)
}

/// Frees a list. NULL is a no-op.
///
/// # Safety
/// `list` is NULL or a list the library returned that is not freed yet; neither it nor any metadata taken
/// from it may be used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_segment_list_free(list: *mut rsm_segment_list) {
    if !list.is_null() {
        // SAFETY: the caller's contract: it came from `Box::into_raw` in `rsm_list_segments`, freed once.
        drop(unsafe { Box::from_raw(list) });
    }
}
