//! A topic's own tiering settings as given, its `cleanup.policy`, and the checks made when a topic is
//! created or altered (SR-12: no remote storage on a compacted topic, nor while the broker has it off).

use super::broker::BrokerSettings;
use super::keys::*;
use super::parse::{
    LAG_MEANING, LOCAL_BYTES_MEANING, LOCAL_MS_MEANING, MAX, MS_PER_MINUTE, opt_bool, opt_cleanup, opt_int,
};
use super::resolution::TopicPolicy;
use rsm_core::config::ConfigReader;
use rsm_core::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;

/// A topic's `cleanup.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// `delete` is in the list.
    pub delete: bool,
    /// `compact` is in the list.
    pub compact: bool,
}

impl CleanupPolicy {
    /// `delete`, Kafka's default.
    pub const DELETE: CleanupPolicy = CleanupPolicy { delete: true, compact: false };

    /// Parses a comma-separated list of `delete` and `compact`.
    pub fn parse(key: &str, raw: &str) -> Result<CleanupPolicy> {
        let mut p = CleanupPolicy { delete: false, compact: false };
        for item in raw.split(',').map(str::trim) {
            match item {
                "delete" => p.delete = true,
                "compact" => p.compact = true,
                _ => {
                    return Err(Error::config(
                        key,
                        format!("`{raw}` is not a cleanup policy; allowed: delete, compact, or delete,compact"),
                    ));
                }
            }
        }
        Ok(p)
    }
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy::DELETE
    }
}

impl fmt::Display for CleanupPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.compact, self.delete) {
            (true, true) => f.write_str("compact,delete"),
            (true, false) => f.write_str("compact"),
            (false, _) => f.write_str("delete"),
        }
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
            remote_storage_enable: opt_bool(r, REMOTE_STORAGE_ENABLE)?,
            cleanup_policy: opt_cleanup(r, CLEANUP_POLICY)?,
            retention_ms: opt_int(r, RETENTION_MS, -1, MAX, " (-1: unlimited)")?,
            retention_bytes: opt_int(r, RETENTION_BYTES, -1, MAX, " (-1: unlimited)")?,
            local_retention_ms: opt_int(r, LOCAL_RETENTION_MS, -2, MAX, LOCAL_MS_MEANING)?,
            local_retention_bytes: opt_int(r, LOCAL_RETENTION_BYTES, -2, MAX, LOCAL_BYTES_MEANING)?,
            remote_log_retention_minutes: opt_int(r, REMOTE_LOG_RETENTION_MINUTES, 1, MAX / MS_PER_MINUTE, "")?,
            remote_log_retention_bytes: opt_int(r, REMOTE_LOG_RETENTION_BYTES, 1, MAX, "")?,
            remote_copy_lag_ms: opt_int(r, REMOTE_COPY_LAG_MS, -1, MAX, LAG_MEANING)?,
            remote_copy_lag_bytes: opt_int(r, REMOTE_COPY_LAG_BYTES, -1, MAX, LAG_MEANING)?,
        })
    }

    /// Whether the topic asks for remote storage (`remote.storage.enable=true`).
    pub(super) fn requests_remote(&self) -> bool {
        self.remote_storage_enable == Some(true)
    }

    /// The topic's cleanup policy, else the broker's `log.cleanup.policy`.
    pub(super) fn cleanup(&self, broker: &BrokerSettings) -> CleanupPolicy {
        self.cleanup_policy.unwrap_or(broker.topic_defaults.cleanup_policy)
    }
}

/// Validates a topic being created: on top of [`TopicPolicy::resolve`], remote storage on a compacted
/// topic, or while the broker has remote storage off, is rejected (SR-12).
pub fn validate_create(topic: &TopicSettings, broker: &BrokerSettings) -> Result<TopicPolicy> {
    check_remote_allowed(topic, broker, REMOTE_STORAGE_ENABLE)?;
    TopicPolicy::resolve(topic, broker)
}

/// Validates an alteration from `current` to `proposed` (both full topic settings). Turning compaction
/// on for a tiered topic, or remote storage on for a compacted topic, is rejected naming the key that
/// changed (SR-12).
pub fn validate_alter(
    current: &TopicSettings,
    proposed: &TopicSettings,
    broker: &BrokerSettings,
) -> Result<TopicPolicy> {
    let cleanup_changed = current.cleanup(broker) != proposed.cleanup(broker);
    let remote_changed = current.requests_remote() != proposed.requests_remote();
    let key = if cleanup_changed && !remote_changed { CLEANUP_POLICY } else { REMOTE_STORAGE_ENABLE };
    check_remote_allowed(proposed, broker, key)?;
    TopicPolicy::resolve(proposed, broker)
}

fn check_remote_allowed(topic: &TopicSettings, broker: &BrokerSettings, key: &str) -> Result<()> {
    if !topic.requests_remote() {
        return Ok(());
    }
    if !broker.remote_storage_enabled {
        return Err(Error::config(
            REMOTE_STORAGE_ENABLE,
            format!("`true` is not allowed while {REMOTE_LOG_STORAGE_ENABLE} is false on this broker"),
        ));
    }
    let cleanup = topic.cleanup(broker);
    if cleanup.compact {
        return Err(Error::config(
            key,
            format!(
                "compacted topics are not supported with remote storage: {CLEANUP_POLICY}={cleanup} with \
                 {REMOTE_STORAGE_ENABLE}=true; allowed: {CLEANUP_POLICY}=delete, or {REMOTE_STORAGE_ENABLE}=false"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_support::{assert_config_error, enabled_broker, topic};
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
    fn compacted_topics_sr12() {
        struct Case {
            name: &'static str,
            op: &'static str,
            current: &'static [(&'static str, &'static str)],
            proposed: &'static [(&'static str, &'static str)],
            broker_enabled: bool,
            error: Option<(&'static str, &'static str)>,
            remote_storage: bool,
            warning: Option<&'static str>,
        }
        let cases = [
            Case {
                name: "create compacted + remote is rejected",
                op: "create",
                current: &[],
                proposed: &[("remote.storage.enable", "true"), ("cleanup.policy", "compact")],
                broker_enabled: true,
                error: Some(("remote.storage.enable", "compacted topics are not supported with remote storage")),
                remote_storage: false,
                warning: None,
            },
            Case {
                name: "create compact,delete + remote is rejected",
                op: "create",
                current: &[],
                proposed: &[("remote.storage.enable", "true"), ("cleanup.policy", "delete,compact")],
                broker_enabled: true,
                error: Some(("remote.storage.enable", "cleanup.policy=compact,delete with remote.storage.enable=true")),
                remote_storage: false,
                warning: None,
            },
            Case {
                name: "create delete + remote is accepted",
                op: "create",
                current: &[],
                proposed: &[("remote.storage.enable", "true"), ("cleanup.policy", "delete")],
                broker_enabled: true,
                error: None,
                remote_storage: true,
                warning: None,
            },
            Case {
                name: "create compacted without remote is accepted",
                op: "create",
                current: &[],
                proposed: &[("cleanup.policy", "compact")],
                broker_enabled: true,
                error: None,
                remote_storage: false,
                warning: None,
            },
            Case {
                name: "create remote while broker has it off is rejected",
                op: "create",
                current: &[],
                proposed: &[("remote.storage.enable", "true")],
                broker_enabled: false,
                error: Some(("remote.storage.enable", "not allowed while remote.log.storage.enable is false")),
                remote_storage: false,
                warning: None,
            },
            Case {
                name: "alter: compaction turned on for a tiered topic names cleanup.policy",
                op: "alter",
                current: &[("remote.storage.enable", "true")],
                proposed: &[("remote.storage.enable", "true"), ("cleanup.policy", "compact")],
                broker_enabled: true,
                error: Some(("cleanup.policy", "compacted topics are not supported with remote storage")),
                remote_storage: false,
                warning: None,
            },
            Case {
                name: "alter: remote turned on for a compacted topic names remote.storage.enable",
                op: "alter",
                current: &[("cleanup.policy", "compact")],
                proposed: &[("cleanup.policy", "compact"), ("remote.storage.enable", "true")],
                broker_enabled: true,
                error: Some(("remote.storage.enable", "compacted topics are not supported with remote storage")),
                remote_storage: false,
                warning: None,
            },
            Case {
                name: "alter: unrelated change on a tiered topic is accepted",
                op: "alter",
                current: &[("remote.storage.enable", "true")],
                proposed: &[("remote.storage.enable", "true"), ("retention.ms", "-1")],
                broker_enabled: true,
                error: None,
                remote_storage: true,
                warning: None,
            },
            Case {
                name: "start-up: compacted + remote is a warning and remote is off",
                op: "startup",
                current: &[],
                proposed: &[("remote.storage.enable", "true"), ("cleanup.policy", "compact")],
                broker_enabled: true,
                error: None,
                remote_storage: false,
                warning: Some(
                    "compacted topics are not supported with remote storage (cleanup.policy=compact); remote storage is off for this topic",
                ),
            },
            Case {
                name: "start-up: remote requested while broker has it off is a warning",
                op: "startup",
                current: &[],
                proposed: &[("remote.storage.enable", "true")],
                broker_enabled: false,
                error: None,
                remote_storage: false,
                warning: Some("remote.log.storage.enable is false on this broker"),
            },
            Case {
                name: "start-up: tiered delete topic has no warning",
                op: "startup",
                current: &[],
                proposed: &[("remote.storage.enable", "true")],
                broker_enabled: true,
                error: None,
                remote_storage: true,
                warning: None,
            },
        ];
        for c in cases {
            let broker = if c.broker_enabled { enabled_broker() } else { BrokerSettings::default() };
            let proposed = topic(c.proposed);
            let got = match c.op {
                "create" => validate_create(&proposed, &broker),
                "alter" => validate_alter(&topic(c.current), &proposed, &broker),
                _ => TopicPolicy::at_startup("t", &proposed, &broker),
            };
            match c.error {
                Some((key, msg)) => assert_config_error(c.name, got, key, msg),
                None => {
                    let p = got.unwrap_or_else(|e| panic!("{}: {e}", c.name));
                    assert_eq!(p.remote_storage, c.remote_storage, "{}: remote_storage", c.name);
                    match c.warning {
                        None => assert!(p.warnings.is_empty(), "{}: {:?}", c.name, p.warnings),
                        Some(w) => {
                            assert!(p.warnings.len() == 1 && p.warnings[0].contains(w), "{}: {:?}", c.name, p.warnings)
                        }
                    }
                }
            }
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
        assert_eq!(DAY * 7, DEFAULT_RETENTION_MS);
    }
}
