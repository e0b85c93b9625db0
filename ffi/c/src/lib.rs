//! # rsm-c: the C ABI (`librsm.so`, `librsm.a`, `include/rsm.h`)
//!
//! A thin face over [`rsm_facade::Store`], as the CLI and JNI are: it converts C arguments to the SDK's
//! types, calls the facade and converts back. No storage logic lives here.
//!
//! The discipline (after rustls-ffi):
//! - every entry point runs behind one boundary (`boundary.rs`): a panic is caught and returned as
//!   [`rsm_result::Panic`], never unwound into C;
//! - every call returns an [`rsm_result`], the facade's [`rsm_facade::ResultCode`] (derived there from the
//!   error's kind and status), and on failure an optional [`rsm_error`] with the full message;
//! - NULL, misaligned or otherwise invalid arguments are [`rsm_result::InvalidArgument`] naming the
//!   argument;
//! - store and stream handles are ids in a registry (`handles.rs`), so a closed or forged one is an error,
//!   not a use after free;
//! - each function's documentation says who owns every pointer and for how long.
//!
//! The asynchronous form (`rsm_copy_async`, `rsm_fetch_async`, `rsm_delete_async`, `rsm_operation_cancel`)
//! runs the same core calls as tasks of the facade's runtime and reports through a callback.
//!
//! `rsm_records_fetch` returns records rather than bytes: the batches of a segment decoded, at a
//! consumer's isolation level (`records.rs`).
//!
//! Only `rsm_*` symbols are exported from `librsm.so` (a linker version script, see `build.rs`).

#![warn(missing_docs)]
#![allow(non_camel_case_types)]

// The modules with C functions, in the order of the header's functions: cbindgen reads this file's functions
// first, then each module's in the order they are declared here (`sort_by = "None"`), and `tests/header.rs`
// holds the header byte for byte. Keep the order.
// rsm_segment_list: rsm_list_segments and its accessors.
mod list;
// rsm_buffer and its accessors.
mod buffer;
// rsm_position_of_offset, rsm_position_of_timestamp.
mod position;
// The boundary and the argument readers; rsm_self_test_panic.
mod boundary;
// rsm_operation: the asynchronous form.
mod asynchronous;
// rsm_partition_copy: rsm_copy_partition.
mod partition;
// rsm_records and rsm_record.
mod records;

// The modules without C functions.
mod handles;
mod types;

#[cfg(test)]
mod contract_tests;
#[cfg(test)]
mod records_tests;
#[cfg(test)]
mod txn_fixture;

pub use asynchronous::{
    rsm_copy_async, rsm_copy_callback, rsm_delete_async, rsm_delete_callback, rsm_fetch_async, rsm_fetch_callback,
    rsm_operation, rsm_operation_cancel,
};
pub use boundary::{rsm_error, rsm_self_test_panic};
pub use buffer::{rsm_buffer, rsm_buffer_data, rsm_buffer_free, rsm_buffer_len};
pub use handles::{rsm_store, rsm_stream};
pub use list::{
    rsm_list_segments, rsm_segment_list, rsm_segment_list_free, rsm_segment_list_get, rsm_segment_list_len,
};
pub use partition::{rsm_copy_partition, rsm_partition_copy};
pub use position::{rsm_position_of_offset, rsm_position_of_timestamp};
pub use records::{
    rsm_isolation, rsm_record, rsm_record_header, rsm_record_header_count, rsm_record_key, rsm_record_offset,
    rsm_record_timestamp, rsm_record_timestamp_type, rsm_record_value, rsm_records, rsm_records_fetch,
    rsm_records_free, rsm_records_get, rsm_records_len, rsm_records_next_offset, rsm_timestamp_type,
};
pub use types::{
    rsm_index_type, rsm_leader_epoch, rsm_segment_files, rsm_segment_metadata, rsm_segment_state,
    rsm_topic_id_partition, rsm_uuid,
};

use boundary::{entry, entry_plain, optional_out_arg, out_arg, ref_arg, slice_arg, str_arg};
use handles::{STORES, STREAMS, as_handle, blocking_store_of, not_on_runtime, with_stream};
use rsm_core::{Error, IndexType, Result};
use rsm_facade::{SegmentReader, Store};
use std::collections::BTreeMap;
use std::ffi::c_char;
use std::sync::Mutex;

/// The version of the C ABI this header describes: it changes whenever a function, struct or code changes
/// incompatibly. Compare with `rsm_abi_version()` to check that the loaded library matches the header.
pub const RSM_ABI_VERSION: u32 = 1;

/// `rsm_fetch`'s `end_position` that means "to the end of the segment".
pub const RSM_END_OF_SEGMENT: i32 = -1;

/// What a call did: `RSM_RESULT_OK` or why it failed. The numbers are the facade's result codes, the same
/// as the Kafka plugin's exception kinds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rsm_result {
    /// Success.
    Ok = 0,
    /// The segment, index or object does not exist.
    NotFound = 1,
    /// A transient failure of the store: retrying may succeed.
    StorageTransient = 2,
    /// A permanent failure of the store.
    StoragePermanent = 3,
    /// Stored data failed a checksum or format check.
    Corrupt = 4,
    /// An argument was NULL or invalid (the message names it), or a handle is not open.
    InvalidArgument = 5,
    /// A setting is missing, unknown or malformed (the message names the key).
    Config = 6,
    /// A panic inside the library, caught at the boundary. The library stays usable.
    Panic = 100,
    /// An asynchronous operation was cancelled (`rsm_operation_cancel`). Not one of the facade's codes:
    /// only the asynchronous form's callbacks receive it.
    Cancelled = 101,
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

/// `end_position` as the core takes it.
pub(crate) fn end_of(end_position: i32) -> Result<Option<i32>> {
    match end_position {
        RSM_END_OF_SEGMENT => Ok(None),
        e if e < 0 => {
            Err(Error::invalid(format!("`end_position` {e} is negative (RSM_END_OF_SEGMENT, -1, reads to the end)")))
        }
        e => Ok(Some(e)),
    }
}

// -------------------------------------------------------------------------------------------------------
// Versions and errors

/// The library's version, as "MAJOR.MINOR.PATCH". The string is static: never freed, valid forever.
#[unsafe(no_mangle)]
pub extern "C" fn rsm_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The ABI version of the loaded library; equal to `RSM_ABI_VERSION` when header and library match.
#[unsafe(no_mangle)]
pub extern "C" fn rsm_abi_version() -> u32 {
    RSM_ABI_VERSION
}

/// The message of an error: NUL-terminated UTF-8 owned by `err`, valid until `rsm_error_free(err)`.
/// For NULL, a static empty string.
///
/// # Safety
/// `err` is NULL or an error the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_error_message(err: *const rsm_error) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { err.as_ref() } {
        Some(e) => e.message.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// The code of an error (the one its call returned); `RSM_RESULT_OK` for NULL.
///
/// # Safety
/// `err` is NULL or an error the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_error_code(err: *const rsm_error) -> rsm_result {
    // SAFETY: the caller's contract.
    unsafe { err.as_ref() }.map_or(rsm_result::Ok, |e| e.code)
}

/// Frees an error. NULL is a no-op.
///
/// # Safety
/// `err` is NULL or an error the library returned that is not freed yet; it must not be used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_error_free(err: *mut rsm_error) {
    if !err.is_null() {
        // SAFETY: the caller's contract: it came from `Box::into_raw` in `boundary::entry`, freed once.
        drop(unsafe { Box::from_raw(err) });
    }
}

// -------------------------------------------------------------------------------------------------------
// Lifecycle

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

// -------------------------------------------------------------------------------------------------------
// Kafka's operations

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
    start_position: i32,
    end_position: i32,
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
            out.set(as_handle(STREAMS.insert(Mutex::new(reader))));
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
            out.set(as_handle(STREAMS.insert(Mutex::new(SegmentReader::bytes(bytes)))));
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

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_facade::ResultCode;
    use std::ffi::CStr;

    #[test]
    fn result_codes_are_the_facades() {
        let all = [
            ResultCode::Ok,
            ResultCode::NotFound,
            ResultCode::StorageTransient,
            ResultCode::StoragePermanent,
            ResultCode::Corrupt,
            ResultCode::InvalidArgument,
            ResultCode::Config,
            ResultCode::Panic,
        ];
        assert_eq!(rsm_result::Cancelled as i32, 101, "apart from the facade's codes");
        for c in all {
            assert_eq!(rsm_result::from(c) as i32, c as i32, "{c:?}");
        }
    }

    #[test]
    fn errors_name_the_argument_and_panics_are_caught() {
        let mut err: *mut rsm_error = std::ptr::null_mut();
        let mut store: *mut rsm_store = std::ptr::null_mut();
        // SAFETY: valid out-pointers; a NULL settings array with length 1.
        let r = unsafe { rsm_store_open(std::ptr::null(), 1, &mut store, &mut err) };
        assert_eq!(r, rsm_result::InvalidArgument);
        // SAFETY: `err` is the error just returned.
        let msg = unsafe { CStr::from_ptr(rsm_error_message(err)) }.to_str().unwrap().to_string();
        assert!(msg.contains("`settings` is NULL but its length is 1"), "{msg}");
        // SAFETY: freed once.
        unsafe { rsm_error_free(err) };
        // SAFETY: as above.
        let r = unsafe { rsm_self_test_panic(&mut err) };
        assert_eq!(r, rsm_result::Panic);
        // SAFETY: as above.
        let msg = unsafe { CStr::from_ptr(rsm_error_message(err)) }.to_str().unwrap().to_string();
        assert!(msg.contains("a deliberate panic"), "{msg}");
        // SAFETY: freed once.
        unsafe { rsm_error_free(err) };
        assert_eq!(rsm_store_close(as_handle(12345)), rsm_result::InvalidArgument);
    }
}
