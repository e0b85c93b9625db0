//! Mapping `object_store` errors to the SDK's kinds, with every message naming the object key and no
//! secret in any message.

use rsm_core::Error;
use rsm_core::config::Secret;
use std::error::Error as StdError;
use std::fmt;

/// Removes secrets from text that is about to become part of an error or log line: every configured
/// secret value, and every URL query string (a SAS token travels there).
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor that removes each of `secrets` (empty values are ignored).
    pub fn new(secrets: impl IntoIterator<Item = Secret>) -> Self {
        Redactor { secrets: secrets.into_iter().filter(|s| !s.expose().is_empty()).collect() }
    }

    /// Adds one more secret.
    pub fn add(&mut self, secret: Secret) {
        if !secret.expose().is_empty() {
            self.secrets.push(secret);
        }
    }

    /// `text` with every secret replaced by `****` and every URL query string cut.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = strip_url_queries(text);
        for s in &self.secrets {
            out = out.replace(s.expose(), "****");
            // A secret may also appear percent-encoded inside a URL or header.
            let enc = percent_encode(s.expose());
            if enc != s.expose() {
                out = out.replace(&enc, "****");
            }
        }
        out
    }
}

/// Percent-encodes `s` for a URL path segment or query value: every byte but RFC 3986's unreserved ones.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Cuts the query string of every `http://` or `https://` URL in `text`.
fn strip_url_queries(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("http") {
        let (before, from) = rest.split_at(i);
        out.push_str(before);
        if !(from.starts_with("http://") || from.starts_with("https://")) {
            out.push_str("http");
            rest = &from[4..];
            continue;
        }
        let end = from
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '>' || c == '<')
            .unwrap_or(from.len());
        let url = &from[..end];
        match url.find('?') {
            Some(q) => {
                out.push_str(&url[..q]);
                out.push_str("?<redacted>");
            }
            None => out.push_str(url),
        }
        rest = &from[end..];
    }
    out.push_str(rest);
    out
}

/// A cause whose text was scrubbed of secrets; it replaces the original error chain.
#[derive(Debug)]
pub struct ScrubbedCause(String);

impl fmt::Display for ScrubbedCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for ScrubbedCause {}

/// An HTTP error status from a request a backend makes itself (outside object_store's clients), so that
/// [`classify`] sees the status without reading text.
#[derive(Debug)]
pub struct StatusError {
    /// The HTTP status.
    pub status: u16,
    /// What the server said (already free of secrets).
    pub message: String,
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP status {}: {}", self.status, self.message)
    }
}

impl StdError for StatusError {}

fn class_of_status(status: u16) -> Class {
    match status {
        404 => Class::NotFound,
        416 => Class::RangeNotSatisfiable,
        408 | 429 | 500..=599 => Class::Transient,
        _ => Class::Permanent,
    }
}

/// The class of an `object_store` failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The object (or the bucket) does not exist.
    NotFound,
    /// Timeouts, connection failures, 5xx, 429 and 408: retrying may succeed.
    Transient,
    /// The server refused a range that starts at or past the end (HTTP 416).
    RangeNotSatisfiable,
    /// The path is not a valid object path.
    InvalidPath,
    /// Anything else: permanent.
    Permanent,
}

/// Finds the HTTP status in a message of object_store's retry layer
/// ("Server returned non-2xx status code: 503 Service Unavailable: ...").
fn status_in(text: &str) -> Option<u16> {
    const MARK: &str = "non-2xx status code: ";
    let i = text.find(MARK)?;
    text[i + MARK.len()..].get(..3).and_then(|s| s.parse::<u16>().ok())
}

/// Classifies an `object_store` error by walking its cause chain. object_store's `RetryError` (which
/// carries the status) is not nameable outside the crate, so the status is read from its message, whose
/// shape object_store defines; transport failures are read from the public `HttpError::kind()`.
pub fn classify(e: &object_store::Error) -> Class {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } => return Class::NotFound,
        E::InvalidPath { .. } => return Class::InvalidPath,
        _ => {}
    }
    // A failure the retry budget did not let object_store retry is marked unretriable for object_store
    // alone: it is the store's trouble, transient.
    if crate::budget::retry_budget_spent(e) {
        return Class::Transient;
    }
    let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(h) = c.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as K;
            return match h.kind() {
                K::Connect | K::Request | K::Timeout | K::Interrupted => Class::Transient,
                _ => Class::Permanent,
            };
        }
        if let Some(s) = c.downcast_ref::<StatusError>() {
            return class_of_status(s.status);
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            if matches!(
                io.kind(),
                K::TimedOut
                    | K::ConnectionReset
                    | K::ConnectionAborted
                    | K::ConnectionRefused
                    | K::BrokenPipe
                    | K::UnexpectedEof
                    | K::Interrupted
            ) {
                return Class::Transient;
            }
        }
        let text = c.to_string();
        // object_store's own check of a range against the object's size (its `InvalidGetRange`, not
        // nameable outside the crate), met when a server answers a range past the end with the whole
        // object instead of 416.
        if text.contains("Wanted range starting at") {
            return Class::RangeNotSatisfiable;
        }
        if let Some(status) = status_in(&text) {
            return class_of_status(status);
        }
        // S3 can answer 200 with an error document; object_store retries these and reports them as
        // "Server returned error response".
        if text.contains("Server returned error response")
            && (text.contains("InternalError") || text.contains("SlowDown"))
        {
            return Class::Transient;
        }
        cur = c.source();
    }
    Class::Permanent
}

/// Converts an `object_store` error met while doing `op` on `key` of store `store` into an SDK error.
pub fn map_error(store: &str, op: &str, key: &str, e: object_store::Error, redactor: &Redactor) -> Error {
    let class = classify(&e);
    let what = format!("{op} {store} object `{key}`");
    let cause = ScrubbedCause(redactor.scrub(&chain_text(&e)));
    match class {
        Class::NotFound => Error::not_found(format!("{what}: {cause}")),
        Class::Transient => Error::retriable(what, cause),
        Class::InvalidPath => Error::invalid(format!("{what}: {cause}")),
        Class::RangeNotSatisfiable | Class::Permanent => Error::storage(what, cause),
    }
}

/// The message of `e` and of each cause, joined by ": ", skipping causes already quoted by their parent, on one
/// line: a store's answer quoted in a cause (S3's XML error body) has its line breaks turned into spaces, so the
/// message stays one line wherever a host logs it.
pub fn chain_text(e: &(dyn StdError + 'static)) -> String {
    one_line(chain(e))
}

/// `text` with each line break, and the blanks around it, turned into one space.
fn one_line(text: String) -> String {
    if !text.contains(['\n', '\r']) {
        return text;
    }
    let parts: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    parts.join(" ")
}

fn chain(e: &(dyn StdError + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_secrets_and_queries() {
        let r = Redactor::new([Secret::new("s3cr3t/key+=")]);
        let t = r.scrub(
            "GET http://h:1/c/o?sv=1&sig=abc%2F failed; key s3cr3t/key+= and s3cr3t%2Fkey%2B%3D; https://x/y ok",
        );
        assert!(!t.contains("sig=abc"), "{t}");
        assert!(!t.contains("s3cr3t"), "{t}");
        assert!(t.contains("http://h:1/c/o?<redacted>"), "{t}");
        assert!(t.contains("https://x/y ok"), "{t}");
    }

    #[test]
    fn a_quoted_answer_stays_on_one_line() {
        let body = "503 Service Unavailable: <?xml version=\"1.0\"?>\n<Error><Code>SlowDown</Code></Error>\r\n";
        let e = object_store::Error::Generic { store: "S3", source: body.into() };
        let t = chain_text(&e);
        assert!(!t.contains(['\n', '\r']), "{t}");
        assert!(
            t.ends_with("503 Service Unavailable: <?xml version=\"1.0\"?> <Error><Code>SlowDown</Code></Error>"),
            "{t}"
        );
    }

    #[test]
    fn statuses_are_read() {
        assert_eq!(status_in("Server returned non-2xx status code: 503 Service Unavailable: x"), Some(503));
        assert_eq!(status_in("nothing"), None);
    }

    #[test]
    fn not_found_names_the_key() {
        let e = object_store::Error::NotFound { path: "a/b".into(), source: "gone".into() };
        let m = map_error("s3", "reading", "a/b", e, &Redactor::default());
        assert_eq!(m.kind(), rsm_core::ErrorKind::NotFound);
        assert!(m.to_string().contains("`a/b`"), "{m}");
    }

    #[test]
    fn generic_errors_are_permanent() {
        let e = object_store::Error::Generic {
            store: "S3",
            source: "Server returned non-2xx status code: 403 Forbidden: no".into(),
        };
        assert_eq!(classify(&e), Class::Permanent);
        let e = object_store::Error::Generic {
            store: "S3",
            source: "Server returned non-2xx status code: 503 Service Unavailable: busy".into(),
        };
        assert_eq!(classify(&e), Class::Transient);
    }
}
