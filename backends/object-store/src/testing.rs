//! Test support for the cloud crates (feature `testing`): server settings from the environment, and a
//! segment round trip through [`TieredStorage`] that measures real HTTP requests and time.

use crate::{HttpCounts, ObjectStoreBackend};
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::writer::{PartitionSpec, generate_partition};
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::testkit::unique_prefix;
use rsm_core::{
    ErrorKind, RemoteLogSegmentMetadata, RemoteStorageManager, StorageBackend, TieredConfig, TieredStorage, Uuid,
};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Reads the variables `vars` that `script start` exports for the `label` test server (see
/// [`rsm_core::testkit::test_server_vars`]: a missing one fails the test unless skipped locally).
pub fn server_env(label: &str, skip_var: &str, script: &str, vars: &[&str]) -> Option<BTreeMap<String, String>> {
    rsm_core::testkit::test_server_vars(vars, skip_var, &format!("eval \"$({script} start)\"  # the {label} server"))
}

/// [`server_env`], ending the test process with success when the tests are skipped (so every test of
/// the binary is skipped together, and says so once).
pub fn server_env_or_exit(label: &str, skip_var: &str, script: &str, vars: &[&str]) -> BTreeMap<String, String> {
    match server_env(label, skip_var, script, vars) {
        Some(v) => v,
        None => std::process::exit(0),
    }
}

/// What one segment round trip cost.
#[derive(Debug, Clone)]
pub struct SegmentReport {
    /// The backend's name.
    pub label: String,
    /// Size of the segment's log.
    pub log_bytes: u64,
    /// Chunks in its manifest.
    pub chunks: usize,
    /// Part size of multipart uploads.
    pub part_size: usize,
    /// Requests of the copy.
    pub copy_http: HttpCounts,
    /// Wall time of the copy.
    pub copy_time: Duration,
    /// Requests of a 1 MiB fetch with a cold manifest cache (manifest read included).
    pub fetch_1mib_cold_http: HttpCounts,
    /// Wall time of that fetch.
    pub fetch_1mib_cold_time: Duration,
    /// Requests of a 1 MiB fetch with the manifest cached.
    pub fetch_1mib_warm_http: HttpCounts,
    /// Wall time of that fetch.
    pub fetch_1mib_warm_time: Duration,
    /// Requests of a fetch of the whole log (manifest cached).
    pub fetch_all_http: HttpCounts,
    /// Wall time of that fetch.
    pub fetch_all_time: Duration,
    /// Requests of the delete.
    pub delete_http: HttpCounts,
}

impl fmt::Display for SegmentReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = self.log_bytes as f64 / (1 << 20) as f64;
        let rate = |d: Duration| mib / d.as_secs_f64().max(1e-9);
        writeln!(
            f,
            "[{}] segment of {} bytes ({mib:.1} MiB), {} chunks, part size {} MiB",
            self.label,
            self.log_bytes,
            self.chunks,
            self.part_size >> 20
        )?;
        writeln!(
            f,
            "[{}]   copy:             {:>8.3} s ({:.1} MiB/s): {}",
            self.label,
            self.copy_time.as_secs_f64(),
            rate(self.copy_time),
            self.copy_http
        )?;
        writeln!(
            f,
            "[{}]   1 MiB fetch cold: {:>8.3} s: {}",
            self.label,
            self.fetch_1mib_cold_time.as_secs_f64(),
            self.fetch_1mib_cold_http
        )?;
        writeln!(
            f,
            "[{}]   1 MiB fetch warm: {:>8.3} s: {}",
            self.label,
            self.fetch_1mib_warm_time.as_secs_f64(),
            self.fetch_1mib_warm_http
        )?;
        writeln!(
            f,
            "[{}]   whole fetch:      {:>8.3} s ({:.1} MiB/s): {}",
            self.label,
            self.fetch_all_time.as_secs_f64(),
            rate(self.fetch_all_time),
            self.fetch_all_http
        )?;
        write!(f, "[{}]   delete: {}", self.label, self.delete_http)
    }
}

/// Generates a partition whose first closed segment's log is a little under `segment_bytes`.
pub fn segment_partition(root: &std::path::Path, segment_bytes: usize) -> LocalPartition {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes,
        // About 1 KiB a record: enough records for one full segment and part of the next.
        records: (segment_bytes / 900) as u64,
        records_per_batch: 20,
        value_bytes: 1000,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 7,
    };
    let dir = generate_partition(&root.join("seg-0"), &spec).expect("generate partition");
    LocalPartition::open(&dir).expect("open partition")
}

/// Copies, fetches (1 MiB cold, 1 MiB warm, whole) and deletes one generated segment of about
/// `segment_bytes` through [`TieredStorage`] on `backend`, checking every byte, and reports the HTTP
/// requests and wall time of each step. The segment must be larger than the multipart threshold.
pub async fn segment_round_trip(label: &str, backend: Arc<ObjectStoreBackend>, segment_bytes: usize) -> SegmentReport {
    let counter = backend.counter().expect("the backend counts its HTTP requests").clone();
    let tmp = tempfile::tempdir().unwrap();
    let partition = segment_partition(tmp.path(), segment_bytes);
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 1_700_000_000_000).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let log = std::fs::read(&data.log_segment).unwrap();
    let upload = backend.upload_settings();
    assert!(
        log.len() as u64 > upload.multipart_threshold,
        "the segment ({} bytes) must be larger than the multipart threshold ({})",
        log.len(),
        upload.multipart_threshold
    );

    let prefix = unique_prefix(&format!("segment-{label}"));
    let p = props([("key.prefix", prefix.as_str())]);
    let mut r = ConfigReader::new(&p);
    let config = TieredConfig::read(&mut r).unwrap();
    r.finish().unwrap();
    let dynb: Arc<dyn StorageBackend> = backend.clone();
    let rsm = TieredStorage::new(dynb.clone(), config.clone());

    let before = counter.snapshot();
    let t = Instant::now();
    rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let copy_time = t.elapsed();
    let copy_http = counter.snapshot().since(&before);

    let cold = TieredStorage::new(dynb.clone(), config.clone());
    let pos = (log.len() / 2) as i32;
    async fn one_mib(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, pos: i32) -> Vec<u8> {
        let s = rsm.fetch_log_segment(md, pos, Some(pos + (1 << 20) - 1)).await.unwrap();
        collect(s).await.unwrap()
    }
    let before = counter.snapshot();
    let t = Instant::now();
    let got = one_mib(&cold, &md, pos).await;
    let fetch_1mib_cold_time = t.elapsed();
    let fetch_1mib_cold_http = counter.snapshot().since(&before);
    assert!(got == log[pos as usize..pos as usize + (1 << 20)], "1 MiB fetch differs");

    let pos2 = pos / 2;
    let before = counter.snapshot();
    let t = Instant::now();
    let got = one_mib(&cold, &md, pos2).await;
    let fetch_1mib_warm_time = t.elapsed();
    let fetch_1mib_warm_http = counter.snapshot().since(&before);
    assert!(got == log[pos2 as usize..pos2 as usize + (1 << 20)], "1 MiB fetch differs");

    let before = counter.snapshot();
    let t = Instant::now();
    let all = collect(cold.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap();
    let fetch_all_time = t.elapsed();
    let fetch_all_http = counter.snapshot().since(&before);
    assert!(all == log, "the fetched log differs from the file");
    let chunks = cold.manifest(&md).await.unwrap().chunks.len();

    let before = counter.snapshot();
    rsm.delete_log_segment_data(&md).await.unwrap();
    let delete_http = counter.snapshot().since(&before);
    let e = TieredStorage::new(dynb.clone(), config).manifest(&md).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(dynb.list(&prefix).await.unwrap().is_empty(), "objects left after the delete");

    SegmentReport {
        label: label.to_string(),
        log_bytes: log.len() as u64,
        chunks,
        part_size: upload.part_size,
        copy_http,
        copy_time,
        fetch_1mib_cold_http,
        fetch_1mib_cold_time,
        fetch_1mib_warm_http,
        fetch_1mib_warm_time,
        fetch_all_http,
        fetch_all_time,
        delete_http,
    }
}
