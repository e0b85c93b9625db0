//! The copy task (SR-16): a leader's eligible segments, oldest first, through the storage manager, with
//! the metadata written before (copy started) and after (copy finished) each one.

use crate::config::within;
use crate::local_log::LocalLog;
use crate::manager::{PartitionState, Role, Shared};
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::{Error, Result};
use rsm_core::model::RemoteLogSegmentState;
use rsm_core::rsm::RemoteStorageManager;
use rsm_metadata::RemoteLogSegmentMetadataUpdate;
use rsm_tiering::{CopyInput, CopyPlan, CopyStop, segments_to_copy};

/// What one copy run did.
#[derive(Debug, Default)]
pub struct CopyOutcome {
    /// The segments copied, oldest first, as the metadata now has them (copy finished).
    pub copied: Vec<RemoteLogSegmentMetadata>,
    /// Why the walk stopped (`None` when the partition is not leader here).
    pub stop: Option<CopyStop>,
}

/// The highest end offset of the copied segments in `segments`.
pub(crate) fn highest_copied(segments: &[RemoteLogSegmentMetadata]) -> Option<i64> {
    segments.iter().filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished).map(|m| m.end_offset).max()
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
        shared.metadata.add_remote_log_segment_metadata(&md).await?;
        let id = md.remote_log_segment_id.id;
        let copy = shared.storage.copy_log_segment_data(&md, &data);
        let copied = within(config, || format!("copy of segment {id}"), copy).await.and_then(|custom| {
            let max = config.broker.custom_metadata_max_bytes as usize;
            match custom {
                Some(c) if c.0.len() > max => Err(Error::invalid(format!(
                    "custom metadata of segment {} is {} bytes, above remote.log.metadata.custom.metadata.max.bytes ({max})",
                    md.remote_log_segment_id.id,
                    c.0.len()
                ))),
                c => Ok(c),
            }
        });
        match copied {
            Ok(custom) => {
                let mut update = RemoteLogSegmentMetadataUpdate::of(
                    &md,
                    RemoteLogSegmentState::CopySegmentFinished,
                    config.now_ms(),
                    config.broker_id,
                );
                update.custom_metadata = custom;
                shared.metadata.update_remote_log_segment_metadata(&update).await?;
                let finished = update.apply_to(&md);
                tracing::info!(partition = %state.tp, segment = %md.remote_log_segment_id.id,
                    start = md.start_offset, end = md.end_offset, "segment copied");
                let listener = shared.on_copied.lock().unwrap_or_else(|e| e.into_inner()).clone();
                if let Some(l) = listener {
                    l(&state.tp, &finished);
                }
                out.copied.push(finished);
            }
            Err(e) => {
                tracing::warn!(partition = %state.tp, segment = %md.remote_log_segment_id.id, error = %e,
                    "copy failed; removing what the attempt left");
                match crate::expiration::delete_remote(shared, &md).await {
                    Ok(()) => {}
                    // The store refuses the segment's keys: nothing was written under them.
                    Err(cleanup) if cleanup.kind() == rsm_core::ErrorKind::InvalidArgument => {
                        tracing::debug!(partition = %state.tp, error = %cleanup, "no cleanup: the store refuses its keys");
                    }
                    // The metadata stays copy started: the next expiration run removes it.
                    Err(cleanup) => {
                        tracing::warn!(partition = %state.tp, error = %cleanup, "cleanup after a failed copy failed")
                    }
                }
                return Err(e.context(format!(
                    "copy of segment {} (offsets {}..={}) of {}",
                    md.remote_log_segment_id.id, md.start_offset, md.end_offset, state.tp
                )));
            }
        }
    }
    Ok(())
}
