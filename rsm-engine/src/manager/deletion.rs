//! Deleting remote segments by hand (`rsm delete`) and the deletions that failed: what a delete would do to
//! the partition's log, decided again under the partition's lock where it happens, and the retry of
//! deletions a crash or a failing store left.

use super::RemoteLogManager;
use crate::expiration;
use crate::lifecycle::{self, offset_ranges};
use crate::state::Role;
use crate::state::lock;
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentState, TopicIdPartition, Uuid};
use rsm_core::rsm::RemoteStorageManager;

/// What deleting one remote segment does to its partition's log ([`RemoteLogManager::deletion_cut`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletionEffect {
    /// The segment's offsets.
    pub segment: rsm_tiering::OffsetRange,
    /// Its offsets that leave the log from below: nothing held lies under them, so the log start moves past
    /// them (the oldest data goes, as retention would take it).
    pub log_start_move: Option<rsm_tiering::OffsetRange>,
    /// Its offsets that nothing would hold while offsets above them stay (or may stay, the local log being
    /// unknown): holes cut into the log, their records readable nowhere.
    pub holes: Vec<rsm_tiering::OffsetRange>,
    /// Gaps the delete opens between remote segments, held or not by the local log: local deletion stops
    /// at them (the local copy of their offsets is kept).
    pub remote_gaps: Vec<rsm_tiering::OffsetRange>,
    /// Other copies of some of the segment's offsets that do not count as holding them: not whole in this
    /// store (damaged, or missing), each with why.
    pub unreadable_copies: Vec<(Uuid, rsm_tiering::OffsetRange, String)>,
}

impl RemoteLogManager {
    /// Whether the metadata of `tp` holds the segment `id`, in any state.
    pub async fn knows_segment(&self, tp: &TopicIdPartition, id: &rsm_core::Uuid) -> Result<bool> {
        self.shared.metadata.on_partition_leadership_changes(std::slice::from_ref(tp), &[]).await?;
        let remote = self.shared.metadata.list_remote_log_segments(tp).await?;
        Ok(remote.iter().any(|m| m.remote_log_segment_id.id == *id))
    }

    /// What deleting the remote segment `id` of `tp` would do to its log: the offsets no other copied
    /// segment nor the local log (`local`: the offsets its segments hold, [`crate::local_log::LocalLog::held_ranges`]; `None`
    /// when not known) would hold afterwards, split into those below every offset still held (the log start
    /// moves past them) and the holes it would cut (held offsets below them). With `local` unknown the local
    /// log holds nothing here, so the remote log's last segment (not its only one) cuts a hole: the local log
    /// may no longer hold its offsets, and only the partition directory can tell.
    pub async fn deletion_cut(
        &self,
        tp: &TopicIdPartition,
        id: &rsm_core::Uuid,
        local: Option<&[rsm_tiering::OffsetRange]>,
    ) -> Result<DeletionEffect> {
        self.shared.metadata.on_partition_leadership_changes(std::slice::from_ref(tp), &[]).await?;
        let remote = self.shared.metadata.list_remote_log_segments(tp).await?;
        let (target, others): (Vec<_>, Vec<_>) = remote.into_iter().partition(|m| m.remote_log_segment_id.id == *id);
        let Some(target) = target.into_iter().next() else {
            return Err(Error::not_found(format!("segment {id} of partition {tp} in the metadata")));
        };
        let segment = rsm_tiering::OffsetRange { start: target.start_offset, end: target.end_offset };
        let mut effect = DeletionEffect {
            segment,
            log_start_move: None,
            holes: Vec::new(),
            remote_gaps: Vec::new(),
            unreadable_copies: Vec::new(),
        };
        if target.state != RemoteLogSegmentState::CopySegmentFinished {
            return Ok(effect);
        }
        // Another copy holds some of these offsets only if it reads back whole from this store: a damaged
        // twin left as the only copy is a hole.
        let mut others = others;
        let mut kept = Vec::with_capacity(others.len());
        for m in others.drain(..) {
            let overlaps = m.state == RemoteLogSegmentState::CopySegmentFinished
                && m.start_offset <= segment.end
                && m.end_offset >= segment.start;
            match overlaps {
                false => kept.push(m),
                true => match expiration::present(&self.shared, &m, true).await {
                    Ok(()) => kept.push(m),
                    Err(e) => effect.unreadable_copies.push((
                        m.remote_log_segment_id.id,
                        rsm_tiering::OffsetRange { start: m.start_offset, end: m.end_offset },
                        e.to_string(),
                    )),
                },
            }
        }
        let others = kept;
        let before = rsm_tiering::remote_coverage(&offset_ranges(&[&[target.clone()][..], &others].concat())).gaps;
        effect.remote_gaps = rsm_tiering::remote_coverage(&offset_ranges(&others))
            .gaps
            .into_iter()
            .filter(|g| !before.contains(g))
            .collect();
        let mut after = offset_ranges(&others);
        after.extend(local.into_iter().flatten());
        let lowest = after.iter().map(|r| r.start).min();
        // A copy that does not read back whole holds nothing for the coverage, but it stays listed: the log
        // still starts at or below it, so offsets it does not hold whole above its start are a hole too.
        let lowest_unreadable = effect.unreadable_copies.iter().map(|(_, r, _)| r.start).min();
        for lost in rsm_tiering::uncovered(segment, &after) {
            let held_below = lowest.is_some_and(|low| low < lost.start);
            let listed_below = lowest_unreadable.is_some_and(|low| low <= lost.start);
            match held_below || listed_below {
                // Something held lies below: these offsets are a hole.
                true => effect.holes.push(lost),
                false => effect.log_start_move = Some(lost),
            }
        }
        Ok(effect)
    }

    /// Deletes one remote segment of a partition this engine leads: metadata to delete started, the data
    /// through the storage manager, metadata to delete finished. Returns the segment as it was.
    ///
    /// A partition not served here is taken as led by this host for the deletion.
    pub async fn delete_segment(&self, tp: &TopicIdPartition, id: &rsm_core::Uuid) -> Result<RemoteLogSegmentMetadata> {
        self.refuse_if_read_only(&format!("deleting segment {id} of {tp}"))?;
        let state = lock(&self.partitions).get(tp).cloned();
        let _run = match &state {
            Some(state) if !matches!(state.role(), Role::Leader { .. }) => {
                return Err(Error::invalid(format!("partition {tp} is a follower here: only its leader deletes")));
            }
            Some(state) => Some(state.run.lock().await),
            None => {
                self.shared.metadata.on_partition_leadership_changes(std::slice::from_ref(tp), &[]).await?;
                None
            }
        };
        let remote = self.shared.metadata.list_remote_log_segments(tp).await?;
        let md = remote
            .into_iter()
            .find(|m| m.remote_log_segment_id.id == *id)
            .ok_or_else(|| Error::not_found(format!("segment {id} of partition {tp} in the metadata")))?;
        lifecycle::delete_remote(&self.shared, &md).await?;
        if let Err(e) = self.shared.failed.drain(&md.remote_log_segment_id).await {
            tracing::warn!(partition = %tp, error = %e, "could not drain a finished deletion");
        }
        Ok(md)
    }

    /// Deletes the partition's remote data, as a broker does when its topic is deleted: the partition is
    /// marked for deletion, then every remote segment is deleted (metadata and objects, as retention does),
    /// then the deletion is finished; the partition is no longer served. Local files are left to the
    /// caller. A segment whose deletion fails is recorded in the failed-deletions log, and the partition's
    /// deletion stays started (an error says how many failed); a rerun goes on from there.
    pub async fn delete_partition(&self, tp: &TopicIdPartition) -> Result<usize> {
        self.refuse_if_read_only(&format!("deleting partition {tp}"))?;
        use rsm_metadata::{RemotePartitionDeleteMetadata, RemotePartitionDeleteState as S};
        if let Some(s) = lock(&self.scheduler).as_ref() {
            s.remove(tp);
        }
        let state = lock(&self.partitions).get(tp).cloned();
        let _run = match &state {
            Some(s) => Some(s.run.lock().await),
            None => None,
        };
        let c = &self.shared.config;
        let mark = |state| RemotePartitionDeleteMetadata {
            topic_id_partition: tp.clone(),
            state,
            event_timestamp_ms: c.now_ms(),
            broker_id: c.broker_id,
        };
        self.shared.metadata.on_partition_leadership_changes(std::slice::from_ref(tp), &[]).await?;
        self.shared.metadata.put_remote_partition_delete_metadata(&mark(S::DeletePartitionMarked)).await?;
        self.shared.metadata.put_remote_partition_delete_metadata(&mark(S::DeletePartitionStarted)).await?;
        let (mut deleted, mut failed) = (0, 0);
        for md in self.shared.metadata.list_remote_log_segments(tp).await? {
            match lifecycle::delete_remote(&self.shared, &md).await {
                Ok(()) => deleted += 1,
                Err(e) => {
                    failed += 1;
                    tracing::warn!(partition = %tp, segment = %md.remote_log_segment_id.id, error = %e,
                        "deletion of a segment of a deleted partition failed; recorded for retry");
                    self.shared.failed.record(&md).await?;
                }
            }
        }
        if failed > 0 {
            return Err(Error::retriable(
                format!(
                    "deleting partition {tp}: {failed} of its remote segments could not be deleted (recorded for retry)"
                ),
                "see the failed-deletions log",
            ));
        }
        self.shared.metadata.put_remote_partition_delete_metadata(&mark(S::DeletePartitionFinished)).await?;
        lock(&self.partitions).remove(tp);
        Ok(deleted)
    }

    /// Retries every deletion in the failed-deletions log (SR-35), whatever partition it is of: each is
    /// deleted again through the storage manager, its metadata moved to delete finished, and drained.
    /// Returns the segments retried with each one's outcome.
    pub async fn retry_failed_deletions(&self) -> Result<Vec<(RemoteLogSegmentMetadata, Result<()>)>> {
        self.refuse_if_read_only("retrying failed deletions")?;
        let mut out = Vec::new();
        for md in self.shared.failed.list().await? {
            let tp = md.remote_log_segment_id.topic_id_partition.clone();
            let result = async {
                self.shared.metadata.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await?;
                let current = self.shared.metadata.list_remote_log_segments(&tp).await?;
                match current.into_iter().find(|m| m.remote_log_segment_id == md.remote_log_segment_id) {
                    // Already finished (no longer listed): only the store's copy may be left.
                    None => self.shared.storage.delete_log_segment_data(&md).await,
                    Some(m) => lifecycle::delete_remote(&self.shared, &m).await,
                }?;
                self.shared.failed.drain(&md.remote_log_segment_id).await
            }
            .await;
            out.push((md, result));
        }
        Ok(out)
    }
}
