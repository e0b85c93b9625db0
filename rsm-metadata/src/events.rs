//! The events a metadata manager stores, as Kafka defines them (`RemoteLogSegmentMetadata`,
//! `RemoteLogSegmentMetadataUpdate`, `RemotePartitionDeleteMetadata`, `RemoteLogSegmentMetadataSnapshot`),
//! and Kafka's state machines for segments and partition deletes.

use rsm_core::error::{Error, Result};
use rsm_core::model::{
    CustomMetadata, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, Uuid,
};
use std::collections::BTreeMap;
use std::fmt;

/// One event of a partition's remote log, as stored on the metadata topic or in the local log.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum MetadataEvent {
    /// A new segment (state `COPY_SEGMENT_STARTED`): Kafka's `RemoteLogSegmentMetadataRecord`.
    Segment(RemoteLogSegmentMetadata),
    /// A segment's new state: `RemoteLogSegmentMetadataUpdateRecord`.
    SegmentUpdate(RemoteLogSegmentMetadataUpdate),
    /// A partition delete event: `RemotePartitionDeleteMetadataRecord`.
    PartitionDelete(RemotePartitionDeleteMetadata),
    /// A segment as a snapshot holds it (no topic partition: a snapshot is per partition):
    /// `RemoteLogSegmentMetadataSnapshotRecord`.
    Snapshot(RemoteLogSegmentMetadataSnapshot),
}

impl MetadataEvent {
    /// The user partition the event belongs to (`None` for a snapshot record, which does not name it).
    pub fn partition(&self) -> Option<&TopicIdPartition> {
        match self {
            MetadataEvent::Segment(m) => Some(&m.remote_log_segment_id.topic_id_partition),
            MetadataEvent::SegmentUpdate(u) => Some(&u.remote_log_segment_id.topic_id_partition),
            MetadataEvent::PartitionDelete(d) => Some(&d.topic_id_partition),
            MetadataEvent::Snapshot(_) => None,
        }
    }
}

/// Kafka's `RemoteLogSegmentMetadataUpdate`: a segment moves to another state.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RemoteLogSegmentMetadataUpdate {
    /// The segment.
    pub remote_log_segment_id: RemoteLogSegmentId,
    /// When the event was made.
    pub event_timestamp_ms: i64,
    /// Custom metadata returned by the storage manager's copy (set with copy finished).
    pub custom_metadata: Option<CustomMetadata>,
    /// The new state (never `COPY_SEGMENT_STARTED`).
    pub state: RemoteLogSegmentState,
    /// The broker (or host) that made the event.
    pub broker_id: i32,
}

impl RemoteLogSegmentMetadataUpdate {
    /// An update to `state` of the segment `metadata` describes, made now by `broker_id`.
    pub fn of(
        metadata: &RemoteLogSegmentMetadata,
        state: RemoteLogSegmentState,
        event_timestamp_ms: i64,
        broker_id: i32,
    ) -> Self {
        RemoteLogSegmentMetadataUpdate {
            remote_log_segment_id: metadata.remote_log_segment_id.clone(),
            event_timestamp_ms,
            custom_metadata: metadata.custom_metadata.clone(),
            state,
            broker_id,
        }
    }

    /// The metadata after this update, as Kafka's `createWithUpdates` makes it.
    pub fn apply_to(&self, metadata: &RemoteLogSegmentMetadata) -> RemoteLogSegmentMetadata {
        let mut next = metadata.clone();
        next.state = self.state;
        next.event_timestamp_ms = self.event_timestamp_ms;
        next.broker_id = self.broker_id;
        next.custom_metadata = self.custom_metadata.clone();
        next
    }
}

/// Kafka's `RemotePartitionDeleteState`, with its wire ids.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(i8)]
pub enum RemotePartitionDeleteState {
    /// The partition is marked for deletion (id 0).
    DeletePartitionMarked = 0,
    /// Deleting its remote segments started (id 1).
    DeletePartitionStarted = 1,
    /// Every remote segment of the partition is deleted (id 2).
    DeletePartitionFinished = 2,
}

impl RemotePartitionDeleteState {
    /// The state for a wire id.
    pub fn for_id(id: i8) -> Result<Self> {
        Ok(match id {
            0 => Self::DeletePartitionMarked,
            1 => Self::DeletePartitionStarted,
            2 => Self::DeletePartitionFinished,
            _ => return Err(Error::invalid(format!("unknown remote partition delete state id {id}"))),
        })
    }

    /// Kafka's `RemotePartitionDeleteState.isValidTransition`: marked, then started, then finished; a
    /// state may repeat (retries, fail-over).
    pub fn is_valid_transition(from: Option<Self>, to: Self) -> bool {
        use RemotePartitionDeleteState::*;
        match from {
            None => to == DeletePartitionMarked,
            Some(from) if from == to => true,
            Some(DeletePartitionMarked) => to == DeletePartitionStarted,
            Some(DeletePartitionStarted) => to == DeletePartitionFinished,
            Some(DeletePartitionFinished) => false,
        }
    }
}

/// Kafka's `RemotePartitionDeleteMetadata`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RemotePartitionDeleteMetadata {
    /// The partition.
    pub topic_id_partition: TopicIdPartition,
    /// The delete state.
    pub state: RemotePartitionDeleteState,
    /// When the event was made.
    pub event_timestamp_ms: i64,
    /// The broker (controller or leader) that made it.
    pub broker_id: i32,
}

/// Kafka's `RemoteLogSegmentMetadataSnapshot`: a segment's metadata without its topic partition.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RemoteLogSegmentMetadataSnapshot {
    /// The segment id (the partition is the snapshot's).
    pub segment_id: Uuid,
    /// First offset, inclusive.
    pub start_offset: i64,
    /// Last offset, inclusive.
    pub end_offset: i64,
    /// Largest record timestamp.
    pub max_timestamp_ms: i64,
    /// The broker that made the metadata.
    pub broker_id: i32,
    /// When the metadata was last changed.
    pub event_timestamp_ms: i64,
    /// Leader epoch -> first offset.
    pub segment_leader_epochs: BTreeMap<i32, i64>,
    /// Size of the `.log` file.
    pub segment_size_in_bytes: i32,
    /// Custom metadata.
    pub custom_metadata: Option<CustomMetadata>,
    /// The state.
    pub state: RemoteLogSegmentState,
    /// Whether the transaction index is empty.
    pub txn_idx_empty: bool,
}

impl RemoteLogSegmentMetadataSnapshot {
    /// The snapshot of a segment's metadata.
    pub fn of(metadata: &RemoteLogSegmentMetadata) -> Self {
        RemoteLogSegmentMetadataSnapshot {
            segment_id: metadata.remote_log_segment_id.id,
            start_offset: metadata.start_offset,
            end_offset: metadata.end_offset,
            max_timestamp_ms: metadata.max_timestamp_ms,
            broker_id: metadata.broker_id,
            event_timestamp_ms: metadata.event_timestamp_ms,
            segment_leader_epochs: metadata.segment_leader_epochs.clone(),
            segment_size_in_bytes: metadata.segment_size_in_bytes,
            custom_metadata: metadata.custom_metadata.clone(),
            state: metadata.state,
            txn_idx_empty: metadata.txn_idx_empty,
        }
    }

    /// The segment's metadata, in `partition`.
    pub fn into_metadata(self, partition: TopicIdPartition) -> RemoteLogSegmentMetadata {
        RemoteLogSegmentMetadata {
            remote_log_segment_id: RemoteLogSegmentId::new(partition, self.segment_id),
            start_offset: self.start_offset,
            end_offset: self.end_offset,
            max_timestamp_ms: self.max_timestamp_ms,
            broker_id: self.broker_id,
            event_timestamp_ms: self.event_timestamp_ms,
            segment_size_in_bytes: self.segment_size_in_bytes,
            segment_leader_epochs: self.segment_leader_epochs,
            custom_metadata: self.custom_metadata,
            state: self.state,
            txn_idx_empty: self.txn_idx_empty,
        }
    }
}

/// Kafka's `RemoteLogSegmentState.isValidTransition`: a new segment starts in copy started; copy started
/// goes to copy finished or delete started; copy finished to delete started; delete started to delete
/// finished; a state may repeat (retries, fail-over); nothing leaves delete finished.
pub fn is_valid_segment_transition(from: Option<RemoteLogSegmentState>, to: RemoteLogSegmentState) -> bool {
    use RemoteLogSegmentState::*;
    match from {
        None => to == CopySegmentStarted,
        Some(from) if from == to => true,
        Some(CopySegmentStarted) => matches!(to, CopySegmentFinished | DeleteSegmentStarted),
        Some(CopySegmentFinished) => to == DeleteSegmentStarted,
        Some(DeleteSegmentStarted) => to == DeleteSegmentFinished,
        Some(DeleteSegmentFinished) => false,
    }
}

/// A state's name as Kafka prints it (`COPY_SEGMENT_STARTED`, …).
pub fn segment_state_name(state: RemoteLogSegmentState) -> &'static str {
    match state {
        RemoteLogSegmentState::CopySegmentStarted => "COPY_SEGMENT_STARTED",
        RemoteLogSegmentState::CopySegmentFinished => "COPY_SEGMENT_FINISHED",
        RemoteLogSegmentState::DeleteSegmentStarted => "DELETE_SEGMENT_STARTED",
        RemoteLogSegmentState::DeleteSegmentFinished => "DELETE_SEGMENT_FINISHED",
    }
}

impl fmt::Display for RemotePartitionDeleteState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RemotePartitionDeleteState::DeletePartitionMarked => "DELETE_PARTITION_MARKED",
            RemotePartitionDeleteState::DeletePartitionStarted => "DELETE_PARTITION_STARTED",
            RemotePartitionDeleteState::DeletePartitionFinished => "DELETE_PARTITION_FINISHED",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RemoteLogSegmentState::*;

    /// Every (from, to) pair of Kafka's segment state machine, written out from its rules.
    #[test]
    fn segment_transitions_follow_kafka() {
        let states = [CopySegmentStarted, CopySegmentFinished, DeleteSegmentStarted, DeleteSegmentFinished];
        let allowed: &[(Option<RemoteLogSegmentState>, RemoteLogSegmentState)] = &[
            (None, CopySegmentStarted),
            (Some(CopySegmentStarted), CopySegmentStarted),
            (Some(CopySegmentStarted), CopySegmentFinished),
            (Some(CopySegmentStarted), DeleteSegmentStarted),
            (Some(CopySegmentFinished), CopySegmentFinished),
            (Some(CopySegmentFinished), DeleteSegmentStarted),
            (Some(DeleteSegmentStarted), DeleteSegmentStarted),
            (Some(DeleteSegmentStarted), DeleteSegmentFinished),
            (Some(DeleteSegmentFinished), DeleteSegmentFinished),
        ];
        let froms = std::iter::once(None).chain(states.iter().copied().map(Some));
        for from in froms {
            for to in states {
                assert_eq!(is_valid_segment_transition(from, to), allowed.contains(&(from, to)), "{from:?} -> {to:?}");
            }
        }
    }

    #[test]
    fn partition_delete_transitions_follow_kafka() {
        use RemotePartitionDeleteState::*;
        let states = [DeletePartitionMarked, DeletePartitionStarted, DeletePartitionFinished];
        let allowed: &[(Option<RemotePartitionDeleteState>, RemotePartitionDeleteState)] = &[
            (None, DeletePartitionMarked),
            (Some(DeletePartitionMarked), DeletePartitionMarked),
            (Some(DeletePartitionMarked), DeletePartitionStarted),
            (Some(DeletePartitionStarted), DeletePartitionStarted),
            (Some(DeletePartitionStarted), DeletePartitionFinished),
            (Some(DeletePartitionFinished), DeletePartitionFinished),
        ];
        for from in std::iter::once(None).chain(states.iter().copied().map(Some)) {
            for to in states {
                let want = allowed.contains(&(from, to));
                assert_eq!(RemotePartitionDeleteState::is_valid_transition(from, to), want, "{from:?} -> {to:?}");
            }
        }
    }
}
