#![allow(dead_code)] // each test binary uses a part of it
//! The headers S3 answers a HEAD of an object with (object_store's `head` keeps none of its SSE or checksum
//! headers): a HEAD sent straight to the moto server, which checks no signature (only that one is there).

use std::io::{Read, Write};

/// The answer's head to `HEAD /{bucket}/{key}` on `endpoint` (`http://host:port`), lowercased, with
/// `extra` request headers (`x-amz-checksum-mode: ENABLED`).
pub fn head(endpoint: &str, bucket: &str, key: &str, extra: &[&str]) -> String {
    let host = endpoint.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(host).unwrap();
    let extra: String = extra.iter().map(|h| format!("{h}\r\n")).collect();
    write!(
        s,
        "HEAD /{bucket}/{key} HTTP/1.1\r\nHost: {host}\r\n{extra}Authorization: AWS4-HMAC-SHA256 \
         Credential=rsm-test-access-key/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00\r\n\
         Connection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "HEAD {key}: {answer}");
    answer.to_ascii_lowercase()
}

/// The value of header `name` (lowercase) in a lowercased head, if there.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::trim))
}
