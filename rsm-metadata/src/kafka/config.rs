//! The settings of [`KafkaMetadataManager`](super::KafkaMetadataManager) and
//! [`KafkaFailedDeletions`](super::KafkaFailedDeletions): the keys a broker passes under `rlmm.config.`.

use crate::partitioner::PartitionFormula;
use rsm_core::config::{ConfigReader, Kind, Setting};
use rsm_core::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The topic of failed deletions (SR-35).
pub use crate::records::FAILED_DELETIONS_TOPIC as DEFAULT_FAILED_DELETIONS_TOPIC;
/// Kafka's metadata topic name (`TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_NAME`).
pub use crate::records::METADATA_TOPIC as DEFAULT_TOPIC;

/// `bootstrap.servers`: the brokers to connect to, comma separated (required; or
/// [`COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY`]).
pub const BOOTSTRAP_SERVERS: Setting = Setting::of("bootstrap.servers", Kind::List)
    .shown_as("`bootstrap.servers` or `remote.log.metadata.common.client.bootstrap.servers`")
    .with_checks("required, at least one")
    .with_doc("the brokers to connect to, comma separated");
/// Kafka's key: partitions of the metadata topic.
pub const PARTITIONS: Setting = Setting::int("remote.log.metadata.topic.num.partitions", 1, 100_000)
    .with_default(50)
    .with_checks("an existing topic with another count is refused, as Kafka's manager does")
    .with_doc("partitions of the metadata topic")
    .with_note("SR-29");
/// Kafka's key: replication factor of the metadata topic.
pub const REPLICATION_FACTOR: Setting =
    Setting::short("remote.log.metadata.topic.replication.factor", 1, i16::MAX as i128)
        .with_default(3)
        .with_doc("replication factor of the metadata topic when this manager creates it")
        .with_note("SR-29");
/// Kafka's key: retention of the metadata topic (-1 unlimited), set when this manager creates the topic.
/// Validated as Kafka does.
pub const RETENTION_MS: Setting = Setting::long("remote.log.metadata.topic.retention.ms", -1, i64::MAX as i128)
    .with_default(-1)
    .with_checks(
        "−1 or positive; set when the topic is created (CreateTopics with configs), checked with a warning when it \
         exists",
    )
    .with_doc("retention of the metadata topic")
    .with_note("SR-29");
/// Kafka's key: how long a write waits for the event to be read back; here also the bound of a catch-up.
pub const CONSUME_WAIT_MS: Setting = Setting::long("remote.log.metadata.publish.wait.ms", 1, (u64::MAX / 2) as i128)
    .with_default(120_000)
    .with_doc("how long a write waits to read its event back")
    .with_note("how long a write waits to read its event back; bounds a catch-up");
/// Ours: the metadata topic's name. Kafka's own manager has no such key (its topic is always
/// `__remote_log_metadata`); this one is for tests and side-by-side clusters.
pub const TOPIC_NAME: Setting = Setting::of("remote.log.metadata.topic.name", Kind::String)
    .with_text_default(DEFAULT_TOPIC)
    .with_checks("a valid topic name")
    .with_doc("the metadata topic")
    .with_note("*ours* (Kafka's is fixed)");
/// Ours: the partition formula, `kafka` (Kafka as shipped) or `seeds` (SR-30).
pub const PARTITION_FORMULA: Setting =
    Setting::of("remote.log.metadata.topic.partition.formula", Kind::Choice(&["kafka", "seeds"]))
        .with_text_default("kafka")
        .with_doc("which metadata partition a user partition's events go to")
        .with_note("*ours*: SR-30, Kafka's murmur2 or the seeds' `hashCode() % partitions`");
/// Ours: where the snapshots are kept; defaults to Kafka's `log.dir`/`log.dirs` (one directory).
pub const SNAPSHOT_DIR: Setting = Setting::of("remote.log.metadata.snapshot.dir", Kind::Path)
    .with_described_default("`log.dirs` (one directory) or `log.dir`")
    .with_doc("where the snapshots are kept")
    .with_note("*ours*: where each metadata partition's state and position are kept (SR-31)");
/// Ours: events applied between two snapshots of a metadata partition.
pub const SNAPSHOT_INTERVAL: Setting =
    Setting::long("remote.log.metadata.snapshot.interval.events", 1, u64::MAX as i128)
        .with_default(10_000)
        .with_doc("events applied between two snapshots of a metadata partition")
        .with_note("*ours*");
/// Ours: the bound of one Kafka request with its retries.
pub const REQUEST_TIMEOUT_MS: Setting =
    Setting::long("remote.log.metadata.request.timeout.ms", 1, (u64::MAX / 2) as i128)
        .with_default(30_000)
        .with_doc("the bound of one Kafka request with its retries")
        .with_note("*ours*: one Kafka request with its retries");
/// Ours: the failed-deletions topic (SR-35).
pub const FAILED_DELETIONS_TOPIC: Setting =
    Setting::of("remote.log.metadata.failed.deletions.topic.name", Kind::String)
        .with_text_default(DEFAULT_FAILED_DELETIONS_TOPIC)
        .with_checks("a valid topic name")
        .with_doc("the failed-deletions topic")
        .with_note("*ours*: SR-35, created with `cleanup.policy=compact`");

/// The settings [`KafkaMetadataConfig::from_map`] reads, in the order `docs/settings.md` lists them.
pub const SETTINGS: &[&Setting] = &[
    &BOOTSTRAP_SERVERS,
    &PARTITIONS,
    &REPLICATION_FACTOR,
    &RETENTION_MS,
    &CONSUME_WAIT_MS,
    &TOPIC_NAME,
    &PARTITION_FORMULA,
    &SNAPSHOT_DIR,
    &SNAPSHOT_INTERVAL,
    &REQUEST_TIMEOUT_MS,
    &FAILED_DELETIONS_TOPIC,
];

/// The same under Kafka's prefix for its manager's clients (`remote.log.metadata.common.client.`).
pub const COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY: &str = "remote.log.metadata.common.client.bootstrap.servers";
/// [`SNAPSHOT_DIR`]'s key, for the CLI until it reads `SNAPSHOT_DIR.key` (the crate itself does).
pub const SNAPSHOT_DIR_KEY: &str = SNAPSHOT_DIR.key;
/// Kafka's `log.dirs`, the snapshot directory when [`SNAPSHOT_DIR`] is not set.
pub const LOG_DIRS_KEY: &str = "log.dirs";
/// Kafka's `log.dir`, read when `log.dirs` is not set.
pub const LOG_DIR_KEY: &str = "log.dir";
/// Kafka's `broker.id`, in the client id as Kafka puts it there.
pub const BROKER_ID_KEY: &str = "broker.id";

/// Settings of [`KafkaMetadataManager`](super::KafkaMetadataManager) and [`KafkaFailedDeletions`](super::KafkaFailedDeletions).
#[derive(Clone, Debug, PartialEq)]
pub struct KafkaMetadataConfig {
    /// Brokers to bootstrap from (`host:port`).
    pub bootstrap_servers: Vec<String>,
    /// The metadata topic (default `__remote_log_metadata`, SR-29).
    pub topic: String,
    /// Partitions of the metadata topic (default 50).
    pub partitions: u32,
    /// Replication factor of the metadata topic when this manager creates it (default 3).
    pub replication_factor: i16,
    /// Retention of the metadata topic Kafka would set (-1: unlimited); see the module's limits.
    pub retention_ms: i64,
    /// Which metadata partition a user partition's events go to (default Kafka's, SR-30).
    pub partition_formula: PartitionFormula,
    /// Where snapshots of the metadata partitions' state are kept (SR-31).
    pub snapshot_dir: PathBuf,
    /// Events applied between two snapshots of a metadata partition.
    pub snapshot_interval_events: u64,
    /// The bound of one Kafka request with its retries.
    pub request_timeout: Duration,
    /// The bound of a catch-up (a write waiting for its event, a registration, a follower read).
    pub consume_wait: Duration,
    /// The client id the brokers see.
    pub client_id: String,
    /// The failed-deletions topic (SR-35).
    pub failed_deletions_topic: String,
}

impl KafkaMetadataConfig {
    /// Settings with Kafka's defaults for `bootstrap_servers`, keeping snapshots in `snapshot_dir`.
    pub fn new(bootstrap_servers: impl Into<String>, snapshot_dir: impl Into<PathBuf>) -> Self {
        KafkaMetadataConfig {
            bootstrap_servers: split_servers(&bootstrap_servers.into()),
            topic: DEFAULT_TOPIC.to_string(),
            partitions: PARTITIONS.default_int(),
            replication_factor: REPLICATION_FACTOR.default_int(),
            retention_ms: RETENTION_MS.default_int(),
            partition_formula: PartitionFormula::Kafka, // PARTITION_FORMULA's default
            snapshot_dir: snapshot_dir.into(),
            snapshot_interval_events: SNAPSHOT_INTERVAL.default_int(),
            request_timeout: Duration::from_millis(REQUEST_TIMEOUT_MS.default_int()),
            consume_wait: Duration::from_millis(CONSUME_WAIT_MS.default_int()),
            client_id: "__remote_log_metadata_client".to_string(),
            failed_deletions_topic: DEFAULT_FAILED_DELETIONS_TOPIC.to_string(),
        }
    }

    /// The same settings on topic `topic`.
    pub fn with_topic(mut self, topic: impl Into<String>) -> Self {
        self.topic = topic.into();
        self
    }

    /// The same settings with `partitions` metadata partitions.
    pub fn with_partitions(mut self, partitions: u32) -> Self {
        self.partitions = partitions;
        self
    }

    /// The same settings with replication factor `replication_factor`.
    pub fn with_replication_factor(mut self, replication_factor: i16) -> Self {
        self.replication_factor = replication_factor;
        self
    }

    /// The same settings with the partition formula `formula`.
    pub fn with_partition_formula(mut self, formula: PartitionFormula) -> Self {
        self.partition_formula = formula;
        self
    }

    /// The same settings with a snapshot every `events` applied events.
    pub fn with_snapshot_interval(mut self, events: u64) -> Self {
        self.snapshot_interval_events = events.max(1);
        self
    }

    /// The same settings with the failed-deletions topic `topic`.
    pub fn with_failed_deletions_topic(mut self, topic: impl Into<String>) -> Self {
        self.failed_deletions_topic = topic.into();
        self
    }

    /// Settings from the manager's string map (the broker's `rlmm.config.` keys with the prefix removed,
    /// plus `bootstrap.servers`, `broker.id` and `log.dir(s)`, which the broker passes too). Kafka's keys
    /// keep their names; ours are listed with the constants of this module. Other keys (Kafka's producer
    /// and consumer settings) are not read. An error names the key.
    pub fn from_map(props: &HashMap<String, String>) -> Result<Self> {
        let props: BTreeMap<String, String> = props.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut r = ConfigReader::new(&props);
        let servers = match r.string(BOOTSTRAP_SERVERS.key) {
            Some(s) => s,
            None => r.required(COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY).map_err(|_| {
                Error::config(BOOTSTRAP_SERVERS.key, format!("is required (or {COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY})"))
            })?,
        };
        let bootstrap_servers = split_servers(servers);
        if bootstrap_servers.is_empty() {
            return Err(Error::config(BOOTSTRAP_SERVERS.key, "names no broker"));
        }
        let snapshot_dir = match r.string(SNAPSHOT_DIR.key) {
            Some(d) => PathBuf::from(d),
            None => log_dir(&mut r)?,
        };
        let mut c = KafkaMetadataConfig::new(servers, snapshot_dir);
        c.bootstrap_servers = bootstrap_servers;
        if let Some(t) = r.string(TOPIC_NAME.key) {
            c.topic = valid_topic(TOPIC_NAME.key, t)?;
        }
        c.partitions = r.get_int(&PARTITIONS)?;
        c.replication_factor = r.get_int(&REPLICATION_FACTOR)?;
        // Kafka's check, not a range: -1 or positive.
        c.retention_ms = r.parse(RETENTION_MS.key, RETENTION_MS.default_int::<i64>(), "an integer")?;
        if c.retention_ms != -1 && c.retention_ms <= 0 {
            return Err(Error::config(RETENTION_MS.key, format!("{} is neither -1 nor positive", c.retention_ms)));
        }
        c.consume_wait = Duration::from_millis(r.get_int(&CONSUME_WAIT_MS)?);
        c.request_timeout = Duration::from_millis(r.get_int(&REQUEST_TIMEOUT_MS)?);
        c.snapshot_interval_events = r.get_int(&SNAPSHOT_INTERVAL)?;
        c.partition_formula = match r.string(PARTITION_FORMULA.key) {
            None => PartitionFormula::Kafka,
            Some(v) if v.eq_ignore_ascii_case("kafka") => PartitionFormula::Kafka,
            Some(v) if v.eq_ignore_ascii_case("seeds") => PartitionFormula::Seeds,
            Some(v) => return Err(Error::config(PARTITION_FORMULA.key, format!("`{v}` is not kafka or seeds"))),
        };
        if let Some(t) = r.string(FAILED_DELETIONS_TOPIC.key) {
            c.failed_deletions_topic = valid_topic(FAILED_DELETIONS_TOPIC.key, t)?;
        }
        if let Some(id) = r.string(BROKER_ID_KEY) {
            c.client_id = format!("__remote_log_metadata_client_{id}");
        }
        Ok(c)
    }

    /// The snapshot file of metadata partition `partition`.
    pub fn snapshot_path(&self, partition: i32) -> PathBuf {
        snapshot_file(&self.snapshot_dir, &self.topic, partition)
    }
}

fn split_servers(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

fn valid_topic(key: &str, t: &str) -> Result<String> {
    let ok = t.len() <= 249 && t.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok || t == "." || t == ".." {
        return Err(Error::config(key, format!("`{t}` is not a valid topic name")));
    }
    Ok(t.to_string())
}

/// Kafka's `getLogDirectory`: `log.dirs`, else `log.dir`; exactly one directory.
fn log_dir(r: &mut ConfigReader<'_>) -> Result<PathBuf> {
    let (key, dirs) = match r.string(LOG_DIRS_KEY) {
        Some(d) => (LOG_DIRS_KEY, d),
        None => match r.string(LOG_DIR_KEY) {
            Some(d) => (LOG_DIR_KEY, d),
            None => {
                return Err(Error::config(
                    SNAPSHOT_DIR.key,
                    format!("is required when neither {LOG_DIRS_KEY} nor {LOG_DIR_KEY} is set"),
                ));
            }
        },
    };
    let dirs: Vec<&str> = dirs.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
    match dirs.as_slice() {
        [one] => Ok(PathBuf::from(one)),
        [] => Err(Error::config(key, "names no directory")),
        _ => Err(Error::config(key, "names several directories; set one with remote.log.metadata.snapshot.dir")),
    }
}

/// The path where [`KafkaMetadataManager`](super::KafkaMetadataManager) keeps metadata partition `partition`'s snapshot under `dir`.
pub fn snapshot_file(dir: &Path, topic: &str, partition: i32) -> PathBuf {
    dir.join(format!("{topic}-{partition}.snapshot"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn settings_default_to_kafkas() {
        let c =
            KafkaMetadataConfig::from_map(&map(&[("bootstrap.servers", "a:9092, b:9092"), ("log.dir", "/x")])).unwrap();
        assert_eq!(c.bootstrap_servers, vec!["a:9092", "b:9092"]);
        assert_eq!(c.topic, "__remote_log_metadata");
        assert_eq!((c.partitions, c.replication_factor, c.retention_ms), (50, 3, -1));
        assert_eq!(c.partition_formula, PartitionFormula::Kafka);
        assert_eq!(c.consume_wait, Duration::from_secs(120));
        assert_eq!(c.snapshot_path(7), PathBuf::from("/x/__remote_log_metadata-7.snapshot"));
        assert_eq!(c.failed_deletions_topic, "__remote_segments_to_be_deleted");
    }

    #[test]
    fn settings_are_read_from_kafkas_keys_and_ours() {
        let c = KafkaMetadataConfig::from_map(&map(&[
            (COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY, "k:1"),
            (LOG_DIRS_KEY, "/logs"),
            (SNAPSHOT_DIR.key, "/snapshots"),
            (TOPIC_NAME.key, "meta"),
            (PARTITIONS.key, "3"),
            (REPLICATION_FACTOR.key, "1"),
            (RETENTION_MS.key, "1000"),
            (CONSUME_WAIT_MS.key, "5000"),
            (PARTITION_FORMULA.key, "Seeds"),
            (BROKER_ID_KEY, "4"),
            ("remote.log.metadata.producer.linger.ms", "5"),
        ]))
        .unwrap();
        assert_eq!(c.bootstrap_servers, vec!["k:1"]);
        assert_eq!(c.snapshot_dir, PathBuf::from("/snapshots"));
        assert_eq!((c.topic.as_str(), c.partitions, c.replication_factor, c.retention_ms), ("meta", 3, 1, 1000));
        assert_eq!(c.consume_wait, Duration::from_secs(5));
        assert_eq!(c.partition_formula, PartitionFormula::Seeds);
        assert_eq!(c.client_id, "__remote_log_metadata_client_4");
    }

    #[test]
    fn a_bad_setting_is_an_error_naming_its_key() {
        let base = [("bootstrap.servers", "a:1"), ("log.dir", "/x")];
        let cases: &[(&str, &str)] = &[
            (PARTITIONS.key, "0"),
            (PARTITIONS.key, "many"),
            (REPLICATION_FACTOR.key, "0"),
            (RETENTION_MS.key, "-5"),
            (PARTITION_FORMULA.key, "random"),
            (TOPIC_NAME.key, "no spaces"),
            (CONSUME_WAIT_MS.key, ""),
        ];
        for (key, value) in cases {
            let mut m = map(&base);
            m.insert(key.to_string(), value.to_string());
            let err = KafkaMetadataConfig::from_map(&m).unwrap_err();
            assert_eq!(err.config_key(), Some(*key), "{key}={value}: {err}");
        }
        let err = KafkaMetadataConfig::from_map(&map(&[("log.dir", "/x")])).unwrap_err();
        assert_eq!(err.config_key(), Some(BOOTSTRAP_SERVERS.key));
        let err = KafkaMetadataConfig::from_map(&map(&[("bootstrap.servers", "a:1")])).unwrap_err();
        assert_eq!(err.config_key(), Some(SNAPSHOT_DIR.key));
        let err =
            KafkaMetadataConfig::from_map(&map(&[("bootstrap.servers", "a:1"), ("log.dirs", "/a,/b")])).unwrap_err();
        assert_eq!(err.config_key(), Some(LOG_DIRS_KEY));
    }
}
