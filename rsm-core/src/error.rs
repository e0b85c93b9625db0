//! The one error type of the SDK.
//!
//! An [`Error`] has a [`ErrorKind`] (what went wrong: not found, invalid argument, configuration, corrupt
//! data, a store failure) and, apart from it, an [`ErrorStatus`] (whether retrying may succeed), so a
//! transient failure of any kind can be said. It carries what was involved: the operation and the object
//! key, offset or segment as named fields, and for configuration errors the key at fault. The C ABI, JNI and CLI
//! derive their codes and exceptions from kind and status (`rsm_facade::ResultCode`). Messages never
//! contain secrets.

use std::fmt;

/// A boxed error from a lower layer (I/O, a cloud SDK).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, whatever the status.
///
/// New kinds may be added (one was already), so a match outside this crate needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The segment, index or object does not exist.
    NotFound,
    /// The store failed (a network, server or file-system failure).
    Storage,
    /// Data failed a checksum or format check; no bytes of it were returned.
    Corrupt,
    /// The caller passed something invalid (a position outside the segment, bad metadata).
    InvalidArgument,
    /// A configuration setting is missing, unknown or malformed.
    Config,
    /// Refused at once because a bounded queue is full (backpressure); always transient: retry later.
    Busy,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::Storage => "storage error",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Config => "invalid configuration",
            ErrorKind::Busy => "busy",
        })
    }
}

/// Whether retrying the same operation may succeed.
///
/// Not exhaustive: a match outside this crate needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ErrorStatus {
    /// Retrying will fail the same way.
    #[default]
    Permanent,
    /// The failure may pass: a timeout, a refused or reset connection, a throttled or unavailable server.
    Transient,
}

/// An SDK error. See [`ErrorKind`] and [`ErrorStatus`].
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    status: ErrorStatus,
    message: String,
    /// The configuration key at fault (kind [`ErrorKind::Config`]).
    config_key: Option<String>,
    /// The backend or storage operation that failed (`get_range`, `copy`, ...).
    operation: Option<&'static str>,
    /// What the operation was about, as `(name, value)`: the object key, the offset, the attempts made.
    fields: Vec<(&'static str, String)>,
    source: Option<BoxError>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.status, &self.config_key) {
            (ErrorKind::Config, _, Some(key)) => write!(f, "invalid configuration `{key}`: {}", self.message)?,
            (ErrorKind::Storage, ErrorStatus::Transient, _) => write!(f, "retriable storage error: {}", self.message)?,
            (kind, ErrorStatus::Transient, _) => write!(f, "{kind} (transient): {}", self.message)?,
            (kind, ErrorStatus::Permanent, _) => write!(f, "{kind}: {}", self.message)?,
        }
        if self.operation.is_some() || !self.fields.is_empty() {
            f.write_str(" (")?;
            let mut sep = "";
            if let Some(op) = self.operation {
                write!(f, "operation {op}")?;
                sep = ", ";
            }
            for (name, value) in &self.fields {
                write!(f, "{sep}{name} {value}")?;
                sep = ", ";
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl Error {
    /// A permanent error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            status: ErrorStatus::Permanent,
            message: message.into(),
            config_key: None,
            operation: None,
            fields: Vec::new(),
            source: None,
        }
    }

    /// A not-found error naming `what`.
    pub fn not_found(what: impl Into<String>) -> Self {
        Error::new(ErrorKind::NotFound, what)
    }

    /// A corruption error.
    pub fn corrupt(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Corrupt, message)
    }

    /// An invalid-argument error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// A configuration error naming `key`.
    pub fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        Error { config_key: Some(key.into()), ..Error::new(ErrorKind::Config, message) }
    }

    /// A backpressure refusal: a bounded queue is full. Transient, since the queue drains.
    pub fn busy(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Busy, message).transient()
    }

    /// A permanent storage error with a cause.
    pub fn storage(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::new(ErrorKind::Storage, message).with_source(source)
    }

    /// A transient storage error with a cause.
    pub fn retriable(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::storage(message, source).transient()
    }

    /// The same error, marked transient.
    pub fn transient(mut self) -> Self {
        self.status = ErrorStatus::Transient;
        self
    }

    /// The same error with `source` as its cause.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The same error, saying which operation failed (kept if one was said already).
    pub fn with_operation(mut self, operation: &'static str) -> Self {
        self.operation.get_or_insert(operation);
        self
    }

    /// The same error with one more named field of what it was about (`key`, `a/b.log`), shown after the
    /// message and read back with [`Error::field`], unless that name is there already. Not a way to add
    /// context: that is [`Error::context`], the one way, in front of the message.
    pub fn with_field(mut self, name: &'static str, value: impl fmt::Display) -> Self {
        if !self.fields.iter().any(|(n, _)| *n == name) {
            self.fields.push((name, value.to_string()));
        }
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether retrying may succeed.
    pub fn status(&self) -> ErrorStatus {
        self.status
    }

    /// Whether retrying may succeed (the status is [`ErrorStatus::Transient`]).
    pub fn is_transient(&self) -> bool {
        self.status == ErrorStatus::Transient
    }

    /// The message (with any context in front), without kind, fields or causes.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The configuration key at fault, for kind [`ErrorKind::Config`].
    pub fn config_key(&self) -> Option<&str> {
        self.config_key.as_deref()
    }

    /// The operation that failed, when one was said.
    pub fn operation(&self) -> Option<&'static str> {
        self.operation
    }

    /// The value of the field `name` (`key`, `attempts`, ...), when given.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// Classifies an I/O error met while working on `what` (an object key or a path): missing files are
    /// not-found, interruptions and timeouts are transient storage errors, the rest are permanent.
    pub fn from_io(what: impl fmt::Display, err: std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        match err.kind() {
            K::NotFound => Error::not_found(format!("{what}")),
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

    /// Adds context (what was being done, `manifest a/b.manifest`) in front of the message, keeping kind,
    /// status, key, fields and cause: the one way to add context.
    pub fn context(mut self, ctx: impl fmt::Display) -> Self {
        self.message = format!("{ctx}: {}", self.message);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_classified() {
        let nf = Error::from_io("k", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!((nf.kind(), nf.status()), (ErrorKind::NotFound, ErrorStatus::Permanent));
        let t = Error::from_io("k", std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!((t.kind(), t.status()), (ErrorKind::Storage, ErrorStatus::Transient));
        let p = Error::from_io("k", std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!((p.kind(), p.status()), (ErrorKind::Storage, ErrorStatus::Permanent));
        assert!(p.full_message().starts_with("storage error: I/O on k: "), "{}", p.full_message());
    }

    #[test]
    fn config_error_names_key_and_context_keeps_everything() {
        let e = Error::config("chunk.size", "must be positive");
        assert_eq!(e.to_string(), "invalid configuration `chunk.size`: must be positive");
        let e = e.context("store orders");
        assert_eq!(e.kind(), ErrorKind::Config);
        assert_eq!(e.config_key(), Some("chunk.size"));
        assert_eq!(e.to_string(), "invalid configuration `chunk.size`: store orders: must be positive");
        let c = Error::corrupt("bad crc").context("segment x");
        assert_eq!(c.kind(), ErrorKind::Corrupt);
        assert_eq!(c.to_string(), "corrupt: segment x: bad crc");
    }

    #[test]
    fn status_is_apart_from_kind_and_context_is_named() {
        let e = Error::corrupt("short read").transient();
        assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Corrupt, true));
        assert_eq!(e.to_string(), "corrupt (transient): short read");
        let e = Error::retriable("timed out", "io")
            .with_operation("get_range")
            .with_field("key", "t/0/a.log")
            .with_operation("other")
            .with_field("key", "ignored");
        assert_eq!(e.operation(), Some("get_range"));
        assert_eq!(e.field("key"), Some("t/0/a.log"));
        assert_eq!(e.full_message(), "retriable storage error: timed out (operation get_range, key t/0/a.log): io");
    }
}
