//! The state built from metadata events (SR-31), with the query semantics of Kafka's
//! `RemoteLogMetadataCache`:
//!
//! | query | copy started | copy finished | delete started | delete finished |
//! |---|---|---|---|---|
//! | [`PartitionState::segment_for_offset`] | no | yes | no | no (forgotten) |
//! | [`PartitionState::segments_for_epoch`] | yes | yes | yes | no |
//! | [`PartitionState::segments`] | yes | yes | yes | no |
//!
//! Each leader epoch keeps the copied segments by the first offset they hold in that epoch; a copied
//! segment that another copy of the same offsets replaces stays listed (so retention deletes it) but is no
//! longer found by offset. Events that break Kafka's state machines are refused with an error and change
//! nothing.

use crate::events::{
    MetadataEvent, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata, RemotePartitionDeleteState,
    is_valid_segment_transition, segment_state_name,
};
use crate::records::Tombstone;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, Uuid};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Every partition's state.
#[derive(Default, Debug)]
pub struct MetadataStore {
    partitions: HashMap<TopicIdPartition, PartitionState>,
}

impl MetadataStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one event, or refuses it (and changes nothing) when Kafka's rules forbid it. A snapshot
    /// record names no partition: restore it with [`MetadataStore::restore`].
    pub fn apply(&mut self, event: &MetadataEvent) -> Result<()> {
        match event {
            MetadataEvent::Segment(m) => {
                let tp = &m.remote_log_segment_id.topic_id_partition;
                self.partitions.entry(tp.clone()).or_default().add_copy_in_progress(m)
            }
            MetadataEvent::SegmentUpdate(u) => {
                let tp = &u.remote_log_segment_id.topic_id_partition;
                match self.partitions.get_mut(tp) {
                    Some(p) => p.update(u),
                    None => Err(Error::not_found(format!(
                        "no remote log segment metadata for {} (partition {tp} has none)",
                        u.remote_log_segment_id
                    ))),
                }
            }
            MetadataEvent::PartitionDelete(d) => {
                let state = self.partitions.entry(d.topic_id_partition.clone()).or_default();
                state.partition_delete(d)?;
                if d.state == RemotePartitionDeleteState::DeletePartitionFinished {
                    self.partitions.remove(&d.topic_id_partition);
                }
                Ok(())
            }
            MetadataEvent::Snapshot(s) => Err(Error::invalid(format!(
                "a snapshot record (segment {}) names no partition: restore it into its partition",
                s.segment_id
            ))),
        }
    }

    /// Applies a KIP-1266 tombstone: the segment its key names is forgotten (in whatever state it was, as
    /// a finished deletion forgets it), in the partition of the key's topic id and partition number.
    /// Returns the segment forgotten, or `None` when the store did not hold it (its deletion finished
    /// already, which is when Kafka sends tombstones) or the key is not a segment's.
    pub fn apply_tombstone(&mut self, tombstone: &Tombstone) -> Option<RemoteLogSegmentMetadata> {
        let (topic_id, partition) = match tombstone {
            Tombstone::Segment(k) => (k.topic_id, k.partition),
            Tombstone::EndOffset(k) => (k.topic_id, k.partition),
            Tombstone::Unrecognized { .. } => return None,
        };
        let state = self
            .partitions
            .iter_mut()
            .find_map(|(tp, p)| (tp.topic_id == topic_id && tp.topic_partition.partition == partition).then_some(p))?;
        let segment = match tombstone {
            Tombstone::Segment(k) => state.segments.get(&k.segment_id)?.clone(),
            // A key that names no segment id: only a segment whose deletion started, of that end offset, is
            // forgotten (Kafka writes the tombstone after the deletion), never a live copy of the same
            // offsets (a copy done again after an abandoned one ends at the same offset).
            Tombstone::EndOffset(k) => {
                let deleting = |m: &&RemoteLogSegmentMetadata| {
                    m.end_offset == k.end_offset
                        && matches!(
                            m.state,
                            RemoteLogSegmentState::DeleteSegmentStarted | RemoteLogSegmentState::DeleteSegmentFinished
                        )
                };
                let mut found = state.segments.values().filter(deleting);
                let segment = found.next()?.clone();
                if found.next().is_some() {
                    // Two such segments: the key cannot tell which; keep both (a later tombstone or the
                    // retention of deleted records forgets them).
                    return None;
                }
                segment
            }
            Tombstone::Unrecognized { .. } => return None,
        };
        state.delete_finished(&segment);
        Some(segment)
    }

    /// Checks an event as [`MetadataStore::apply`] would, without applying it.
    pub fn check(&self, event: &MetadataEvent) -> Result<()> {
        match event {
            MetadataEvent::Segment(m) => {
                let tp = &m.remote_log_segment_id.topic_id_partition;
                let existing = self.partitions.get(tp).and_then(|p| p.segments.get(&m.remote_log_segment_id.id));
                check_add(existing, m)
            }
            MetadataEvent::SegmentUpdate(u) => {
                let tp = &u.remote_log_segment_id.topic_id_partition;
                let existing = self.partitions.get(tp).and_then(|p| p.segments.get(&u.remote_log_segment_id.id));
                check_update(existing, u).map(|_| ())
            }
            MetadataEvent::PartitionDelete(d) => {
                let existing = self.partitions.get(&d.topic_id_partition).and_then(|p| p.delete.as_ref());
                check_partition_delete(existing, d)
            }
            MetadataEvent::Snapshot(s) => {
                Err(Error::invalid(format!("a snapshot record (segment {}) names no partition", s.segment_id)))
            }
        }
    }

    /// Puts a segment back as a snapshot held it, in whatever state it was.
    pub fn restore(&mut self, metadata: RemoteLogSegmentMetadata) {
        let tp = metadata.remote_log_segment_id.topic_id_partition.clone();
        self.partitions.entry(tp).or_default().restore(metadata);
    }

    /// Puts a partition's delete state back as a snapshot held it.
    pub fn restore_partition_delete(&mut self, delete: RemotePartitionDeleteMetadata) {
        let tp = delete.topic_id_partition.clone();
        self.partitions.entry(tp).or_default().delete = Some(delete);
    }

    /// One partition's state, if any event of it is known.
    pub fn partition(&self, partition: &TopicIdPartition) -> Option<&PartitionState> {
        self.partitions.get(partition)
    }

    /// Every partition with state.
    pub fn partitions(&self) -> impl Iterator<Item = (&TopicIdPartition, &PartitionState)> {
        self.partitions.iter()
    }

    /// Forgets a partition's state (it stays wherever the events are stored).
    pub fn forget(&mut self, partition: &TopicIdPartition) {
        self.partitions.remove(partition);
    }

    /// Segments held, in every partition.
    pub fn segment_count(&self) -> usize {
        self.partitions.values().map(|p| p.segments.len()).sum()
    }
}

/// One partition's segments and delete state.
#[derive(Default, Debug)]
pub struct PartitionState {
    segments: HashMap<Uuid, RemoteLogSegmentMetadata>,
    epochs: BTreeMap<i32, EpochState>,
    delete: Option<RemotePartitionDeleteMetadata>,
}

/// Kafka's `RemoteLogLeaderEpochState`: one leader epoch's segments.
#[derive(Default, Debug)]
struct EpochState {
    /// Copied segments by the first offset they hold in this epoch.
    by_offset: BTreeMap<i64, Uuid>,
    /// Segments of the epoch not found by offset: copy in progress, delete started, or replaced.
    unreferenced: HashSet<Uuid>,
    /// The highest offset of this epoch in a copied segment.
    highest_offset: Option<i64>,
}

fn check_add(existing: Option<&RemoteLogSegmentMetadata>, m: &RemoteLogSegmentMetadata) -> Result<()> {
    m.validate()?;
    if m.state != RemoteLogSegmentState::CopySegmentStarted {
        return Err(Error::invalid(format!(
            "segment {}: new metadata must be in state COPY_SEGMENT_STARTED, not {}",
            m.remote_log_segment_id,
            segment_state_name(m.state)
        )));
    }
    let from = existing.map(|e| e.state);
    if !is_valid_segment_transition(from, m.state) {
        return Err(transition_error(&m.remote_log_segment_id.to_string(), from, m.state));
    }
    Ok(())
}

fn check_update(
    existing: Option<&RemoteLogSegmentMetadata>,
    u: &RemoteLogSegmentMetadataUpdate,
) -> Result<RemoteLogSegmentMetadata> {
    let Some(existing) = existing else {
        return Err(Error::not_found(format!("no remote log segment metadata for {}", u.remote_log_segment_id)));
    };
    if u.state == RemoteLogSegmentState::CopySegmentStarted {
        return Err(Error::invalid(format!(
            "segment {}: an update can not set state COPY_SEGMENT_STARTED (add the metadata instead)",
            u.remote_log_segment_id
        )));
    }
    if !is_valid_segment_transition(Some(existing.state), u.state) {
        return Err(transition_error(&u.remote_log_segment_id.to_string(), Some(existing.state), u.state));
    }
    Ok(u.apply_to(existing))
}

fn check_partition_delete(
    existing: Option<&RemotePartitionDeleteMetadata>,
    d: &RemotePartitionDeleteMetadata,
) -> Result<()> {
    let from = existing.map(|e| e.state);
    if !RemotePartitionDeleteState::is_valid_transition(from, d.state) {
        let from = from.map_or("no delete state".to_string(), |s| s.to_string());
        return Err(Error::invalid(format!(
            "partition {}: its delete state can not go from {from} to {}",
            d.topic_id_partition, d.state
        )));
    }
    Ok(())
}

fn transition_error(segment: &str, from: Option<RemoteLogSegmentState>, to: RemoteLogSegmentState) -> Error {
    let from = from.map_or("no metadata", segment_state_name);
    Error::invalid(format!("segment {segment}: state can not go from {from} to {}", segment_state_name(to)))
}

/// The highest offset of `epoch` within a segment: the next epoch's start - 1, or the segment's end.
fn epoch_end_offset(m: &RemoteLogSegmentMetadata, epoch: i32) -> i64 {
    m.segment_leader_epochs.range(epoch + 1..).next().map_or(m.end_offset, |(_, start)| start - 1)
}

impl PartitionState {
    fn add_copy_in_progress(&mut self, m: &RemoteLogSegmentMetadata) -> Result<()> {
        let id = m.remote_log_segment_id.id;
        check_add(self.segments.get(&id), m)?;
        for epoch in m.segment_leader_epochs.keys() {
            self.epochs.entry(*epoch).or_default().unreferenced.insert(id);
        }
        self.segments.insert(id, m.clone());
        Ok(())
    }

    fn update(&mut self, u: &RemoteLogSegmentMetadataUpdate) -> Result<()> {
        let id = u.remote_log_segment_id.id;
        let next = check_update(self.segments.get(&id), u)?;
        match next.state {
            RemoteLogSegmentState::CopySegmentStarted => unreachable!("refused by check_update"),
            RemoteLogSegmentState::CopySegmentFinished => self.copy_finished(next),
            RemoteLogSegmentState::DeleteSegmentStarted => self.delete_started(next),
            RemoteLogSegmentState::DeleteSegmentFinished => self.delete_finished(&next),
        }
        Ok(())
    }

    fn copy_finished(&mut self, m: RemoteLogSegmentMetadata) {
        let id = m.remote_log_segment_id.id;
        for (&epoch, &start) in &m.segment_leader_epochs {
            let end = epoch_end_offset(&m, epoch);
            let state = self.epochs.entry(epoch).or_default();
            if let Some(old) = state.by_offset.insert(start, id)
                && old != id
            {
                state.unreferenced.insert(old);
            }
            state.unreferenced.remove(&id);
            state.highest_offset = Some(state.highest_offset.map_or(end, |h| h.max(end)));
        }
        self.segments.insert(id, m);
    }

    fn delete_started(&mut self, m: RemoteLogSegmentMetadata) {
        let id = m.remote_log_segment_id.id;
        for (&epoch, &start) in &m.segment_leader_epochs {
            let state = self.epochs.entry(epoch).or_default();
            if state.by_offset.get(&start) == Some(&id) {
                state.by_offset.remove(&start);
            }
            state.unreferenced.insert(id);
        }
        self.segments.insert(id, m);
    }

    fn delete_finished(&mut self, m: &RemoteLogSegmentMetadata) {
        let id = m.remote_log_segment_id.id;
        for epoch in m.segment_leader_epochs.keys() {
            if let Some(state) = self.epochs.get_mut(epoch) {
                state.unreferenced.remove(&id);
                if state.by_offset.values().any(|v| *v == id) {
                    state.by_offset.retain(|_, v| *v != id);
                }
            }
        }
        self.segments.remove(&id);
    }

    fn partition_delete(&mut self, d: &RemotePartitionDeleteMetadata) -> Result<()> {
        check_partition_delete(self.delete.as_ref(), d)?;
        self.delete = Some(d.clone());
        Ok(())
    }

    fn restore(&mut self, m: RemoteLogSegmentMetadata) {
        let id = m.remote_log_segment_id.id;
        match m.state {
            RemoteLogSegmentState::CopySegmentStarted => {
                for epoch in m.segment_leader_epochs.keys() {
                    self.epochs.entry(*epoch).or_default().unreferenced.insert(id);
                }
                self.segments.insert(id, m);
            }
            RemoteLogSegmentState::CopySegmentFinished => self.copy_finished(m),
            RemoteLogSegmentState::DeleteSegmentStarted => self.delete_started(m),
            RemoteLogSegmentState::DeleteSegmentFinished => {}
        }
    }

    /// Every segment that has not finished deletion, by start offset (then id).
    pub fn segments(&self) -> Vec<RemoteLogSegmentMetadata> {
        let mut all: Vec<_> = self.segments.values().cloned().collect();
        sort_segments(&mut all);
        all
    }

    /// The number of segments that have not finished deletion.
    pub fn len(&self) -> usize {
        self.segments.len()
    }

    /// Whether no segment is held.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// One segment, by id.
    pub fn segment(&self, id: &Uuid) -> Option<&RemoteLogSegmentMetadata> {
        self.segments.get(id)
    }

    /// The segments holding offsets of `epoch`, copied or not, by start offset.
    pub fn segments_for_epoch(&self, epoch: i32) -> Vec<RemoteLogSegmentMetadata> {
        let Some(state) = self.epochs.get(&epoch) else { return Vec::new() };
        let mut out: Vec<_> = state
            .by_offset
            .values()
            .chain(state.unreferenced.iter())
            .collect::<HashSet<_>>()
            .into_iter()
            .filter_map(|id| self.segments.get(id).cloned())
            .collect();
        sort_segments(&mut out);
        out
    }

    /// The copied segment holding `offset` in `epoch`.
    pub fn segment_for_offset(&self, epoch: i32, offset: i64) -> Option<&RemoteLogSegmentMetadata> {
        let state = self.epochs.get(&epoch)?;
        let (_, id) = state.by_offset.range(..=offset).next_back()?;
        let m = self.segments.get(id)?;
        (offset <= epoch_end_offset(m, epoch)).then_some(m)
    }

    /// The highest offset of `epoch` in a copied segment.
    pub fn highest_offset_for_epoch(&self, epoch: i32) -> Option<i64> {
        self.epochs.get(&epoch)?.highest_offset
    }

    /// Bytes of the segments of `epoch` (Kafka's `remoteLogSize` for one epoch).
    pub fn size_for_epoch(&self, epoch: i32) -> u64 {
        self.segments_for_epoch(epoch).iter().map(|m| m.segment_size_in_bytes.max(0) as u64).sum()
    }

    /// The lowest start offset of a copied segment.
    pub fn earliest_offset(&self) -> Option<i64> {
        self.segments
            .values()
            .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
            .map(|m| m.start_offset)
            .min()
    }

    /// The partition's delete state, if a delete event was seen.
    pub fn delete_state(&self) -> Option<&RemotePartitionDeleteMetadata> {
        self.delete.as_ref()
    }
}

fn sort_segments(segments: &mut [RemoteLogSegmentMetadata]) {
    segments.sort_by(|a, b| {
        (a.start_offset, a.remote_log_segment_id.id.to_bytes())
            .cmp(&(b.start_offset, b.remote_log_segment_id.id.to_bytes()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use RemoteLogSegmentState::*;
    use rsm_core::model::{RemoteLogSegmentId, TopicPartition};

    fn tp() -> TopicIdPartition {
        TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new("orders", 0))
    }

    fn segment(n: u64, start: i64, end: i64, epochs: &[(i32, i64)]) -> RemoteLogSegmentMetadata {
        let id = RemoteLogSegmentId::new(tp(), Uuid::new(7, n as i64));
        RemoteLogSegmentMetadata::new(id, start, end, 1_000, 1, 2_000, 100, epochs.iter().copied().collect()).unwrap()
    }

    fn update(m: &RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> MetadataEvent {
        MetadataEvent::SegmentUpdate(RemoteLogSegmentMetadataUpdate::of(m, state, 3_000, 1))
    }

    fn store_with(events: &[MetadataEvent]) -> MetadataStore {
        let mut store = MetadataStore::new();
        for e in events {
            store.apply(e).unwrap();
        }
        store
    }

    /// Kafka's table: which queries see a segment in each state.
    #[test]
    fn queries_see_each_state_as_kafka_does() {
        let s = segment(1, 0, 99, &[(0, 0)]);
        // (state reached, found by offset, listed for its epoch, listed in all)
        let table = [
            (CopySegmentStarted, false, true, true),
            (CopySegmentFinished, true, true, true),
            (DeleteSegmentStarted, false, true, true),
            (DeleteSegmentFinished, false, false, false),
        ];
        let path = [CopySegmentFinished, DeleteSegmentStarted, DeleteSegmentFinished];
        for (i, (state, by_offset, for_epoch, all)) in table.into_iter().enumerate() {
            let mut events = vec![MetadataEvent::Segment(s.clone())];
            events.extend(path[..i].iter().map(|st| update(&s, *st)));
            let store = store_with(&events);
            let p = store.partition(&tp());
            let found = p.and_then(|p| p.segment_for_offset(0, 50)).is_some();
            assert_eq!(found, by_offset, "{state:?}: by offset");
            assert_eq!(p.map_or(0, |p| p.segments_for_epoch(0).len()) == 1, for_epoch, "{state:?}: for epoch");
            assert_eq!(p.map_or(0, |p| p.segments().len()) == 1, all, "{state:?}: all");
        }
    }

    #[test]
    fn offsets_are_found_within_their_epoch_only() {
        // Epoch 0 holds 0..=49, epoch 2 holds 50..=99.
        let s = segment(1, 0, 99, &[(0, 0), (2, 50)]);
        let store = store_with(&[MetadataEvent::Segment(s.clone()), update(&s, CopySegmentFinished)]);
        let p = store.partition(&tp()).unwrap();
        assert!(p.segment_for_offset(0, 49).is_some());
        assert!(p.segment_for_offset(0, 50).is_none(), "offset 50 is in epoch 2");
        assert!(p.segment_for_offset(2, 50).is_some());
        assert!(p.segment_for_offset(2, 100).is_none(), "past the segment's end");
        assert!(p.segment_for_offset(1, 10).is_none(), "no such epoch");
        assert_eq!(p.highest_offset_for_epoch(0), Some(49));
        assert_eq!(p.highest_offset_for_epoch(2), Some(99));
        assert_eq!(p.highest_offset_for_epoch(1), None);
        assert_eq!(p.earliest_offset(), Some(0));
    }

    #[test]
    fn a_second_copy_of_the_same_offsets_replaces_the_first_for_reads_but_both_stay_listed() {
        let a = segment(1, 0, 99, &[(0, 0)]);
        let b = segment(2, 0, 99, &[(0, 0)]);
        let store = store_with(&[
            MetadataEvent::Segment(a.clone()),
            update(&a, CopySegmentFinished),
            MetadataEvent::Segment(b.clone()),
            update(&b, CopySegmentFinished),
        ]);
        let p = store.partition(&tp()).unwrap();
        assert_eq!(p.segment_for_offset(0, 5).unwrap().remote_log_segment_id.id, b.remote_log_segment_id.id);
        assert_eq!(p.segments_for_epoch(0).len(), 2);
        assert_eq!(p.size_for_epoch(0), 200);
    }

    #[test]
    fn bad_transitions_are_refused_and_change_nothing() {
        let s = segment(1, 0, 99, &[(0, 0)]);
        let mut store = store_with(&[MetadataEvent::Segment(s.clone())]);
        // Straight from copy started to delete finished.
        let err = store.apply(&update(&s, DeleteSegmentFinished)).unwrap_err();
        assert_eq!(err.kind(), rsm_core::error::ErrorKind::InvalidArgument);
        let msg = err.to_string();
        assert!(msg.contains("COPY_SEGMENT_STARTED") && msg.contains("DELETE_SEGMENT_FINISHED"), "{msg}");
        assert!(msg.contains(&s.remote_log_segment_id.id.to_string()), "{msg}");
        assert_eq!(store.partition(&tp()).unwrap().segments()[0].state, CopySegmentStarted);
        // An update may not set copy started.
        assert!(store.apply(&update(&s, CopySegmentStarted)).is_err());
        // Unknown segment.
        let other = segment(9, 0, 1, &[(0, 0)]);
        let err = store.apply(&update(&other, CopySegmentFinished)).unwrap_err();
        assert_eq!(err.kind(), rsm_core::error::ErrorKind::NotFound);
        // New metadata not in copy started.
        let mut finished = segment(3, 0, 1, &[(0, 0)]);
        finished.state = CopySegmentFinished;
        assert!(store.apply(&MetadataEvent::Segment(finished)).is_err());
        // Check says the same as apply, without applying.
        assert!(store.check(&update(&s, DeleteSegmentFinished)).is_err());
        assert!(store.check(&update(&s, CopySegmentFinished)).is_ok());
        assert_eq!(store.partition(&tp()).unwrap().segments()[0].state, CopySegmentStarted);
    }

    #[test]
    fn repeated_events_are_accepted_as_kafka_accepts_retries() {
        let s = segment(1, 0, 99, &[(0, 0)]);
        let store = store_with(&[
            MetadataEvent::Segment(s.clone()),
            MetadataEvent::Segment(s.clone()),
            update(&s, CopySegmentFinished),
            update(&s, CopySegmentFinished),
        ]);
        assert_eq!(store.partition(&tp()).unwrap().segments().len(), 1);
    }

    #[test]
    fn a_finished_partition_delete_forgets_the_partition() {
        let s = segment(1, 0, 99, &[(0, 0)]);
        let delete = |state| {
            MetadataEvent::PartitionDelete(RemotePartitionDeleteMetadata {
                topic_id_partition: tp(),
                state,
                event_timestamp_ms: 5,
                broker_id: 0,
            })
        };
        let mut store = store_with(&[MetadataEvent::Segment(s.clone()), update(&s, CopySegmentFinished)]);
        assert!(store.apply(&delete(RemotePartitionDeleteState::DeletePartitionStarted)).is_err());
        store.apply(&delete(RemotePartitionDeleteState::DeletePartitionMarked)).unwrap();
        store.apply(&delete(RemotePartitionDeleteState::DeletePartitionStarted)).unwrap();
        assert!(store.partition(&tp()).is_some());
        store.apply(&delete(RemotePartitionDeleteState::DeletePartitionFinished)).unwrap();
        assert!(store.partition(&tp()).is_none());
    }

    #[test]
    fn restore_rebuilds_what_the_events_built() {
        let a = segment(1, 0, 49, &[(0, 0)]);
        let b = segment(2, 50, 99, &[(0, 50), (1, 70)]);
        let c = segment(3, 100, 149, &[(1, 100)]);
        let events = [
            MetadataEvent::Segment(a.clone()),
            update(&a, CopySegmentFinished),
            update(&a, DeleteSegmentStarted),
            MetadataEvent::Segment(b.clone()),
            update(&b, CopySegmentFinished),
            MetadataEvent::Segment(c.clone()),
        ];
        let built = store_with(&events);
        let mut restored = MetadataStore::new();
        for m in built.partition(&tp()).unwrap().segments() {
            restored.restore(m);
        }
        let (x, y) = (built.partition(&tp()).unwrap(), restored.partition(&tp()).unwrap());
        assert_eq!(x.segments(), y.segments());
        for epoch in 0..3 {
            assert_eq!(x.segments_for_epoch(epoch), y.segments_for_epoch(epoch), "epoch {epoch}");
            assert_eq!(x.highest_offset_for_epoch(epoch), y.highest_offset_for_epoch(epoch), "epoch {epoch}");
            for offset in [0, 49, 50, 69, 70, 99, 100, 149] {
                assert_eq!(x.segment_for_offset(epoch, offset), y.segment_for_offset(epoch, offset));
            }
        }
        assert_eq!(x.earliest_offset(), Some(50));
    }
}
