//! The copy task (SR-16): a leader's eligible segments, oldest first, through the storage manager, with
//! the metadata written before (copy started) and after (copy finished) each one.

use crate::lifecycle::{self, highest_copied};
use crate::local_log::LocalLog;
use crate::state::{PartitionState, Role, Shared, lock};
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::Result;
use rsm_tiering::{CopyInput, CopyPlan, CopyStop, segments_to_copy};

/// What one copy run did.
#[derive(Debug, Default)]
pub struct CopyOutcome {
    /// The segments copied, oldest first, as the metadata now has them (copy finished).
    pub copied: Vec<RemoteLogSegmentMetadata>,
    /// Why the walk stopped (`None` when the partition is not leader here).
    pub stop: Option<CopyStop>,
}

/// The segments the rules make due for copying now (SR-16), and where the walk stopped.
pub(crate) fn plan(
    state: &PartitionState,
    summaries: &[rsm_tiering::LocalSegmentSummary],
    log_end_offset: i64,
    remote: &[RemoteLogSegmentMetadata],
    now: i64,
) -> Result<CopyPlan> {
    let input = CopyInput {
        segments: summaries,
        log_end_offset,
        last_stable_offset: log_end_offset,
        highest_remote_offset: highest_copied(remote),
        lag: state.policy.copy_lag,
        now_ms: now,
    };
    segments_to_copy(&input).map_err(|e| e.context(format!("partition {}", state.tp)))
}

/// Copies what the rules say is due. A failed copy removes what its attempt left (objects, then the metadata
/// moved to delete finished) and fails the run, so the scheduler retries it later, under a new segment id.
/// The segments copied before a failure stay in `out`: they are copied and recorded, whatever came after.
pub(crate) async fn run(
    shared: &Shared,
    state: &PartitionState,
    log: &LocalLog,
    remote: &[RemoteLogSegmentMetadata],
    out: &mut CopyOutcome,
) -> Result<()> {
    if !matches!(state.role(), Role::Leader { .. }) {
        return Ok(());
    }
    let config = &shared.config;
    let plan = plan(state, &log.summaries()?, log.log_end_offset(), remote, config.now_ms())?;
    out.stop = Some(plan.stop);
    for candidate in plan.segments {
        // A leader that became a follower finishes the segment in flight and copies no more.
        if !matches!(state.role(), Role::Leader { .. }) {
            tracing::info!(partition = %state.tp, "no longer leader: the copy stops");
            out.stop = None;
            break;
        }
        let seg = log.segment(candidate.base_offset)?;
        let partition = log.partition();
        let md = partition.segment_metadata(seg, config.broker_id, config.now_ms())?;
        let data = partition.segment_data(seg)?;
        lifecycle::start_copy(shared, &md).await?;
        match lifecycle::store_copy(shared, &md, &data).await {
            Ok(custom) => {
                let finished = lifecycle::finish_copy(shared, &md, custom).await?;
                tracing::info!(partition = %state.tp, segment = %md.remote_log_segment_id.id,
                    start = md.start_offset, end = md.end_offset, "segment copied");
                let listener = lock(&shared.on_copied).clone();
                if let Some(l) = listener {
                    l(&state.tp, &finished);
                }
                out.copied.push(finished);
            }
            Err(e) => {
                tracing::warn!(partition = %state.tp, segment = %md.remote_log_segment_id.id, error = %e,
                    "copy failed; removing what the attempt left");
                lifecycle::remove_failed_copy(shared, &state.tp, &md).await;
                return Err(e.context(format!(
                    "copy of segment {} (offsets {}..={}) of {}",
                    md.remote_log_segment_id.id, md.start_offset, md.end_offset, state.tp
                )));
            }
        }
    }
    Ok(())
}
