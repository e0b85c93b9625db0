//! What the Azure and GCS fault tests (`store_faults_azure.rs`, `store_faults_gcs.rs`) share: a store of its
//! own on the test server behind a fault-injecting proxy ([`Bench`]), the segments they copy, and the tests
//! themselves, written once for both stores ([`Cloud`]) after `store_faults_s3.rs`: each test file calls
//! them with its store and asserts what is particular to it.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use crate::proxy::{Answer, CountingProxy, Fault, Seen, by_fault};
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::writer::{PartitionSpec, generate_partition};
use rsm_core::model::Uuid;
use rsm_core::testkit::test_server_vars;
use rsm_core::{IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use rsm_facade::{CACHE_METRICS, Store};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The longest any failing call below may take: a liveness bound (the cloud clients' own timeouts are
/// 30 s), not a speed figure.
pub const LIVENESS: Duration = Duration::from_secs(10);

/// The store under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cloud {
    /// Azure Blob on Azurite (`tools/servers/azurite.sh`), shared-key signed.
    Azure,
    /// GCS on fake-gcs-server (`tools/servers/fake-gcs.sh`), anonymous.
    Gcs,
}

impl Cloud {
    /// The prefix of its client settings (`azure.max.retries`, …).
    pub fn prefix(self) -> &'static str {
        match self {
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

    /// The store's throttling answers, as it answers them: Azure `503 ServerBusy` (XML), GCS `429
    /// rateLimitExceeded` and `503 backendError` (JSON).
    pub fn throttles(self) -> &'static [Answer] {
        match self {
            Cloud::Azure => &[Answer::AZURE_SERVER_BUSY],
            Cloud::Gcs => &[Answer::GCS_RATE_LIMIT, Answer::GCS_BACKEND_ERROR],
        }
    }

    /// What selects the store's upload requests in the proxy: Azure's `PUT`s (a blob, or a block), GCS's
    /// JSON API uploads (`POST /upload/storage/v1/b/…?uploadType=media`, the backend's own requests and
    /// retries, not object_store's).
    pub fn uploads(self) -> &'static [&'static str] {
        match self {
            Cloud::Azure => &["PUT "],
            Cloud::Gcs => &["uploadType="],
        }
    }

    /// What selects the store's delete requests in the proxy ([`CountingProxy::set_fault_on`]): Azure's
    /// blob batch (`POST …?restype=container&comp=batch`) and single `DELETE`s, GCS's `DELETE`s.
    pub fn deletes(self) -> &'static [&'static str] {
        match self {
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
        let (proxy, url) = match cloud {
            // Azurite's endpoint names the account in its path; the client signs no Host.
            Cloud::Azure => (
                CountingProxy::in_front_of(&v["RSM_TEST_AZURE_ENDPOINT"]),
                format!("az://{}/store-faults-{name}-{}/", v["RSM_TEST_AZURE_CONTAINER"], Uuid::random()),
            ),
            // fake-gcs-server serves its XML API (reads, listings, deletes) only to its public host.
            Cloud::Gcs => (
                CountingProxy::in_front_of_as_server(&v["RSM_TEST_GCS_ENDPOINT"]),
                format!("gs://{}/store-faults-{name}-{}/", v["RSM_TEST_GCS_BUCKET"], Uuid::random()),
            ),
        };
        Some(Bench { cloud, v, proxy, url })
    }

    /// A store opened afresh (empty caches, its own breaker) with `extra` settings.
    pub fn open(&self, extra: &[(&str, &str)]) -> Store {
        self.open_as(extra, true)
    }

    /// A store opened afresh with `extra` settings, with the client's waits after throttled answers
    /// shortened (`short_throttle_waits`, see below) or at their defaults.
    pub fn open_as(&self, extra: &[(&str, &str)], short_throttle_waits: bool) -> Store {
        let mut settings: BTreeMap<String, String> = match self.cloud {
            Cloud::Azure => [
                ("azure.endpoint.url", self.proxy.url_for(&self.v["RSM_TEST_AZURE_ENDPOINT"])),
                ("azure.account.name", self.v["RSM_TEST_AZURE_ACCOUNT"].clone()),
                ("azure.account.key", self.v["RSM_TEST_AZURE_KEY"].clone()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            Cloud::Gcs => [
                ("gcs.endpoint.url", self.proxy.url_for(&self.v["RSM_TEST_GCS_ENDPOINT"])),
                ("gcs.credentials.default", "false".to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        };
        // The wait a throttled answer adds before the store's next request: 50 ms doubled for each
        // throttled answer in a row, at most 100 ms: these tests count requests, and at the defaults (1 s,
        // up to 20 s) the throttled calls of the breaker's test alone outlast its `fetch.timeout.ms` of
        // 10 s (see [`a_store_that_answers_again_is_asked_again`] for what the defaults do).
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
}

/// A request as `METHOD last-path-part (range) fault`, for the figures printed.
pub fn describe(x: &Seen) -> String {
    let name = x.target.rsplit('/').next().unwrap_or_default();
    let name = name.rsplit("%2F").next().unwrap_or(name);
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
/// the store answers again, the same reads give the right bytes. Returns the figures of each case.
pub fn fetch_gives_up_within_fetch_timeout(cloud: Cloud) -> Vec<FetchFigures> {
    // (case, fault, whether each step must time out)
    let cases = [
        ("black hole", Fault::Blackhole, true),
        ("first byte after 3 s", Fault::Slow { first_byte_ms: 3_000, bytes_per_sec: 1 << 20 }, true),
        ("512 B/s", Fault::Slow { first_byte_ms: 0, bytes_per_sec: 512 }, true),
        ("slow, in time", Fault::Slow { first_byte_ms: 20, bytes_per_sec: 4 << 20 }, false),
    ];
    let mut out = Vec::new();
    for (case, fault, times_out) in cases {
        let Some(b) = Bench::new(cloud, "fetch") else { return out };
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
        out.push(FetchFigures {
            case,
            open: (took_open, sent_open),
            bytes: (took_bytes, sent_bytes),
            index: (took_index, sent_index),
        });
    }
    out
}

/// With `store.breaker.failures` 3 and `<p>.max.retries` 1, a store that refuses connections, or answers
/// `answer` (its throttling), opens the breaker after three failed calls (each after its retry); calls
/// then fail at once with the breaker's error and send no request at all, nor open a connection; once the
/// store is back and `store.breaker.open.ms` has passed, one call probes, and succeeds, and the breaker
/// closes. Returns the requests each of the three failed calls sent.
pub fn breaker_opens_and_refuses_without_requests(cloud: Cloud, case: &str, fault: Fault) -> Option<Vec<usize>> {
    const OPEN_MS: u64 = 1_500;
    let b = Bench::new(cloud, "breaker")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let retries = cloud.key("max.retries");
    let store = b.open(&[
        ("store.breaker.failures", "3"),
        ("store.breaker.open.ms", &OPEN_MS.to_string()),
        (&retries, "1"),
        // Long enough for the client's answer (after its retry): the breaker judges whole calls, and a
        // call that fetch.timeout.ms gives up on is dropped, not judged.
        ("fetch.timeout.ms", "10000"),
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
            println!("{cloud:?} {case}: a failed call: {}", e.full_message());
        }
        sent.push(n);
        let want = if i < 3 { (0, 0, 0) } else { (1, 1, 0) };
        assert_eq!(breaker(&store), want, "{case}: after {i} failed calls: {e}");
    }
    let opened_at = Instant::now();

    // Open: calls fail at once, and the store sees nothing of them (no request, no connection).
    let (received, connections) = (b.proxy.received(), b.proxy.connections());
    let t = Instant::now();
    for i in 0..5 {
        let e = store.fetch_index(&s0.md, IndexType::Offset).expect_err(case);
        let msg = e.to_string();
        assert!(e.is_transient(), "{case}: {e}");
        assert!(msg.contains("is failing (3 transient failures in a row"), "{case} {i}: {msg}");
        assert!(msg.contains(b.url.trim_end_matches('/')), "{case} {i}: names the store: {msg}");
    }
    let e = read_all(&store, &segs[1], 0, None).expect_err(case);
    assert!(e.to_string().contains("is failing"), "{case}: a fetch's bytes: {e}");
    println!("{cloud:?} {case}: refused: {e}");
    let took = t.elapsed();
    assert_eq!(b.proxy.received(), received, "{case}: refused calls send no request");
    assert_eq!(b.proxy.connections(), connections, "{case}: nor open a connection");
    let (state, opened, refused) = breaker(&store);
    assert_eq!((state, opened), (1, 1), "{case}");
    assert!(refused >= 6, "{case}: {refused} refused");
    println!("{cloud:?} {case}: requests per failed call {sent:?}; 6 refused calls in {took:?}, sending nothing");

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
    /// Twenty calls with the breaker at 3: their requests, their time, the calls refused at once.
    pub burst: Option<(usize, Duration, u64)>,
}

/// A store that throttles every request with `answer`: the client retries a request `<p>.max.retries`
/// times (3 by default), no more, and the call fails as retriable, naming the status; with the breaker on,
/// a burst of 20 calls (when `burst`) sends at most the breaker's threshold of calls' worth of requests,
/// fewer requests than calls.
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

    // With the breaker: 20 calls.
    const CALLS: usize = 20;
    let with_breaker = b.open(&[
        ("store.breaker.failures", "3"),
        ("store.breaker.open.ms", "60000"),
        ("store.breaker.open.max.ms", "60000"),
        ("fetch.timeout.ms", "10000"),
    ]);
    b.proxy.set_fault(Fault::Pass);
    with_breaker.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Throttle(answer));
    let (results, took, sent) =
        b.timed(|| (0..CALLS).map(|_| with_breaker.fetch_index(&s0.md, IndexType::Offset)).collect::<Vec<_>>());
    assert!(results.iter().all(|r| r.as_ref().is_err_and(|e| e.is_transient())));
    let (state, opened, refused) = breaker(&with_breaker);
    assert_eq!((state, opened, refused), (1, 1, CALLS as u64 - 3), "{status}");
    assert!(sent <= 3 * (1 + 3), "{status}: at most the threshold's calls' worth of requests: {sent}");
    assert!(sent < CALLS, "{status}: fewer requests ({sent}) than calls ({CALLS})");
    assert!(took < LIVENESS, "{took:?}");
    println!(
        "{cloud:?} throttled ({status}), breaker at 3: {CALLS} calls sent {sent} requests in {took:?}, {refused} \
         refused at once"
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

/// Answers cut mid-body (the connection closed after `n` bytes of each answer's body, each retry's too):
/// a fetch (whole, or a range) and an index fetch give the right bytes or fail as retriable, never other
/// bytes. Each case reads through a store opened for it (the manifest's answer is cut too). `cases`: the
/// bytes each answer keeps, and whether the whole fetch must succeed (`None`: either way).
pub fn cut_answers_give_the_right_bytes_or_an_error(cloud: Cloud, cases: &[(usize, Option<bool>)]) -> Vec<CutFigures> {
    let mut out = Vec::new();
    let Some(b) = Bench::new(cloud, "cut") else { return out };
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    let settings = [("chunk.size", "65536"), ("fetch.timeout.ms", "20000"), ("store.breaker.failures", "0")];
    b.open(&settings).copy(&s0.md, &s0.data).unwrap();
    let (start, end) = (70_000, 150_000);
    let range = &s0.log[start as usize..=end as usize];
    for &(n, whole_ok) in cases {
        b.proxy.set_fault(Fault::ResetAfter(n));
        let cold = b.open(&settings);
        let from = b.proxy.received();
        let (whole, took_whole, sent_whole) = b.timed(|| read_all(&cold, s0, 0, None));
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
            b.sent_since(from),
        );
        if let Some(ok) = whole_ok {
            assert_eq!(whole.is_ok(), ok, "cut after {n}: whole: {}", show(&whole));
        }
        out.push(CutFigures {
            after: n,
            whole: (whole.is_ok(), sent_whole),
            range: (part.is_ok(), sent_part),
            index: (index.is_ok(), sent_index),
        });
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
    }
    b.proxy.set_fault(Fault::Pass);
    assert!(read_all(&b.open(&settings), s0, 0, None).unwrap() == s0.log);
    println!("{cloud:?} requests by fault {:?}", by_fault(&b.proxy.seen()));
    out
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
/// removes them. Either way, once the store answers, the copy again succeeds. The cases run at once, each
/// on a proxy and a key prefix of its own.
pub fn copy_gives_up_within_copy_timeout(cloud: Cloud, cases: Vec<CopyCase>) -> Vec<CopyFigures> {
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
    let of_segment = |store: &Store| -> Vec<String> {
        let (objects, _) = store.list_objects().unwrap();
        objects.into_iter().map(|o| o.key).filter(|k| k.contains(&s0.id())).collect()
    };
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
        seen.iter().filter(|x| x.target.contains(".log") && x.fault != Fault::Pass).map(|x| x.at).collect();
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
    let (objects, _) = store.list_objects().unwrap();
    let left: Vec<String> = objects.into_iter().map(|o| o.key).filter(|k| k.contains(&s0.id())).collect();
    assert!(left.is_empty(), "{status}: left behind: {left:?}");
    store.copy(&s0.md, &s0.data).unwrap();
    assert!(read_all(&b.open(&[]), s0, 0, None).unwrap() == s0.log, "{status}");
    Some(ThrottledCopy { took, uploads, waits, others, message })
}

/// A store that hangs opens the breaker through the facade's own deadlines: each fetch `fetch.timeout.ms`
/// gives up on is a transient failure; after 3 in a row the breaker is open and the next fetches fail at
/// once, sending nothing. Returns the requests of each of 6 fetches.
pub fn a_hung_store_opens_the_breaker(cloud: Cloud) -> Option<Vec<usize>> {
    let b = Bench::new(cloud, "hung")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let store = b.open(&[("store.breaker.failures", "3"), ("fetch.timeout.ms", "300")]);
    store.copy(&s0.md, &s0.data).unwrap();
    store.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Blackhole);
    let from = b.proxy.received();
    let mut sent = Vec::new();
    for _ in 0..6 {
        let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        assert!(r.is_err_and(|e| e.is_transient()) && took < LIVENESS);
        sent.push(n);
    }
    // A request of the third fetch may reach the proxy late, on a loaded machine.
    std::thread::sleep(Duration::from_millis(300));
    let all = b.proxy.received() - from;
    println!(
        "{cloud:?} a hung store: requests per fetch {sent:?}; breaker (state, opened, refused) {:?}",
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
/// throttling waits): one fetch throttled with `answer` fails as retriable; once the store answers again,
/// fetches (one every 200 ms, for 5 s) reach it again and succeed. Returns each fetch's figures.
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
    Some(after)
}
