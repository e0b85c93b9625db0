//! Settings of the Azurite test server, from the variables `tools/servers/azurite.sh start` exports.

#![allow(dead_code)]

use rsm_backend_azure::AzureConfig;
use rsm_backend_object_store::ObjectStoreBackend;
use rsm_backend_object_store::testing::server_env_or_exit;
use rsm_core::config::{ConfigReader, props};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The variables the tests need.
pub const VARS: [&str; 4] =
    ["RSM_TEST_AZURE_ENDPOINT", "RSM_TEST_AZURE_ACCOUNT", "RSM_TEST_AZURE_KEY", "RSM_TEST_AZURE_CONTAINER"];

/// The server's variables (the test process ends as skipped when allowed and they are missing).
pub fn env() -> BTreeMap<String, String> {
    server_env_or_exit("Azure", "RSM_SKIP_AZURE", "tools/servers/azurite.sh", &VARS)
}

/// Shared-key settings for the Azurite server, with `extra` on top.
pub fn settings(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let e = env();
    let mut p = props([
        ("azure.container.name", e["RSM_TEST_AZURE_CONTAINER"].as_str()),
        ("azure.endpoint.url", e["RSM_TEST_AZURE_ENDPOINT"].as_str()),
        ("azure.account.name", e["RSM_TEST_AZURE_ACCOUNT"].as_str()),
        ("azure.account.key", e["RSM_TEST_AZURE_KEY"].as_str()),
    ]);
    for (k, v) in extra {
        p.insert(k.to_string(), v.to_string());
    }
    p
}

/// A backend on the Azurite server built from `settings`, every key checked.
pub fn backend_with(settings: &BTreeMap<String, String>) -> Arc<ObjectStoreBackend> {
    let mut r = ConfigReader::new(settings);
    let b = AzureConfig::read(&mut r, None).unwrap().build().unwrap();
    r.finish().unwrap();
    Arc::new(b)
}

/// A backend on Azurite with 5 MiB blocks, so the contract's large objects go in several blocks.
pub fn backend() -> Arc<ObjectStoreBackend> {
    backend_with(&settings(&[("azure.upload.block.size", "5242880"), ("azure.max.retries", "3")]))
}
