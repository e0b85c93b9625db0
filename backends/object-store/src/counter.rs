//! Counts real HTTP requests and bytes by method, underneath object_store's retries, multipart and
//! batching: the figures a cloud bill is made of, into the SDK's one accounting type
//! ([`RequestCounts`], by [`Op`]).
//!
//! [`CountingConnector`] plugs into any object_store builder's `with_http_connector`; every request the
//! store sends (including each retry, each multipart part, each batch delete) passes through it.

use async_trait::async_trait;
use http_body_util::BodyExt;
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpResponseBody, HttpService,
    ReqwestConnector,
};
use rsm_core::backend::{Op, RequestCounts};
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// The operation an HTTP request counts as: by method, with a GET that lists (S3 and GCS `list-type=2`, Azure
/// `comp=list`, S3's multipart uploads `uploads` and their parts `uploadId`) counted as [`Op::List`].
fn op_of(req: &HttpRequest) -> Op {
    match req.method().as_str() {
        "GET" => {
            let q = req.uri().query().unwrap_or("");
            let lists = q.split('&').any(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                matches!(k, "list-type" | "uploads" | "uploadId") || (k == "comp" && v == "list")
            });
            if lists { Op::List } else { Op::Get }
        }
        "PUT" => Op::Put,
        "POST" => Op::Post,
        "HEAD" => Op::Head,
        "DELETE" => Op::Delete,
        _ => Op::Other,
    }
}

/// An [`HttpConnector`] that counts every request of the clients it makes. Wraps object_store's
/// reqwest connector unless given another.
#[derive(Debug, Clone)]
pub struct CountingConnector {
    inner: Arc<dyn HttpConnector>,
    counter: Arc<RequestCounts>,
}

impl CountingConnector {
    /// Counts into `counter` over object_store's default (reqwest) connector.
    pub fn new(counter: Arc<RequestCounts>) -> Self {
        CountingConnector { inner: Arc::new(ReqwestConnector::default()), counter }
    }

    /// Counts into `counter` over `inner`.
    pub fn wrapping(inner: Arc<dyn HttpConnector>, counter: Arc<RequestCounts>) -> Self {
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
    counter: Arc<RequestCounts>,
}

#[async_trait]
impl HttpService for CountingService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let op = op_of(&req);
        let counter = self.counter.for_key(&subject(req.uri().path(), req.uri().query()));
        counter.start(op, req.body().content_length() as u64);
        let r = self.inner.execute(req).await;
        match r {
            Ok(resp) => {
                if resp.status().as_u16() >= 400 {
                    counter.fail(op);
                }
                // The body's bytes as they arrive, not as its length announced: an answer cut mid-body
                // brought only what came.
                let (parts, body) = resp.into_parts();
                let body = body.map_frame(move |frame| {
                    if let Some(data) = frame.data_ref() {
                        counter.add_received(op, data.len() as u64);
                    }
                    frame
                });
                Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(body)))
            }
            Err(e) => {
                counter.fail(op);
                Err(unsent_is_retriable(e))
            }
        }
    }
}

/// What a request is about, for its topic ([`RequestCounts::for_key`]): its path (`/bucket/key` or
/// `/key`), or for a listing, whose path is the bucket's, its `prefix` (the `/`s in it percent-encoded).
fn subject(path: &str, query: Option<&str>) -> String {
    let prefix = query.into_iter().flat_map(|q| q.split('&')).find_map(|kv| kv.strip_prefix("prefix="));
    match prefix {
        Some(p) => p.replace("%2F", "/").replace("%2f", "/"),
        None => path.to_string(),
    }
}

/// A request that never left this host: the pooled connection it was handed to had already closed.
#[derive(Debug)]
struct NotSent(HttpError);

impl fmt::Display for NotSent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request was not sent: its connection closed first")
    }
}

impl StdError for NotSent {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

/// Marks a request hyper cancelled before sending it ("operation was canceled: connection was not
/// ready": the server closed the pooled connection as the request was handed to it) as a request error,
/// which object_store retries as it does a failed connect, and the SDK sees as transient. reqwest leaves it
/// for object_store to class as `Unknown`, neither retried nor transient, so a server that closed idle
/// connections failed a copy for good (seen in CI, with the S3 faults test's proxy cutting connections).
fn unsent_is_retriable(e: HttpError) -> HttpError {
    if e.kind() != HttpErrorKind::Unknown {
        return e;
    }
    let mut cur: Option<&(dyn StdError + 'static)> = Some(&e);
    while let Some(c) = cur {
        if c.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_canceled) {
            return HttpError::new(HttpErrorKind::Request, NotSent(e));
        }
        cur = c.source();
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::client::HttpRequestBody;

    fn req(method: &str, uri: &str) -> HttpRequest {
        http::Request::builder().method(method).uri(uri).body(HttpRequestBody::empty()).unwrap()
    }

    /// hyper's own "connection was not ready": a request handed to a connection whose task is gone.
    async fn canceled_by_hyper() -> hyper::Error {
        let (io, _server) = tokio::io::duplex(64);
        let (mut send, conn) =
            hyper::client::conn::http1::handshake::<_, String>(hyper_util::rt::TokioIo::new(io)).await.unwrap();
        drop(conn);
        send.send_request(http::Request::new(String::new())).await.unwrap_err()
    }

    #[tokio::test]
    async fn a_request_never_sent_is_retried_and_transient() {
        let canceled = canceled_by_hyper().await;
        assert!(canceled.is_canceled(), "{canceled}");
        let refined = unsent_is_retriable(HttpError::new(HttpErrorKind::Unknown, canceled));
        assert_eq!(refined.kind(), HttpErrorKind::Request);
        let e = object_store::Error::Generic { store: "S3", source: Box::new(refined) };
        assert_eq!(crate::errors::classify(&e), crate::errors::Class::Transient);
        assert!(
            crate::errors::chain_text(&e).contains("connection was not ready"),
            "{}",
            crate::errors::chain_text(&e)
        );

        // Other unknown failures stay as they were: not retried, permanent.
        let other =
            unsent_is_retriable(HttpError::new(HttpErrorKind::Unknown, std::io::Error::other("bad certificate")));
        assert_eq!(other.kind(), HttpErrorKind::Unknown);
        let e = object_store::Error::Generic { store: "S3", source: Box::new(other) };
        assert_eq!(crate::errors::classify(&e), crate::errors::Class::Permanent);
    }

    #[test]
    fn requests_are_attributed_to_the_topic_they_are_about() {
        let id = "AAAAAAAAAAAAAAAAAAAA-w";
        let cases = [
            (format!("http://h/bucket/p/orders-{id}/0/00000000000000000000-{id}.log"), Some("orders")),
            (format!("http://bucket.h/p/orders-{id}/0/x.manifest?uploadId=7&partNumber=2"), Some("orders")),
            (format!("http://h/bucket?list-type=2&prefix=p%2Fclicks-{id}%2F3%2F"), Some("clicks")),
            (format!("http://h/acc/c?restype=container&comp=list&prefix=p/clicks-{id}/3/"), Some("clicks")),
            ("http://h/bucket?list-type=2&prefix=p%2F".to_string(), None),
            ("http://h/bucket/p/other".to_string(), None),
        ];
        for (uri, want) in cases {
            let uri: http::Uri = uri.parse().unwrap();
            let subject = subject(uri.path(), uri.query());
            assert_eq!(rsm_core::partition_dir::topic_of_key(&subject), want, "{uri}");
        }
    }

    #[test]
    fn methods_are_classified() {
        let cases = [
            ("GET", "http://h/b?list-type=2&prefix=a", Op::List),
            ("GET", "http://h/acc/c?restype=container&comp=list", Op::List),
            ("GET", "http://h/acc/c/blob?comp=blocklist", Op::Get),
            ("GET", "http://h/b/k", Op::Get),
            ("GET", "http://h/b/?uploads=&prefix=p%2F", Op::List),
            ("GET", "http://h/b/k?uploadId=1&part-number-marker=2", Op::List),
            ("PUT", "http://h/acc/c/blob?comp=blocklist", Op::Put),
            ("POST", "http://h/b?delete", Op::Post),
            ("HEAD", "http://h/b/k", Op::Head),
            ("DELETE", "http://h/b/k?uploadId=1", Op::Delete),
            ("PATCH", "http://h/b/k", Op::Other),
        ];
        for (m, u, want) in cases {
            assert_eq!(op_of(&req(m, u)), want, "{m} {u}");
        }
    }
}
