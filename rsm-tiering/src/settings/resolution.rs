//! Cross-key resolution: a topic's settings against the broker's into the [`TopicPolicy`] every other
//! rule takes. Topic values override the broker's `log.*` defaults; -2 local retentions take the total
//! retention; -1 lags take the effective local retention; the seed's remote retention keys override
//! `retention.*` for the remote tier; and on a tiered topic, values that contradict each other are
//! errors naming the key the operator set.

use super::broker::{BrokerSettings, TopicDefaults};
use super::keys::*;
use super::parse::MS_PER_MINUTE;
use super::topic::{CleanupPolicy, TopicSettings};
use rsm_core::error::{Error, Result};

/// A retention limit: unlimited (a setting of -1) or at most some number of ms or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit.
    Unlimited,
    /// At most this many ms or bytes.
    AtMost(u64),
}

impl Limit {
    /// The limit a resolved setting stands for: any negative value is unlimited.
    pub fn from_setting(value: i64) -> Limit {
        if value < 0 { Limit::Unlimited } else { Limit::AtMost(value as u64) }
    }
}

/// A time and a size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionLimits {
    /// The time limit in ms, measured from a segment's largest record timestamp.
    pub time_ms: Limit,
    /// The size limit in bytes.
    pub bytes: Limit,
}

/// What a remote size limit is measured over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeScope {
    /// The bytes of the remote segments only: the seed's `remote.log.retention.bytes` (SR-11).
    RemoteOnly,
    /// The whole log: remote bytes plus the local bytes not yet copied, as Kafka as shipped measures
    /// `retention.bytes` on a tiered topic.
    WholeLog,
}

/// How long segments stay in remote storage (SR-10, SR-11, SR-17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRetention {
    /// The time limit in ms.
    pub time_ms: Limit,
    /// The size limit in bytes.
    pub bytes: Limit,
    /// What the size limit is measured over.
    pub size_scope: SizeScope,
}

/// One dimension of the delayed-upload lag, resolved (KIP-1241).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lag {
    /// A lag of 0: upload as soon as the segment is eligible, whatever the other dimension says.
    Immediate,
    /// A positive lag: this check passes once the age (ms) or the bytes after the segment reach it.
    After(u64),
    /// -1 over an unlimited local retention: this check never passes ("no delay check").
    Unlimited,
}

/// The resolved delayed-upload lags of a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyLag {
    /// `remote.copy.lag.ms`, resolved.
    pub time_ms: Lag,
    /// `remote.copy.lag.bytes`, resolved.
    pub bytes: Lag,
}

impl CopyLag {
    /// No delay at all (the default: both lags 0).
    pub const IMMEDIATE: CopyLag = CopyLag { time_ms: Lag::Immediate, bytes: Lag::Immediate };
}

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
    /// [`validate_create`](super::validate_create) and [`validate_alter`](super::validate_alter), which
    /// reject those instead.
    pub fn resolve(topic: &TopicSettings, broker: &BrokerSettings) -> Result<TopicPolicy> {
        let requested = topic.requests_remote();
        let cleanup_policy = topic.cleanup(broker);
        let v = resolve_values(topic, &broker.topic_defaults, requested, false)?;
        let mut warnings = Vec::new();
        if requested && !broker.remote_storage_enabled {
            warnings.push(format!(
                "{REMOTE_STORAGE_ENABLE}=true but {REMOTE_LOG_STORAGE_ENABLE} is false on this broker; \
                 remote storage is off for this topic"
            ));
        }
        if requested && cleanup_policy.compact {
            warnings.push(format!(
                "compacted topics are not supported with remote storage ({CLEANUP_POLICY}={cleanup_policy}); \
                 remote storage is off for this topic"
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

/// A resolved value and where it came from, so an error can name the key the operator set.
#[derive(Debug, Clone, Copy)]
struct Sourced {
    /// In ms or bytes.
    value: i64,
    /// As written (minutes for `remote.log.retention.minutes`).
    raw: i64,
    key: &'static str,
    from_topic: bool,
}

fn pick(topic: Option<i64>, topic_key: &'static str, default: i64, broker_key: &'static str) -> Sourced {
    match topic {
        Some(v) => Sourced { value: v, raw: v, key: topic_key, from_topic: true },
        None => Sourced { value: default, raw: default, key: broker_key, from_topic: false },
    }
}

/// The limits and lags of a topic, resolved.
pub(super) struct Values {
    retention: RetentionLimits,
    local_retention: RetentionLimits,
    remote_retention: RemoteRetention,
    copy_lag: CopyLag,
}

/// The value resolution. `tiered`: apply the cross-key checks a tiered topic needs. `strict`: a lag
/// inherited from the broker above the local retention is an error too (broker validation), instead of
/// being capped at the local retention.
pub(super) fn resolve_values(topic: &TopicSettings, d: &TopicDefaults, tiered: bool, strict: bool) -> Result<Values> {
    let ret_ms = pick(topic.retention_ms, RETENTION_MS, d.retention_ms, LOG_RETENTION_MS);
    let ret_bytes = pick(topic.retention_bytes, RETENTION_BYTES, d.retention_bytes, LOG_RETENTION_BYTES);
    let local_ms = pick(topic.local_retention_ms, LOCAL_RETENTION_MS, d.local_retention_ms, LOG_LOCAL_RETENTION_MS);
    let local_bytes =
        pick(topic.local_retention_bytes, LOCAL_RETENTION_BYTES, d.local_retention_bytes, LOG_LOCAL_RETENTION_BYTES);
    let remote_ms = match topic.remote_log_retention_minutes {
        Some(m) => Sourced { value: m * MS_PER_MINUTE, raw: m, key: REMOTE_LOG_RETENTION_MINUTES, from_topic: true },
        None => ret_ms,
    };
    let (remote_bytes, size_scope) = match topic.remote_log_retention_bytes {
        Some(b) => {
            (Sourced { value: b, raw: b, key: REMOTE_LOG_RETENTION_BYTES, from_topic: true }, SizeScope::RemoteOnly)
        }
        None => (ret_bytes, SizeScope::WholeLog),
    };
    let eff_local_ms = if local_ms.value == -2 { ret_ms.value } else { local_ms.value };
    let eff_local_bytes = if local_bytes.value == -2 { ret_bytes.value } else { local_bytes.value };
    if tiered {
        check_local_within_remote(local_ms, ret_ms, remote_ms, "ms")?;
        check_local_within_remote(local_bytes, ret_bytes, remote_bytes, "bytes")?;
    }
    let lag_ms = pick(topic.remote_copy_lag_ms, REMOTE_COPY_LAG_MS, d.copy_lag_ms, LOG_REMOTE_COPY_LAG_MS);
    let lag_bytes =
        pick(topic.remote_copy_lag_bytes, REMOTE_COPY_LAG_BYTES, d.copy_lag_bytes, LOG_REMOTE_COPY_LAG_BYTES);
    let copy_lag = CopyLag {
        time_ms: resolve_lag(lag_ms, eff_local_ms, &describe_local(local_ms, ret_ms), tiered, strict)?,
        bytes: resolve_lag(lag_bytes, eff_local_bytes, &describe_local(local_bytes, ret_bytes), tiered, strict)?,
    };
    Ok(Values {
        retention: RetentionLimits {
            time_ms: Limit::from_setting(ret_ms.value),
            bytes: Limit::from_setting(ret_bytes.value),
        },
        local_retention: RetentionLimits {
            time_ms: Limit::from_setting(eff_local_ms),
            bytes: Limit::from_setting(eff_local_bytes),
        },
        remote_retention: RemoteRetention {
            time_ms: Limit::from_setting(remote_ms.value),
            bytes: Limit::from_setting(remote_bytes.value),
            size_scope,
        },
        copy_lag,
    })
}

fn describe_local(local: Sourced, total: Sourced) -> String {
    if local.value == -2 {
        format!("{}=-2, which takes {}={}", local.key, total.key, total.value)
    } else {
        format!("{}={}", local.key, local.value)
    }
}

fn describe_remote(remote: Sourced) -> String {
    if remote.raw == remote.value {
        format!("{}={}", remote.key, remote.raw)
    } else {
        format!("{}={} ({} ms)", remote.key, remote.raw, remote.value)
    }
}

/// The local retention of a tiered topic must not be unlimited, nor exceed the remote retention, when the
/// remote retention is limited (Kafka's rule against `retention.*`, applied to the remote retention).
/// The error names the local key when the topic or broker set it, and the remote key when the local
/// retention is -2 (then only the seed's remote key can disagree with the retention it takes).
fn check_local_within_remote(local: Sourced, total: Sourced, remote: Sourced, unit: &str) -> Result<()> {
    if remote.value < 0 {
        return Ok(());
    }
    let limit = remote.value;
    let remote_desc = describe_remote(remote);
    if local.value != -2 {
        if local.value == -1 {
            return Err(Error::config(
                local.key,
                format!(
                    "-1 (unlimited) is not allowed while the remote retention {remote_desc} is limited; \
                     allowed: -2, or 0 to {limit}"
                ),
            ));
        }
        if local.value > limit {
            return Err(Error::config(
                local.key,
                format!(
                    "{} {unit} exceeds the remote retention {remote_desc}; allowed: -2, or 0 to {limit}",
                    local.value
                ),
            ));
        }
        return Ok(());
    }
    let eff = total.value;
    if eff >= 0 && eff <= limit {
        return Ok(());
    }
    let local_desc = describe_local(local, total);
    let allowed = if eff < 0 {
        format!("unset {}, or set a local retention of at most {limit}", remote.key)
    } else if remote.key == REMOTE_LOG_RETENTION_MINUTES {
        format!("at least {} minutes", (eff + MS_PER_MINUTE - 1) / MS_PER_MINUTE)
    } else {
        format!("at least {eff}")
    };
    Err(Error::config(
        remote.key,
        format!("{} is below the local retention ({local_desc}); allowed: {allowed}", remote.raw),
    ))
}

/// Resolves one delayed-upload lag (KIP-1241): 0 is immediate; -1 is the effective local retention (an
/// unlimited one means this check never passes); a positive lag above a limited local retention is an
/// error when the topic set it (or `strict`), and is capped at the local retention when inherited from
/// the broker.
fn resolve_lag(lag: Sourced, eff_local: i64, local_desc: &str, tiered: bool, strict: bool) -> Result<Lag> {
    let at = |v: i64| {
        if v == 0 { Lag::Immediate } else { Lag::After(v as u64) }
    };
    Ok(match lag.value {
        0 => Lag::Immediate,
        -1 if eff_local < 0 => Lag::Unlimited,
        -1 => at(eff_local),
        n if eff_local >= 0 && n > eff_local => {
            if tiered && (lag.from_topic || strict) {
                return Err(Error::config(
                    lag.key,
                    format!(
                        "{n} exceeds the effective local retention {eff_local} ({local_desc}); allowed: -1 to {eff_local}"
                    ),
                ));
            }
            at(eff_local)
        }
        n => Lag::After(n as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_support::{assert_config_error, enabled_broker, topic};
    use rsm_core::config::props;

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
