//! Every tiering setting declared once ([`Setting`]: key, type, range, default, checks, origin): the
//! settings modules, and the engine, read each key and default through its declaration, and
//! `docs/settings.md`'s Broker and Topic tables are generated from [`BROKER_SETTINGS`] and [`TOPIC_SETTINGS`]
//! (`cargo test -p rsm-cli --test settings_docs`). The seed's name and Kafka's shipped name are two
//! declarations where they differ (the shipped one is accepted as an alias).

use super::parse::{MS_PER_HOUR, MS_PER_MINUTE};
use rsm_core::config::{Kind, Setting, Unit};

/// The upper bound of a long setting.
const MAX: i128 = i64::MAX as i128;
/// The upper bound of an int setting.
const INT_MAX: i128 = i32::MAX as i128;
/// The largest number of minutes whose milliseconds fit a long.
const MAX_MINUTES: i128 = MAX / MS_PER_MINUTE as i128;
/// The largest number of hours whose milliseconds fit a long.
const MAX_HOURS: i128 = MAX / MS_PER_HOUR as i128;

// ---------------------------------------------------------------------------------------------------
// Broker
// ---------------------------------------------------------------------------------------------------

/// Broker: whether tiered storage is on (SR-1). The seed's name.
pub const REMOTE_LOG_STORAGE_ENABLE: Setting = Setting::bool("remote.log.storage.enable", false)
    .with_doc("whether tiered storage is on")
    .with_note("SR-1 seed name");
/// Broker: the shipped name of [`REMOTE_LOG_STORAGE_ENABLE`], accepted as an alias.
pub const REMOTE_LOG_STORAGE_SYSTEM_ENABLE: Setting = Setting::bool("remote.log.storage.system.enable", false)
    .with_checks("both set to different values is an error")
    .with_doc("whether tiered storage is on")
    .with_note("shipped alias of the above");
/// Broker: the storage manager class, or for a Rust host the backend name (SR-2).
pub const STORAGE_MANAGER_CLASS_NAME: Setting = Setting::of("remote.log.storage.manager.class.name", Kind::String)
    .with_checks("mandatory when enabled (SR-2)")
    .with_doc("the storage manager class, or for a Rust host the backend name")
    .with_note("same in both; a Rust host puts the backend name here");
/// Broker: where the storage manager class is loaded from (shipped; optional).
pub const STORAGE_MANAGER_CLASS_PATH: Setting = Setting::of("remote.log.storage.manager.class.path", Kind::String)
    .with_doc("where the storage manager class is loaded from")
    .with_note("shipped only (JVM class loading)");
/// Broker: the shipped prefix whose keys are passed to the storage manager (default `rsm.config.`).
pub const STORAGE_MANAGER_IMPL_PREFIX: Setting = Setting::of("remote.log.storage.manager.impl.prefix", Kind::String)
    .with_text_default("rsm.config.")
    .with_doc("the prefix whose keys are passed to the storage manager")
    .with_note("shipped only");
/// Broker: the metadata manager class (SR-3; optional).
pub const METADATA_MANAGER_CLASS_NAME: Setting = Setting::of("remote.log.metadata.manager.class.name", Kind::String)
    .with_text_default(
        // Kafka's built-in manager, backed by an internal topic (SR-3).
        "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager",
    )
    .with_checks("none (SR-3)")
    .with_doc("the metadata manager class")
    .with_note("same in both");
/// Broker: where the metadata manager class is loaded from (shipped; optional).
pub const METADATA_MANAGER_CLASS_PATH: Setting = Setting::of("remote.log.metadata.manager.class.path", Kind::String)
    .with_doc("where the metadata manager class is loaded from")
    .with_note("shipped only");
/// Broker: the shipped prefix whose keys are passed to the metadata manager (default `rlmm.config.`).
pub const METADATA_MANAGER_IMPL_PREFIX: Setting = Setting::of("remote.log.metadata.manager.impl.prefix", Kind::String)
    .with_text_default("rlmm.config.")
    .with_doc("the prefix whose keys are passed to the metadata manager")
    .with_note("shipped only");
/// Broker: the largest custom metadata a storage manager may return for a segment (shipped).
pub const CUSTOM_METADATA_MAX_BYTES: Setting =
    Setting::int("remote.log.metadata.custom.metadata.max.bytes", 0, INT_MAX)
        .with_default(128)
        .with_doc("the largest custom metadata a storage manager may return for a segment")
        .with_note("shipped only");
/// Broker: the seed's pass-through namespace for the storage manager (SR-4).
pub const STORAGE_NAMESPACE: Setting = Setting::of("remote.log.storage.", Kind::PassThrough)
    .shown_as("`remote.log.storage.*`")
    .with_described_default("—")
    .with_checks("not validated (SR-4)")
    .with_doc("passed to the storage manager, prefix removed")
    .with_note("seed namespace");
/// Broker: the storage manager's namespace, named by the default of [`STORAGE_MANAGER_IMPL_PREFIX`].
pub const STORAGE_PREFIX_NAMESPACE: Setting =
    Setting::of(STORAGE_MANAGER_IMPL_PREFIX.default_text(), Kind::PassThrough)
        .shown_as("`rsm.config.*` (the impl prefix)")
        .with_described_default("—")
        .with_checks("not validated")
        .with_doc("passed to the storage manager, prefix removed")
        .with_note("shipped namespace");
/// Broker: the seed's pass-through namespace for the metadata manager (SR-5).
pub const METADATA_NAMESPACE: Setting = Setting::of("remote.log.metadata.", Kind::PassThrough)
    .shown_as("`remote.log.metadata.*`")
    .with_described_default("—")
    .with_checks("not validated (SR-5)")
    .with_doc("passed to the metadata manager, prefix removed")
    .with_note("seed namespace");
/// Broker: the metadata manager's namespace, named by the default of [`METADATA_MANAGER_IMPL_PREFIX`].
pub const METADATA_PREFIX_NAMESPACE: Setting =
    Setting::of(METADATA_MANAGER_IMPL_PREFIX.default_text(), Kind::PassThrough)
        .shown_as("`rlmm.config.*` (the impl prefix)")
        .with_described_default("—")
        .with_checks("not validated")
        .with_doc("passed to the metadata manager, prefix removed")
        .with_note("shipped namespace");
/// Broker: remote log manager thread pool size (SR-6).
pub const THREAD_POOL_SIZE: Setting = Setting::int("remote.log.manager.thread.pool.size", 1, INT_MAX)
    .with_default(2)
    .with_checks("(SR-6)")
    .with_doc("remote log manager thread pool size")
    .with_note("seed default open: shipped default (deprecated upstream in 4.2)");
/// Broker: interval of the remote log manager's tasks, in ms (SR-7).
pub const TASK_INTERVAL_MS: Setting = Setting::long("remote.log.manager.task.interval.ms", 1, MAX)
    .with_default(30_000)
    .with_checks("(SR-7)")
    .with_doc("interval of the remote log manager's tasks, in ms")
    .with_note("seed default open: shipped default");
/// Broker: remote log reader threads (SR-8).
pub const READER_THREADS: Setting = Setting::int("remote.log.reader.threads", 1, INT_MAX)
    .with_default(10)
    .with_checks("(SR-8)")
    .with_doc("remote log reader threads")
    .with_note("seed default open: shipped default");
/// Broker: remote log reader task queue capacity (SR-9).
pub const READER_MAX_PENDING_TASKS: Setting = Setting::int("remote.log.reader.max.pending.tasks", 1, INT_MAX)
    .with_default(100)
    .with_checks("(SR-9)")
    .with_doc("remote log reader task queue capacity")
    .with_note("seed default open: shipped default");
/// Broker default of [`RETENTION_MS`].
pub const LOG_RETENTION_MS: Setting = Setting::long("log.retention.ms", -1, MAX)
    .with_default(7 * 24 * 60 * 60 * 1000) // Kafka's 168 hours
    .with_unit(Unit::Millis)
    .with_checks("−1 unlimited; wins over `.minutes` and `.hours`")
    .with_doc("the broker's default of `retention.ms`")
    .with_note("Kafka");
/// Broker default of [`RETENTION_MS`] in minutes (used when `log.retention.ms` is not set).
pub const LOG_RETENTION_MINUTES: Setting = Setting::long("log.retention.minutes", -1, MAX_MINUTES)
    .with_described_default("unset")
    .with_checks("−1 unlimited; used when `log.retention.ms` is not set, wins over `.hours`")
    .with_doc("`log.retention.ms` in minutes")
    .with_note("Kafka");
/// Broker default of [`RETENTION_MS`] in hours (used when neither of the above is set).
pub const LOG_RETENTION_HOURS: Setting = Setting::long("log.retention.hours", -1, MAX_HOURS)
    .with_described_default("unset (168 h through `log.retention.ms`)")
    .with_checks("−1 unlimited; used when neither `.ms` nor `.minutes` is set")
    .with_doc("`log.retention.ms` in hours")
    .with_note("Kafka");
/// Broker default of [`RETENTION_BYTES`].
pub const LOG_RETENTION_BYTES: Setting = Setting::long("log.retention.bytes", -1, MAX)
    .with_default(-1)
    .with_checks("−1 unlimited")
    .with_doc("the broker's default of `retention.bytes`")
    .with_note("Kafka");
/// Broker default of [`LOCAL_RETENTION_MS`].
pub const LOG_LOCAL_RETENTION_MS: Setting = Setting::long("log.local.retention.ms", -2, MAX)
    .with_default(-2)
    .with_checks("−2: use `log.retention.*`")
    .with_doc("the broker's default of `local.retention.ms`")
    .with_note("shipped");
/// Broker default of [`LOCAL_RETENTION_BYTES`].
pub const LOG_LOCAL_RETENTION_BYTES: Setting = Setting::long("log.local.retention.bytes", -2, MAX)
    .with_default(-2)
    .with_checks("−2: use `log.retention.*`")
    .with_doc("the broker's default of `local.retention.bytes`")
    .with_note("shipped");
/// Broker default of [`REMOTE_COPY_LAG_MS`] (delayed upload).
pub const LOG_REMOTE_COPY_LAG_MS: Setting = Setting::long("log.remote.copy.lag.ms", -1, MAX)
    .with_default(0)
    .with_doc("the broker's default of `remote.copy.lag.ms`")
    .with_note("KIP-1241");
/// Broker default of [`REMOTE_COPY_LAG_BYTES`] (delayed upload).
pub const LOG_REMOTE_COPY_LAG_BYTES: Setting = Setting::long("log.remote.copy.lag.bytes", -1, MAX)
    .with_default(0)
    .with_doc("the broker's default of `remote.copy.lag.bytes`")
    .with_note("KIP-1241; upstream later changed this default to −1, the seeds say 0");
/// Broker default of [`CLEANUP_POLICY`].
pub const LOG_CLEANUP_POLICY: Setting = Setting::of("log.cleanup.policy", Kind::List)
    .with_text_default("delete")
    .with_checks("`delete`, `compact` or both, comma-separated")
    .with_doc("the broker's default of `cleanup.policy`")
    .with_note("Kafka");

/// The broker's tiering settings, in the order `docs/settings.md` lists them.
pub const BROKER_SETTINGS: &[&Setting] = &[
    &REMOTE_LOG_STORAGE_ENABLE,
    &REMOTE_LOG_STORAGE_SYSTEM_ENABLE,
    &STORAGE_MANAGER_CLASS_NAME,
    &STORAGE_MANAGER_CLASS_PATH,
    &STORAGE_MANAGER_IMPL_PREFIX,
    &METADATA_MANAGER_CLASS_NAME,
    &METADATA_MANAGER_CLASS_PATH,
    &METADATA_MANAGER_IMPL_PREFIX,
    &CUSTOM_METADATA_MAX_BYTES,
    &STORAGE_NAMESPACE,
    &STORAGE_PREFIX_NAMESPACE,
    &METADATA_NAMESPACE,
    &METADATA_PREFIX_NAMESPACE,
    &THREAD_POOL_SIZE,
    &TASK_INTERVAL_MS,
    &READER_THREADS,
    &READER_MAX_PENDING_TASKS,
    &LOG_RETENTION_MS,
    &LOG_RETENTION_MINUTES,
    &LOG_RETENTION_HOURS,
    &LOG_RETENTION_BYTES,
    &LOG_LOCAL_RETENTION_MS,
    &LOG_LOCAL_RETENTION_BYTES,
    &LOG_REMOTE_COPY_LAG_MS,
    &LOG_REMOTE_COPY_LAG_BYTES,
    &LOG_CLEANUP_POLICY,
];

/// Keys inside the seed's `remote.log.storage.` namespace that are broker settings, not passed through.
pub(super) const STORAGE_RESERVED: &[&str] = &[
    REMOTE_LOG_STORAGE_ENABLE.key,
    REMOTE_LOG_STORAGE_SYSTEM_ENABLE.key,
    STORAGE_MANAGER_CLASS_NAME.key,
    STORAGE_MANAGER_CLASS_PATH.key,
    STORAGE_MANAGER_IMPL_PREFIX.key,
];
/// Keys inside the seed's `remote.log.metadata.` namespace that are broker settings, not passed through.
pub(super) const METADATA_RESERVED: &[&str] = &[
    METADATA_MANAGER_CLASS_NAME.key,
    METADATA_MANAGER_CLASS_PATH.key,
    METADATA_MANAGER_IMPL_PREFIX.key,
    CUSTOM_METADATA_MAX_BYTES.key,
];

// ---------------------------------------------------------------------------------------------------
// Topic
// ---------------------------------------------------------------------------------------------------

/// Topic: whether the topic is tiered.
pub const REMOTE_STORAGE_ENABLE: Setting = Setting::bool("remote.storage.enable", false)
    .with_checks(
        "`true` rejected at create/alter when the broker has remote storage off or the topic is compacted (SR-12)",
    )
    .with_doc("whether the topic is tiered");
/// Topic: `delete`, `compact` or both (SR-12).
pub const CLEANUP_POLICY: Setting = Setting::of("cleanup.policy", Kind::List)
    .with_described_default("broker's")
    .with_checks("`delete`, `compact` or both")
    .with_doc("`delete`, `compact` or both (SR-12)");
/// Topic: total retention time in ms (-1 unlimited).
pub const RETENTION_MS: Setting = Setting::long("retention.ms", -1, MAX)
    .with_described_default("broker's")
    .with_checks("−1 unlimited")
    .with_doc("total retention time in ms");
/// Topic: total retention size in bytes (-1 unlimited).
pub const RETENTION_BYTES: Setting = Setting::long("retention.bytes", -1, MAX)
    .with_described_default("broker's")
    .with_checks("−1 unlimited")
    .with_doc("total retention size in bytes");
/// Topic: local retention time in ms (-2 use `retention.ms`, -1 unlimited).
pub const LOCAL_RETENTION_MS: Setting = Setting::long("local.retention.ms", -2, MAX)
    .with_described_default("broker's (−2)")
    .with_checks("−2 takes `retention.ms`; tiered: not −1 and at most the remote retention when that is limited")
    .with_doc("local retention time in ms");
/// Topic: local retention size in bytes (-2 use `retention.bytes`, -1 unlimited).
pub const LOCAL_RETENTION_BYTES: Setting = Setting::long("local.retention.bytes", -2, MAX)
    .with_described_default("broker's (−2)")
    .with_checks("same, with `retention.bytes`")
    .with_doc("local retention size in bytes");
/// Topic: remote retention time in minutes (SR-10, the seed's name).
pub const REMOTE_LOG_RETENTION_MINUTES: Setting = Setting::long("remote.log.retention.minutes", 1, MAX_MINUTES)
    .with_described_default("unset")
    .with_checks("(SR-10); unset: the remote retention is `retention.ms`")
    .with_doc("remote retention time in minutes (the seed's name)");
/// Topic: remote retention size in bytes (SR-11, the seed's name).
pub const REMOTE_LOG_RETENTION_BYTES: Setting = Setting::long("remote.log.retention.bytes", 1, MAX)
    .with_described_default("unset")
    .with_checks("(SR-11); unset: the remote retention is `retention.bytes`")
    .with_doc("remote retention size in bytes (the seed's name)");
/// Topic: delayed upload by time (KIP-1241).
pub const REMOTE_COPY_LAG_MS: Setting = Setting::long("remote.copy.lag.ms", -1, MAX)
    .with_described_default("broker's (0)")
    .with_checks("tiered: a positive value above a limited effective local retention is an error")
    .with_doc("delayed upload by time (KIP-1241)");
/// Topic: delayed upload by size (KIP-1241).
pub const REMOTE_COPY_LAG_BYTES: Setting = Setting::long("remote.copy.lag.bytes", -1, MAX)
    .with_described_default("broker's (0)")
    .with_checks("same, in bytes")
    .with_doc("delayed upload by size (KIP-1241)");

/// A topic's tiering settings, in the order `docs/settings.md` lists them.
pub const TOPIC_SETTINGS: &[&Setting] = &[
    &REMOTE_STORAGE_ENABLE,
    &CLEANUP_POLICY,
    &RETENTION_MS,
    &RETENTION_BYTES,
    &LOCAL_RETENTION_MS,
    &LOCAL_RETENTION_BYTES,
    &REMOTE_LOG_RETENTION_MINUTES,
    &REMOTE_LOG_RETENTION_BYTES,
    &REMOTE_COPY_LAG_MS,
    &REMOTE_COPY_LAG_BYTES,
];
