//! What a call reports: the code every entry point returns ([`rsm_result`], the facade's result codes),
//! the error a failed call hands to its caller ([`rsm_error`]), and the functions that read and free that
//! error.

use rsm_facade::ResultCode;
use std::ffi::{CString, c_char};

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

impl From<ResultCode> for rsm_result {
    fn from(c: ResultCode) -> Self {
        match c {
            ResultCode::Ok => rsm_result::Ok,
            ResultCode::NotFound => rsm_result::NotFound,
            ResultCode::StorageTransient => rsm_result::StorageTransient,
            ResultCode::StoragePermanent => rsm_result::StoragePermanent,
            ResultCode::Corrupt => rsm_result::Corrupt,
            ResultCode::InvalidArgument => rsm_result::InvalidArgument,
            ResultCode::Config => rsm_result::Config,
            ResultCode::Panic => rsm_result::Panic,
        }
    }
}

/// An error a call returned: its code and message. Created by the library, owned by the caller once
/// returned, freed with `rsm_error_free`.
pub struct rsm_error {
    pub(crate) code: rsm_result,
    pub(crate) message: CString,
}

impl rsm_error {
    /// A new error, as the pointer a caller receives.
    pub(crate) fn boxed(code: rsm_result, message: String) -> *mut Self {
        Box::into_raw(Self::new(code, message))
    }

    /// A new error, not yet handed to the caller.
    pub(crate) fn new(code: rsm_result, message: String) -> Box<Self> {
        // A message never holds a NUL of its own; should one slip in, it must not cut the text short.
        let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
        Box::new(rsm_error { code, message })
    }
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
        // SAFETY: the caller's contract: it came from `Box::into_raw` in `boundary::entry` or
        // `rsm_error::boxed`, freed once.
        drop(unsafe { Box::from_raw(err) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
