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
//!   `cleanup.policy=delete` and `retention.ms` from [`RETENTION_MS`] (-1: kept forever, SR-29), the
//!   failed-deletions topic with `cleanup.policy=compact`; an existing metadata topic whose retention is not
//!   the configured one is reported with a warning at open (Kafka's own manager does not check it).
//! - No consumer groups, no idempotent producer: positions are kept in the snapshots, and a produce retried
//!   after a lost acknowledgement may store an event twice, which the state machines accept (a state may
//!   repeat) or refuse and skip.

mod client;
mod config;
mod consume;
mod failed_deletions;
mod topic_reader;

pub use config::*;
pub use failed_deletions::KafkaFailedDeletions;
pub use topic_reader::{TopicRecord, read_segments, read_topic};

use client::{FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS, connect, ensure_topic, find_topic, kafka_error, now, within};

use crate::cache::{MetadataStore, PartitionState};
use crate::events::{MetadataEvent, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata};
use crate::partitioner::metadata_partition;
use crate::{RemoteLogMetadataManager, records, snapshot};
use async_trait::async_trait;
use rskafka::client::Client;
use rskafka::client::error::{Error as KafkaError, ProtocolError};
use rskafka::client::partition::{Compression, OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::record::Record;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentMetadata, TopicIdPartition};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use tokio::sync::Mutex;

/// Whether a user partition is served as leader (this host writes it) or follower.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Leader,
    Follower,
}

/// What a manager was opened for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Access {
    /// [`KafkaMetadataManager::open`]: topic and snapshot directory created, events published, snapshots saved.
    ReadWrite,
    /// [`KafkaMetadataManager::open_read_only`]: nothing created, published or saved.
    ReadOnly,
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
    access: Access,
    /// Opened with [`KafkaMetadataManager::open_read_only_or_empty`] on a cluster without the topic: every
    /// metadata partition is empty and nothing is fetched.
    topic_missing: bool,
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
            .field("read_only", &(self.access == Access::ReadOnly))
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
        Self::open_as(config, Access::ReadWrite, false).await
    }

    /// Connects to read an existing metadata topic only (a reader beside the brokers: `rsm offsets`,
    /// `rsm read`): nothing is created or changed on the cluster or on disk.
    ///
    /// - A missing metadata topic is a not-found error naming it and the bootstrap servers (nothing was
    ///   tiered through it); it is not created.
    /// - The partition count is the topic's: it is the one the brokers route with (Kafka's manager refuses
    ///   to start on another), so a configured count that differs is logged and replaced, not refused.
    /// - The snapshot directory is not created and no snapshot is written (not by catch-ups,
    ///   [`save_snapshots`](Self::save_snapshots) or [`close`](RemoteLogMetadataManager::close)); snapshots
    ///   already in it are read, as [`open`](Self::open) does.
    /// - Publishing an event is refused with an invalid-argument error saying it was opened to read only.
    pub async fn open_read_only(config: KafkaMetadataConfig) -> Result<Self> {
        Self::open_as(config, Access::ReadOnly, false).await
    }

    /// As [`open_read_only`](Self::open_read_only), but a missing metadata topic reads as one without events
    /// (what a dry run before the first run plans with): still nothing is created.
    pub async fn open_read_only_or_empty(config: KafkaMetadataConfig) -> Result<Self> {
        Self::open_as(config, Access::ReadOnly, true).await
    }

    async fn open_as(mut config: KafkaMetadataConfig, access: Access, empty_if_missing: bool) -> Result<Self> {
        if config.partitions == 0 {
            return Err(Error::config(PARTITIONS.key, "must be at least 1"));
        }
        if access == Access::ReadWrite {
            std::fs::create_dir_all(&config.snapshot_dir)
                .map_err(|e| Error::from_io(format!("snapshot directory {}", config.snapshot_dir.display()), e))?;
        }
        let client = connect(&config).await?;
        let existing = match access {
            Access::ReadWrite => {
                ensure_topic(
                    &client,
                    &config,
                    &config.topic,
                    config.partitions,
                    config.replication_factor,
                    &[("cleanup.policy", "delete".to_string()), ("retention.ms", config.retention_ms.to_string())],
                )
                .await?
            }
            Access::ReadOnly => match find_topic(&client, &config, &config.topic).await? {
                Some(n) => n,
                None if empty_if_missing => {
                    tracing::info!(topic = %config.topic, "the metadata topic does not exist: read as empty");
                    return Ok(Self::new(config, access, client, true));
                }
                None => {
                    return Err(Error::not_found(format!(
                        "the metadata topic {} does not exist on the Kafka cluster at {}: nothing was tiered \
                         through it",
                        config.topic,
                        config.bootstrap_servers.join(",")
                    )));
                }
            },
        };
        if existing != config.partitions as usize {
            if access == Access::ReadOnly {
                tracing::info!(topic = %config.topic, existing, configured = config.partitions,
                    "the metadata topic has another partition count than configured: reading with the topic's");
                config.partitions = u32::try_from(existing)
                    .map_err(|_| Error::corrupt(format!("topic {} has {existing} partitions", config.topic)))?;
            } else {
                tracing::error!(topic = %config.topic, existing, configured = config.partitions,
                    "the metadata topic has another partition count than configured");
                return Err(Error::config(
                    PARTITIONS.key,
                    format!(
                        "is {} but topic {} has {existing} partitions; configure {existing} (Kafka's manager \
                         refuses to start too)",
                        config.partitions, config.topic
                    ),
                ));
            }
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
                    "the metadata topic's retention.ms is not the configured one: records older than it are deleted, \
                     and the segment states they hold are lost with them");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(topic = %config.topic, error = %e.full_message(), "could not read the metadata topic's configs")
            }
        }
        let read_only = access == Access::ReadOnly;
        tracing::info!(topic = %config.topic, partitions = config.partitions, read_only, "Kafka metadata manager ready");
        Ok(Self::new(config, access, client, false))
    }

    fn new(config: KafkaMetadataConfig, access: Access, client: Client, topic_missing: bool) -> Self {
        let metas = (0..config.partitions as i32)
            .map(|index| Mutex::new(MetaPartition { index, client: None, state: None }))
            .collect();
        KafkaMetadataManager {
            config,
            access,
            topic_missing,
            client,
            metas,
            registered: RwLock::new(HashMap::new()),
            ready: AtomicBool::new(true),
            closed: AtomicBool::new(false),
            records_fetched: AtomicU64::new(0),
        }
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

    /// Whether it was opened with [`open_read_only`](Self::open_read_only).
    pub fn is_read_only(&self) -> bool {
        self.access == Access::ReadOnly
    }

    /// Saves a snapshot of every metadata partition read since its last one; a manager opened to read only
    /// saves none.
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

    /// Checks, produces and reads back one event.
    async fn write(&self, event: MetadataEvent) -> Result<()> {
        self.check_open()?;
        if self.access == Access::ReadOnly {
            let what = match &event {
                MetadataEvent::Segment(m) => format!("the new segment {}", m.remote_log_segment_id),
                MetadataEvent::SegmentUpdate(u) => format!("the update of segment {}", u.remote_log_segment_id),
                MetadataEvent::PartitionDelete(d) => format!("the deletion of partition {}", d.topic_id_partition),
                _ => "the event".to_string(),
            };
            return Err(Error::invalid(format!(
                "the Kafka metadata manager of topic {} was opened to read only: {what} is not published",
                self.config.topic
            ))
            .with_operation("remote log metadata"));
        }
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

    /// Open and registered: a partition is registered only once its metadata partition is caught up to the
    /// high watermark read when it was assigned (Kafka's `ConsumerTask` marks it initialized then).
    fn is_partition_ready(&self, partition: &TopicIdPartition) -> bool {
        self.is_ready() && self.registered.read().unwrap_or_else(|e| e.into_inner()).contains_key(partition)
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
