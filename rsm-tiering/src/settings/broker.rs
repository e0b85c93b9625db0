//! The broker's tiering settings (SR-1 … SR-9): whether tiered storage is on, the storage and metadata
//! managers, their pass-through namespaces, the remote log manager's pools, and the `log.*` defaults of
//! the topic settings.

use super::catalogue::{
    CUSTOM_METADATA_MAX_BYTES, METADATA_MANAGER_CLASS_NAME, METADATA_MANAGER_CLASS_PATH, METADATA_MANAGER_IMPL_PREFIX,
    METADATA_NAMESPACE, METADATA_RESERVED, READER_MAX_PENDING_TASKS, READER_THREADS, REMOTE_LOG_STORAGE_ENABLE,
    REMOTE_LOG_STORAGE_SYSTEM_ENABLE, STORAGE_MANAGER_CLASS_NAME, STORAGE_MANAGER_CLASS_PATH,
    STORAGE_MANAGER_IMPL_PREFIX, STORAGE_NAMESPACE, STORAGE_RESERVED, TASK_INTERVAL_MS, THREAD_POOL_SIZE,
};
use super::parse::{aliased_bool, opt_declared};
use super::topic::{TopicDefaults, TopicSettings};
use super::values::resolve_values;
use rsm_core::config::ConfigReader;
use rsm_core::config::Setting;
use rsm_core::error::{Error, Result};
use std::collections::BTreeMap;

/// The broker's tiering settings (SR-1 … SR-9 and the delayed-upload broker defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerSettings {
    /// Whether tiered storage is on (`remote.log.storage.enable`, alias `remote.log.storage.system.enable`).
    pub remote_storage_enabled: bool,
    /// The storage manager class, or for a Rust host the backend name. Always `Some` when enabled (SR-2).
    pub storage_manager: Option<String>,
    /// Where the storage manager class is loaded from (shipped; a JVM concern).
    pub storage_manager_class_path: Option<String>,
    /// The metadata manager class; [`METADATA_MANAGER_CLASS_NAME`]'s default when not set (SR-3).
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
            metadata_manager: METADATA_MANAGER_CLASS_NAME.default_text().to_string(),
            metadata_manager_class_path: None,
            storage_manager_prefix: STORAGE_MANAGER_IMPL_PREFIX.default_text().to_string(),
            metadata_manager_prefix: METADATA_MANAGER_IMPL_PREFIX.default_text().to_string(),
            storage_config: BTreeMap::new(),
            metadata_config: BTreeMap::new(),
            custom_metadata_max_bytes: CUSTOM_METADATA_MAX_BYTES.default_int(),
            thread_pool_size: THREAD_POOL_SIZE.default_int(),
            task_interval_ms: TASK_INTERVAL_MS.default_int(),
            reader_threads: READER_THREADS.default_int(),
            reader_max_pending_tasks: READER_MAX_PENDING_TASKS.default_int(),
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
        let remote_storage_enabled = aliased_bool(
            r,
            REMOTE_LOG_STORAGE_ENABLE.key,
            REMOTE_LOG_STORAGE_SYSTEM_ENABLE.key,
            REMOTE_LOG_STORAGE_ENABLE.default_bool(),
        )?;
        let storage_manager = r.string(STORAGE_MANAGER_CLASS_NAME.key).map(str::to_string);
        let storage_manager_class_path = r.string(STORAGE_MANAGER_CLASS_PATH.key).map(str::to_string);
        let metadata_manager = text_setting(r, &METADATA_MANAGER_CLASS_NAME);
        let metadata_manager_class_path = r.string(METADATA_MANAGER_CLASS_PATH.key).map(str::to_string);
        let storage_manager_prefix = text_setting(r, &STORAGE_MANAGER_IMPL_PREFIX);
        let metadata_manager_prefix = text_setting(r, &METADATA_MANAGER_IMPL_PREFIX);
        let custom_metadata_max_bytes =
            opt_declared(r, &CUSTOM_METADATA_MAX_BYTES, "")?.map_or(d.custom_metadata_max_bytes, |v| v as u32);
        let thread_pool_size = opt_declared(r, &THREAD_POOL_SIZE, "")?.map_or(d.thread_pool_size, |v| v as u32);
        let task_interval_ms = opt_declared(r, &TASK_INTERVAL_MS, "")?.map_or(d.task_interval_ms, |v| v as u64);
        let reader_threads = opt_declared(r, &READER_THREADS, "")?.map_or(d.reader_threads, |v| v as u32);
        let reader_max_pending_tasks =
            opt_declared(r, &READER_MAX_PENDING_TASKS, "")?.map_or(d.reader_max_pending_tasks, |v| v as u32);
        let topic_defaults = TopicDefaults::read(r)?;

        let seed_storage = pass_through(r, STORAGE_NAMESPACE.key, STORAGE_RESERVED);
        let shipped_storage = pass_through(r, &storage_manager_prefix, STORAGE_RESERVED);
        let storage_config =
            merge_namespaces(seed_storage, STORAGE_NAMESPACE.key, shipped_storage, &storage_manager_prefix)?;
        let seed_metadata = pass_through(r, METADATA_NAMESPACE.key, METADATA_RESERVED);
        let shipped_metadata = pass_through(r, &metadata_manager_prefix, METADATA_RESERVED);
        let metadata_config =
            merge_namespaces(seed_metadata, METADATA_NAMESPACE.key, shipped_metadata, &metadata_manager_prefix)?;

        if remote_storage_enabled && storage_manager.is_none() {
            return Err(Error::config(
                STORAGE_MANAGER_CLASS_NAME.key,
                format!("is mandatory when {} is true, but it is not set", REMOTE_LOG_STORAGE_ENABLE.key),
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

/// The text `setting`, else its declared default.
fn text_setting(r: &mut ConfigReader<'_>, setting: &Setting) -> String {
    r.string(setting.key).unwrap_or(setting.default_text()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::CleanupPolicy;
    use crate::settings::test_support::assert_config_error;
    use rsm_core::config::props;

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
                        && s.metadata_manager == METADATA_MANAGER_CLASS_NAME.default_text()
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
            assert_config_error(c.name, BrokerSettings::from_props(&props(c.props.iter().copied())), c.key, c.message);
        }
    }
}
