//! A topic's own tiering settings as given ([`TopicSettings`]), and the broker's `log.*` defaults of them
//! ([`TopicDefaults`]).

use super::catalogue;
use super::parse::{
    CleanupPolicy, LAG_MEANING, LOCAL_BYTES_MEANING, LOCAL_MS_MEANING, MS_PER_HOUR, MS_PER_MINUTE, UNLIMITED_MEANING,
    opt_bool, opt_cleanup, opt_declared,
};
use rsm_core::config::ConfigReader;
use rsm_core::error::Result;
use std::collections::BTreeMap;

/// Broker defaults for the topic settings (`log.*`), which a topic's own values override.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDefaults {
    /// `log.retention.ms` (or `.minutes`, `.hours`); -1 unlimited.
    pub retention_ms: i64,
    /// `log.retention.bytes`; -1 unlimited.
    pub retention_bytes: i64,
    /// `log.local.retention.ms`; -2 use the retention, -1 unlimited.
    pub local_retention_ms: i64,
    /// `log.local.retention.bytes`; -2 use the retention, -1 unlimited.
    pub local_retention_bytes: i64,
    /// `log.remote.copy.lag.ms`.
    pub copy_lag_ms: i64,
    /// `log.remote.copy.lag.bytes`.
    pub copy_lag_bytes: i64,
    /// `log.cleanup.policy`.
    pub cleanup_policy: CleanupPolicy,
}

impl Default for TopicDefaults {
    /// The declared defaults ([`catalogue`]).
    fn default() -> Self {
        TopicDefaults {
            retention_ms: catalogue::LOG_RETENTION_MS.default_int(),
            retention_bytes: catalogue::LOG_RETENTION_BYTES.default_int(),
            local_retention_ms: catalogue::LOG_LOCAL_RETENTION_MS.default_int(),
            local_retention_bytes: catalogue::LOG_LOCAL_RETENTION_BYTES.default_int(),
            copy_lag_ms: catalogue::LOG_REMOTE_COPY_LAG_MS.default_int(),
            copy_lag_bytes: catalogue::LOG_REMOTE_COPY_LAG_BYTES.default_int(),
            cleanup_policy: CleanupPolicy::DELETE, // LOG_CLEANUP_POLICY's default
        }
    }
}

impl TopicDefaults {
    /// Reads the `log.*` defaults. `log.retention.ms` wins over `.minutes`, which wins over `.hours`.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let d = TopicDefaults::default();
        let ms = opt_declared(r, &catalogue::LOG_RETENTION_MS, UNLIMITED_MEANING)?;
        let minutes = opt_declared(r, &catalogue::LOG_RETENTION_MINUTES, UNLIMITED_MEANING)?;
        let hours = opt_declared(r, &catalogue::LOG_RETENTION_HOURS, UNLIMITED_MEANING)?;
        let scaled = |v: i64, unit: i64| if v < 0 { -1 } else { v * unit };
        let retention_ms = ms
            .or(minutes.map(|m| scaled(m, MS_PER_MINUTE)))
            .or(hours.map(|h| scaled(h, MS_PER_HOUR)))
            .unwrap_or(d.retention_ms);
        Ok(TopicDefaults {
            retention_ms,
            retention_bytes: opt_declared(r, &catalogue::LOG_RETENTION_BYTES, UNLIMITED_MEANING)?
                .unwrap_or(d.retention_bytes),
            local_retention_ms: opt_declared(r, &catalogue::LOG_LOCAL_RETENTION_MS, LOCAL_MS_MEANING)?
                .unwrap_or(d.local_retention_ms),
            local_retention_bytes: opt_declared(r, &catalogue::LOG_LOCAL_RETENTION_BYTES, LOCAL_BYTES_MEANING)?
                .unwrap_or(d.local_retention_bytes),
            copy_lag_ms: opt_declared(r, &catalogue::LOG_REMOTE_COPY_LAG_MS, LAG_MEANING)?.unwrap_or(d.copy_lag_ms),
            copy_lag_bytes: opt_declared(r, &catalogue::LOG_REMOTE_COPY_LAG_BYTES, LAG_MEANING)?
                .unwrap_or(d.copy_lag_bytes),
            cleanup_policy: opt_cleanup(r, catalogue::LOG_CLEANUP_POLICY.key)?.unwrap_or(d.cleanup_policy),
        })
    }
}

/// A topic's own tiering settings as given; `None` means "not set, use the broker default".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicSettings {
    /// `remote.storage.enable`.
    pub remote_storage_enable: Option<bool>,
    /// `cleanup.policy`.
    pub cleanup_policy: Option<CleanupPolicy>,
    /// `retention.ms`.
    pub retention_ms: Option<i64>,
    /// `retention.bytes`.
    pub retention_bytes: Option<i64>,
    /// `local.retention.ms`.
    pub local_retention_ms: Option<i64>,
    /// `local.retention.bytes`.
    pub local_retention_bytes: Option<i64>,
    /// `remote.log.retention.minutes` (SR-10).
    pub remote_log_retention_minutes: Option<i64>,
    /// `remote.log.retention.bytes` (SR-11).
    pub remote_log_retention_bytes: Option<i64>,
    /// `remote.copy.lag.ms`.
    pub remote_copy_lag_ms: Option<i64>,
    /// `remote.copy.lag.bytes`.
    pub remote_copy_lag_bytes: Option<i64>,
}

impl TopicSettings {
    /// Parses a map holding only these topic settings; any other key is an error.
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self> {
        let mut r = ConfigReader::new(props);
        let s = Self::read(&mut r)?;
        r.finish()?;
        Ok(s)
    }

    /// Reads these settings out of a reader that may hold other topic settings too.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        Ok(TopicSettings {
            remote_storage_enable: opt_bool(r, catalogue::REMOTE_STORAGE_ENABLE.key)?,
            cleanup_policy: opt_cleanup(r, catalogue::CLEANUP_POLICY.key)?,
            retention_ms: opt_declared(r, &catalogue::RETENTION_MS, UNLIMITED_MEANING)?,
            retention_bytes: opt_declared(r, &catalogue::RETENTION_BYTES, UNLIMITED_MEANING)?,
            local_retention_ms: opt_declared(r, &catalogue::LOCAL_RETENTION_MS, LOCAL_MS_MEANING)?,
            local_retention_bytes: opt_declared(r, &catalogue::LOCAL_RETENTION_BYTES, LOCAL_BYTES_MEANING)?,
            remote_log_retention_minutes: opt_declared(r, &catalogue::REMOTE_LOG_RETENTION_MINUTES, "")?,
            remote_log_retention_bytes: opt_declared(r, &catalogue::REMOTE_LOG_RETENTION_BYTES, "")?,
            remote_copy_lag_ms: opt_declared(r, &catalogue::REMOTE_COPY_LAG_MS, LAG_MEANING)?,
            remote_copy_lag_bytes: opt_declared(r, &catalogue::REMOTE_COPY_LAG_BYTES, LAG_MEANING)?,
        })
    }

    /// Whether the topic asks for remote storage (`remote.storage.enable=true`).
    pub(super) fn requests_remote(&self) -> bool {
        self.remote_storage_enable == Some(true)
    }

    /// The topic's cleanup policy, else the broker's `log.cleanup.policy`.
    pub(super) fn cleanup(&self, defaults: &TopicDefaults) -> CleanupPolicy {
        self.cleanup_policy.unwrap_or(defaults.cleanup_policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_support::assert_config_error;
    use rsm_core::config::props;

    const DAY: i64 = 86_400_000;

    #[test]
    fn topic_settings_errors() {
        use crate::settings::test_support::TopicError as Case;
        let cases = [
            Case {
                name: "lag below -1",
                topic: &[("remote.copy.lag.ms", "-2")],
                key: "remote.copy.lag.ms",
                message: "-2 is out of range [-1, 9223372036854775807]",
            },
            Case {
                name: "lag not numeric",
                topic: &[("remote.copy.lag.bytes", "1GB")],
                key: "remote.copy.lag.bytes",
                message: "`1GB` is not an integer in [-1, 9223372036854775807]",
            },
            Case {
                name: "local retention below -2",
                topic: &[("local.retention.ms", "-3")],
                key: "local.retention.ms",
                message: "-3 is out of range [-2, 9223372036854775807] (-2: use retention.ms, -1: unlimited)",
            },
            Case {
                name: "retention.ms below -1",
                topic: &[("retention.ms", "-2")],
                key: "retention.ms",
                message: "-2 is out of range [-1, 9223372036854775807]",
            },
            Case {
                name: "SR-10: remote retention minutes must be positive",
                topic: &[("remote.log.retention.minutes", "0")],
                key: "remote.log.retention.minutes",
                message: "0 is out of range [1, 153722867280912]",
            },
            Case {
                name: "SR-10: remote retention minutes that overflow ms",
                topic: &[("remote.log.retention.minutes", "153722867280913")],
                key: "remote.log.retention.minutes",
                message: "out of range [1, 153722867280912]",
            },
            Case {
                name: "SR-11: remote retention bytes must be positive",
                topic: &[("remote.log.retention.bytes", "-1")],
                key: "remote.log.retention.bytes",
                message: "-1 is out of range [1, 9223372036854775807]",
            },
            Case {
                name: "bad cleanup policy",
                topic: &[("cleanup.policy", "compact,")],
                key: "cleanup.policy",
                message: "`compact,` is not a cleanup policy; allowed: delete, compact, or delete,compact",
            },
            Case {
                name: "unknown topic key",
                topic: &[("remote.copy.lag", "1")],
                key: "remote.copy.lag",
                message: "unknown setting",
            },
        ];
        for c in cases {
            assert_config_error(c.name, TopicSettings::from_props(&props(c.topic.iter().copied())), c.key, c.message);
        }
    }

    #[test]
    fn topic_settings_read_leaves_other_keys() {
        let p = props([("segment.bytes", "1024"), ("remote.storage.enable", "true"), ("remote.copy.lag.ms", "5")]);
        let mut r = ConfigReader::new(&p);
        let t = TopicSettings::read(&mut r).expect("read");
        assert_eq!(t.remote_copy_lag_ms, Some(5));
        assert_eq!(t.remote_storage_enable, Some(true));
        let e = r.finish().expect_err("segment.bytes was not read by the tiering settings");
        assert!(e.to_string().contains("segment.bytes"), "{e}");
        assert_eq!(DAY * 7, catalogue::LOG_RETENTION_MS.default_int::<i64>());
    }
}
