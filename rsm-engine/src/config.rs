//! The engine's settings: Kafka's broker tiering settings (`remote.log.*`, `log.*`), the topic settings
//! every partition the engine runs gets unless it is given its own, and the engine's own few keys.

use rsm_core::config::{ConfigReader, Setting};
use rsm_core::error::{Error, Result};
use rsm_tiering::settings::{BrokerSettings, TopicPolicy, TopicSettings};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// `remote.log.manager.task.retry.backoff.ms`: the first wait after a failed run (Kafka's key).
pub const RETRY_BACKOFF_MS: Setting = Setting::long("remote.log.manager.task.retry.backoff.ms", 1, 86_400_000)
    .with_default(500)
    .with_doc("the first wait after a failed run of a partition's task")
    .with_note("Kafka's key: the first wait after a failed run; doubled after each failure, with jitter");
/// `remote.log.manager.task.retry.backoff.max.ms`: the longest wait after failed runs (Kafka's key).
pub const RETRY_BACKOFF_MAX_MS: Setting = Setting::long("remote.log.manager.task.retry.backoff.max.ms", 1, 86_400_000)
    .with_default(30_000)
    .with_checks("not below the first wait")
    .with_doc("the longest wait after failed runs")
    .with_note("Kafka's key: the longest wait");
/// `rsm.engine.remote.timeout.ms`: the longest one copy or deletion of a segment may take in the store
/// before it is given up as a transient failure, so a hanging store holds a partition's task no longer than
/// this and never a worker for good (SR-36).
pub const REMOTE_TIMEOUT_MS: Setting = Setting::long("rsm.engine.remote.timeout.ms", 1, 86_400_000)
    .with_default(600_000)
    .with_doc("the longest one copy, deletion or index read of a segment may take in the store")
    .with_note(
        "*ours*: the longest one copy, deletion or index read of a segment may take in the store; past it the run \
         fails as transient and is retried, so a hanging store holds a partition no longer than this (SR-36)",
    );
/// `rsm.engine.broker.id`: the id written as the broker of every metadata event.
pub const BROKER_ID: Setting = Setting::int("rsm.engine.broker.id", 0, i32::MAX as i128)
    .with_default(0)
    .with_doc("the broker id of the metadata events the engine writes")
    .with_note(
        "*ours*: the broker id of the metadata events the engine writes; each host its own (a copy another id started and \
         has not finished is taken as in flight there for twice `rsm.engine.remote.timeout.ms`)",
    );
/// `rsm.engine.remote.index.max.bytes`: a new set of SR-32 partition index files starts when its
/// remoteLogIndex file would pass this size.
pub const INDEX_MAX_BYTES: Setting = Setting::long("rsm.engine.remote.index.max.bytes", 4096, 1 << 32)
    .with_default(64 << 20)
    .with_doc("the size at which a new set of SR-32 partition index files starts")
    .with_note("*ours*: a new set of SR-32 partition index files starts when its remoteLogIndex would pass this");

/// `rsm.engine.local.delete.verify`: before a local segment is deleted, the copies holding its offsets are
/// read back whole and checked (every chunk's blocks and CRC-32C), not only found (their manifests read).
pub const LOCAL_DELETE_VERIFY: Setting = Setting::bool("rsm.engine.local.delete.verify", true)
    .with_doc(
        "read back and check the copies holding a local segment's (or a duplicate copy's) offsets before deleting it",
    )
    .with_note(
        "*ours*: before a local segment, or a copy whose offsets another copy covers, is deleted, the copies left \
         holding its offsets are read back whole and checked (every chunk's blocks and CRC-32C), so a copy damaged \
         in the store since it was made keeps the local segment or the intact duplicate; `false`: only their \
         manifests must read (one request per segment)",
    );

/// The engine's own settings (beside the broker's and the topic's), in the order `docs/settings.md` lists
/// them.
pub const SETTINGS: &[&Setting] =
    &[&RETRY_BACKOFF_MS, &RETRY_BACKOFF_MAX_MS, &REMOTE_TIMEOUT_MS, &BROKER_ID, &INDEX_MAX_BYTES, &LOCAL_DELETE_VERIFY];

/// Whether `key` is one of the engine's settings (a broker tiering key, a topic key, an engine key) rather
/// than a store's: a host that reads one properties file splits it by this.
pub fn is_engine_key(key: &str) -> bool {
    use rsm_tiering::settings::catalogue::{METADATA_PREFIX_NAMESPACE, TOPIC_SETTINGS};
    ["remote.log.", "log.", "rsm.engine.", METADATA_PREFIX_NAMESPACE.key].iter().any(|p| key.starts_with(p))
        || TOPIC_SETTINGS.iter().any(|s| s.key == key)
}

/// Runs one store operation of the engine under [`EngineConfig::remote_timeout`]: past it, a transient
/// storage error naming what timed out.
pub(crate) async fn within<T>(
    config: &EngineConfig,
    what: impl FnOnce() -> String,
    f: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(config.remote_timeout, f).await {
        Ok(r) => r,
        Err(_) => Err(Error::retriable(
            format!("{} took longer than {} ({} ms)", what(), REMOTE_TIMEOUT_MS.key, config.remote_timeout.as_millis()),
            "timed out",
        )),
    }
}

/// Where "now" comes from: ms since the epoch. Tests pass a clock they move.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64))
}

/// Everything the engine is configured with.
#[derive(Clone)]
pub struct EngineConfig {
    /// The broker's tiering settings: remote storage on (SR-1), pool sizes (SR-6, SR-8, SR-9), task interval
    /// (SR-7) and the `log.*` defaults of the topic settings.
    pub broker: BrokerSettings,
    /// The topic settings of a partition added without its own (`retention.ms`, `local.retention.ms`, ...).
    pub topic: TopicSettings,
    /// The broker id of the metadata events this engine writes.
    pub broker_id: i32,
    /// The size at which a new set of SR-32 partition index files starts.
    pub index_max_bytes: u64,
    /// The first wait after a failed run of a partition's task.
    pub retry_backoff: Duration,
    /// The longest wait after failed runs.
    pub retry_backoff_max: Duration,
    /// The longest one copy or deletion of a segment may take in the store.
    pub remote_timeout: Duration,
    /// `rsm.engine.local.delete.verify`: the copies holding a local segment's offsets are read back whole
    /// and checked before it is deleted (else only their manifests must read).
    pub local_delete_verify: bool,
    /// Now, in ms since the epoch.
    pub clock: Clock,
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("broker", &self.broker)
            .field("topic", &self.topic)
            .field("broker_id", &self.broker_id)
            .field("index_max_bytes", &self.index_max_bytes)
            .field("retry_backoff", &self.retry_backoff)
            .field("retry_backoff_max", &self.retry_backoff_max)
            .field("remote_timeout", &self.remote_timeout)
            .finish_non_exhaustive()
    }
}

impl EngineConfig {
    /// Reads a map holding broker tiering keys, topic keys and the engine's keys ([`SETTINGS`]); any other key is an error
    /// naming it. The broker's own checks apply (remote storage on needs a storage manager named).
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self> {
        let mut r = ConfigReader::new(props);
        let broker = BrokerSettings::read(&mut r)?;
        let topic = TopicSettings::read(&mut r)?;
        let broker_id: i32 = r.get_int(&BROKER_ID)?;
        let index_max_bytes: u64 = r.get_int(&INDEX_MAX_BYTES)?;
        let backoff: u64 = r.get_int(&RETRY_BACKOFF_MS)?;
        let backoff_max: u64 = r.get_int(&RETRY_BACKOFF_MAX_MS)?;
        let remote_timeout: u64 = r.get_int(&REMOTE_TIMEOUT_MS)?;
        let local_delete_verify = r.get_bool(&LOCAL_DELETE_VERIFY)?;
        r.finish()?;
        if backoff_max < backoff {
            return Err(Error::config(
                RETRY_BACKOFF_MAX_MS.key,
                format!("{backoff_max} is below {} ({backoff})", RETRY_BACKOFF_MS.key),
            ));
        }
        // The topic defaults must resolve with the broker's, or every partition would fail alike.
        TopicPolicy::resolve(&topic, &broker)?;
        Ok(EngineConfig {
            broker,
            topic,
            broker_id,
            index_max_bytes,
            retry_backoff: Duration::from_millis(backoff),
            retry_backoff_max: Duration::from_millis(backoff_max),
            remote_timeout: Duration::from_millis(remote_timeout),
            local_delete_verify,
            clock: system_clock(),
        })
    }

    /// The same settings with another clock.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Now, by this configuration's clock.
    pub fn now_ms(&self) -> i64 {
        (self.clock)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn reads_broker_topic_and_engine_keys() {
        let c = EngineConfig::from_props(&props(&[
            ("remote.log.storage.system.enable", "true"),
            ("remote.log.storage.manager.class.name", "rsm"),
            ("remote.log.manager.thread.pool.size", "4"),
            ("retention.ms", "60000"),
            (BROKER_ID.key, "7"),
            (RETRY_BACKOFF_MS.key, "10"),
        ]))
        .unwrap();
        assert!(c.broker.remote_storage_enabled);
        assert_eq!(c.broker.thread_pool_size, 4);
        assert_eq!(c.topic.retention_ms, Some(60_000));
        assert_eq!(c.broker_id, 7);
        assert_eq!(c.retry_backoff, Duration::from_millis(10));
        assert_eq!(c.retry_backoff_max, Duration::from_millis(30_000));
    }

    #[test]
    fn engine_keys_are_told_from_store_keys() {
        for k in [
            "retention.ms",
            "local.retention.bytes",
            "log.retention.hours",
            "remote.log.manager.thread.pool.size",
            BROKER_ID.key,
        ] {
            assert!(is_engine_key(k), "{k}");
        }
        for k in ["chunk.size", "s3.region", "fetch.cache.bytes", "retention", "key.prefix"] {
            assert!(!is_engine_key(k), "{k}");
        }
    }

    #[test]
    fn errors_name_the_key() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("retention.mss", "1")], "retention.mss"),
            (&[(BROKER_ID.key, "-1")], BROKER_ID.key),
            (&[(RETRY_BACKOFF_MS.key, "100"), (RETRY_BACKOFF_MAX_MS.key, "10")], RETRY_BACKOFF_MAX_MS.key),
            (&[("remote.log.storage.system.enable", "true")], "remote.log.storage.manager.class.name"),
        ];
        for (p, key) in cases {
            let e = EngineConfig::from_props(&props(p)).unwrap_err();
            assert_eq!(e.config_key(), Some(*key), "{e}");
        }
    }
}
