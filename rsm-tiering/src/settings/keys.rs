//! The catalogue of setting names: every key the settings read, with the seed's name and Kafka's shipped
//! name where they differ (the shipped one is accepted as an alias), the pass-through namespaces and the
//! keys inside them that are broker settings, and the broker's defaults.

// ---------------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------
// Defaults
// ---------------------------------------------------------------------------------------------------

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

/// Keys inside the seed's `remote.log.storage.` namespace that are broker settings, not passed through.
pub(super) const STORAGE_RESERVED: &[&str] = &[
    REMOTE_LOG_STORAGE_ENABLE,
    REMOTE_LOG_STORAGE_SYSTEM_ENABLE,
    STORAGE_MANAGER_CLASS_NAME,
    STORAGE_MANAGER_CLASS_PATH,
    STORAGE_MANAGER_IMPL_PREFIX,
];
/// Keys inside the seed's `remote.log.metadata.` namespace that are broker settings, not passed through.
pub(super) const METADATA_RESERVED: &[&str] = &[
    METADATA_MANAGER_CLASS_NAME,
    METADATA_MANAGER_CLASS_PATH,
    METADATA_MANAGER_IMPL_PREFIX,
    CUSTOM_METADATA_MAX_BYTES,
];
