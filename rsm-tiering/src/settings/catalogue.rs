//! Every tiering setting declared once ([`Setting`]: key, type, range, default, checks, origin): the
//! settings modules read each through its declaration, and `docs/settings.md`'s Broker and Topic tables
//! are generated from [`BROKER_SETTINGS`] and [`TOPIC_SETTINGS`] (`cargo test -p rsm-cli --test
//! settings_docs`). The key names themselves are in [`super::keys`].

use super::keys;
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

/// [`keys::REMOTE_LOG_STORAGE_ENABLE`].
pub const REMOTE_LOG_STORAGE_ENABLE: Setting = Setting::bool(keys::REMOTE_LOG_STORAGE_ENABLE, false)
    .with_doc("whether tiered storage is on")
    .with_note("SR-1 seed name");
/// [`keys::REMOTE_LOG_STORAGE_SYSTEM_ENABLE`].
pub const REMOTE_LOG_STORAGE_SYSTEM_ENABLE: Setting = Setting::bool(keys::REMOTE_LOG_STORAGE_SYSTEM_ENABLE, false)
    .with_checks("both set to different values is an error")
    .with_doc("whether tiered storage is on")
    .with_note("shipped alias of the above");
/// [`keys::STORAGE_MANAGER_CLASS_NAME`].
pub const STORAGE_MANAGER_CLASS_NAME: Setting = Setting::of(keys::STORAGE_MANAGER_CLASS_NAME, Kind::String)
    .with_checks("mandatory when enabled (SR-2)")
    .with_doc("the storage manager class, or for a Rust host the backend name")
    .with_note("same in both; a Rust host puts the backend name here");
/// [`keys::STORAGE_MANAGER_CLASS_PATH`].
pub const STORAGE_MANAGER_CLASS_PATH: Setting = Setting::of(keys::STORAGE_MANAGER_CLASS_PATH, Kind::String)
    .with_doc("where the storage manager class is loaded from")
    .with_note("shipped only (JVM class loading)");
/// [`keys::STORAGE_MANAGER_IMPL_PREFIX`].
pub const STORAGE_MANAGER_IMPL_PREFIX: Setting = Setting::of(keys::STORAGE_MANAGER_IMPL_PREFIX, Kind::String)
    .with_text_default(keys::DEFAULT_STORAGE_MANAGER_PREFIX)
    .with_doc("the prefix whose keys are passed to the storage manager")
    .with_note("shipped only");
/// [`keys::METADATA_MANAGER_CLASS_NAME`].
pub const METADATA_MANAGER_CLASS_NAME: Setting = Setting::of(keys::METADATA_MANAGER_CLASS_NAME, Kind::String)
    .with_text_default(keys::DEFAULT_METADATA_MANAGER)
    .with_checks("none (SR-3)")
    .with_doc("the metadata manager class")
    .with_note("same in both");
/// [`keys::METADATA_MANAGER_CLASS_PATH`].
pub const METADATA_MANAGER_CLASS_PATH: Setting = Setting::of(keys::METADATA_MANAGER_CLASS_PATH, Kind::String)
    .with_doc("where the metadata manager class is loaded from")
    .with_note("shipped only");
/// [`keys::METADATA_MANAGER_IMPL_PREFIX`].
pub const METADATA_MANAGER_IMPL_PREFIX: Setting = Setting::of(keys::METADATA_MANAGER_IMPL_PREFIX, Kind::String)
    .with_text_default(keys::DEFAULT_METADATA_MANAGER_PREFIX)
    .with_doc("the prefix whose keys are passed to the metadata manager")
    .with_note("shipped only");
/// [`keys::CUSTOM_METADATA_MAX_BYTES`].
pub const CUSTOM_METADATA_MAX_BYTES: Setting = Setting::int(keys::CUSTOM_METADATA_MAX_BYTES, 0, INT_MAX)
    .with_default(keys::DEFAULT_CUSTOM_METADATA_MAX_BYTES as i128)
    .with_doc("the largest custom metadata a storage manager may return for a segment")
    .with_note("shipped only");
/// [`keys::STORAGE_NAMESPACE`].
pub const STORAGE_NAMESPACE: Setting = Setting::of(keys::STORAGE_NAMESPACE, Kind::PassThrough)
    .shown_as("`remote.log.storage.*`")
    .with_described_default("—")
    .with_checks("not validated (SR-4)")
    .with_doc("passed to the storage manager, prefix removed")
    .with_note("seed namespace");
/// The storage manager's [`keys::STORAGE_MANAGER_IMPL_PREFIX`] namespace.
pub const STORAGE_PREFIX_NAMESPACE: Setting = Setting::of(keys::DEFAULT_STORAGE_MANAGER_PREFIX, Kind::PassThrough)
    .shown_as("`rsm.config.*` (the impl prefix)")
    .with_described_default("—")
    .with_checks("not validated")
    .with_doc("passed to the storage manager, prefix removed")
    .with_note("shipped namespace");
/// [`keys::METADATA_NAMESPACE`].
pub const METADATA_NAMESPACE: Setting = Setting::of(keys::METADATA_NAMESPACE, Kind::PassThrough)
    .shown_as("`remote.log.metadata.*`")
    .with_described_default("—")
    .with_checks("not validated (SR-5)")
    .with_doc("passed to the metadata manager, prefix removed")
    .with_note("seed namespace");
/// The metadata manager's [`keys::METADATA_MANAGER_IMPL_PREFIX`] namespace.
pub const METADATA_PREFIX_NAMESPACE: Setting = Setting::of(keys::DEFAULT_METADATA_MANAGER_PREFIX, Kind::PassThrough)
    .shown_as("`rlmm.config.*` (the impl prefix)")
    .with_described_default("—")
    .with_checks("not validated")
    .with_doc("passed to the metadata manager, prefix removed")
    .with_note("shipped namespace");
/// [`keys::THREAD_POOL_SIZE`].
pub const THREAD_POOL_SIZE: Setting = Setting::int(keys::THREAD_POOL_SIZE, 1, INT_MAX)
    .with_default(keys::DEFAULT_THREAD_POOL_SIZE as i128)
    .with_checks("(SR-6)")
    .with_doc("remote log manager thread pool size")
    .with_note("seed default open: shipped default (deprecated upstream in 4.2)");
/// [`keys::TASK_INTERVAL_MS`].
pub const TASK_INTERVAL_MS: Setting = Setting::long(keys::TASK_INTERVAL_MS, 1, MAX)
    .with_default(keys::DEFAULT_TASK_INTERVAL_MS as i128)
    .with_checks("(SR-7)")
    .with_doc("interval of the remote log manager's tasks, in ms")
    .with_note("seed default open: shipped default");
/// [`keys::READER_THREADS`].
pub const READER_THREADS: Setting = Setting::int(keys::READER_THREADS, 1, INT_MAX)
    .with_default(keys::DEFAULT_READER_THREADS as i128)
    .with_checks("(SR-8)")
    .with_doc("remote log reader threads")
    .with_note("seed default open: shipped default");
/// [`keys::READER_MAX_PENDING_TASKS`].
pub const READER_MAX_PENDING_TASKS: Setting = Setting::int(keys::READER_MAX_PENDING_TASKS, 1, INT_MAX)
    .with_default(keys::DEFAULT_READER_MAX_PENDING_TASKS as i128)
    .with_checks("(SR-9)")
    .with_doc("remote log reader task queue capacity")
    .with_note("seed default open: shipped default");
/// [`keys::LOG_RETENTION_MS`].
pub const LOG_RETENTION_MS: Setting = Setting::long(keys::LOG_RETENTION_MS, -1, MAX)
    .with_default(keys::DEFAULT_RETENTION_MS as i128)
    .with_unit(Unit::Millis)
    .with_checks("−1 unlimited; wins over `.minutes` and `.hours`")
    .with_doc("the broker's default of `retention.ms`")
    .with_note("Kafka");
/// [`keys::LOG_RETENTION_MINUTES`].
pub const LOG_RETENTION_MINUTES: Setting = Setting::long(keys::LOG_RETENTION_MINUTES, -1, MAX_MINUTES)
    .with_described_default("unset")
    .with_checks("−1 unlimited; used when `log.retention.ms` is not set, wins over `.hours`")
    .with_doc("`log.retention.ms` in minutes")
    .with_note("Kafka");
/// [`keys::LOG_RETENTION_HOURS`].
pub const LOG_RETENTION_HOURS: Setting = Setting::long(keys::LOG_RETENTION_HOURS, -1, MAX_HOURS)
    .with_described_default("unset (168 h through `log.retention.ms`)")
    .with_checks("−1 unlimited; used when neither `.ms` nor `.minutes` is set")
    .with_doc("`log.retention.ms` in hours")
    .with_note("Kafka");
/// [`keys::LOG_RETENTION_BYTES`].
pub const LOG_RETENTION_BYTES: Setting = Setting::long(keys::LOG_RETENTION_BYTES, -1, MAX)
    .with_default(-1)
    .with_checks("−1 unlimited")
    .with_doc("the broker's default of `retention.bytes`")
    .with_note("Kafka");
/// [`keys::LOG_LOCAL_RETENTION_MS`].
pub const LOG_LOCAL_RETENTION_MS: Setting = Setting::long(keys::LOG_LOCAL_RETENTION_MS, -2, MAX)
    .with_default(-2)
    .with_checks("−2: use `log.retention.*`")
    .with_doc("the broker's default of `local.retention.ms`")
    .with_note("shipped");
/// [`keys::LOG_LOCAL_RETENTION_BYTES`].
pub const LOG_LOCAL_RETENTION_BYTES: Setting = Setting::long(keys::LOG_LOCAL_RETENTION_BYTES, -2, MAX)
    .with_default(-2)
    .with_checks("−2: use `log.retention.*`")
    .with_doc("the broker's default of `local.retention.bytes`")
    .with_note("shipped");
/// [`keys::LOG_REMOTE_COPY_LAG_MS`].
pub const LOG_REMOTE_COPY_LAG_MS: Setting = Setting::long(keys::LOG_REMOTE_COPY_LAG_MS, -1, MAX)
    .with_default(0)
    .with_doc("the broker's default of `remote.copy.lag.ms`")
    .with_note("KIP-1241");
/// [`keys::LOG_REMOTE_COPY_LAG_BYTES`].
pub const LOG_REMOTE_COPY_LAG_BYTES: Setting = Setting::long(keys::LOG_REMOTE_COPY_LAG_BYTES, -1, MAX)
    .with_default(0)
    .with_doc("the broker's default of `remote.copy.lag.bytes`")
    .with_note("KIP-1241; upstream later changed this default to −1, the seeds say 0");
/// [`keys::LOG_CLEANUP_POLICY`].
pub const LOG_CLEANUP_POLICY: Setting = Setting::of(keys::LOG_CLEANUP_POLICY, Kind::List)
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

// ---------------------------------------------------------------------------------------------------
// Topic
// ---------------------------------------------------------------------------------------------------

/// [`keys::REMOTE_STORAGE_ENABLE`].
pub const REMOTE_STORAGE_ENABLE: Setting = Setting::bool(keys::REMOTE_STORAGE_ENABLE, false)
    .with_checks(
        "`true` rejected at create/alter when the broker has remote storage off or the topic is compacted (SR-12)",
    )
    .with_doc("whether the topic is tiered");
/// [`keys::CLEANUP_POLICY`].
pub const CLEANUP_POLICY: Setting = Setting::of(keys::CLEANUP_POLICY, Kind::List)
    .with_described_default("broker's")
    .with_checks("`delete`, `compact` or both")
    .with_doc("`delete`, `compact` or both (SR-12)");
/// [`keys::RETENTION_MS`].
pub const RETENTION_MS: Setting = Setting::long(keys::RETENTION_MS, -1, MAX)
    .with_described_default("broker's")
    .with_checks("−1 unlimited")
    .with_doc("total retention time in ms");
/// [`keys::RETENTION_BYTES`].
pub const RETENTION_BYTES: Setting = Setting::long(keys::RETENTION_BYTES, -1, MAX)
    .with_described_default("broker's")
    .with_checks("−1 unlimited")
    .with_doc("total retention size in bytes");
/// [`keys::LOCAL_RETENTION_MS`].
pub const LOCAL_RETENTION_MS: Setting = Setting::long(keys::LOCAL_RETENTION_MS, -2, MAX)
    .with_described_default("broker's (−2)")
    .with_checks("−2 takes `retention.ms`; tiered: not −1 and at most the remote retention when that is limited")
    .with_doc("local retention time in ms");
/// [`keys::LOCAL_RETENTION_BYTES`].
pub const LOCAL_RETENTION_BYTES: Setting = Setting::long(keys::LOCAL_RETENTION_BYTES, -2, MAX)
    .with_described_default("broker's (−2)")
    .with_checks("same, with `retention.bytes`")
    .with_doc("local retention size in bytes");
/// [`keys::REMOTE_LOG_RETENTION_MINUTES`].
pub const REMOTE_LOG_RETENTION_MINUTES: Setting = Setting::long(keys::REMOTE_LOG_RETENTION_MINUTES, 1, MAX_MINUTES)
    .with_described_default("unset")
    .with_checks("(SR-10); unset: the remote retention is `retention.ms`")
    .with_doc("remote retention time in minutes (the seed's name)");
/// [`keys::REMOTE_LOG_RETENTION_BYTES`].
pub const REMOTE_LOG_RETENTION_BYTES: Setting = Setting::long(keys::REMOTE_LOG_RETENTION_BYTES, 1, MAX)
    .with_described_default("unset")
    .with_checks("(SR-11); unset: the remote retention is `retention.bytes`")
    .with_doc("remote retention size in bytes (the seed's name)");
/// [`keys::REMOTE_COPY_LAG_MS`].
pub const REMOTE_COPY_LAG_MS: Setting = Setting::long(keys::REMOTE_COPY_LAG_MS, -1, MAX)
    .with_described_default("broker's (0)")
    .with_checks("tiered: a positive value above a limited effective local retention is an error")
    .with_doc("delayed upload by time (KIP-1241)");
/// [`keys::REMOTE_COPY_LAG_BYTES`].
pub const REMOTE_COPY_LAG_BYTES: Setting = Setting::long(keys::REMOTE_COPY_LAG_BYTES, -1, MAX)
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
