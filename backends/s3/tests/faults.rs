//! Faults against real moto servers that this test starts and stops itself (the binary from
//! `tools/servers/moto.sh start`, `RSM_TEST_MOTO_SERVER`):
//! - killed during a multipart copy: the copy fails with a retriable error, no manifest is visible, and
//!   after a restart the retried copy succeeds and leaves exactly the segment's three objects;
//! - frozen during a copy (SIGSTOP: requests time out): retriable error, no manifest; once it thaws,
//!   nothing of the failed attempt is visible after a sweep, and the retry succeeds;
//! - cut off during a copy (through a TCP proxy this test cuts, so the failed copy's cleanup cannot reach
//!   the server either, while the server keeps what it had): retriable error, no manifest, the index
//!   bundle written before the cut is left, and the log's multipart upload, which could not be aborted;
//!   `sweep_orphans` removes the one and aborts the other, and the retry succeeds;
//! - ranged reads of a key that vanished are "not found" (on the shared server).

mod common;

use rsm_backend_object_store::ObjectStoreBackend;
use rsm_backend_object_store::testing::{segment_partition, server_env_or_exit};
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::partition::LocalPartition;
use rsm_core::storage::partition_prefix;
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::testkit::unique_prefix;
use rsm_core::{
    ErrorKind, LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager, StorageBackend, TieredConfig,
    TieredStorage,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BUCKET: &str = "rsm-faults";

/// A moto server owned by this test; killed when dropped.
struct Moto {
    bin: String,
    port: u16,
    child: Option<Child>,
    log: std::path::PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One plain HTTP/1.1 request; returns the status code.
fn http(port: u16, method: &str, path: &str) -> std::io::Result<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head)?;
    let text = String::from_utf8_lossy(&head);
    text[9..12].parse().map_err(|_| std::io::Error::other(format!("bad status line {text:?}")))
}

impl Moto {
    fn start(bin: &str, port: u16, log: std::path::PathBuf) -> Moto {
        let mut m = Moto { bin: bin.to_string(), port, child: None, log };
        m.spawn();
        m
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).unwrap();
        let child = Command::new(&self.bin)
            .args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.bin));
        self.child = Some(child);
        let t = Instant::now();
        while http(self.port, "GET", "/").is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "moto did not start: {}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // In memory: every start needs the bucket again. moto checks no signature.
        assert_eq!(http(self.port, "PUT", &format!("/{BUCKET}")).unwrap(), 200);
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill").args([sig, &self.pid().to_string()]).status().unwrap().success();
        assert!(ok, "kill {sig}");
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.signal("-CONT");
        }
        self.kill();
    }
}

fn moto_bin() -> String {
    server_env_or_exit("S3", "RSM_SKIP_S3", "tools/servers/moto.sh", &["RSM_TEST_MOTO_SERVER"])["RSM_TEST_MOTO_SERVER"]
        .clone()
}

/// A backend on `endpoint` with 5 MiB parts sent one at a time (so a copy takes many requests) and short
/// timeouts and few retries (so a dead server fails the copy in seconds, not minutes).
fn backend(endpoint: &str) -> Arc<ObjectStoreBackend> {
    common::SERVER.backend_with(&common::SERVER.settings(&[
        ("s3.endpoint.url", endpoint),
        ("s3.bucket.name", BUCKET),
        ("s3.multipart.upload.part.size", "5242880"),
        ("s3.multipart.upload.parts.in.flight", "1"),
        ("s3.max.retries", "2"),
        ("s3.api.call.timeout", "3000"),
        ("s3.api.call.attempt.timeout", "1500"),
        ("s3.connect.timeout", "500"),
    ]))
}

struct Setup {
    _tmp: tempfile::TempDir,
    partition: LocalPartition,
    md: RemoteLogSegmentMetadata,
    data: LogSegmentData,
    rsm: TieredStorage,
    config: TieredConfig,
}

fn setup(b: Arc<ObjectStoreBackend>, name: &str) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    // About 40 MiB: eight parts of 5 MiB, sent one after another.
    let partition = segment_partition(tmp.path(), 40 << 20);
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 1_700_000_000_000).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let p = props([("key.prefix", unique_prefix(name))]);
    let mut r = ConfigReader::new(&p);
    let config = TieredConfig::read(&mut r).unwrap();
    r.finish().unwrap();
    let rsm = TieredStorage::new(b, config.clone());
    Setup { _tmp: tmp, partition, md, data, rsm, config }
}

/// Waits until the backend has sent at least `n` PUT requests (parts or whole objects).
async fn wait_for_puts(b: &ObjectStoreBackend, n: u64) {
    let t = Instant::now();
    while b.http_counts().unwrap().get(rsm_backend_s3::Op::Put).requests < n {
        assert!(t.elapsed() < Duration::from_secs(30), "no uploads started");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The partition's objects, by name after the partition prefix.
async fn objects(s: &Setup, b: &dyn StorageBackend) -> Vec<String> {
    let prefix = partition_prefix(&s.config.key_prefix, &s.partition.topic_id_partition);
    b.list(&prefix).await.unwrap().into_iter().map(|o| o.key[prefix.len()..].to_string()).collect()
}

/// After a successful copy: exactly the segment's log, index bundle and manifest, and the log reads
/// back whole.
async fn assert_committed(s: &Setup, b: &dyn StorageBackend) {
    let names = objects(s, b).await;
    let exts: Vec<&str> = names.iter().map(|n| n.rsplit_once('.').unwrap().1).collect();
    assert_eq!(exts, ["indexes", "log", "manifest"], "{names:?}");
    let fresh = TieredStorage::new(s.rsm.backend().clone(), s.config.clone());
    let got = collect(fresh.fetch_log_segment(&s.md, 0, None).await.unwrap()).await.unwrap();
    assert!(got == std::fs::read(&s.data.log_segment).unwrap());
}

async fn assert_no_manifest(s: &Setup) {
    let fresh = TieredStorage::new(s.rsm.backend().clone(), s.config.clone());
    let e = fresh.manifest(&s.md).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{}", e.full_message());
    let listed = fresh.list_segments(Some(&s.partition.topic_id_partition)).await.unwrap();
    assert!(listed.is_empty(), "a segment is listed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_multipart_copy_then_retry_after_restart() {
    let bin = moto_bin();
    let logs = tempfile::tempdir().unwrap();
    let mut moto = Moto::start(&bin, free_port(), logs.path().join("moto.log"));
    let b = backend(&moto.endpoint());
    let s = setup(b.clone(), "faults-kill");

    let copy = {
        let (rsm, md, data) =
            (TieredStorage::new(s.rsm.backend().clone(), s.config.clone()), s.md.clone(), s.data.clone());
        tokio::spawn(async move { rsm.copy_log_segment_data(&md, &data).await })
    };
    // The index bundle and the first parts are on their way: kill the server mid-copy.
    wait_for_puts(&b, 3).await;
    moto.kill();
    let t = Instant::now();
    let e = copy.await.unwrap().unwrap_err();
    println!("copy failed after the kill in {:.2} s: {}", t.elapsed().as_secs_f64(), e.full_message());
    assert!(e.is_transient(), "{}", e.full_message());
    println!("requests so far: {}", b.http_counts().unwrap());

    moto.spawn();
    assert_no_manifest(&s).await;
    assert!(objects(&s, b.as_ref()).await.is_empty(), "the restarted (in-memory) server holds nothing");

    s.rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    assert_committed(&s, b.as_ref()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_during_copy_then_sweep_and_retry() {
    let bin = moto_bin();
    let logs = tempfile::tempdir().unwrap();
    let moto = Moto::start(&bin, free_port(), logs.path().join("moto.log"));
    let b = backend(&moto.endpoint());
    let s = setup(b.clone(), "faults-freeze");

    let copy = {
        let (rsm, md, data) =
            (TieredStorage::new(s.rsm.backend().clone(), s.config.clone()), s.md.clone(), s.data.clone());
        tokio::spawn(async move { rsm.copy_log_segment_data(&md, &data).await })
    };
    wait_for_puts(&b, 3).await;
    // Frozen: connections are accepted but never answered, so every request (the cleanup's deletes
    // too) times out.
    moto.signal("-STOP");
    let e = copy.await.unwrap().unwrap_err();
    assert!(e.is_transient(), "{}", e.full_message());
    moto.signal("-CONT");
    // Let the thawed server finish what was queued while it was frozen.
    tokio::time::sleep(Duration::from_secs(1)).await;

    assert_no_manifest(&s).await;
    let left = objects(&s, b.as_ref()).await;
    println!("left by the failed copy: {left:?}");
    assert!(left.iter().all(|n| n.ends_with(".log") || n.ends_with(".indexes")), "{left:?}");
    // The log's upload, if its abort timed out while the server was frozen.
    let prefix = partition_prefix(&s.config.key_prefix, &s.partition.topic_id_partition);
    let uploads = b.list_incomplete_uploads(&prefix).await.unwrap();
    println!("incomplete uploads left by the failed copy: {uploads:?}");
    let swept = s.rsm.sweep_orphans(Some(&s.partition.topic_id_partition), Duration::ZERO).await.unwrap();
    assert_eq!(swept.len(), left.len() + uploads.len(), "{swept:?} vs {left:?} and {uploads:?}");
    assert!(objects(&s, b.as_ref()).await.is_empty(), "the sweep left objects");
    assert_eq!(b.list_incomplete_uploads(&prefix).await.unwrap(), [], "the sweep left uploads");

    s.rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    assert_committed(&s, b.as_ref()).await;
    // A committed segment is never swept.
    let swept = s.rsm.sweep_orphans(Some(&s.partition.topic_id_partition), Duration::ZERO).await.unwrap();
    assert!(swept.is_empty(), "{swept:?}");
}

/// A TCP proxy to a local server that can be cut (every connection dropped, new ones closed at once)
/// and restored.
struct Proxy {
    port: u16,
    cut: Arc<std::sync::atomic::AtomicBool>,
    generation: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: u16) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (generation, _) = tokio::sync::watch::channel(0u64);
        let (c, g) = (cut.clone(), generation.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut down, _)) = listener.accept().await else {
                    return;
                };
                if c.load(Ordering::SeqCst) {
                    drop(down);
                    continue;
                }
                let mut rx = g.subscribe();
                tokio::spawn(async move {
                    let Ok(mut up) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut down, &mut up) => {}
                        _ = rx.changed() => {}
                    }
                });
            }
        });
        Proxy { port, cut, generation, task }
    }

    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        self.generation.send_modify(|g| *g += 1);
    }

    fn restore(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_off_during_copy_then_sweep_and_retry() {
    let bin = moto_bin();
    let logs = tempfile::tempdir().unwrap();
    let moto = Moto::start(&bin, free_port(), logs.path().join("moto.log"));
    let proxy = Proxy::start(moto.port).await;
    let b = backend(&format!("http://127.0.0.1:{}", proxy.port));
    let direct = backend(&moto.endpoint());
    let s = setup(b.clone(), "faults-cut");

    let copy = {
        let (rsm, md, data) =
            (TieredStorage::new(s.rsm.backend().clone(), s.config.clone()), s.md.clone(), s.data.clone());
        tokio::spawn(async move { rsm.copy_log_segment_data(&md, &data).await })
    };
    // Cut once the index bundle is stored (seen directly) and the log's parts are under way.
    let t = Instant::now();
    while !objects(&s, direct.as_ref()).await.iter().any(|n| n.ends_with(".indexes")) {
        assert!(t.elapsed() < Duration::from_secs(30), "no index bundle");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    wait_for_puts(&b, 2).await;
    proxy.cut();
    let e = copy.await.unwrap().unwrap_err();
    assert!(e.is_transient(), "{}", e.full_message());
    proxy.restore();

    assert_no_manifest(&s).await;
    let left = objects(&s, b.as_ref()).await;
    println!("left by the failed copy, whose cleanup could not reach the server: {left:?}");
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].ends_with(".indexes"), "{left:?}");
    // The log's multipart upload could not be aborted either: its parts are in the bucket, invisible to the
    // listing (and billed), until the sweep aborts it.
    let prefix = partition_prefix(&s.config.key_prefix, &s.partition.topic_id_partition);
    let uploads = b.list_incomplete_uploads(&prefix).await.unwrap();
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert!(uploads[0].key.ends_with(".log"), "{uploads:?}");
    assert_eq!(http_body(moto.port, &format!("/{BUCKET}?uploads")).matches("<Upload>").count(), 1);
    let swept = s.rsm.sweep_orphans(Some(&s.partition.topic_id_partition), Duration::ZERO).await.unwrap();
    assert_eq!(swept, [prefix.clone() + &left[0], uploads[0].key.clone()], "{swept:?}");
    assert!(objects(&s, b.as_ref()).await.is_empty());
    assert_eq!(b.list_incomplete_uploads(&prefix).await.unwrap(), [], "the sweep aborted the upload");
    assert_eq!(http_body(moto.port, &format!("/{BUCKET}?uploads")).matches("<Upload>").count(), 0);

    s.rsm.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    assert_committed(&s, b.as_ref()).await;
}

/// The body of a plain GET.
fn http_body(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranged_reads_of_a_vanished_key_are_not_found() {
    let b = common::SERVER.backend();
    let p = unique_prefix("vanished");
    let key = format!("{p}obj");
    b.put_bytes(&key, bytes::Bytes::from(vec![7u8; 100_000])).await.unwrap();
    assert_eq!(b.get_range(&key, 10..20).await.unwrap().len(), 10);
    // Another client deletes it.
    common::SERVER.backend().delete(&key).await.unwrap();
    for r in [10..20, 0..u64::MAX, 99_990..u64::MAX, 500..500] {
        let e = b.get_range(&key, r.clone()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{r:?}: {e}");
        assert!(e.to_string().contains("obj"), "{e}");
    }

    // A segment whose log vanishes under a reader that has its manifest cached.
    let tmp = tempfile::tempdir().unwrap();
    let partition = segment_partition(tmp.path(), 8 << 20);
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 1_700_000_000_000).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let props = props([("key.prefix", unique_prefix("vanished-seg"))]);
    let mut r = ConfigReader::new(&props);
    let config = TieredConfig::read(&mut r).unwrap();
    let rsm = TieredStorage::new(b.clone(), config);
    rsm.copy_log_segment_data(&md, &data).await.unwrap();
    collect(rsm.fetch_log_segment(&md, 0, Some(99)).await.unwrap()).await.unwrap();
    b.delete(&rsm.keys(&md).log).await.unwrap();
    let r = match rsm.fetch_log_segment(&md, 1000, Some(200_000)).await {
        Ok(s) => collect(s).await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert_eq!(r.unwrap_err().kind(), ErrorKind::NotFound);
}
