//! Settings every cloud backend shares: request timeouts and retries, and store URLs.

use crate::budget::RetryBudgetSettings;
use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use rsm_core::config::{ConfigReader, Setting, Unit};
use rsm_core::{Error, Result};
use std::time::Duration;

/// The first wait before a retry of a cloud request.
const INITIAL_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait before a retry of a cloud request.
const MAX_BACKOFF: Duration = Duration::from_secs(15);

/// Timeouts and retries of a cloud client, read from `{p}.api.call.timeout`,
/// `{p}.api.call.attempt.timeout`, `{p}.connect.timeout` and `{p}.max.retries` for a backend prefix `p`
/// (`s3`, `azure`, `gcs`), after Aiven's `s3.api.call.timeout` and `s3.api.call.attempt.timeout`; each
/// declared once as a family ([`ClientSettings::CONNECT_TIMEOUT`] and the like, `<p>` the prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSettings {
    /// [`ClientSettings::CALL_TIMEOUT`]: the whole of one call, retries included.
    pub call_timeout: Duration,
    /// [`ClientSettings::ATTEMPT_TIMEOUT`]: one HTTP request.
    pub attempt_timeout: Duration,
    /// [`ClientSettings::CONNECT_TIMEOUT`]: opening one connection.
    pub connect_timeout: Duration,
    /// [`ClientSettings::MAX_RETRIES`]: retries of one request after the first attempt.
    pub max_retries: usize,
    /// [`ClientSettings::RETRY_BURST`], [`ClientSettings::RETRY_SHARE`], [`ClientSettings::THROTTLE_BACKOFF`]
    /// and [`ClientSettings::THROTTLE_BACKOFF_MAX`]: the store's retry budget ([`crate::budget::BudgetConnector`]).
    pub retry_budget: RetryBudgetSettings,
}

impl Default for ClientSettings {
    /// The declared defaults.
    fn default() -> Self {
        ClientSettings {
            call_timeout: Duration::from_millis(Self::CALL_TIMEOUT.default_int()),
            attempt_timeout: Duration::from_millis(Self::ATTEMPT_TIMEOUT.default_int()),
            connect_timeout: Duration::from_millis(Self::CONNECT_TIMEOUT.default_int()),
            max_retries: Self::MAX_RETRIES.default_int(),
            retry_budget: RetryBudgetSettings {
                burst: Self::RETRY_BURST.default_int(),
                share_percent: Self::RETRY_SHARE.default_int(),
                throttle_backoff: Duration::from_millis(Self::THROTTLE_BACKOFF.default_int()),
                throttle_backoff_max: Duration::from_millis(Self::THROTTLE_BACKOFF_MAX.default_int()),
            },
        }
    }
}

impl ClientSettings {
    /// `<p>.api.call.timeout`.
    pub const CALL_TIMEOUT: Setting =
        Setting::long("<p>.api.call.timeout", 1, 86_400_000).with_default(30_000).with_unit(Unit::Millis).with_doc(
            "(cloud stores) ms for a whole request, retries included (a broker's default: a store that does not \
             answer frees the calling thread in seconds; the broker retries a failed copy or fetch itself)",
        );
    /// `<p>.api.call.attempt.timeout`.
    pub const ATTEMPT_TIMEOUT: Setting = Setting::long("<p>.api.call.attempt.timeout", 1, 86_400_000)
        .with_default(30_000)
        .with_unit(Unit::Millis)
        .with_doc("(cloud stores) ms for one HTTP request");
    /// `<p>.connect.timeout`.
    pub const CONNECT_TIMEOUT: Setting = Setting::long("<p>.connect.timeout", 1, 3_600_000)
        .with_default(5_000)
        .with_unit(Unit::Millis)
        .shown_as("`s3.connect.timeout`, `azure.connect.timeout`, `gcs.connect.timeout`")
        .with_doc("(cloud stores) ms to open one connection");
    /// `<p>.max.retries`.
    pub const MAX_RETRIES: Setting = Setting::int("<p>.max.retries", 0, 100).with_default(3).with_doc(
        "(cloud stores) retries of a request (timeouts, connection errors, 5xx, 429) after the first attempt, \
         with exponential backoff and jitter (as the AWS SDKs' standard mode); more retries add load to a store \
         that is throttling",
    );

    /// `<p>.retry.budget.burst`.
    pub const RETRY_BURST: Setting = Setting::int("<p>.retry.budget.burst", 0, 100_000).with_default(50).with_doc(
        "(cloud stores) retries the store's requests may spend ahead of their successes, shared by all calls; \
         once spent, a failure is not retried (the broker retries the call later) until successes earn retries \
         back, so a store that is down or throttling sees about one request per call",
    );
    /// `<p>.retry.budget.percent`.
    pub const RETRY_SHARE: Setting = Setting::int("<p>.retry.budget.percent", 0, 100).with_default(10).with_doc(
        "(cloud stores) the share of one retry each successful request earns back: beyond the burst, retries are \
         at most this share of requests",
    );
    /// `<p>.throttle.backoff.ms`.
    pub const THROTTLE_BACKOFF: Setting =
        Setting::long("<p>.throttle.backoff.ms", 0, 600_000).with_default(50).with_unit(Unit::Millis).with_doc(
            "(cloud stores) after a throttled answer (429, or 503 such as S3's SlowDown and Azure's ServerBusy), \
             the store gets no request (a retry or another call's) for this long less a random part of up to half, \
             doubled for each throttled answer in a row, on top of the client's own backoff; requests dropped \
             while they wait (a fetch past `fetch.timeout.ms`) do not prolong it; any other answer ends it",
        );
    /// `<p>.throttle.backoff.max.ms`.
    pub const THROTTLE_BACKOFF_MAX: Setting =
        Setting::long("<p>.throttle.backoff.max.ms", 0, 3_600_000).with_default(200).with_unit(Unit::Millis).with_doc(
            "(cloud stores) the longest pause of a throttling store; keep it well below `fetch.timeout.ms`: a fetch \
             that outlives its wait while paused counts as a failure of the store for the circuit breaker, and \
             kept it open long after the store recovered (the retry budget and the breaker are what cut the \
             requests to a throttling store)",
        );

    /// The settings [`ClientSettings::read`] reads, each a family of one key a backend prefix.
    pub const SETTINGS: [&'static Setting; 8] = [
        &Self::CALL_TIMEOUT,
        &Self::ATTEMPT_TIMEOUT,
        &Self::CONNECT_TIMEOUT,
        &Self::MAX_RETRIES,
        &Self::RETRY_BURST,
        &Self::RETRY_SHARE,
        &Self::THROTTLE_BACKOFF,
        &Self::THROTTLE_BACKOFF_MAX,
    ];

    /// Reads the settings of backend prefix `p`.
    pub fn read(r: &mut ConfigReader<'_>, p: &str) -> Result<Self> {
        let mut read = |s: &Setting| r.get_int_at::<u64>(s, &s.key.replace("<p>", p));
        let call = read(&Self::CALL_TIMEOUT)?;
        let attempt = read(&Self::ATTEMPT_TIMEOUT)?;
        let connect = read(&Self::CONNECT_TIMEOUT)?;
        let throttle_backoff = Duration::from_millis(read(&Self::THROTTLE_BACKOFF)?);
        let throttle_backoff_max = Duration::from_millis(read(&Self::THROTTLE_BACKOFF_MAX)?);
        let at = |s: &Setting| s.key.replace("<p>", p);
        let max_retries = r.get_int_at(&Self::MAX_RETRIES, &at(&Self::MAX_RETRIES))?;
        let burst = r.get_int_at(&Self::RETRY_BURST, &at(&Self::RETRY_BURST))?;
        let share_percent = r.get_int_at(&Self::RETRY_SHARE, &at(&Self::RETRY_SHARE))?;
        if throttle_backoff_max < throttle_backoff {
            return Err(Error::config(
                at(&Self::THROTTLE_BACKOFF_MAX),
                format!(
                    "{} ms is below {} ({} ms)",
                    throttle_backoff_max.as_millis(),
                    at(&Self::THROTTLE_BACKOFF),
                    throttle_backoff.as_millis()
                ),
            ));
        }
        Ok(ClientSettings {
            call_timeout: Duration::from_millis(call),
            attempt_timeout: Duration::from_millis(attempt),
            connect_timeout: Duration::from_millis(connect),
            max_retries,
            retry_budget: RetryBudgetSettings { burst, share_percent, throttle_backoff, throttle_backoff_max },
        })
    }

    /// Client options with these timeouts (and plain HTTP allowed when `allow_http`).
    pub fn client_options(&self, allow_http: bool) -> ClientOptions {
        ClientOptions::new()
            .with_timeout(self.attempt_timeout)
            .with_connect_timeout(self.connect_timeout)
            .with_allow_http(allow_http)
    }

    /// The wait before retry `attempt` (0 for the first) of a client's own retry loop (GCS's uploads): as
    /// object_store's ([`ClientSettings::retry_config`]), 100 ms doubled each retry up to 15 s, less a random
    /// part of up to half, so that callers failing together spread out.
    pub fn backoff(attempt: usize) -> Duration {
        let cap = (INITIAL_BACKOFF * (1u32 << attempt.min(8))).min(MAX_BACKOFF);
        let half = cap / 2;
        half + Duration::from_micros(getrandom::u64().unwrap_or(0) % (half.as_micros() as u64 + 1))
    }

    /// Runs `call` as object_store runs its own requests, for a client's own requests (S3's listings of
    /// uploads, GCS's uploads): a transient failure is retried, `max_retries` times at most and none started
    /// after `call_timeout`, after [`ClientSettings::backoff`]; not one the store's retry budget refused
    /// (retrying it would spend what the budget saves).
    pub async fn retrying<T, F, Fut>(&self, mut call: F) -> object_store::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = object_store::Result<T>>,
    {
        let started = std::time::Instant::now();
        let mut attempt = 0usize;
        loop {
            let r = call().await;
            let retriable = match &r {
                Ok(_) => false,
                Err(e) => {
                    crate::errors::classify(e) == crate::errors::Class::Transient
                        && !crate::budget::retry_budget_spent(e)
                }
            };
            if !retriable || attempt >= self.max_retries || started.elapsed() >= self.call_timeout {
                return r;
            }
            tokio::time::sleep(Self::backoff(attempt)).await;
            attempt += 1;
        }
    }

    /// The retry policy: exponential backoff with jitter, at most `max_retries` retries, none started
    /// after `call_timeout`.
    pub fn retry_config(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig { init_backoff: INITIAL_BACKOFF, max_backoff: MAX_BACKOFF, base: 2.0 },
            max_retries: self.max_retries,
            retry_timeout: self.call_timeout,
        }
    }
}

/// Splits `scheme://bucket/prefix` into the bucket and the key prefix (empty, or ending with `/`).
/// `expected` is the scheme (`s3`, `az`, `gs`); `setting` is the bucket setting the URL stands for, used
/// in error messages.
pub fn split_store_url(url: &str, expected: &str, setting: &str) -> Result<(String, String)> {
    let bad = |why: &str| Error::config(rsm_core::config::STORE_URL_KEY, format!("`{url}`: {why}"));
    let rest = url
        .strip_prefix(expected)
        .and_then(|r| r.strip_prefix("://"))
        .ok_or_else(|| bad(&format!("expected {expected}://{setting}/prefix")))?;
    if rest.contains(['?', '#']) {
        return Err(bad("settings go in the properties, not in the URL"));
    }
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(bad(&format!("no {setting}")));
    }
    let prefix = prefix.trim_end_matches('/');
    let prefix = if prefix.is_empty() {
        String::new()
    } else {
        rsm_core::backend::validate_key(prefix).map_err(|e| bad(&format!("bad key prefix: {e}")))?;
        format!("{prefix}/")
    };
    Ok((bucket.to_string(), prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::config::props;

    #[test]
    fn urls_split() {
        assert_eq!(split_store_url("s3://b/p/q/", "s3", "bucket").unwrap(), ("b".into(), "p/q/".into()));
        assert_eq!(split_store_url("s3://b", "s3", "bucket").unwrap(), ("b".into(), "".into()));
        assert!(split_store_url("gs://b", "s3", "bucket").is_err());
        assert!(split_store_url("s3:///p", "s3", "bucket").is_err());
        assert!(split_store_url("s3://b/../x", "s3", "bucket").is_err());
    }

    #[test]
    fn the_defaults_suit_a_broker() {
        let d = ClientSettings::read(&mut ConfigReader::new(&props::<_, &str, &str>([])), "s3").unwrap();
        assert_eq!(d, ClientSettings::default());
        // Seconds, not minutes: a hung store frees a broker's thread within the call timeout.
        assert_eq!(
            (d.call_timeout, d.attempt_timeout, d.connect_timeout),
            (Duration::from_secs(30), Duration::from_secs(30), Duration::from_secs(5))
        );
        assert_eq!(d.max_retries, 3);
    }

    #[test]
    fn a_clients_own_retries_back_off_with_jitter() {
        for (attempt, cap_ms) in [(0, 100), (1, 200), (2, 400), (7, 12_800), (8, 15_000), (30, 15_000)] {
            let draws: Vec<Duration> = (0..100).map(|_| ClientSettings::backoff(attempt)).collect();
            let cap = Duration::from_millis(cap_ms);
            let (least, most) = (*draws.iter().min().unwrap(), *draws.iter().max().unwrap());
            assert!(least >= cap / 2 && most <= cap && least < most, "{attempt}: {least:?}..={most:?}");
        }
    }

    #[test]
    fn settings_name_their_keys() {
        let p = props([("s3.max.retries", "x")]);
        let mut r = ConfigReader::new(&p);
        let e = ClientSettings::read(&mut r, "s3").unwrap_err();
        assert!(e.to_string().contains("`s3.max.retries`"), "{e}");

        let p = props([("gcs.throttle.backoff.ms", "5000"), ("gcs.throttle.backoff.max.ms", "1000")]);
        let e = ClientSettings::read(&mut ConfigReader::new(&p), "gcs").unwrap_err();
        assert_eq!(e.config_key(), Some("gcs.throttle.backoff.max.ms"), "{e}");
        assert!(e.to_string().contains("below gcs.throttle.backoff.ms (5000 ms)"), "{e}");

        let p = props([("azure.retry.budget.burst", "0"), ("azure.retry.budget.percent", "25")]);
        let b = ClientSettings::read(&mut ConfigReader::new(&p), "azure").unwrap().retry_budget;
        assert_eq!((b.burst, b.share_percent), (0, 25));
    }
}
