//! The value resolution under [`TopicPolicy`](super::TopicPolicy): a topic's values over the broker's `log.*`
//! defaults ([`TopicDefaults`]); -2 local retentions take the total retention; -1 lags take the effective
//! local retention; the seed's remote retention keys override `retention.*` for the remote tier; and on a
//! tiered topic, values that contradict each other are errors naming the key the operator set. It needs
//! only the topic's settings and the defaults, so the broker's settings can check their defaults with it.

use super::catalogue::{
    LOCAL_RETENTION_BYTES, LOCAL_RETENTION_MS, LOG_LOCAL_RETENTION_BYTES, LOG_LOCAL_RETENTION_MS,
    LOG_REMOTE_COPY_LAG_BYTES, LOG_REMOTE_COPY_LAG_MS, LOG_RETENTION_BYTES, LOG_RETENTION_MS, REMOTE_COPY_LAG_BYTES,
    REMOTE_COPY_LAG_MS, REMOTE_LOG_RETENTION_BYTES, REMOTE_LOG_RETENTION_MINUTES, RETENTION_BYTES, RETENTION_MS,
};
use super::parse::MS_PER_MINUTE;
use super::topic::{TopicDefaults, TopicSettings};
use rsm_core::config::Setting;
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

fn pick(topic: Option<i64>, topic_setting: &Setting, default: i64, broker_setting: &Setting) -> Sourced {
    match topic {
        Some(v) => Sourced { value: v, raw: v, key: topic_setting.key, from_topic: true },
        None => Sourced { value: default, raw: default, key: broker_setting.key, from_topic: false },
    }
}

/// The limits and lags of a topic, resolved.
pub(super) struct Values {
    pub(super) retention: RetentionLimits,
    pub(super) local_retention: RetentionLimits,
    pub(super) remote_retention: RemoteRetention,
    pub(super) copy_lag: CopyLag,
}

/// The value resolution. `tiered`: apply the cross-key checks a tiered topic needs. `strict`: a lag
/// inherited from the broker above the local retention is an error too (broker validation), instead of
/// being capped at the local retention.
pub(super) fn resolve_values(topic: &TopicSettings, d: &TopicDefaults, tiered: bool, strict: bool) -> Result<Values> {
    let ret_ms = pick(topic.retention_ms, &RETENTION_MS, d.retention_ms, &LOG_RETENTION_MS);
    let ret_bytes = pick(topic.retention_bytes, &RETENTION_BYTES, d.retention_bytes, &LOG_RETENTION_BYTES);
    let local_ms = pick(topic.local_retention_ms, &LOCAL_RETENTION_MS, d.local_retention_ms, &LOG_LOCAL_RETENTION_MS);
    let local_bytes =
        pick(topic.local_retention_bytes, &LOCAL_RETENTION_BYTES, d.local_retention_bytes, &LOG_LOCAL_RETENTION_BYTES);
    let remote_ms = match topic.remote_log_retention_minutes {
        Some(m) => {
            Sourced { value: m * MS_PER_MINUTE, raw: m, key: REMOTE_LOG_RETENTION_MINUTES.key, from_topic: true }
        }
        None => ret_ms,
    };
    let (remote_bytes, size_scope) = match topic.remote_log_retention_bytes {
        Some(b) => {
            (Sourced { value: b, raw: b, key: REMOTE_LOG_RETENTION_BYTES.key, from_topic: true }, SizeScope::RemoteOnly)
        }
        None => (ret_bytes, SizeScope::WholeLog),
    };
    let eff_local_ms = if local_ms.value == -2 { ret_ms.value } else { local_ms.value };
    let eff_local_bytes = if local_bytes.value == -2 { ret_bytes.value } else { local_bytes.value };
    if tiered {
        check_local_within_remote(local_ms, ret_ms, remote_ms, "ms")?;
        check_local_within_remote(local_bytes, ret_bytes, remote_bytes, "bytes")?;
    }
    let lag_ms = pick(topic.remote_copy_lag_ms, &REMOTE_COPY_LAG_MS, d.copy_lag_ms, &LOG_REMOTE_COPY_LAG_MS);
    let lag_bytes =
        pick(topic.remote_copy_lag_bytes, &REMOTE_COPY_LAG_BYTES, d.copy_lag_bytes, &LOG_REMOTE_COPY_LAG_BYTES);
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
    } else if remote.key == REMOTE_LOG_RETENTION_MINUTES.key {
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
