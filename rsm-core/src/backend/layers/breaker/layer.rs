//! [`BreakerLayer`]: the layer that asks the state machine before each call and tells it each result.

use super::machine::{Change, Outcome, Policy, Refusal, Ticket};
use super::{BreakerConfig, BreakerState, BreakerStats, REFUSED};
use crate::backend::layers::LayeredBackend;
use crate::backend::{ByteStream, IncompleteUpload, ObjectMeta, StorageBackend, TemporaryObject};
use crate::error::{Error, ErrorKind, Result};
use async_trait::async_trait;
use bytes::Bytes;
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::time::Instant;

/// Fails calls at once while the store below is failing, so a broker's few remote-reader threads are not
/// all taken waiting out a dead store's timeouts and retries. Every call but [`StorageBackend::open_local`]
/// (and the passed-through [`StorageBackend::store_requests`] and [`StorageBackend::capabilities`]) is
/// judged.
///
/// - **Closed** (the usual state): calls pass, and transient failures in a row are counted (any error that
///   [`crate::error::Error::is_transient`] says: timeouts, refused or reset connections, 5xx, throttling). A
///   success resets the count, and so does a permanent error or a not-found: those are answers from a store
///   that is up.
/// - **Open**: after `store.breaker.failures` transient failures in a row, every call fails at once,
///   without reaching the store, with a transient storage error naming the store, the failures and the
///   last of them, and how long until the next probe. The first interval is `store.breaker.open.ms`; each
///   failed probe doubles it, up to `store.breaker.open.max.ms`.
/// - **Half-open**: once the interval has passed, the next call is the probe and goes to the store; the
///   calls that come while it runs fail at once, as when open. A success, a permanent error or a
///   not-found closes the breaker (and the interval starts again from `store.breaker.open.ms`); a
///   transient failure opens it again for twice as long.
///
/// Each call is judged by its result as a whole: a call that returns a stream of bytes would be judged by
/// whether the stream could be opened, not by its bytes after that (no read of [`StorageBackend`] returns
/// a stream today; `put_stream` consumes its caller's stream and is judged by its result, a failure of the
/// caller's own stream included). [`StorageBackend::open_local`] passes through unjudged: it opens a file
/// of this machine, with no remote timeout to wait out. The results of calls that began before the
/// breaker last changed state are ignored (calls in flight when it opened do not open it again). A probe
/// whose caller gives up (drops the call) lets the next call probe at once; a probe still running after
/// `store.breaker.open.max.ms` (a long upload, a hung request) lets one more call probe too.
///
/// The breaker goes over the retry and counting layers: it judges whole calls after their retries, and a
/// call it refuses sends no request and is not counted as one. Every change of state is logged once (a
/// warning when it opens, with the failure; info when it closes; debug when a probe starts), never each
/// call. [`BreakerStats`] keeps the state and counters for metrics.
#[derive(Debug)]
pub struct BreakerLayer {
    inner: Arc<dyn StorageBackend>,
    store: String,
    policy: Policy,
    stats: Arc<BreakerStats>,
}

/// Lets the next call probe when a probe's caller gives up before the probe ends.
struct ProbeGuard<'a> {
    stats: &'a BreakerStats,
    ticket: Ticket,
    done: bool,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if !self.done && self.ticket.probe {
            self.stats.machine().abandon(self.ticket, Instant::now());
        }
    }
}

impl BreakerLayer {
    /// Wraps `inner` with the settings of `config`, sharing its state and [`BreakerStats`]. With
    /// `failures` 0 it never opens.
    pub fn new(inner: Arc<dyn StorageBackend>, config: &BreakerConfig) -> Self {
        let layer = BreakerLayer { inner, store: config.store.clone(), policy: config.policy(), stats: config.stats() };
        *layer.stats.layer.lock().unwrap_or_else(|p| p.into_inner()) = Some((layer.policy, layer.named()));
        layer
    }

    /// The state now.
    pub fn state(&self) -> BreakerState {
        self.stats.state()
    }

    /// The state and counters, shared with the config that made this layer.
    pub fn stats(&self) -> Arc<BreakerStats> {
        self.stats.clone()
    }

    /// The store, as messages name it.
    fn named(&self) -> String {
        if self.store.is_empty() { "the store".to_string() } else { format!("store {}", self.store) }
    }

    async fn run<T, Fut>(&self, operation: &'static str, key: &str, call: Fut) -> Result<T>
    where
        Fut: Future<Output = Result<T>> + Send,
    {
        let admitted = self.stats.machine().admit(&self.policy, Instant::now());
        let ticket = match admitted {
            Ok((ticket, change)) => {
                if let Some(change) = change {
                    self.log(&change);
                }
                ticket
            }
            Err(refusal) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                return Err(self.refused(refusal, operation, key));
            }
        };
        let mut guard = ProbeGuard { stats: &self.stats, ticket, done: false };
        let r = call.await;
        guard.done = true;
        let change = self.stats.machine().record(&self.policy, ticket, Outcome::of(&r), Instant::now());
        if let Some(change) = change {
            if matches!(change, Change::Opened { .. }) {
                self.stats.opened.fetch_add(1, Ordering::Relaxed);
            }
            self.log(&change);
        }
        r
    }

    /// The error of a call refused at once.
    fn refused(&self, refusal: Refusal, operation: &'static str, key: &str) -> Error {
        let Refusal { failures, last, wait } = refusal;
        let s = if failures == 1 { "" } else { "s" };
        let when = match wait {
            Some(wait) => format!("calls fail at once for {:.1} s more", wait.as_secs_f64()),
            None => "calls fail at once while one call probes it".to_string(),
        };
        let message =
            format!("{} is failing ({failures} transient failure{s} in a row, the last: {last}): {when}", self.named());
        Error::new(ErrorKind::Storage, message)
            .transient()
            .with_operation(operation)
            .with_field("key", key)
            .with_field(REFUSED, "by the store's circuit breaker, without a request")
    }

    fn log(&self, change: &Change) {
        log_change(&self.named(), change);
    }
}

/// Logs a change of state once: opening at WARN, closing at INFO, a probe at DEBUG.
pub(super) fn log_change(store: &str, change: &Change) {
    match change {
        Change::Opened { failures, interval, last, reopened: false } => tracing::warn!(
            %store, failures, open_ms = interval.as_millis() as u64, error = %last,
            "the store is failing: calls fail at once for a while, then one call probes it"
        ),
        Change::Opened { failures, interval, last, reopened: true } => tracing::warn!(
            %store, failures, open_ms = interval.as_millis() as u64, error = %last,
            "the probe of the failing store failed: calls fail at once for longer"
        ),
        Change::Probing => tracing::debug!(%store, "one call probes the failing store"),
        Change::Closed { failures, down } => tracing::info!(
            %store, failures, down_ms = down.as_millis() as u64,
            "the store answers again: calls pass"
        ),
    }
}

#[async_trait]
impl LayeredBackend for BreakerLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.run("put_file", key, self.inner.put_file(key, path, len)).await
    }

    /// Judged by its result; refused, the stream is dropped unread.
    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        self.run("put_stream", key, self.inner.put_stream(key, data)).await
    }

    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.run("put_bytes", key, self.inner.put_bytes(key, bytes)).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.run("get_range", key, self.inner.get_range(key, range)).await
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        self.run("get_tail", key, self.inner.get_tail(key, len)).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.run("delete", key, self.inner.delete(key)).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let first = keys.first().map_or("", String::as_str);
        self.run("delete_many", first, self.inner.delete_many(keys)).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.run("list", prefix, self.inner.list(prefix)).await
    }

    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        self.run("list_temporary", prefix, self.inner.list_temporary(prefix)).await
    }

    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        self.run("list_incomplete_uploads", prefix, self.inner.list_incomplete_uploads(prefix)).await
    }

    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        self.run("abort_upload", key, self.inner.abort_upload(key, upload_id)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::layers::breaker::shown_url;
    use crate::backend::layers::{Fault, FaultLayer, FaultRule, Layer};
    use crate::backend::{MemoryBackend, Op};
    use crate::config::{ConfigReader, props};
    use std::time::Duration;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn config(failures: u32, open_ms: u64, max_ms: u64) -> BreakerConfig {
        BreakerConfig { failures, open: ms(open_ms), open_max: ms(max_ms), ..BreakerConfig::default() }
            .for_store("s3://user:secret@bucket/prefix?token=secret")
    }

    fn gets(key: &str, fault: Fault, times: Option<usize>) -> FaultRule {
        FaultRule { op: Some(Op::Get), key: key.into(), fault, times }
    }

    /// A memory store holding `a/k` and `ok/k`, under a fault layer with `rules`, under the breaker.
    async fn rig(config: &BreakerConfig, rules: Vec<FaultRule>) -> (Arc<FaultLayer>, Arc<dyn StorageBackend>) {
        let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        for key in ["a/k", "ok/k"] {
            store.put_bytes(key, Bytes::from_static(b"data")).await.unwrap();
        }
        let faults = Arc::new(FaultLayer::new(store));
        for rule in rules {
            faults.add_rule(rule);
        }
        let breaker = config.layer(faults.clone());
        assert!(format!("{breaker:?}").contains("BreakerLayer"), "{breaker:?}");
        (faults, breaker)
    }

    #[tokio::test(start_paused = true)]
    async fn after_n_transient_failures_calls_fail_at_once_without_reaching_the_store() {
        let c = config(5, 2000, 30_000);
        // Five transient failures, then a store that takes 10 s to answer.
        let rules = vec![gets("a/*", Fault::transient(), Some(5)), gets("a/*", Fault::Delay(ms(10_000)), None)];
        let (faults, b) = rig(&c, rules).await;
        for i in 1..=5 {
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            assert!(e.is_transient() && e.message().contains("injected fault"), "call {i}: {e}");
            let want = if i < 5 { BreakerState::Closed } else { BreakerState::Open };
            assert_eq!(c.stats().state(), want, "after call {i}");
        }
        assert_eq!(faults.calls(Op::Get), 5);

        let started = Instant::now();
        let e = b.get_range("a/k", 0..4).await.unwrap_err();
        assert_eq!(started.elapsed(), Duration::ZERO, "refused at once, not after the store's 10 s: {e}");
        assert_eq!(faults.calls(Op::Get), 5, "the refused call never reached the store");
        assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Storage, true), "{e}");
        let shown = e.to_string();
        for want in [
            "store s3://bucket/prefix is failing",
            "(5 transient failures in a row, the last: retriable storage error: injected fault: get_range of a/k)",
            "calls fail at once for 2.0 s more",
            "operation get_range, key a/k",
        ] {
            assert!(shown.contains(want), "`{want}` in {shown}");
        }
        assert!(!shown.contains("secret"), "{shown}");

        // Every kind of call, not only reads.
        let put = b.put_bytes("a/new", Bytes::from_static(b"x")).await.unwrap_err();
        assert!(put.is_transient() && put.message().contains("is failing"), "{put}");
        assert!(b.list("a/").await.unwrap_err().message().contains("is failing"));
        assert!(b.delete("a/k").await.unwrap_err().message().contains("is failing"));
        assert_eq!((faults.calls(Op::Put), faults.calls(Op::List), faults.calls(Op::Delete)), (0, 0, 0));
        assert_eq!((c.stats().times_opened(), c.stats().calls_refused()), (1, 4));
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_interval_one_probe_goes_through_and_a_success_closes_it() {
        let c = config(2, 1000, 30_000);
        let (faults, b) = rig(&c, vec![gets("a/*", Fault::transient(), Some(2))]).await;
        for _ in 0..2 {
            b.get_range("a/k", 0..4).await.unwrap_err();
        }
        tokio::time::advance(ms(999)).await;
        assert_eq!(c.stats().state(), BreakerState::Open);
        b.get_range("a/k", 0..4).await.unwrap_err();
        assert_eq!(faults.calls(Op::Get), 2, "still open after 999 ms");

        tokio::time::advance(ms(1)).await;
        assert_eq!(c.stats().state(), BreakerState::HalfOpen);
        assert_eq!(&b.get_range("a/k", 0..4).await.unwrap()[..], b"data", "the probe");
        assert_eq!(faults.calls(Op::Get), 3);
        assert_eq!(c.stats().state(), BreakerState::Closed);
        for _ in 0..3 {
            assert_eq!(&b.get_range("a/k", 0..4).await.unwrap()[..], b"data");
        }
        assert_eq!(faults.calls(Op::Get), 6, "calls pass again");
        assert_eq!((c.stats().times_opened(), c.stats().calls_refused()), (1, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_probe_doubles_the_interval_up_to_the_cap() {
        let c = config(1, 1000, 5000);
        let (faults, b) = rig(&c, vec![gets("a/*", Fault::transient(), None)]).await;
        b.get_range("a/k", 0..4).await.unwrap_err();
        let mut interval = 1000;
        for (probe, next) in [2000, 4000, 5000, 5000].into_iter().enumerate() {
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            let want = format!("calls fail at once for {:.1} s more", interval as f64 / 1000.0);
            assert!(e.message().contains(&want), "before probe {probe}: `{want}` in {e}");
            tokio::time::advance(ms(interval - 1)).await;
            b.get_range("a/k", 0..4).await.unwrap_err();
            assert_eq!(faults.calls(Op::Get), 1 + probe, "refused until the interval has passed");
            tokio::time::advance(ms(1)).await;
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            assert!(e.message().contains("injected fault"), "probe {probe} reached the store: {e}");
            assert_eq!(faults.calls(Op::Get), 2 + probe);
            interval = next;
        }
        let e = b.get_range("a/k", 0..4).await.unwrap_err();
        assert!(e.message().contains("5 transient failures in a row"), "failed probes count: {e}");
        assert!(e.message().contains("for 5.0 s more"), "{e}");
        assert_eq!(c.stats().times_opened(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_errors_and_not_found_never_open_it() {
        // (case, the keys read in turn, reads that reach the store of 20, times opened)
        let cases: [(&str, &[&str], usize, u64); 6] = [
            ("not found", &["n/k"], 20, 0),
            ("a permanent error", &["p/k"], 20, 0),
            ("transient failures broken by a not-found", &["t/k", "t/k", "n/k"], 20, 0),
            ("transient failures broken by a permanent error", &["t/k", "t/k", "p/k"], 20, 0),
            ("transient failures broken by a success", &["t/k", "t/k", "ok/k"], 20, 0),
            ("transient failures in a row (the control)", &["t/k"], 3, 1),
        ];
        for (case, keys, reached, opened) in cases {
            let c = config(3, 1000, 30_000);
            let rules =
                vec![gets("t/*", Fault::transient(), None), gets("p/*", Fault::permanent(ErrorKind::Storage), None)];
            let (faults, b) = rig(&c, rules).await;
            for key in keys.iter().cycle().take(20) {
                let _ = b.get_range(key, 0..4).await;
            }
            assert_eq!(faults.calls(Op::Get), reached, "{case}");
            assert_eq!(c.stats().times_opened(), opened, "{case}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn calls_during_a_probe_are_refused() {
        let c = config(1, 1000, 30_000);
        let rules = vec![gets("a/*", Fault::transient(), Some(1)), gets("a/*", Fault::Delay(ms(5000)), Some(1))];
        let (faults, b) = rig(&c, rules).await;
        b.get_range("a/k", 0..4).await.unwrap_err();
        tokio::time::advance(ms(1000)).await;
        let probe = tokio::spawn({
            let b = b.clone();
            async move { b.get_range("a/k", 0..4).await }
        });
        for _ in 0..100 {
            if faults.calls(Op::Get) == 2 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(faults.calls(Op::Get), 2, "the probe reached the store");
        assert_eq!(c.stats().state(), BreakerState::HalfOpen);
        for _ in 0..3 {
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            assert!(e.is_transient() && e.message().contains("while one call probes it"), "{e}");
        }
        assert_eq!(faults.calls(Op::Get), 2, "only the probe reached the store");
        assert_eq!(&probe.await.unwrap().unwrap()[..], b"data");
        assert_eq!(c.stats().state(), BreakerState::Closed);
        b.get_range("a/k", 0..4).await.unwrap();
        assert_eq!((faults.calls(Op::Get), c.stats().calls_refused()), (3, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_its_caller_gives_up_lets_the_next_call_probe() {
        let c = config(1, 1000, 30_000);
        let rules = vec![gets("a/*", Fault::transient(), Some(1)), gets("a/*", Fault::Hang, Some(1))];
        let (faults, b) = rig(&c, rules).await;
        b.get_range("a/k", 0..4).await.unwrap_err();
        tokio::time::advance(ms(1000)).await;
        assert!(tokio::time::timeout(ms(2000), b.get_range("a/k", 0..4)).await.is_err(), "the probe hangs");
        assert_eq!(faults.calls(Op::Get), 2);
        assert_eq!(&b.get_range("a/k", 0..4).await.unwrap()[..], b"data", "the next call probes");
        assert_eq!((faults.calls(Op::Get), c.stats().state()), (3, BreakerState::Closed));
    }

    #[tokio::test(start_paused = true)]
    async fn no_failures_means_no_layer() {
        let p = props([("store.breaker.failures", "0")]);
        let off = BreakerConfig::read(&mut ConfigReader::new(&p)).unwrap();
        assert!(!off.enabled());
        let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let faults = Arc::new(FaultLayer::new(store).with_rule(gets("*", Fault::transient(), None)));
        let inner: Arc<dyn StorageBackend> = faults.clone();
        let stacked = off.layer(inner.clone());
        assert!(Arc::ptr_eq(&stacked, &inner), "nothing stacked: {stacked:?}");
        for _ in 0..20 {
            assert!(stacked.get_range("k", 0..1).await.unwrap_err().message().contains("injected fault"));
        }
        assert_eq!(faults.calls(Op::Get), 20);
        let on = BreakerConfig::default().layer(inner);
        assert!(format!("{on:?}").contains("BreakerLayer"), "{on:?}");
    }

    #[test]
    fn settings_are_read_and_checked() {
        let c = BreakerConfig::read(&mut ConfigReader::new(&std::collections::BTreeMap::new())).unwrap();
        assert_eq!((c.failures, c.open, c.open_max), (5, ms(1000), ms(5_000)));
        let p = props([("store.breaker.failures", "2"), ("store.breaker.open.ms", "50")]);
        let c = BreakerConfig::read(&mut ConfigReader::new(&p)).unwrap();
        assert_eq!((c.failures, c.open, c.open_max, c.enabled()), (2, ms(50), ms(5_000), true));
        let bad = [
            ("store.breaker.failures", "-1", "store.breaker.failures"),
            ("store.breaker.open.ms", "0", "store.breaker.open.ms"),
            ("store.breaker.open.ms", "40000", "store.breaker.open.max.ms"),
        ];
        for (key, value, at_fault) in bad {
            let p = props([(key, value)]);
            let e = BreakerConfig::read(&mut ConfigReader::new(&p)).unwrap_err();
            assert_eq!(e.config_key(), Some(at_fault), "{key}={value}: {e}");
        }
        let urls = [
            ("s3://bucket/prefix", "s3://bucket/prefix"),
            ("s3://user:pw@bucket/prefix", "s3://bucket/prefix"),
            ("az://container/p?sig=abc#f", "az://container/p"),
            ("hdfs://nn:8020/a@b", "hdfs://nn:8020/a@b"),
            ("memory:", "memory:"),
        ];
        for (url, shown) in urls {
            assert_eq!(shown_url(url), shown, "{url}");
        }
    }
}
