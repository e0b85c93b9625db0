//! The one error type of the SDK.
//!
//! Every failure is one of six kinds, which the C ABI, JNI and CLI map to their own codes and exceptions
//! (see [`ErrorKind`]). Messages always name what was involved: the segment, the object key, the offset or
//! the configuration key. They never contain secrets.

use std::fmt;

/// A boxed error from a lower layer (I/O, a cloud SDK).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The coarse class of an [`Error`], stable across the FFI and JNI boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorKind {
    /// The segment, index or object does not exist (`RemoteResourceNotFoundException`).
    NotFound = 1,
    /// A transient backend failure; retrying may succeed (`RetriableRemoteStorageException`).
    Retriable = 2,
    /// A permanent backend failure (`RemoteStorageException`).
    Storage = 3,
    /// Data failed a checksum or format check; no bytes of it were returned.
    Corrupt = 4,
    /// The caller passed something invalid (a position outside the segment, bad metadata).
    InvalidArgument = 5,
    /// A configuration setting is missing, unknown or malformed.
    Config = 6,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::Retriable => "retriable storage error",
            ErrorKind::Storage => "storage error",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Config => "invalid configuration",
        })
    }
}

/// An SDK error. See [`ErrorKind`] for the classes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The named thing does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A transient failure of the backend; the operation may be retried.
    #[error("retriable storage error: {message}")]
    Retriable {
        /// What failed, naming the object key or segment.
        message: String,
        /// The underlying cause.
        #[source]
        source: Option<BoxError>,
    },
    /// A permanent failure of the backend.
    #[error("storage error: {message}")]
    Storage {
        /// What failed, naming the object key or segment.
        message: String,
        /// The underlying cause.
        #[source]
        source: Option<BoxError>,
    },
    /// A checksum or format check failed.
    #[error("corrupt: {0}")]
    Corrupt(String),
    /// The caller passed an invalid argument.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A configuration setting is missing, unknown or malformed.
    #[error("invalid configuration `{key}`: {message}")]
    Config {
        /// The configuration key at fault.
        key: String,
        /// What is wrong with it.
        message: String,
    },
}

impl Error {
    /// The class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Retriable { .. } => ErrorKind::Retriable,
            Error::Storage { .. } => ErrorKind::Storage,
            Error::Corrupt(_) => ErrorKind::Corrupt,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Config { .. } => ErrorKind::Config,
        }
    }

    /// A not-found error naming `what`.
    pub fn not_found(what: impl Into<String>) -> Self {
        Error::NotFound(what.into())
    }

    /// A corruption error.
    pub fn corrupt(message: impl Into<String>) -> Self {
        Error::Corrupt(message.into())
    }

    /// An invalid-argument error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }

    /// A configuration error naming `key`.
    pub fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Config { key: key.into(), message: message.into() }
    }

    /// A permanent storage error with a cause.
    pub fn storage(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Storage { message: message.into(), source: Some(source.into()) }
    }

    /// A transient storage error with a cause.
    pub fn retriable(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Retriable { message: message.into(), source: Some(source.into()) }
    }

    /// Classifies an I/O error met while working on `what` (an object key or a path): missing files are
    /// not-found, interruptions and timeouts are retriable, the rest are permanent storage errors.
    pub fn from_io(what: impl fmt::Display, err: std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        match err.kind() {
            K::NotFound => Error::NotFound(format!("{what}")),
            K::Interrupted
            | K::TimedOut
            | K::WouldBlock
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::ConnectionRefused
            | K::BrokenPipe
            | K::UnexpectedEof => Error::retriable(format!("I/O on {what}"), err),
            _ => Error::storage(format!("I/O on {what}"), err),
        }
    }

    /// The message with every cause in the chain, joined by ": ". This is what crosses FFI and JNI.
    pub fn full_message(&self) -> String {
        let mut out = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            out.push_str(": ");
            out.push_str(&c.to_string());
            cause = c.source();
        }
        out
    }

    /// Adds context in front of the message, keeping the kind and cause.
    pub fn context(self, ctx: impl fmt::Display) -> Self {
        match self {
            Error::NotFound(m) => Error::NotFound(format!("{ctx}: {m}")),
            Error::Retriable { message, source } => Error::Retriable { message: format!("{ctx}: {message}"), source },
            Error::Storage { message, source } => Error::Storage { message: format!("{ctx}: {message}"), source },
            Error::Corrupt(m) => Error::Corrupt(format!("{ctx}: {m}")),
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("{ctx}: {m}")),
            c @ Error::Config { .. } => c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_classified() {
        let nf = Error::from_io("k", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(nf.kind(), ErrorKind::NotFound);
        let t = Error::from_io("k", std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(t.kind(), ErrorKind::Retriable);
        let p = Error::from_io("k", std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!(p.kind(), ErrorKind::Storage);
        assert!(p.full_message().starts_with("storage error: I/O on k: "), "{}", p.full_message());
    }

    #[test]
    fn config_error_names_key_and_context_keeps_kind() {
        let e = Error::config("chunk.size", "must be positive");
        assert_eq!(e.to_string(), "invalid configuration `chunk.size`: must be positive");
        let c = Error::corrupt("bad crc").context("segment x");
        assert_eq!(c.kind(), ErrorKind::Corrupt);
        assert_eq!(c.to_string(), "corrupt: segment x: bad crc");
    }
}
