//! Remote retention (SR-17): which remote segments expire, and the new earliest offsets.

use super::segments::{RemoteSegment, check_remote};
use super::settings::{Limit, RemoteRetention, SizeScope};
use rsm_core::error::{Error, Result};

/// What the remote retention rule looks at for one partition.
#[derive(Debug, Clone, Copy)]
pub struct RetentionInput<'a> {
    /// The partition's remote segments, oldest first.
    pub segments: &'a [RemoteSegment],
    /// The partition's log start offset (moved by retention and by DeleteRecords).
    pub log_start_offset: i64,
    /// The local log start offset (Lx): the first offset still held locally.
    pub local_log_start_offset: i64,
    /// The bytes of local segments not yet in remote storage. Counted against the size limit only when
    /// it is measured over the whole log ([`SizeScope::WholeLog`], Kafka's `retention.bytes`).
    pub local_only_bytes: u64,
    /// The topic's resolved remote retention.
    pub retention: RemoteRetention,
    /// Now, in ms since the epoch.
    pub now_ms: i64,
}

/// Why a remote segment is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpiryReason {
    /// It lies entirely below the log start offset (DeleteRecords, or an earlier retention run).
    LogStart,
    /// Its largest timestamp is more than the retention time old (strictly before `now - retention.ms`).
    Time,
    /// The tier is over its size limit by at least the whole segment.
    Size,
}

/// A remote segment to delete, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    /// The segment.
    pub segment: RemoteSegment,
    /// Why it goes.
    pub reason: ExpiryReason,
}

/// The outcome of a remote retention run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionPlan {
    /// The segments to delete, oldest first.
    pub delete: Vec<Expired>,
    /// The earliest offset left in remote storage (`None` when nothing is left).
    pub new_remote_start: Option<i64>,
    /// The partition's log start offset after the deletion (never lower than before).
    pub new_log_start_offset: i64,
}

/// Computes which remote segments expire (SR-17).
///
/// Segments are walked oldest first and the walk stops at the first segment kept, so what stays is
/// contiguous. A segment goes when:
/// 1. it lies entirely below the log start offset; or
/// 2. its largest timestamp is strictly before `now - retention.ms`, that is more than `retention.ms` old
///    (Kafka's remote log manager, `RemoteLogRetentionHandler.isSegmentBreachedByRetentionTime`:
///    `maxTimestampMs < cleanupUntilMs`, so a segment exactly `retention.ms` old stays; a timestamp in the
///    future never expires), and time retention is off while `now - retention.ms` is negative
///    (`RLMExpirationTask.buildRetentionTimeData` since Kafka 4.1: a clock or a setting that would reach
///    before the epoch deletes nothing by time); or
/// 3. the counted bytes exceed the size limit by at least the whole segment (Kafka's rule, so the tier is
///    never cut below its limit), and the segment lies entirely below the local log start offset: size
///    retention never removes records that are still in the local log, because moving the log start past
///    them would discard data local retention still keeps.
///
/// Segments deleted by 1 or 2 pay down the size excess too (Kafka does so for 2 only, and so can delete
/// one segment more than the limit needs after a DeleteRecords; we do not).
///
/// The new log start offset is the last deleted segment's end plus one, if that is higher.
pub fn expired_remote_segments(input: &RetentionInput<'_>) -> Result<RetentionPlan> {
    check_remote(input.segments)?;
    if input.log_start_offset < 0 || input.local_log_start_offset < 0 {
        return Err(Error::invalid(format!(
            "log start offset {} and local log start offset {} must not be negative",
            input.log_start_offset, input.local_log_start_offset
        )));
    }
    let r = input.retention;
    let remote_bytes: u64 = input.segments.iter().fold(0u64, |a, s| a.saturating_add(s.size_bytes));
    let counted = match r.size_scope {
        SizeScope::RemoteOnly => remote_bytes,
        SizeScope::WholeLog => remote_bytes.saturating_add(input.local_only_bytes),
    };
    let mut excess = match r.bytes {
        Limit::AtMost(limit) => counted.saturating_sub(limit),
        Limit::Unlimited => 0,
    };

    let mut delete = Vec::new();
    let mut log_start = input.log_start_offset;
    for s in input.segments {
        let reason = if s.end_offset < input.log_start_offset {
            excess = excess.saturating_sub(s.size_bytes);
            Some(ExpiryReason::LogStart)
        } else if breached_by_time(r.time_ms, input.now_ms, s.max_timestamp_ms) {
            excess = excess.saturating_sub(s.size_bytes);
            Some(ExpiryReason::Time)
        } else if excess > 0 && s.size_bytes <= excess && s.end_offset < input.local_log_start_offset {
            excess -= s.size_bytes;
            Some(ExpiryReason::Size)
        } else {
            None
        };
        let Some(reason) = reason else { break };
        log_start = log_start.max(s.end_offset + 1);
        delete.push(Expired { segment: *s, reason });
    }
    let new_remote_start = input.segments.get(delete.len()).map(|s| s.start_offset);
    Ok(RetentionPlan { delete, new_remote_start, new_log_start_offset: log_start })
}

/// Kafka's remote time-retention rule for one segment: whether a segment whose largest timestamp is
/// `max_timestamp_ms` has expired at `now_ms` under `retention.ms` = `time_ms`.
///
/// As Kafka 4.4.0's `RLMExpirationTask.buildRetentionTimeData` and
/// `RemoteLogRetentionHandler.isSegmentBreachedByRetentionTime`: with `cleanup_until = now - retention.ms`,
/// time retention applies only when the retention is limited and `cleanup_until >= 0`, and then the segment
/// expires when `max_timestamp_ms < cleanup_until` (strictly: a segment exactly `retention.ms` old stays).
/// A retention too large for an `i64`, or one that would reach before `i64::MIN`, never expires anything.
fn breached_by_time(time_ms: Limit, now_ms: i64, max_timestamp_ms: i64) -> bool {
    let Limit::AtMost(ms) = time_ms else { return false };
    let Ok(ms) = i64::try_from(ms) else { return false };
    match now_ms.checked_sub(ms) {
        Some(cleanup_until) => cleanup_until >= 0 && max_timestamp_ms < cleanup_until,
        None => false,
    }
}
