//! What every HDFS test shares: the cluster's URL from `RSM_TEST_HDFS_URL`, and a backend on it.
//!
//! Start a cluster with `eval "$(tools/servers/minidfs.sh start)"`. Without the variable the tests fail,
//! unless a developer says `RSM_SKIP_HDFS=1` outside CI (`CI` is not `true`): then each prints that it
//! skipped.

#![allow(dead_code)]

use rsm_backend_hdfs::{HdfsBackend, HdfsConfig};
use rsm_core::StorageBackend;
use std::sync::Arc;

/// The root directory of the test stores; every check works under its own unique prefix below it.
pub const ROOT: &str = "/rsm-tests";

/// The cluster's URL, or `None` when HDFS tests are explicitly skipped.
pub fn hdfs_url() -> Option<String> {
    if let Some(url) = std::env::var("RSM_TEST_HDFS_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    {
        return Some(url.trim().to_string());
    }
    let skip = std::env::var("RSM_SKIP_HDFS").is_ok_and(|v| v == "1");
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if skip && !ci {
        eprintln!("skipped: HDFS test (RSM_SKIP_HDFS=1 and RSM_TEST_HDFS_URL is not set)");
        return None;
    }
    panic!(
        "RSM_TEST_HDFS_URL is not set: start a MiniDFS cluster with \
         `eval \"$(tools/servers/minidfs.sh start)\"` (stop it with `tools/servers/minidfs.sh stop`), \
         or skip the HDFS tests locally with RSM_SKIP_HDFS=1 (never in CI)"
    );
}

/// The backend's settings for the test cluster at `url`.
pub fn config(url: &str) -> HdfsConfig {
    HdfsConfig {
        namenode_url: Some(url.to_string()),
        root: ROOT.to_string(),
        ..HdfsConfig::default()
    }
}

/// A backend on the test cluster, built on the calling test's runtime.
pub fn backend(url: &str) -> HdfsBackend {
    config(url).build().expect("build the HDFS backend")
}

/// The same, as the contract suites take it.
pub async fn make(url: String) -> Arc<dyn StorageBackend> {
    Arc::new(backend(&url))
}

/// A test's body starts with this: the cluster URL, or return (skipped) from the test.
#[macro_export]
macro_rules! url_or_skip {
    () => {
        match common::hdfs_url() {
            Some(url) => url,
            None => return,
        }
    };
}
