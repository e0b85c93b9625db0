//! Cross-key resolution: a topic's settings against the broker's into the [`TopicPolicy`] every other
//! rule takes (the values resolved by [`super::values`]), and the checks made when a topic is created or
//! altered (SR-12: no remote storage on a compacted topic, nor while the broker has it off).

use super::broker::BrokerSettings;
use super::catalogue::{CLEANUP_POLICY, REMOTE_LOG_STORAGE_ENABLE, REMOTE_STORAGE_ENABLE};
use super::parse::CleanupPolicy;
use super::topic::TopicSettings;
use super::values::{CopyLag, RemoteRetention, RetentionLimits, resolve_values};
use rsm_core::error::{Error, Result};

/// A topic's settings resolved against the broker's: what every other rule takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPolicy {
    /// Whether the topic is tiered: requested, allowed by the broker, and not compacted.
    pub remote_storage: bool,
    /// The cleanup policy.
    pub cleanup_policy: CleanupPolicy,
    /// The total retention (`retention.*`).
    pub retention: RetentionLimits,
    /// The effective local retention (`local.retention.*`, -2 resolved to `retention.*`).
    pub local_retention: RetentionLimits,
    /// The remote retention (`remote.log.retention.*`, else `retention.*`).
    pub remote_retention: RemoteRetention,
    /// The delayed-upload lags, -1 resolved to the effective local retention.
    pub copy_lag: CopyLag,
    /// Why remote storage is off although the topic asks for it (SR-12 at start-up); empty otherwise.
    pub warnings: Vec<String>,
}

impl TopicPolicy {
    /// Resolves `topic` against `broker`: topic values override the broker's `log.*` defaults. Values
    /// that contradict each other on a topic that asks for remote storage are errors. A topic that asks
    /// for remote storage while compacted, or while the broker has it off, resolves with remote storage
    /// off and a warning (the start-up rule of SR-12); creation and alteration use
    /// [`validate_create`] and [`validate_alter`], which
    /// reject those instead.
    pub fn resolve(topic: &TopicSettings, broker: &BrokerSettings) -> Result<TopicPolicy> {
        let requested = topic.requests_remote();
        let cleanup_policy = topic.cleanup(&broker.topic_defaults);
        let v = resolve_values(topic, &broker.topic_defaults, requested, false)?;
        let mut warnings = Vec::new();
        if requested && !broker.remote_storage_enabled {
            warnings.push(format!(
                "{REMOTE_STORAGE_ENABLE}=true but {REMOTE_LOG_STORAGE_ENABLE} is false on this broker; \
                 remote storage is off for this topic",
                REMOTE_STORAGE_ENABLE = REMOTE_STORAGE_ENABLE.key,
                REMOTE_LOG_STORAGE_ENABLE = REMOTE_LOG_STORAGE_ENABLE.key,
            ));
        }
        if requested && cleanup_policy.compact {
            warnings.push(format!(
                "compacted topics are not supported with remote storage ({CLEANUP_POLICY}={cleanup_policy}); \
                 remote storage is off for this topic",
                CLEANUP_POLICY = CLEANUP_POLICY.key,
            ));
        }
        Ok(TopicPolicy {
            remote_storage: requested && warnings.is_empty(),
            cleanup_policy,
            retention: v.retention,
            local_retention: v.local_retention,
            remote_retention: v.remote_retention,
            copy_lag: v.copy_lag,
            warnings,
        })
    }

    /// [`TopicPolicy::resolve`] for a topic met at broker start-up, logging each warning (SR-12: a
    /// compacted topic with remote storage is logged and remote storage is off for it).
    pub fn at_startup(topic_name: &str, topic: &TopicSettings, broker: &BrokerSettings) -> Result<TopicPolicy> {
        let p = Self::resolve(topic, broker)?;
        for w in &p.warnings {
            tracing::warn!(topic = topic_name, "{w}");
        }
        Ok(p)
    }
}

/// Validates a topic being created: on top of [`TopicPolicy::resolve`], remote storage on a compacted
/// topic, or while the broker has remote storage off, is rejected (SR-12).
pub fn validate_create(topic: &TopicSettings, broker: &BrokerSettings) -> Result<TopicPolicy> {
    check_remote_allowed(topic, broker, REMOTE_STORAGE_ENABLE.key)?;
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
    let defaults = &broker.topic_defaults;
    let cleanup_changed = current.cleanup(defaults) != proposed.cleanup(defaults);
    let remote_changed = current.requests_remote() != proposed.requests_remote();
    let key = if cleanup_changed && !remote_changed { CLEANUP_POLICY.key } else { REMOTE_STORAGE_ENABLE.key };
    check_remote_allowed(proposed, broker, key)?;
    TopicPolicy::resolve(proposed, broker)
}

fn check_remote_allowed(topic: &TopicSettings, broker: &BrokerSettings, key: &str) -> Result<()> {
    if !topic.requests_remote() {
        return Ok(());
    }
    if !broker.remote_storage_enabled {
        return Err(Error::config(
            REMOTE_STORAGE_ENABLE.key,
            format!("`true` is not allowed while {} is false on this broker", REMOTE_LOG_STORAGE_ENABLE.key),
        ));
    }
    let cleanup = topic.cleanup(&broker.topic_defaults);
    if cleanup.compact {
        return Err(Error::config(
            key,
            format!(
                "compacted topics are not supported with remote storage: {CLEANUP_POLICY}={cleanup} with \
                 {REMOTE_STORAGE_ENABLE}=true; allowed: {CLEANUP_POLICY}=delete, or {REMOTE_STORAGE_ENABLE}=false",
                CLEANUP_POLICY = CLEANUP_POLICY.key,
                REMOTE_STORAGE_ENABLE = REMOTE_STORAGE_ENABLE.key,
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_support::{assert_config_error, enabled_broker, topic};
    use crate::settings::{Lag, Limit, SizeScope};
    use rsm_core::config::props;

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
    fn topic_resolution() {
        struct Case {
            name: &'static str,
            broker: &'static [(&'static str, &'static str)],
            topic: &'static [(&'static str, &'static str)],
            remote_storage: bool,
            retention: RetentionLimits,
            local: RetentionLimits,
            remote: RemoteRetention,
            lag: CopyLag,
        }
        use Limit::{AtMost, Unlimited};
        const WEEK: u64 = 604_800_000;
        let tiered: &[(&str, &str)] =
            &[("remote.log.storage.enable", "true"), ("remote.log.storage.manager.class.name", "fs")];
        let cases = [
            Case {
                name: "all defaults, tiered",
                broker: &[],
                topic: &[("remote.storage.enable", "true")],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag::IMMEDIATE,
            },
            Case {
                name: "not tiered by default",
                broker: &[],
                topic: &[],
                remote_storage: false,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag::IMMEDIATE,
            },
            Case {
                name: "topic overrides broker defaults",
                broker: &[("log.retention.ms", "1000"), ("log.remote.copy.lag.ms", "-1")],
                topic: &[("remote.storage.enable", "true"), ("retention.ms", "5000"), ("remote.copy.lag.ms", "0")],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(5000), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(5000), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(5000), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag::IMMEDIATE,
            },
            Case {
                name: "broker lag -1 inherited resolves to the topic's local retention",
                broker: &[("log.remote.copy.lag.ms", "-1"), ("log.remote.copy.lag.bytes", "-1")],
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("local.retention.ms", "3600000"),
                    ("local.retention.bytes", "4096"),
                ],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(3_600_000), bytes: AtMost(4096) },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag { time_ms: Lag::After(3_600_000), bytes: Lag::After(4096) },
            },
            Case {
                name: "broker lag above the topic's local retention is capped, not an error",
                broker: &[("log.remote.copy.lag.ms", "86400000")],
                topic: &[("remote.storage.enable", "true"), ("local.retention.ms", "3600000")],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(3_600_000), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag { time_ms: Lag::After(3_600_000), bytes: Lag::Immediate },
            },
            Case {
                name: "seed remote retention keys override retention.* for the remote tier",
                broker: &[],
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("retention.ms", "86400000"),
                    ("retention.bytes", "1000"),
                    ("remote.log.retention.minutes", "43200"),
                    ("remote.log.retention.bytes", "5000"),
                ],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(86_400_000), bytes: AtMost(1000) },
                local: RetentionLimits { time_ms: AtMost(86_400_000), bytes: AtMost(1000) },
                remote: RemoteRetention {
                    time_ms: AtMost(2_592_000_000),
                    bytes: AtMost(5000),
                    size_scope: SizeScope::RemoteOnly,
                },
                lag: CopyLag::IMMEDIATE,
            },
            Case {
                name: "local retention equal to the total (000 corner case) is valid",
                broker: &[],
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("retention.ms", "604800000"),
                    ("local.retention.ms", "604800000"),
                    ("remote.copy.lag.ms", "-1"),
                ],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag { time_ms: Lag::After(WEEK), bytes: Lag::Immediate },
            },
            Case {
                name: "lag -1 over a local retention of 0 is immediate",
                broker: &[],
                topic: &[("remote.storage.enable", "true"), ("local.retention.ms", "0"), ("remote.copy.lag.ms", "-1")],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(0), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag { time_ms: Lag::Immediate, bytes: Lag::Immediate },
            },
            Case {
                name: "positive lag with unlimited local retention is kept",
                broker: &[],
                topic: &[("remote.storage.enable", "true"), ("remote.copy.lag.bytes", "1073741824")],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag { time_ms: Lag::Immediate, bytes: Lag::After(1 << 30) },
            },
            Case {
                name: "lag equal to the local retention is allowed",
                broker: &[],
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("local.retention.ms", "1000"),
                    ("remote.copy.lag.ms", "1000"),
                ],
                remote_storage: true,
                retention: RetentionLimits { time_ms: AtMost(WEEK), bytes: Unlimited },
                local: RetentionLimits { time_ms: AtMost(1000), bytes: Unlimited },
                remote: RemoteRetention { time_ms: AtMost(WEEK), bytes: Unlimited, size_scope: SizeScope::WholeLog },
                lag: CopyLag { time_ms: Lag::After(1000), bytes: Lag::Immediate },
            },
        ];
        for c in cases {
            let mut b: Vec<(&str, &str)> = tiered.to_vec();
            b.extend_from_slice(c.broker);
            let broker = BrokerSettings::from_props(&props(b)).unwrap_or_else(|e| panic!("{}: broker: {e}", c.name));
            let p = TopicPolicy::resolve(&topic(c.topic), &broker).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            assert_eq!(p.remote_storage, c.remote_storage, "{}: remote_storage", c.name);
            assert_eq!(p.retention, c.retention, "{}: retention", c.name);
            assert_eq!(p.local_retention, c.local, "{}: local retention", c.name);
            assert_eq!(p.remote_retention, c.remote, "{}: remote retention", c.name);
            assert_eq!(p.copy_lag, c.lag, "{}: copy lag", c.name);
            assert!(p.warnings.is_empty(), "{}: warnings {:?}", c.name, p.warnings);
        }
    }

    #[test]
    fn topic_resolution_errors() {
        use crate::settings::test_support::TopicError as Case;
        let cases = [
            Case {
                name: "positive time lag above the local retention",
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("local.retention.ms", "1000"),
                    ("remote.copy.lag.ms", "1001"),
                ],
                key: "remote.copy.lag.ms",
                message: "1001 exceeds the effective local retention 1000 (local.retention.ms=1000); allowed: -1 to 1000",
            },
            Case {
                name: "positive size lag above the local retention taken from retention.bytes",
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("retention.bytes", "100"),
                    ("remote.copy.lag.bytes", "200"),
                ],
                key: "remote.copy.lag.bytes",
                message: "200 exceeds the effective local retention 100 (log.local.retention.bytes=-2, which takes retention.bytes=100)",
            },
            Case {
                name: "local retention above the total",
                topic: &[("remote.storage.enable", "true"), ("retention.ms", "1000"), ("local.retention.ms", "2000")],
                key: "local.retention.ms",
                message: "2000 ms exceeds the remote retention retention.ms=1000; allowed: -2, or 0 to 1000",
            },
            Case {
                name: "unlimited local retention with a limited total",
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("retention.bytes", "1000"),
                    ("local.retention.bytes", "-1"),
                ],
                key: "local.retention.bytes",
                message: "-1 (unlimited) is not allowed while the remote retention retention.bytes=1000 is limited",
            },
            Case {
                name: "local retention above the seed's remote retention",
                topic: &[
                    ("remote.storage.enable", "true"),
                    ("local.retention.ms", "7200000"),
                    ("remote.log.retention.minutes", "60"),
                ],
                key: "local.retention.ms",
                message: "7200000 ms exceeds the remote retention remote.log.retention.minutes=60 (3600000 ms)",
            },
            Case {
                name: "seed remote retention below the local retention taken from retention.ms",
                topic: &[("remote.storage.enable", "true"), ("remote.log.retention.minutes", "60")],
                key: "remote.log.retention.minutes",
                message: "60 is below the local retention (log.local.retention.ms=-2, which takes log.retention.ms=604800000); allowed: at least 10080 minutes",
            },
            Case {
                name: "seed remote bytes with unlimited local retention",
                topic: &[("remote.storage.enable", "true"), ("remote.log.retention.bytes", "10")],
                key: "remote.log.retention.bytes",
                message: "10 is below the local retention (log.local.retention.bytes=-2, which takes log.retention.bytes=-1); allowed: unset remote.log.retention.bytes, or set a local retention of at most 10",
            },
        ];
        let broker = enabled_broker();
        for c in cases {
            assert_config_error(c.name, TopicPolicy::resolve(&topic(c.topic), &broker), c.key, c.message);
        }
    }

    #[test]
    fn cross_checks_apply_only_to_tiered_topics() {
        // Kafka checks local against total retention only when the topic is tiered.
        let t = topic(&[("retention.ms", "1000"), ("local.retention.ms", "2000"), ("remote.copy.lag.ms", "5000")]);
        let p = TopicPolicy::resolve(&t, &enabled_broker()).expect("not tiered: no cross-checks");
        assert!(!p.remote_storage);
        assert_eq!(p.copy_lag.time_ms, Lag::After(2000), "capped at local retention");
    }
}
