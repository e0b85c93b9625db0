//! A remote segment's lifecycle around each store call: the metadata moved to copy started before a copy
//! and copy finished after, to delete started before a deletion and delete finished after; what a failed
//! copy or deletion leaves, and which segments count as copied.

use crate::config::{EngineConfig, within};
use crate::state::Shared;
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::{Error, Result};
use rsm_core::model::{CustomMetadata, LogSegmentData, RemoteLogSegmentState, TopicIdPartition};
use rsm_core::rsm::RemoteStorageManager;
use rsm_metadata::RemoteLogSegmentMetadataUpdate;
use rsm_tiering::OffsetRange;
use rsm_tiering::settings::catalogue::CUSTOM_METADATA_MAX_BYTES;

/// The highest end offset of the copied segments in `segments`.
pub(crate) fn highest_copied(segments: &[RemoteLogSegmentMetadata]) -> Option<i64> {
    segments.iter().filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished).map(|m| m.end_offset).max()
}

/// Whether `md` is a copy another host may still be making: started (not finished) by another broker id
/// (`rsm.engine.broker.id`) less than twice `rsm.engine.remote.timeout.ms` ago. A copy gives up within that
/// timeout and its host removes it, so such a copy is either in flight there or about to be removed by it:
/// the copy task waits at its offsets and the expiration leaves it. Older (its host died or lost its
/// store) it is abandoned, and removed. A copy this broker id started is never in flight elsewhere: one
/// process writes a partition directory at a time, so it was cut short.
pub(crate) fn copy_in_flight_elsewhere(config: &EngineConfig, md: &RemoteLogSegmentMetadata, now: i64) -> bool {
    let window = i64::try_from(config.remote_timeout.as_millis()).unwrap_or(i64::MAX).saturating_mul(2);
    md.state == RemoteLogSegmentState::CopySegmentStarted
        && md.broker_id != config.broker_id
        && now.saturating_sub(md.event_timestamp_ms) < window
}

/// The offsets of the copied segments in `segments`.
pub(crate) fn offset_ranges(segments: &[RemoteLogSegmentMetadata]) -> Vec<OffsetRange> {
    segments
        .iter()
        .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
        .map(|m| OffsetRange { start: m.start_offset, end: m.end_offset })
        .collect()
}

/// Records `md` (copy started) in the metadata, before its data goes to the store.
pub(crate) async fn start_copy(shared: &Shared, md: &RemoteLogSegmentMetadata) -> Result<()> {
    shared.metadata.add_remote_log_segment_metadata(md).await
}

/// Copies the segment's data through the storage manager, within the remote timeout. Custom metadata
/// above `remote.log.metadata.custom.metadata.max.bytes` fails the copy.
pub(crate) async fn store_copy(
    shared: &Shared,
    md: &RemoteLogSegmentMetadata,
    data: &LogSegmentData,
) -> Result<Option<CustomMetadata>> {
    let config = &shared.config;
    let id = md.remote_log_segment_id.id;
    let copy = shared.storage.copy_log_segment_data(md, data);
    within(config, || format!("copy of segment {id}"), copy).await.and_then(|custom| {
        let max = config.broker.custom_metadata_max_bytes as usize;
        match custom {
            Some(c) if c.0.len() > max => Err(Error::invalid(format!(
                "custom metadata of segment {} is {} bytes, above {} ({max})",
                md.remote_log_segment_id.id,
                c.0.len(),
                CUSTOM_METADATA_MAX_BYTES.key
            ))),
            c => Ok(c),
        }
    })
}

/// Moves `md` to copy finished, with the custom metadata the store returned. Returns the metadata as it
/// now is.
pub(crate) async fn finish_copy(
    shared: &Shared,
    md: &RemoteLogSegmentMetadata,
    custom: Option<CustomMetadata>,
) -> Result<RemoteLogSegmentMetadata> {
    let config = &shared.config;
    let mut update = RemoteLogSegmentMetadataUpdate::of(
        md,
        RemoteLogSegmentState::CopySegmentFinished,
        config.now_ms(),
        config.broker_id,
    );
    update.custom_metadata = custom;
    shared.metadata.update_remote_log_segment_metadata(&update).await?;
    Ok(update.apply_to(md))
}

/// Removes what a failed copy of `md` left (objects, then the metadata moved to delete finished). A failure
/// to do so is logged, not returned: the metadata stays copy started and the next expiration run removes it.
pub(crate) async fn remove_failed_copy(shared: &Shared, tp: &TopicIdPartition, md: &RemoteLogSegmentMetadata) {
    match delete_remote(shared, md).await {
        Ok(()) => {}
        // The store refuses the segment's keys: nothing was written under them.
        Err(cleanup) if cleanup.kind() == rsm_core::ErrorKind::InvalidArgument => {
            tracing::debug!(partition = %tp, error = %cleanup, "no cleanup: the store refuses its keys");
        }
        // The metadata stays copy started: the next expiration run removes it.
        Err(cleanup) => {
            tracing::warn!(partition = %tp, error = %cleanup, "cleanup after a failed copy failed")
        }
    }
}

/// Deletes a segment's data through the storage manager, with the metadata moved to delete started before
/// and delete finished after. A segment already in delete started is not moved again.
pub(crate) async fn delete_remote(shared: &Shared, md: &RemoteLogSegmentMetadata) -> Result<()> {
    let c = &shared.config;
    if md.state != RemoteLogSegmentState::DeleteSegmentStarted {
        let started = RemoteLogSegmentMetadataUpdate::of(
            md,
            RemoteLogSegmentState::DeleteSegmentStarted,
            c.now_ms(),
            c.broker_id,
        );
        shared.metadata.update_remote_log_segment_metadata(&started).await?;
    }
    let id = md.remote_log_segment_id.id;
    within(c, || format!("deletion of segment {id}"), shared.storage.delete_log_segment_data(md)).await?;
    let finished =
        RemoteLogSegmentMetadataUpdate::of(md, RemoteLogSegmentState::DeleteSegmentFinished, c.now_ms(), c.broker_id);
    shared.metadata.update_remote_log_segment_metadata(&finished).await
}

/// Deletes `md` of `tp`; a failure is recorded in the failed-deletions log instead of returned, and a
/// success drains the log of it. Returns whether the deletion succeeded.
pub(crate) async fn delete_or_record(shared: &Shared, tp: &TopicIdPartition, md: &RemoteLogSegmentMetadata) -> bool {
    match delete_remote(shared, md).await {
        Ok(()) => {
            if let Err(e) = shared.failed.drain(&md.remote_log_segment_id).await {
                tracing::warn!(partition = %tp, error = %e, "could not drain a finished deletion");
            }
            true
        }
        Err(e) => {
            tracing::warn!(partition = %tp, segment = %md.remote_log_segment_id.id, error = %e,
                "remote deletion failed; recorded for retry");
            if let Err(r) = shared.failed.record(md).await {
                tracing::error!(partition = %tp, error = %r, "could not record a failed deletion");
            }
            false
        }
    }
}
