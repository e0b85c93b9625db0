//! `aws.credentials.file` rotated while requests run, against the moto server behind a recording proxy.
//! moto accepts any keys (it checks no signature), so what is shown is which access key id each request was
//! signed with, as it reached the server: the old one until the new file was written whole, the new one
//! from then on, never another; a file rewritten in place and left half-written (no secret key) changes
//! nothing and is logged once, without its values; and no request fails (every call succeeds, and every
//! answer the proxy passed on is a 2xx, so no failure was hidden by a retry).

mod common;
#[path = "support/recorder.rs"]
mod recorder;

use bytes::Bytes;
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const OLD_ID: &str = "AKIAROTATIONOLD00001";
const NEW_ID: &str = "AKIAROTATIONNEW00002";
const OLD_SECRET: &str = "rotation-old-secret-value";
const NEW_SECRET: &str = "rotation-new-secret-value";

fn credentials(id: &str, secret: Option<&str>) -> String {
    let mut s = format!("# written by the rotation agent\n[rsm]\naws_access_key_id = {id}\n");
    if let Some(secret) = secret {
        s.push_str(&format!("aws_secret_access_key = {secret}\n"));
    }
    s
}

/// The log events, each as its message and fields in one line.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl tracing::Subscriber for Events {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Line(String);
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={value:?}", field.name()));
            }
        }
        let mut line = Line(event.metadata().level().to_string());
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_mid_run_fails_no_request() {
    let events = Events::default();
    tracing::subscriber::set_global_default(events.clone()).unwrap();
    let proxy = recorder::Recorder::plain(&common::SERVER.env()["RSM_TEST_S3_ENDPOINT"]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("credentials");
    std::fs::write(&file, credentials(OLD_ID, Some(OLD_SECRET))).unwrap();

    let endpoint = proxy.url("http");
    let mut p = common::SERVER.settings(&[
        ("s3.endpoint.url", endpoint.as_str()),
        ("aws.credentials.file", file.to_str().unwrap()),
        ("aws.credentials.profile", "rsm"),
    ]);
    p.remove("aws.access.key.id");
    p.remove("aws.secret.access.key");
    let mut r = ConfigReader::new(&p);
    let b = Arc::new(rsm_backend_s3::from_config(&mut r).unwrap());
    r.finish().unwrap();

    // Requests one after another (put, read back, delete) until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (b, stop) = (b.clone(), stop.clone());
        tokio::spawn(async move {
            let mut calls = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let key = format!("rotation/{}", rsm_core::Uuid::random());
                b.put_bytes(&key, Bytes::from_static(b"rotate")).await.unwrap();
                assert_eq!(&b.get_range(&key, 0..6).await.unwrap()[..], b"rotate");
                b.delete(&key).await.unwrap();
                calls += 3;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            calls
        })
    };
    let ids = |from: usize| -> Vec<Option<String>> { proxy.seen()[from..].iter().map(|s| s.key_id.clone()).collect() };
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // Rewritten in place and left half-written: no secret key. The old credentials stay in use.
    std::fs::write(&file, credentials(NEW_ID, None)).unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let half_written = proxy.seen().len();
    assert!(ids(0).iter().all(|id| id.as_deref() == Some(OLD_ID)), "{:?}", ids(0));

    // The new file, written whole and renamed over it (as rotation agents do).
    let tmp = dir.path().join("credentials.new");
    std::fs::write(&tmp, credentials(NEW_ID, Some(NEW_SECRET))).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    let t = Instant::now();
    while !ids(half_written).iter().any(|id| id.as_deref() == Some(NEW_ID)) {
        assert!(t.elapsed() < Duration::from_secs(5), "the new key never signed a request");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::SeqCst);
    let calls = worker.await.unwrap();

    let seen = proxy.settled().await;
    let all = ids(0);
    let first_new = all.iter().position(|id| id.as_deref() == Some(NEW_ID)).unwrap();
    assert!(all[..first_new].iter().all(|id| id.as_deref() == Some(OLD_ID)), "{all:?}");
    assert!(all[first_new..].iter().all(|id| id.as_deref() == Some(NEW_ID)), "the old key after the new: {all:?}");
    let (old, new) = (first_new, all.len() - first_new);
    assert!(old >= 30 && new >= 15, "{old} requests with the old key, {new} with the new");
    assert!(seen.iter().all(|s| s.status.is_some_and(|c| (200..300).contains(&c))), "{seen:?}");
    assert!(seen.len() as u64 >= calls, "{} requests for {calls} calls", seen.len());
    println!("{calls} calls: {old} requests signed with the old key, then {new} with the new one");

    let events = events.0.lock().unwrap().clone();
    let failed: Vec<&String> = events.iter().filter(|e| e.contains("does not read")).collect();
    assert_eq!(failed.len(), 1, "the half-written file is logged once: {events:?}");
    assert!(failed[0].contains("aws_secret_access_key"), "the log says what is missing: {}", failed[0]);
    for e in &events {
        for secret in [OLD_SECRET, NEW_SECRET] {
            assert!(!e.contains(secret), "a log line shows a secret: {e}");
        }
    }
}
