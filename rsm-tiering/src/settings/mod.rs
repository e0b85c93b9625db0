//! Tiering settings (SR-1 … SR-12 and delayed upload, KIP-1241): typed, parsed from string maps,
//! validated with errors that name the key, the value and the allowed range, and resolved per topic
//! (topic values override broker defaults) into a [`TopicPolicy`] the other rules take.
//!
//! Names follow the seeds; where Kafka as shipped uses another name it is accepted as an alias
//! (`remote.log.storage.system.enable`, the `rsm.config.` / `rlmm.config.` prefixes). `docs/settings.md`
//! lists every key.

use rsm_core::config::ConfigReader;
use rsm_core::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;

/// The setting names.
pub mod keys {
    /// Broker: whether tiered storage is on (SR-1). The seed's name.
    pub const REMOTE_LOG_STORAGE_ENABLE: &str = "remote.log.storage.enable";
    /// Broker: the shipped name of [`REMOTE_LOG_STORAGE_ENABLE`], accepted as an alias.
    pub const REMOTE_LOG_STORAGE_SYSTEM_ENABLE: &str = "remote.log.storage.system.enable";
    /// Broker: the storage manager class, or for a Rust host the backend name (SR-2).
    pub const STORAGE_MANAGER_CLASS_NAME: &str = "remote.log.storage.manager.class.name";
    /// Broker: where the storage manager class is loaded from (shipped; optional).
    pub const STORAGE_MANAGER_CLASS_PATH: &str = "remote.log.storage.manager.class.path";
    /// Broker: the shipped prefix whose keys are passed to the storage manager (default `rsm.config.`).
    pub const STORAGE_MANAGER_IMPL_PREFIX: &str = "remote.log.storage.manager.impl.prefix";
    /// Broker: the metadata manager class (SR-3; optional).
    pub const METADATA_MANAGER_CLASS_NAME: &str = "remote.log.metadata.manager.class.name";
    /// Broker: where the metadata manager class is loaded from (shipped; optional).
    pub const METADATA_MANAGER_CLASS_PATH: &str = "remote.log.metadata.manager.class.path";
    /// Broker: the shipped prefix whose keys are passed to the metadata manager (default `rlmm.config.`).
    pub const METADATA_MANAGER_IMPL_PREFIX: &str = "remote.log.metadata.manager.impl.prefix";
    /// Broker: the largest custom metadata a storage manager may return for a segment (shipped).
    pub const CUSTOM_METADATA_MAX_BYTES: &str = "remote.log.metadata.custom.metadata.max.bytes";
    /// Broker: the seed's pass-through namespace for the storage manager (SR-4).
    pub const STORAGE_NAMESPACE: &str = "remote.log.storage.";
    /// Broker: the seed's pass-through namespace for the metadata manager (SR-5).
    pub const METADATA_NAMESPACE: &str = "remote.log.metadata.";
    /// Broker: remote log manager thread pool size (SR-6).
    pub const THREAD_POOL_SIZE: &str = "remote.log.manager.thread.pool.size";
    /// Broker: interval of the remote log manager's tasks, in ms (SR-7).
    pub const TASK_INTERVAL_MS: &str = "remote.log.manager.task.interval.ms";
    /// Broker: remote log reader threads (SR-8).
    pub const READER_THREADS: &str = "remote.log.reader.threads";
    /// Broker: remote log reader task queue capacity (SR-9).
    pub const READER_MAX_PENDING_TASKS: &str = "remote.log.reader.max.pending.tasks";
    /// Broker default of [`RETENTION_MS`].
    pub const LOG_RETENTION_MS: &str = "log.retention.ms";
    /// Broker default of [`RETENTION_MS`] in minutes (used when `log.retention.ms` is not set).
    pub const LOG_RETENTION_MINUTES: &str = "log.retention.minutes";
    /// Broker default of [`RETENTION_MS`] in hours (used when neither of the above is set).
    pub const LOG_RETENTION_HOURS: &str = "log.retention.hours";
    /// Broker default of [`RETENTION_BYTES`].
    pub const LOG_RETENTION_BYTES: &str = "log.retention.bytes";
    /// Broker default of [`LOCAL_RETENTION_MS`].
    pub const LOG_LOCAL_RETENTION_MS: &str = "log.local.retention.ms";
    /// Broker default of [`LOCAL_RETENTION_BYTES`].
    pub const LOG_LOCAL_RETENTION_BYTES: &str = "log.local.retention.bytes";
    /// Broker default of [`REMOTE_COPY_LAG_MS`] (delayed upload).
    pub const LOG_REMOTE_COPY_LAG_MS: &str = "log.remote.copy.lag.ms";
    /// Broker default of [`REMOTE_COPY_LAG_BYTES`] (delayed upload).
    pub const LOG_REMOTE_COPY_LAG_BYTES: &str = "log.remote.copy.lag.bytes";
    /// Broker default of [`CLEANUP_POLICY`].
    pub const LOG_CLEANUP_POLICY: &str = "log.cleanup.policy";
    /// Topic: whether the topic is tiered.
    pub const REMOTE_STORAGE_ENABLE: &str = "remote.storage.enable";
    /// Topic: `delete`, `compact` or both (SR-12).
    pub const CLEANUP_POLICY: &str = "cleanup.policy";
    /// Topic: total retention time in ms (-1 unlimited).
    pub const RETENTION_MS: &str = "retention.ms";
    /// Topic: total retention size in bytes (-1 unlimited).
    pub const RETENTION_BYTES: &str = "retention.bytes";
    /// Topic: local retention time in ms (-2 use `retention.ms`, -1 unlimited).
    pub const LOCAL_RETENTION_MS: &str = "local.retention.ms";
    /// Topic: local retention size in bytes (-2 use `retention.bytes`, -1 unlimited).
    pub const LOCAL_RETENTION_BYTES: &str = "local.retention.bytes";
    /// Topic: remote retention time in minutes (SR-10, the seed's name).
    pub const REMOTE_LOG_RETENTION_MINUTES: &str = "remote.log.retention.minutes";
    /// Topic: remote retention size in bytes (SR-11, the seed's name).
    pub const REMOTE_LOG_RETENTION_BYTES: &str = "remote.log.retention.bytes";
    /// Topic: delayed upload by time (KIP-1241).
    pub const REMOTE_COPY_LAG_MS: &str = "remote.copy.lag.ms";
    /// Topic: delayed upload by size (KIP-1241).
    pub const REMOTE_COPY_LAG_BYTES: &str = "remote.copy.lag.bytes";
}

use keys::*;

/// The metadata manager used when `remote.log.metadata.manager.class.name` is not set (SR-3): Kafka's
/// built-in manager backed by an internal topic.
pub const DEFAULT_METADATA_MANAGER: &str =
    "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager";
/// Default of the shipped storage manager prefix.
pub const DEFAULT_STORAGE_MANAGER_PREFIX: &str = "rsm.config.";
/// Default of the shipped metadata manager prefix.
pub const DEFAULT_METADATA_MANAGER_PREFIX: &str = "rlmm.config.";
/// Default `remote.log.manager.thread.pool.size` (shipped; the seed leaves it open).
pub const DEFAULT_THREAD_POOL_SIZE: u32 = 2;
/// Default `remote.log.manager.task.interval.ms` (shipped; the seed leaves it open).
pub const DEFAULT_TASK_INTERVAL_MS: u64 = 30_000;
/// Default `remote.log.reader.threads` (shipped; the seed leaves it open).
pub const DEFAULT_READER_THREADS: u32 = 10;
/// Default `remote.log.reader.max.pending.tasks` (shipped; the seed leaves it open).
pub const DEFAULT_READER_MAX_PENDING_TASKS: u32 = 100;
/// Default `remote.log.metadata.custom.metadata.max.bytes` (shipped).
pub const DEFAULT_CUSTOM_METADATA_MAX_BYTES: u32 = 128;
/// Default `log.retention.ms`: Kafka's 168 hours.
pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;

const MAX: i64 = i64::MAX;
const INT_MAX: i64 = i32::MAX as i64;
const MS_PER_MINUTE: i64 = 60_000;
const MS_PER_HOUR: i64 = 3_600_000;

/// Keys inside the seed's `remote.log.storage.` namespace that are broker settings, not passed through.
const STORAGE_RESERVED: &[&str] = &[
    REMOTE_LOG_STORAGE_ENABLE,
    REMOTE_LOG_STORAGE_SYSTEM_ENABLE,
    STORAGE_MANAGER_CLASS_NAME,
    STORAGE_MANAGER_CLASS_PATH,
    STORAGE_MANAGER_IMPL_PREFIX,
];
/// Keys inside the seed's `remote.log.metadata.` namespace that are broker settings, not passed through.
const METADATA_RESERVED: &[&str] = &[
    METADATA_MANAGER_CLASS_NAME,
    METADATA_MANAGER_CLASS_PATH,
    METADATA_MANAGER_IMPL_PREFIX,
    CUSTOM_METADATA_MAX_BYTES,
];

// ---------------------------------------------------------------------------------------------------
// Value types
// ---------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------
// Parsing helpers
// ---------------------------------------------------------------------------------------------------

/// `key` as an integer in `[lo, hi]`, or `None` when absent. `meaning` is appended to the allowed range
/// in messages (for special values such as -1).
pub(crate) fn opt_int(r: &mut ConfigReader<'_>, key: &str, lo: i64, hi: i64, meaning: &str) -> Result<Option<i64>> {
    let Some(raw) = r.string(key) else {
        return Ok(None);
    };
    let v: i64 =
        raw.parse().map_err(|_| Error::config(key, format!("`{raw}` is not an integer in [{lo}, {hi}]{meaning}")))?;
    if v < lo || v > hi {
        return Err(Error::config(key, format!("{v} is out of range [{lo}, {hi}]{meaning}")));
    }
    Ok(Some(v))
}

fn opt_bool(r: &mut ConfigReader<'_>, key: &str) -> Result<Option<bool>> {
    match r.string(key) {
        None => Ok(None),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(Error::config(key, format!("`{v}` is not true or false"))),
    }
}

/// A boolean known under the seed's name and Kafka's shipped name: either may be set; both set to
/// different values is an error naming both.
fn aliased_bool(r: &mut ConfigReader<'_>, seed: &str, shipped: &str, default: bool) -> Result<bool> {
    let a = opt_bool(r, seed)?;
    let b = opt_bool(r, shipped)?;
    match (a, b) {
        (Some(x), Some(y)) if x != y => Err(Error::config(
            seed,
            format!("`{x}` contradicts `{shipped}` = `{y}` (the shipped name of the same setting); set one of them"),
        )),
        (Some(x), _) => Ok(x),
        (None, Some(y)) => Ok(y),
        (None, None) => Ok(default),
    }
}

fn opt_cleanup(r: &mut ConfigReader<'_>, key: &str) -> Result<Option<CleanupPolicy>> {
    r.string(key).map(|raw| CleanupPolicy::parse(key, raw)).transpose()
}

/// The keys under `prefix`, prefix removed, values untouched, leaving out the broker settings that live in
/// the same namespace.
fn pass_through(r: &mut ConfigReader<'_>, prefix: &str, reserved: &[&str]) -> BTreeMap<String, String> {
    let mut m = r.with_prefix(prefix);
    m.retain(|k, _| !reserved.iter().any(|full| full.strip_prefix(prefix) == Some(k.as_str())));
    m
}

/// Joins the seed's namespace and the shipped prefix into one map; the same setting under both with
/// different values is an error.
fn merge_namespaces(
    seed: BTreeMap<String, String>,
    seed_prefix: &str,
    shipped: BTreeMap<String, String>,
    shipped_prefix: &str,
) -> Result<BTreeMap<String, String>> {
    let mut out = seed;
    for (k, v) in shipped {
        match out.get(&k) {
            Some(existing) if existing != &v => {
                return Err(Error::config(
                    format!("{shipped_prefix}{k}"),
                    format!("`{v}` contradicts `{seed_prefix}{k}` = `{existing}`; set one of them"),
                ));
            }
            _ => {
                out.insert(k, v);
            }
        }
    }
    Ok(out)
}

fn prefix_setting(r: &mut ConfigReader<'_>, key: &str, default: &str) -> String {
    r.string(key).unwrap_or(default).to_string()
}

// ---------------------------------------------------------------------------------------------------
// Broker settings
// ---------------------------------------------------------------------------------------------------

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
    fn default() -> Self {
        TopicDefaults {
            retention_ms: DEFAULT_RETENTION_MS,
            retention_bytes: -1,
            local_retention_ms: -2,
            local_retention_bytes: -2,
            copy_lag_ms: 0,
            copy_lag_bytes: 0,
            cleanup_policy: CleanupPolicy::DELETE,
        }
    }
}

impl TopicDefaults {
    /// Reads the `log.*` defaults. `log.retention.ms` wins over `.minutes`, which wins over `.hours`.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let d = TopicDefaults::default();
        let ms = opt_int(r, LOG_RETENTION_MS, -1, MAX, " (-1: unlimited)")?;
        let minutes = opt_int(r, LOG_RETENTION_MINUTES, -1, MAX / MS_PER_MINUTE, " (-1: unlimited)")?;
        let hours = opt_int(r, LOG_RETENTION_HOURS, -1, MAX / MS_PER_HOUR, " (-1: unlimited)")?;
        let scaled = |v: i64, unit: i64| if v < 0 { -1 } else { v * unit };
        let retention_ms = ms
            .or(minutes.map(|m| scaled(m, MS_PER_MINUTE)))
            .or(hours.map(|h| scaled(h, MS_PER_HOUR)))
            .unwrap_or(d.retention_ms);
        Ok(TopicDefaults {
            retention_ms,
            retention_bytes: opt_int(r, LOG_RETENTION_BYTES, -1, MAX, " (-1: unlimited)")?.unwrap_or(d.retention_bytes),
            local_retention_ms: opt_int(r, LOG_LOCAL_RETENTION_MS, -2, MAX, LOCAL_MS_MEANING)?
                .unwrap_or(d.local_retention_ms),
            local_retention_bytes: opt_int(r, LOG_LOCAL_RETENTION_BYTES, -2, MAX, LOCAL_BYTES_MEANING)?
                .unwrap_or(d.local_retention_bytes),
            copy_lag_ms: opt_int(r, LOG_REMOTE_COPY_LAG_MS, -1, MAX, LAG_MEANING)?.unwrap_or(d.copy_lag_ms),
            copy_lag_bytes: opt_int(r, LOG_REMOTE_COPY_LAG_BYTES, -1, MAX, LAG_MEANING)?.unwrap_or(d.copy_lag_bytes),
            cleanup_policy: opt_cleanup(r, LOG_CLEANUP_POLICY)?.unwrap_or(d.cleanup_policy),
        })
    }
}

const LOCAL_MS_MEANING: &str = " (-2: use retention.ms, -1: unlimited)";
const LOCAL_BYTES_MEANING: &str = " (-2: use retention.bytes, -1: unlimited)";
const LAG_MEANING: &str = " (0: no delay, -1: the effective local retention)";

/// The broker's tiering settings (SR-1 … SR-9 and the delayed-upload broker defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerSettings {
    /// Whether tiered storage is on (`remote.log.storage.enable`, alias `remote.log.storage.system.enable`).
    pub remote_storage_enabled: bool,
    /// The storage manager class, or for a Rust host the backend name. Always `Some` when enabled (SR-2).
    pub storage_manager: Option<String>,
    /// Where the storage manager class is loaded from (shipped; a JVM concern).
    pub storage_manager_class_path: Option<String>,
    /// The metadata manager class; [`DEFAULT_METADATA_MANAGER`] when not set (SR-3).
    pub metadata_manager: String,
    /// Where the metadata manager class is loaded from (shipped; a JVM concern).
    pub metadata_manager_class_path: Option<String>,
    /// The shipped storage manager prefix (`rsm.config.` by default).
    pub storage_manager_prefix: String,
    /// The shipped metadata manager prefix (`rlmm.config.` by default).
    pub metadata_manager_prefix: String,
    /// Everything under `remote.log.storage.*` (less the broker keys above) and the storage manager
    /// prefix, prefix removed, values untouched (SR-4).
    pub storage_config: BTreeMap<String, String>,
    /// Everything under `remote.log.metadata.*` (less the broker keys above) and the metadata manager
    /// prefix, prefix removed, values untouched (SR-5).
    pub metadata_config: BTreeMap<String, String>,
    /// `remote.log.metadata.custom.metadata.max.bytes`.
    pub custom_metadata_max_bytes: u32,
    /// `remote.log.manager.thread.pool.size` (SR-6).
    pub thread_pool_size: u32,
    /// `remote.log.manager.task.interval.ms` (SR-7).
    pub task_interval_ms: u64,
    /// `remote.log.reader.threads` (SR-8).
    pub reader_threads: u32,
    /// `remote.log.reader.max.pending.tasks` (SR-9).
    pub reader_max_pending_tasks: u32,
    /// The `log.*` defaults of the topic settings.
    pub topic_defaults: TopicDefaults,
}

impl Default for BrokerSettings {
    fn default() -> Self {
        BrokerSettings {
            remote_storage_enabled: false,
            storage_manager: None,
            storage_manager_class_path: None,
            metadata_manager: DEFAULT_METADATA_MANAGER.to_string(),
            metadata_manager_class_path: None,
            storage_manager_prefix: DEFAULT_STORAGE_MANAGER_PREFIX.to_string(),
            metadata_manager_prefix: DEFAULT_METADATA_MANAGER_PREFIX.to_string(),
            storage_config: BTreeMap::new(),
            metadata_config: BTreeMap::new(),
            custom_metadata_max_bytes: DEFAULT_CUSTOM_METADATA_MAX_BYTES,
            thread_pool_size: DEFAULT_THREAD_POOL_SIZE,
            task_interval_ms: DEFAULT_TASK_INTERVAL_MS,
            reader_threads: DEFAULT_READER_THREADS,
            reader_max_pending_tasks: DEFAULT_READER_MAX_PENDING_TASKS,
            topic_defaults: TopicDefaults::default(),
        }
    }
}

impl BrokerSettings {
    /// Parses a map holding only tiering settings; any other key is an error (a typo).
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self> {
        let mut r = ConfigReader::new(props);
        let s = Self::read(&mut r)?;
        r.finish()?;
        Ok(s)
    }

    /// Reads the tiering settings out of a reader that may hold other broker settings too (call
    /// [`ConfigReader::finish`] after every component has read its keys).
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let d = BrokerSettings::default();
        let remote_storage_enabled =
            aliased_bool(r, REMOTE_LOG_STORAGE_ENABLE, REMOTE_LOG_STORAGE_SYSTEM_ENABLE, false)?;
        let storage_manager = r.string(STORAGE_MANAGER_CLASS_NAME).map(str::to_string);
        let storage_manager_class_path = r.string(STORAGE_MANAGER_CLASS_PATH).map(str::to_string);
        let metadata_manager = r.string(METADATA_MANAGER_CLASS_NAME).unwrap_or(DEFAULT_METADATA_MANAGER).to_string();
        let metadata_manager_class_path = r.string(METADATA_MANAGER_CLASS_PATH).map(str::to_string);
        let storage_manager_prefix = prefix_setting(r, STORAGE_MANAGER_IMPL_PREFIX, DEFAULT_STORAGE_MANAGER_PREFIX);
        let metadata_manager_prefix = prefix_setting(r, METADATA_MANAGER_IMPL_PREFIX, DEFAULT_METADATA_MANAGER_PREFIX);
        let custom_metadata_max_bytes =
            opt_int(r, CUSTOM_METADATA_MAX_BYTES, 0, INT_MAX, "")?.map_or(d.custom_metadata_max_bytes, |v| v as u32);
        let thread_pool_size = opt_int(r, THREAD_POOL_SIZE, 1, INT_MAX, "")?.map_or(d.thread_pool_size, |v| v as u32);
        let task_interval_ms = opt_int(r, TASK_INTERVAL_MS, 1, MAX, "")?.map_or(d.task_interval_ms, |v| v as u64);
        let reader_threads = opt_int(r, READER_THREADS, 1, INT_MAX, "")?.map_or(d.reader_threads, |v| v as u32);
        let reader_max_pending_tasks =
            opt_int(r, READER_MAX_PENDING_TASKS, 1, INT_MAX, "")?.map_or(d.reader_max_pending_tasks, |v| v as u32);
        let topic_defaults = TopicDefaults::read(r)?;

        let seed_storage = pass_through(r, STORAGE_NAMESPACE, STORAGE_RESERVED);
        let shipped_storage = pass_through(r, &storage_manager_prefix, STORAGE_RESERVED);
        let storage_config =
            merge_namespaces(seed_storage, STORAGE_NAMESPACE, shipped_storage, &storage_manager_prefix)?;
        let seed_metadata = pass_through(r, METADATA_NAMESPACE, METADATA_RESERVED);
        let shipped_metadata = pass_through(r, &metadata_manager_prefix, METADATA_RESERVED);
        let metadata_config =
            merge_namespaces(seed_metadata, METADATA_NAMESPACE, shipped_metadata, &metadata_manager_prefix)?;

        if remote_storage_enabled && storage_manager.is_none() {
            return Err(Error::config(
                STORAGE_MANAGER_CLASS_NAME,
                format!("is mandatory when {REMOTE_LOG_STORAGE_ENABLE} is true, but it is not set"),
            ));
        }
        if remote_storage_enabled {
            // The defaults must be valid for a tiered topic that sets nothing itself.
            resolve_values(&TopicSettings::default(), &topic_defaults, true, true)?;
        }
        Ok(BrokerSettings {
            remote_storage_enabled,
            storage_manager,
            storage_manager_class_path,
            metadata_manager,
            metadata_manager_class_path,
            storage_manager_prefix,
            metadata_manager_prefix,
            storage_config,
            metadata_config,
            custom_metadata_max_bytes,
            thread_pool_size,
            task_interval_ms,
            reader_threads,
            reader_max_pending_tasks,
            topic_defaults,
        })
    }
}

// ---------------------------------------------------------------------------------------------------
// Topic settings
// ---------------------------------------------------------------------------------------------------

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

    fn requests_remote(&self) -> bool {
        self.remote_storage_enable == Some(true)
    }

    fn cleanup(&self, broker: &BrokerSettings) -> CleanupPolicy {
        self.cleanup_policy.unwrap_or(broker.topic_defaults.cleanup_policy)
    }
}

// ---------------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------------

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
    /// [`validate_create`] and [`validate_alter`], which reject those instead.
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

struct Values {
    retention: RetentionLimits,
    local_retention: RetentionLimits,
    remote_retention: RemoteRetention,
    copy_lag: CopyLag,
}

/// The value resolution. `tiered`: apply the cross-key checks a tiered topic needs. `strict`: a lag
/// inherited from the broker above the local retention is an error too (broker validation), instead of
/// being capped at the local retention.
fn resolve_values(topic: &TopicSettings, d: &TopicDefaults, tiered: bool, strict: bool) -> Result<Values> {
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
    use rsm_core::config::props;

    const DAY: i64 = 86_400_000;

    fn enabled_broker() -> BrokerSettings {
        BrokerSettings { remote_storage_enabled: true, storage_manager: Some("fs".into()), ..Default::default() }
    }

    fn topic(pairs: &[(&str, &str)]) -> TopicSettings {
        TopicSettings::from_props(&props(pairs.iter().copied())).expect("topic settings parse")
    }

    #[test]
    fn broker_settings_parse() {
        struct Case {
            name: &'static str,
            props: &'static [(&'static str, &'static str)],
            check: fn(&BrokerSettings) -> bool,
        }
        let cases = [
            Case {
                name: "empty map: off, shipped defaults",
                props: &[],
                check: |s| {
                    !s.remote_storage_enabled
                        && s.storage_manager.is_none()
                        && s.metadata_manager == DEFAULT_METADATA_MANAGER
                        && s.thread_pool_size == 2
                        && s.task_interval_ms == 30_000
                        && s.reader_threads == 10
                        && s.reader_max_pending_tasks == 100
                        && s.custom_metadata_max_bytes == 128
                        && s.topic_defaults.retention_ms == 604_800_000
                        && s.topic_defaults.copy_lag_ms == 0
                        && s.topic_defaults.copy_lag_bytes == 0
                        && s.storage_config.is_empty()
                },
            },
            Case {
                name: "seed name enables",
                props: &[("remote.log.storage.enable", "true"), ("remote.log.storage.manager.class.name", "s3")],
                check: |s| s.remote_storage_enabled && s.storage_manager.as_deref() == Some("s3"),
            },
            Case {
                name: "shipped alias enables",
                props: &[("remote.log.storage.system.enable", "TRUE"), ("remote.log.storage.manager.class.name", "fs")],
                check: |s| s.remote_storage_enabled,
            },
            Case {
                name: "both names agreeing",
                props: &[("remote.log.storage.enable", "false"), ("remote.log.storage.system.enable", "false")],
                check: |s| !s.remote_storage_enabled,
            },
            Case {
                name: "class name optional when disabled",
                props: &[("remote.log.storage.enable", "false")],
                check: |s| s.storage_manager.is_none(),
            },
            Case {
                name: "custom metadata manager",
                props: &[("remote.log.metadata.manager.class.name", "com.example.Rlmm")],
                check: |s| s.metadata_manager == "com.example.Rlmm" && s.metadata_config.is_empty(),
            },
            Case {
                name: "pools and interval",
                props: &[
                    ("remote.log.manager.thread.pool.size", "4"),
                    ("remote.log.manager.task.interval.ms", "1000"),
                    ("remote.log.reader.threads", "1"),
                    ("remote.log.reader.max.pending.tasks", "2147483647"),
                ],
                check: |s| {
                    s.thread_pool_size == 4
                        && s.task_interval_ms == 1000
                        && s.reader_threads == 1
                        && s.reader_max_pending_tasks == 2_147_483_647
                },
            },
            Case {
                name: "pass-through: seed namespace and shipped prefix, unknown keys untouched",
                props: &[
                    ("remote.log.storage.enable", "true"),
                    ("remote.log.storage.manager.class.name", "s3"),
                    ("remote.log.storage.s3.bucket", "b1"),
                    ("rsm.config.s3.region", " eu-west-1 "),
                    ("remote.log.metadata.topic.replication.factor", "3"),
                    ("rlmm.config.whatever.unknown", "x"),
                    ("remote.log.metadata.manager.class.name", "com.example.Rlmm"),
                ],
                check: |s| {
                    s.storage_config == props([("s3.bucket", "b1"), ("s3.region", " eu-west-1 ")])
                        && s.metadata_config == props([("topic.replication.factor", "3"), ("whatever.unknown", "x")])
                },
            },
            Case {
                name: "same key under both namespaces with the same value",
                props: &[("remote.log.storage.a", "1"), ("rsm.config.a", "1")],
                check: |s| s.storage_config == props([("a", "1")]),
            },
            Case {
                name: "custom shipped prefixes",
                props: &[
                    ("remote.log.storage.manager.impl.prefix", "store."),
                    ("remote.log.metadata.manager.impl.prefix", "meta."),
                    ("store.root", "/tmp/x"),
                    ("meta.k", "v"),
                ],
                check: |s| {
                    s.storage_config == props([("root", "/tmp/x")])
                        && s.metadata_config == props([("k", "v")])
                        && s.storage_manager_prefix == "store."
                },
            },
            Case {
                name: "broker topic defaults",
                props: &[
                    ("log.retention.hours", "24"),
                    ("log.retention.bytes", "1000"),
                    ("log.local.retention.ms", "3600000"),
                    ("log.local.retention.bytes", "-2"),
                    ("log.remote.copy.lag.ms", "-1"),
                    ("log.remote.copy.lag.bytes", "500"),
                    ("log.cleanup.policy", "compact,delete"),
                ],
                check: |s| {
                    s.topic_defaults
                        == TopicDefaults {
                            retention_ms: 86_400_000,
                            retention_bytes: 1000,
                            local_retention_ms: 3_600_000,
                            local_retention_bytes: -2,
                            copy_lag_ms: -1,
                            copy_lag_bytes: 500,
                            cleanup_policy: CleanupPolicy { delete: true, compact: true },
                        }
                },
            },
            Case {
                name: "log.retention.ms wins over minutes and hours",
                props: &[("log.retention.ms", "5"), ("log.retention.minutes", "1"), ("log.retention.hours", "1")],
                check: |s| s.topic_defaults.retention_ms == 5,
            },
            Case {
                name: "log.retention.minutes wins over hours; -1 is unlimited",
                props: &[("log.retention.minutes", "-1"), ("log.retention.hours", "1")],
                check: |s| s.topic_defaults.retention_ms == -1,
            },
        ];
        for c in cases {
            let s = BrokerSettings::from_props(&props(c.props.iter().copied()))
                .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            assert!((c.check)(&s), "{}: {s:?}", c.name);
        }
    }

    #[test]
    fn broker_settings_errors() {
        struct Case {
            name: &'static str,
            props: &'static [(&'static str, &'static str)],
            key: &'static str,
            message: &'static str,
        }
        let cases = [
            Case {
                name: "enable not a boolean",
                props: &[("remote.log.storage.enable", "yes")],
                key: "remote.log.storage.enable",
                message: "`yes` is not true or false",
            },
            Case {
                name: "seed and shipped names contradict",
                props: &[("remote.log.storage.enable", "true"), ("remote.log.storage.system.enable", "false")],
                key: "remote.log.storage.enable",
                message: "`true` contradicts `remote.log.storage.system.enable` = `false`",
            },
            Case {
                name: "SR-2: class name mandatory when enabled",
                props: &[("remote.log.storage.enable", "true")],
                key: "remote.log.storage.manager.class.name",
                message: "is mandatory when remote.log.storage.enable is true",
            },
            Case {
                name: "SR-2: blank class name counts as missing",
                props: &[("remote.log.storage.system.enable", "true"), ("remote.log.storage.manager.class.name", " ")],
                key: "remote.log.storage.manager.class.name",
                message: "is mandatory",
            },
            Case {
                name: "SR-6: zero threads",
                props: &[("remote.log.manager.thread.pool.size", "0")],
                key: "remote.log.manager.thread.pool.size",
                message: "0 is out of range [1, 2147483647]",
            },
            Case {
                name: "SR-6: negative threads",
                props: &[("remote.log.manager.thread.pool.size", "-3")],
                key: "remote.log.manager.thread.pool.size",
                message: "-3 is out of range [1, 2147483647]",
            },
            Case {
                name: "SR-7: non-integer interval",
                props: &[("remote.log.manager.task.interval.ms", "1.5")],
                key: "remote.log.manager.task.interval.ms",
                message: "`1.5` is not an integer in [1, 9223372036854775807]",
            },
            Case {
                name: "SR-7: zero interval",
                props: &[("remote.log.manager.task.interval.ms", "0")],
                key: "remote.log.manager.task.interval.ms",
                message: "0 is out of range [1, 9223372036854775807]",
            },
            Case {
                name: "SR-8: reader threads above int range",
                props: &[("remote.log.reader.threads", "2147483648")],
                key: "remote.log.reader.threads",
                message: "2147483648 is out of range [1, 2147483647]",
            },
            Case {
                name: "SR-9: pending tasks zero",
                props: &[("remote.log.reader.max.pending.tasks", "0")],
                key: "remote.log.reader.max.pending.tasks",
                message: "0 is out of range [1, 2147483647]",
            },
            Case {
                name: "broker lag below -1",
                props: &[("log.remote.copy.lag.ms", "-2")],
                key: "log.remote.copy.lag.ms",
                message: "-2 is out of range [-1, 9223372036854775807] (0: no delay, -1: the effective local retention)",
            },
            Case {
                name: "broker lag above broker local retention when enabled",
                props: &[
                    ("remote.log.storage.enable", "true"),
                    ("remote.log.storage.manager.class.name", "fs"),
                    ("log.local.retention.ms", "1000"),
                    ("log.remote.copy.lag.ms", "2000"),
                ],
                key: "log.remote.copy.lag.ms",
                message: "2000 exceeds the effective local retention 1000 (log.local.retention.ms=1000); allowed: -1 to 1000",
            },
            Case {
                name: "broker local retention above broker retention when enabled",
                props: &[
                    ("remote.log.storage.enable", "true"),
                    ("remote.log.storage.manager.class.name", "fs"),
                    ("log.retention.ms", "1000"),
                    ("log.local.retention.ms", "2000"),
                ],
                key: "log.local.retention.ms",
                message: "2000 ms exceeds the remote retention log.retention.ms=1000; allowed: -2, or 0 to 1000",
            },
            Case {
                name: "pass-through conflict between namespaces",
                props: &[("remote.log.storage.root", "/a"), ("rsm.config.root", "/b")],
                key: "rsm.config.root",
                message: "`/b` contradicts `remote.log.storage.root` = `/a`",
            },
            Case {
                name: "unknown key outside the namespaces",
                props: &[("remote.log.reader.thread", "3")],
                key: "remote.log.reader.thread",
                message: "unknown setting",
            },
            Case {
                name: "bad broker cleanup policy",
                props: &[("log.cleanup.policy", "delete,archive")],
                key: "log.cleanup.policy",
                message: "`delete,archive` is not a cleanup policy",
            },
        ];
        for c in cases {
            let e = BrokerSettings::from_props(&props(c.props.iter().copied())).expect_err(c.name);
            assert_eq!(e.config_key(), Some(c.key), "{}: {e}", c.name);
            assert!(e.message().contains(c.message), "{}: {e}", c.name);
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
    fn topic_errors() {
        struct Case {
            name: &'static str,
            topic: &'static [(&'static str, &'static str)],
            key: &'static str,
            message: &'static str,
        }
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
        let broker = enabled_broker();
        for c in cases {
            let got = TopicSettings::from_props(&props(c.topic.iter().copied()))
                .and_then(|t| TopicPolicy::resolve(&t, &broker));
            let e = got.expect_err(c.name);
            assert_eq!(e.config_key(), Some(c.key), "{}: {e}", c.name);
            assert!(e.message().contains(c.message), "{}: {e}", c.name);
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
                Some((key, msg)) => {
                    let e = got.expect_err(c.name);
                    assert_eq!(e.config_key(), Some(key), "{}: {e}", c.name);
                    assert!(e.message().contains(msg), "{}: {e}", c.name);
                }
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
