//! The store: an [`rsm_store`] handle opened from settings and closed, the count of open handles a host's
//! leak checks read, and `rsm_copy`, Kafka's copy of a segment into the store. The process's registry of
//! stores is here with the lookups every entry point on a store makes.
//!
//! The store's other entry points live in modules of their own, declared in `lib.rs` in the order the
//! header lists them: `stream.rs` (fetches), `delete.rs`, `list.rs`, `position.rs`, `asynchronous.rs`,
//! `partition.rs` and `records.rs`.

use crate::boundary::{entry, entry_plain, optional_out_arg, out_arg, ref_arg, slice_arg, str_arg};
use crate::buffer::rsm_buffer;
use crate::handles::{STORES, STREAMS, as_handle, not_on_runtime};
use crate::result::{rsm_error, rsm_result};
use crate::types::{self, rsm_segment_files, rsm_segment_metadata};
use rsm_core::{Error, Result};
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::ffi::c_char;
use std::sync::Arc;

/// An open store: a handle from `rsm_store_open`, closed with `rsm_store_close`. Opaque.
pub struct rsm_store {
    _private: [u8; 0],
}

/// The store of a handle, for the asynchronous form.
pub(crate) fn store_of(s: *const rsm_store) -> Result<Arc<Store>> {
    STORES.get(s as usize, "store")
}

/// The store of a handle, for a blocking call.
pub(crate) fn blocking_store_of(s: *const rsm_store, function: &str) -> Result<Arc<Store>> {
    not_on_runtime(function)?;
    store_of(s)
}

/// A key/value setting for `rsm_store_open`: the keys a broker passes under `rsm.config.`, `store.url`
/// included. Both strings are borrowed for the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rsm_setting {
    /// The key, NUL-terminated UTF-8.
    pub key: *const c_char,
    /// The value, NUL-terminated UTF-8.
    pub value: *const c_char,
}

/// Opens a store from settings: `store.url` names it (`file:///path`, `s3://bucket/prefix`, …) and the
/// other keys are its settings, as a broker passes them under `rsm.config.` (unknown or malformed ones are
/// `RSM_RESULT_CONFIG`, naming the key; a key given twice is `RSM_RESULT_INVALID_ARGUMENT`).
///
/// Ownership: `settings` (an array of `settings_len` entries; NULL only when the length is 0) and its
/// strings (neither NULL) are borrowed for the call. On success `*store_out` is a new handle the caller
/// owns and must pass to `rsm_store_close`; on failure it is NULL. `store_out` must not be NULL
/// (`RSM_RESULT_INVALID_ARGUMENT`).
///
/// # Safety
/// `settings` is NULL or points to `settings_len` entries whose strings are NULL or NUL-terminated;
/// `store_out` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_store_open(
    settings: *const rsm_setting,
    settings_len: usize,
    store_out: *mut *mut rsm_store,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(store_out, "store_out", std::ptr::null_mut())?;
            not_on_runtime("rsm_store_open")?;
            let mut map = BTreeMap::new();
            for (i, s) in slice_arg(settings, settings_len, "settings")?.iter().enumerate() {
                let key = str_arg(s.key, &format!("settings[{i}].key"))?;
                let value = str_arg(s.value, &format!("settings[{i}].value"))?;
                if map.insert(key.to_string(), value.to_string()).is_some() {
                    return Err(Error::invalid(format!("setting `{key}` is given twice (settings[{i}])")));
                }
            }
            let store = Store::open_settings(&map)?;
            out.set(as_handle(STORES.insert(store)));
            Ok(())
        })
    }
}

/// Closes a store handle. Calls running on it from other threads finish first (the store is freed when the
/// last one returns); streams opened from it stay readable until they are closed.
///
/// Returns `RSM_RESULT_OK`, also for NULL; `RSM_RESULT_INVALID_ARGUMENT` when the handle is not open
/// (closed already: harmless).
#[unsafe(no_mangle)]
pub extern "C" fn rsm_store_close(store: *mut rsm_store) -> rsm_result {
    entry_plain(|| {
        if store.is_null() || STORES.remove(store as usize) { rsm_result::Ok } else { rsm_result::InvalidArgument }
    })
}

/// How many store and stream handles are open in the process (either out-pointer may be NULL: that count
/// is not reported): for a host's leak checks. Returns `RSM_RESULT_OK`, or `RSM_RESULT_INVALID_ARGUMENT`
/// (and writes nothing) when an out-pointer is not aligned for a `size_t`.
///
/// # Safety
/// `stores` and `streams` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_open_handles(stores: *mut usize, streams: *mut usize) -> rsm_result {
    entry_plain(|| {
        if !stores.is_aligned() || !streams.is_aligned() {
            return rsm_result::InvalidArgument;
        }
        // SAFETY: the caller's contract, and aligned; `as_mut` handles NULL.
        if let Some(s) = unsafe { stores.as_mut() } {
            *s = STORES.len();
        }
        // SAFETY: as above.
        if let Some(s) = unsafe { streams.as_mut() } {
            *s = STREAMS.len();
        }
        rsm_result::Ok
    })
}

/// Copies a closed segment: reads the files `files` names and writes the segment, its indexes and its
/// manifest to the store (Kafka's `copyLogSegmentData`).
///
/// Arguments: `metadata` and `files` must not be NULL, and are checked as their types' documentation says
/// (`RSM_RESULT_INVALID_ARGUMENT`, naming the field): among others `metadata.segment_size_in_bytes` must be
/// the length of the `files.log` file and `files.leader_epoch_checkpoint` must be a well-formed
/// checkpoint. `custom_metadata_out` may be NULL (the custom metadata is then not returned).
///
/// Ownership: `metadata` and `files`, and everything they point to, are borrowed for the call. When
/// `custom_metadata_out` is not NULL, `*custom_metadata_out` receives the custom metadata the copy
/// returns, owned by the caller (free with `rsm_buffer_free`), or NULL when there is none or on failure.
///
/// # Safety
/// `metadata` and `files` are NULL or valid (see their types); the out-pointers are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_copy(
    store: *const rsm_store,
    metadata: *const rsm_segment_metadata,
    files: *const rsm_segment_files,
    custom_metadata_out: *mut *mut rsm_buffer,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = optional_out_arg(custom_metadata_out, "custom_metadata_out", std::ptr::null_mut())?;
            let s = blocking_store_of(store, "rsm_copy")?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            let data = types::segment_files(ref_arg(files, "files")?, "files")?;
            types::check_segment_size(&md, &data, "metadata", "files")?;
            let custom = s.copy(&md, &data)?;
            if let (Some(out), Some(c)) = (out, custom) {
                out.set(rsm_buffer::boxed(c.0));
            }
            Ok(())
        })
    }
}
