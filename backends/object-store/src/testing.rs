//! Test support for the cloud crates (feature `testing`): a [`TestServer`] (the settings of a crate's
//! emulator from the variables its start script exports, and backends on it), the checks every cloud crate
//! runs on its server ([`cloud_contract_tests!`](crate::cloud_contract_tests), [`TestServer::url_round_trip`],
//! [`TestServer::segment_round_trip`]), and a segment round trip through [`TieredStorage`] that measures
//! real HTTP requests and time.

use crate::backend::ObjectStoreBackend;
use crate::cloud::CloudStore;
use crate::cloud::open_url;
use rsm_core::backend::{CountSnapshot, Op};
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::testkit::unique_prefix;
use rsm_core::{
    Error, ErrorKind, RemoteLogSegmentMetadata, RemoteStorageManager, StorageBackend, TieredConfig, TieredStorage, Uuid,
};
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
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

/// Where a setting of a [`TestServer`]'s backend gets its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The start script's variable `RSM_TEST_{LABEL}_{name}` (`Var("REGION")`: `RSM_TEST_S3_REGION`).
    Var(&'static str),
    /// This value.
    Value(&'static str),
}

/// The emulator a cloud crate's tests run against, for the settings type `C`.
///
/// Its start script exports `RSM_TEST_{LABEL}_ENDPOINT` and `RSM_TEST_{LABEL}_{CONTAINER}` (`LABEL` and
/// `CONTAINER` are the [`CloudKind`](crate::CloudKind)'s label and container word in capitals:
/// `RSM_TEST_S3_BUCKET`, `RSM_TEST_AZURE_CONTAINER`), which become the endpoint and bucket or container
/// settings, and whatever else [`Source::Var`] names. Without them a test fails, naming the script,
/// unless `RSM_SKIP_{LABEL}=1` outside CI: then the test binary ends, skipped.
pub struct TestServer<C> {
    script: &'static str,
    part_size: &'static str,
    settings: &'static [(&'static str, Source)],
    config: PhantomData<fn() -> C>,
}

impl<C: CloudStore> TestServer<C> {
    /// The server that `script start` starts; `part_size` is the setting of the upload part size (5 MiB
    /// for [`Self::backend`]); `settings` are the settings beyond the endpoint and the container.
    pub const fn new(
        script: &'static str,
        part_size: &'static str,
        settings: &'static [(&'static str, Source)],
    ) -> Self {
        TestServer { script, part_size, settings, config: PhantomData }
    }

    /// The full name of the start script's variable `RSM_TEST_{LABEL}_{name}`.
    pub fn var(&self, name: &str) -> String {
        format!("RSM_TEST_{}_{name}", C::KIND.label.to_uppercase())
    }

    /// The settings of every backend on the server, each with the full name of its variable, or its value.
    fn sources(&self) -> Vec<(String, std::result::Result<String, &'static str>)> {
        let kind = C::KIND;
        let mut v = vec![
            (format!("{}.endpoint.url", kind.name), Ok(self.var("ENDPOINT"))),
            (kind.container_setting(), Ok(self.var(&kind.container.to_uppercase()))),
        ];
        v.extend(self.settings.iter().map(|&(k, s)| match s {
            Source::Var(n) => (k.to_string(), Ok(self.var(n))),
            Source::Value(x) => (k.to_string(), Err(x)),
        }));
        v
    }

    /// The server's variables, by full name (the test process ends as skipped when allowed and they are
    /// missing).
    pub fn env(&self) -> BTreeMap<String, String> {
        let vars: Vec<String> = self.sources().into_iter().filter_map(|(_, s)| s.ok()).collect();
        let vars: Vec<&str> = vars.iter().map(String::as_str).collect();
        let label = C::KIND.label;
        server_env_or_exit(label, &format!("RSM_SKIP_{}", label.to_uppercase()), self.script, &vars)
    }

    /// Settings for the server, with `extra` on top.
    pub fn settings(&self, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let env = self.env();
        let mut p: BTreeMap<String, String> = self
            .sources()
            .into_iter()
            .map(|(k, s)| match s {
                Ok(var) => (k, env[&var].clone()),
                Err(value) => (k, value.to_string()),
            })
            .collect();
        p.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        p
    }

    /// The settings read from `settings` (every key checked), and a backend built from them.
    pub fn config_and_backend(&self, settings: &BTreeMap<String, String>) -> (C, ObjectStoreBackend) {
        let mut r = ConfigReader::new(settings);
        let config = C::read(&mut r, None).unwrap();
        r.finish().unwrap();
        let backend = config.build().unwrap();
        (config, backend)
    }

    /// A backend on the server built from `settings`, every key checked.
    pub fn backend_with(&self, settings: &BTreeMap<String, String>) -> Arc<ObjectStoreBackend> {
        Arc::new(self.config_and_backend(settings).1)
    }

    /// A backend on the server with 5 MiB parts (so the contract suites' large objects go in several
    /// parts) and 3 retries.
    pub fn backend(&self) -> Arc<ObjectStoreBackend> {
        let retries = format!("{}.max.retries", C::KIND.name);
        self.backend_with(&self.settings(&[(self.part_size, "5242880"), (&retries, "3")]))
    }

    /// A store URL `{scheme}://{container}/url-test/{uuid}/` opens the server's container with the other
    /// settings (and `extra`) at a prefix of its own: an object is put, read back and listed, `check`
    /// looks at it (`check(backend, key)`), and it is deleted.
    pub async fn url_round_trip(&self, extra: &[(&str, &str)], check: impl AsyncFnOnce(&ObjectStoreBackend, &str)) {
        let kind = C::KIND;
        let mut p = self.settings(extra);
        let container = p.remove(&kind.container_setting()).expect("the container setting");
        let url = format!("{}://{container}/url-test/{}/", kind.scheme, Uuid::random());
        let mut r = ConfigReader::new(&p);
        let (b, prefix) = open_url::<C>(&url, &mut r).unwrap();
        r.finish().unwrap();
        assert!(prefix.starts_with("url-test/") && prefix.ends_with('/'), "{prefix}");
        let key = format!("{prefix}obj");
        b.put_bytes(&key, bytes::Bytes::from_static(b"hello")).await.unwrap();
        assert_eq!(&b.get_range(&key, 0..u64::MAX).await.unwrap()[..], b"hello");
        assert_eq!(b.list(&prefix).await.unwrap().len(), 1);
        println!("{}", b.http_counts().unwrap());
        check(&b, &key).await;
        b.delete(&key).await.unwrap();
        assert!(b.list(&prefix).await.unwrap().is_empty());
    }

    /// [`segment_round_trip`] of a 64 MiB segment on a backend with the default settings (so its log goes
    /// in parts), printing the report and checking the requests of the copy by method.
    pub async fn segment_round_trip(&self, emulator: &str, copy_requests: &[(Op, u64)]) -> SegmentReport {
        self.segment_round_trip_in(emulator, "split", copy_requests).await
    }

    /// [`TestServer::segment_round_trip`] with the segment copied in the layout `layout`
    /// (`segment.layout`: `split` or `single`).
    pub async fn segment_round_trip_in(
        &self,
        emulator: &str,
        layout: &str,
        copy_requests: &[(Op, u64)],
    ) -> SegmentReport {
        let b = self.backend_with(&self.settings(&[]));
        let label = format!("{}/{emulator}/{layout}", C::KIND.name);
        let report = segment_round_trip(&label, b, 64 << 20, layout).await;
        println!("{report}");
        let got: Vec<(Op, u64)> = copy_requests.iter().map(|(m, _)| (*m, report.copy_http.get(*m).requests)).collect();
        assert_eq!(got, copy_requests, "{}", report.copy_http);
        report
    }
}

/// The constructors of `C` check its settings, no server needed: the bucket or container setting is
/// required; an unknown setting (`typo`) fails the reader's `finish`; and a store URL
/// `{scheme}://bkt/some/prefix` gives the container (shown in the backend's `Debug`) and the prefix
/// `some/prefix/`. `minimal` are settings that, with the container, build a backend.
pub fn constructors_check_settings<C: CloudStore>(minimal: &[(&str, &str)], typo: &str) {
    let container = C::KIND.container_setting();
    let p = props(minimal.iter().copied());
    let e = crate::cloud::from_config::<C>(&mut ConfigReader::new(&p)).unwrap_err();
    assert!(e.to_string().contains(&format!("`{container}`")), "{e}");

    let mut r = ConfigReader::new(&p);
    let (b, prefix) = crate::cloud::from_url::<C>(&format!("{}://bkt/some/prefix", C::KIND.scheme), &mut r).unwrap();
    r.finish().unwrap();
    assert_eq!(prefix, "some/prefix/");
    assert!(format!("{b:?}").contains("bkt"), "{b:?}");

    let mut p = p;
    p.insert(container, "c".to_string());
    p.insert(typo.to_string(), "x".to_string());
    let mut r = ConfigReader::new(&p);
    crate::cloud::from_config::<C>(&mut r).unwrap();
    let e = r.finish().unwrap_err();
    assert!(e.to_string().contains(&format!("`{typo}`")), "{e}");
}

/// Fails naming `what` if `text` shows any of `secrets`.
pub fn assert_hidden(what: &str, text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "{what} shows a secret ({s}): {text}");
    }
}

/// All an error shows: its message, its full message (the causes) and its `Debug`.
pub fn error_text(e: &Error) -> String {
    format!("{e} | {} | {e:?}", e.full_message())
}

/// Generates the backend and RemoteStorageManager contract suites (modules `backend` and `rsm`) on the
/// backend `$backend` gives (an `Arc<ObjectStoreBackend>`, made again for each test):
/// `rsm_backend_object_store::cloud_contract_tests!(common::SERVER.backend());`
#[macro_export]
macro_rules! cloud_contract_tests {
    ($backend:expr) => {
        async fn make() -> $crate::__private::Arc<dyn $crate::__private::StorageBackend> {
            $backend
        }

        mod backend {
            $crate::__private::rsm_core::backend_contract_tests!(super::make());
        }

        mod rsm {
            $crate::__private::rsm_core::rsm_contract_tests!(super::make());
        }
    };
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
    pub copy_http: CountSnapshot,
    /// Wall time of the copy.
    pub copy_time: Duration,
    /// Requests of a 1 MiB fetch with a cold manifest cache (manifest read included).
    pub fetch_1mib_cold_http: CountSnapshot,
    /// Wall time of that fetch.
    pub fetch_1mib_cold_time: Duration,
    /// Requests of a 1 MiB fetch with the manifest cached.
    pub fetch_1mib_warm_http: CountSnapshot,
    /// Wall time of that fetch.
    pub fetch_1mib_warm_time: Duration,
    /// Requests of a fetch of the whole log (manifest cached).
    pub fetch_all_http: CountSnapshot,
    /// Wall time of that fetch.
    pub fetch_all_time: Duration,
    /// Requests of the delete.
    pub delete_http: CountSnapshot,
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
        compression: None,
    };
    let dir = generate_partition(&root.join("seg-0"), &spec).expect("generate partition");
    LocalPartition::open(&dir).expect("open partition")
}

/// Runs `step` on `backend`, returning its output, its wall time and the HTTP requests it made.
async fn measured<T>(backend: &ObjectStoreBackend, step: impl Future<Output = T>) -> (T, Duration, CountSnapshot) {
    let counts = || backend.http_counts().expect("the backend counts its HTTP requests");
    let before = counts();
    let t = Instant::now();
    let out = step.await;
    (out, t.elapsed(), counts().since(&before))
}

/// Copies, fetches (1 MiB cold, 1 MiB warm, whole) and deletes one generated segment of about
/// `segment_bytes` through [`TieredStorage`] on `backend`, checking every byte, and reports the HTTP
/// requests and wall time of each step. The segment must be larger than the multipart threshold.
/// `layout` is the `segment.layout` it is copied in.
pub async fn segment_round_trip(
    label: &str,
    backend: Arc<ObjectStoreBackend>,
    segment_bytes: usize,
    layout: &str,
) -> SegmentReport {
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
    let p = props([("key.prefix", prefix.as_str()), ("segment.layout", layout)]);
    let mut r = ConfigReader::new(&p);
    let config = TieredConfig::read(&mut r).unwrap();
    r.finish().unwrap();
    let dynb: Arc<dyn StorageBackend> = backend.clone();
    let rsm = TieredStorage::new(dynb.clone(), config.clone());

    let (_, copy_time, copy_http) =
        measured(&backend, async { rsm.copy_log_segment_data(&md, &data).await.unwrap() }).await;

    let cold = TieredStorage::new(dynb.clone(), config.clone());
    let pos = (log.len() / 2) as i64;
    async fn one_mib(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, pos: i64) -> Vec<u8> {
        let s = rsm.fetch_log_segment(md, pos, Some(pos + (1 << 20) - 1)).await.unwrap();
        collect(s).await.unwrap()
    }
    let (got, fetch_1mib_cold_time, fetch_1mib_cold_http) = measured(&backend, one_mib(&cold, &md, pos)).await;
    assert!(got == log[pos as usize..pos as usize + (1 << 20)], "1 MiB fetch differs");

    let pos2 = pos / 2;
    let (got, fetch_1mib_warm_time, fetch_1mib_warm_http) = measured(&backend, one_mib(&cold, &md, pos2)).await;
    assert!(got == log[pos2 as usize..pos2 as usize + (1 << 20)], "1 MiB fetch differs");

    let (all, fetch_all_time, fetch_all_http) =
        measured(&backend, async { collect(cold.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap() }).await;
    assert!(all == log, "the fetched log differs from the file");
    let chunks = cold.manifest(&md).await.unwrap().chunks.len();

    let ((), _, delete_http) = measured(&backend, async { rsm.delete_log_segment_data(&md).await.unwrap() }).await;
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
