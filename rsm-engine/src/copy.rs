//! The copy task (SR-16): a leader's eligible segments, oldest first, through the storage manager, with
//! the metadata written before (copy started) and after (copy finished) each one.

use crate::config::EngineConfig;
use crate::lifecycle::{self, copy_in_flight_elsewhere, highest_copied};
use crate::local_log::LocalLog;
use crate::state::{PartitionState, Role, Shared, lock};
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::Result;
use rsm_core::model::RemoteLogSegmentState;
use rsm_tiering::{CopyInput, CopyPlan, CopyStop, segments_to_copy};

/// What one copy run did.
#[derive(Debug, Default)]
pub struct CopyOutcome {
    /// The segments copied, oldest first, as the metadata now has them (copy finished).
    pub copied: Vec<RemoteLogSegmentMetadata>,
    /// Why the walk stopped (`None` when the partition is not leader here).
    pub stop: Option<CopyStop>,
}

/// The segments the rules make due for copying now (SR-16), and where the walk stopped: before the first
/// segment another host is copying (a copy another broker id started and may still be making), which waits
/// for that copy to finish or to be abandoned.
pub(crate) fn plan(
    config: &EngineConfig,
    state: &PartitionState,
    log: &LocalLog,
    summaries: &[rsm_tiering::LocalSegmentSummary],
    log_end_offset: i64,
    remote: &[RemoteLogSegmentMetadata],
    now: i64,
) -> Result<CopyPlan> {
    let mut input = CopyInput {
        segments: summaries,
        log_end_offset,
        last_stable_offset: log_end_offset,
        highest_remote_offset: highest_copied(remote),
        lag: state.policy.copy_lag,
        now_ms: now,
    };
    let context = |e: rsm_core::Error| e.context(format!("partition {}", state.tp));
    let mut plan = segments_to_copy(&input).map_err(context)?;
    // Kafka copies no segment that reaches the last stable offset: a transaction left open (its marker not
    // yet written, or gone from the directory) may still be aborted. The segments from the first due one
    // on tell where the first open transaction begins.
    if let Some(first) = plan.segments.first()
        && let Some(lso) = log.first_open_transaction(first.base_offset)?.filter(|&o| o < log_end_offset)
    {
        input.last_stable_offset = lso;
        plan = segments_to_copy(&input).map_err(context)?;
    }
    // A copy ends at its segment's last batch, which lies below the next segment's base offset when the
    // offsets between are gone from the directory: the rules, which know only base offsets, would take it
    // for uncopied. A finished copy starting at a segment's base offset is that segment's copy.
    // A finished copy starting at a segment's base offset that reaches its last batch is that segment's copy
    // (another replica's copy of a longer segment is not: the rest of it is copied).
    let mut copied_already = Vec::new();
    for c in &plan.segments {
        let same_start = remote
            .iter()
            .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished && m.start_offset == c.base_offset);
        if let Some(reach) = same_start.map(|m| m.end_offset).max() {
            let seg = log.segment(c.base_offset)?;
            if reach >= log.partition().segment_metadata(seg, config.broker_id, now)?.end_offset {
                copied_already.push(c.base_offset);
            }
        }
    }
    plan.segments.retain(|c| !copied_already.contains(&c.base_offset));
    let elsewhere = |base: i64| {
        remote
            .iter()
            .find(|m| copy_in_flight_elsewhere(config, m, now) && m.start_offset <= base && base <= m.end_offset)
    };
    if let Some(at) = plan.segments.iter().position(|c| elsewhere(c.base_offset).is_some()) {
        let base_offset = plan.segments[at].base_offset;
        if let Some(m) = elsewhere(base_offset) {
            tracing::info!(partition = %state.tp, segment = %m.remote_log_segment_id.id, broker = m.broker_id,
                start = m.start_offset, "another broker is copying these offsets: the copy waits for it");
        }
        plan.segments.truncate(at);
        plan.stop = CopyStop::Delayed { base_offset };
    }
    Ok(plan)
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
    let plan = plan(config, state, log, &log.summaries()?, log.log_end_offset(), remote, config.now_ms())?;
    out.stop = Some(plan.stop);
    for candidate in plan.segments {
        // A leader that became a follower finishes the segment in flight and copies no more.
        if !matches!(state.role(), Role::Leader { .. }) {
            tracing::info!(partition = %state.tp, "no longer leader: the copy stops");
            out.stop = None;
            break;
        }
        // Another broker leading the partition too (two hosts told to lead it): what it copied or is copying
        // since the run began (the metadata as of this host's last write) is not copied again here.
        let now_remote = shared.metadata.list_remote_log_segments(&state.tp).await?;
        let now = config.now_ms();
        let elsewhere = now_remote.iter().find(|m| {
            m.start_offset <= candidate.base_offset
                && candidate.base_offset <= m.end_offset
                && (m.state == RemoteLogSegmentState::CopySegmentFinished || copy_in_flight_elsewhere(config, m, now))
        });
        if let Some(m) = elsewhere {
            tracing::info!(partition = %state.tp, segment = %m.remote_log_segment_id.id, broker = m.broker_id,
                start = m.start_offset, "another broker copied or is copying these offsets: the copy stops");
            out.stop = Some(CopyStop::Delayed { base_offset: candidate.base_offset });
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
