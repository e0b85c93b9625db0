//! What the S3 request-counting tests share: an HTTP proxy in front of moto that logs every request it passes
//! on, and counts by HTTP method from its log and from ours.

use rsm_core::backend::{CountSnapshot, Op};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request the proxy passed on: its method and target (path and query, as sent).
pub type Logged = (String, String);

/// An HTTP/1.1 proxy to `upstream` that logs every request: each connection's requests are read one by
/// one (head, then the body by `Content-Length` or chunked), logged and passed on; answers flow back as they
/// come.
pub struct CountingProxy {
    /// The port it listens on.
    pub port: u16,
    log: Arc<Mutex<Vec<Logged>>>,
}

impl CountingProxy {
    /// A proxy to the plain-HTTP server at `endpoint` (`http://host:port`, moto's).
    pub fn in_front_of(endpoint: &str) -> CountingProxy {
        let upstream = endpoint.trim_end_matches('/').strip_prefix("http://").expect("moto serves plain HTTP");
        CountingProxy::start(upstream.to_string())
    }

    /// A proxy to `upstream` (`host:port`), on a port of its own.
    pub fn start(upstream: String) -> CountingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        std::thread::spawn(move || {
            for down in listener.incoming().map_while(Result::ok) {
                let (l, upstream) = (l.clone(), upstream.clone());
                std::thread::spawn(move || {
                    let _ = relay(down, &upstream, &l);
                });
            }
        });
        CountingProxy { port, log }
    }

    /// Every request passed on so far, in order.
    pub fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }
}

fn relay(down: TcpStream, upstream: &str, log: &Mutex<Vec<Logged>>) -> std::io::Result<()> {
    let mut up = TcpStream::connect(upstream)?;
    let (mut up_read, mut down_write) = (up.try_clone()?, down.try_clone()?);
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_read, &mut down_write);
        let _ = down_write.shutdown(Shutdown::Both);
    });
    let mut reader = BufReader::new(down);
    loop {
        let mut head = Vec::new();
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line)? == 0 {
                let _ = up.shutdown(Shutdown::Write);
                return Ok(());
            }
            head.extend_from_slice(&line);
            if line == b"\r\n" {
                break;
            }
        }
        let text = String::from_utf8_lossy(&head).to_string();
        let mut first = text.lines().next().unwrap_or("").split(' ');
        let (method, target) = (first.next().unwrap_or("").to_string(), first.next().unwrap_or("").to_string());
        let header = |name: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
        };
        let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        let length: u64 = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        log.lock().unwrap().push((method, target));
        up.write_all(&head)?;
        if chunked {
            loop {
                let mut size_line = Vec::new();
                reader.read_until(b'\n', &mut size_line)?;
                up.write_all(&size_line)?;
                let size_text = String::from_utf8_lossy(&size_line);
                let size = u64::from_str_radix(size_text.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
                // The chunk and its CRLF (the last, empty chunk: its trailer's CRLF).
                std::io::copy(&mut (&mut reader).take(size + 2), &mut up)?;
                if size == 0 {
                    break;
                }
            }
        } else {
            std::io::copy(&mut (&mut reader).take(length), &mut up)?;
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
