//! What the store fault tests (`store_faults_s3.rs`, `store_faults_azure.rs`, `store_faults_gcs.rs`) share: one
//! suite over every store, as object_store's own tests are. A store of its own (a fresh key prefix) on the
//! store's test server behind a fault-injecting proxy ([`Bench`]), the segments the tests copy, each scenario
//! written once for the three stores ([`Cloud`], whose tables say how each store answers and what selects its
//! uploads and deletes), and [`cloud_fault_tests!`], which defines the suite's tests in the test file that
//! calls it: each file calls it with its store (and documents its store's figures). Include it as `faults`,
//! beside `mod proxy;`.

// Each test binary runs the suite on one store (the others' variants unused), and prints the figures
// returned rather than reading each of them.
#![allow(dead_code)]

use crate::proxy::{Answer, CountingProxy, Fault, Seen, by_fault};
use rsm_core::format::partition::LocalPartition;
use rsm_core::model::Uuid;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::testkit::{s3_test_server, test_server_vars};
use rsm_core::{IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use rsm_facade::{CACHE_METRICS, Store};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The longest any failing call below may take: a liveness bound (the cloud clients' own timeouts are
/// 30 s), not a speed figure.
pub const LIVENESS: Duration = Duration::from_secs(10);

/// S3's throttling error, as [`Fault::SlowDown`] answers it: `503 Slow Down` with the XML body
/// `<Code>SlowDown</Code>`.
pub const S3_SLOW_DOWN: Answer = Answer {
    status: "503 Slow Down",
    headers: "x-amz-request-id: rsm-test-proxy\r\n",
    content_type: "application/xml",
    body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your \
           request rate.</Message><RequestId>rsm-test-proxy</RequestId></Error>",
};

/// The error code of a throttling answer's body (S3's and Azure's XML `<Code>`, GCS's JSON `"reason"`): what
/// the error of a call the retry budget did not retry names.
pub fn error_code(answer: &Answer) -> &'static str {
    let body = answer.body;
    let (open, close) = if body.contains("<Code>") { ("<Code>", "</Code>") } else { ("\"reason\":\"", "\"") };
    let start = body.find(open).expect("an error code") + open.len();
    &body[start..start + body[start..].find(close).expect("the code's end")]
}

/// The store under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cloud {
    /// S3 on moto (`tools/servers/moto.sh`), SigV4 signed.
    S3,
    /// Azure Blob on Azurite (`tools/servers/azurite.sh`), shared-key signed.
    Azure,
    /// GCS on fake-gcs-server (`tools/servers/fake-gcs.sh`), anonymous.
    Gcs,
}

impl Cloud {
    /// The prefix of its client settings (`s3.max.retries`, `azure.max.retries`, …).
    pub fn prefix(self) -> &'static str {
        match self {
            Cloud::S3 => "s3",
            Cloud::Azure => "azure",
            Cloud::Gcs => "gcs",
        }
    }

    /// Its client setting `name` (`max.retries` → `azure.max.retries`).
    pub fn key(self, name: &str) -> String {
        format!("{}.{name}", self.prefix())
    }

    /// The test server's variables, as [`test_server_vars`] gives them (its skip variable skips locally).
    fn server(self) -> Option<BTreeMap<String, String>> {
        match self {
            Cloud::S3 => s3_test_server(),
            Cloud::Azure => test_server_vars(
                &[
                    "RSM_TEST_AZURE_ENDPOINT",
                    "RSM_TEST_AZURE_ACCOUNT",
                    "RSM_TEST_AZURE_KEY",
                    "RSM_TEST_AZURE_CONTAINER",
                ],
                "RSM_SKIP_AZURE",
                "eval \"$(tools/servers/azurite.sh start)\"",
            ),
            Cloud::Gcs => test_server_vars(
                &["RSM_TEST_GCS_ENDPOINT", "RSM_TEST_GCS_BUCKET"],
                "RSM_SKIP_GCS",
                "eval \"$(tools/servers/fake-gcs.sh start)\"",
            ),
        }
    }

    /// The store's throttling answers, as it answers them: S3 `503 Slow Down` ([`S3_SLOW_DOWN`]), Azure `503
    /// ServerBusy` (XML), GCS `429 rateLimitExceeded` and `503 backendError` (JSON).
    pub fn throttles(self) -> &'static [Answer] {
        match self {
            Cloud::S3 => &[S3_SLOW_DOWN],
            Cloud::Azure => &[Answer::AZURE_SERVER_BUSY],
            Cloud::Gcs => &[Answer::GCS_RATE_LIMIT, Answer::GCS_BACKEND_ERROR],
        }
    }

    /// What selects the store's upload requests in the proxy: S3's and Azure's `PUT`s (an object, a blob, a
    /// block), GCS's JSON API uploads (`POST /upload/storage/v1/b/…?uploadType=media`, the backend's own
    /// requests and retries, not object_store's).
    pub fn uploads(self) -> &'static [&'static str] {
        match self {
            Cloud::S3 | Cloud::Azure => &["PUT "],
            Cloud::Gcs => &["uploadType="],
        }
    }

    /// What selects the store's delete requests in the proxy ([`CountingProxy::set_fault_on`]): S3's batch
    /// (`POST /bucket?delete`), Azure's blob batch (`POST …?restype=container&comp=batch`) and single
    /// `DELETE`s, GCS's `DELETE`s (one key each: GCS has no batch delete).
    pub fn deletes(self) -> &'static [&'static str] {
        match self {
            Cloud::S3 => &["?delete"],
            Cloud::Azure => &["comp=batch", "DELETE "],
            Cloud::Gcs => &["DELETE "],
        }
    }
}

/// A store of its own (a fresh key prefix) on the test server behind a proxy of its own.
pub struct Bench {
    pub cloud: Cloud,
    v: BTreeMap<String, String>,
    pub proxy: CountingProxy,
    pub url: String,
}

impl Bench {
    /// `None` when the server is absent and its skip variable says so (else that fails loudly).
    pub fn new(cloud: Cloud, name: &str) -> Option<Bench> {
        let v = cloud.server()?;
        let (bucket, scheme) = match cloud {
            Cloud::S3 => ("RSM_TEST_S3_BUCKET", "s3"),
            Cloud::Azure => ("RSM_TEST_AZURE_CONTAINER", "az"),
            Cloud::Gcs => ("RSM_TEST_GCS_BUCKET", "gs"),
        };
        let url = format!("{scheme}://{}/store-faults-{name}-{}/", v[bucket], Uuid::random());
        let proxy = Bench::proxy_to(cloud, &v);
        Some(Bench { cloud, v, proxy, url })
    }

    /// A proxy of its own in front of the same server, to the same store (the same key prefix): for cases
    /// that run at once on the same objects, each faulting its own requests.
    pub fn beside(&self) -> Bench {
        let proxy = Bench::proxy_to(self.cloud, &self.v);
        Bench { cloud: self.cloud, v: self.v.clone(), proxy, url: self.url.clone() }
    }

    /// A proxy in front of the server of `cloud` whose variables are `v`.
    fn proxy_to(cloud: Cloud, v: &BTreeMap<String, String>) -> CountingProxy {
        match cloud {
            // SigV4 signs the Host: the proxy passes the client's on.
            Cloud::S3 => CountingProxy::in_front_of(&v["RSM_TEST_S3_ENDPOINT"]),
            // Azurite's endpoint names the account in its path; the client signs no Host.
            Cloud::Azure => CountingProxy::in_front_of(&v["RSM_TEST_AZURE_ENDPOINT"]),
            // fake-gcs-server serves its XML API (reads, listings, deletes) only to its public host.
            Cloud::Gcs => CountingProxy::in_front_of_as_server(&v["RSM_TEST_GCS_ENDPOINT"]),
        }
    }

    /// A store opened afresh (empty caches, its own breaker) with `extra` settings.
    pub fn open(&self, extra: &[(&str, &str)]) -> Store {
        self.open_as(extra, true)
    }

    /// A store opened afresh with `extra` settings, with the client's waits after throttled answers
    /// shortened (`short_throttle_waits`, see below) or at their defaults.
    pub fn open_as(&self, extra: &[(&str, &str)], short_throttle_waits: bool) -> Store {
        let settings = match self.cloud {
            Cloud::S3 => vec![
                ("s3.endpoint.url", self.proxy.url_for(&self.v["RSM_TEST_S3_ENDPOINT"])),
                ("s3.region", self.v["RSM_TEST_S3_REGION"].clone()),
                ("aws.access.key.id", self.v["RSM_TEST_S3_ACCESS_KEY"].clone()),
                ("aws.secret.access.key", self.v["RSM_TEST_S3_SECRET_KEY"].clone()),
            ],
            Cloud::Azure => vec![
                ("azure.endpoint.url", self.proxy.url_for(&self.v["RSM_TEST_AZURE_ENDPOINT"])),
                ("azure.account.name", self.v["RSM_TEST_AZURE_ACCOUNT"].clone()),
                ("azure.account.key", self.v["RSM_TEST_AZURE_KEY"].clone()),
            ],
            Cloud::Gcs => vec![
                ("gcs.endpoint.url", self.proxy.url_for(&self.v["RSM_TEST_GCS_ENDPOINT"])),
                ("gcs.credentials.default", "false".to_string()),
            ],
        };
        let mut settings: BTreeMap<String, String> = settings.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        // The pause a throttled answer sets before the store's next request: 50 ms doubled for each throttled
        // answer in a row, at most 100 ms, pinned: these tests count requests and time retries whatever the
        // defaults (50 ms, up to 200 ms; see [`a_store_that_answers_again_is_asked_again`] for what they do).
        if short_throttle_waits {
            settings.insert(self.cloud.key("throttle.backoff.ms"), "50".to_string());
            settings.insert(self.cloud.key("throttle.backoff.max.ms"), "100".to_string());
        }
        settings.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Store::open(&self.url, &settings).unwrap()
    }

    /// Runs `f`, and returns what it returned, how long it took and how many requests the proxy received
    /// meanwhile.
    pub fn timed<T>(&self, f: impl FnOnce() -> T) -> (T, Duration, usize) {
        let (before, t) = (self.proxy.received(), Instant::now());
        let r = f();
        (r, t.elapsed(), self.proxy.received() - before)
    }

    /// The requests received from `from` on, each as `METHOD last-path-part fault`.
    pub fn sent_since(&self, from: usize) -> Vec<String> {
        self.proxy.seen()[from..].iter().map(describe).collect()
    }

    /// Whether the proxy received, from request `from` on, a request that `pick` picks, waiting a second for it
    /// (a request may reach the proxy after its call gave up, on a loaded machine).
    pub fn received_since(&self, from: usize, pick: impl Fn(&Seen) -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            if self.proxy.seen()[from..].iter().any(&pick) {
                return true;
            }
            if Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The objects of segment `s` in the store (by `store`'s listing).
    pub fn objects_of(&self, store: &Store, s: &Segment) -> Vec<String> {
        let (objects, _) = store.list_objects().unwrap();
        objects.into_iter().map(|o| o.key).filter(|k| k.contains(&s.id())).collect()
    }
}

/// `target` percent-decoded (object_store's GCS client encodes every character of a key but letters and
/// digits: `%2D` for `-`, `%2E` for `.`).
pub fn decoded(target: &str) -> String {
    let (mut out, mut rest) = (Vec::new(), target.as_bytes());
    while let Some((&c, tail)) = rest.split_first() {
        let hex = tail.get(..2).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match hex {
            Some(byte) if c == b'%' => {
                out.push(byte);
                rest = &tail[2..];
            }
            _ => {
                out.push(c);
                rest = tail;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A request as `METHOD last-path-part (range) fault`, for the figures printed.
pub fn describe(x: &Seen) -> String {
    let target = decoded(&x.target);
    let name = target.rsplit('/').next().unwrap_or_default();
    let fault = format!("{:?}", x.fault);
    let fault = fault.split([' ', '(', '{']).next().unwrap_or_default();
    match &x.range {
        Some(r) => format!("{} {name} {r} {fault}", x.method),
        None => format!("{} {name} {fault}", x.method),
    }
}

/// A closed segment of a partition: its metadata, its files and its log's bytes.
pub struct Segment {
    pub md: RemoteLogSegmentMetadata,
    pub data: LogSegmentData,
    pub log: Vec<u8>,
}

impl Segment {
    pub fn id(&self) -> String {
        self.md.remote_log_segment_id.id.to_string()
    }

    pub fn offset_index(&self) -> Vec<u8> {
        std::fs::read(&self.data.offset_index).unwrap()
    }
}

/// The closed segments of `p`.
fn segments(p: &LocalPartition) -> Vec<Segment> {
    p.closed_segments()
        .iter()
        .map(|s| {
            let md = p.segment_metadata(s, 1, 1_700_000_000_000).unwrap();
            let data = p.segment_data(s).unwrap();
            let log = std::fs::read(&data.log_segment).unwrap();
            Segment { md, data, log }
        })
        .collect()
}

/// A partition of small segments (16 KiB: one chunk each).
pub fn small(dir: &std::path::Path) -> Vec<Segment> {
    let s = segments(&rsm_core::testkit::small_topic_partition(dir, "faults", 1));
    assert!(s.len() >= 2, "{} closed segments", s.len());
    s
}

/// A partition of segments of a few 64 KiB chunks each.
pub fn chunked(dir: &std::path::Path) -> Vec<Segment> {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 300 << 10,
        records: 2500,
        records_per_batch: 8,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 11,
        compression: None,
    };
    let p = LocalPartition::open(&generate_partition(&dir.join("chunked-0"), &spec).unwrap()).unwrap();
    let s = segments(&p);
    assert!(s[0].log.len() > 3 * 65536, "{} bytes", s[0].log.len());
    s
}

/// The whole of a fetch of `s` from `start`, or the first error (of the open or of a read).
pub fn read_all(store: &Store, s: &Segment, start: i32, end: Option<i32>) -> rsm_core::Result<Vec<u8>> {
    let mut r = store.fetch(&s.md, start, end)?;
    let mut out = Vec::new();
    while let Some(b) = r.next_bytes()? {
        out.extend_from_slice(&b);
    }
    Ok(out)
}

/// The value of the metric `name` of [`Store::cache_metrics`].
pub fn metric(store: &Store, name: &str) -> u64 {
    let i = CACHE_METRICS.iter().position(|n| *n == name).unwrap_or_else(|| panic!("no metric {name}"));
    store.cache_metrics()[i]
}

/// The breaker's state, opening count and refused calls.
pub fn breaker(store: &Store) -> (u64, u64, u64) {
    (
        metric(store, "store-breaker-state"),
        metric(store, "store-breaker-opened"),
        metric(store, "store-breaker-refused"),
    )
}

/// Checks that a fetch failed on `fetch.timeout.ms` (300 ms), retriable, naming segment `s`, in time.
fn timed_out(what: &str, r: rsm_core::Result<impl std::fmt::Debug>, s: &Segment, took: Duration) {
    let e = r.expect_err(what);
    assert!(e.is_transient(), "{what}: a timeout is retriable: {e}");
    let msg = e.to_string();
    assert!(msg.contains("fetch.timeout.ms (300 ms)") && msg.contains(&s.id()), "{what}: {msg}");
    assert!(took < LIVENESS, "{what}: waited {took:?}");
}

/// What [`fetch_gives_up_within_fetch_timeout`] saw in one case: times and requests of the open of a
/// cold store, of a piece of the log's bytes, of an index.
#[derive(Debug)]
pub struct FetchFigures {
    pub case: &'static str,
    pub open: (Duration, usize),
    pub bytes: (Duration, usize),
    pub index: (Duration, usize),
}

/// Each wait of a fetch is bounded by `fetch.timeout.ms` (300) on a store that does not answer (a black
/// hole), answers late, or answers too slowly, at each of its steps: the open of a cold store (its
/// manifest), a piece of the log's bytes, an index. A store slow but within the bound is read whole. Once
/// the store answers again, the same reads give the right bytes. The cases run at once, each on a proxy and
/// a key prefix of its own. Returns the figures of each case.
pub fn fetch_gives_up_within_fetch_timeout(cloud: Cloud) -> Vec<FetchFigures> {
    // (case, fault, whether each step must time out)
    let cases = [
        ("black hole", Fault::Blackhole, true),
        ("first byte after 3 s", Fault::Slow { first_byte_ms: 3_000, bytes_per_sec: 1 << 20 }, true),
        ("512 B/s", Fault::Slow { first_byte_ms: 0, bytes_per_sec: 512 }, true),
        ("slow, in time", Fault::Slow { first_byte_ms: 20, bytes_per_sec: 4 << 20 }, false),
    ];
    std::thread::scope(|scope| {
        let runs = cases.map(|case| scope.spawn(move || fetch_case(cloud, case)));
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    })
}

/// One case of [`fetch_gives_up_within_fetch_timeout`].
fn fetch_case(cloud: Cloud, (case, fault, times_out): (&'static str, Fault, bool)) -> Option<FetchFigures> {
    let b = Bench::new(cloud, "fetch")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let (s0, s1) = (&segs[0], &segs[1]);
    let settings = [("fetch.timeout.ms", "300")];
    let warm = b.open(&settings);
    for s in &segs {
        warm.copy(&s.md, &s.data).unwrap();
    }
    assert!(read_all(&warm, s0, 0, None).unwrap() == s0.log, "{case}: a store that answers serves the segment");

    b.proxy.set_fault(fault);
    let from = b.proxy.received();
    // The open, by a store opened since: its manifest cache is empty.
    let cold = b.open(&settings);
    let (open, took_open, sent_open) = b.timed(|| read_all(&cold, s1, 0, None));
    // The log's bytes, the manifest already held: the open sends nothing, the first piece waits.
    let (bytes, took_bytes, sent_bytes) = b.timed(|| {
        let mut r = warm.fetch(&s0.md, 0, None).expect("the open reads the manifest held in memory");
        let mut buf = vec![0u8; 4096];
        let first = r.read_into(&mut buf);
        let after = first.is_err().then(|| r.read_into(&mut buf));
        (first, after)
    });
    let (index, took_index, sent_index) = b.timed(|| warm.fetch_index(&s0.md, IndexType::Offset));
    println!(
        "{cloud:?} {case}: open {took_open:?} ({sent_open} requests), log bytes {took_bytes:?} ({sent_bytes}), \
         index {took_index:?} ({sent_index})"
    );
    // Each step sends one request (on a loaded machine it may reach the proxy during the next step), and
    // none is retried: the client's own attempt timeout is 30 s.
    let sent = sent_open + sent_bytes + sent_index;
    assert!(sent >= 1, "{case}: the store was asked");
    // Each step asked the store: the open for the segment's manifest, the bytes for its log, the index
    // for its indexes.
    let (s0_id, s1_id) = (s0.id(), s1.id());
    assert!(b.received_since(from, |x| decoded(&x.target).contains(&s1_id)), "{case}: the open asked the store");
    let asked = |suffix: &str| {
        b.received_since(from, |x| {
            let target = decoded(&x.target);
            target.contains(&s0_id) && target.contains(suffix)
        })
    };
    assert!(asked(".log"), "{case}: the log's bytes were asked for");
    assert!(asked(".indexes"), "{case}: the index was asked for");
    if times_out {
        assert!(sent <= 3, "{case}: one request a step: {sent}");
        timed_out(&format!("{case}: open"), open, s1, took_open);
        timed_out(&format!("{case}: log bytes"), bytes.0, s0, took_bytes);
        assert_eq!(bytes.1.unwrap().unwrap(), 0, "{case}: the failed reader has ended");
        timed_out(&format!("{case}: index"), index, s0, took_index);
    } else {
        assert!(open.unwrap() == s1.log, "{case}: the open");
        assert!(bytes.0.unwrap() > 0, "{case}: log bytes");
        assert_eq!(index.unwrap().as_ref(), s0.offset_index(), "{case}: index");
    }

    b.proxy.set_fault(Fault::Pass);
    assert!(read_all(&cold, s1, 0, None).unwrap() == s1.log, "{case}: the open, the store back");
    assert!(read_all(&warm, s0, 0, None).unwrap() == s0.log, "{case}: log bytes, the store back");
    assert_eq!(warm.fetch_index(&s0.md, IndexType::Offset).unwrap().as_ref(), s0.offset_index(), "{case}");
    println!("{cloud:?} {case}: requests by fault {:?}", by_fault(&b.proxy.seen()));
    Some(FetchFigures {
        case,
        open: (took_open, sent_open),
        bytes: (took_bytes, sent_bytes),
        index: (took_index, sent_index),
    })
}

/// With `store.breaker.failures` 3 and `<p>.max.retries` 1, a store that refuses connections, or answers
/// `answer` (its throttling), opens the breaker after three failed calls (each after its retry); calls
/// then fail with the breaker's error, held until their `fetch.timeout.ms` (600 here) rather than at once
/// (Kafka retries a failed remote fetch at once), and send no request at all, nor open a connection; once
/// the store is back and `store.breaker.open.ms` has passed, one call probes, and succeeds, and the breaker
/// closes. Returns the requests each of the three failed calls sent.
pub fn breaker_opens_and_refuses_without_requests(cloud: Cloud, case: &str, fault: Fault) -> Option<Vec<usize>> {
    // Longer than a refused call is held (from the breaker's opening on), so that none of them probes.
    const OPEN_MS: u64 = 1_500;
    const FETCH_TIMEOUT_MS: u64 = 600;
    let b = Bench::new(cloud, "breaker")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let retries = cloud.key("max.retries");
    let store = b.open(&[
        ("store.breaker.failures", "3"),
        ("store.breaker.open.ms", &OPEN_MS.to_string()),
        (&retries, "1"),
        // Long enough for the client's answer after its retry (~0.1 s), so that each failure is the store's
        // own; a refused call is held this long.
        ("fetch.timeout.ms", &FETCH_TIMEOUT_MS.to_string()),
    ]);
    for s in &segs {
        store.copy(&s.md, &s.data).unwrap();
    }
    store.manifest(&s0.md).unwrap();
    assert_eq!(breaker(&store), (0, 0, 0), "{case}");

    b.proxy.set_fault(fault);
    let mut sent = Vec::new();
    for i in 1..=3 {
        let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        let e = r.expect_err(case);
        assert!(e.is_transient(), "{case}: {e}");
        assert!(!e.to_string().contains("is failing"), "{case} {i}: the store's own failure: {e}");
        assert!(took < LIVENESS, "{case} {i}: {took:?}");
        if i == 1 {
            println!("{cloud:?} {case}: a failed call ({took:?}): {}", e.full_message());
        }
        sent.push(n);
        let want = if i < 3 { (0, 0, 0) } else { (1, 1, 0) };
        assert_eq!(breaker(&store), want, "{case}: after {i} failed calls: {e}");
    }
    let opened_at = Instant::now();

    // Open: 6 calls at once (index fetches, a fetch's bytes) fail with the breaker's error, each held until
    // its deadline, and the store sees nothing of them (no request, no connection).
    let (received, connections) = (b.proxy.received(), b.proxy.connections());
    let refusals: Vec<(Duration, rsm_core::Error)> = std::thread::scope(|scope| {
        let mut calls: Vec<_> = (0..5)
            .map(|_| {
                scope.spawn(|| {
                    let t = Instant::now();
                    let e = store.fetch_index(&s0.md, IndexType::Offset).expect_err(case);
                    (t.elapsed(), e)
                })
            })
            .collect();
        calls.push(scope.spawn(|| {
            let t = Instant::now();
            let e = read_all(&store, &segs[1], 0, None).expect_err(case);
            (t.elapsed(), e)
        }));
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let held: Vec<Duration> = refusals.iter().map(|r| r.0).collect();
    for (i, (took, e)) in refusals.iter().enumerate() {
        let msg = e.to_string();
        assert!(e.is_transient(), "{case}: {e}");
        assert!(msg.contains("is failing (3 transient failures in a row"), "{case} {i}: {msg}");
        assert!(msg.contains(b.url.trim_end_matches('/')), "{case} {i}: names the store: {msg}");
        let least = Duration::from_millis(FETCH_TIMEOUT_MS * 9 / 10);
        assert!(
            *took >= least && *took < LIVENESS,
            "{case} {i}: held until fetch.timeout.ms, not failed at once: {took:?}"
        );
    }
    println!("{cloud:?} {case}: refused: {}", refusals[5].1);
    assert_eq!(b.proxy.received(), received, "{case}: refused calls send no request");
    assert_eq!(b.proxy.connections(), connections, "{case}: nor open a connection");
    let (state, opened, refused) = breaker(&store);
    assert_eq!((state, opened), (1, 1), "{case}");
    assert!(refused >= 6, "{case}: {refused} refused");
    println!("{cloud:?} {case}: requests per failed call {sent:?}; 6 refused calls held {held:?}, sending nothing");

    // Back: after the interval, one call probes and succeeds; the breaker closes.
    b.proxy.set_fault(Fault::Pass);
    std::thread::sleep(Duration::from_millis(OPEN_MS + 200).saturating_sub(opened_at.elapsed()));
    assert_eq!(breaker(&store).0, 2, "{case}: half-open once the interval has passed");
    let (r, _, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
    assert_eq!(r.unwrap().as_ref(), s0.offset_index(), "{case}");
    assert_eq!(n, 1, "{case}: the probe");
    assert_eq!(breaker(&store).0, 0, "{case}: closed after the probe");
    assert!(read_all(&store, &segs[1], 0, None).unwrap() == segs[1].log, "{case}");
    println!("{cloud:?} {case}: requests by fault {:?}", by_fault(&b.proxy.seen()));
    Some(sent)
}

/// What [`throttling_is_retried_a_bounded_number_of_times`] saw.
#[derive(Debug)]
pub struct ThrottleFigures {
    /// One call without a breaker: its requests, its time, its error's whole message.
    pub one: (usize, Duration, String),
    /// Twenty calls with the breaker at 3: their requests, their time, the calls refused.
    pub burst: Option<(usize, Duration, u64)>,
}

/// A store that throttles every request with `answer`: the client retries a request `<p>.max.retries`
/// times (3 by default), no more, and the call fails as retriable, naming the status; with the breaker on,
/// a burst of 20 calls (when `burst`) sends at most the breaker's threshold of calls' worth of requests,
/// fewer requests than calls: the calls after it opened (made at once, each refusal held until
/// `fetch.timeout.ms`) send nothing.
pub fn throttling_is_retried_a_bounded_number_of_times(
    cloud: Cloud,
    answer: Answer,
    burst: bool,
) -> Option<ThrottleFigures> {
    let b = Bench::new(cloud, "throttled")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let status = &answer.status[..3];
    let no_breaker = b.open(&[("store.breaker.failures", "0"), ("fetch.timeout.ms", "10000")]);
    for s in &segs {
        no_breaker.copy(&s.md, &s.data).unwrap();
    }
    no_breaker.manifest(&s0.md).unwrap();

    b.proxy.set_fault(Fault::Throttle(answer));
    let (r, took, sent) = b.timed(|| no_breaker.fetch_index(&s0.md, IndexType::Offset));
    let e = r.expect_err("throttled");
    assert!(e.is_transient(), "{e}");
    let full = e.full_message();
    assert!(full.contains(status), "{status}: {full}");
    assert!(took < LIVENESS, "{took:?}");
    assert_eq!(sent, 1 + 3, "{status}: the first attempt and {} retries (3): {full}", cloud.key("max.retries"));
    println!("{cloud:?} throttled ({status}), no breaker: one call sent {sent} requests in {took:?}: {full}");
    let one = (sent, took, full);
    if !burst {
        return Some(ThrottleFigures { one, burst: None });
    }

    // With the breaker: 20 calls, one after another until the breaker opens, the rest at once (each refusal
    // is held until fetch.timeout.ms: 17 in a row would take 17 times that).
    const CALLS: usize = 20;
    let with_breaker = b.open(&[
        ("store.breaker.failures", "3"),
        ("store.breaker.open.ms", "60000"),
        ("store.breaker.open.max.ms", "60000"),
        // Longer than a call's 4 throttled answers (0.3-0.9 s); were it not, the call would count as failed
        // all the same (the breaker is told of a call given up at its deadline).
        ("fetch.timeout.ms", "1000"),
    ]);
    b.proxy.set_fault(Fault::Pass);
    with_breaker.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Throttle(answer));
    let call = || with_breaker.fetch_index(&s0.md, IndexType::Offset);
    let (results, took, sent) = b.timed(|| {
        let mut results = Vec::new();
        while results.len() < CALLS && breaker(&with_breaker).0 == 0 {
            results.push(call());
        }
        let before_open = results.len();
        std::thread::scope(|scope| {
            let rest: Vec<_> = (before_open..CALLS).map(|_| scope.spawn(call)).collect();
            results.extend(rest.into_iter().map(|c| c.join().unwrap()));
        });
        (before_open, results)
    });
    let (before_open, results) = results;
    assert_eq!(before_open, 3, "{status}: the breaker opens after 3 failed calls");
    assert!(results.iter().all(|r| r.as_ref().is_err_and(|e| e.is_transient())));
    let (state, opened, refused) = breaker(&with_breaker);
    assert_eq!((state, opened, refused), (1, 1, CALLS as u64 - 3), "{status}");
    assert!(sent <= 3 * (1 + 3), "{status}: at most the threshold's calls' worth of requests: {sent}");
    assert!(sent < CALLS, "{status}: fewer requests ({sent}) than calls ({CALLS})");
    assert!(took < LIVENESS, "{took:?}");
    println!(
        "{cloud:?} throttled ({status}), breaker at 3: {CALLS} calls sent {sent} requests in {took:?}, {refused} \
         refused (held until fetch.timeout.ms)"
    );
    println!("{cloud:?} requests by fault {:?}", by_fault(&b.proxy.seen()));
    Some(ThrottleFigures { one, burst: Some((sent, took, refused)) })
}

/// What one case of [`cut_answers_give_the_right_bytes_or_an_error`] gave: for the whole fetch, the
/// range, the index: whether it succeeded, and its requests.
#[derive(Debug)]
pub struct CutFigures {
    pub after: usize,
    pub whole: (bool, usize),
    pub range: (bool, usize),
    pub index: (bool, usize),
}

/// The cases of [`cut_answers_give_the_right_bytes_or_an_error`]: the bytes each answer keeps, and whether the
/// whole fetch must succeed (`None`: either way).
pub const CUTS: [(usize, Option<bool>); 6] =
    [(0, Some(false)), (100, Some(false)), (4_096, None), (40_000, None), (100_000, Some(true)), (1 << 20, Some(true))];

/// Answers cut mid-body (the connection closed after `n` bytes of each answer's body, each retry's too):
/// a fetch (whole, or a range) and an index fetch give the right bytes or fail as retriable, never other
/// bytes. Each case reads through a store opened for it (the manifest's answer is cut too). `cases`: the
/// bytes each answer keeps, and whether the whole fetch must succeed (`None`: either way). The cases run at
/// once, each through a proxy of its own to the same segment.
pub fn cut_answers_give_the_right_bytes_or_an_error(cloud: Cloud, cases: &[(usize, Option<bool>)]) -> Vec<CutFigures> {
    let Some(b) = Bench::new(cloud, "cut") else { return Vec::new() };
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    b.open(&CUT_SETTINGS).copy(&s0.md, &s0.data).unwrap();
    let out = std::thread::scope(|scope| {
        let b = &b;
        let runs: Vec<_> = cases.iter().map(|&case| scope.spawn(move || cut_case(&b.beside(), s0, case))).collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert!(read_all(&b.open(&CUT_SETTINGS), s0, 0, None).unwrap() == s0.log);
    out
}

/// The settings of [`cut_answers_give_the_right_bytes_or_an_error`]'s stores.
const CUT_SETTINGS: [(&str, &str); 3] =
    [("chunk.size", "65536"), ("fetch.timeout.ms", "20000"), ("store.breaker.failures", "0")];

/// One case of [`cut_answers_give_the_right_bytes_or_an_error`], through `b`.
fn cut_case(b: &Bench, s0: &Segment, (n, whole_ok): (usize, Option<bool>)) -> CutFigures {
    let cloud = b.cloud;
    let (start, end) = (70_000, 150_000);
    let range = &s0.log[start as usize..=end as usize];
    b.proxy.set_fault(Fault::ResetAfter(n));
    let cold = b.open(&CUT_SETTINGS);
    let (whole, took_whole, sent_whole) = b.timed(|| read_all(&cold, s0, 0, None));
    // What the whole fetch read from the store (its manifest, then the log's bytes in its answers' pieces).
    let read_whole = metric(&cold, "store-bytes-read");
    let (part, took_part, sent_part) = b.timed(|| read_all(&cold, s0, start, Some(end)));
    let (index, took_index, sent_index) = b.timed(|| cold.fetch_index(&s0.md, IndexType::Offset));
    fn show<T: AsRef<[u8]>>(r: &rsm_core::Result<T>) -> String {
        match r {
            Ok(v) => format!("{} bytes", v.as_ref().len()),
            Err(e) => format!("failed ({})", e.full_message().rsplit(": ").next().unwrap_or_default()),
        }
    }
    println!(
        "{cloud:?} cut after {n} bytes: whole {} in {took_whole:?} ({sent_whole} requests), range {} in \
         {took_part:?} ({sent_part}), index {} in {took_index:?} ({sent_index}); sent {:?}",
        show(&whole),
        show(&part),
        show(&index),
        b.sent_since(0),
    );
    if let Some(ok) = whole_ok {
        assert_eq!(whole.is_ok(), ok, "cut after {n}: whole: {}", show(&whole));
    }
    if whole.is_ok() {
        // A broken answer is read on from where it broke, never again from the start: the bytes read stay
        // near the bytes served.
        let served = s0.log.len() as u64;
        assert!(read_whole * 2 <= served * 3, "cut after {n}: {read_whole} bytes read to serve {served}");
        println!("{cloud:?} cut after {n} bytes: the whole fetch read {read_whole} bytes to serve {served}");
    }
    let figures = CutFigures {
        after: n,
        whole: (whole.is_ok(), sent_whole),
        range: (part.is_ok(), sent_part),
        index: (index.is_ok(), sent_index),
    };
    for (what, r, want) in [("whole", whole, &s0.log[..]), ("range", part, range)] {
        match r {
            Ok(got) => assert!(got == want, "cut after {n}: {what}: {} bytes, not the segment's", got.len()),
            Err(e) => assert!(e.is_transient(), "cut after {n}: {what}: a cut answer is retriable: {e}"),
        }
    }
    match index {
        Ok(got) => assert_eq!(got.as_ref(), s0.offset_index(), "cut after {n}: index"),
        Err(e) => assert!(e.is_transient(), "cut after {n}: index: {e}"),
    }
    b.proxy.set_fault(Fault::Pass);
    assert!(read_all(&b.open(&CUT_SETTINGS), s0, 0, None).unwrap() == s0.log, "cut after {n}: the store back");
    println!("{cloud:?} cut after {n} bytes: requests by fault {:?}", by_fault(&b.proxy.seen()));
    figures
}

/// What [`given_up_reads_continue_where_they_stopped`] saw: the attempts until the fetch was whole, the
/// bytes read from the store (the manifest's and the log's) and the bytes served.
#[derive(Debug)]
pub struct GivenUpFigures {
    pub attempts: usize,
    pub read: u64,
    pub served: u64,
}

/// Answers cut after 40,000 bytes and a fetch deadline too short to read the segment in one go (the
/// client's backoff between cut answers outlasts it): each attempt, given up at its deadline, leaves what it
/// received, and the same fetch asked again reads on from there, so a few attempts serve the segment,
/// having read it from the store about once. Before, each attempt read the same first bytes again and
/// the fetch never came whole (a broker under cut answers read 5 MB and served nothing).
pub fn given_up_reads_continue_where_they_stopped(cloud: Cloud) -> Option<GivenUpFigures> {
    let b = Bench::new(cloud, "given-up")?;
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    let settings = [("fetch.timeout.ms", "300"), ("store.breaker.failures", "0")];
    b.open(&settings).copy(&s0.md, &s0.data).unwrap();
    b.proxy.set_fault(Fault::ResetAfter(40_000));
    let store = b.open(&settings);
    let mut attempts = 0;
    let got = loop {
        attempts += 1;
        match read_all(&store, s0, 0, None) {
            Ok(got) => break got,
            Err(e) => {
                assert!(e.is_transient(), "attempt {attempts}: a fetch given up is retriable: {e}");
                assert!(attempts < 20, "20 attempts and the fetch is still not whole: {}", e.full_message());
            }
        }
    };
    b.proxy.set_fault(Fault::Pass);
    assert!(got == s0.log, "the fetch continued from the bytes it had gives the segment's bytes");
    let (read, served) = (metric(&store, "store-bytes-read"), s0.log.len() as u64);
    println!(
        "{cloud:?} cut after 40000 bytes, 300 ms deadline: whole after {attempts} attempts, {read} bytes read to serve {served}"
    );
    assert!(attempts > 1, "the deadline is short enough that one attempt does not read the segment");
    assert!(read * 2 <= served * 3, "{read} bytes read from the store to serve {served}");
    Some(GivenUpFigures { attempts, read, served })
}

/// Two fetches of the same bytes at once (a broker asking again for a fetch it gave up on while the first
/// read still runs) through a slow store: the second waits for the first's read instead of sending its
/// own; both get the segment's bytes. Returns the `.log` reads the proxy received.
pub fn the_same_read_at_once_is_sent_once(cloud: Cloud) -> Option<Vec<String>> {
    let b = Bench::new(cloud, "same-read")?;
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    let settings = [("fetch.timeout.ms", "20000"), ("store.breaker.failures", "0")];
    let store = b.open(&settings);
    store.copy(&s0.md, &s0.data).unwrap();
    // The manifest read first, so that only the log's bytes are read at once.
    store.fetch_index(&s0.md, IndexType::Offset).unwrap();
    b.proxy.set_fault(Fault::Slow { first_byte_ms: 400, bytes_per_sec: 4 << 20 });
    let from = b.proxy.received();
    let got: Vec<_> = std::thread::scope(|scope| {
        let store = &store;
        let runs: Vec<_> = (0..2)
            .map(|i| {
                let r = scope.spawn(move || read_all(store, s0, 0, None));
                if i == 0 {
                    std::thread::sleep(Duration::from_millis(100));
                }
                r
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    b.proxy.set_fault(Fault::Pass);
    for (i, g) in got.into_iter().enumerate() {
        assert!(g.unwrap() == s0.log, "fetch {i}: the segment's bytes");
    }
    let reads: Vec<String> = b.sent_since(from).into_iter().filter(|r| r.contains(".log")).collect();
    println!("{cloud:?} the same fetch twice at once, through a slow store: the log read by {reads:?}");
    assert_eq!(reads.len(), 1, "one read of the log for both fetches: {reads:?}");
    Some(reads)
}

/// One case of [`copy_gives_up_within_copy_timeout`]: its name, the requests the black hole takes (those
/// whose method and target contain one of these; none: all), the objects of the segment left, and how the
/// error must say the cleanup went.
pub type CopyCase = (&'static str, Vec<&'static str>, usize, &'static str);

/// How the copy's error ends when its cleanup deleted what it wrote.
pub const DELETED: &str = "what it wrote was deleted";
/// How the copy's error ends when its cleanup hung too.
pub const NOT_DELETED: &str = "deleting what it wrote timed out too";

/// What one case of [`copy_gives_up_within_copy_timeout`] saw: its time, its requests and its message.
#[derive(Debug)]
pub struct CopyFigures {
    pub case: &'static str,
    pub took: Duration,
    pub sent: Vec<String>,
    pub message: String,
}

/// A copy to a store that stops answering (every request, or only some) fails as retriable after
/// `copy.timeout.ms` (2000), well before the client's own timeouts (60 s here), and deletes what it wrote,
/// within the same bound again. When the store answers the deletes, nothing of the segment is left; when
/// the deletes hang too, the objects written before are left without a manifest, and a sweep of orphans
/// removes them. Either way, once the store answers, the copy again succeeds. The cases (everything hangs,
/// the manifest's upload, the log's, or the manifest's upload and the deletes) run at once, each on a proxy
/// and a key prefix of its own.
pub fn copy_gives_up_within_copy_timeout(cloud: Cloud) -> Vec<CopyFigures> {
    let mut deletes = vec![".manifest"];
    deletes.extend(cloud.deletes());
    let cases: Vec<CopyCase> = vec![
        ("everything", vec![], 0, NOT_DELETED),
        ("the manifest", vec![".manifest"], 0, DELETED),
        ("the log", vec![".log"], 0, DELETED),
        ("the manifest and the deletes", deletes, 2, NOT_DELETED),
    ];
    std::thread::scope(|scope| {
        let runs: Vec<_> = cases.into_iter().map(|case| scope.spawn(move || copy_case(cloud, case))).collect();
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    })
}

/// One case of [`copy_gives_up_within_copy_timeout`].
fn copy_case(cloud: Cloud, (case, only, want_left, cleanup): CopyCase) -> Option<CopyFigures> {
    let b = Bench::new(cloud, "copy")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let (call, attempt) = (cloud.key("api.call.timeout"), cloud.key("api.call.attempt.timeout"));
    let store = b.open(&[("copy.timeout.ms", "2000"), (&attempt, "60000"), (&call, "60000")]);
    if only.is_empty() {
        b.proxy.set_fault(Fault::Blackhole);
    } else {
        b.proxy.set_fault_on(Fault::Blackhole, &only);
    }
    let from = b.proxy.received();
    let (r, took, _) = b.timed(|| store.copy(&s0.md, &s0.data));
    let e = r.expect_err(case);
    let msg = e.to_string();
    assert!(e.is_transient(), "{case}: {e}");
    assert!(msg.contains("copy.timeout.ms (2000 ms)") && msg.contains(&s0.id()), "{case}: {msg}");
    assert!(took < LIVENESS, "{case}: {took:?}");
    let sent = b.sent_since(from);
    println!("{cloud:?} {case}: the copy failed in {took:?}: {msg}; sent {sent:?}");
    assert!(msg.ends_with(cleanup), "{case}: {msg}; sent {sent:?}");

    b.proxy.set_fault(Fault::Pass);
    let of_segment = |store: &Store| b.objects_of(store, s0);
    let left = of_segment(&store);
    assert_eq!(left.len(), want_left, "{case}: left behind: {left:?} ({msg}); sent {sent:?}");
    assert!(left.iter().all(|k| !k.ends_with(".manifest")), "{case}: no manifest is visible: {left:?}");
    assert!(store.list_objects().unwrap().1.is_empty(), "{case}: no temporary object");
    assert!(store.list_incomplete_uploads().unwrap().is_empty(), "{case}: no upload left open");
    if want_left > 0 {
        let mut swept = store.sweep_orphans(None, Duration::ZERO).unwrap();
        swept.sort();
        let mut want = left.clone();
        want.sort();
        assert_eq!(swept, want, "{case}: the sweep removes what the failed copy left");
        assert!(of_segment(&store).is_empty(), "{case}");
    }

    store.copy(&s0.md, &s0.data).unwrap();
    assert_eq!(of_segment(&store).len(), 3, "{case}: the copy again");
    assert!(read_all(&b.open(&[]), s0, 0, None).unwrap() == s0.log, "{case}");
    Some(CopyFigures { case, took, sent, message: msg })
}

/// What [`a_copy_to_a_throttling_store_fails_after_bounded_retries`] saw: the copy's time, its upload
/// requests (all throttled), the cleanup's requests, and the error's whole message.
#[derive(Debug)]
pub struct ThrottledCopy {
    pub took: Duration,
    pub uploads: usize,
    /// The waits between the log's upload attempts.
    pub waits: Vec<Duration>,
    pub others: Vec<String>,
    pub message: String,
}

/// A copy to a store that throttles every upload with `answer` (the other requests pass) fails as
/// retriable once each upload has had its `<p>.max.retries` (2 here) retries, no more: at most 3 objects ×
/// (1 + 2) upload requests; what it wrote (nothing) is deleted, nothing of the segment is left, and once the
/// store answers the copy succeeds.
pub fn a_copy_to_a_throttling_store_fails_after_bounded_retries(cloud: Cloud, answer: Answer) -> Option<ThrottledCopy> {
    const RETRIES: usize = 2;
    let b = Bench::new(cloud, "throttled-copy")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let status = &answer.status[..3];
    let retries = cloud.key("max.retries");
    let store = b.open(&[(&retries, &RETRIES.to_string()), ("copy.timeout.ms", "10000")]);
    b.proxy.set_fault_on(Fault::Throttle(answer), cloud.uploads());
    let from = b.proxy.received();
    let (r, took, _) = b.timed(|| store.copy(&s0.md, &s0.data));
    let e = r.expect_err("throttled uploads");
    let message = e.full_message();
    let seen = b.proxy.seen()[from..].to_vec();
    let uploads = seen.iter().filter(|x| matches!(x.fault, Fault::Throttle(_))).count();
    let others: Vec<String> = seen.iter().filter(|x| x.fault == Fault::Pass).map(describe).collect();
    // The waits between the attempts of the log's upload.
    let log: Vec<Instant> =
        seen.iter().filter(|x| decoded(&x.target).contains(".log") && x.fault != Fault::Pass).map(|x| x.at).collect();
    let waits: Vec<Duration> = log.windows(2).map(|w| w[1] - w[0]).collect();
    println!(
        "{cloud:?} uploads throttled ({status}): the copy failed in {took:?} after {uploads} upload requests (the \
         log's retried after {waits:?}), then {others:?}: {message}"
    );
    assert!(e.is_transient(), "{status}: {message}");
    assert!(message.contains(status), "{status}: the store's answer: {message}");
    assert!(!message.contains("copy.timeout.ms"), "{status}: failed on its own, before the deadline: {message}");
    assert!(took < LIVENESS, "{status}: {took:?}");
    assert!(uploads > RETRIES, "{status}: an upload and its {retries} ({RETRIES}) retries: {uploads}");
    // The log and the indexes go at once; the manifest waits for them.
    assert!(uploads <= 2 * (1 + RETRIES), "{status}: at most {retries} retries of each object: {uploads}");

    b.proxy.set_fault(Fault::Pass);
    let left = b.objects_of(&store, s0);
    assert!(left.is_empty(), "{status}: left behind: {left:?}");
    store.copy(&s0.md, &s0.data).unwrap();
    assert!(read_all(&b.open(&[]), s0, 0, None).unwrap() == s0.log, "{status}");
    Some(ThrottledCopy { took, uploads, waits, others, message })
}

/// A store that hangs opens the breaker through the facade's own deadlines: each fetch `fetch.timeout.ms`
/// (300) gives up on is a transient failure; after 3 in a row the breaker is open (for
/// `store.breaker.open.ms`, 5 s here) and the next fetches fail with its refusal, each held until its
/// `fetch.timeout.ms` as a fetch of the hung store, sending nothing. Returns the requests of each of 6
/// fetches.
pub fn a_hung_store_opens_the_breaker(cloud: Cloud) -> Option<Vec<usize>> {
    let b = Bench::new(cloud, "hung")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let store = b.open(&[
        ("store.breaker.failures", "3"),
        // Open past the refused fetches below (a fetch held while the interval ends would probe).
        ("store.breaker.open.ms", "5000"),
        ("store.breaker.open.max.ms", "5000"),
        ("fetch.timeout.ms", "300"),
    ]);
    store.copy(&s0.md, &s0.data).unwrap();
    store.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Blackhole);
    let from = b.proxy.received();
    let (mut sent, mut took) = (Vec::new(), Vec::new());
    for i in 0..6 {
        let (r, t, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        let e = r.expect_err("hung");
        assert!(e.is_transient() && t < LIVENESS, "{e}");
        if i >= 3 {
            assert!(e.to_string().contains("is failing (3 transient failures in a row"), "{i}: refused: {e}");
            assert!(t >= Duration::from_millis(270), "{i}: held until fetch.timeout.ms, not failed at once: {t:?}");
        }
        sent.push(n);
        took.push(t);
    }
    // A request of the third fetch may reach the proxy late, on a loaded machine.
    std::thread::sleep(Duration::from_millis(300));
    let all = b.proxy.received() - from;
    println!(
        "{cloud:?} a hung store: requests per fetch {sent:?} in {took:?}; breaker (state, opened, refused) {:?}",
        breaker(&store)
    );
    assert_eq!(breaker(&store), (1, 1, 3), "open after 3 timed-out fetches in a row; requests per fetch {sent:?}");
    assert!(all <= 3, "the fetches after it opened reach no store: {all} requests, by fetch {sent:?}");
    Some(sent)
}

/// What [`a_store_that_answers_again_is_asked_again`] saw: for each fetch after the store answers again,
/// its time, its requests and whether it succeeded.
pub type AfterThrottling = Vec<(Duration, usize, bool)>;

/// With every setting at its default (`fetch.timeout.ms` 500, the breaker at 5, the client's retries and
/// throttling pause, 50 ms doubling to 200 ms): one fetch throttled with `answer` fails as retriable; once
/// the store answers again, fetches (one every 200 ms, for 5 s) reach it again and succeed: the first one
/// already, with one request, the pause left by the throttled answers (at most 200 ms) being well within its
/// `fetch.timeout.ms`. Returns each fetch's figures.
pub fn a_store_that_answers_again_is_asked_again(cloud: Cloud, answer: Answer) -> Option<AfterThrottling> {
    let b = Bench::new(cloud, "answers-again")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let store = b.open_as(&[], false);
    store.copy(&s0.md, &s0.data).unwrap();
    store.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Throttle(answer));
    let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
    assert!(r.as_ref().is_err_and(|e| e.is_transient()) && took < LIVENESS, "{r:?}");
    println!("{cloud:?} throttled: a fetch failed in {took:?} after {n} requests");

    b.proxy.set_fault(Fault::Pass);
    let mut after = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        let ok = r.as_ref().is_ok_and(|got| got.as_ref() == s0.offset_index());
        if !ok {
            let e = r.err().map(|e| e.to_string()).unwrap_or_default();
            println!("{cloud:?} the store back: a fetch failed in {took:?} after {n} requests: {e}");
        }
        after.push((took, n, ok));
        if ok {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("{cloud:?} the store back: fetches (time, requests, ok) {after:?}");
    assert!(
        after.iter().any(|&(_, _, ok)| ok),
        "a store that answers again is never asked again: {} fetches in 5 s sent {} requests; {after:?}",
        after.len(),
        after.iter().map(|a| a.1).sum::<usize>(),
    );
    assert!(after[0].2 && after[0].1 == 1, "the first fetch, the store answering, succeeds at once: {after:?}");
    Some(after)
}

/// What [`a_throttling_store_sees_one_request_per_call_once_the_retry_budget_is_spent`] saw.
#[derive(Debug)]
pub struct BudgetFigures {
    /// The requests of each throttled call, from a full budget.
    pub sent: Vec<usize>,
    /// The waits before the first call's retries.
    pub gaps: Vec<Duration>,
    /// The last call's error, whole.
    pub last: String,
    /// A copy whose uploads are throttled, the budget spent: its upload requests, then the others.
    pub copy: (usize, Vec<String>),
    /// The successful requests since the budget was spent, then the requests of a throttled call.
    pub earned: (usize, usize),
}

/// The store's retry budget (`<p>.retry.budget.burst` 5, `.percent` 10) and the wait before retrying a
/// throttled answer (`<p>.throttle.backoff.ms` 100, `.max.ms` 400), under the store's throttling `answer`
/// without the breaker: each throttled answer spends one retry (the last attempt's too): the first call's 4
/// answers spend 4, the second call is retried once and spends the last, and every call after sends one
/// request, not retried, and fails as retriable, saying the budget is spent and naming the answer's code:
/// 12 calls send 12 + 4 requests, where the client alone would send 12 × 4. Each request after a throttled
/// answer waits at least half the doubled wait (the first call's retries: 50, 100, 200 ms). The budget spent, a
/// copy whose uploads are throttled sends one request per upload (the log's and the indexes'; the manifest
/// is never tried): the store's own upload loops (GCS's) leave the budget's refusal unretried too. Its
/// cleanup passes and nothing of the segment is left. Successes earn retries back, a tenth each: after 20
/// successful requests or more (copies and deletes of the other segments), a throttled call is retried twice
/// again (three times from 30).
pub fn a_throttling_store_sees_one_request_per_call_once_the_retry_budget_is_spent(
    cloud: Cloud,
    answer: Answer,
) -> Option<BudgetFigures> {
    let b = Bench::new(cloud, "budget")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let code = error_code(&answer);
    let (burst, percent) = (cloud.key("retry.budget.burst"), cloud.key("retry.budget.percent"));
    let (backoff, backoff_max) = (cloud.key("throttle.backoff.ms"), cloud.key("throttle.backoff.max.ms"));
    let settings = [
        ("store.breaker.failures", "0"),
        ("fetch.timeout.ms", "20000"),
        (&burst, "5"),
        (&percent, "10"),
        (&backoff, "100"),
        (&backoff_max, "400"),
    ];
    b.open(&settings).copy(&segs[0].md, &segs[0].data).unwrap();
    let store = b.open(&settings); // a full budget
    store.manifest(&segs[0].md).unwrap(); // one success: the budget stays full
    b.proxy.set_fault(Fault::Throttle(answer));
    const CALLS: usize = 12;
    let mut sent = Vec::new();
    let mut last = None;
    let first = b.proxy.received();
    for _ in 0..CALLS {
        let (r, took, n) = b.timed(|| store.fetch_index(&segs[0].md, IndexType::Offset));
        let e = r.expect_err("throttled");
        assert!(e.is_transient(), "{e}");
        assert!(took < Duration::from_secs(20), "{took:?}");
        sent.push(n);
        last = Some(e);
    }
    assert_eq!(sent, [4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "requests per call");
    // The metrics: 16 throttled answers; 11 failures not retried (the second call's last, and one per call
    // after).
    assert_eq!((metric(&store, "store-throttled"), metric(&store, "store-retries-refused")), (16, 11));
    let last = last.unwrap().full_message();
    assert!(last.contains("retry budget is spent") && last.contains(code), "{code}: {last}");
    // The first call's retries, after each throttled answer: waits of at least 50, 100 and 200 ms.
    let seen = b.proxy.seen();
    let gaps: Vec<Duration> = seen[first..first + 4].windows(2).map(|w| w[1].at - w[0].at).collect();
    for (gap, least) in gaps.iter().zip([50, 100, 200]) {
        assert!(*gap >= Duration::from_millis(least), "retry after a throttled answer: {gaps:?}");
    }
    println!(
        "{cloud:?} throttled ({code}), budget 5: requests per call {sent:?}; the first call's retries came \
         after {gaps:?}"
    );
    println!("{cloud:?} the last call: {last}");

    // The budget spent, the uploads of a copy are not retried either.
    let before = b.proxy.received();
    b.proxy.set_fault_on(Fault::Throttle(answer), cloud.uploads());
    let e = store.copy(&segs[1].md, &segs[1].data).expect_err("throttled uploads");
    let message = e.full_message();
    b.proxy.set_fault(Fault::Pass);
    let copied = &b.proxy.seen()[before..];
    let uploads = copied.iter().filter(|x| x.fault != Fault::Pass).count();
    let others: Vec<String> = copied.iter().filter(|x| x.fault == Fault::Pass).map(describe).collect();
    println!(
        "{cloud:?} the budget spent, a copy's uploads throttled: {uploads} upload requests, then {others:?}: {message}"
    );
    assert!(e.is_transient(), "{message}");
    assert!(message.contains("retry budget is spent"), "{message}");
    assert_eq!(uploads, 2, "one request per upload (the log's, the indexes'), not retried: {message}");
    assert_eq!(b.objects_of(&store, &segs[1]), Vec::<String>::new(), "the cleanup deleted what the copy wrote");
    assert_eq!((metric(&store, "store-throttled"), metric(&store, "store-retries-refused")), (18, 13));

    // Successes earn it back, a tenth of a retry each: the copy's cleanup, then copies and deletes of the
    // other segments, one at a time until 20 requests or more have succeeded, and a copy.
    let succeeded = || b.proxy.seen()[before..].iter().filter(|x| x.fault == Fault::Pass).count();
    for s in segs[1..].iter().cycle() {
        if succeeded() >= 20 {
            break;
        }
        store.copy(&s.md, &s.data).unwrap();
        store.delete(&s.md).unwrap();
    }
    store.copy(&segs[1].md, &segs[1].data).unwrap();
    let successes = succeeded();
    assert!(successes >= 20, "{successes}");
    b.proxy.set_fault(Fault::Throttle(answer));
    let (r, _, n) = b.timed(|| store.fetch_index(&segs[1].md, IndexType::Offset));
    assert!(r.is_err());
    assert_eq!(n, (successes / 10 + 1).min(4), "{successes} successful requests earned {} retries", successes / 10);
    println!("{cloud:?} after {successes} successful requests, a throttled call sent {n} requests");
    Some(BudgetFigures { sent, gaps, last, copy: (uploads, others), earned: (successes, n) })
}

/// What one case of [`the_second_look_deletes_what_a_timed_out_copy_left`] saw: whether the segment was
/// copied again, the hung copy's requests, the segment's objects left at first, and after the look.
#[derive(Debug)]
pub struct RecheckFigures {
    pub copy_again: bool,
    pub sent: Vec<String>,
    pub at_first: Vec<String>,
    pub after: Vec<String>,
}

/// `copy.cleanup.recheck.ms` (1000 here): a copy that timed out (`copy.timeout.ms` 500) with its manifest's
/// upload and its cleanup's deletes hung leaves the log and the indexes (as in
/// [`copy_gives_up_within_copy_timeout`]); once the store answers again, the second look deletes them
/// without anyone running a sweep. A copy again under the same id is kept whole: its start cancels the look
/// still pending. The two cases (not copied again, copied again) run at once, each on a proxy and a key
/// prefix of its own.
pub fn the_second_look_deletes_what_a_timed_out_copy_left(cloud: Cloud) -> Vec<RecheckFigures> {
    std::thread::scope(|scope| {
        let runs = [false, true].map(|again| scope.spawn(move || recheck_case(cloud, again)));
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    })
}

/// One case of [`the_second_look_deletes_what_a_timed_out_copy_left`].
fn recheck_case(cloud: Cloud, copy_again: bool) -> Option<RecheckFigures> {
    let b = Bench::new(cloud, "recheck")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s = &segs[0];
    let (call, attempt) = (cloud.key("api.call.timeout"), cloud.key("api.call.attempt.timeout"));
    let store = b.open(&[
        ("copy.timeout.ms", "500"),
        ("copy.cleanup.recheck.ms", "1000"),
        (&attempt, "60000"),
        (&call, "60000"),
    ]);
    let mut hung = vec![".manifest"];
    hung.extend(cloud.deletes());
    b.proxy.set_fault_on(Fault::Blackhole, &hung);
    let from = b.proxy.received();
    let e = store.copy(&s.md, &s.data).expect_err("hung");
    let sent = b.sent_since(from);
    assert!(e.to_string().ends_with(NOT_DELETED), "{e}; sent {sent:?}");
    b.proxy.set_fault(Fault::Pass);
    let at_first = b.objects_of(&store, s);
    assert_eq!(at_first.len(), 2, "the log and the indexes are left at first: {at_first:?}; sent {sent:?}");
    if copy_again {
        store.copy(&s.md, &s.data).unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));
    let after = b.objects_of(&store, s);
    if copy_again {
        assert_eq!(after.len(), 3, "the copy again is whole: {after:?}");
        assert!(read_all(&store, s, 0, None).unwrap() == s.log);
    } else {
        assert!(after.is_empty(), "the second look deleted them: {after:?}");
    }
    println!("{cloud:?} copied again {copy_again}: the hung copy sent {sent:?}, left {at_first:?}, then {after:?}");
    Some(RecheckFigures { copy_again, sent, at_first, after })
}

/// Defines the suite's tests in the test file that calls it, each running a scenario above on the store
/// `$cloud` (a [`Cloud`]) and printing its figures; the file includes this module as `faults` and the proxy
/// as `proxy`. A scenario returns `None` (and its test passes) when the store's server is absent and its skip
/// variable says so.
macro_rules! cloud_fault_tests {
    ($cloud:expr) => {
        const CLOUD: $crate::faults::Cloud = $cloud;

        /// Each wait of a fetch is bounded by `fetch.timeout.ms` on a store that does not answer (a black
        /// hole), answers late, or answers too slowly, at each of its steps (the open of a cold store, a
        /// piece of the log's bytes, an index), after one request each; a store slow but in time is read
        /// whole; once the store answers again, the same reads give the right bytes.
        #[test]
        fn a_fetch_gives_up_within_fetch_timeout_when_the_store_does_not_answer() {
            let figures = $crate::faults::fetch_gives_up_within_fetch_timeout(CLOUD);
            println!("{figures:?}");
        }

        /// With `store.breaker.failures` 3 and `<p>.max.retries` 1, a store that refuses connections or
        /// throttles (its first throttling answer) opens the breaker after three failed calls of 2 requests
        /// each; calls then fail with its refusal, held until `fetch.timeout.ms`, and send nothing; after
        /// `store.breaker.open.ms` a probe succeeds and closes it.
        #[test]
        fn the_breaker_opens_on_a_failing_store_and_its_refusals_send_nothing() {
            use $crate::proxy::Fault;
            // The cases wait for the breaker's interval, each on a proxy and a key prefix of its own: run at once.
            std::thread::scope(|scope| {
                for (case, fault) in [("refused", Fault::Refuse), ("throttled", Fault::Throttle(CLOUD.throttles()[0]))]
                {
                    scope.spawn(move || {
                        let Some(sent) = $crate::faults::breaker_opens_and_refuses_without_requests(CLOUD, case, fault)
                        else {
                            return;
                        };
                        assert_eq!(sent, [2, 2, 2], "{case}: requests per failed call (the attempt and its one retry)");
                    });
                }
            });
        }

        /// Throttling answered as the store answers it is retried `<p>.max.retries` times (3), no more, and
        /// fails as retriable naming the status; with the breaker at 3, 20 calls send fewer requests than
        /// calls.
        #[test]
        fn throttling_is_retried_a_bounded_number_of_times_and_the_breaker_cuts_the_requests() {
            // Each throttling answer on a proxy and a key prefix of its own: run at once.
            std::thread::scope(|scope| {
                for (i, &answer) in CLOUD.throttles().iter().enumerate() {
                    scope.spawn(move || {
                        let f = $crate::faults::throttling_is_retried_a_bounded_number_of_times(CLOUD, answer, i == 0);
                        println!("{:?}", f.map(|f| (f.one.0, f.burst)));
                    });
                }
            });
        }

        /// The store's retry budget: under throttling, without the breaker, 12 calls send 4, 2, then 1
        /// request each, the retries paced; the budget spent, a copy's uploads are not retried either; 20
        /// successful requests earn 2 retries back.
        #[test]
        fn a_throttling_store_sees_one_request_per_call_once_the_retry_budget_is_spent() {
            let answer = CLOUD.throttles()[0];
            let f = $crate::faults::a_throttling_store_sees_one_request_per_call_once_the_retry_budget_is_spent(
                CLOUD, answer,
            );
            println!("{f:?}");
        }

        /// Answers cut mid-body give the right bytes or a retriable error, never other bytes; a cut read is
        /// resumed where it was cut, within the client's retries.
        #[test]
        fn an_answer_cut_mid_body_gives_the_right_bytes_or_an_error() {
            let figures = $crate::faults::cut_answers_give_the_right_bytes_or_an_error(CLOUD, &$crate::faults::CUTS);
            if !figures.is_empty() {
                let resumed = figures.iter().any(|f| f.whole.0 && f.whole.1 > 2);
                assert!(resumed, "some whole fetch was read over several cut answers: {figures:?}");
            }
        }

        /// A fetch given up at its deadline under cut answers leaves what it received, and the same fetch
        /// asked again reads on from there: the segment is served after a few attempts, read about once.
        #[test]
        fn a_fetch_given_up_under_cut_answers_continues_where_it_stopped() {
            println!("{:?}", $crate::faults::given_up_reads_continue_where_they_stopped(CLOUD));
        }

        /// The same read asked twice at once through a slow store is sent once, both callers served.
        #[test]
        fn the_same_read_asked_twice_at_once_is_sent_once() {
            println!("{:?}", $crate::faults::the_same_read_at_once_is_sent_once(CLOUD));
        }

        /// A copy to a store that stops answering (everything, the manifest's upload, the log's, or the
        /// manifest's and the deletes) fails as retriable within `copy.timeout.ms` and deletes what it wrote
        /// within the same bound again, or leaves orphans a sweep removes; the copy then succeeds.
        #[test]
        fn a_copy_gives_up_within_copy_timeout_and_leaves_nothing_or_orphans() {
            for f in $crate::faults::copy_gives_up_within_copy_timeout(CLOUD) {
                println!("{}: {:?}, {} requests", f.case, f.took, f.sent.len());
            }
        }

        /// A copy that timed out with its manifest's upload and its cleanup hung leaves the log and the
        /// indexes, which the second look (`copy.cleanup.recheck.ms`) deletes; a copy again under the same
        /// id is kept whole.
        #[test]
        fn the_second_look_deletes_what_a_timed_out_copy_left() {
            for f in $crate::faults::the_second_look_deletes_what_a_timed_out_copy_left(CLOUD) {
                println!("{f:?}");
            }
        }

        /// A copy whose uploads are throttled fails as retriable after `<p>.max.retries` (2) retries of each
        /// upload, leaving nothing; the copy then succeeds.
        #[test]
        fn a_copy_to_a_throttling_store_fails_after_bounded_retries() {
            // Each throttling answer on a proxy and a key prefix of its own: run at once.
            std::thread::scope(|scope| {
                for &answer in CLOUD.throttles() {
                    scope.spawn(move || {
                        let f = $crate::faults::a_copy_to_a_throttling_store_fails_after_bounded_retries(CLOUD, answer);
                        println!("{:?}", f.map(|f| (f.uploads, f.took, f.waits)));
                    });
                }
            });
        }

        /// Fetches `fetch.timeout.ms` gives up on open the breaker: 3 in a row, then the next reach no store.
        #[test]
        fn a_hung_store_opens_the_breaker_through_timed_out_fetches() {
            let _ = $crate::faults::a_hung_store_opens_the_breaker(CLOUD);
        }

        /// With every setting at its default, one throttled fetch does not keep the store from being asked
        /// again: once it answers, a fetch reaches it and succeeds.
        #[test]
        fn a_store_that_answers_again_after_throttling_is_asked_again() {
            let _ = $crate::faults::a_store_that_answers_again_is_asked_again(CLOUD, CLOUD.throttles()[0]);
        }
    };
}
pub(crate) use cloud_fault_tests;
