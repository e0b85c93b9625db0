//! Server-side encryption, per-topic settings and upload checksums against the moto server: the objects
//! themselves (a HEAD of each, single PUTs and multipart uploads alike) carry the encryption, KMS key and
//! storage class their settings ask for, and every upload request carries its SHA-256.

mod common;
#[path = "support/head.rs"]
mod head;
#[path = "support/recorder.rs"]
mod recorder;

use base64::Engine;
use head::{head, header};
use rsm_backend_object_store::ObjectStoreBackend;
use rsm_backend_s3::Op;
use rsm_core::{StorageBackend, Uuid};
use std::collections::BTreeMap;

const PART: usize = 5 << 20;
const KEY_DEFAULT: &str = "arn:aws:kms:us-east-1:123456789012:key/rsm-default";
const KEY_ORDERS: &str = "arn:aws:kms:us-east-1:123456789012:key/rsm-orders";
const KEY_AUDIT: &str = "arn:aws:kms:us-east-1:123456789012:key/rsm-audit";

fn env() -> BTreeMap<String, String> {
    common::SERVER.env()
}

fn backend(extra: &[(&str, &str)]) -> ObjectStoreBackend {
    let mut settings = vec![("s3.multipart.upload.part.size", "5242880")];
    settings.extend_from_slice(extra);
    common::SERVER.config_and_backend(&common::SERVER.settings(&settings)).1
}

/// `n` bytes that differ from part to part.
fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i / 7 + i / PART) as u8).collect()
}

/// A segment object key of `topic`, under a prefix of its own.
fn key_of(prefix: &str, topic: &str, ext: &str) -> String {
    format!("{prefix}{topic}-{}/0/{:020}-{}.{ext}", Uuid::random(), 42, Uuid::random())
}

/// Puts `bytes` at `key` in one PUT or, above a part, as a multipart upload (checked by the PUTs sent),
/// and reads it back.
async fn put(b: &ObjectStoreBackend, key: &str, bytes: &[u8]) {
    let puts = b.http_counts().unwrap().get(Op::Put).requests;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("obj");
    std::fs::write(&file, bytes).unwrap();
    b.put_file(key, &file, bytes.len() as u64).await.unwrap();
    let sent = b.http_counts().unwrap().get(Op::Put).requests - puts;
    let parts = bytes.len().div_ceil(PART).max(1) as u64;
    assert!(sent >= parts, "{key}: {sent} PUTs for {parts} parts");
    let back = b.get_range(key, 0..bytes.len() as u64).await.unwrap();
    assert!(back[..] == bytes[..], "{key} reads back");
}

/// What a HEAD of `key` shows: (encryption, KMS key id, storage class), lowercased.
fn stored(key: &str) -> (Option<String>, Option<String>, Option<String>) {
    let e = env();
    let h = head(&e["RSM_TEST_S3_ENDPOINT"], &e["RSM_TEST_S3_BUCKET"], key, &[]);
    let get = |name: &str| header(&h, name).map(str::to_string);
    (
        get("x-amz-server-side-encryption"),
        get("x-amz-server-side-encryption-aws-kms-key-id"),
        get("x-amz-storage-class"),
    )
}

fn lower(s: &str) -> Option<String> {
    Some(s.to_ascii_lowercase())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kms_key_on_single_puts_and_multipart_uploads() {
    let b = backend(&[("s3.sse", "aws:kms"), ("s3.sse.kms.key.id", KEY_DEFAULT)]);
    let prefix = format!("sse-kms/{}/", Uuid::random());
    for (name, bytes) in [("single", data(1000)), ("multipart", data(2 * PART + 1000))] {
        let key = key_of(&prefix, name, "log");
        put(&b, &key, &bytes).await;
        let (sse, kms, _) = stored(&key);
        assert_eq!((sse, kms), (lower("aws:kms"), lower(KEY_DEFAULT)), "{name}: {key}");
    }
    let key = format!("{prefix}not-a-segment");
    put(&b, &key, b"store file").await;
    assert_eq!(stored(&key).1, lower(KEY_DEFAULT), "every object, not only segments'");
}

/// A topic's KMS key and storage class reach its objects only; the other topics' objects keep the store's
/// defaults (SSE-S3 and `s3.storage.class`), whichever way they are uploaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_settings_apply_to_their_topic_only() {
    let b = backend(&[
        ("s3.sse", "AES256"),
        ("s3.storage.class", "STANDARD_IA"),
        ("s3.topic.orders.sse.kms.key.id", KEY_ORDERS),
        ("s3.topic.orders.storage.class", "ONEZONE_IA"),
        ("s3.topic.audit.v2.sse.kms.key.id", KEY_AUDIT),
        ("s3.topic.logs.storage.class", "REDUCED_REDUNDANCY"),
    ]);
    let prefix = format!("sse-topics/{}/", Uuid::random());
    let cases = [
        ("orders", lower("aws:kms"), lower(KEY_ORDERS), lower("ONEZONE_IA")),
        ("audit.v2", lower("aws:kms"), lower(KEY_AUDIT), lower("STANDARD_IA")),
        ("logs", lower("AES256"), None, lower("REDUCED_REDUNDANCY")),
        ("payments", lower("AES256"), None, lower("STANDARD_IA")),
        // Named like a configured topic, but another one.
        ("orders2", lower("AES256"), None, lower("STANDARD_IA")),
    ];
    let n = cases.len();
    for (topic, sse, kms, class) in cases {
        for (how, bytes, ext) in [("single", data(1000), "manifest"), ("multipart", data(PART + 1000), "log")] {
            let key = key_of(&prefix, topic, ext);
            put(&b, &key, &bytes).await;
            assert_eq!(stored(&key), (sse.clone(), kms.clone(), class.clone()), "{topic}, {how}: {key}");
        }
    }
    // Listings and deletes go to the default client and see every topic's objects.
    let listed = b.list(&prefix).await.unwrap();
    assert_eq!(listed.len(), 2 * n);
    let keys: Vec<String> = listed.into_iter().map(|o| o.key).collect();
    b.delete_many(&keys).await.unwrap();
    assert!(b.list(&prefix).await.unwrap().is_empty());
}

fn sha256_b64(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// With `s3.checksum.algorithm=SHA256` every upload request (a single PUT, each part) carries the SHA-256
/// of its bytes, read here from the requests as they reach the server; without it none does. (moto keeps
/// the checksum object_store sends but does not check it, so S3's refusal of a wrong one is not shown.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sha256_checksums_on_every_upload() {
    let proxy = recorder::Recorder::plain(&env()["RSM_TEST_S3_ENDPOINT"]).await;
    let endpoint = proxy.url("http");
    let prefix = format!("checksums/{}/", Uuid::random());
    let (small, big) = (data(1000), data(2 * PART + 1000));
    let with = backend(&[("s3.endpoint.url", &endpoint), ("s3.checksum.algorithm", "SHA256")]);
    put(&with, &format!("{prefix}small"), &small).await;
    put(&with, &format!("{prefix}big"), &big).await;
    let mut want: Vec<String> = std::iter::once(&small[..]).chain(big.chunks(PART)).map(sha256_b64).collect();
    let mut got: Vec<String> = proxy
        .seen()
        .into_iter()
        .filter(|s| s.method == "PUT")
        .map(|s| s.checksum_sha256.unwrap_or_else(|| panic!("a PUT without its checksum: {}", s.target)))
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "one PUT and three parts, each with its own SHA-256");
    let before = proxy.seen().len();
    let without = backend(&[("s3.endpoint.url", &endpoint)]);
    put(&without, &format!("{prefix}plain"), &small).await;
    assert!(proxy.seen()[before..].iter().all(|s| s.checksum_sha256.is_none()), "none by default");
    let seen = proxy.settled().await;
    assert!(seen.iter().all(|s| s.status.is_some_and(|c| c < 300)), "{seen:?}");
}
