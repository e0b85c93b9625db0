//! A store's bad days, on GCS (fake-gcs-server v1.56.1) behind a fault-injecting HTTP proxy of the tests' own
//! (`proxy::CountingProxy`, switched at run time with `set_fault`), through the facade (`rsm_facade::Store`,
//! what the broker plugin and the C ABI call): the proof `store_faults_s3.rs` makes for S3, made for GCS with
//! GCS's own throttling answers, `429 Too Many Requests` with the JSON error body `rateLimitExceeded` and `503
//! Service Unavailable` with `backendError` (`proxy::Answer::GCS_RATE_LIMIT`, `GCS_BACKEND_ERROR`). The proxy
//! passes requests on with fake-gcs-server's own `Host` (`CountingProxy::in_front_of_as_server`: it serves its
//! XML API, object_store's reads, listings and deletes, only to its public host). Reads, listings and deletes
//! are object_store's GCS client; uploads are the backend's own JSON API requests, with their own retries
//! (`gcs.max.retries`). The tests are written once for Azure and GCS in `common/cloud_faults.rs`; this file
//! runs them on GCS and asserts what is GCS's.
//!
//! What is proven, test by test (figures from runs on a loaded 2-core machine: they describe the behaviour, and
//! only liveness bounds, 10 s, are asserted of times; request counts are asserted on fresh stores after few
//! calls, where the store's retry budget can only lower them). Each store but the last test's waits 50 ms,
//! doubled, at most 100 ms, after throttled answers (`gcs.throttle.backoff.ms`, `.max.ms`; 1 s and 20 s by
//! default):
//! - `fetch.timeout.ms` (300 here) bounds each wait of a fetch, at each step (the open of a store whose
//!   manifest cache is empty, a piece of the log's bytes, an index), on a store that never answers (black
//!   hole), whose first byte comes after 3 s, or that trickles its answer at 512 B/s: each step fails as
//!   retriable, naming the setting and the segment, after 301–306 ms and one request each, where the GCS client
//!   alone would wait 30 s. A store slow but in time (first byte after 20 ms, 4 MiB/s) is read whole (open and
//!   bytes 96–111 ms, two requests). Once the store answers again, the same reads give the right bytes.
//! - The breaker (`store.breaker.failures` 3, `gcs.max.retries` 1), on a store that closes every connection
//!   without answering (refuse) or answers `429 rateLimitExceeded`: each of the first 3 failed calls sends 2
//!   requests (the attempt and its retry) and fails with the store's own error; the breaker is then open (state
//!   1, opened 1), and 6 more calls (index fetches and a fetch's bytes) fail in 0.3–0.5 ms all told with "store
//!   gs://… is failing (3 transient failures in a row, …)", without a request or even a connection reaching the
//!   proxy. After `store.breaker.open.ms` (1.5 s) it is half-open (2); the probe sends one request, succeeds,
//!   and the breaker closes (0).
//! - Throttling is retried a bounded number of times: with the default 3 retries (`gcs.max.retries`), one
//!   failing index fetch sends exactly 1 + 3 requests, under `429` (0.68–0.74 s) as under `503` (0.58–0.59 s),
//!   and fails as retriable, its message carrying the status and GCS's JSON error. With the breaker at 3, 20
//!   calls under `429` send 12 requests (3 calls × 4), the other 17 are refused at once (2.15–2.5 s in all):
//!   fewer requests than calls.
//! - A copy whose uploads (JSON API media uploads, `POST …?uploadType=media`) are answered `429` or `503`
//!   (`gcs.max.retries` 2) fails as retriable in 0.57–0.64 s after 6 POSTs (the log's and the indexes', 3 each;
//!   the manifest is never tried), "HTTP status 429: {…rateLimitExceeded…}"; its cleanup's 4 DELETEs pass,
//!   nothing of the segment is left, and the copy then succeeds.
//! - Answers cut mid-body: never other bytes than the segment's. The client resumes a cut answer with a ranged
//!   GET from where it was cut, within its retries (4 answers in all), as on S3 and Azure: cut after 0 or 100
//!   bytes, the manifest (756 bytes, first read whole) fails after 4 requests, as retriable; after 4 KiB or 40
//!   KB, the whole log (one GET of its 306,835 bytes) fails after 4 requests of the log, a range of 80 KB
//!   (blocks 65,111–195,129) succeeds after 4 requests at 40 KB; after 100 KB the whole log is read right in 4
//!   GETs of the log (the range in 2); an index fetch (one 584-byte ranged GET, after the manifest) fails with
//!   the manifest at 0 and 100 bytes, and is whole from 4 KiB on.
//! - `copy.timeout.ms` (2000 here; GCS client timeouts 60 s): a copy to a store that hangs fails as retriable
//!   in ~2 s, then deletes what it wrote within the same bound again. GCS has no batch delete: each of the
//!   cleanup's two steps (the `.manifest` and the one-object `.segment`, then the `.log` and the `.indexes`) is
//!   a DELETE per key, where S3 and Azure send one batch. Hanging everything: 4 requests (the log's and the
//!   indexes' uploads, the cleanup's first two DELETEs), ~4.0 s, "deleting what it wrote timed out too",
//!   nothing written. Hanging only the manifest's upload (7 requests: 3 uploads, 4 DELETEs) or only the log's
//!   (6): ~2.0 s, "what it wrote was deleted", and nothing of the segment is left. Hanging the manifest's
//!   upload and the deletes (5 requests): ~4.0 s, the log and the indexes are left without a manifest, and
//!   `sweep_orphans` removes exactly them. The copy again succeeds each time.
//! - A hung store opens the breaker through facade calls: fetches `fetch.timeout.ms` gives up on (one request
//!   each) count as transient failures; the 3 fetches after it opened reach no store.
//! - A store that throttled once is asked again once it answers: with every setting at its default, one
//!   throttled fetch fails as retriable (at `fetch.timeout.ms`, after 2 requests), and the next fetch, the
//!   store answering, succeeds at once with 1 request. (It failed
//!   before the pause after a throttled answer became a time rather than a wait per request: the wait,
//!   500-1000 ms then, outlasted `fetch.timeout.ms`, each fetch was dropped while waiting, nothing answered,
//!   and 13 fetches in 5 s sent 0 requests.)
//!
//! Needs fake-gcs-server (`eval "$(tools/servers/fake-gcs.sh start)"`); without it the tests fail, unless
//! `RSM_SKIP_GCS=1` outside CI.

#[path = "common/cloud_faults.rs"]
mod faults;
mod proxy;

use faults::{Cloud, DELETED, NOT_DELETED};
use proxy::Fault;

const CLOUD: Cloud = Cloud::Gcs;

/// Each wait of a fetch is bounded by `fetch.timeout.ms` on a store that does not answer (a black hole),
/// answers late, or answers too slowly, at each of its steps (the open of a cold store, a piece of the log's
/// bytes, an index), after one request each; a store slow but in time is read whole; once the store answers
/// again, the same reads give the right bytes.
#[test]
fn a_fetch_gives_up_within_fetch_timeout_when_the_store_does_not_answer() {
    let figures = faults::fetch_gives_up_within_fetch_timeout(CLOUD);
    println!("{figures:?}");
}

/// With `store.breaker.failures` 3 and `gcs.max.retries` 1, a store that refuses connections or throttles (`429
/// rateLimitExceeded`) opens the breaker after three failed calls of 2 requests each; calls then fail at once
/// and send nothing; after `store.breaker.open.ms` a probe succeeds and closes it.
#[test]
fn the_breaker_opens_on_a_failing_store_and_its_refusals_send_nothing() {
    // The cases wait for the breaker's interval, each on a proxy and a key prefix of its own: run at once.
    std::thread::scope(|scope| {
        for (case, fault) in [("refused", Fault::Refuse), ("throttled", Fault::Throttle(CLOUD.throttles()[0]))] {
            scope.spawn(move || {
                let Some(sent) = faults::breaker_opens_and_refuses_without_requests(CLOUD, case, fault) else {
                    return;
                };
                assert_eq!(sent, [2, 2, 2], "{case}: requests per failed call (the attempt and its one retry)");
            });
        }
    });
}

/// Throttling answered as GCS (`429` and `503` with JSON error bodies) answers it is retried `gcs.max.retries`
/// times (3), no more, and fails as retriable naming the status; with the breaker at 3, 20 calls send fewer
/// requests than calls.
#[test]
fn throttling_is_retried_a_bounded_number_of_times_and_the_breaker_cuts_the_requests() {
    for (i, &answer) in CLOUD.throttles().iter().enumerate() {
        let Some(f) = faults::throttling_is_retried_a_bounded_number_of_times(CLOUD, answer, i == 0) else { return };
        println!("{:?} {:?}", f.one.0, f.burst);
    }
}

/// Answers cut mid-body give the right bytes or a retriable error, never other bytes; a cut read is resumed
/// where it was cut, within the client's retries.
#[test]
fn an_answer_cut_mid_body_gives_the_right_bytes_or_an_error() {
    // (bytes each answer keeps, whether the whole fetch must succeed: `None` either way)
    let cases = [
        (0, Some(false)),
        (100, Some(false)),
        (4_096, None),
        (40_000, None),
        (100_000, Some(true)),
        (1 << 20, Some(true)),
    ];
    let figures = faults::cut_answers_give_the_right_bytes_or_an_error(CLOUD, &cases);
    assert!(figures.iter().any(|f| f.whole.0 && f.whole.1 > 2), "some whole fetch was read over several cut answers");
}

/// A copy to a store that stops answering (everything, the manifest's upload, the log's, or the manifest's and
/// the deletes) fails as retriable within `copy.timeout.ms` and deletes what it wrote within the same bound
/// again, or leaves orphans a sweep removes; the copy then succeeds.
#[test]
fn a_copy_gives_up_within_copy_timeout_and_leaves_nothing_or_orphans() {
    let mut deletes = vec![".manifest"];
    deletes.extend(CLOUD.deletes());
    let cases = vec![
        ("everything", vec![], 0, NOT_DELETED),
        ("the manifest", vec![".manifest"], 0, DELETED),
        ("the log", vec![".log"], 0, DELETED),
        ("the manifest and the deletes", deletes, 2, NOT_DELETED),
    ];
    for f in faults::copy_gives_up_within_copy_timeout(CLOUD, cases) {
        println!("{}: {:?}, {} requests", f.case, f.took, f.sent.len());
    }
}

/// A copy whose uploads are throttled fails as retriable after `gcs.max.retries` (2) retries of each upload,
/// leaving nothing; the copy then succeeds.
#[test]
fn a_copy_to_a_throttling_store_fails_after_bounded_retries() {
    for &answer in CLOUD.throttles() {
        let Some(f) = faults::a_copy_to_a_throttling_store_fails_after_bounded_retries(CLOUD, answer) else { return };
        println!("{} upload requests in {:?}, the log's retried after {:?}", f.uploads, f.took, f.waits);
    }
}

/// Fetches `fetch.timeout.ms` gives up on open the breaker: 3 in a row, then the next reach no store.
#[test]
fn a_hung_store_opens_the_breaker_through_timed_out_fetches() {
    let _ = faults::a_hung_store_opens_the_breaker(CLOUD);
}

/// With every setting at its default, one throttled fetch does not keep the store from being asked again: once
/// it answers, a fetch reaches it and succeeds.
#[test]
fn a_store_that_answers_again_after_throttling_is_asked_again() {
    let _ = faults::a_store_that_answers_again_is_asked_again(CLOUD, CLOUD.throttles()[0]);
}
