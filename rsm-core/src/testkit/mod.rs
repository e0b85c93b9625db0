//! Contract suites every backend runs with one call, and fixtures (feature `testkit`). The Kafka log writer
//! ([`log_writer`]) and the helpers here that need nothing more (test servers' settings, fixture partitions)
//! also come with the feature `log-writer` alone, which `rsm demo` and the benchmarks use.
//!
//! A backend crate's test:
//! ```text
//! rsm_core::backend_contract_tests!(async { std::sync::Arc::new(MyBackend::new(...)) as Arc<dyn StorageBackend> });
//! ```
//! generates one `#[tokio::test]` per check, each given a fresh backend from the expression. Each check
//! works under a unique key prefix, so backends that share a bucket do not interfere.

pub mod aiven_writer;
#[cfg(feature = "testkit")]
pub mod backend_contract;
pub mod log_writer;
#[cfg(feature = "testkit")]
pub mod rsm_contract;

use crate::format::partition::LocalPartition;
use crate::model::Uuid;
use log_writer::{PartitionSpec, generate_partition};
use std::collections::BTreeMap;
use std::path::Path;
// What the segment fixture (`LogSegment`) uses besides: it needs `tempfile`, so only the feature `testkit`.
#[cfg(feature = "testkit")]
use {
    crate::format::batch::BatchIter,
    crate::format::manifest::Manifest,
    crate::model::{LogSegmentData, RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition},
    crate::storage::TieredStorage,
    log_writer::{empty_producer_snapshot, leader_epoch_checkpoint, segment_file_name},
};

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

/// The S3 test server's settings (moto, started by `tools/servers/moto.sh`): `RSM_TEST_S3_ENDPOINT`, `_BUCKET`,
/// `_REGION`, `_ACCESS_KEY` and `_SECRET_KEY`, as [`test_server_vars`] gives them (`RSM_SKIP_S3=1` skips locally).
pub fn s3_test_server() -> Option<BTreeMap<String, String>> {
    let vars = [
        "RSM_TEST_S3_ENDPOINT",
        "RSM_TEST_S3_BUCKET",
        "RSM_TEST_S3_REGION",
        "RSM_TEST_S3_ACCESS_KEY",
        "RSM_TEST_S3_SECRET_KEY",
    ];
    test_server_vars(&vars, "RSM_SKIP_S3", "eval \"$(tools/servers/moto.sh start)\"")
}

/// One request of KMS's JSON protocol to a test server that checks no signature (moto at `endpoint`,
/// `http://host:port`): operation `op` (`CreateKey`, `DisableKey`, …) with the JSON `body`, answered with
/// the status and the answer's text. For tests' set-up (keys made, disabled), not for the code under test,
/// which signs its requests.
pub fn kms_test_call(endpoint: &str, op: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let host = endpoint.trim_end_matches('/').strip_prefix("http://").expect("a plain-HTTP test endpoint");
    let mut s = std::net::TcpStream::connect(host).expect("the KMS test server answers");
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-amz-json-1.1\r\nX-Amz-Target: \
         TrentService.{op}\r\nAuthorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/kms/aws4_request, \
         SignedHeaders=host, Signature=0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let text = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, text)
}

/// A new symmetric key on the KMS test server at `endpoint` (see [`kms_test_call`]): its key id.
pub fn kms_test_key(endpoint: &str) -> String {
    let (status, text) = kms_test_call(endpoint, "CreateKey", r#"{"Description":"rsm test"}"#);
    assert_eq!(status, 200, "CreateKey: {text}");
    let at = text.find(r#""KeyId": ""#).or_else(|| text.find(r#""KeyId":""#)).expect("a KeyId");
    let rest = &text[at + 8..];
    let start = rest.find('"').unwrap() + 1;
    let len = rest[start..].find('"').unwrap();
    rest[start..start + len].to_string()
}

/// Every file under `dir` (its subdirectories too), sorted: what a filesystem store holds, for tests that
/// look at it without the SDK.
pub fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("a readable directory") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A unique key prefix for one check.
pub fn unique_prefix(name: &str) -> String {
    format!("contract-{name}-{}/", Uuid::random())
}

/// A segment of given batches on disk, with the metadata a broker would give its copy.
#[cfg(feature = "testkit")]
pub struct LogSegment {
    /// Holds the segment's files.
    pub tmp: tempfile::TempDir,
    /// Its remote metadata (a fresh segment id, leader epoch 0 from its first offset).
    pub md: RemoteLogSegmentMetadata,
    /// Its files: the log, empty offset and time indexes (a reader of ours needs none), an empty producer
    /// snapshot and a leader-epoch checkpoint.
    pub data: LogSegmentData,
    /// The log's bytes.
    pub log: Vec<u8>,
}

#[cfg(feature = "testkit")]
impl LogSegment {
    /// The segment of partition `tp` whose `.log` is `log` (v2 batches from `start_offset`), written to a
    /// temporary directory, its metadata timestamped `event_ts`.
    pub fn write(tp: &TopicIdPartition, start_offset: i64, log: Vec<u8>, event_ts: i64) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let last = BatchIter::new(&log, 0, true).map(|b| b.unwrap()).last().expect("at least one batch");
        let file = |ext: &str, bytes: &[u8]| {
            let p = tmp.path().join(segment_file_name(start_offset, ext));
            std::fs::write(&p, bytes).unwrap();
            p
        };
        let data = LogSegmentData {
            log_segment: file("log", &log),
            offset_index: file("index", &[]),
            time_index: file("timeindex", &[]),
            transaction_index: None,
            producer_snapshot_index: file("snapshot", &empty_producer_snapshot()),
            leader_epoch_index: bytes::Bytes::from(leader_epoch_checkpoint(&[(0, start_offset)])),
        };
        let md = RemoteLogSegmentMetadata::new(
            RemoteLogSegmentId::generate_new(tp.clone()),
            start_offset,
            last.last_offset(),
            last.max_timestamp(),
            1,
            event_ts,
            log.len() as i32,
            BTreeMap::from([(0, start_offset)]),
        )
        .unwrap();
        LogSegment { tmp, md, data, log }
    }

    /// Reads the segment back from `rsm` (whose manifest of it is `m`, at least 4 chunks) through every
    /// path: whole, byte ranges inside, across and at the ends of chunks, by offset and by timestamp for
    /// its first, middle and last batches, and `verify`; each compared with the log, failing with `case`.
    pub async fn assert_reads_back(&self, rsm: &TieredStorage, m: &Manifest, case: &str) {
        use crate::rsm::RemoteStorageManager;
        use rsm_contract::collect;
        let (log, md) = (&self.log, &self.md);
        let whole = collect(rsm.fetch_log_segment(md, 0, None).await.unwrap()).await.unwrap();
        assert!(whole == *log, "{case}: whole fetch");
        let c = &m.chunks;
        assert!(c.len() >= 4, "{case}: {} chunks", c.len());
        let ranges = [
            (0, 0),
            (10, 20),
            (c[1].original_position() + 5, c[1].original_position() + 6),
            (c[1].original_position(), c[1].end() - 1),
            (c[1].end() - 100, c[2].original_position() + 100),
            (c[0].original_position() + 4097, c[3].end() + 3),
            (log.len() as u64 - 7, log.len() as u64 - 1),
        ];
        for (a, b) in ranges {
            let got = collect(rsm.fetch_log_segment(md, a as i64, Some(b as i64)).await.unwrap()).await.unwrap();
            assert!(got[..] == log[a as usize..=b as usize], "{case}: range {a}..={b}");
        }
        let batches: Vec<_> = BatchIter::new(log, 0, false).map(|b| b.unwrap()).collect();
        for b in [&batches[0], &batches[batches.len() / 2], &batches[batches.len() - 1]] {
            let p = rsm.position_of_offset(md, b.last_offset()).await.unwrap();
            assert_eq!(p as u64, b.position(), "{case}: by offset {}", b.last_offset());
            let got = collect(rsm.fetch_log_segment(md, p as i64, Some(p as i64 + 5000)).await.unwrap()).await.unwrap();
            let end = (p as usize + 5001).min(log.len());
            assert!(got[..] == log[p as usize..end], "{case}: fetch from offset {}", b.base_offset());
            let t = rsm.position_of_timestamp(md, b.max_timestamp()).await.unwrap();
            assert_eq!(t, Some(b.position()), "{case}: by timestamp {}", b.max_timestamp());
        }
        assert_eq!(rsm.position_of_timestamp(md, i64::MAX).await.unwrap(), None, "{case}");
        let report = rsm.verify(md).await.unwrap();
        assert_eq!((report.chunks, report.bytes), (m.chunks.len(), log.len() as u64), "{case}: verify");
    }
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
        compression: None,
    };
    let dir = generate_partition(&root.join("fixture-0"), &spec).expect("generate fixture partition");
    LocalPartition::open(&dir).expect("open fixture partition")
}

/// Writes a partition of `topic` (directory `<topic>-0` under `root`) with a few closed segments of 16 KiB
/// (600 records in batches of 10, values of `seed`), and returns it opened.
pub fn small_topic_partition(root: &Path, topic: &str, seed: u64) -> LocalPartition {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 16 * 1024,
        records: 600,
        records_per_batch: 10,
        value_bytes: 60,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed,
        compression: None,
    };
    let dir = generate_partition(&root.join(format!("{topic}-0")), &spec).expect("generate the partition");
    LocalPartition::open(&dir).expect("open the partition")
}

/// Generates the backend contract tests for a backend made by `$make` (an async expression giving an
/// `Arc<dyn StorageBackend>`).
#[cfg(feature = "testkit")]
#[macro_export]
macro_rules! backend_contract_tests {
    ($make:expr) => {
        $crate::backend_contract_tests!(@tests $make;
            round_trip, ranges, tails, missing_keys, deletes, bulk_deletes, list, large_object, overwrite,
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

/// Generates the RemoteStorageManager contract tests over `TieredStorage` on a backend made by `$make`, each
/// run in both segment layouts (`segment.layout` `split` and `single`), on a backend made afresh for each.
#[cfg(feature = "testkit")]
#[macro_export]
macro_rules! rsm_contract_tests {
    ($make:expr) => {
        $crate::rsm_contract_tests!(@tests $make;
            copy_then_fetch_everything, fetch_ranges, fetch_by_offset_and_timestamp, copy_twice,
            delete_then_not_found, failed_copy_leaves_no_segment, corrupt_batch_fails_copy,
            bad_positions_are_invalid, corruption_is_never_returned, another_segments_objects_are_refused,
            transforms_round_trip);
    };
    (@tests $make:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                for layout in [$crate::storage::SegmentLayout::Split, $crate::storage::SegmentLayout::Single] {
                    eprintln!("segment.layout {layout:?}");
                    let backend = $make.await;
                    $crate::testkit::rsm_contract::$name(backend, layout).await;
                }
            }
        )*
    };
}
