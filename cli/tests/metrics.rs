//! What tiering costs per topic, where operators look: `rsm tier`'s summary of each topic's requests, bytes
//! and cost, and `rsm tier --watch --metrics-addr` serving them to Prometheus. The expected figures are
//! counted apart from the SDK: a copy is three uploads (`.log`, `.indexes`, `.manifest`), one per closed
//! segment of the partition; the bytes sent are the sizes of the files the filesystem store holds for the
//! topic; the bytes stored are the sizes of the closed local segments.

mod common;
use common::{files, ok};
use rsm_core::format::partition::LocalPartition;
use rsm_core::model::Uuid;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const TOPICS: [&str; 2] = ["orders", "clicks"];

/// Two partitions of two topics (`orders-0`, `clicks-0`) of a few segments each, and an empty store.
struct Setup {
    t: tempfile::TempDir,
    dirs: Vec<PathBuf>,
    store: String,
}

impl Setup {
    fn new() -> Self {
        let t = tempfile::tempdir().unwrap();
        let dirs = TOPICS
            .iter()
            .enumerate()
            .map(|(i, topic)| {
                let spec = PartitionSpec {
                    topic_id: Uuid::new(11, i as i64 + 1),
                    segment_bytes: 8 * 1024,
                    records: 300 + 200 * i as u64,
                    records_per_batch: 10,
                    value_bytes: 50,
                    first_timestamp: 1_700_000_000_000,
                    epoch_every_batches: 0,
                    seed: 3 + i as u64,
                    compression: None,
                };
                generate_partition(&t.path().join(format!("{topic}-0")), &spec).unwrap()
            })
            .collect();
        std::fs::create_dir(t.path().join("store")).unwrap();
        let store = format!("file://{}", t.path().join("store").display());
        Setup { t, dirs, store }
    }

    fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut a = vec!["tier".to_string()];
        a.extend(self.dirs.iter().map(|d| d.display().to_string()));
        for s in ["--store", &self.store, "--metadata-dir", &self.t.path().join("m").display().to_string()] {
            a.push(s.to_string());
        }
        a.extend(
            ["--set", "retention.ms=-1", "--set", "cost.per.1000.put=0.005", "--set", "cost.per.gb.month=0.023"]
                .map(String::from),
        );
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    /// The closed segments of `topic`'s partition: how many, and their bytes.
    fn closed(&self, topic: &str) -> (u64, u64) {
        let dir = self.dirs.iter().find(|d| d.ends_with(format!("{topic}-0"))).unwrap();
        let p = LocalPartition::open(dir).unwrap();
        let closed = p.closed_segments();
        let bytes = closed.iter().map(|s| std::fs::metadata(&s.log).unwrap().len()).sum();
        (closed.len() as u64, bytes)
    }

    /// The bytes of every file the store holds for `topic` (under `{topic}-{topicId}/`).
    fn stored_files(&self, topic: &str) -> u64 {
        let root = self.t.path().join("store");
        files(&root)
            .iter()
            .filter(|f| {
                let first = f.strip_prefix(&root).unwrap().components().next().unwrap();
                let name = first.as_os_str().to_string_lossy();
                name.len() == topic.len() + 23 && name.starts_with(&format!("{topic}-"))
            })
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum()
    }
}

#[test]
fn a_run_ends_with_each_topics_requests_bytes_and_cost() {
    let s = Setup::new();
    let args = s.args(&[]);
    let out = ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.contains("requests by topic (calls on the store):"), "{out}");
    for topic in TOPICS {
        let (segments, log_bytes) = s.closed(topic);
        assert!(segments >= 2, "{topic}: {segments} closed segments");
        let puts = 3 * segments;
        let sent = s.stored_files(topic);
        let line = out.lines().find(|l| l.starts_with(&format!("  {topic}: "))).unwrap_or_else(|| panic!("{out}"));
        assert!(line.starts_with(&format!("  {topic}: PUT {puts} ({sent} B sent)")), "{line}");
        let requests = rsm_facade::cost::money(puts as f64 / 1000.0 * 0.005);
        let storage = rsm_facade::cost::money(log_bytes as f64 / (1u64 << 30) as f64 * 0.023);
        assert!(line.contains(&format!("; cost {requests} for requests, {storage} a month for storage")), "{line}");
    }
    assert!(out.contains("estimated cost of these requests: "), "{out}");
}

/// Sends `request` to `addr` and returns the whole answer.
fn http(addr: &str, request: &[u8]) -> String {
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(request).unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn watch_serves_each_topics_counters_to_prometheus() {
    let s = Setup::new();
    let args =
        s.args(&["--watch", "--metrics-addr", "127.0.0.1:0", "--set", "remote.log.manager.task.interval.ms=100"]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rsm"))
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    std::thread::spawn(move || {
        for l in lines.map_while(|l| l.ok()) {
            let _ = tx.send(l);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let next = || match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(l) => l,
        Err(_) => panic!("rsm tier --watch said nothing more before the deadline"),
    };
    let addr = loop {
        let l = next();
        if let Some(rest) = l.strip_prefix("serving the requests and bytes of each topic on http://") {
            break rest.strip_suffix("/metrics").unwrap().to_string();
        }
    };
    // Every closed segment of both partitions copied (`{topicId}:orders-0: run 1: copied 3 segments in all …`).
    let mut pending: Vec<(String, String)> = TOPICS
        .iter()
        .map(|t| (format!(":{t}-0: run "), format!(": copied {} segments in all", s.closed(t).0)))
        .collect();
    while !pending.is_empty() {
        let l = next();
        pending.retain(|(partition, copied)| !(l.contains(partition.as_str()) && l.contains(copied.as_str())));
    }

    let answer = http(&addr, b"GET /metrics HTTP/1.1\r\nHost: rsm\r\n\r\n");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    assert!(head.contains(&format!("Content-Length: {}", body.len())), "{head}");
    for family in ["rsm_remote_requests_total", "rsm_remote_requests_failed_total", "rsm_remote_bytes_sent_total"] {
        assert!(body.contains(&format!("# TYPE {family} counter\n")), "{body}");
        assert!(body.contains(&format!("# HELP {family} ")), "{body}");
    }
    for topic in TOPICS {
        let puts = 3 * s.closed(topic).0;
        for want in [
            format!("rsm_remote_requests_total{{topic=\"{topic}\",op=\"PUT\"}} {puts}"),
            format!("rsm_remote_requests_failed_total{{topic=\"{topic}\",op=\"PUT\"}} 0"),
            format!("rsm_remote_bytes_sent_total{{topic=\"{topic}\"}} {}", s.stored_files(topic)),
            format!("rsm_remote_request_cost_total{{topic=\"{topic}\"}} "),
        ] {
            assert!(body.lines().any(|l| l.starts_with(&want)), "no `{want}` in\n{body}");
        }
        // One line per topic and kind of request.
        let n =
            body.lines().filter(|l| l.starts_with(&format!("rsm_remote_requests_total{{topic=\"{topic}\","))).count();
        assert_eq!(n, 7, "{body}");
    }

    // Anything but GET /metrics is refused, and the responder goes on serving.
    for (request, status) in [
        (&b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"[..], "405"),
        (b"GET /other HTTP/1.1\r\n\r\n", "404"),
        (b"\x00\xff garbage\r\n\r\n", "400"),
        (b"GET /metrics\r\n\r\n", "400"),
    ] {
        let a = http(&addr, request);
        assert!(a.starts_with(&format!("HTTP/1.1 {status} ")), "{request:?}: {a}");
    }
    // A client that says nothing and goes away, and one sending an endless head.
    drop(std::net::TcpStream::connect(&addr).unwrap());
    let a = http(&addr, &[b'a'; 20_000]);
    assert!(a.starts_with("HTTP/1.1 400 "), "{a}");
    assert!(http(&addr, b"GET /metrics HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 200 OK"));

    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn metrics_addr_needs_watch_and_a_free_address() {
    let s = Setup::new();
    let args = s.args(&["--metrics-addr", "127.0.0.1:0"]);
    let out = common::rsm(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--watch"), "{}", String::from_utf8_lossy(&out.stderr));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let args = s.args(&["--watch", "--metrics-addr", &addr]);
    let out = common::rsm(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("--metrics-addr {addr}")), "{err}");
}
