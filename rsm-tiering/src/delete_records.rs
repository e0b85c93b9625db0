//! DeleteRecords on a tiered partition (SR-25): the semantics are unchanged; the call moves the log start
//! offset and returns at once, and the remote segments now below it are cleaned asynchronously.

use super::segments::{RemoteSegment, check_remote};
use rsm_core::error::{Error, Result};

/// The offset a DeleteRecords request uses to mean "up to the high watermark" (Kafka's
/// `DeleteRecordsRequest.HIGH_WATERMARK`).
pub const DELETE_TO_HIGH_WATERMARK: i64 = -1;

/// The outcome of a DeleteRecords request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecordsOutcome {
    /// The log start offset after the request (Kafka's "low watermark" in the response).
    pub log_start_offset: i64,
    /// Whether the request moved the log start offset.
    pub moved: bool,
    /// Every remote segment now entirely below the log start offset, oldest first, for the host to
    /// delete asynchronously (a segment straddling the new log start stays). Segments left over from an
    /// earlier request whose cleanup has not run yet are listed again, so a failed cleanup is retried.
    pub remote_to_clean: Vec<RemoteSegment>,
}

/// The log start offset after a DeleteRecords request for `requested`: the requested offset when it is
/// above the current log start offset and at most the high watermark; the current one when it is not
/// above it. `-1` means the high watermark.
///
/// Errors: `requested` above the high watermark (Kafka answers `OFFSET_OUT_OF_RANGE`) or below -1; a
/// current log start offset that is negative or above the high watermark.
pub fn new_log_start(requested: i64, log_start_offset: i64, high_watermark: i64) -> Result<i64> {
    if log_start_offset < 0 || log_start_offset > high_watermark {
        return Err(Error::invalid(format!(
            "log start offset {log_start_offset} is outside [0, high watermark {high_watermark}]"
        )));
    }
    let target = match requested {
        DELETE_TO_HIGH_WATERMARK => high_watermark,
        r if r < 0 => {
            return Err(Error::invalid(format!(
                "DeleteRecords offset {r} is negative (only -1, the high watermark, is allowed)"
            )));
        }
        r if r > high_watermark => {
            return Err(Error::invalid(format!(
                "DeleteRecords offset {r} is above the high watermark {high_watermark} (OFFSET_OUT_OF_RANGE)"
            )));
        }
        r => r,
    };
    Ok(target.max(log_start_offset))
}

/// Applies a DeleteRecords request (SR-25): computes the new log start offset (see [`new_log_start`])
/// and the remote segments that must now be cleaned. Nothing waits for the cleanup.
pub fn delete_records(
    requested: i64,
    log_start_offset: i64,
    high_watermark: i64,
    remote: &[RemoteSegment],
) -> Result<DeleteRecordsOutcome> {
    check_remote(remote)?;
    let new = new_log_start(requested, log_start_offset, high_watermark)?;
    let remote_to_clean = remote.iter().take_while(|s| s.end_offset < new).copied().collect();
    Ok(DeleteRecordsOutcome { log_start_offset: new, moved: new > log_start_offset, remote_to_clean })
}
