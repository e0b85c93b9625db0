//! What an audit deletes when asked ([`AuditOptions::delete_orphans`](super::AuditOptions)): the orphans
//! last written at least the safety age ago, and the incomplete uploads to segments' keys as old, and
//! nothing else. Its safety refusal: when every such orphan is in a partition the metadata knows nothing of,
//! the metadata is probably not this store's (an empty or wrong metadata log makes everything look
//! orphaned), so nothing is deleted.

use super::partition_key;
use super::report::{AbortedUpload, Report};
use crate::Store;
use rsm_core::backend::IncompleteUpload;
use rsm_core::{Error, RemoteLogSegmentMetadata, Result};
use std::collections::HashSet;

/// Deletes the old orphans of the partitions `segments` name, and aborts the old incomplete uploads to
/// segments' keys, recording both in `report`; the old orphans of other partitions are kept, with a
/// warning. Refused (an invalid-argument error, nothing deleted nor aborted) when there are old orphans
/// and all of them are in partitions `segments` does not name.
pub(super) fn delete_orphans(store: &Store, segments: &[RemoteLogSegmentMetadata], report: &mut Report) -> Result<()> {
    let known_partitions: HashSet<(String, String)> =
        segments.iter().map(|m| partition_key(&m.remote_log_segment_id.topic_id_partition)).collect();
    let old_orphans = |known: bool| -> Vec<String> {
        report
            .partitions
            .iter()
            .filter(|(k, _)| known_partitions.contains(*k) == known)
            .flat_map(|(_, p)| p.orphans.iter().filter(|o| o.older_than_min_age).map(|o| o.key.clone()))
            .collect()
    };
    let (doomed, strangers) = (old_orphans(true), old_orphans(false));
    if doomed.is_empty() && !strangers.is_empty() {
        return Err(Error::invalid(format!(
            "--delete-orphans refused: the {} orphans are all in partitions the metadata knows nothing of \
             (is it the metadata of this store? an empty or wrong --metadata-dir makes everything look \
             orphaned); nothing was deleted",
            strangers.len()
        )));
    }
    if !strangers.is_empty() {
        tracing::warn!(kept = strangers.len(), "orphans in partitions the metadata does not know are kept");
    }
    // An incomplete upload is never data anyone can read, whatever the metadata says: those to segments'
    // keys past the safety age are aborted.
    let doomed_uploads: Vec<IncompleteUpload> =
        report.uploads.iter().filter(|f| f.old && f.partition.is_some()).map(|f| f.upload.clone()).collect();
    if !doomed_uploads.is_empty() {
        store.abort_uploads(&doomed_uploads)?;
    }
    report.aborted = doomed_uploads.into_iter().map(|u| AbortedUpload { key: u.key, upload_id: u.upload_id }).collect();
    if !doomed.is_empty() {
        store.delete_objects(&doomed)?;
    }
    report.deleted = doomed;
    Ok(())
}
