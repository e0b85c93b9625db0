//! What the request-counting and fault tests share: an HTTP proxy in front of a test store (moto, Azurite,
//! fake-gcs-server) that logs every request it receives, counts by HTTP method from its log and from ours,
//! and can be switched at run time to misbehave as a store does on a bad day ([`Fault`]).

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use rsm_core::backend::{CountSnapshot, Op};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the proxy received: its method and target (path and query, as sent).
pub type Logged = (String, String);

/// How the proxy treats a request, decided when the request (head and body) has been read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// Passed on to the server, its answer passed back as it is.
    #[default]
    Pass,
    /// Never passed on nor answered: the connection is held open, silent, until the client closes it (or
    /// five minutes pass).
    Blackhole,
    /// Never passed on nor answered: the connection is closed at once (the client sees it closed before
    /// any answer).
    Refuse,
    /// Passed on; the answer's head and its first `n` body bytes (as framed on the wire) are passed back,
    /// then the connection is cut. An answer whose body is not longer than `n` passes whole.
    ResetAfter(usize),
    /// Passed on; the answer is held `first_byte_ms`, then passed back at `bytes_per_sec` (head included).
    Slow { first_byte_ms: u64, bytes_per_sec: u64 },
    /// Never passed on: answered at once with S3's throttling error, `503 Slow Down` and an XML body
    /// `<Code>SlowDown</Code>`; the connection stays open.
    SlowDown,
    /// Never passed on: answered at once with the given answer (a store's throttling error: status, headers,
    /// body); the connection stays open.
    Throttle(Answer),
}

/// An answer the proxy makes itself ([`Fault::Throttle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The status line's code and reason (`503 The server is busy.`).
    pub status: &'static str,
    /// Further header lines, each ending with CRLF (`Content-Type` and `Content-Length` are added).
    pub headers: &'static str,
    /// The body's media type.
    pub content_type: &'static str,
    /// The body (not sent to a HEAD).
    pub body: &'static str,
}

impl Answer {
    /// Azure Blob's throttling error: `503 The server is busy.` with `x-ms-error-code: ServerBusy` and the
    /// XML error body `<Code>ServerBusy</Code>` (Azure's "operations per second is over the account limit").
    pub const AZURE_SERVER_BUSY: Answer = Answer {
        status: "503 The server is busy.",
        headers: "x-ms-error-code: ServerBusy\r\nx-ms-request-id: rsm-test-proxy\r\nx-ms-version: 2021-08-06\r\n",
        content_type: "application/xml",
        body: "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ServerBusy</Code><Message>Operations per \
               second is over the account limit.\nRequestId:rsm-test-proxy\nTime:2026-01-01T00:00:00.0000000Z\
               </Message></Error>",
    };

    /// GCS's rate limit: `429 Too Many Requests` with the JSON error body `rateLimitExceeded` (usageLimits).
    pub const GCS_RATE_LIMIT: Answer = Answer {
        status: "429 Too Many Requests",
        headers: "X-GUploader-UploadID: rsm-test-proxy\r\n",
        content_type: "application/json; charset=UTF-8",
        body: "{\"error\":{\"code\":429,\"message\":\"The rate of change requests to the object exceeds the rate \
               limit. Please reduce the rate of create, update, and delete requests.\",\"errors\":[{\"message\":\
               \"The rate of change requests to the object exceeds the rate limit.\",\"domain\":\"usageLimits\",\
               \"reason\":\"rateLimitExceeded\"}]}}",
    };

    /// GCS's overload answer: `503 Service Unavailable` with the JSON error body `backendError`.
    pub const GCS_BACKEND_ERROR: Answer = Answer {
        status: "503 Service Unavailable",
        headers: "X-GUploader-UploadID: rsm-test-proxy\r\n",
        content_type: "application/json; charset=UTF-8",
        body: "{\"error\":{\"code\":503,\"message\":\"We encountered an internal error. Please try again.\",\
               \"errors\":[{\"message\":\"We encountered an internal error. Please try again.\",\"domain\":\
               \"global\",\"reason\":\"backendError\"}]}}",
    };

    /// The answer's bytes, to a request of `method`.
    fn bytes(&self, method: &str) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}\r\n",
            self.status,
            self.content_type,
            self.body.len(),
            self.headers
        )
        .into_bytes();
        if method != "HEAD" {
            out.extend_from_slice(self.body.as_bytes());
        }
        out
    }
}

/// One request the proxy received: when, what, and the fault that applied to it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// When its head and body had been read.
    pub at: Instant,
    /// Its method.
    pub method: String,
    /// Its target (path and query, as sent).
    pub target: String,
    /// Its `Range` header, if it had one.
    pub range: Option<String>,
    /// How it was treated.
    pub fault: Fault,
}

/// What the proxy's threads share with the test.
#[derive(Default)]
struct Shared {
    log: Mutex<Vec<Seen>>,
    /// The fault, and the texts one of which a request's method and target (`DELETE /bucket/key?x=1`) must
    /// contain for it to apply (else it passes); none: every request.
    fault: Mutex<(Fault, Vec<String>)>,
    connections: AtomicU64,
    /// The `Host` the server expects (its own address), put into each request passed on; `None`: the
    /// client's passes as it is.
    host: Option<String>,
}

impl Shared {
    fn fault_for(&self, method: &str, target: &str) -> Fault {
        let (fault, only) = &*self.fault.lock().unwrap();
        let request = format!("{method} {target}");
        if only.is_empty() || only.iter().any(|part| request.contains(part.as_str())) { *fault } else { Fault::Pass }
    }
}

/// An HTTP/1.1 proxy to `upstream` that logs every request: each connection's requests are read one by
/// one (head, then the body by `Content-Length` or chunked), logged, and treated as the fault set at that
/// moment says ([`Fault::Pass`] unless [`CountingProxy::set_fault`] said otherwise): passed on, with the
/// server's answer read whole (by `Content-Length`, chunked, or to the end of the connection) and passed
/// back, or answered or dropped by the proxy itself. A connection the server closes after its answer is
/// closed to the client too.
pub struct CountingProxy {
    /// The port it listens on.
    pub port: u16,
    shared: Arc<Shared>,
}

impl CountingProxy {
    /// A proxy to the plain-HTTP server at `endpoint` (`http://host:port`, moto's; a path after the port,
    /// as in Azurite's `http://host:port/account`, is the client's business: see [`CountingProxy::url_for`]).
    pub fn in_front_of(endpoint: &str) -> CountingProxy {
        CountingProxy::start(upstream_of(endpoint))
    }

    /// As [`CountingProxy::in_front_of`], but each request passed on says `Host: host:port` of `endpoint`,
    /// not the proxy's: for a server that serves requests by their host (fake-gcs-server serves its XML API
    /// only to its `-public-host`). For clients that do not sign the `Host` header (S3's SigV4 does).
    pub fn in_front_of_as_server(endpoint: &str) -> CountingProxy {
        let upstream = upstream_of(endpoint);
        CountingProxy::start_with(upstream.clone(), Some(upstream))
    }

    /// A proxy to `upstream` (`host:port`), on a port of its own.
    pub fn start(upstream: String) -> CountingProxy {
        CountingProxy::start_with(upstream, None)
    }

    /// A proxy to `upstream` (`host:port`) that says `Host: host` to it when given.
    fn start_with(upstream: String, host: Option<String>) -> CountingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared { host, ..Shared::default() });
        let s = shared.clone();
        std::thread::spawn(move || {
            for down in listener.incoming().map_while(Result::ok) {
                s.connections.fetch_add(1, Ordering::SeqCst);
                let (s, upstream) = (s.clone(), upstream.clone());
                std::thread::spawn(move || {
                    let _ = serve(down, &upstream, &s);
                });
            }
        });
        CountingProxy { port, shared }
    }

    /// `endpoint` (`http://host:port[/path]`) with the proxy's address in place of the server's.
    pub fn url_for(&self, endpoint: &str) -> String {
        let rest = endpoint.strip_prefix("http://").expect("a plain-HTTP endpoint");
        let path = rest.find('/').map_or("", |i| &rest[i..]);
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request received so far, in order (with [`Fault::Pass`], every request passed on).
    pub fn log(&self) -> Vec<Logged> {
        self.shared.log.lock().unwrap().iter().map(|s| (s.method.clone(), s.target.clone())).collect()
    }

    /// Every request received so far, in order, with when and how it was treated.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.log.lock().unwrap().clone()
    }

    /// How many requests were received so far.
    pub fn received(&self) -> usize {
        self.shared.log.lock().unwrap().len()
    }

    /// How many connections were accepted so far.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Treats every request read from now on as `fault` says (requests already being served keep theirs).
    pub fn set_fault(&self, fault: Fault) {
        *self.shared.fault.lock().unwrap() = (fault, Vec::new());
    }

    /// Treats the requests read from now on whose method and target (`PUT /bucket/key.log`) contain one of
    /// `parts` (a key's suffix such as `.manifest`, a query such as `?delete`, a method such as `DELETE `) as
    /// `fault` says; the others pass.
    pub fn set_fault_on(&self, fault: Fault, parts: &[&str]) {
        assert!(!parts.is_empty(), "no target to fault");
        *self.shared.fault.lock().unwrap() = (fault, parts.iter().map(|p| p.to_string()).collect());
    }
}

/// A head (request or answer) as read: its bytes and its text.
struct Head {
    raw: Vec<u8>,
    text: String,
}

impl Head {
    /// The value of header `name`, if it is there.
    fn header(&self, name: &str) -> Option<String> {
        self.text.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }

    fn first_line(&self) -> Vec<String> {
        self.text.lines().next().unwrap_or("").splitn(3, ' ').map(str::to_string).collect()
    }

    fn chunked(&self) -> bool {
        self.header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    }

    fn length(&self) -> Option<u64> {
        self.header("content-length").and_then(|v| v.parse().ok())
    }
}

/// The `host:port` of a plain-HTTP `endpoint` (`http://host:port[/path]`).
fn upstream_of(endpoint: &str) -> String {
    let rest = endpoint.strip_prefix("http://").expect("the test server serves plain HTTP");
    rest.split('/').next().unwrap_or_default().to_string()
}

/// `raw`, a request's head, with its `Host` header saying `host`.
fn with_host(raw: &[u8], host: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.split_once(':').is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("host")) {
            out.push_str(&format!("Host: {host}\r\n"));
        } else {
            out.push_str(line);
        }
    }
    out.into_bytes()
}

/// Reads a head up to its empty line; `None` when the connection ends first.
fn read_head(r: &mut impl BufRead) -> std::io::Result<Option<Head>> {
    let mut raw = Vec::new();
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        raw.extend_from_slice(&line);
        if line == b"\r\n" || line == b"\n" {
            let text = String::from_utf8_lossy(&raw).to_string();
            return Ok(Some(Head { raw, text }));
        }
    }
}

/// Reads a chunked body as framed on the wire: its chunks, the last (empty) one and the trailer.
fn read_chunked(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let mut size_line = Vec::new();
        if r.read_until(b'\n', &mut size_line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        out.extend_from_slice(&size_line);
        let size_text = String::from_utf8_lossy(&size_line);
        let size = u64::from_str_radix(size_text.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        if size == 0 {
            // The trailer's fields, up to its empty line.
            loop {
                let mut line = Vec::new();
                if r.read_until(b'\n', &mut line)? == 0 {
                    return Ok(out);
                }
                out.extend_from_slice(&line);
                if line == b"\r\n" || line == b"\n" {
                    return Ok(out);
                }
            }
        }
        // The chunk and its CRLF.
        let start = out.len();
        out.resize(start + size as usize + 2, 0);
        r.read_exact(&mut out[start..])?;
    }
}

/// Reads exactly `n` bytes.
fn read_exactly(r: &mut impl Read, n: u64) -> std::io::Result<Vec<u8>> {
    let mut out = vec![0u8; n as usize];
    r.read_exact(&mut out)?;
    Ok(out)
}

/// The body of a request with head `h`.
fn request_body(r: &mut impl BufRead, h: &Head) -> std::io::Result<Vec<u8>> {
    if h.chunked() { read_chunked(r) } else { read_exactly(r, h.length().unwrap_or(0)) }
}

/// S3's throttling answer to a request of `method`.
fn slow_down(method: &str) -> Vec<u8> {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
                <Message>Please reduce your request rate.</Message><RequestId>rsm-test-proxy</RequestId></Error>";
    let mut out = format!(
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         x-amz-request-id: rsm-test-proxy\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// A connection to the server, opened for the first request passed on and kept while the server keeps it.
struct Upstream {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

/// Serves one client connection, request by request.
fn serve(down: TcpStream, upstream: &str, shared: &Shared) -> std::io::Result<()> {
    // Each answer goes out in a few writes (head, body): without this, each write after the first waited
    // for the client's delayed acknowledgement, some 40 ms a request.
    down.set_nodelay(true)?;
    let mut reader = BufReader::new(down.try_clone()?);
    let mut down = down;
    let mut up: Option<Upstream> = None;
    loop {
        let Some(head) = read_head(&mut reader)? else { return Ok(()) };
        let body = request_body(&mut reader, &head)?;
        let first = head.first_line();
        let method = first.first().cloned().unwrap_or_default();
        let target = first.get(1).cloned().unwrap_or_default();
        let fault = shared.fault_for(&method, &target);
        let range = head.header("range");
        shared.log.lock().unwrap().push(Seen { at: Instant::now(), method: method.clone(), target, range, fault });
        match fault {
            Fault::Refuse => {
                let _ = down.shutdown(Shutdown::Both);
                return Ok(());
            }
            Fault::Blackhole => {
                // Silent until the client gives up (its end of the connection closes) or five minutes pass.
                down.set_read_timeout(Some(Duration::from_secs(300)))?;
                let mut sink = [0u8; 4096];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                return Ok(());
            }
            Fault::SlowDown => {
                down.write_all(&slow_down(&method))?;
                continue;
            }
            Fault::Throttle(answer) => {
                down.write_all(&answer.bytes(&method))?;
                continue;
            }
            Fault::Pass | Fault::ResetAfter(_) | Fault::Slow { .. } => {}
        }
        if up.is_none() {
            let s = TcpStream::connect(upstream)?;
            s.set_nodelay(true)?;
            up = Some(Upstream { reader: BufReader::new(s.try_clone()?), writer: s });
        }
        let u = up.as_mut().expect("connected above");
        match &shared.host {
            Some(host) => u.writer.write_all(&with_host(&head.raw, host))?,
            None => u.writer.write_all(&head.raw)?,
        }
        u.writer.write_all(&body)?;
        // Interim answers (100 Continue) pass back as they come; then the final one, read whole.
        let answer = loop {
            let Some(a) = read_head(&mut u.reader)? else {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            };
            if a.first_line().get(1).is_some_and(|s| s.starts_with('1')) {
                down.write_all(&a.raw)?;
                continue;
            }
            break a;
        };
        let status: u16 = answer.first_line().get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let version = answer.first_line().first().cloned().unwrap_or_default();
        let connection = answer.header("connection").unwrap_or_default().to_ascii_lowercase();
        let mut keep =
            if version == "HTTP/1.0" { connection.contains("keep-alive") } else { !connection.contains("close") };
        let answer_body = if method == "HEAD" || status == 204 || status == 304 {
            Vec::new()
        } else if answer.chunked() {
            read_chunked(&mut u.reader)?
        } else if let Some(n) = answer.length() {
            read_exactly(&mut u.reader, n)?
        } else {
            // Delimited by the end of the connection.
            keep = false;
            let mut all = Vec::new();
            u.reader.read_to_end(&mut all)?;
            all
        };
        match fault {
            Fault::ResetAfter(n) if n < answer_body.len() => {
                down.write_all(&answer.raw)?;
                down.write_all(&answer_body[..n])?;
                down.flush()?;
                let _ = down.shutdown(Shutdown::Both);
                return Ok(());
            }
            Fault::Slow { first_byte_ms, bytes_per_sec } => {
                std::thread::sleep(Duration::from_millis(first_byte_ms));
                let all = [answer.raw, answer_body].concat();
                // A twentieth of the rate every 50 ms.
                let step = (bytes_per_sec / 20).max(1) as usize;
                for piece in all.chunks(step) {
                    down.write_all(piece)?;
                    down.flush()?;
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            _ => {
                down.write_all(&answer.raw)?;
                down.write_all(&answer_body)?;
            }
        }
        if !keep {
            let _ = down.shutdown(Shutdown::Both);
            return Ok(());
        }
    }
}

/// The proxy's log as counts by method, of the requests whose target names `{topic}-{topicId}`.
pub fn by_method(log: &[Logged], name: Option<&str>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (m, target) in log {
        if name.is_none_or(|n| target.contains(n)) {
            *out.entry(m.clone()).or_default() += 1;
        }
    }
    out
}

/// Requests received by the fault that applied to them (`Pass`, `SlowDown`, `Throttle`, …).
pub fn by_fault(seen: &[Seen]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for s in seen {
        let name = format!("{:?}", s.fault);
        *out.entry(name.split([' ', '(', '{']).next().unwrap_or("").to_string()).or_default() += 1;
    }
    out
}

/// Our counts as the proxy sees them: by HTTP method (a listing is a GET).
pub fn as_methods(c: &CountSnapshot) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for op in Op::ALL {
        let n = c.get(op).requests;
        if n > 0 {
            let method = if op == Op::List { "GET" } else { op.name() };
            *out.entry(method.to_string()).or_default() += n;
        }
    }
    out
}
