//! The expiration task (SR-17, SR-21, SR-20, SR-35): remote retention through the storage manager and the
//! metadata (delete started, then delete finished), deletions that failed retried, copies a crash or a
//! failure left half done removed, and local segments deleted once they are safely remote.

use crate::config::{EngineConfig, within};
use crate::lifecycle::{copy_in_flight_elsewhere, delete_or_record, highest_copied, offset_ranges};
use crate::local_log::LocalLog;
use crate::state::{PartitionState, Role, Shared};
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::{Error, Result};
use rsm_core::model::RemoteLogSegmentState;
use rsm_tiering::{
    ExpiryReason, LocalDeletion, LocalRetentionInput, OffsetRange, RemoteSegment, RetentionInput,
    expired_remote_segments, local_segments_to_delete, log_gaps, log_start_past_retention, remote_coverage, uncovered,
};

/// What one expiration run did.
#[derive(Debug, Default)]
pub struct ExpirationOutcome {
    /// Remote segments deleted by retention, oldest first.
    pub expired: Vec<RemoteLogSegmentMetadata>,
    /// Segments whose earlier deletion had not finished (a failure or a crash), deleted now.
    pub retried: Vec<RemoteLogSegmentMetadata>,
    /// Copies that never finished (a failure or a crash), removed now.
    pub abandoned_copies: Vec<RemoteLogSegmentMetadata>,
    /// Deletions that failed in this run (recorded in the failed-deletions log, retried next run).
    pub failed: usize,
    /// Copies whose offsets another copy covers, kept because that copy is not whole in this store (damaged
    /// since it was made, or missing): each with why. The store needs an operator (`rsm audit`).
    pub kept_duplicates: Vec<(RemoteLogSegmentMetadata, String)>,
    /// Base offsets of the local segments deleted.
    pub local_deleted: Vec<i64>,
    /// Holes of the log: offsets neither a copied segment nor the local log holds, between the remote
    /// log start and the local log end (a segment deleted by hand from the middle or from the end of the
    /// remote log, a local segment removed by hand): local deletion stops below the first.
    pub gaps: Vec<OffsetRange>,
}

/// What an expiration run of a partition will do, worked out from its local log and its metadata alone
/// (nothing is read from the store or changed): `rsm tier --dry-run` prints it, and a run carries it out.
#[derive(Debug, Default, Clone)]
pub struct ExpirationPlan {
    /// Segments whose deletion had not finished, deleted again (leader).
    pub unfinished_deletions: Vec<RemoteLogSegmentMetadata>,
    /// Copies that never finished, removed (leader).
    pub unfinished_copies: Vec<RemoteLogSegmentMetadata>,
    /// Copies whose offsets an earlier copy covers whole, deleted (leader).
    pub duplicates: Vec<RemoteLogSegmentMetadata>,
    /// Remote segments remote retention deletes, oldest first, with why (leader).
    pub expired: Vec<(RemoteLogSegmentMetadata, ExpiryReason)>,
    /// Local segments deleted, oldest first, with why.
    pub local: Vec<LocalDeletion>,
    /// The partition's log start offset once the run is done: local segments wholly below it go without a
    /// remote copy (retention, or remote segments deleted below it).
    pub log_start_offset: i64,
    /// Holes of the log: offsets neither a copied segment nor the local log holds, between the remote
    /// log start and the local log end.
    pub gaps: Vec<OffsetRange>,
}

/// Plans the partition's expiration. `remote` is its metadata (with the segments a copy just finished, or
/// would finish).
pub(crate) fn plan(
    config: &EngineConfig,
    state: &PartitionState,
    summaries: &[rsm_tiering::LocalSegmentSummary],
    log_end_offset: i64,
    remote: &[RemoteLogSegmentMetadata],
    now: i64,
) -> Result<ExpirationPlan> {
    let mut out = ExpirationPlan::default();
    let leader = matches!(state.role(), Role::Leader { .. });
    let mut copied: Vec<RemoteLogSegmentMetadata> = Vec::new();
    for md in remote {
        match md.state {
            RemoteLogSegmentState::DeleteSegmentStarted if leader => out.unfinished_deletions.push(md.clone()),
            // A copy another host may still be making is left to it (see `copy_in_flight_elsewhere`).
            RemoteLogSegmentState::CopySegmentStarted if leader && copy_in_flight_elsewhere(config, md, now) => {}
            // This host copies this partition one run at a time: a copy started in an earlier run and not
            // finished was cut short; so was another host's past the time a copy may take.
            RemoteLogSegmentState::CopySegmentStarted if leader => out.unfinished_copies.push(md.clone()),
            RemoteLogSegmentState::CopySegmentFinished => copied.push(md.clone()),
            _ => {}
        }
    }
    copied.sort_by_key(|m| (m.start_offset, m.end_offset));

    let leo = log_end_offset;
    let local_start = summaries.first().map_or(leo, |s| s.base_offset);
    let mut log_start = copied.first().map_or(local_start, |m| m.start_offset.min(local_start));

    if leader {
        // A copy whose offsets an earlier copy covers whole (a leader change, an earlier engine) is not
        // part of the remote log: it goes first. One that only overlaps is kept; the rules see it from the
        // first offset it adds.
        let mut kept: Vec<RemoteLogSegmentMetadata> = Vec::with_capacity(copied.len());
        for md in copied {
            if kept.last().is_some_and(|prev| md.end_offset <= prev.end_offset) {
                out.duplicates.push(md);
                continue;
            }
            kept.push(md);
        }
        copied = kept;
        let highest = highest_copied(&copied);
        let local_only_bytes =
            summaries.iter().filter(|s| highest.is_none_or(|h| s.base_offset > h)).map(|s| s.size_bytes).sum();
        let mut segments: Vec<RemoteSegment> = Vec::with_capacity(copied.len());
        for m in &copied {
            let start =
                segments.last().map_or(m.start_offset, |p: &RemoteSegment| m.start_offset.max(p.end_offset + 1));
            segments.push(RemoteSegment {
                start_offset: start,
                end_offset: m.end_offset,
                size_bytes: m.segment_size_in_bytes.max(0) as u64,
                max_timestamp_ms: m.max_timestamp_ms,
            });
        }
        let plan = expired_remote_segments(&RetentionInput {
            segments: &segments,
            log_start_offset: log_start,
            local_log_start_offset: local_start,
            local_only_bytes,
            retention: state.policy.remote_retention,
            now_ms: now,
        })
        .map_err(|e| e.context(format!("remote retention of {}", state.tp)))?;
        out.expired = copied.drain(..plan.delete.len()).zip(plan.delete.iter().map(|e| e.reason)).collect();
        log_start = log_start.max(plan.new_log_start_offset);
    }

    // Local segments go only once their copy is finished and known (SR-20, SR-21), and only against the
    // copied offsets contiguous from the remote log start: a gap stops local deletion there.
    let coverage = remote_coverage(&offset_ranges(&copied));
    out.gaps = log_gaps(&offset_ranges(&copied), &local_ranges(summaries, leo, remote));
    log_start = log_start_past_retention(
        summaries,
        log_start,
        coverage.contiguous.map(|c| c.start),
        state.policy.remote_retention.time_ms,
        now,
    );
    out.local = local_segments_to_delete(&LocalRetentionInput {
        segments: summaries,
        log_end_offset: leo,
        high_watermark: leo,
        log_start_offset: log_start,
        known_remote: coverage.contiguous,
        retention: state.policy.local_retention,
        now_ms: now,
    })
    .map_err(|e| e.context(format!("local retention of {}", state.tp)))?
    .delete;
    out.log_start_offset = log_start;
    Ok(out)
}

/// The offsets each local segment holds, as far as known without reading it: from its base offset to the
/// next segment's base (the log end for the active one, which holds at least its base offset), or to its
/// last batch when a finished copy of it (starting at its base offset) says where that is: a copy ends at
/// its segment's last batch, so offsets between that and the next segment (a segment removed by hand) show
/// as a hole.
pub(crate) fn local_ranges(
    summaries: &[rsm_tiering::LocalSegmentSummary],
    log_end_offset: i64,
    remote: &[RemoteLogSegmentMetadata],
) -> Vec<OffsetRange> {
    let mut out = Vec::with_capacity(summaries.len());
    for (i, s) in summaries.iter().enumerate() {
        // The active segment counts from its base offset even while empty: the log goes on from there.
        let upper = summaries.get(i + 1).map_or(log_end_offset.max(s.base_offset + 1), |n| n.base_offset) - 1;
        let copied_end = remote
            .iter()
            .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished && m.start_offset == s.base_offset)
            .map(|m| m.end_offset)
            .max();
        let end = copied_end.map_or(upper, |e| e.min(upper));
        if end >= s.base_offset {
            out.push(OffsetRange { start: s.base_offset, end });
        }
    }
    out
}

/// Runs retention for the partition as [`plan`] says. `remote` is the partition's metadata as listed at
/// the start of the run, with the segments the copy task just finished.
pub(crate) async fn run(
    shared: &Shared,
    state: &PartitionState,
    log: &LocalLog,
    remote: &[RemoteLogSegmentMetadata],
) -> Result<ExpirationOutcome> {
    let summaries = log.summaries()?;
    let plan = plan(&shared.config, state, &summaries, log.log_end_offset(), remote, shared.config.now_ms())?;
    let mut out = ExpirationOutcome { gaps: plan.gaps.clone(), ..Default::default() };
    for md in &plan.unfinished_deletions {
        match delete_or_record(shared, &state.tp, md).await {
            true => out.retried.push(md.clone()),
            false => out.failed += 1,
        }
    }
    for md in &plan.unfinished_copies {
        match delete_or_record(shared, &state.tp, md).await {
            true => out.abandoned_copies.push(md.clone()),
            false => out.failed += 1,
        }
    }
    // A duplicate's offsets stay in the log: it goes only once the copies left holding them are in this
    // store and whole (else it is the one intact copy of them, and stays).
    let duplicate_ids: std::collections::HashSet<_> =
        plan.duplicates.iter().map(|m| m.remote_log_segment_id.id).collect();
    let survivors: Vec<RemoteLogSegmentMetadata> = remote
        .iter()
        .filter(|m| {
            m.state == RemoteLogSegmentState::CopySegmentFinished
                && !duplicate_ids.contains(&m.remote_log_segment_id.id)
        })
        .cloned()
        .collect();
    let mut duplicates = Vec::with_capacity(plan.duplicates.len());
    for md in &plan.duplicates {
        match duplicate_held_elsewhere(shared, &survivors, md, plan.log_start_offset).await {
            Ok(()) => {
                tracing::info!(partition = %state.tp, segment = %md.remote_log_segment_id.id,
                    "deleting a copy whose offsets another copy covers");
                duplicates.push(md);
            }
            Err(e) => {
                tracing::warn!(partition = %state.tp, segment = %md.remote_log_segment_id.id, error = %e,
                    "a copy whose offsets another copy covers is kept: that copy is not whole in this store");
                out.kept_duplicates.push((md.clone(), e.to_string()));
            }
        }
    }
    for md in duplicates.into_iter().chain(plan.expired.iter().map(|(m, _)| m)) {
        match delete_or_record(shared, &state.tp, md).await {
            true => out.expired.push(md.clone()),
            false => out.failed += 1,
        }
    }
    if let Some(first) = plan.gaps.first() {
        tracing::warn!(partition = %state.tp, gaps = plan.gaps.len(), from = first.start, to = first.end,
            "the log has a hole: neither a copied segment nor the local log holds these offsets, so local segments \
             from there on are kept");
    }
    // Whatever the plan says, a local segment goes only once this proof holds for it.
    let deleted: std::collections::HashSet<_> = out
        .expired
        .iter()
        .chain(&out.retried)
        .chain(&out.abandoned_copies)
        .map(|m| m.remote_log_segment_id.id)
        .collect();
    let kept: Vec<RemoteLogSegmentMetadata> = remote
        .iter()
        .filter(|m| {
            m.state == RemoteLogSegmentState::CopySegmentFinished && !deleted.contains(&m.remote_log_segment_id.id)
        })
        .cloned()
        .collect();
    let mut proof = LocalDeletionProof {
        tp: state.tp.clone(),
        bases: summaries.iter().map(|s| s.base_offset).collect(),
        log_start: plan.log_start_offset,
        copied: kept,
        checked: Default::default(),
    };
    for (i, d) in plan.local.iter().enumerate() {
        proof.check(shared, i, d).await?;
        log.delete_segment(d.base_offset)?;
        tracing::info!(partition = %state.tp, base = d.base_offset, reason = ?d.reason, "local segment deleted");
        out.local_deleted.push(d.base_offset);
    }
    Ok(out)
}

/// The rule that keeps every offset somewhere, checked where local segments are deleted, one segment at a
/// time, oldest first (a failure keeps that segment and every later one, and fails the run): the segment
/// must be the oldest left, and every offset of it at or above `log_start` (the log start once this run is
/// done; what lies below it has left the log by retention) must be held by the copied segments `copied`
/// without a hole, each of those segments present in this store: its manifest reads now (the cache
/// bypassed), so a store that is not the one the metadata speaks of (an empty directory, a share not
/// mounted, another bucket) deletes nothing, and with `rsm.engine.local.delete.verify` (the default) its
/// data reads back whole and checked, so a copy damaged since it was made keeps the local one. Each copy is
/// checked once a run.
struct LocalDeletionProof {
    tp: rsm_core::TopicIdPartition,
    /// The local segments' base offsets, oldest first, as the run found them.
    bases: Vec<i64>,
    log_start: i64,
    copied: Vec<RemoteLogSegmentMetadata>,
    /// The copies checked this run, and whether read back whole (else their manifest only).
    checked: std::collections::HashMap<rsm_core::Uuid, bool>,
}

impl LocalDeletionProof {
    /// Proves that deleting `d`, the `i`-th local deletion of the run (the `i` before it done), keeps every
    /// offset somewhere; an error names what is missing, and `d` must then stay.
    async fn check(&mut self, shared: &Shared, i: usize, d: &LocalDeletion) -> Result<()> {
        let tp = &self.tp;
        if self.bases.get(i) != Some(&d.base_offset) {
            return Err(kept_error(
                tp,
                d.base_offset,
                "it is not the oldest left, so deleting it would cut a hole in the local log",
            ));
        }
        let Some(&next) = self.bases.get(i + 1) else {
            return Err(kept_error(tp, d.base_offset, "it is the active segment"));
        };
        let need = OffsetRange { start: d.base_offset.max(self.log_start), end: next - 1 };
        if need.start > need.end {
            return Ok(());
        }
        if let Some(hole) = uncovered(need, &offset_ranges(&self.copied)).first() {
            return Err(kept_error(
                tp,
                d.base_offset,
                format!("no copied segment holds offsets {}..={}", hole.start, hole.end),
            ));
        }
        // The copies holding the segment's offsets, each read back whole; and the remote log's first copy, its
        // manifest only: a store that lacks the start of the remote log is not the one the metadata speaks of
        // (an empty mount point), even where this run's own copies went into it.
        let first =
            self.copied.iter().min_by_key(|m| (m.start_offset, m.end_offset)).map(|m| m.remote_log_segment_id.id);
        let holding: Vec<(RemoteLogSegmentMetadata, bool)> = self
            .copied
            .iter()
            .filter(|m| m.end_offset >= need.start && m.start_offset <= need.end)
            .map(|m| (m.clone(), true))
            .chain(self.copied.iter().filter(|m| Some(m.remote_log_segment_id.id) == first).map(|m| (m.clone(), false)))
            .filter(|(m, whole)| self.checked.get(&m.remote_log_segment_id.id).is_none_or(|&done| *whole && !done))
            .collect();
        for (m, whole) in &holding {
            let id = m.remote_log_segment_id.id;
            // The store's own error, its kind and whether a retry may mend it kept (a hanging store is a
            // transient failure, past `rsm.engine.remote.timeout.ms`).
            present(shared, m, *whole).await.map_err(|e| {
                e.context(format!(
                    "partition {tp}: local segment {} and the ones after it are kept: the metadata says segment {id} \
                     (offsets {}..={}) is copied, but this store does not hold it whole (is it the store the \
                     segment was copied to, not an empty directory, a share not mounted, another bucket? or was the \
                     copy damaged since? `rsm audit` tells)",
                    d.base_offset, m.start_offset, m.end_offset
                ))
            })?;
            let done = self.checked.entry(id).or_default();
            *done |= *whole;
        }
        Ok(())
    }
}

/// The proof before a duplicate copy `md` is deleted: its offsets at or above `log_start` (those that stay in
/// the log) are held without a hole by the other finished copies, `survivors`, and each of those holding them
/// is in this store and, with `rsm.engine.local.delete.verify`, reads back whole. A copy damaged since it was
/// made must not outlive its intact duplicate.
async fn duplicate_held_elsewhere(
    shared: &Shared,
    survivors: &[RemoteLogSegmentMetadata],
    md: &RemoteLogSegmentMetadata,
    log_start: i64,
) -> Result<()> {
    let need = OffsetRange { start: md.start_offset.max(log_start), end: md.end_offset };
    if need.start > need.end {
        return Ok(());
    }
    if let Some(hole) = uncovered(need, &offset_ranges(survivors)).first() {
        return Err(Error::invalid(format!("no other copy holds offsets {}..={}", hole.start, hole.end)));
    }
    for m in survivors.iter().filter(|m| m.end_offset >= need.start && m.start_offset <= need.end) {
        present(shared, m, true).await.map_err(|e| {
            e.context(format!(
                "segment {} (offsets {}..={}), which holds its offsets, does not read back whole",
                m.remote_log_segment_id.id, m.start_offset, m.end_offset
            ))
        })?;
    }
    Ok(())
}

/// The error of a local segment kept for want of proof.
fn kept_error(tp: &rsm_core::TopicIdPartition, base_offset: i64, why: impl std::fmt::Display) -> Error {
    Error::invalid(format!("partition {tp}: local segment {base_offset} and the ones after it are kept: {why}"))
}

/// Whether this store holds the copied segment `m`: its manifest reads (the cache bypassed) and, when `whole`
/// and with `rsm.engine.local.delete.verify`, its data reads back whole and checked. What a local segment's
/// or a duplicate copy's deletion needs of the copies left holding its offsets.
pub(crate) async fn present(shared: &Shared, m: &RemoteLogSegmentMetadata, whole: bool) -> Result<()> {
    let config = &shared.config;
    let what = || format!("the check of segment {} before a deletion", m.remote_log_segment_id.id);
    within(config, what, shared.storage.read_segment_manifest(m)).await?;
    if whole && config.local_delete_verify {
        within(config, what, shared.storage.verify(m)).await?;
    }
    Ok(())
}
