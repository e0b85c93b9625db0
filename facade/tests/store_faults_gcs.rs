//! A store's bad days, on GCS (fake-gcs-server v1.56.1) behind a fault-injecting HTTP proxy of the tests' own
//! (`proxy::CountingProxy`, switched at run time with `set_fault`), through the facade (`rsm_facade::Store`,
//! what the broker plugin and the C ABI call), with GCS's own throttling answers, `429 Too Many Requests` with
//! the JSON error body `rateLimitExceeded` and `503 Service Unavailable` with `backendError`
//! (`proxy::Answer::GCS_RATE_LIMIT`, `GCS_BACKEND_ERROR`). The proxy passes requests on with fake-gcs-server's
//! own `Host` (`CountingProxy::in_front_of_as_server`: it serves its XML API, object_store's reads, listings
//! and deletes, only to its public host). Reads, listings and deletes are object_store's GCS client (its
//! targets percent-encode every character of a key but letters and digits); uploads are the backend's own JSON
//! API requests, with their own retry loop (`gcs.max.retries`, `ClientSettings::retrying`), through the same
//! HTTP layer as object_store's, so under the same retry budget. The tests are written once for S3, Azure and
//! GCS in `common/cloud_faults/` (`cloud_fault_tests!`); this file runs them on GCS.
//!
//! What is proven, test by test (figures from runs on a loaded 2-core machine: they describe the behaviour, and
//! only liveness bounds, 10 s, are asserted of times; request counts are asserted on fresh stores after few calls,
//! where the store's retry budget can only lower them). The retry budget's test paces the store's requests after
//! throttled answers as it says; every other test's store but the last one's waits 50 ms, doubled, at most 100 ms,
//! after throttled answers (`gcs.throttle.backoff.ms`, `.max.ms`; 50 ms and 200 ms by default):
//! - `fetch.timeout.ms` (300 here) bounds each wait of a fetch, at each step (the open of a store whose
//!   manifest cache is empty, a piece of the log's bytes, an index), on a store that never answers (black
//!   hole), whose first byte comes after 3 s, or that trickles its answer at 512 B/s: each step fails as
//!   retriable, naming the setting and the segment, after 301–306 ms and one request each, where the GCS client
//!   alone would wait 30 s. A store slow but in time (first byte after 20 ms, 4 MiB/s) is read whole (open
//!   96–111 ms, two requests; bytes ~24 ms). Once the store answers again, the same reads give the right bytes.
//! - The breaker (`store.breaker.failures` 3, `gcs.max.retries` 1, `fetch.timeout.ms` 600), on a store that
//!   closes every connection without answering (refuse) or answers `429 rateLimitExceeded`: each of the first 3
//!   failed calls sends 2 requests (the attempt and its retry, ~0.11 s) and fails with the store's own error;
//!   the breaker is then open (state 1, opened 1), and 6 more calls made at once (index fetches and a fetch's
//!   bytes) fail with "store gs://… is failing (3 transient failures in a row, …)", each held until its
//!   `fetch.timeout.ms` (595–597 ms; at once, 0.26–0.5 ms all told, before a refused fetch was held), without a
//!   request or even a connection reaching the proxy. After `store.breaker.open.ms` (1.5 s) it is half-open
//!   (2); the probe sends one request, succeeds, and the breaker closes (0).
//! - Throttling is retried a bounded number of times: with the default 3 retries (`gcs.max.retries`), one
//!   failing index fetch sends exactly 1 + 3 requests, under `429` (0.39–0.74 s) as under `503` (0.47–0.59 s),
//!   and fails as retriable, its message carrying the status and GCS's JSON error. With the breaker at 3, 20
//!   calls under `429` send 12 requests (3 calls × 4, one after another, until it opens); the other 17, made at
//!   once, are refused, each held until `fetch.timeout.ms` (1 s; 2.6–2.8 s in all): fewer requests than calls.
//! - The retry budget (`gcs.retry.budget.burst` 5, `.percent` 10) under `429 rateLimitExceeded`, without the
//!   breaker, as on S3: 12 calls send 4, 2, then 1 request each (16 in all), the last ones failing as
//!   retriable with "GET answered 429 Too Many Requests (rateLimitExceeded); not retried: the store's retry
//!   budget is spent"; the first call's retries were paced 103–116, 121–180 and 291–399 ms apart
//!   (`gcs.throttle.backoff.ms` 100, doubling to 400). The budget spent, a copy whose uploads are throttled
//!   sends 2 POSTs: the backend's own upload loop leaves the budget's refusal unretried too (before it did
//!   not: it retried any transient failure, `gcs.max.retries` times). Its cleanup is 4 DELETEs (one per key),
//!   leaving nothing. After 29 successful requests (GCS's deletes count one per key, where S3's and Azure's
//!   batches count one) a throttled call was retried twice again.
//! - A copy whose uploads (JSON API media uploads, `POST …?uploadType=media`) are answered `429` or `503`
//!   (`gcs.max.retries` 2) fails as retriable in 0.36–0.64 s after 6 POSTs (the log's and the indexes', 3 each;
//!   the manifest is never tried), "HTTP status 429: {…rateLimitExceeded…}"; its cleanup's 4 DELETEs pass,
//!   nothing of the segment is left, and the copy then succeeds.
//! - Answers cut mid-body: never other bytes than the segment's, as on S3 and Azure. The client resumes a
//!   cut answer with a ranged GET from where it was cut, within its retries (4 answers in all): cut after 0
//!   or 100 bytes, the manifest (756 bytes, first read whole) fails after 4 requests, as retriable; from 4 KiB on, the
//!   adapter asks again for the rest of the answer from where the client gave up (each further answer must
//!   bring 1 KiB), so the whole log (306,835 bytes) is read right: in 76 requests at 4 KiB (~9 s), 9 at
//!   40 KB, 5 at 100 KB, reading 307,591 bytes from the store (the manifest's 756 and the log's, each byte
//!   once: `store-bytes-read`, asserted within 1.5x the bytes served) where it failed after 4 requests
//!   before; a range of 80 KB (blocks 65,111–195,129) in 32 requests at 4 KiB, 4 at 40 KB; an index fetch
//!   (one 584-byte ranged GET, after the manifest) fails with the manifest at 0 and 100 bytes, and is whole
//!   from 4 KiB on.
//! - `copy.timeout.ms` (2000 here; GCS client timeouts 60 s): a copy to a store that hangs fails as retriable
//!   in ~2 s, then deletes what it wrote within the same bound again. GCS has no batch delete: each of the
//!   cleanup's two steps (the `.manifest` and the one-object `.segment`, then the `.log` and the `.indexes`) is
//!   a DELETE per key, where S3 and Azure send one batch. Hanging everything: 4 requests (the log's and the
//!   indexes' uploads, the cleanup's first two DELETEs), ~4.0 s, "deleting what it wrote timed out too",
//!   nothing written. Hanging only the manifest's upload (7 requests: 3 uploads, 4 DELETEs) or only the log's
//!   (6): ~2.0 s, "what it wrote was deleted", and nothing of the segment is left. Hanging the manifest's
//!   upload and the deletes (5 requests): ~4.0 s, the log and the indexes are left without a manifest, and
//!   `sweep_orphans` removes exactly them. The copy again succeeds each time.
//! - The second look (`copy.cleanup.recheck.ms` 1000, `copy.timeout.ms` 500): a copy whose manifest's upload
//!   and deletes hang (5 requests: the 3 uploads, the cleanup's DELETEs of the `.manifest` and the `.segment`)
//!   leaves the log and the indexes; 1.5 s later the look has deleted them (a DELETE each), with no sweep. A
//!   copy again under the same id before the look is kept whole.
//! - A hung store opens the breaker through facade calls: fetches `fetch.timeout.ms` (300) gives up on (one
//!   request each) count as transient failures; the 3 fetches after it opened reach no store, each refused
//!   after ~296 ms.
//! - A store that throttled once is asked again once it answers: with every setting at its default, one throttled
//!   fetch fails as retriable after 3 or 4 requests (0.45–0.50 s, its retries or `fetch.timeout.ms`, 500 ms); the
//!   first fetch after it, the store answering, waits out what is left of the pause (at most 200 ms by default) and
//!   succeeds with 1 request in 4–185 ms. (It failed for good before the pause after a throttled answer became a
//!   time rather than a wait per request: the wait, 500-1000 ms then, outlasted `fetch.timeout.ms`, each fetch was
//!   dropped while waiting, nothing answered, and 13 fetches in 5 s sent 0 requests; with a pause of up to 10 s by
//!   default, the first fetch after could still be dropped while waiting.)
//!
//! Needs fake-gcs-server (`eval "$(tools/servers/fake-gcs.sh start)"`); without it the tests fail, unless
//! `RSM_SKIP_GCS=1` outside CI.

#[path = "common/cloud_faults/mod.rs"]
mod faults;
mod proxy;

faults::cloud_fault_tests!(faults::Cloud::Gcs);
