//! The boundary every entry point crosses: panics caught, errors turned into a result code and an
//! [`rsm_error`], and the helpers that read C arguments, each naming the argument when it is wrong. Also
//! `rsm_self_test_panic`, with which a host's tests prove that no panic crosses into C.

use crate::result::{rsm_error, rsm_result};
use rsm_core::{Error, Result};
use rsm_facade::{ResultCode, panic_message};
use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs an entry point's body: clears `*err`, runs `f` with panics caught, and on failure stores the error
/// in `*err` (when `err` is not NULL) and returns its code.
///
/// # Safety
/// `err` is NULL or points to writable storage for one `rsm_error *`.
pub(crate) unsafe fn entry(err: *mut *mut rsm_error, f: impl FnOnce() -> Result<()>) -> rsm_result {
    if !err.is_null() {
        // SAFETY: the caller's contract: `err` points to writable storage for a pointer.
        unsafe { err.write(std::ptr::null_mut()) };
    }
    let (code, message) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return rsm_result::Ok,
        Ok(Err(e)) => (rsm_result::from(ResultCode::of(&e)), e.full_message()),
        Err(payload) => {
            let message = format!("panic inside librsm: {}", panic_message(payload.as_ref()));
            // Dropping a payload may itself panic: drop it behind a boundary too, and leak only the payload
            // of such a second panic.
            if let Err(nested) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
                std::mem::forget(nested);
            }
            (rsm_result::Panic, message)
        }
    };
    if !err.is_null() {
        // Building the error allocates: keep even that behind a boundary.
        if let Ok(e) = catch_unwind(|| rsm_error::new(code, message)) {
            // SAFETY: as above.
            unsafe { err.write(Box::into_raw(e)) };
        }
    }
    code
}

/// Like [`entry`] for functions without an error out-parameter: a panic returns [`rsm_result::Panic`].
pub(crate) fn entry_plain(f: impl FnOnce() -> rsm_result) -> rsm_result {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(rsm_result::Panic)
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::invalid(format!("`{what}` is NULL")));
    }
    // SAFETY: the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| Error::invalid(format!("`{what}` is not UTF-8")))
}

/// A byte array argument; NULL with length 0 is the empty array.
///
/// # Safety
/// `p` is NULL or points to `len` readable bytes that stay valid and unchanged for `'a`.
pub(crate) unsafe fn slice_arg<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::invalid(format!("`{what}` is NULL but its length is {len}")));
    }
    if !p.is_aligned() {
        return Err(Error::invalid(format!("`{what}` is not aligned for its type")));
    }
    if len.checked_mul(size_of::<T>()).is_none_or(|b| b > isize::MAX as usize) {
        return Err(Error::invalid(format!("`{what}`: length {len} is too large")));
    }
    // SAFETY: non-NULL, aligned, its size fits isize, and the caller's contract makes it readable for `'a`.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A reference argument that must not be NULL.
///
/// # Safety
/// `p` is NULL or points to a valid `T` that stays valid and unchanged for `'a`.
pub(crate) unsafe fn ref_arg<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    if !p.is_aligned() {
        return Err(Error::invalid(format!("`{what}` is not aligned for its type")));
    }
    // SAFETY: the caller's contract; `as_ref` handles NULL.
    unsafe { p.as_ref() }.ok_or_else(|| Error::invalid(format!("`{what}` is NULL")))
}

/// Checks that an out-parameter is not NULL and sets what it points to to `empty`, so that a caller sees
/// `empty` whenever the call fails.
///
/// # Safety
/// `p` is NULL or points to writable storage for a `T`.
pub(crate) unsafe fn out_arg<T>(p: *mut T, what: &str, empty: T) -> Result<OutArg<T>> {
    if p.is_null() {
        return Err(Error::invalid(format!("`{what}` is NULL")));
    }
    if !p.is_aligned() {
        return Err(Error::invalid(format!("`{what}` is not aligned for its type")));
    }
    // SAFETY: non-NULL and aligned, writable by the caller's contract.
    unsafe { p.write(empty) };
    Ok(OutArg(p))
}

/// An out-parameter that may be NULL (the caller does not want that result): `None` for NULL, otherwise
/// as [`out_arg`].
///
/// # Safety
/// `p` is NULL or points to writable storage for a `T`.
pub(crate) unsafe fn optional_out_arg<T>(p: *mut T, what: &str, empty: T) -> Result<Option<OutArg<T>>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    unsafe { out_arg(p, what, empty) }.map(Some)
}

/// A checked out-parameter (see [`out_arg`]).
pub(crate) struct OutArg<T>(*mut T);

impl<T> OutArg<T> {
    /// Stores the result.
    pub(crate) fn set(self, value: T) {
        // SAFETY: checked non-NULL and aligned by `out_arg`, writable by the caller's contract.
        unsafe { self.0.write(value) }
    }
}

/// Panics inside the library on purpose and returns what the boundary made of it (`RSM_RESULT_PANIC`, with
/// the message in `*err`): lets a host's tests prove that no panic crosses into C.
///
/// # Safety
/// `err` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_self_test_panic(err: *mut *mut rsm_error) -> rsm_result {
    // SAFETY: the caller's contract.
    unsafe { entry(err, || panic!("rsm_self_test_panic: a deliberate panic")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handles::as_handle;
    use crate::result::{rsm_error_free, rsm_error_message};
    use crate::store::{rsm_store, rsm_store_close, rsm_store_open};

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
