//! The expiration task (SR-17, SR-21, SR-20, SR-35): remote retention through the storage manager and the
//! metadata (delete started, then delete finished), deletions that failed retried, copies a crash or a
//! failure left half done removed, and local segments deleted once they are safely remote.

use crate::config::EngineConfig;
use crate::lifecycle::{copy_in_flight_elsewhere, delete_or_record, highest_copied, offset_ranges};
use crate::local_log::LocalLog;
use crate::state::{PartitionState, Role, Shared};
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::Result;
use rsm_core::model::RemoteLogSegmentState;
use rsm_tiering::{
    ExpiryReason, LocalDeletion, LocalRetentionInput, OffsetRange, RemoteSegment, RetentionInput,
    expired_remote_segments, local_segments_to_delete, log_start_past_retention, remote_coverage,
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
    /// Base offsets of the local segments deleted.
    pub local_deleted: Vec<i64>,
    /// Offsets no copied segment holds between the remote log start and end (a segment deleted by hand
    /// from the middle): local deletion stops below the first.
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
    /// Offsets no copied segment holds between the remote log start and end.
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
    out.gaps = coverage.gaps;
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
    Ok(out)
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
    for md in &plan.duplicates {
        tracing::info!(partition = %state.tp, segment = %md.remote_log_segment_id.id,
            "deleting a copy whose offsets another copy covers");
    }
    for md in plan.duplicates.iter().chain(plan.expired.iter().map(|(m, _)| m)) {
        match delete_or_record(shared, &state.tp, md).await {
            true => out.expired.push(md.clone()),
            false => out.failed += 1,
        }
    }
    if let Some(first) = plan.gaps.first() {
        tracing::warn!(partition = %state.tp, gaps = plan.gaps.len(), from = first.start, to = first.end,
            "the remote log has a gap: no copied segment holds these offsets, so local segments from there on are kept");
    }
    for d in plan.local {
        log.delete_segment(d.base_offset)?;
        tracing::info!(partition = %state.tp, base = d.base_offset, reason = ?d.reason, "local segment deleted");
        out.local_deleted.push(d.base_offset);
    }
    Ok(out)
}
