//! # rsm-metadata
//!
//! Kafka's `RemoteLogMetadataManager` (KIP-405, SR-14) for hosts without a JVM broker, and for operators
//! of JVM clusters who need to read what their brokers wrote:
//!
//! | part | module |
//! |---|---|
//! | the events a manager stores and their state machines | [`events`] |
//! | the manager contract (SR-14) | [`RemoteLogMetadataManager`] |
//! | topic creation with configs, and a topic's configs (what the Kafka client can not send) | [`admin`] |
//! | Kafka's record format on `__remote_log_metadata` (byte-compatible with a JVM broker) | [`records`] |
//! | the metadata partition of a user partition (SR-30: the seeds' formula and Kafka's) | [`partitioner`] |
//! | the per-partition state built from events (SR-31), with Kafka's query semantics | [`cache`] |
//! | the embedded default: a durable local metadata log, one host | [`local`] |
//! | snapshots of a metadata partition's state with its read position | [`snapshot`] |
//! | failed deletions (SR-35) | [`failed_deletions`] |
//! | the manager over a Kafka topic (rskafka), and failed deletions on a topic | [`kafka`] |
//!
//! The events are the same whatever holds them: a local log file stores each event as the exact bytes
//! Kafka would put in a record value, so a local log and a Kafka topic hold the same thing.

#![warn(missing_docs)]

pub mod admin;
pub mod cache;
pub mod events;
pub mod failed_deletions;
pub mod kafka;
pub mod local;
mod log_file;
pub mod partitioner;
pub mod records;
pub mod snapshot;

use async_trait::async_trait;
pub use events::{
    MetadataEvent, RemoteLogSegmentMetadataSnapshot, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
};
use rsm_core::error::Result;
use rsm_core::model::{RemoteLogSegmentMetadata, TopicIdPartition};

/// Kafka's `RemoteLogMetadataManager`: the lifecycle of every remote segment's metadata, with strongly
/// consistent reads for the partitions registered on this host.
///
/// Writes (`add`, `update`, `put_partition_delete`) return once the event is durable (fsynced to the local
/// log, or acknowledged by the Kafka topic) and applied to this host's state, so a read that follows sees
/// it. A partition must be registered (as leader or follower) before its segments are read; reads of a
/// partition that is not are a not-found error naming it.
#[async_trait]
pub trait RemoteLogMetadataManager: Send + Sync {
    /// Stores a new segment's metadata, which must be in state `COPY_SEGMENT_STARTED` (copy started).
    async fn add_remote_log_segment_metadata(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()>;

    /// Moves a segment to another state (copy finished, delete started, delete finished). A transition
    /// Kafka does not allow (`RemoteLogSegmentState::isValidTransition`) is an invalid-argument error naming
    /// both states and the segment, and nothing is stored; an update of an unknown segment is not found.
    async fn update_remote_log_segment_metadata(&self, update: &RemoteLogSegmentMetadataUpdate) -> Result<()>;

    /// Stores a partition delete event (marked, started, finished); a finished delete forgets the partition.
    async fn put_remote_partition_delete_metadata(&self, metadata: &RemotePartitionDeleteMetadata) -> Result<()>;

    /// Every segment of the partition that has not finished deletion, by start offset.
    async fn list_remote_log_segments(&self, partition: &TopicIdPartition) -> Result<Vec<RemoteLogSegmentMetadata>>;

    /// The segments holding offsets of `leader_epoch` (in any state but delete finished), by start offset.
    async fn list_remote_log_segments_for_epoch(
        &self,
        partition: &TopicIdPartition,
        leader_epoch: i32,
    ) -> Result<Vec<RemoteLogSegmentMetadata>>;

    /// The copied segment (`COPY_SEGMENT_FINISHED`) that holds `offset` in `leader_epoch`, if any.
    async fn remote_log_segment_metadata(
        &self,
        partition: &TopicIdPartition,
        leader_epoch: i32,
        offset: i64,
    ) -> Result<Option<RemoteLogSegmentMetadata>>;

    /// The highest offset of `leader_epoch` in the copied segments, if any.
    async fn highest_offset_for_epoch(&self, partition: &TopicIdPartition, leader_epoch: i32) -> Result<Option<i64>>;

    /// Bytes of the segments of `leader_epoch`, as Kafka's `remoteLogSize` counts them.
    async fn remote_log_size(&self, partition: &TopicIdPartition, leader_epoch: i32) -> Result<u64>;

    /// The lowest start offset of a copied segment of the partition, if any (SR-14 `earliestLogOffset`).
    async fn earliest_log_offset(&self, partition: &TopicIdPartition) -> Result<Option<i64>>;

    /// Starts serving the partitions: as leaders (this host writes their events) and as followers (this
    /// host reads what a leader wrote). Returns once their state is caught up.
    async fn on_partition_leadership_changes(
        &self,
        leaders: &[TopicIdPartition],
        followers: &[TopicIdPartition],
    ) -> Result<()>;

    /// Stops serving the partitions (their state is dropped from memory; nothing stored is removed).
    async fn on_stop_partitions(&self, partitions: &[TopicIdPartition]) -> Result<()>;

    /// Whether the manager is open and can serve reads at all (a closed manager is not).
    fn is_ready(&self) -> bool;

    /// Whether the manager is ready to serve `partition`'s remote log operations: KIP-1105's
    /// `RemoteLogMetadataManager.isReady(TopicIdPartition)`, which Kafka's `RemoteLogManager` asks before
    /// every run of a partition's copy, expiration and follower tasks (a run is skipped while it answers
    /// false). Kafka's topic-based manager answers true once the partition is assigned and its metadata
    /// partition has been read up to the end offset it had at the assignment, false for a partition not
    /// assigned and after close. The managers here answer the same: true from the return of a successful
    /// [`on_partition_leadership_changes`](Self::on_partition_leadership_changes) naming the partition
    /// (which returns once caught up) until [`on_stop_partitions`](Self::on_stop_partitions) names it or
    /// [`close`](Self::close).
    ///
    /// The default, for managers that track no partitions, is [`is_ready`](Self::is_ready) (Kafka's
    /// default is true).
    fn is_partition_ready(&self, partition: &TopicIdPartition) -> bool {
        let _ = partition;
        self.is_ready()
    }

    /// Flushes and releases what the manager holds; later calls fail.
    async fn close(&self) -> Result<()>;
}
