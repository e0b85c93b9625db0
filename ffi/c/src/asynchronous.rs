//! The asynchronous form of copy, fetch and delete, for hosts with an event loop: submit, and a completion
//! callback is called once, on one of the library's runtime threads, with the outcome; an operation in
//! flight can be cancelled. The work is the facade's (`Store::copy_async` and the others, of which
//! `Store::copy` and the others are `block_on`), run as a task of the facade's runtime instead.

use crate::boundary::{OutArg, entry, entry_plain, optional_out_arg, ref_arg};
use crate::buffer::rsm_buffer;
use crate::handles::{Registry, as_handle};
use crate::result::{rsm_error, rsm_result};
use crate::store::{rsm_store, store_of};
use crate::stream::{end_of, new_stream, rsm_stream};
use crate::types;
use rsm_core::{Error, Result};
use std::ffi::c_void;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// An operation in flight: a handle from `rsm_copy_async`, `rsm_fetch_async` or `rsm_delete_async`, only
/// ever passed to `rsm_operation_cancel`. It stops naming the operation when its callback is called; the
/// host frees nothing. Opaque.
pub struct rsm_operation {
    _private: [u8; 0],
}

/// Called once when an asynchronous copy ends: `result` and, on failure, `err` (owned by the callback:
/// free it with `rsm_error_free`); on success `custom_metadata` is the copy's custom metadata or NULL
/// (owned by the callback: free it with `rsm_buffer_free`). See `rsm_copy_async` for what a callback may do.
pub type rsm_copy_callback = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        result: rsm_result,
        custom_metadata: *mut rsm_buffer,
        err: *mut rsm_error,
    ),
>;

/// Called once when an asynchronous fetch ends: on success `stream` is a new stream handle owned by the
/// callback's host (read it on a thread of the host's, close it with `rsm_stream_close`); on failure
/// `stream` is NULL and `err` is owned by the callback (free it with `rsm_error_free`).
pub type rsm_fetch_callback = Option<
    unsafe extern "C" fn(user_data: *mut c_void, result: rsm_result, stream: *mut rsm_stream, err: *mut rsm_error),
>;

/// Called once when an asynchronous delete ends: `result` and, on failure, `err` (owned by the callback:
/// free it with `rsm_error_free`).
pub type rsm_delete_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, result: rsm_result, err: *mut rsm_error)>;

/// The host's `user_data`, handed back to its callback on a runtime thread.
struct UserData(*mut c_void);
// SAFETY: the host promises (the functions' documentation) that `user_data` may be used from the thread
// its callback runs on; the library never dereferences it.
unsafe impl Send for UserData {}

/// What cancels an operation in flight: the sender its task listens on.
static OPERATIONS: Registry<Mutex<Option<oneshot::Sender<()>>>> = Registry::new("operation");

/// Why a cancelled operation ended (in its error's message; the code is `RSM_RESULT_CANCELLED`).
const CANCELLED: &str = "the operation was cancelled";

/// Registers an operation, runs `work` as a task of the runtime, and calls `deliver` with its outcome (or
/// with `None` when it was cancelled first). Returns the operation's handle.
fn submit<T: Send + 'static>(
    work: impl Future<Output = Result<T>> + Send + 'static,
    deliver: impl FnOnce(Option<Result<T>>) + Send + 'static,
) -> usize {
    let (cancel, cancelled) = oneshot::channel();
    let id = OPERATIONS.insert(Mutex::new(Some(cancel)));
    rsm_facade::runtime().spawn(async move {
        let outcome = tokio::select! {
            biased;
            _ = cancelled => None,
            r = work => Some(r),
        };
        // From here on the handle names nothing: a cancel now is refused, and the callback runs once.
        OPERATIONS.remove(id);
        // A panic of the conversion must not take the runtime's thread with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deliver(outcome)));
    });
    id
}

/// Settles an operation's outcome (`None`: it was cancelled) into what its callback receives: the code,
/// the value (`ok` of the work's result on success, `none` otherwise) and the error (NULL on success, else
/// owned by the callback). Every asynchronous entry point delivers through it.
fn settle<T, V>(outcome: Option<Result<T>>, none: V, ok: impl FnOnce(T) -> V) -> (rsm_result, V, *mut rsm_error) {
    match outcome {
        Some(Ok(value)) => (rsm_result::Ok, ok(value), std::ptr::null_mut()),
        Some(Err(e)) => {
            let code = rsm_result::from(rsm_facade::ResultCode::of(&e));
            (code, none, rsm_error::boxed(code, e.full_message()))
        }
        None => (rsm_result::Cancelled, none, rsm_error::boxed(rsm_result::Cancelled, CANCELLED.to_string())),
    }
}

/// Submits a copy (as `rsm_copy`) and returns at once; `callback` is called once with the outcome.
///
/// The callback runs on one of the library's runtime threads, possibly before this call returns. It must
/// return quickly and must not call the blocking functions (`rsm_copy`, `rsm_fetch`, `rsm_fetch_index`,
/// `rsm_delete`, `rsm_list_segments`, `rsm_position_of_*`, `rsm_stream_read`, `rsm_store_open`): they
/// refuse with `RSM_RESULT_INVALID_ARGUMENT` on a runtime thread. It may call the free and close functions,
/// `rsm_operation_cancel` and the `_async` functions, and hand its results to the host's own threads.
///
/// Errors: what the arguments alone show is returned by this call, as `rsm_copy` returns it, and the
/// callback is never called: NULL `store`, `metadata`, `files` or `callback`; a NULL, non-UTF-8 or
/// malformed field of `metadata` or `files` (an epoch given twice or none, an unknown state, a negative
/// start offset or an end before it, a NULL pointer with a non-zero length, a malformed leader-epoch
/// checkpoint); a `segment_size_in_bytes` that is not the `.log` file's length. What the copy itself meets
/// (a missing or malformed file, the store's failures) reaches the callback.
///
/// Ownership: `metadata` and `files` are read before this call returns (borrowed for the call only).
/// `user_data` is passed to the callback as is, from a runtime thread. `operation_out` may be NULL; when
/// not, on success `*operation_out` names the operation for `rsm_operation_cancel` until its callback is
/// called, and on failure it is NULL. On failure the callback is never called.
///
/// # Safety
/// As `rsm_copy`; `callback` is a valid function pointer; `user_data` may be used from another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_copy_async(
    store: *const rsm_store,
    metadata: *const types::rsm_segment_metadata,
    files: *const types::rsm_segment_files,
    callback: rsm_copy_callback,
    user_data: *mut c_void,
    operation_out: *mut *mut rsm_operation,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = optional_out(operation_out)?;
            let s = store_of(store)?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            let data = types::segment_files(ref_arg(files, "files")?, "files")?;
            // Kafka's checks of the metadata are the arguments' too: returned here, as `rsm_copy` returns them.
            md.validate()?;
            types::check_segment_size(&md, &data, "metadata", "files")?;
            let callback = callback.ok_or_else(|| Error::invalid("`callback` is NULL"))?;
            let user = UserData(user_data);
            let id = submit(async move { s.copy_async(&md, &data).await }, move |outcome| {
                let user = user;
                let (code, custom, e) = settle(outcome, std::ptr::null_mut(), |custom| {
                    custom.map_or(std::ptr::null_mut(), |c| rsm_buffer::boxed(c.0))
                });
                // SAFETY: the host's callback, with the arguments its type documents.
                callback(user.0, code, custom, e);
            });
            if let Some(out) = out {
                out.set(as_handle(id));
            }
            Ok(())
        })
    }
}

/// Submits a fetch (as `rsm_fetch`) and returns at once; `callback` is called once with a stream handle or
/// the failure. The rules for the callback are `rsm_copy_async`'s: read the stream on a thread of the
/// host's, not in the callback.
///
/// Errors: as in `rsm_copy_async`, what the arguments alone show (NULL `store`, `metadata` or `callback`,
/// an invalid field of `metadata`, an `end_position` below -1) is returned and the callback is never
/// called; what needs the stored segment (a missing segment, a `start_position` outside it, an
/// `end_position` before `start_position`) reaches the callback.
///
/// Ownership: `metadata` is read before this call returns; `user_data` and `*operation_out` as in
/// `rsm_copy_async`.
///
/// # Safety
/// As `rsm_fetch`; `callback` is a valid function pointer; `user_data` may be used from another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_fetch_async(
    store: *const rsm_store,
    metadata: *const types::rsm_segment_metadata,
    start_position: i64,
    end_position: i64,
    callback: rsm_fetch_callback,
    user_data: *mut c_void,
    operation_out: *mut *mut rsm_operation,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = optional_out(operation_out)?;
            let s = store_of(store)?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            let end = end_of(end_position)?;
            let callback = callback.ok_or_else(|| Error::invalid("`callback` is NULL"))?;
            let user = UserData(user_data);
            let work = async move { s.fetch_async(&md, start_position, end).await };
            let id = submit(work, move |outcome| {
                let user = user;
                let (code, stream, e) = settle(outcome, std::ptr::null_mut(), new_stream);
                // SAFETY: the host's callback, with the arguments its type documents.
                callback(user.0, code, stream, e);
            });
            if let Some(out) = out {
                out.set(as_handle(id));
            }
            Ok(())
        })
    }
}

/// Submits a delete (as `rsm_delete`) and returns at once; `callback` is called once with the outcome.
/// The rules for the callback are `rsm_copy_async`'s.
///
/// Errors: as in `rsm_copy_async` (NULL `store`, `metadata` or `callback`, or an invalid field of
/// `metadata`, are returned; the store's failures reach the callback).
///
/// Ownership: `metadata` is read before this call returns; `user_data` and `*operation_out` as in
/// `rsm_copy_async`.
///
/// # Safety
/// As `rsm_delete`; `callback` is a valid function pointer; `user_data` may be used from another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_delete_async(
    store: *const rsm_store,
    metadata: *const types::rsm_segment_metadata,
    callback: rsm_delete_callback,
    user_data: *mut c_void,
    operation_out: *mut *mut rsm_operation,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = optional_out(operation_out)?;
            let s = store_of(store)?;
            let md = types::metadata(ref_arg(metadata, "metadata")?, "metadata")?;
            let callback = callback.ok_or_else(|| Error::invalid("`callback` is NULL"))?;
            let user = UserData(user_data);
            let id = submit(async move { s.delete_async(&md).await }, move |outcome| {
                let user = user;
                let (code, (), e) = settle(outcome, (), |()| ());
                // SAFETY: the host's callback, with the arguments its type documents.
                callback(user.0, code, e);
            });
            if let Some(out) = out {
                out.set(as_handle(id));
            }
            Ok(())
        })
    }
}

/// Cancels an operation in flight: its callback is then called (soon, on a runtime thread) with
/// `RSM_RESULT_CANCELLED`, unless the operation ended first, and the work stops (what a cancelled copy
/// wrote is not committed: a segment exists only once its manifest is written).
///
/// Returns `RSM_RESULT_OK` when the cancel was delivered; `RSM_RESULT_INVALID_ARGUMENT` when `operation`
/// is NULL or names no operation in flight (it ended already: harmless).
#[unsafe(no_mangle)]
pub extern "C" fn rsm_operation_cancel(operation: *mut rsm_operation) -> rsm_result {
    entry_plain(|| {
        let Ok(op) = OPERATIONS.get(operation as usize, "operation") else {
            return rsm_result::InvalidArgument;
        };
        let sender = op.lock().unwrap_or_else(|p| p.into_inner()).take();
        match sender.map(|s| s.send(())) {
            Some(Ok(())) => rsm_result::Ok,
            _ => rsm_result::InvalidArgument,
        }
    })
}

/// The optional out-parameter for an operation handle.
///
/// # Safety
/// `p` is NULL or writable.
unsafe fn optional_out(p: *mut *mut rsm_operation) -> Result<Option<OutArg<*mut rsm_operation>>> {
    // SAFETY: the caller's contract.
    unsafe { optional_out_arg(p, "operation_out", std::ptr::null_mut()) }
}
