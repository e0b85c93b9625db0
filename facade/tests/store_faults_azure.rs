//! A store's bad days, on Azure Blob (Azurite 3.35.0) behind a fault-injecting HTTP proxy of the tests' own
//! (`proxy::CountingProxy`, switched at run time with `set_fault`), through the facade (`rsm_facade::Store`,
//! what the broker plugin and the C ABI call), with Azure's own throttling answer, `503` with
//! `x-ms-error-code: ServerBusy` and the XML body `<Code>ServerBusy</Code>` (`proxy::Answer::AZURE_SERVER_BUSY`).
//! The tests are written once for S3, Azure and GCS in `common/cloud_faults/` (`cloud_fault_tests!`); this
//! file runs them on Azure, where uploads are `PUT`s and deletes blob batches (`POST
//! ?restype=container&comp=batch`).
//!
//! What is proven, test by test (figures from runs on a loaded 2-core machine: they describe the behaviour, and
//! only liveness bounds, 10 s, are asserted of times; request counts are asserted on fresh stores after few calls,
//! where the store's retry budget can only lower them). The retry budget's test paces the store's requests after
//! throttled answers as it says; every other test's store but the last one's waits 50 ms, doubled, at most 100 ms,
//! after throttled answers (`azure.throttle.backoff.ms`, `.max.ms`; 50 ms and 200 ms by default):
//! - `fetch.timeout.ms` (300 here) bounds each wait of a fetch, at each step (the open of a store whose
//!   manifest cache is empty, a piece of the log's bytes, an index), on a store that never answers (black
//!   hole), whose first byte comes after 3 s, or that trickles its answer at 512 B/s: each step fails as
//!   retriable, naming the setting and the segment, after 301–316 ms and one request each, where the Azure
//!   client alone would wait 30 s. A store slow but in time (first byte after 20 ms, 4 MiB/s) is read whole
//!   (open 97–140 ms, two requests; bytes ~26 ms). Once the store answers again, the same reads give the right
//!   bytes.
//! - The breaker (`store.breaker.failures` 3, `azure.max.retries` 1, `fetch.timeout.ms` 600), on a store that
//!   closes every connection without answering (refuse) or answers `503 ServerBusy`: each of the first 3 failed
//!   calls sends 2 requests (the attempt and its retry, 0.10–0.12 s) and fails with the store's own error; the
//!   breaker is then open (state 1, opened 1), and 6 more calls made at once (index fetches and a fetch's bytes)
//!   fail with "store az://… is failing (3 transient failures in a row, …)", each held until its
//!   `fetch.timeout.ms` (595–597 ms; at once, 0.26–0.5 ms all told, before a refused fetch was held), without a
//!   request or even a connection reaching the proxy. After `store.breaker.open.ms` (1.5 s) it is half-open
//!   (2); the probe sends one request, succeeds, and the breaker closes (0).
//! - `503 ServerBusy` is retried a bounded number of times: with the default 3 retries (`azure.max.retries`),
//!   one failing index fetch sends exactly 1 + 3 requests (0.46–0.9 s) and fails as retriable, its message
//!   carrying the status and Azure's error document. With the breaker at 3, 20 calls send 12 requests (3 calls
//!   × 4, one after another, until it opens); the other 17, made at once, are refused, each held until
//!   `fetch.timeout.ms` (1 s; 2.4–2.8 s in all): fewer requests than calls.
//! - The retry budget (`azure.retry.budget.burst` 5, `.percent` 10) under `503 ServerBusy`, without the
//!   breaker, as on S3: 12 calls send 4, 2, then 1 request each (16 in all), the last ones failing as
//!   retriable with "GET answered 503 Service Unavailable (ServerBusy); not retried: the store's retry budget
//!   is spent"; the first call's retries were paced 104–124, 136–202 and 289–394 ms apart
//!   (`azure.throttle.backoff.ms` 100, doubling to 400). The budget spent, a copy whose PUTs are throttled
//!   sends 2 (not retried) and its cleanup one blob batch, leaving nothing. After 25 successful requests a
//!   throttled call was retried twice again.
//! - A copy whose uploads are answered `503 ServerBusy` (`azure.max.retries` 2) fails as retriable in
//!   0.38–0.42 s after 6 PUTs (the log's and the indexes', 3 each; the manifest is never tried), its cleanup
//!   one blob batch (`POST ?restype=container&comp=batch`) that passes; nothing of the segment is left, and the
//!   copy then succeeds.
//! - Answers cut mid-body: never other bytes than the segment's, as on S3. The client resumes a cut answer
//!   with a ranged GET from where it was cut, within its retries (4 answers in all): cut after 0 or 100
//!   bytes, the manifest (756 bytes, first read whole) fails after 4 requests, as retriable; from 4 KiB on, the
//!   adapter asks again for the rest of the answer from where the client gave up (each further answer must
//!   bring 1 KiB), so the whole log (306,835 bytes) is read right: in 76 requests at 4 KiB (~9 s), 9 at
//!   40 KB, 5 at 100 KB, reading 307,591 bytes from the store (the manifest's 756 and the log's, each byte
//!   once: `store-bytes-read`, asserted within 1.5x the bytes served) where it failed after 4 requests
//!   before; a range of 80 KB (blocks 65,111–195,129) in 32 requests at 4 KiB, 4 at 40 KB; an index fetch
//!   (one 584-byte ranged GET, after the manifest) fails with the manifest at 0 and 100 bytes, and is whole
//!   from 4 KiB on.
//! - `copy.timeout.ms` (2000 here; Azure client timeouts 60 s): a copy to a store that hangs fails as retriable
//!   in ~2 s, then deletes what it wrote within the same bound again, as on S3. Hanging everything: 3 requests
//!   (the log's and the indexes' PUTs, the cleanup's first blob batch), 4.0–4.1 s, "deleting what it wrote
//!   timed out too", nothing written. Hanging only the manifest's PUT (5 requests: 3 PUTs, 2 batches) or only
//!   the log's (4): 2.0–2.3 s, "what it wrote was deleted", and nothing of the segment is left. Hanging the
//!   manifest's PUT and the deletes (4 requests): 4.0–4.2 s, the log and the indexes are left without a
//!   manifest, and `sweep_orphans` removes exactly them. The copy again succeeds each time.
//! - The second look (`copy.cleanup.recheck.ms` 1000, `copy.timeout.ms` 500): a copy whose manifest's PUT and
//!   cleanup batch hang (4 requests) leaves the log and the indexes; 1.5 s later the look has deleted them,
//!   with no sweep. A copy again under the same id before the look is kept whole.
//! - A hung store opens the breaker through facade calls: fetches `fetch.timeout.ms` (300) gives up on (one
//!   request each) count as transient failures; the 3 fetches after it opened reach no store, each refused
//!   after ~296 ms.
//! - A store that throttled once is asked again once it answers: with every setting at its default, one throttled
//!   fetch fails as retriable after 4 requests (0.36–0.49 s); the first fetch after it, the store answering, waits
//!   out what is left of the pause (at most 200 ms by default) and succeeds with 1 request in 108–170 ms. (It
//!   failed for good before the pause after a throttled answer became a time rather than a wait per request: the
//!   wait, 500-1000 ms then, outlasted `fetch.timeout.ms`, each fetch was dropped while waiting, nothing answered,
//!   and 13 fetches in 5 s sent 0 requests; with a pause of up to 10 s by default, the first fetch after could
//!   still be dropped while waiting.)
//!
//! Needs Azurite (`eval "$(tools/servers/azurite.sh start)"`); without it the tests fail, unless
//! `RSM_SKIP_AZURE=1` outside CI.

#[path = "common/cloud_faults/mod.rs"]
mod faults;
mod proxy;

faults::cloud_fault_tests!(faults::Cloud::Azure);
