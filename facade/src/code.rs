//! The result codes every face reports, derived from an error's kind and status in this one place: the JNI
//! plugin's exception kinds and the C ABI's result codes are these numbers.

use rsm_core::{Error, ErrorKind};

/// What a face tells its caller about a call. The numbers are stable: Java's `NativeStorageException`
/// kinds are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ResultCode {
    /// Success.
    Ok = 0,
    /// The segment, index or object does not exist.
    NotFound = 1,
    /// A transient failure: retrying may succeed.
    StorageTransient = 2,
    /// A permanent failure of the store.
    StoragePermanent = 3,
    /// Data failed a checksum or format check.
    Corrupt = 4,
    /// The caller passed something invalid.
    InvalidArgument = 5,
    /// A setting is missing, unknown or malformed.
    Config = 6,
    /// A panic inside the library, caught at the boundary.
    Panic = 100,
}

impl ResultCode {
    /// The code of `e`: any transient failure is [`ResultCode::StorageTransient`] (a caller's one question
    /// is whether to retry); otherwise the kind decides.
    pub fn of(e: &Error) -> Self {
        if e.is_transient() {
            return ResultCode::StorageTransient;
        }
        match e.kind() {
            ErrorKind::NotFound => ResultCode::NotFound,
            ErrorKind::Storage => ResultCode::StoragePermanent,
            ErrorKind::Corrupt => ResultCode::Corrupt,
            ErrorKind::InvalidArgument => ResultCode::InvalidArgument,
            ErrorKind::Config => ResultCode::Config,
            // Always transient, so answered above; a permanent one would be a bug, not a refusal.
            ErrorKind::Busy => ResultCode::StorageTransient,
            // A kind added to rsm-core later, before it has a code of its own: a permanent failure, which a
            // caller neither retries nor mistakes for missing or corrupt data.
            _ => ResultCode::StoragePermanent,
        }
    }
}

/// The message of a caught panic: the text `panic!` was given, or `non-string panic payload` for a
/// payload of another type (`std::panic::panic_any`). Every face puts it in the error it reports.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_kind_and_status() {
        let cases = [
            (Error::not_found("x"), ResultCode::NotFound, 1),
            (Error::retriable("x", "timeout"), ResultCode::StorageTransient, 2),
            (Error::corrupt("short read").transient(), ResultCode::StorageTransient, 2),
            (Error::storage("x", "denied"), ResultCode::StoragePermanent, 3),
            (Error::corrupt("crc"), ResultCode::Corrupt, 4),
            (Error::invalid("x"), ResultCode::InvalidArgument, 5),
            (Error::config("k", "x"), ResultCode::Config, 6),
            (Error::busy("reader queue full"), ResultCode::StorageTransient, 2),
        ];
        for (e, code, number) in cases {
            assert_eq!(ResultCode::of(&e), code, "{e}");
            assert_eq!(code as i32, number, "{e}");
        }
    }

    #[test]
    fn panic_messages_are_the_payloads_text() {
        let caught = |f: fn()| std::panic::catch_unwind(f).unwrap_err();
        let literal = caught(|| panic!("plain"));
        let formatted = caught(|| panic!("formatted {}", 7));
        let other = caught(|| std::panic::panic_any(7_u8));
        assert_eq!(panic_message(literal.as_ref()), "plain");
        assert_eq!(panic_message(formatted.as_ref()), "formatted 7");
        assert_eq!(panic_message(other.as_ref()), "non-string panic payload");
    }
}
