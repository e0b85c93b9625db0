//! Contract suites every backend runs with one call, and fixtures (feature `testkit`).
//!
//! A backend crate's test:
//! ```text
//! rsm_core::backend_contract_tests!(async { std::sync::Arc::new(MyBackend::new(...)) as Arc<dyn StorageBackend> });
//! ```
//! generates one `#[tokio::test]` per check, each given a fresh backend from the expression. Each check
//! works under a unique key prefix, so backends that share a bucket do not interfere.

pub mod backend_contract;
pub mod rsm_contract;

use crate::format::partition::LocalPartition;
use crate::format::writer::{PartitionSpec, generate_partition};
use crate::model::Uuid;
use std::path::Path;

/// The address of a real test server from the environment variable `var` (set by the server's script,
/// whose start command `how` names). See [`test_server_vars`].
pub fn test_server(var: &str, skip_var: &str, how: &str) -> Option<String> {
    test_server_vars(&[var], skip_var, how).map(|mut v| v.remove(var).expect("present"))
}

/// The settings of a real test server from the environment variables `vars` (set by the server's script,
/// whose start command `how` names). When one is missing the test fails loudly, unless a developer said
/// `skip_var=1` outside CI (`CI` is not `true`): then this prints that the test skipped and returns `None`.
pub fn test_server_vars(
    vars: &[&str],
    skip_var: &str,
    how: &str,
) -> Option<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    let mut missing = Vec::new();
    for &v in vars {
        match std::env::var(v).map(|x| x.trim().to_string()) {
            Ok(x) if !x.is_empty() => {
                out.insert(v.to_string(), x);
            }
            _ => missing.push(v),
        }
    }
    if missing.is_empty() {
        return Some(out);
    }
    let missing = missing.join(", ");
    let skip = std::env::var(skip_var).is_ok_and(|v| v == "1");
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if skip && !ci {
        // Straight to the descriptor: a harness that captures output would swallow it if the process exits.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: {missing} not set and {skip_var}=1 (start: `{how}`)");
        return None;
    }
    panic!("{missing} not set: start the server with `{how}`, or skip locally with {skip_var}=1 (never in CI)");
}

/// A unique key prefix for one check.
pub fn unique_prefix(name: &str) -> String {
    format!("contract-{name}-{}/", Uuid::random())
}

/// Writes a partition of several closed segments with many chunks each (at a 64 KiB chunk size), and
/// returns it opened.
pub fn fixture_partition(root: &Path, segment_bytes: usize, records: u64) -> LocalPartition {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes,
        records,
        records_per_batch: 20,
        value_bytes: 200,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 400,
        seed: 42,
    };
    let dir = generate_partition(&root.join("fixture-0"), &spec).expect("generate fixture partition");
    LocalPartition::open(&dir).expect("open fixture partition")
}

/// Generates the backend contract tests for a backend made by `$make` (an async expression giving an
/// `Arc<dyn StorageBackend>`).
#[macro_export]
macro_rules! backend_contract_tests {
    ($make:expr) => {
        $crate::backend_contract_tests!(@tests $make;
            round_trip, ranges, missing_keys, deletes, bulk_deletes, list, large_object, overwrite,
            concurrent_readers_and_writers, bad_keys, failed_stream_leaves_nothing);
    };
    (@tests $make:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $make.await;
                $crate::testkit::backend_contract::$name(backend).await;
            }
        )*
    };
}

/// Generates the RemoteStorageManager contract tests over `TieredStorage` on a backend made by `$make`.
#[macro_export]
macro_rules! rsm_contract_tests {
    ($make:expr) => {
        $crate::rsm_contract_tests!(@tests $make;
            copy_then_fetch_everything, fetch_ranges, fetch_by_offset_and_timestamp, copy_twice,
            delete_then_not_found, failed_copy_leaves_no_segment, corrupt_batch_fails_copy,
            bad_positions_are_invalid, corruption_is_never_returned, transforms_round_trip);
    };
    (@tests $make:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $make.await;
                $crate::testkit::rsm_contract::$name(backend).await;
            }
        )*
    };
}
