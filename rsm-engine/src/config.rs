//! The engine's settings: Kafka's broker tiering settings (`remote.log.*`, `log.*`), the topic settings
//! every partition the engine runs gets unless it is given its own, and the engine's own few keys.

use rsm_core::config::ConfigReader;
use rsm_core::error::{Error, Result};
use rsm_tiering::settings::{BrokerSettings, TopicPolicy, TopicSettings};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// `rsm.engine.broker.id`: the id written as the broker of every metadata event (default 0).
pub const BROKER_ID: &str = "rsm.engine.broker.id";
/// `rsm.engine.remote.index.max.bytes`: a new set of SR-32 partition index files starts when its
/// remoteLogIndex file would pass this size (default 64 MiB).
pub const INDEX_MAX_BYTES: &str = "rsm.engine.remote.index.max.bytes";
/// `rsm.engine.remote.timeout.ms`: the longest one copy or deletion of a segment may take in the store
/// before it is given up as a transient failure (default 600000, ten minutes), so a hanging store holds a
/// partition's task no longer than this and never a worker for good (SR-36).
pub const REMOTE_TIMEOUT_MS: &str = "rsm.engine.remote.timeout.ms";
/// `remote.log.manager.task.retry.backoff.ms`: the first wait after a failed run (Kafka's key; default 500).
pub const RETRY_BACKOFF_MS: &str = "remote.log.manager.task.retry.backoff.ms";
/// `remote.log.manager.task.retry.backoff.max.ms`: the longest wait after failed runs (default 30000).
pub const RETRY_BACKOFF_MAX_MS: &str = "remote.log.manager.task.retry.backoff.max.ms";

/// Whether `key` is one of the engine's settings (a broker tiering key, a topic key, an engine key) rather
/// than a store's: a host that reads one properties file splits it by this.
pub fn is_engine_key(key: &str) -> bool {
    use rsm_tiering::settings::keys as k;
    const TOPIC: [&str; 10] = [
        k::REMOTE_STORAGE_ENABLE,
        k::CLEANUP_POLICY,
        k::RETENTION_MS,
        k::RETENTION_BYTES,
        k::LOCAL_RETENTION_MS,
        k::LOCAL_RETENTION_BYTES,
        k::REMOTE_LOG_RETENTION_MINUTES,
        k::REMOTE_LOG_RETENTION_BYTES,
        k::REMOTE_COPY_LAG_MS,
        k::REMOTE_COPY_LAG_BYTES,
    ];
    ["remote.log.", "log.", "rsm.engine.", "rlmm.config."].iter().any(|p| key.starts_with(p)) || TOPIC.contains(&key)
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
            format!("{} took longer than {REMOTE_TIMEOUT_MS} ({} ms)", what(), config.remote_timeout.as_millis()),
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
    /// Reads a map holding broker tiering keys, topic keys and the engine's keys ([`BROKER_ID`],
    /// [`INDEX_MAX_BYTES`], [`RETRY_BACKOFF_MS`], [`RETRY_BACKOFF_MAX_MS`]); any other key is an error
    /// naming it. The broker's own checks apply (remote storage on needs a storage manager named).
    pub fn from_props(props: &BTreeMap<String, String>) -> Result<Self> {
        let mut r = ConfigReader::new(props);
        let broker = BrokerSettings::read(&mut r)?;
        let topic = TopicSettings::read(&mut r)?;
        let broker_id = r.int_in(BROKER_ID, 0i32, 0..=i32::MAX)?;
        let index_max_bytes = r.int_in(INDEX_MAX_BYTES, 64u64 << 20, 4096..=(1u64 << 32))?;
        let backoff = r.int_in(RETRY_BACKOFF_MS, 500u64, 1..=86_400_000)?;
        let backoff_max = r.int_in(RETRY_BACKOFF_MAX_MS, 30_000u64, 1..=86_400_000)?;
        let remote_timeout = r.int_in(REMOTE_TIMEOUT_MS, 600_000u64, 1..=86_400_000)?;
        r.finish()?;
        if backoff_max < backoff {
            return Err(Error::config(
                RETRY_BACKOFF_MAX_MS,
                format!("{backoff_max} is below {RETRY_BACKOFF_MS} ({backoff})"),
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
            (BROKER_ID, "7"),
            (RETRY_BACKOFF_MS, "10"),
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
            BROKER_ID,
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
            (&[(BROKER_ID, "-1")], BROKER_ID),
            (&[(RETRY_BACKOFF_MS, "100"), (RETRY_BACKOFF_MAX_MS, "10")], RETRY_BACKOFF_MAX_MS),
            (&[("remote.log.storage.system.enable", "true")], "remote.log.storage.manager.class.name"),
        ];
        for (p, key) in cases {
            let e = EngineConfig::from_props(&props(p)).unwrap_err();
            assert_eq!(e.config_key(), Some(*key), "{e}");
        }
    }
}
