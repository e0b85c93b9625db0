#![allow(dead_code)] // each test binary uses a part of it
//! A recording proxy in front of the moto server: it passes each request on unchanged (but for
//! `Connection: close`, so that each request has a connection of its own) and records the access key id
//! the request was signed with and the answer's status, so a test can tell which credentials signed what.
//! It listens on plain HTTP, or on HTTPS with a test certificate ([`Recorder::tls`]: object_store sends
//! AssumeRoleWithWebIdentity only over HTTPS). A request without a signature can get one (a routing
//! header only: moto checks no signature, and routes an unsigned request by its body, not its query,
//! which object_store's STS request has).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request that went through.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// `GET`, `PUT`, ...
    pub method: String,
    /// The path and query.
    pub target: String,
    /// The access key id of its SigV4 signature (header or presigned query).
    pub key_id: Option<String>,
    /// Its `x-amz-checksum-sha256` header.
    pub checksum_sha256: Option<String>,
    /// The answer's status.
    pub status: Option<u16>,
    /// The answer (head and body) when asked for ([`Recorder::keep_answers`]).
    pub answer: Vec<u8>,
}

/// The proxy; it runs until the test process ends.
#[derive(Clone)]
pub struct Recorder {
    /// Where it listens.
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

#[derive(Clone)]
struct Options {
    upstream: String,
    /// The signature an unsigned request is given (moto routes by its credential scope).
    sign_unsigned: Option<String>,
    keep_answers: bool,
}

impl Recorder {
    /// A plain-HTTP proxy to `upstream` (`http://127.0.0.1:port`).
    pub async fn plain(upstream: &str) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Recorder { addr: listener.local_addr().unwrap(), seen: Arc::default() };
        let options = Options { upstream: host_port(upstream), sign_unsigned: None, keep_answers: false };
        let seen = r.seen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve(client, options.clone(), seen.clone()));
            }
        });
        r
    }

    /// An HTTPS proxy to `upstream` serving `cert_pem` (with `key_pem`), that signs unsigned requests
    /// for `service` (a routing signature) and keeps the answers.
    pub async fn tls(upstream: &str, cert_pem: &[u8], key_pem: &[u8], service: &str) -> Recorder {
        use tokio_rustls::rustls;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs = vec![CertificateDer::from_pem_slice(cert_pem).unwrap()];
        let key = PrivateKeyDer::from_pem_slice(key_pem).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Recorder { addr: listener.local_addr().unwrap(), seen: Arc::default() };
        let signature = format!(
            "AWS4-HMAC-SHA256 Credential=routing/20250101/us-east-1/{service}/aws4_request, SignedHeaders=host, \
             Signature=00"
        );
        let options = Options { upstream: host_port(upstream), sign_unsigned: Some(signature), keep_answers: true };
        let seen = r.seen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (acceptor, options, seen) = (acceptor.clone(), options.clone(), seen.clone());
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(client).await {
                        serve(tls, options, seen).await;
                    }
                });
            }
        });
        r
    }

    /// `http://addr` or `https://addr`.
    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    /// Every request so far, once each has its answer's status (the proxy records it after passing the
    /// answer on, so a caller may see the answer first): waits up to 5 s for that.
    pub async fn settled(&self) -> Vec<Seen> {
        let t = std::time::Instant::now();
        loop {
            let seen = self.seen();
            if seen.iter().all(|s| s.status.is_some()) || t.elapsed() > std::time::Duration::from_secs(5) {
                return seen;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Every request so far, in the order they came.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn host_port(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// The access key id in a SigV4 `Credential=ID/...` (header) or `X-Amz-Credential=ID%2F...` (query).
pub fn key_id_of(head: &str) -> Option<String> {
    let lower = head.to_ascii_lowercase();
    if let Some(i) = lower.find("\r\nauthorization:") {
        let line = &head[i + 2..];
        let line = &line[..line.find("\r\n").unwrap_or(line.len())];
        let cred = &line[line.find("Credential=")? + "Credential=".len()..];
        return Some(cred[..cred.find('/')?].to_string());
    }
    let first = &head[..head.find("\r\n")?];
    let cred = &first[first.find("X-Amz-Credential=")? + "X-Amz-Credential=".len()..];
    Some(cred[..cred.find("%2F")?].to_string())
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    client: S,
    options: Options,
    seen: Arc<Mutex<Vec<Seen>>>,
) {
    let (mut from_client, mut to_client) = tokio::io::split(client);
    // The request's head, and whatever of its body came with it.
    let mut buf = Vec::new();
    let end = loop {
        let mut chunk = [0u8; 8192];
        let n = match from_client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        assert!(buf.len() < 1 << 20, "a request head over 1 MiB");
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let mut lines: Vec<&str> = head.trim_end().split("\r\n").collect();
    let mut parts = lines[0].split(' ');
    let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let key_id = key_id_of(&head);
    let checksum_sha256 = lines.iter().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("x-amz-checksum-sha256").then(|| value.trim().to_string())
    });
    lines.retain(|l| !l.to_ascii_lowercase().starts_with("connection:"));
    let mut out = lines.join("\r\n");
    out.push_str("\r\nConnection: close\r\n");
    if key_id.is_none()
        && let Some(signature) = &options.sign_unsigned
    {
        out.push_str(&format!("Authorization: {signature}\r\n"));
    }
    out.push_str("\r\n");
    let index = {
        let mut s = seen.lock().unwrap();
        s.push(Seen { method, target, key_id, checksum_sha256, ..Seen::default() });
        s.len() - 1
    };
    let Ok(upstream) = TcpStream::connect(&options.upstream).await else { return };
    let (mut from_upstream, mut to_upstream) = upstream.into_split();
    if to_upstream.write_all(out.as_bytes()).await.is_err() || to_upstream.write_all(&buf[end..]).await.is_err() {
        return;
    }
    let body = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_client, &mut to_upstream).await;
    });
    let mut answer = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    while let Ok(n) = from_upstream.read(&mut chunk).await {
        if n == 0 || to_client.write_all(&chunk[..n]).await.is_err() {
            break;
        }
        if options.keep_answers || answer.len() < 32 {
            answer.extend_from_slice(&chunk[..n]);
        }
    }
    let _ = to_client.shutdown().await;
    body.abort();
    let status = std::str::from_utf8(answer.get(9..12).unwrap_or_default()).ok().and_then(|s| s.parse().ok());
    let mut s = seen.lock().unwrap();
    s[index].status = status;
    if options.keep_answers {
        s[index].answer = answer;
    }
}
