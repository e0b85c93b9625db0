//! Settings of the fake-gcs-server test server, from the variables `tools/servers/fake-gcs.sh start`
//! exports.

#![allow(dead_code)]

use rsm_backend_gcs::GcsConfig;
use rsm_backend_object_store::ObjectStoreBackend;
use rsm_backend_object_store::testing::server_env_or_exit;
use rsm_core::config::{ConfigReader, props};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The variables the tests need.
pub const VARS: [&str; 2] = ["RSM_TEST_GCS_ENDPOINT", "RSM_TEST_GCS_BUCKET"];

/// The server's variables (the test process ends as skipped when allowed and they are missing).
pub fn env() -> BTreeMap<String, String> {
    server_env_or_exit("GCS", "RSM_SKIP_GCS", "tools/servers/fake-gcs.sh", &VARS)
}

/// Anonymous settings for the fake-gcs-server (it checks no credentials), with `extra` on top.
pub fn settings(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let e = env();
    let mut p = props([
        ("gcs.bucket.name", e["RSM_TEST_GCS_BUCKET"].as_str()),
        ("gcs.endpoint.url", e["RSM_TEST_GCS_ENDPOINT"].as_str()),
        ("gcs.credentials.default", "false"),
    ]);
    for (k, v) in extra {
        p.insert(k.to_string(), v.to_string());
    }
    p
}

/// A backend on the fake-gcs-server built from `settings`, every key checked.
pub fn backend_with(settings: &BTreeMap<String, String>) -> Arc<ObjectStoreBackend> {
    let mut r = ConfigReader::new(settings);
    let b = GcsConfig::read(&mut r, None).unwrap().build().unwrap();
    r.finish().unwrap();
    Arc::new(b)
}

/// A backend on fake-gcs-server with 5 MiB chunks, so the contract's large objects go in resumable
/// uploads of several chunks.
pub fn backend() -> Arc<ObjectStoreBackend> {
    backend_with(&settings(&[("gcs.resumable.upload.chunk.size", "5242880"), ("gcs.max.retries", "3")]))
}
