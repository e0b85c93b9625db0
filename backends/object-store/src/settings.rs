//! Settings every cloud backend shares: request timeouts and retries, and store URLs.

use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use rsm_core::config::ConfigReader;
use rsm_core::{Error, Result};
use std::time::Duration;

/// Timeouts and retries of a cloud client, read from `{p}.api.call.timeout`,
/// `{p}.api.call.attempt.timeout`, `{p}.connect.timeout` and `{p}.max.retries` for a backend prefix `p`
/// (`s3`, `azure`, `gcs`), after Aiven's `s3.api.call.timeout` and `s3.api.call.attempt.timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSettings {
    /// `{p}.api.call.timeout` (ms): the whole of one call, retries included (default 180 000).
    pub call_timeout: Duration,
    /// `{p}.api.call.attempt.timeout` (ms): one HTTP request (default 30 000).
    pub attempt_timeout: Duration,
    /// `{p}.connect.timeout` (ms): opening one connection (default 5 000).
    pub connect_timeout: Duration,
    /// `{p}.max.retries`: retries of one request after the first attempt, 0 to 100 (default 10).
    pub max_retries: usize,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            call_timeout: Duration::from_secs(180),
            attempt_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_retries: 10,
        }
    }
}

impl ClientSettings {
    /// Reads the settings of backend prefix `p`.
    pub fn read(r: &mut ConfigReader<'_>, p: &str) -> Result<Self> {
        let d = ClientSettings::default();
        let ms = |d: Duration| d.as_millis() as u64;
        let call = r.int_in(&format!("{p}.api.call.timeout"), ms(d.call_timeout), 1..=86_400_000)?;
        let attempt = r.int_in(&format!("{p}.api.call.attempt.timeout"), ms(d.attempt_timeout), 1..=86_400_000)?;
        let connect = r.int_in(&format!("{p}.connect.timeout"), ms(d.connect_timeout), 1..=3_600_000)?;
        let max_retries = r.int_in(&format!("{p}.max.retries"), d.max_retries, 0..=100)?;
        Ok(ClientSettings {
            call_timeout: Duration::from_millis(call),
            attempt_timeout: Duration::from_millis(attempt),
            connect_timeout: Duration::from_millis(connect),
            max_retries,
        })
    }

    /// Client options with these timeouts (and plain HTTP allowed when `allow_http`).
    pub fn client_options(&self, allow_http: bool) -> ClientOptions {
        ClientOptions::new()
            .with_timeout(self.attempt_timeout)
            .with_connect_timeout(self.connect_timeout)
            .with_allow_http(allow_http)
    }

    /// The retry policy: exponential backoff with jitter, at most `max_retries` retries, none started
    /// after `call_timeout`.
    pub fn retry_config(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(15),
                base: 2.0,
            },
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
    fn settings_name_their_keys() {
        let p = props([("s3.max.retries", "x")]);
        let mut r = ConfigReader::new(&p);
        let e = ClientSettings::read(&mut r, "s3").unwrap_err();
        assert!(e.to_string().contains("`s3.max.retries`"), "{e}");
    }
}
