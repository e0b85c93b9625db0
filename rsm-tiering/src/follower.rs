//! Local segment deletion on a tiered partition, for followers (SR-21) and leaders alike, and the
//! follower's side of remote retention (SR-17).
//!
//! A replica deletes a local segment only when the remote metadata for it is known (the segment is at or
//! below the highest remote offset the replica has metadata for) and its local retention has passed, or
//! when it lies below the log start offset. A follower whose metadata lags keeps its segments even past
//! retention.

use super::offsets::{OffsetRange, local_segment_deletable};
use super::segments::{LocalSegmentSummary, age_ms, check_local};
use super::settings::{Limit, RetentionLimits};
use rsm_core::error::{Error, Result};

/// What the local deletion rule looks at for one replica of a partition.
#[derive(Debug, Clone, Copy)]
pub struct LocalRetentionInput<'a> {
    /// The local segments, oldest first; the last is the active segment.
    pub segments: &'a [LocalSegmentSummary],
    /// The local log end offset.
    pub log_end_offset: i64,
    /// The replica's high watermark: a segment is deleted only once it is entirely below it.
    pub high_watermark: i64,
    /// The partition's log start offset as this replica knows it.
    pub log_start_offset: i64,
    /// The offsets the copied remote segments whose metadata this replica has received (for a follower,
    /// from the metadata manager; for the leader, its own) cover without a gap from the remote log start
    /// ([`remote_coverage`](crate::remote_coverage)): a local segment is deleted against these only.
    pub known_remote: Option<OffsetRange>,
    /// The topic's effective local retention.
    pub retention: RetentionLimits,
    /// Now, in ms since the epoch.
    pub now_ms: i64,
}

/// Why a local segment is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalDeletionReason {
    /// It lies entirely below the log start offset.
    LogStart,
    /// Its largest timestamp is older than the local retention time.
    Time,
    /// The local log is over its size limit by at least the whole segment.
    Size,
}

/// A local segment to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalDeletion {
    /// The segment's base offset.
    pub base_offset: i64,
    /// The segment's last offset.
    pub end_offset: i64,
    /// Why it goes.
    pub reason: LocalDeletionReason,
}

/// The local segments to delete now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDeletionPlan {
    /// The segments to delete, oldest first.
    pub delete: Vec<LocalDeletion>,
    /// The base offset of the first segment whose retention has passed but whose remote metadata is not
    /// known yet: it and every later segment wait (SR-21).
    pub waiting_for_remote: Option<i64>,
}

/// Computes the local segments a replica deletes now (SR-21, SR-20).
///
/// Closed segments entirely below the high watermark are walked oldest first; the walk stops at the
/// first segment kept. A segment goes when it lies below the log start offset, or when its local
/// retention has passed and its remote metadata is known ([`local_segment_deletable`]). Retention
/// passes by time when `now - largest timestamp > local retention ms` (Kafka's local rule, strict), by
/// size when the local log (active segment included) exceeds the limit by at least the whole segment.
pub fn local_segments_to_delete(input: &LocalRetentionInput<'_>) -> Result<LocalDeletionPlan> {
    let segs = input.segments;
    check_local(segs, input.log_end_offset)?;
    if input.high_watermark > input.log_end_offset || input.log_start_offset < 0 {
        return Err(Error::invalid(format!(
            "high watermark {} beyond the log end offset {} or negative log start offset {}",
            input.high_watermark, input.log_end_offset, input.log_start_offset
        )));
    }
    let total: u64 = segs.iter().fold(0u64, |a, s| a.saturating_add(s.size_bytes));
    let mut excess = match input.retention.bytes {
        Limit::AtMost(limit) => total.saturating_sub(limit),
        Limit::Unlimited => 0,
    };
    let mut delete = Vec::new();
    let mut waiting_for_remote = None;
    for i in 0..segs.len() - 1 {
        let s = segs[i];
        let upper = segs[i + 1].base_offset;
        let end = upper - 1;
        if upper > input.high_watermark {
            break;
        }
        let reason = if end < input.log_start_offset {
            LocalDeletionReason::LogStart
        } else {
            let age = age_ms(input.now_ms, s.largest_timestamp_ms);
            let by_time = matches!(input.retention.time_ms, Limit::AtMost(ms) if age > 0 && age as u64 > ms);
            let by_size = excess > 0 && s.size_bytes <= excess;
            let reason = if by_time {
                LocalDeletionReason::Time
            } else if by_size {
                LocalDeletionReason::Size
            } else {
                break;
            };
            if !local_segment_deletable(s.base_offset, end, input.known_remote, input.log_start_offset) {
                waiting_for_remote = Some(s.base_offset);
                break;
            }
            reason
        };
        excess = excess.saturating_sub(s.size_bytes);
        delete.push(LocalDeletion { base_offset: s.base_offset, end_offset: end, reason });
    }
    Ok(LocalDeletionPlan { delete, waiting_for_remote })
}

/// The log start offset once the oldest local segments that lie wholly below the remote log start
/// `remote_log_start`, with no copied segment holding them (their copies expired in a run cut short before
/// its local deletions, or were deleted by hand), have passed the topic's total retention time
/// (`retention.ms`, strict as Kafka's rule): Kafka's retention would remove them anyway, so they leave the
/// log. Until then they stay, the only copy of their offsets. Nothing moves when nothing is remote.
pub fn log_start_past_retention(
    segments: &[LocalSegmentSummary],
    log_start_offset: i64,
    remote_log_start: Option<i64>,
    retention_time: Limit,
    now_ms: i64,
) -> i64 {
    let (Some(rx), Limit::AtMost(ms)) = (remote_log_start, retention_time) else { return log_start_offset };
    let mut start = log_start_offset;
    for w in segments.windows(2) {
        let end = w[1].base_offset - 1;
        if end < start {
            continue;
        }
        let age = age_ms(now_ms, w[0].largest_timestamp_ms);
        if end >= rx || age <= 0 || age as u64 <= ms {
            break;
        }
        start = end + 1;
    }
    start
}

/// A follower's log start offset after it learns the earliest offset the leader keeps (SR-17: the
/// follower fetches it and moves its own log start offset up; it never moves back).
pub fn follower_log_start(current: i64, leader_earliest: i64) -> i64 {
    current.max(leader_earliest)
}
