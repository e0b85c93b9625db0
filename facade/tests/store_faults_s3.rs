//! A store's bad days, on S3 (moto) behind a fault-injecting HTTP proxy of this test's own
//! (`proxy::CountingProxy`, switched at run time with `set_fault`), through the facade (`rsm_facade::Store`,
//! what the broker plugin and the C ABI call).
//!
//! What is proven, test by test (figures from a run on moto 5.2.5, on a loaded 2-core machine: they
//! describe the behaviour, and only liveness bounds, 10 s, are asserted of times):
//! - `fetch.timeout.ms` (300 here) bounds each wait of a fetch, at each step (the open of a store whose
//!   manifest cache is empty, a piece of the log's bytes, an index), on a store that never answers (black
//!   hole), whose first byte comes after 3 s, or that trickles its answer at 512 B/s: each step fails as
//!   retriable, naming the setting and the segment, after ~300 ms and one request, where the S3 client
//!   alone would wait 30 s. A store slow but in time (first byte after 20 ms, 4 MiB/s) is read whole (open
//!   and bytes ~55 ms, two requests). Once the store answers again, the same reads give the right bytes.
//! - The breaker (`store.breaker.failures` 3, `s3.max.retries` 1), on a store that closes every connection
//!   without answering (refuse) or throttles (`503 Slow Down`): each of the first 3 failed calls sends 2
//!   requests (the attempt and its retry) and fails with the store's own error; the breaker is then open
//!   (state 1, opened 1), and 6 more calls (index fetches and a fetch's bytes) fail in ~0.3 ms all told with
//!   "store s3://… is failing (3 transient failures in a row, …)", without a request or even a connection
//!   reaching the proxy. After `store.breaker.open.ms` (1.5 s) it is half-open (2); the probe sends one
//!   request, succeeds, and the breaker closes (0).
//! - Throttling is retried a bounded number of times: with the default 3 retries, one failing index fetch
//!   sends exactly 1 + 3 requests (0.4–0.7 s of backoff with jitter). With the breaker at 3, 20 calls send 12 requests
//!   (3 calls × 4), the other 17 are refused at once (~1.5 s in all): fewer requests than calls.
//! - The retry budget (`s3.retry.budget.burst` 5, `.percent` 10; default 50 and 10) under `503 Slow Down`,
//!   without the breaker: 12 calls send 4, 2, then 1 request each (16 in all, where the client alone sends
//!   48), each failing as retriable, the last ones saying the budget is spent; the first call's retries
//!   were paced 157, 323 and 490 ms apart (`s3.throttle.backoff.ms` 100, doubling, at least half each);
//!   after 23 successful requests a throttled call was retried twice again.
//! - Answers cut mid-body: never other bytes than the segment's. The client resumes a cut answer with a
//!   ranged GET from where it was cut, within its retries (4 answers in all), so: cut after 0 or 100 bytes,
//!   the manifest (756 bytes, first read whole) fails after 4 requests, as retriable; after 4 KiB or 40 KB,
//!   the whole log (one GET of its 306,835 bytes) fails after 4 requests, a range of 80 KB (blocks
//!   65,111–195,129) succeeds after 4 requests at 40 KB; after 100 KB the whole log is read right in 4
//!   GETs of the log; an index fetch (one 584-byte ranged GET, after the manifest) fails with the manifest at 0
//!   and 100 bytes, and is whole from 4 KiB on.
//! - `copy.timeout.ms` (2000 here; S3 client timeouts 60 s): a copy to a store that hangs fails as
//!   retriable in ~2 s, then deletes what it wrote within the same bound again. Hanging everything: 3
//!   requests (the log's and the indexes' PUTs, the cleanup's first delete), ~4 s, "deleting what it wrote
//!   timed out too", nothing written. Hanging only the manifest's PUT (5 requests) or only the log's (4):
//!   ~2 s, "what it wrote was deleted", and nothing of the segment is left. Hanging the manifest's PUT and
//!   the deletes: ~4 s, the log and the indexes are left without a manifest, and `sweep_orphans` removes
//!   exactly them. The copy again succeeds each time.
//! - A hung store opens the breaker through facade calls: each call `fetch.timeout.ms` gives up on counts as
//!   a transient failure (the calls it dropped never ended, so the breaker saw nothing of them); the fetches
//!   after it opened reach no store ([`a_hung_store_opens_the_breaker_through_timed_out_fetches`]).
//!
//! Needs moto (`eval "$(tools/servers/moto.sh start)"`); without it the tests fail, unless `RSM_SKIP_S3=1`
//! outside CI.

use rsm_core::format::partition::LocalPartition;
use rsm_core::format::writer::{PartitionSpec, generate_partition};
use rsm_core::model::Uuid;
use rsm_core::testkit::s3_test_server;
use rsm_core::{IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use rsm_facade::{CACHE_METRICS, Store};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

mod proxy;
use proxy::{CountingProxy, Fault, by_fault};

/// The longest any failing call below may take: a liveness bound (the S3 client's own timeouts are 30 s),
/// not a speed figure.
const LIVENESS: Duration = Duration::from_secs(10);

/// A store of its own (a fresh key prefix) on moto behind a proxy of its own.
struct Bench {
    v: BTreeMap<String, String>,
    proxy: CountingProxy,
    url: String,
}

impl Bench {
    fn new(name: &str) -> Option<Bench> {
        let v = s3_test_server()?;
        let proxy = CountingProxy::in_front_of(&v["RSM_TEST_S3_ENDPOINT"]);
        let url = format!("s3://{}/store-faults-{name}-{}/", v["RSM_TEST_S3_BUCKET"], Uuid::random());
        Some(Bench { v, proxy, url })
    }

    /// A store opened afresh (empty caches, its own breaker) with `extra` settings.
    fn open(&self, extra: &[(&str, &str)]) -> Store {
        let mut settings: BTreeMap<String, String> = [
            ("s3.endpoint.url", format!("http://127.0.0.1:{}", self.proxy.port)),
            ("s3.region", self.v["RSM_TEST_S3_REGION"].clone()),
            ("aws.access.key.id", self.v["RSM_TEST_S3_ACCESS_KEY"].clone()),
            ("aws.secret.access.key", self.v["RSM_TEST_S3_SECRET_KEY"].clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        settings.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Store::open(&self.url, &settings).unwrap()
    }

    /// Runs `f`, and returns what it returned, how long it took and how many requests the proxy received
    /// meanwhile.
    fn timed<T>(&self, f: impl FnOnce() -> T) -> (T, Duration, usize) {
        let (before, t) = (self.proxy.received(), Instant::now());
        let r = f();
        (r, t.elapsed(), self.proxy.received() - before)
    }
}

/// A closed segment of a partition: its metadata, its files and its log's bytes.
struct Segment {
    md: RemoteLogSegmentMetadata,
    data: LogSegmentData,
    log: Vec<u8>,
}

impl Segment {
    fn id(&self) -> String {
        self.md.remote_log_segment_id.id.to_string()
    }

    fn offset_index(&self) -> Vec<u8> {
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
fn small(dir: &std::path::Path) -> Vec<Segment> {
    let s = segments(&rsm_core::testkit::small_topic_partition(dir, "faults", 1));
    assert!(s.len() >= 2, "{} closed segments", s.len());
    s
}

/// A partition of segments of a few 64 KiB chunks each.
fn chunked(dir: &std::path::Path) -> Vec<Segment> {
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
fn read_all(store: &Store, s: &Segment, start: i32, end: Option<i32>) -> rsm_core::Result<Vec<u8>> {
    let mut r = store.fetch(&s.md, start, end)?;
    let mut out = Vec::new();
    while let Some(b) = r.next_bytes()? {
        out.extend_from_slice(&b);
    }
    Ok(out)
}

/// The value of the metric `name` of [`Store::cache_metrics`].
fn metric(store: &Store, name: &str) -> u64 {
    let i = CACHE_METRICS.iter().position(|n| *n == name).unwrap_or_else(|| panic!("no metric {name}"));
    store.cache_metrics()[i]
}

/// The breaker's state, opening count and refused calls.
fn breaker(store: &Store) -> (u64, u64, u64) {
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

/// Each wait of a fetch is bounded by `fetch.timeout.ms` on a store that does not answer (a black hole),
/// answers late, or answers too slowly, at each of its steps: the open of a cold store (its manifest), a
/// piece of the log's bytes, an index. A store slow but within the bound is read whole. Once the store
/// answers again, the same reads give the right bytes.
#[test]
fn a_fetch_gives_up_within_fetch_timeout_when_the_store_does_not_answer() {
    // (case, fault, whether each step must time out)
    let cases = [
        ("black hole", Fault::Blackhole, true),
        ("first byte after 3 s", Fault::Slow { first_byte_ms: 3_000, bytes_per_sec: 1 << 20 }, true),
        ("512 B/s", Fault::Slow { first_byte_ms: 0, bytes_per_sec: 512 }, true),
        ("slow, in time", Fault::Slow { first_byte_ms: 20, bytes_per_sec: 4 << 20 }, false),
    ];
    for (case, fault, times_out) in cases {
        let Some(b) = Bench::new("fetch") else { return };
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
            "{case}: open {took_open:?} ({sent_open} requests), log bytes {took_bytes:?} ({sent_bytes}), index \
             {took_index:?} ({sent_index})"
        );
        if times_out {
            timed_out(&format!("{case}: open"), open, s1, took_open);
            timed_out(&format!("{case}: log bytes"), bytes.0, s0, took_bytes);
            assert_eq!(bytes.1.unwrap().unwrap(), 0, "{case}: the failed reader has ended");
            timed_out(&format!("{case}: index"), index, s0, took_index);
        } else {
            assert!(open.unwrap() == s1.log, "{case}: the open");
            assert!(bytes.0.unwrap() > 0, "{case}: log bytes");
            assert_eq!(index.unwrap().as_ref(), s0.offset_index(), "{case}: index");
        }
        assert!(sent_open >= 1 && sent_index >= 1, "{case}: the store was asked");

        b.proxy.set_fault(Fault::Pass);
        assert!(read_all(&cold, s1, 0, None).unwrap() == s1.log, "{case}: the open, the store back");
        assert!(read_all(&warm, s0, 0, None).unwrap() == s0.log, "{case}: log bytes, the store back");
        assert_eq!(warm.fetch_index(&s0.md, IndexType::Offset).unwrap().as_ref(), s0.offset_index(), "{case}");
        println!("{case}: requests by fault {:?}", by_fault(&b.proxy.seen()));
    }
}

/// With `store.breaker.failures` 3, a store that refuses connections or throttles opens the breaker after
/// three failed calls (each after its retries); calls then fail at once with the breaker's error and send
/// no request at all; once the store is back and `store.breaker.open.ms` has passed, one call probes, and
/// succeeds, and the breaker closes.
#[test]
fn the_breaker_opens_on_a_failing_store_and_its_refusals_send_nothing() {
    const OPEN_MS: u64 = 1_500;
    for (case, fault) in [("refused", Fault::Refuse), ("throttled", Fault::SlowDown)] {
        let Some(b) = Bench::new("breaker") else { return };
        let t = tempfile::tempdir().unwrap();
        let segs = small(t.path());
        let s0 = &segs[0];
        let store = b.open(&[
            ("store.breaker.failures", "3"),
            ("store.breaker.open.ms", &OPEN_MS.to_string()),
            ("s3.max.retries", "1"),
            ("s3.throttle.backoff.ms", "50"),
            ("s3.throttle.backoff.max.ms", "200"),
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
            sent.push(n);
            let want = if i < 3 { (0, 0, 0) } else { (1, 1, 0) };
            assert_eq!(breaker(&store), want, "{case}: after {i} failed calls: {e}");
        }
        let opened_at = Instant::now();
        // Each failed call sent its first attempt and its one retry.
        assert_eq!(sent, [2, 2, 2], "{case}: requests per failed call");

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
        println!("{case}: refused: {e}");
        let took = t.elapsed();
        assert_eq!(b.proxy.received(), received, "{case}: refused calls send no request");
        assert_eq!(b.proxy.connections(), connections, "{case}: nor open a connection");
        let (state, opened, refused) = breaker(&store);
        assert_eq!((state, opened), (1, 1), "{case}");
        assert!(refused >= 6, "{case}: {refused} refused");
        println!("{case}: requests per failed call {sent:?}; 6 refused calls in {took:?}, sending nothing");

        // Back: after the interval, one call probes and succeeds; the breaker closes.
        b.proxy.set_fault(Fault::Pass);
        std::thread::sleep(Duration::from_millis(OPEN_MS + 200).saturating_sub(opened_at.elapsed()));
        assert_eq!(breaker(&store).0, 2, "{case}: half-open once the interval has passed");
        let (r, _, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        assert_eq!(r.unwrap().as_ref(), s0.offset_index(), "{case}");
        assert_eq!(n, 1, "{case}: the probe");
        assert_eq!(breaker(&store).0, 0, "{case}: closed after the probe");
        assert!(read_all(&store, &segs[1], 0, None).unwrap() == segs[1].log, "{case}");
        println!("{case}: requests by fault {:?}", by_fault(&b.proxy.seen()));
    }
}

/// A throttling store (`503 Slow Down` to every request): the client retries a request `s3.max.retries`
/// times (3 by default), no more; with the breaker on, a burst of calls sends at most the breaker's
/// threshold of calls' worth of requests, fewer requests than calls.
#[test]
fn throttling_is_retried_a_bounded_number_of_times_and_the_breaker_cuts_the_requests() {
    let Some(b) = Bench::new("throttled") else { return };
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let no_breaker = b.open(&[
        ("store.breaker.failures", "0"),
        ("fetch.timeout.ms", "10000"),
        ("s3.throttle.backoff.ms", "50"),
        ("s3.throttle.backoff.max.ms", "200"),
    ]);
    for s in &segs {
        no_breaker.copy(&s.md, &s.data).unwrap();
    }
    no_breaker.manifest(&s0.md).unwrap();

    b.proxy.set_fault(Fault::SlowDown);
    let (r, took, sent) = b.timed(|| no_breaker.fetch_index(&s0.md, IndexType::Offset));
    let e = r.expect_err("throttled");
    assert!(e.is_transient(), "{e}");
    assert!(e.full_message().contains("503"), "{}", e.full_message());
    assert!(took < LIVENESS, "{took:?}");
    assert_eq!(sent, 1 + 3, "the first attempt and s3.max.retries retries: {e}");
    println!("throttled, no breaker: one call sent {sent} requests in {took:?}: {}", e.full_message());

    // With the breaker: 20 calls.
    const CALLS: usize = 20;
    let with_breaker = b.open(&[
        ("store.breaker.failures", "3"),
        ("store.breaker.open.ms", "60000"),
        ("store.breaker.open.max.ms", "60000"),
        ("fetch.timeout.ms", "10000"),
        ("s3.throttle.backoff.ms", "50"),
        ("s3.throttle.backoff.max.ms", "200"),
    ]);
    b.proxy.set_fault(Fault::Pass);
    with_breaker.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::SlowDown);
    let (results, took, sent) =
        b.timed(|| (0..CALLS).map(|_| with_breaker.fetch_index(&s0.md, IndexType::Offset)).collect::<Vec<_>>());
    assert!(results.iter().all(|r| r.as_ref().is_err_and(|e| e.is_transient())));
    let (state, opened, refused) = breaker(&with_breaker);
    assert_eq!((state, opened, refused), (1, 1, CALLS as u64 - 3));
    assert!(sent <= 3 * (1 + 3), "at most the threshold's calls' worth of requests: {sent}");
    assert!(sent < CALLS, "fewer requests ({sent}) than calls ({CALLS})");
    assert!(took < LIVENESS, "{took:?}");
    println!("throttled, breaker at 3: {CALLS} calls sent {sent} requests in {took:?}, {refused} refused at once");
    println!("requests by fault {:?}", by_fault(&b.proxy.seen()));
}

/// The store's retry budget (`s3.retry.budget.burst` 5, `.percent` 10) and the wait before retrying a
/// throttled answer (`s3.throttle.backoff.ms` 100, `.max.ms` 400): under `503 Slow Down`, without the breaker, each
/// throttled answer spends one retry (the last attempt's too): the first call's 4 answers spend 4, the
/// second call is retried once and spends the last, and every call after sends one request and fails at
/// once as retriable, saying the budget is spent: 12 calls send 12 + 4 requests, where object_store alone
/// would send 12 × 4. Each request after a throttled answer waits at least half the doubled wait (the first
/// call's retries: 50, 100, 200 ms). Successes earn retries back, a tenth each: after 20 successful requests
/// or more, a throttled call is retried twice again (three times from 30).
#[test]
fn a_throttling_store_sees_one_request_per_call_once_the_retry_budget_is_spent() {
    let Some(b) = Bench::new("budget") else { return };
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let settings = [
        ("store.breaker.failures", "0"),
        ("fetch.timeout.ms", "20000"),
        ("s3.retry.budget.burst", "5"),
        ("s3.retry.budget.percent", "10"),
        ("s3.throttle.backoff.ms", "100"),
        ("s3.throttle.backoff.max.ms", "400"),
    ];
    b.open(&settings).copy(&segs[0].md, &segs[0].data).unwrap();
    let store = b.open(&settings); // a full budget
    store.manifest(&segs[0].md).unwrap(); // one success: the budget stays full
    b.proxy.set_fault(Fault::SlowDown);
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
    assert!(last.contains("retry budget is spent") && last.contains("SlowDown"), "{last}");
    // The first call's retries, after each throttled answer: waits of at least 50, 100 and 200 ms.
    let seen = b.proxy.seen();
    let gaps: Vec<Duration> = seen[first..first + 4].windows(2).map(|w| w[1].at - w[0].at).collect();
    for (gap, least) in gaps.iter().zip([50, 100, 200]) {
        assert!(*gap >= Duration::from_millis(least), "retry after a throttled answer: {gaps:?}");
    }
    println!("throttled, budget 5: requests per call {sent:?}; the first call's retries came after {gaps:?}");
    println!("the last call: {last}");

    // Successes earn it back, a tenth of a retry each: copies of the other segments, 20 requests or more.
    b.proxy.set_fault(Fault::Pass);
    let before = b.proxy.received();
    while b.proxy.received() - before < 20 {
        for s in &segs[1..] {
            store.copy(&s.md, &s.data).unwrap();
        }
        for s in &segs[1..] {
            store.delete(&s.md).unwrap();
        }
    }
    store.copy(&segs[1].md, &segs[1].data).unwrap();
    let successes = b.proxy.received() - before;
    assert!(successes >= 20, "{successes}");
    b.proxy.set_fault(Fault::SlowDown);
    let (r, _, n) = b.timed(|| store.fetch_index(&segs[1].md, IndexType::Offset));
    assert!(r.is_err());
    assert_eq!(n, (successes / 10 + 1).min(4), "{successes} successful requests earned {} retries", successes / 10);
    println!("after {successes} successful requests, a throttled call sent {n} requests");
}

/// Answers cut mid-body (the connection closed after `n` bytes of each answer's body, each retry's too):
/// a fetch (whole, or a range) and an index fetch give the right bytes or fail as retriable, never other
/// bytes. The client resumes a cut read where it was cut (a ranged GET from there), within its retries
/// (`s3.max.retries`, 3): an answer cut late enough is read whole over a few requests, correct; one cut
/// early fails after its retries. Each case reads through a store opened for it (the manifest's answer is
/// cut too).
#[test]
fn an_answer_cut_mid_body_gives_the_right_bytes_or_an_error() {
    let Some(b) = Bench::new("cut") else { return };
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    let settings = [("chunk.size", "65536"), ("fetch.timeout.ms", "20000"), ("store.breaker.failures", "0")];
    b.open(&settings).copy(&s0.md, &s0.data).unwrap();
    let (start, end) = (70_000, 150_000);
    let range = &s0.log[start as usize..=end as usize];
    // (bytes each answer keeps, whether the whole fetch must succeed: `None` either way)
    let cases = [
        (0, Some(false)),
        (100, Some(false)),
        (4_096, None),
        (40_000, None),
        (100_000, Some(true)),
        (1 << 20, Some(true)),
    ];
    let mut resumed = false;
    for (n, whole_ok) in cases {
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
        let ranges: Vec<String> = b.proxy.seen()[from..]
            .iter()
            .map(|x| {
                format!("{} {}", x.target.rsplit('.').next().unwrap_or_default(), x.range.as_deref().unwrap_or("all"))
            })
            .collect();
        println!(
            "cut after {n} bytes: whole {} in {took_whole:?} ({sent_whole} requests), range {} in {took_part:?} \
             ({sent_part}), index {} in {took_index:?} ({sent_index}); sent {ranges:?}",
            show(&whole),
            show(&part),
            show(&index),
        );
        if let Some(ok) = whole_ok {
            assert_eq!(whole.is_ok(), ok, "cut after {n}: whole: {}", show(&whole));
        }
        resumed |= whole.is_ok() && sent_whole > 2;
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
    assert!(resumed, "some whole fetch was read over several cut answers");
    b.proxy.set_fault(Fault::Pass);
    assert!(read_all(&b.open(&settings), s0, 0, None).unwrap() == s0.log);
    println!("requests by fault {:?}", by_fault(&b.proxy.seen()));
}

/// A copy to a store that stops answering (every request, or only some: the writes of one of the segment's
/// objects, or the manifest's write and the deletes) fails as retriable after `copy.timeout.ms`, well
/// before the S3 client's own timeouts (60 s here), and deletes what it wrote, within the same bound again.
/// When the store answers the deletes, nothing of the segment is left; when the deletes hang too, the
/// objects written before are left without a manifest, and a sweep of orphans removes them. Either way,
/// once the store answers, the copy again succeeds.
#[test]
fn a_copy_gives_up_within_copy_timeout_and_leaves_nothing_or_orphans() {
    // (case, the requests the black hole takes: those whose target contains one of these, or all; the
    // objects left; how the error says the cleanup went)
    let deleted = "what it wrote was deleted";
    let not_deleted = "deleting what it wrote timed out too";
    let cases: [(&str, &[&str], usize, &str); 4] = [
        ("everything", &[], 0, not_deleted),
        ("the manifest", &[".manifest"], 0, deleted),
        ("the log", &[".log"], 0, deleted),
        ("the manifest and the deletes", &[".manifest", "?delete"], 2, not_deleted),
    ];
    // The cases wait on timeouts, each on a proxy and a key prefix of its own: run at once.
    std::thread::scope(|scope| {
        for case in cases {
            scope.spawn(move || copy_case(case));
        }
    });
}

/// One case of [`a_copy_gives_up_within_copy_timeout_and_leaves_nothing_or_orphans`].
fn copy_case((case, only, want_left, cleanup): (&str, &[&str], usize, &str)) {
    let Some(b) = Bench::new("copy") else { return };
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let store = b.open(&[
        ("copy.timeout.ms", "2000"),
        ("s3.api.call.attempt.timeout", "60000"),
        ("s3.api.call.timeout", "60000"),
    ]);
    if only.is_empty() {
        b.proxy.set_fault(Fault::Blackhole);
    } else {
        b.proxy.set_fault_on(Fault::Blackhole, only);
    }
    let from = b.proxy.received();
    let (r, took, _) = b.timed(|| store.copy(&s0.md, &s0.data));
    let e = r.expect_err(case);
    let msg = e.to_string();
    assert!(e.is_transient(), "{case}: {e}");
    assert!(msg.contains("copy.timeout.ms (2000 ms)") && msg.contains(&s0.id()), "{case}: {msg}");
    assert!(msg.ends_with(cleanup), "{case}: {msg}");
    assert!(took < LIVENESS, "{case}: {took:?}");
    let sent: Vec<String> = b.proxy.seen()[from..]
        .iter()
        .map(|x| format!("{} {} {:?}", x.method, x.target.rsplit('/').next().unwrap_or_default(), x.fault))
        .collect();
    println!("{case}: the copy failed in {took:?}: {msg}; sent {sent:?}");

    b.proxy.set_fault(Fault::Pass);
    let of_segment = |store: &Store| -> Vec<String> {
        let (objects, _) = store.list_objects().unwrap();
        objects.into_iter().map(|o| o.key).filter(|k| k.contains(&s0.id())).collect()
    };
    let left = of_segment(&store);
    assert_eq!(left.len(), want_left, "{case}: left behind: {left:?} ({msg})");
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
}

/// `copy.cleanup.recheck.ms` (1000 here): a copy that timed out with its manifest's PUT and its cleanup's
/// deletes hung leaves the log and the indexes (as above); once the store answers again, the second look
/// deletes them without anyone running a sweep. A copy again under the same id is kept whole: its start
/// cancels the look still pending.
#[test]
fn the_second_look_deletes_what_a_timed_out_copy_left() {
    let Some(b) = Bench::new("recheck") else { return };
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let settings = [
        ("copy.timeout.ms", "500"),
        ("copy.cleanup.recheck.ms", "1000"),
        ("s3.api.call.attempt.timeout", "60000"),
        ("s3.api.call.timeout", "60000"),
    ];
    let store = b.open(&settings);
    let of_segment = |s: &Segment| -> Vec<String> {
        let (objects, _) = store.list_objects().unwrap();
        objects.into_iter().map(|o| o.key).filter(|k| k.contains(&s.id())).collect()
    };
    for (s, copy_again) in [(&segs[0], false), (&segs[1], true)] {
        b.proxy.set_fault_on(Fault::Blackhole, &[".manifest", "?delete"]);
        let e = store.copy(&s.md, &s.data).expect_err("hung");
        assert!(e.to_string().ends_with("deleting what it wrote timed out too"), "{e}");
        b.proxy.set_fault(Fault::Pass);
        assert_eq!(of_segment(s).len(), 2, "the log and the indexes are left at first");
        if copy_again {
            store.copy(&s.md, &s.data).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1500));
        if copy_again {
            assert_eq!(of_segment(s).len(), 3, "the copy again is whole: {:?}", of_segment(s));
            assert!(read_all(&store, s, 0, None).unwrap() == s.log);
        } else {
            assert!(of_segment(s).is_empty(), "the second look deleted them: {:?}", of_segment(s));
        }
    }
}

/// A store that hangs opens the breaker through the facade's own deadlines: each fetch `fetch.timeout.ms`
/// gives up on is a transient failure (its calls were dropped unfinished, so the breaker saw none of them
/// end); after 3 in a row the breaker is open and the next fetches fail at once, sending nothing. Found by
/// this test: before, 8 fetches in a row took 300 ms and one request each, the breaker closed throughout.
#[test]
fn a_hung_store_opens_the_breaker_through_timed_out_fetches() {
    let Some(b) = Bench::new("hung") else { return };
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let store = b.open(&[("store.breaker.failures", "3"), ("fetch.timeout.ms", "300")]);
    store.copy(&s0.md, &s0.data).unwrap();
    store.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Blackhole);
    let mut sent = Vec::new();
    for _ in 0..6 {
        let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        assert!(r.is_err_and(|e| e.is_transient()) && took < LIVENESS);
        sent.push(n);
    }
    println!("a hung store: requests per fetch {sent:?}; breaker (state, opened, refused) {:?}", breaker(&store));
    assert_eq!(breaker(&store).0, 1, "open after 3 timed-out fetches in a row; requests per fetch {sent:?}");
    assert_eq!(sent[3..], [0, 0, 0], "the fetches after it opened reach no store");
}
