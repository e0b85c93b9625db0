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

mod copy;
mod fetch;

pub use copy::*;
pub use fetch::*;

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
pub fn read_all(store: &Store, s: &Segment, start: i64, end: Option<i64>) -> rsm_core::Result<Vec<u8>> {
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
