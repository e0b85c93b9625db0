//! A [`RemoteLogMetadataManager`] over a real Kafka topic, as Kafka's `TopicBasedRemoteLogMetadataManager`
//! keeps it: `__remote_log_metadata` (SR-29) with one record per event, its value Kafka's
//! `RemoteLogMetadataSerde` bytes ([`records::encode`]) and no key (Kafka's `ProducerManager` sends a
//! `null` key), in the metadata partition the user partition maps to (SR-30, [`partitioner`](crate::partitioner)). A JVM broker
//! and this manager can share one topic.
//!
//! # State (SR-31)
//!
//! Each metadata partition this host reads has a [`MetadataStore`] of every user partition in it, and the
//! offset of the next record to read. Catching up applies every record in offset order (other writers'
//! too) with [`MetadataStore::apply`]; an event Kafka's rules refuse, or a record that does not decode, is
//! logged with its offset and skipped, as Kafka's cache drops it. After a catch-up that applied
//! [`KafkaMetadataConfig::snapshot_interval_events`] events or more, and on [`RemoteLogMetadataManager::close`],
//! the state is saved with [`snapshot::save`] to `<snapshot dir>/<topic>-<partition>.snapshot`; the first use
//! of a metadata partition after a restart loads it and reads only what came after. A snapshot older than
//! the topic's log start (retention removed records it did not hold), ahead of the topic's end (another
//! topic of the same name), or damaged, is logged and the partition is read from its start.
//!
//! # Consistency
//!
//! A write checks the event against the state caught up to the current end of its metadata partition
//! ([`MetadataStore::check`]: a bad transition is refused before anything is produced), produces it
//! (acks=all), and catches the metadata partition up past the produced offset before it returns, so a read
//! that follows sees it; if another writer's event got in first and Kafka's rules then refuse ours, the write
//! fails. Reads are served for registered partitions only ([`RemoteLogMetadataManager::on_partition_leadership_changes`]);
//! registering catches the metadata partitions up to their high watermark, and a read of a follower
//! partition catches its metadata partition up to the current high watermark first (bounded by
//! [`KafkaMetadataConfig::consume_wait`]), so follower reads are strongly consistent without a background
//! consumer. Leader reads are served from memory: this host writes their events.
//!
//! # Why rskafka
//!
//! The client is [rskafka](https://docs.rs/rskafka): pure Rust on the tokio runtime the crate already
//! uses, with partition clients that fetch from an explicit offset and report the high watermark — exactly
//! what a position kept in a snapshot needs. rdkafka would build librdkafka (C, cmake; slow on small build
//! machines), bring its own threads beside tokio's, and hide offsets behind consumer groups we do not want.
//! It is built without its compression features: the records this manager writes are uncompressed (a JVM
//! producer's default, `compression.type=none`, too); a compressed batch on the topic fails to fetch with an
//! error naming the codec.
//!
//! # Limits of rskafka 0.6 met here
//!
//! - Its `create_topic` sends no topic configs, and it has no `DescribeConfigs`: both are one request each
//!   in [`admin`](crate::admin) (kafka-protocol's encoding). The metadata topic is created with
//!   `cleanup.policy=delete` and `retention.ms` from [`RETENTION_MS_KEY`] (-1: kept forever, SR-29), the
//!   failed-deletions topic with `cleanup.policy=compact`; an existing metadata topic whose retention is not
//!   the configured one is reported with a warning at open (Kafka's own manager does not check it).
//! - No consumer groups, no idempotent producer: positions are kept in the snapshots, and a produce retried
//!   after a lost acknowledgement may store an event twice, which the state machines accept (a state may
//!   repeat) or refuse and skip.

use crate::cache::{MetadataStore, PartitionState};
use crate::events::{MetadataEvent, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata};
use crate::partitioner::{PartitionFormula, metadata_partition};
use crate::{RemoteLogMetadataManager, records, snapshot};
use async_trait::async_trait;
use rskafka::BackoffConfig;
use rskafka::chrono::{DateTime, Utc};
use rskafka::client::error::{Error as KafkaError, ProtocolError};
use rskafka::client::partition::{Compression, OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::Record;
use rsm_core::config::ConfigReader;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::Mutex;

/// The topic of failed deletions (SR-35).
pub use crate::records::FAILED_DELETIONS_TOPIC as DEFAULT_FAILED_DELETIONS_TOPIC;
/// Kafka's metadata topic name (`TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_NAME`).
pub use crate::records::METADATA_TOPIC as DEFAULT_TOPIC;

/// `bootstrap.servers`: the brokers to connect to, comma separated (required).
pub const BOOTSTRAP_SERVERS_KEY: &str = "bootstrap.servers";
/// The same under Kafka's prefix for its manager's clients (`remote.log.metadata.common.client.`).
pub const COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY: &str = "remote.log.metadata.common.client.bootstrap.servers";
/// The metadata topic's name. Kafka's own manager has no such key (its topic is always
/// `__remote_log_metadata`); this one is ours, for tests and side-by-side clusters.
pub const TOPIC_NAME_KEY: &str = "remote.log.metadata.topic.name";
/// Kafka's key: partitions of the metadata topic (default 50).
pub const PARTITIONS_KEY: &str = "remote.log.metadata.topic.num.partitions";
/// Kafka's key: replication factor of the metadata topic (default 3).
pub const REPLICATION_FACTOR_KEY: &str = "remote.log.metadata.topic.replication.factor";
/// Kafka's key: retention of the metadata topic (default -1, unlimited), set when this manager creates the
/// topic. Validated as Kafka does.
pub const RETENTION_MS_KEY: &str = "remote.log.metadata.topic.retention.ms";
/// Kafka's key: how long a write waits for the event to be read back (default 120 s); here also the bound
/// of a catch-up.
pub const CONSUME_WAIT_MS_KEY: &str = "remote.log.metadata.publish.wait.ms";
/// Ours: the partition formula, `kafka` (default, Kafka as shipped) or `seeds` (SR-30).
pub const PARTITION_FORMULA_KEY: &str = "remote.log.metadata.topic.partition.formula";
/// Ours: where the snapshots are kept; defaults to Kafka's `log.dir`/`log.dirs` (one directory).
pub const SNAPSHOT_DIR_KEY: &str = "remote.log.metadata.snapshot.dir";
/// Ours: events applied between two snapshots of a metadata partition (default 10,000).
pub const SNAPSHOT_INTERVAL_KEY: &str = "remote.log.metadata.snapshot.interval.events";
/// Ours: the bound of one Kafka request with its retries (default 30 s).
pub const REQUEST_TIMEOUT_MS_KEY: &str = "remote.log.metadata.request.timeout.ms";
/// Ours: the failed-deletions topic (default `__remote_segments_to_be_deleted`).
pub const FAILED_DELETIONS_TOPIC_KEY: &str = "remote.log.metadata.failed.deletions.topic.name";
/// Kafka's `log.dirs`, the snapshot directory when [`SNAPSHOT_DIR_KEY`] is not set.
pub const LOG_DIRS_KEY: &str = "log.dirs";
/// Kafka's `log.dir`, read when `log.dirs` is not set.
pub const LOG_DIR_KEY: &str = "log.dir";
/// Kafka's `broker.id`, in the client id as Kafka puts it there.
pub const BROKER_ID_KEY: &str = "broker.id";

/// Bytes asked of one fetch.
const FETCH_MAX_BYTES: i32 = 8 * 1024 * 1024;
/// How long the broker may hold a fetch that finds nothing yet.
const FETCH_MAX_WAIT_MS: i32 = 500;

/// Settings of [`KafkaMetadataManager`] and [`KafkaFailedDeletions`].
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
            partitions: 50,
            replication_factor: 3,
            retention_ms: -1,
            partition_formula: PartitionFormula::Kafka,
            snapshot_dir: snapshot_dir.into(),
            snapshot_interval_events: 10_000,
            request_timeout: Duration::from_secs(30),
            consume_wait: Duration::from_secs(120),
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
        let servers = match r.string(BOOTSTRAP_SERVERS_KEY) {
            Some(s) => s,
            None => r.required(COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY).map_err(|_| {
                Error::config(BOOTSTRAP_SERVERS_KEY, format!("is required (or {COMMON_CLIENT_BOOTSTRAP_SERVERS_KEY})"))
            })?,
        };
        let bootstrap_servers = split_servers(servers);
        if bootstrap_servers.is_empty() {
            return Err(Error::config(BOOTSTRAP_SERVERS_KEY, "names no broker"));
        }
        let snapshot_dir = match r.string(SNAPSHOT_DIR_KEY) {
            Some(d) => PathBuf::from(d),
            None => log_dir(&mut r)?,
        };
        let mut c = KafkaMetadataConfig::new(servers, snapshot_dir);
        c.bootstrap_servers = bootstrap_servers;
        if let Some(t) = r.string(TOPIC_NAME_KEY) {
            c.topic = valid_topic(TOPIC_NAME_KEY, t)?;
        }
        c.partitions = r.int_in(PARTITIONS_KEY, 50u32, 1..=100_000)?;
        c.replication_factor = r.int_in(REPLICATION_FACTOR_KEY, 3i16, 1..=i16::MAX)?;
        c.retention_ms = r.parse(RETENTION_MS_KEY, -1i64, "an integer")?;
        if c.retention_ms != -1 && c.retention_ms <= 0 {
            return Err(Error::config(RETENTION_MS_KEY, format!("{} is neither -1 nor positive", c.retention_ms)));
        }
        c.consume_wait = Duration::from_millis(r.int_in(CONSUME_WAIT_MS_KEY, 120_000u64, 1..=u64::MAX / 2)?);
        c.request_timeout = Duration::from_millis(r.int_in(REQUEST_TIMEOUT_MS_KEY, 30_000u64, 1..=u64::MAX / 2)?);
        c.snapshot_interval_events = r.int_in(SNAPSHOT_INTERVAL_KEY, 10_000u64, 1..=u64::MAX)?;
        c.partition_formula = match r.string(PARTITION_FORMULA_KEY) {
            None => PartitionFormula::Kafka,
            Some(v) if v.eq_ignore_ascii_case("kafka") => PartitionFormula::Kafka,
            Some(v) if v.eq_ignore_ascii_case("seeds") => PartitionFormula::Seeds,
            Some(v) => return Err(Error::config(PARTITION_FORMULA_KEY, format!("`{v}` is not kafka or seeds"))),
        };
        if let Some(t) = r.string(FAILED_DELETIONS_TOPIC_KEY) {
            c.failed_deletions_topic = valid_topic(FAILED_DELETIONS_TOPIC_KEY, t)?;
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
                    SNAPSHOT_DIR_KEY,
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

/// An rskafka error as ours: connection trouble and timeouts are transient.
fn kafka_error(what: String, e: KafkaError) -> Error {
    match &e {
        KafkaError::Connection(_) | KafkaError::Request(_) | KafkaError::Timeout | KafkaError::RetryFailed(_) => {
            Error::retriable(what, e)
        }
        _ => Error::storage(what, e),
    }
}

/// Runs `f` within `limit`, or fails naming `what`.
async fn within<T>(limit: Duration, what: impl Fn() -> String, f: impl Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(Error::retriable(format!("{} did not finish within {limit:?}", what()), KafkaError::Timeout)),
    }
}

/// A client whose retries end after `request_timeout`.
async fn connect(config: &KafkaMetadataConfig) -> Result<Client> {
    let backoff = BackoffConfig {
        init_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_secs(2),
        base: 2.0,
        deadline: Some(config.request_timeout),
    };
    let servers = config.bootstrap_servers.join(",");
    let build = async {
        ClientBuilder::new(config.bootstrap_servers.clone())
            .client_id(config.client_id.as_str())
            .backoff_config(backoff)
            .build()
            .await
            .map_err(|e| kafka_error(format!("connecting to Kafka at {servers}"), e))
    };
    within(config.request_timeout, || format!("connecting to Kafka at {servers}"), build).await
}

/// The partition count of `topic`, creating it with `partitions`, `replication_factor` and the topic
/// `configs` when missing ([`admin::create_topic`](crate::admin): rskafka can not send topic configs).
async fn ensure_topic(
    client: &Client,
    config: &KafkaMetadataConfig,
    topic: &str,
    partitions: u32,
    replication_factor: i16,
    configs: &[(&str, String)],
) -> Result<usize> {
    let timeout = config.request_timeout;
    let find = || async {
        let topics = within(timeout, || format!("listing topics for {topic}"), async {
            client.list_topics().await.map_err(|e| kafka_error(format!("listing topics for {topic}"), e))
        })
        .await?;
        Ok::<_, Error>(topics.into_iter().find(|t| t.name == topic).map(|t| t.partitions.len()))
    };
    if let Some(n) = find().await? {
        return Ok(n);
    }
    let new = crate::admin::NewTopic { name: topic, partitions: partitions as i32, replication_factor, configs };
    if crate::admin::create_topic(&config.bootstrap_servers, &config.client_id, &new, timeout).await? {
        tracing::info!(topic, partitions, replication_factor, ?configs, "created topic {topic}");
    }
    // Listed once the brokers know it (created now, or by another host meanwhile).
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(n) = find().await? {
            return Ok(n);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::retriable(
                format!("topic {topic} was created but is not listed yet"),
                KafkaError::Timeout,
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Now, as a record timestamp (rskafka's chrono has no clock feature).
fn now() -> DateTime<Utc> {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// Whether a user partition is served as leader (this host writes it) or follower.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Leader,
    Follower,
}

/// One metadata partition as this host reads it.
struct MetaPartition {
    index: i32,
    client: Option<Arc<PartitionClient>>,
    /// `None` until the partition is first used (then loaded from its snapshot and caught up).
    state: Option<ConsumedState>,
}

struct ConsumedState {
    store: MetadataStore,
    next_offset: i64,
    applied_since_snapshot: u64,
    saved_offset: Option<i64>,
}

/// Kafka's `TopicBasedRemoteLogMetadataManager` over rskafka: see the [module](self).
pub struct KafkaMetadataManager {
    config: KafkaMetadataConfig,
    client: Client,
    metas: Vec<Mutex<MetaPartition>>,
    registered: RwLock<HashMap<TopicIdPartition, Role>>,
    ready: AtomicBool,
    closed: AtomicBool,
    records_fetched: AtomicU64,
}

impl std::fmt::Debug for KafkaMetadataManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaMetadataManager")
            .field("topic", &self.config.topic)
            .field("partitions", &self.metas.len())
            .field("ready", &self.ready.load(Ordering::Relaxed))
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl KafkaMetadataManager {
    /// Connects, creates the metadata topic if it is missing, and makes the snapshot directory. A topic
    /// that exists with another partition count is refused (a configuration error naming
    /// `remote.log.metadata.topic.num.partitions` and both counts), as Kafka's manager fails its
    /// initialization then: the formula would route events elsewhere than the other hosts do.
    pub async fn open(config: KafkaMetadataConfig) -> Result<Self> {
        if config.partitions == 0 {
            return Err(Error::config(PARTITIONS_KEY, "must be at least 1"));
        }
        std::fs::create_dir_all(&config.snapshot_dir)
            .map_err(|e| Error::from_io(format!("snapshot directory {}", config.snapshot_dir.display()), e))?;
        let client = connect(&config).await?;
        let existing = ensure_topic(
            &client,
            &config,
            &config.topic,
            config.partitions,
            config.replication_factor,
            &[("cleanup.policy", "delete".to_string()), ("retention.ms", config.retention_ms.to_string())],
        )
        .await?;
        if existing != config.partitions as usize {
            tracing::error!(topic = %config.topic, existing, configured = config.partitions,
                "the metadata topic has another partition count than configured");
            return Err(Error::config(
                PARTITIONS_KEY,
                format!(
                    "is {} but topic {} has {existing} partitions; configure {existing} (Kafka's manager refuses \
                     to start too)",
                    config.partitions, config.topic
                ),
            ));
        }
        // SR-29: records are kept forever unless configured otherwise; a topic made by hand may say else.
        match crate::admin::topic_configs(
            &config.bootstrap_servers,
            &config.client_id,
            &config.topic,
            config.request_timeout,
        )
        .await
        {
            Ok(configs) if configs.get("retention.ms") != Some(&config.retention_ms.to_string()) => {
                tracing::warn!(topic = %config.topic, retention_ms = ?configs.get("retention.ms"), configured = config.retention_ms,
                    "the metadata topic's retention.ms is not the configured one: records older than it are deleted,                      and the segment states they hold are lost with them");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(topic = %config.topic, error = %e.full_message(), "could not read the metadata topic's configs")
            }
        }
        let metas = (0..config.partitions as i32)
            .map(|index| Mutex::new(MetaPartition { index, client: None, state: None }))
            .collect();
        tracing::info!(topic = %config.topic, partitions = config.partitions, "Kafka metadata manager ready");
        Ok(KafkaMetadataManager {
            config,
            client,
            metas,
            registered: RwLock::new(HashMap::new()),
            ready: AtomicBool::new(true),
            closed: AtomicBool::new(false),
            records_fetched: AtomicU64::new(0),
        })
    }

    /// The settings.
    pub fn config(&self) -> &KafkaMetadataConfig {
        &self.config
    }

    /// The metadata partition of `partition`'s events.
    pub fn metadata_partition_of(&self, partition: &TopicIdPartition) -> i32 {
        metadata_partition(self.config.partition_formula, partition, self.config.partitions)
    }

    /// Records fetched from the metadata topic since open (every catch-up's records, decodable or not).
    pub fn records_fetched(&self) -> u64 {
        self.records_fetched.load(Ordering::Relaxed)
    }

    /// The next offset this host will read of metadata partition `partition`, if it has read it.
    pub async fn next_offset(&self, partition: i32) -> Option<i64> {
        let meta = self.metas.get(usize::try_from(partition).ok()?)?.lock().await;
        meta.state.as_ref().map(|s| s.next_offset)
    }

    /// Saves a snapshot of every metadata partition read since its last one.
    pub async fn save_snapshots(&self) -> Result<()> {
        for m in &self.metas {
            let mut meta = m.lock().await;
            self.save_snapshot(&mut meta)?;
        }
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::invalid(format!("the Kafka metadata manager of topic {} is closed", self.config.topic))
                .with_operation("remote log metadata"));
        }
        Ok(())
    }

    fn role(&self, partition: &TopicIdPartition) -> Result<Role> {
        self.check_open()?;
        let registered = self.registered.read().unwrap_or_else(|e| e.into_inner());
        registered.get(partition).copied().ok_or_else(|| {
            Error::not_found(format!(
                "partition {partition} is not registered on this host (neither leader nor follower): no remote log \
                 metadata is served for it"
            ))
        })
    }

    fn save_snapshot(&self, meta: &mut MetaPartition) -> Result<()> {
        let Some(state) = meta.state.as_mut() else { return Ok(()) };
        if state.saved_offset == Some(state.next_offset) {
            return Ok(());
        }
        let path = self.config.snapshot_path(meta.index);
        snapshot::save(&path, state.next_offset, &state.store)?;
        tracing::debug!(path = %path.display(), next_offset = state.next_offset, "saved metadata snapshot");
        state.saved_offset = Some(state.next_offset);
        state.applied_since_snapshot = 0;
        Ok(())
    }

    async fn partition_client(&self, meta: &mut MetaPartition) -> Result<Arc<PartitionClient>> {
        if let Some(c) = &meta.client {
            return Ok(Arc::clone(c));
        }
        let (topic, index) = (&self.config.topic, meta.index);
        let what = || format!("connecting to the leader of {topic}-{index}");
        let c = within(self.config.request_timeout, what, async {
            self.client
                .partition_client(topic.as_str(), index, UnknownTopicHandling::Retry)
                .await
                .map_err(|e| kafka_error(what(), e))
        })
        .await?;
        let c = Arc::new(c);
        meta.client = Some(Arc::clone(&c));
        Ok(c)
    }

    async fn offset(&self, client: &PartitionClient, at: OffsetAt) -> Result<i64> {
        let what = || format!("reading the {at:?} offset of {}-{}", client.topic(), client.partition());
        within(self.config.request_timeout, what, async {
            client.get_offset(at).await.map_err(|e| kafka_error(what(), e))
        })
        .await
    }

    /// Loads the metadata partition's snapshot, if it has not been read yet, and checks its position
    /// against the topic's offsets.
    async fn ensure_loaded(&self, meta: &mut MetaPartition, client: &PartitionClient) -> Result<()> {
        if meta.state.is_some() {
            return Ok(());
        }
        let path = self.config.snapshot_path(meta.index);
        let loaded = match snapshot::load(&path) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e.full_message(),
                    "the metadata snapshot is damaged: reading the partition from its start");
                None
            }
        };
        let earliest = self.offset(client, OffsetAt::Earliest).await?;
        let state = match loaded {
            Some(s) => {
                let latest = self.offset(client, OffsetAt::Latest).await?;
                if s.next_offset < earliest || s.next_offset > latest {
                    tracing::warn!(path = %path.display(), next_offset = s.next_offset, earliest, latest,
                        "the metadata snapshot's position is outside the topic's offsets: reading from the start");
                    None
                } else {
                    tracing::info!(path = %path.display(), next_offset = s.next_offset, "loaded metadata snapshot");
                    Some(ConsumedState {
                        store: s.store,
                        next_offset: s.next_offset,
                        applied_since_snapshot: 0,
                        saved_offset: Some(s.next_offset),
                    })
                }
            }
            None => None,
        };
        if state.is_none() && earliest > 0 {
            tracing::warn!(topic = %self.config.topic, partition = meta.index, earliest,
                "the metadata partition starts at {earliest}: the records before it are gone (retention or deleted \
                 records), and the state they held with them");
        }
        meta.state = Some(state.unwrap_or(ConsumedState {
            store: MetadataStore::new(),
            next_offset: earliest,
            applied_since_snapshot: 0,
            saved_offset: None,
        }));
        Ok(())
    }

    /// Reads metadata partition `meta` up to `target` (exclusive; `None`: its current high watermark),
    /// applying every event in order, within the consume wait. Returns the result of applying the record at
    /// `watch`, if it was read.
    async fn catch_up(
        &self,
        meta: &mut MetaPartition,
        target: Option<i64>,
        watch: Option<i64>,
    ) -> Result<Option<Result<()>>> {
        let (topic, index) = (self.config.topic.clone(), meta.index);
        let what = || format!("catching up with {topic}-{index}");
        // Boxed: the nested futures are otherwise too deep for the compiler's layout queries.
        within(self.config.consume_wait, what, Box::pin(self.catch_up_inner(meta, target, watch))).await
    }

    async fn catch_up_inner(
        &self,
        meta: &mut MetaPartition,
        target: Option<i64>,
        watch: Option<i64>,
    ) -> Result<Option<Result<()>>> {
        let client = self.partition_client(meta).await?;
        self.ensure_loaded(meta, &client).await?;
        let end = match target {
            Some(t) => t,
            None => self.offset(&client, OffsetAt::Latest).await?,
        };
        let mut watched = None;
        let (topic, index) = (client.topic().to_string(), meta.index);
        loop {
            let state = meta.state.as_mut().expect("loaded above");
            if state.next_offset >= end {
                break;
            }
            let from = state.next_offset;
            let fetched = client.fetch_records(from, 1..FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS).await;
            let (batch, high_watermark) = match fetched {
                Ok(r) => r,
                Err(KafkaError::ServerError { protocol_error: ProtocolError::OffsetOutOfRange, .. }) => {
                    let earliest = self.offset(&client, OffsetAt::Earliest).await?;
                    if from < earliest {
                        tracing::warn!(
                            topic,
                            partition = index,
                            from,
                            earliest,
                            "metadata records before {earliest} are gone (retention): reading from the start, the \
                             state of what they held is lost"
                        );
                        *state = ConsumedState {
                            store: MetadataStore::new(),
                            next_offset: earliest,
                            applied_since_snapshot: 0,
                            saved_offset: None,
                        };
                        continue;
                    }
                    return Err(Error::storage(
                        format!("reading {topic}-{index} at {from}: offset out of range (log start {earliest})"),
                        KafkaError::Timeout,
                    ));
                }
                Err(e) => return Err(kafka_error(format!("reading {topic}-{index} at {from}"), e)),
            };
            self.records_fetched.fetch_add(batch.len() as u64, Ordering::Relaxed);
            if batch.is_empty() && high_watermark <= from {
                // Nothing more yet (the target is past the end): the consume wait bounds the loop.
                continue;
            }
            for r in batch {
                let result = apply_record(&mut state.store, &topic, index, r.offset, r.record.value.as_deref());
                if watch == Some(r.offset) {
                    watched = Some(result);
                }
                state.next_offset = r.offset + 1;
                state.applied_since_snapshot += 1;
            }
        }
        let state = meta.state.as_ref().expect("loaded above");
        if state.applied_since_snapshot >= self.config.snapshot_interval_events
            && let Err(e) = self.save_snapshot(meta)
        {
            tracing::warn!(error = %e.full_message(), "could not save a metadata snapshot (kept in memory)");
        }
        Ok(watched)
    }

    /// Checks, produces and reads back one event.
    async fn write(&self, event: MetadataEvent) -> Result<()> {
        self.check_open()?;
        let Some(tp) = event.partition().cloned() else {
            return Err(Error::invalid("a snapshot record names no partition and is not written to the topic"));
        };
        let index = self.metadata_partition_of(&tp);
        let m = usize::try_from(index)
            .ok()
            .and_then(|i| self.metas.get(i))
            .ok_or_else(|| Error::invalid(format!("metadata partition {index} of {tp} is out of range")))?;
        let mut meta = m.lock().await;
        // The state as of the partition's current end, so the check sees every writer's events.
        self.catch_up(&mut meta, None, None).await?;
        meta.state.as_ref().expect("caught up").store.check(&event)?;
        let client = self.partition_client(&mut meta).await?;
        let record =
            Record { key: None, value: Some(records::encode(&event)), headers: BTreeMap::new(), timestamp: now() };
        let what = || format!("producing a metadata event of {tp} to {}-{index}", self.config.topic);
        let offsets = within(self.config.request_timeout, what, async {
            client.produce(vec![record], Compression::NoCompression).await.map_err(|e| kafka_error(what(), e))
        })
        .await?;
        let offset = *offsets.first().ok_or_else(|| Error::storage(what(), KafkaError::Timeout))?;
        tracing::debug!(partition = %tp, metadata_partition = index, offset, "produced metadata event");
        match self.catch_up(&mut meta, Some(offset + 1), Some(offset)).await? {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(e.context(format!(
                "the event stored at {}-{index} offset {offset} was refused when read back (another writer's event \
                 came first)",
                self.config.topic
            ))),
            None => Err(Error::storage(
                format!("the event produced at {}-{index} offset {offset} was not read back", self.config.topic),
                KafkaError::Timeout,
            )),
        }
    }

    /// Runs `f` on the state of a registered partition, caught up first when this host follows it.
    async fn read<T>(&self, partition: &TopicIdPartition, f: impl FnOnce(Option<&PartitionState>) -> T) -> Result<T> {
        let role = self.role(partition)?;
        let index = self.metadata_partition_of(partition);
        let mut meta = self.metas[index as usize].lock().await;
        if role == Role::Follower || meta.state.is_none() {
            self.catch_up(&mut meta, None, None).await?;
        }
        Ok(f(meta.state.as_ref().and_then(|s| s.store.partition(partition))))
    }
}

/// Decodes and applies one record; a record that fails to decode or that Kafka's rules refuse is logged
/// and skipped. Returns what applying it gave.
/// One record of a metadata topic as [`read_topic`] found it.
#[derive(Debug)]
pub struct TopicRecord {
    /// The metadata partition.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
    /// The event, or why the record's value does not decode.
    pub event: Result<MetadataEvent>,
}

/// Every record of a metadata topic, all its partitions from their start to their current end, in
/// partition then offset order (for tools: `rsm metadata`, `rsm audit`). Reads only; registers nothing.
pub async fn read_topic(config: &KafkaMetadataConfig) -> Result<Vec<TopicRecord>> {
    let client = connect(config).await?;
    let topic = config.topic.as_str();
    let listed = within(config.request_timeout, || format!("listing topics for {topic}"), async {
        client.list_topics().await.map_err(|e| kafka_error(format!("listing topics for {topic}"), e))
    })
    .await?;
    let partitions = listed
        .into_iter()
        .find(|t| t.name == topic)
        .map(|t| t.partitions.into_iter().collect::<BTreeSet<i32>>())
        .ok_or_else(|| Error::not_found(format!("topic {topic} on {}", config.bootstrap_servers.join(","))))?;
    let mut out = Vec::new();
    for partition in partitions {
        let what = || format!("reading {topic}-{partition}");
        let pc = within(config.request_timeout, what, async {
            client
                .partition_client(topic, partition, UnknownTopicHandling::Error)
                .await
                .map_err(|e| kafka_error(what(), e))
        })
        .await?;
        let offset =
            |at: OffsetAt| {
                let pc = &pc;
                within(config.request_timeout, what, async move {
                    pc.get_offset(at).await.map_err(|e| kafka_error(what(), e))
                })
            };
        let (mut next, end) = (offset(OffsetAt::Earliest).await?, offset(OffsetAt::Latest).await?);
        while next < end {
            let fetched = within(config.consume_wait, what, async {
                pc.fetch_records(next, 1..FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS).await.map_err(|e| kafka_error(what(), e))
            })
            .await?;
            let before = next;
            // A fetch returns whole batches: skip what was read already.
            for r in fetched.0.into_iter().filter(|r| r.offset >= before) {
                if r.offset >= end {
                    break;
                }
                let event = match r.record.value.as_deref() {
                    Some(v) => records::decode(v),
                    None => Err(Error::corrupt(format!(
                        "{topic}-{partition} offset {}: a record without a value",
                        r.offset
                    ))),
                };
                out.push(TopicRecord { partition, offset: r.offset, event });
                next = r.offset + 1;
            }
            if next == before {
                // Nothing readable before the end (control records only): the partition is read.
                break;
            }
        }
    }
    Ok(out)
}

fn apply_record(
    store: &mut MetadataStore,
    topic: &str,
    partition: i32,
    offset: i64,
    value: Option<&[u8]>,
) -> Result<()> {
    let Some(value) = value else {
        tracing::warn!(topic, partition, offset, "skipped a metadata record without a value");
        return Err(Error::corrupt(format!("{topic}-{partition} offset {offset}: a record without a value")));
    };
    let event = match records::decode(value) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(topic, partition, offset, error = %e.full_message(), "skipped a metadata record that does not decode");
            return Err(e);
        }
    };
    let result = store.apply(&event);
    if let Err(e) = &result {
        tracing::warn!(topic, partition, offset, error = %e.full_message(), "skipped a metadata event Kafka's rules refuse");
    }
    result
}

#[async_trait]
impl RemoteLogMetadataManager for KafkaMetadataManager {
    async fn add_remote_log_segment_metadata(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        self.write(MetadataEvent::Segment(metadata.clone())).await
    }

    async fn update_remote_log_segment_metadata(&self, update: &RemoteLogSegmentMetadataUpdate) -> Result<()> {
        self.write(MetadataEvent::SegmentUpdate(update.clone())).await
    }

    async fn put_remote_partition_delete_metadata(&self, metadata: &RemotePartitionDeleteMetadata) -> Result<()> {
        self.write(MetadataEvent::PartitionDelete(metadata.clone())).await
    }

    async fn list_remote_log_segments(&self, partition: &TopicIdPartition) -> Result<Vec<RemoteLogSegmentMetadata>> {
        self.read(partition, |p| p.map(PartitionState::segments).unwrap_or_default()).await
    }

    async fn list_remote_log_segments_for_epoch(
        &self,
        partition: &TopicIdPartition,
        leader_epoch: i32,
    ) -> Result<Vec<RemoteLogSegmentMetadata>> {
        self.read(partition, |p| p.map(|p| p.segments_for_epoch(leader_epoch)).unwrap_or_default()).await
    }

    async fn remote_log_segment_metadata(
        &self,
        partition: &TopicIdPartition,
        leader_epoch: i32,
        offset: i64,
    ) -> Result<Option<RemoteLogSegmentMetadata>> {
        self.read(partition, |p| p.and_then(|p| p.segment_for_offset(leader_epoch, offset).cloned())).await
    }

    async fn highest_offset_for_epoch(&self, partition: &TopicIdPartition, leader_epoch: i32) -> Result<Option<i64>> {
        self.read(partition, |p| p.and_then(|p| p.highest_offset_for_epoch(leader_epoch))).await
    }

    async fn remote_log_size(&self, partition: &TopicIdPartition, leader_epoch: i32) -> Result<u64> {
        self.read(partition, |p| p.map_or(0, |p| p.size_for_epoch(leader_epoch))).await
    }

    async fn earliest_log_offset(&self, partition: &TopicIdPartition) -> Result<Option<i64>> {
        self.read(partition, |p| p.and_then(PartitionState::earliest_offset)).await
    }

    async fn on_partition_leadership_changes(
        &self,
        leaders: &[TopicIdPartition],
        followers: &[TopicIdPartition],
    ) -> Result<()> {
        self.check_open()?;
        let all = leaders.iter().map(|p| (p, Role::Leader)).chain(followers.iter().map(|p| (p, Role::Follower)));
        let roles: Vec<(TopicIdPartition, Role)> = all.map(|(p, r)| (p.clone(), r)).collect();
        let indexes: BTreeSet<i32> = roles.iter().map(|(p, _)| self.metadata_partition_of(p)).collect();
        for index in indexes {
            let mut meta = self.metas[index as usize].lock().await;
            self.catch_up(&mut meta, None, None).await?;
        }
        let mut registered = self.registered.write().unwrap_or_else(|e| e.into_inner());
        registered.extend(roles);
        Ok(())
    }

    async fn on_stop_partitions(&self, partitions: &[TopicIdPartition]) -> Result<()> {
        self.check_open()?;
        let emptied: BTreeSet<i32> = {
            let mut registered = self.registered.write().unwrap_or_else(|e| e.into_inner());
            for p in partitions {
                registered.remove(p);
            }
            let still: BTreeSet<i32> = registered.keys().map(|p| self.metadata_partition_of(p)).collect();
            partitions.iter().map(|p| self.metadata_partition_of(p)).filter(|i| !still.contains(i)).collect()
        };
        // A metadata partition's state is one whole (its snapshot says "every event before this offset is
        // applied"): one user partition's state can not be dropped alone, so the whole metadata partition's
        // is, saved first, once none of its user partitions is served.
        for index in emptied {
            let mut meta = self.metas[index as usize].lock().await;
            self.save_snapshot(&mut meta)?;
            meta.state = None;
        }
        Ok(())
    }

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.closed.load(Ordering::Acquire)
    }

    async fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Err(Error::invalid(format!(
                "the Kafka metadata manager of topic {} is already closed",
                self.config.topic
            )));
        }
        self.ready.store(false, Ordering::Release);
        let mut first_error = None;
        for m in &self.metas {
            let mut meta = m.lock().await;
            if let Err(e) = self.save_snapshot(&mut meta) {
                tracing::warn!(error = %e.full_message(), "could not save a metadata snapshot at close");
                first_error.get_or_insert(e);
            }
            meta.state = None;
            meta.client = None;
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Failed deletions (SR-35) on a Kafka topic (`__remote_segments_to_be_deleted`, one partition): a record
/// per failed deletion keyed by the segment's id (its Kafka `Uuid` string), its value the full metadata as
/// [`records::encode`] writes a [`MetadataEvent::Segment`] (so a retry can delete it); a drained deletion is
/// a record with the same key and no value, so a compacted topic keeps only what is left to do.
pub struct KafkaFailedDeletions {
    topic: String,
    client: PartitionClient,
    timeout: Duration,
}

impl std::fmt::Debug for KafkaFailedDeletions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaFailedDeletions").field("topic", &self.topic).finish_non_exhaustive()
    }
}

impl KafkaFailedDeletions {
    /// Connects and creates the topic [`KafkaMetadataConfig::failed_deletions_topic`] if missing (one
    /// partition, the configured replication factor; not compacted: see the module's limits).
    pub async fn open(config: &KafkaMetadataConfig) -> Result<Self> {
        let client = connect(config).await?;
        let topic = config.failed_deletions_topic.clone();
        let n = ensure_topic(
            &client,
            config,
            &topic,
            1,
            config.replication_factor,
            &[("cleanup.policy", "compact".to_string())],
        )
        .await?;
        if n != 1 {
            tracing::warn!(topic, partitions = n, "the failed-deletions topic has several partitions: only 0 is used");
        }
        let what = || format!("connecting to the leader of {topic}-0");
        let pc = within(config.request_timeout, what, async {
            client
                .partition_client(topic.as_str(), 0, UnknownTopicHandling::Retry)
                .await
                .map_err(|e| kafka_error(what(), e))
        })
        .await?;
        Ok(KafkaFailedDeletions { topic, client: pc, timeout: config.request_timeout })
    }

    /// The record key of a segment.
    pub fn key(id: &RemoteLogSegmentId) -> String {
        id.id.to_string()
    }

    async fn produce(&self, key: String, value: Option<Vec<u8>>) -> Result<()> {
        let record = Record { key: Some(key.into_bytes()), value, headers: BTreeMap::new(), timestamp: now() };
        let what = || format!("producing to {}", self.topic);
        within(self.timeout, what, async {
            self.client.produce(vec![record], Compression::NoCompression).await.map_err(|e| kafka_error(what(), e))
        })
        .await
        .map(|_| ())
    }

    /// Records a segment whose deletion failed.
    pub async fn record(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        let value = records::encode(&MetadataEvent::Segment(metadata.clone()));
        self.produce(Self::key(&metadata.remote_log_segment_id), Some(value)).await
    }

    /// Marks a segment's failed deletion as done (a record with its key and no value).
    pub async fn drain(&self, id: &RemoteLogSegmentId) -> Result<()> {
        self.produce(Self::key(id), None).await
    }

    /// Every failed deletion recorded and not drained, in the order first recorded; the topic is read from
    /// its start to its current end.
    pub async fn list(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        let what = || format!("reading {}", self.topic);
        let offset = |at| async move {
            within(self.timeout, what, async { self.client.get_offset(at).await.map_err(|e| kafka_error(what(), e)) })
                .await
        };
        let mut next = offset(OffsetAt::Earliest).await?;
        let end = offset(OffsetAt::Latest).await?;
        // key -> (first offset, metadata)
        let mut pending: HashMap<Vec<u8>, (i64, RemoteLogSegmentMetadata)> = HashMap::new();
        let read = async {
            while next < end {
                let (batch, _) = self
                    .client
                    .fetch_records(next, 1..FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS)
                    .await
                    .map_err(|e| kafka_error(format!("reading {} at {next}", self.topic), e))?;
                for r in batch {
                    next = r.offset + 1;
                    let Some(key) = r.record.key else {
                        tracing::warn!(topic = %self.topic, offset = r.offset, "skipped a record without a key");
                        continue;
                    };
                    match r.record.value.as_deref().map(records::decode) {
                        None => {
                            pending.remove(&key);
                        }
                        Some(Ok(MetadataEvent::Segment(m))) => {
                            let first = pending.get(&key).map_or(r.offset, |(o, _)| *o);
                            pending.insert(key, (first, m));
                        }
                        Some(Ok(other)) => {
                            tracing::warn!(topic = %self.topic, offset = r.offset, event = ?other,
                                "skipped a record that holds no segment metadata");
                        }
                        Some(Err(e)) => {
                            tracing::warn!(topic = %self.topic, offset = r.offset, error = %e.full_message(),
                                "skipped a record that does not decode");
                        }
                    }
                }
            }
            Ok::<_, Error>(())
        };
        within(self.timeout, what, read).await?;
        let mut out: Vec<_> = pending.into_values().collect();
        out.sort_by_key(|(o, _)| *o);
        Ok(out.into_iter().map(|(_, m)| m).collect())
    }
}

/// The path where [`KafkaMetadataManager`] keeps metadata partition `partition`'s snapshot under `dir`.
pub fn snapshot_file(dir: &Path, topic: &str, partition: i32) -> PathBuf {
    dir.join(format!("{topic}-{partition}.snapshot"))
}

#[async_trait]
impl crate::failed_deletions::FailedDeletions for KafkaFailedDeletions {
    async fn record(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        KafkaFailedDeletions::record(self, metadata).await
    }

    async fn list(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        KafkaFailedDeletions::list(self).await
    }

    async fn drain(&self, id: &RemoteLogSegmentId) -> Result<()> {
        KafkaFailedDeletions::drain(self, id).await
    }
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
            (SNAPSHOT_DIR_KEY, "/snapshots"),
            (TOPIC_NAME_KEY, "meta"),
            (PARTITIONS_KEY, "3"),
            (REPLICATION_FACTOR_KEY, "1"),
            (RETENTION_MS_KEY, "1000"),
            (CONSUME_WAIT_MS_KEY, "5000"),
            (PARTITION_FORMULA_KEY, "Seeds"),
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
            (PARTITIONS_KEY, "0"),
            (PARTITIONS_KEY, "many"),
            (REPLICATION_FACTOR_KEY, "0"),
            (RETENTION_MS_KEY, "-5"),
            (PARTITION_FORMULA_KEY, "random"),
            (TOPIC_NAME_KEY, "no spaces"),
            (CONSUME_WAIT_MS_KEY, ""),
        ];
        for (key, value) in cases {
            let mut m = map(&base);
            m.insert(key.to_string(), value.to_string());
            let err = KafkaMetadataConfig::from_map(&m).unwrap_err();
            assert_eq!(err.config_key(), Some(*key), "{key}={value}: {err}");
        }
        let err = KafkaMetadataConfig::from_map(&map(&[("log.dir", "/x")])).unwrap_err();
        assert_eq!(err.config_key(), Some(BOOTSTRAP_SERVERS_KEY));
        let err = KafkaMetadataConfig::from_map(&map(&[("bootstrap.servers", "a:1")])).unwrap_err();
        assert_eq!(err.config_key(), Some(SNAPSHOT_DIR_KEY));
        let err =
            KafkaMetadataConfig::from_map(&map(&[("bootstrap.servers", "a:1"), ("log.dirs", "/a,/b")])).unwrap_err();
        assert_eq!(err.config_key(), Some(LOG_DIRS_KEY));
    }
}
