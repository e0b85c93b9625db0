//! Retries transient failures, for stores whose client does not retry by itself (the filesystem, HDFS).
//! The cloud stores' client (object_store) retries its own requests, so they are not wrapped twice.

use super::{Layer, LayeredBackend};
use crate::backend::{ObjectMeta, StorageBackend, TemporaryObject};
use crate::config::{ConfigReader, Setting, Unit};
use crate::error::Result;
use async_trait::async_trait;
use bytes::Bytes;
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The retry policy, read from `retry.*` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryConfig {
    /// [`Self::MAX_ATTEMPTS`]: attempts of one call in all.
    pub max_attempts: u32,
    /// [`Self::BACKOFF_MS`]: the wait before the first retry; it doubles after each retry.
    pub initial_backoff: Duration,
    /// [`Self::BACKOFF_MAX_MS`]: the longest wait between attempts.
    pub max_backoff: Duration,
    /// [`Self::DEADLINE_MS`]: no retry starts later than this after the call began. An attempt in flight is
    /// not cut: the store's own timeouts bound one attempt.
    pub deadline: Duration,
}

impl Default for RetryConfig {
    /// The declared defaults.
    fn default() -> Self {
        RetryConfig {
            max_attempts: Self::MAX_ATTEMPTS.default_int(),
            initial_backoff: Duration::from_millis(Self::BACKOFF_MS.default_int()),
            max_backoff: Duration::from_millis(Self::BACKOFF_MAX_MS.default_int()),
            deadline: Duration::from_millis(Self::DEADLINE_MS.default_int()),
        }
    }
}

impl RetryConfig {
    /// `retry.max.attempts`.
    pub const MAX_ATTEMPTS: Setting = Setting::int("retry.max.attempts", 1, 100).with_default(3).with_doc(
        "(filesystem and HDFS stores) attempts of one call in all, 1 is no retry; only transient failures are retried",
    );
    /// `retry.backoff.ms`.
    pub const BACKOFF_MS: Setting =
        Setting::long("retry.backoff.ms", 1, 60_000).with_default(100).with_unit(Unit::Millis).with_doc(
            "the wait before the first retry, doubled after each retry up to `retry.backoff.max.ms`, with jitter",
        );
    /// `retry.backoff.max.ms`.
    pub const BACKOFF_MAX_MS: Setting = Setting::long("retry.backoff.max.ms", 1, 600_000)
        .with_default(5_000)
        .with_unit(Unit::Millis)
        .with_checks("not below `retry.backoff.ms`")
        .with_doc("the longest wait between attempts");
    /// `retry.deadline.ms`.
    pub const DEADLINE_MS: Setting =
        Setting::long("retry.deadline.ms", 0, 3_600_000).with_default(30_000).with_unit(Unit::Millis).with_doc(
            "no retry starts later than this after the call began; an attempt in flight is not cut (the store's own \
             timeouts bound one attempt)",
        );

    /// The settings [`RetryConfig::read`] reads, in the order the documentation lists them.
    pub const SETTINGS: [&'static Setting; 4] =
        [&Self::MAX_ATTEMPTS, &Self::BACKOFF_MS, &Self::BACKOFF_MAX_MS, &Self::DEADLINE_MS];

    /// The keys [`RetryConfig::read`] reads.
    pub const KEYS: [&'static str; 4] =
        [Self::MAX_ATTEMPTS.key, Self::BACKOFF_MS.key, Self::BACKOFF_MAX_MS.key, Self::DEADLINE_MS.key];

    /// Reads the settings from `r`, with the declared defaults for absent keys.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let ms = |d: Duration| d.as_millis() as u64;
        let initial_backoff = Duration::from_millis(r.get_int(&Self::BACKOFF_MS)?);
        let max_backoff = Duration::from_millis(r.get_int(&Self::BACKOFF_MAX_MS)?);
        if max_backoff < initial_backoff {
            return Err(crate::error::Error::config(
                Self::BACKOFF_MAX_MS.key,
                format!("{} ms is below retry.backoff.ms ({} ms)", ms(max_backoff), ms(initial_backoff)),
            ));
        }
        Ok(RetryConfig {
            max_attempts: r.get_int(&Self::MAX_ATTEMPTS)?,
            initial_backoff,
            max_backoff,
            deadline: Duration::from_millis(r.get_int(&Self::DEADLINE_MS)?),
        })
    }

    /// The wait before retry number `retry` (1 for the first): the backoff doubled `retry - 1` times, capped,
    /// then a random point in its upper half ("equal jitter"), so many callers failing at once spread out.
    fn backoff(&self, retry: u32) -> Duration {
        let exp = self.initial_backoff.saturating_mul(1u32 << (retry - 1).min(20)).min(self.max_backoff);
        let half = exp / 2;
        let jitter = getrandom::u64().unwrap_or(0) % (half.as_nanos() as u64 + 1);
        half + Duration::from_nanos(jitter)
    }
}

/// Retries every idempotent call (`put_file`, `put_bytes`, `get_range`, `delete`, `delete_many`, `list`)
/// whose error is transient, as [`RetryConfig`] says. Permanent errors return at once. A stream upload
/// (`put_stream`) is tried once: its bytes are consumed by the attempt. The error of the last attempt is
/// returned with the attempts made as context.
#[derive(Debug)]
pub struct RetryLayer {
    inner: Arc<dyn StorageBackend>,
    config: RetryConfig,
}

impl RetryLayer {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn StorageBackend>, config: RetryConfig) -> Self {
        RetryLayer { inner, config }
    }

    async fn run<T, F, Fut>(&self, operation: &'static str, key: &str, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T>> + Send,
    {
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            let e = match call().await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let wait = self.config.backoff(attempt);
            let in_time = started.elapsed() + wait <= self.config.deadline;
            if !e.is_transient() || attempt >= self.config.max_attempts || !in_time {
                return Err(if attempt > 1 { e.with_field("attempts", attempt) } else { e });
            }
            tracing::debug!(operation, key, attempt, wait_ms = wait.as_millis() as u64, error = %e,
                "transient failure; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}

/// A [`RetryConfig`] is the [`Layer`] of a [`RetryLayer`] with that policy.
impl Layer for RetryConfig {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        Arc::new(RetryLayer::new(inner, *self))
    }
}

#[async_trait]
impl LayeredBackend for RetryLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.run("put_file", key, || self.inner.put_file(key, path, len)).await
    }

    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.run("put_bytes", key, || self.inner.put_bytes(key, bytes.clone())).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.run("get_range", key, || self.inner.get_range(key, range.clone())).await
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        self.run("get_tail", key, || self.inner.get_tail(key, len)).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.run("delete", key, || self.inner.delete(key)).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let first = keys.first().map_or("", String::as_str);
        self.run("delete_many", first, || self.inner.delete_many(keys)).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.run("list", prefix, || self.inner.list(prefix)).await
    }

    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        self.run("list_temporary", prefix, || self.inner.list_temporary(prefix)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::layers::{Fault, FaultLayer, FaultRule};
    use crate::backend::{MemoryBackend, Op};
    use crate::config::props;
    use crate::error::ErrorKind;

    fn policy(max_attempts: u32, deadline_ms: u64) -> RetryConfig {
        RetryConfig {
            max_attempts,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            deadline: Duration::from_millis(deadline_ms),
        }
    }

    /// (case, the fault and how many calls it hits, policy, attempts the store sees, outcome)
    type Case = (&'static str, Fault, Option<usize>, RetryConfig, usize, Option<ErrorKind>);

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_permanent_ones_not_and_the_deadline_holds() {
        let transient = Fault::transient;
        let permanent = || Fault::permanent(ErrorKind::Storage);
        let cases: [Case; 6] = [
            ("two transient failures, then success", transient(), Some(2), policy(3, 30_000), 3, None),
            (
                "a permanent failure is not retried",
                permanent(),
                Some(2),
                policy(3, 30_000),
                1,
                Some(ErrorKind::Storage),
            ),
            (
                "not found is not retried",
                Fault::permanent(ErrorKind::NotFound),
                Some(1),
                policy(3, 30_000),
                1,
                Some(ErrorKind::NotFound),
            ),
            ("attempts run out", transient(), None, policy(3, 30_000), 3, Some(ErrorKind::Storage)),
            ("one attempt means no retry", transient(), Some(1), policy(1, 30_000), 1, Some(ErrorKind::Storage)),
            // Waits of 50..100 ms, then 100..200 ms: only the first fits in 150 ms.
            ("the deadline stops retries", transient(), None, policy(10, 150), 2, Some(ErrorKind::Storage)),
        ];
        for (case, fault, times, config, attempts, outcome) in cases {
            let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
            store.put_bytes("a/k", Bytes::from_static(b"data")).await.unwrap();
            let rule = FaultRule { op: Some(Op::Get), key: "a/*".into(), fault, times };
            let faults = Arc::new(FaultLayer::new(store).with_rule(rule));
            let retry: Arc<dyn StorageBackend> = Arc::new(RetryLayer::new(faults.clone(), config));
            let started = Instant::now();
            let r = retry.get_range("a/k", 0..4).await;
            let took = started.elapsed();
            assert_eq!(faults.calls(Op::Get), attempts, "{case}: attempts");
            match outcome {
                None => assert_eq!(&r.unwrap()[..], b"data", "{case}"),
                Some(kind) => {
                    let e = r.unwrap_err();
                    assert_eq!(e.kind(), kind, "{case}: {e}");
                    let want_context = (attempts > 1).then(|| attempts.to_string());
                    assert_eq!(e.field("attempts").map(str::to_string), want_context, "{case}: {e}");
                }
            }
            assert!(took <= config.deadline.max(Duration::from_secs(2)), "{case}: took {took:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_upload_is_tried_once_and_bytes_are_replayed() {
        let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let rule =
            |times| FaultRule { op: Some(Op::Put), key: "*".into(), fault: Fault::transient(), times: Some(times) };
        let faults = Arc::new(FaultLayer::new(store).with_rule(rule(1)));
        let retry: Arc<dyn StorageBackend> = Arc::new(RetryLayer::new(faults.clone(), RetryConfig::default()));
        retry.put_bytes("k", Bytes::from_static(b"abc")).await.unwrap();
        assert_eq!(faults.calls(Op::Put), 2);
        assert_eq!(&retry.get_range("k", 0..3).await.unwrap()[..], b"abc");
        faults.add_rule(rule(1));
        let stream = Box::pin(futures::stream::once(async { Ok(Bytes::from_static(b"xyz")) }));
        assert!(retry.put_stream("s", stream).await.unwrap_err().is_transient());
        assert_eq!(faults.calls(Op::Put), 3, "a stream is not replayed");
    }

    #[test]
    fn settings_are_read_and_checked() {
        let p = props([("retry.max.attempts", "5"), ("retry.backoff.ms", "10"), ("retry.deadline.ms", "0")]);
        let c = RetryConfig::read(&mut ConfigReader::new(&p)).unwrap();
        assert_eq!((c.max_attempts, c.initial_backoff, c.deadline), (5, Duration::from_millis(10), Duration::ZERO));
        let p = props([("retry.max.attempts", "0")]);
        let e = RetryConfig::read(&mut ConfigReader::new(&p)).unwrap_err();
        assert_eq!(e.config_key(), Some("retry.max.attempts"));
        let p = props([("retry.backoff.ms", "500"), ("retry.backoff.max.ms", "100")]);
        let e = RetryConfig::read(&mut ConfigReader::new(&p)).unwrap_err();
        assert_eq!(e.config_key(), Some("retry.backoff.max.ms"));
        for retry in 1..40 {
            let d = RetryConfig::default().backoff(retry);
            assert!(d >= Duration::from_millis(50) && d <= Duration::from_secs(5), "retry {retry}: {d:?}");
        }
    }
}
