//! Settings of the moto test server, from the variables `tools/servers/moto.sh start` exports.

#![allow(dead_code)]

use rsm_backend_object_store::ObjectStoreBackend;
use rsm_backend_object_store::testing::server_env_or_exit;
use rsm_backend_s3::S3Config;
use rsm_core::config::{ConfigReader, props};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The variables the tests need.
pub const VARS: [&str; 5] = [
    "RSM_TEST_S3_ENDPOINT",
    "RSM_TEST_S3_BUCKET",
    "RSM_TEST_S3_REGION",
    "RSM_TEST_S3_ACCESS_KEY",
    "RSM_TEST_S3_SECRET_KEY",
];

/// The server's variables (the test process ends as skipped when allowed and they are missing).
pub fn env() -> BTreeMap<String, String> {
    server_env_or_exit("S3", "RSM_SKIP_S3", "tools/servers/moto.sh", &VARS)
}

/// Settings for the moto server, with `extra` on top.
pub fn settings(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let e = env();
    let mut p = props([
        ("s3.bucket.name", e["RSM_TEST_S3_BUCKET"].as_str()),
        ("s3.endpoint.url", e["RSM_TEST_S3_ENDPOINT"].as_str()),
        ("s3.region", e["RSM_TEST_S3_REGION"].as_str()),
        ("aws.access.key.id", e["RSM_TEST_S3_ACCESS_KEY"].as_str()),
        ("aws.secret.access.key", e["RSM_TEST_S3_SECRET_KEY"].as_str()),
    ]);
    for (k, v) in extra {
        p.insert(k.to_string(), v.to_string());
    }
    p
}

/// A backend on the moto server built from `settings`, every key checked.
pub fn backend_with(settings: &BTreeMap<String, String>) -> Arc<ObjectStoreBackend> {
    let mut r = ConfigReader::new(settings);
    let b = S3Config::read(&mut r, None).unwrap().build().unwrap();
    r.finish().unwrap();
    Arc::new(b)
}

/// A backend on the moto server with the smallest part size, so the contract's large objects go
/// multipart in several parts.
pub fn backend() -> Arc<ObjectStoreBackend> {
    backend_with(&settings(&[("s3.multipart.upload.part.size", "5242880"), ("s3.max.retries", "3")]))
}
