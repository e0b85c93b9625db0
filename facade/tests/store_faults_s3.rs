//! A store's bad days, on S3 (moto 5.2.5) behind a fault-injecting HTTP proxy of the tests' own
//! (`proxy::CountingProxy`, switched at run time with `set_fault`), through the facade (`rsm_facade::Store`,
//! what the broker plugin and the C ABI call), with S3's own throttling answer, `503 Slow Down` and the XML
//! body `<Code>SlowDown</Code>` (`faults::S3_SLOW_DOWN`, as `proxy::Fault::SlowDown` answers). The tests are
//! written once for S3, Azure and GCS in `common/cloud_faults/` (`cloud_fault_tests!`); this file runs
//! them on S3, where uploads are `PUT`s and deletes `POST /bucket?delete` batches.
//!
//! What is proven, test by test (figures from runs on a loaded 2-core machine: they describe the behaviour,
//! and only liveness bounds, 10 s, are asserted of times; request counts are asserted on fresh stores after
//! few calls, where the store's retry budget can only lower them). The retry budget's test paces the store's
//! requests after throttled answers as it says; every other test's store but the last one's waits 50 ms,
//! doubled, at most 100 ms, after throttled answers (`s3.throttle.backoff.ms`, `.max.ms`; 50 ms and 200 ms by
//! default):
//! - `fetch.timeout.ms` (300 here) bounds each wait of a fetch, at each step (the open of a store whose
//!   manifest cache is empty, a piece of the log's bytes, an index), on a store that never answers (black
//!   hole), whose first byte comes after 3 s, or that trickles its answer at 512 B/s: each step fails as
//!   retriable, naming the setting and the segment, after 301–305 ms and one request each, where the S3
//!   client alone would wait 30 s. A store slow but in time (first byte after 20 ms, 4 MiB/s) is read whole
//!   (open 55–74 ms, two requests; bytes ~28 ms). Once the store answers again, the same reads give the right
//!   bytes.
//! - The breaker (`store.breaker.failures` 3, `s3.max.retries` 1, `fetch.timeout.ms` 600), on a store that
//!   closes every connection without answering (refuse) or throttles (`503 Slow Down`): each of the first 3
//!   failed calls sends 2 requests (the attempt and its retry, ~0.11 s) and fails with the store's own error;
//!   the breaker is then open (state 1, opened 1), and 6 more calls made at once (index fetches and a
//!   fetch's bytes) fail with "store s3://… is failing (3 transient failures in a row, …)", each held until
//!   its `fetch.timeout.ms` (596–598 ms), without a request or even a connection reaching the proxy. (They
//!   failed at once, 6 in ~0.3 ms, before a refused fetch was held: Kafka retries a failed remote fetch at
//!   once.) After `store.breaker.open.ms` (1.5 s) it is half-open (2); the probe sends one request, succeeds,
//!   and the breaker closes (0).
//! - Throttling is retried a bounded number of times: with the default 3 retries, one failing index fetch
//!   sends exactly 1 + 3 requests (0.34–0.65 s of backoff with jitter). With the breaker at 3, 20 calls send
//!   12 requests (3 calls × 4, one after another, until it opens); the other 17, made at once, are refused,
//!   each held until `fetch.timeout.ms` (1 s; 2.6–2.8 s in all): fewer requests than calls.
//! - The retry budget (`s3.retry.budget.burst` 5, `.percent` 10; default 50 and 10) under `503 Slow Down`,
//!   without the breaker: 12 calls send 4, 2, then 1 request each (16 in all, where the client alone sends
//!   48), each failing as retriable, the last ones saying the budget is spent ("GET answered 503 Service
//!   Unavailable (SlowDown); not retried: the store's retry budget is spent"); the first call's retries were
//!   paced 104–125, 124–199 and 205–360 ms apart (`s3.throttle.backoff.ms` 100, doubling to 400, at least
//!   half each). The budget spent, a copy whose PUTs are throttled sends 2 (the log's and the indexes', not
//!   retried), fails as retriable, and its cleanup (one `?delete` batch) leaves nothing. After 25 successful
//!   requests (that batch, then copies and deletes of the other segments) a throttled call was retried twice
//!   again.
//! - A copy whose PUTs are answered `503 Slow Down` (`s3.max.retries` 2) fails as retriable in 0.37–0.42 s
//!   after 6 PUTs (the log's and the indexes', 3 each; the manifest is never tried), its cleanup one `POST
//!   ?delete` that passes; nothing of the segment is left, and the copy then succeeds.
//! - Answers cut mid-body: never other bytes than the segment's. The client resumes a cut answer with a
//!   ranged GET from where it was cut, within its retries (4 answers in all), so: cut after 0 or 100 bytes,
//!   the manifest (756 bytes, first read whole) fails after 4 requests, as retriable; from 4 KiB on, the
//!   adapter asks again for the rest of the answer from where the client gave up (each further answer must
//!   bring 1 KiB), so the whole log (306,835 bytes) is read right: in 76 requests at 4 KiB (~9 s), 9 at
//!   40 KB, 5 at 100 KB, reading 307,591 bytes from the store (the manifest's 756 and the log's, each byte
//!   once: `store-bytes-read`, asserted within 1.5x the bytes served) where it failed after 4 requests
//!   before; a range of 80 KB (blocks 65,111–195,129) in 32 requests at 4 KiB, 4 at 40 KB; an index fetch
//!   (one 584-byte ranged GET, after the manifest) fails with the manifest at 0 and 100 bytes, and is whole
//!   from 4 KiB on.
//! - `copy.timeout.ms` (2000 here; S3 client timeouts 60 s): a copy to a store that hangs fails as
//!   retriable in ~2 s, then deletes what it wrote within the same bound again. Hanging everything: 3
//!   requests (the log's and the indexes' PUTs, the cleanup's first delete), ~4.0 s, "deleting what it wrote
//!   timed out too", nothing written. Hanging only the manifest's PUT (5 requests: 3 PUTs, 2 batches) or
//!   only the log's (4): ~2.02 s, "what it wrote was deleted", and nothing of the segment is left. Hanging
//!   the manifest's PUT and the deletes (4 requests): ~4.0 s, the log and the indexes are left without a
//!   manifest, and `sweep_orphans` removes exactly them. The copy again succeeds each time.
//! - The second look (`copy.cleanup.recheck.ms` 1000, `copy.timeout.ms` 500): a copy whose manifest's PUT
//!   and cleanup batch hang (4 requests) leaves the log and the indexes; 1.5 s later the look has deleted
//!   them, with no sweep. A copy again under the same id before the look is kept whole (3 objects, read
//!   right).
//! - A hung store opens the breaker through facade calls: fetches `fetch.timeout.ms` (300) gives up on (one
//!   request each: `[1, 1, 1, 0, 0, 0]`) count as transient failures (the calls it dropped never ended, so the
//!   breaker saw nothing of them); the 3 fetches after it opened reach no store, each refused after ~296 ms,
//!   as long as a fetch of the hung store. Found by this test: before, 8 fetches in a row took 300 ms and one
//!   request each, the breaker closed throughout.
//! - A store that throttled once is asked again once it answers: with every setting at its default, one
//!   throttled fetch fails as retriable after 3 or 4 requests (0.38–0.50 s, its retries or
//!   `fetch.timeout.ms`, 500 ms); the first fetch after it, the store answering, waits out what is left of
//!   the pause (at most 200 ms by default) and succeeds with 1 request in 7–193 ms. (It failed for good
//!   before the pause after a throttled answer became a time rather than a wait per request: the wait,
//!   500-1000 ms then, outlasted `fetch.timeout.ms`, each fetch was dropped while waiting, nothing answered,
//!   and 13 fetches in 5 s sent 0 requests; with a pause of up to 10 s by default, the first fetch after
//!   could still be dropped while waiting.)
//!
//! Needs moto (`eval "$(tools/servers/moto.sh start)"`); without it the tests fail, unless `RSM_SKIP_S3=1`
//! outside CI.

#[path = "common/cloud_faults/mod.rs"]
mod faults;
mod proxy;

faults::cloud_fault_tests!(faults::Cloud::S3);
