//! Counts real HTTP requests and bytes by method, underneath object_store's retries, multipart and
//! batching: the figures a cloud bill is made of.
//!
//! [`CountingConnector`] plugs into any object_store builder's `with_http_connector`; every request the
//! store sends (including each retry, each multipart part, each batch delete) passes through it.

use async_trait::async_trait;
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The kinds of request counted. `List` is a GET that lists a bucket or container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// PUT (single uploads, multipart parts, Azure blocks and block lists).
    Put,
    /// POST (S3 and GCS multipart create and complete, S3 batch delete).
    Post,
    /// GET of an object (whole or ranged).
    Get,
    /// HEAD.
    Head,
    /// DELETE (single deletes, multipart aborts).
    Delete,
    /// A GET that lists objects.
    List,
    /// Anything else.
    Other,
}

impl Method {
    const ALL: [Method; 7] =
        [Method::Put, Method::Post, Method::Get, Method::Head, Method::Delete, Method::List, Method::Other];

    fn index(self) -> usize {
        self as usize
    }

    /// The upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Delete => "DELETE",
            Method::List => "LIST",
            Method::Other => "OTHER",
        }
    }

    fn of(req: &HttpRequest) -> Method {
        match req.method().as_str() {
            "GET" => {
                // S3 and GCS list with `list-type=2`, Azure with `comp=list`.
                let q = req.uri().query().unwrap_or("");
                let lists = q.split('&').any(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    k == "list-type" || (k == "comp" && v == "list")
                });
                if lists { Method::List } else { Method::Get }
            }
            "PUT" => Method::Put,
            "POST" => Method::Post,
            "HEAD" => Method::Head,
            "DELETE" => Method::Delete,
            _ => Method::Other,
        }
    }
}

#[derive(Debug, Default)]
struct Cell {
    requests: AtomicU64,
    failed: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

/// Live counters, shared by the connector and whoever reads them.
#[derive(Debug, Default)]
pub struct HttpCounter {
    cells: [Cell; 7],
}

/// Requests and bytes of one method at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MethodCounts {
    /// Requests sent (each retry counts).
    pub requests: u64,
    /// Requests that failed: a transport error or a status of 400 or above.
    pub failed: u64,
    /// Request body bytes sent.
    pub bytes_sent: u64,
    /// Response body bytes received (from `Content-Length`).
    pub bytes_received: u64,
}

/// A snapshot of an [`HttpCounter`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpCounts {
    by_method: [MethodCounts; 7],
}

impl HttpCounts {
    /// The counts of one method.
    pub fn get(&self, m: Method) -> MethodCounts {
        self.by_method[m.index()]
    }

    /// All requests.
    pub fn total_requests(&self) -> u64 {
        self.by_method.iter().map(|c| c.requests).sum()
    }

    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &HttpCounts) -> HttpCounts {
        let mut out = HttpCounts::default();
        for i in 0..7 {
            let (a, b) = (self.by_method[i], earlier.by_method[i]);
            out.by_method[i] = MethodCounts {
                requests: a.requests - b.requests,
                failed: a.failed - b.failed,
                bytes_sent: a.bytes_sent - b.bytes_sent,
                bytes_received: a.bytes_received - b.bytes_received,
            };
        }
        out
    }
}

impl fmt::Display for HttpCounts {
    /// `PUT 3 (67108864 B sent), POST 2, GET 1 (1048576 B received), ...`, skipping methods never used.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for m in Method::ALL {
            let c = self.get(m);
            if c.requests == 0 {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{} {}", m.name(), c.requests)?;
            let mut extra = Vec::new();
            if c.bytes_sent > 0 {
                extra.push(format!("{} B sent", c.bytes_sent));
            }
            if c.bytes_received > 0 {
                extra.push(format!("{} B received", c.bytes_received));
            }
            if c.failed > 0 {
                extra.push(format!("{} failed", c.failed));
            }
            if !extra.is_empty() {
                write!(f, " ({})", extra.join(", "))?;
            }
        }
        if first {
            f.write_str("no requests")?;
        }
        Ok(())
    }
}

impl HttpCounter {
    /// A fresh counter.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// The counts so far.
    pub fn snapshot(&self) -> HttpCounts {
        let mut out = HttpCounts::default();
        for (o, c) in out.by_method.iter_mut().zip(&self.cells) {
            *o = MethodCounts {
                requests: c.requests.load(Ordering::Relaxed),
                failed: c.failed.load(Ordering::Relaxed),
                bytes_sent: c.sent.load(Ordering::Relaxed),
                bytes_received: c.received.load(Ordering::Relaxed),
            };
        }
        out
    }
}

/// An [`HttpConnector`] that counts every request of the clients it makes. Wraps object_store's
/// reqwest connector unless given another.
#[derive(Debug, Clone)]
pub struct CountingConnector {
    inner: Arc<dyn HttpConnector>,
    counter: Arc<HttpCounter>,
}

impl CountingConnector {
    /// Counts into `counter` over object_store's default (reqwest) connector.
    pub fn new(counter: Arc<HttpCounter>) -> Self {
        CountingConnector { inner: Arc::new(ReqwestConnector::default()), counter }
    }

    /// Counts into `counter` over `inner`.
    pub fn wrapping(inner: Arc<dyn HttpConnector>, counter: Arc<HttpCounter>) -> Self {
        CountingConnector { inner, counter }
    }
}

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = self.inner.connect(options)?;
        Ok(HttpClient::new(CountingService { inner, counter: self.counter.clone() }))
    }
}

#[derive(Debug)]
struct CountingService {
    inner: HttpClient,
    counter: Arc<HttpCounter>,
}

#[async_trait]
impl HttpService for CountingService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let method = Method::of(&req);
        let cell = &self.counter.cells[method.index()];
        cell.requests.fetch_add(1, Ordering::Relaxed);
        cell.sent.fetch_add(req.body().content_length() as u64, Ordering::Relaxed);
        let r = self.inner.execute(req).await;
        match &r {
            Ok(resp) => {
                if resp.status().as_u16() >= 400 {
                    cell.failed.fetch_add(1, Ordering::Relaxed);
                }
                if method != Method::Head {
                    let len = resp
                        .headers()
                        .get("content-length")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0);
                    cell.received.fetch_add(len, Ordering::Relaxed);
                }
            }
            Err(_) => {
                cell.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::client::HttpRequestBody;

    fn req(method: &str, uri: &str) -> HttpRequest {
        http::Request::builder().method(method).uri(uri).body(HttpRequestBody::empty()).unwrap()
    }

    #[test]
    fn methods_are_classified() {
        let cases = [
            ("GET", "http://h/b?list-type=2&prefix=a", Method::List),
            ("GET", "http://h/acc/c?restype=container&comp=list", Method::List),
            ("GET", "http://h/acc/c/blob?comp=blocklist", Method::Get),
            ("GET", "http://h/b/k", Method::Get),
            ("PUT", "http://h/acc/c/blob?comp=blocklist", Method::Put),
            ("POST", "http://h/b?delete", Method::Post),
            ("HEAD", "http://h/b/k", Method::Head),
            ("DELETE", "http://h/b/k?uploadId=1", Method::Delete),
            ("PATCH", "http://h/b/k", Method::Other),
        ];
        for (m, u, want) in cases {
            assert_eq!(Method::of(&req(m, u)), want, "{m} {u}");
        }
    }

    #[test]
    fn counts_print_and_subtract() {
        let c = HttpCounter::new();
        c.cells[Method::Put.index()].requests.fetch_add(3, Ordering::Relaxed);
        c.cells[Method::Put.index()].sent.fetch_add(10, Ordering::Relaxed);
        let a = c.snapshot();
        c.cells[Method::Get.index()].requests.fetch_add(1, Ordering::Relaxed);
        c.cells[Method::Get.index()].received.fetch_add(7, Ordering::Relaxed);
        let b = c.snapshot();
        assert_eq!(a.to_string(), "PUT 3 (10 B sent)");
        assert_eq!(b.since(&a).to_string(), "GET 1 (7 B received)");
        assert_eq!(b.total_requests(), 4);
        assert_eq!(HttpCounts::default().to_string(), "no requests");
    }
}
