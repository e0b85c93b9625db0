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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segments::test_support::{aged, at};
    use Limit::{AtMost, Unlimited};

    const HOUR: i64 = 3_600_000;
    const NOW: i64 = 1_000 * HOUR;

    #[test]
    fn local_only_segments_below_the_remote_log_start_leave_only_past_total_retention() {
        const SEGS: &[(i64, u64, i64)] = &[(0, 10, 30 * HOUR), (100, 10, 20 * HOUR), (200, 10, 2 * HOUR), (300, 10, 0)];
        let segs = aged(SEGS, NOW);
        let day = AtMost(24 * HOUR as u64);
        let cases: &[(&str, i64, Option<i64>, Limit, i64)] = &[
            ("past retention and below the remote log start: gone", 0, Some(100), day, 100),
            ("the next one is within retention: it stays", 0, Some(300), day, 100),
            ("nothing remote: nothing moves", 0, None, day, 0),
            ("retention off: nothing moves", 0, Some(300), Unlimited, 0),
            ("a log start already above", 200, Some(300), day, 200),
            ("a segment reaching the remote log start is not local-only", 0, Some(50), day, 0),
        ];
        for &(name, start, rx, limit, want) in cases {
            assert_eq!(log_start_past_retention(&segs, start, rx, limit, NOW), want, "{name}");
        }
    }

    #[test]
    fn local_deletion_sr21() {
        use LocalDeletionReason::{LogStart, Size, Time};
        struct Case {
            name: &'static str,
            /// (base, size, age); the last is the active segment.
            segments: &'static [(i64, u64, i64)],
            log_end: i64,
            hw: i64,
            log_start: i64,
            known_remote: Option<(i64, i64)>,
            retention: RetentionLimits,
            delete: &'static [(i64, LocalDeletionReason)],
            waiting: Option<i64>,
        }
        const THREE: &[(i64, u64, i64)] = &[(0, 10, 10 * HOUR), (100, 10, 8 * HOUR), (200, 10, HOUR), (300, 10, 0)];
        let time = |h: i64| RetentionLimits { time_ms: AtMost((h * HOUR) as u64), bytes: Unlimited };
        let size = |b: u64| RetentionLimits { time_ms: Unlimited, bytes: AtMost(b) };
        let cases = [
            Case {
                name: "retention passed and metadata known: deleted",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((0, 299)),
                retention: time(5),
                delete: &[(0, Time), (100, Time)],
                waiting: None,
            },
            Case {
                name: "retention passed but metadata not known: deferred",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: None,
                retention: time(5),
                delete: &[],
                waiting: Some(0),
            },
            Case {
                name: "metadata known for the first segment only",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((0, 99)),
                retention: time(5),
                delete: &[(0, Time)],
                waiting: Some(100),
            },
            Case {
                name: "metadata known but retention not passed: kept",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((0, 299)),
                retention: time(20),
                delete: &[],
                waiting: None,
            },
            Case {
                name: "time boundary: age equal to the retention is kept (strict, as Kafka's local rule)",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((0, 299)),
                retention: time(8),
                delete: &[(0, Time)],
                waiting: None,
            },
            Case {
                name: "size: local log of 40 bytes over a limit of 25",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((0, 299)),
                retention: size(25),
                delete: &[(0, Size)],
                waiting: None,
            },
            Case {
                name: "size boundary: excess equal to whole segments",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((0, 299)),
                retention: size(20),
                delete: &[(0, Size), (100, Size)],
                waiting: None,
            },
            Case {
                name: "size passed but metadata not known: deferred",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: None,
                retention: size(20),
                delete: &[],
                waiting: Some(0),
            },
            Case {
                name: "below the log start offset: deleted without metadata",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 200,
                known_remote: None,
                retention: RetentionLimits { time_ms: Unlimited, bytes: Unlimited },
                delete: &[(0, LogStart), (100, LogStart)],
                waiting: None,
            },
            Case {
                name: "only segments entirely below the high watermark",
                segments: THREE,
                log_end: 350,
                hw: 150,
                log_start: 0,
                known_remote: Some((0, 299)),
                retention: time(0),
                delete: &[(0, Time)],
                waiting: None,
            },
            Case {
                name: "the active segment is never deleted",
                segments: &[(0, 10, 10 * HOUR)],
                log_end: 50,
                hw: 50,
                log_start: 0,
                known_remote: Some((0, 1000)),
                retention: time(0),
                delete: &[],
                waiting: None,
            },
            Case {
                name: "a gap in the remote log: deleted up to the gap, then waiting for remote",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((0, 99)),
                retention: time(0),
                delete: &[(0, Time)],
                waiting: Some(100),
            },
            Case {
                name: "the remote log starts above the local one: the local-only offsets stay",
                segments: THREE,
                log_end: 350,
                hw: 350,
                log_start: 0,
                known_remote: Some((100, 299)),
                retention: time(0),
                delete: &[],
                waiting: Some(0),
            },
            Case {
                name: "a future timestamp never expires by time",
                segments: &[(0, 10, -HOUR), (100, 10, 0)],
                log_end: 150,
                hw: 150,
                log_start: 0,
                known_remote: Some((0, 99)),
                retention: time(0),
                delete: &[],
                waiting: None,
            },
        ];
        for c in cases {
            let segs = aged(c.segments, NOW);
            let plan = local_segments_to_delete(&LocalRetentionInput {
                segments: &segs,
                log_end_offset: c.log_end,
                high_watermark: c.hw,
                log_start_offset: c.log_start,
                known_remote: c.known_remote.map(|(start, end)| OffsetRange { start, end }),
                retention: c.retention,
                now_ms: NOW,
            })
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            let got: Vec<(i64, LocalDeletionReason)> = plan.delete.iter().map(|d| (d.base_offset, d.reason)).collect();
            assert_eq!(got, c.delete, "{}: deleted", c.name);
            assert_eq!(plan.waiting_for_remote, c.waiting, "{}: waiting", c.name);
        }
    }

    #[test]
    fn local_deletion_bad_input() {
        struct Case {
            name: &'static str,
            bases: &'static [i64],
            hw: i64,
            log_start: i64,
            message: &'static str,
        }
        let cases = [
            Case {
                name: "out of order",
                bases: &[10, 5],
                hw: 20,
                log_start: 0,
                message: "out of order or overlapping",
            },
            Case {
                name: "overlapping (same base)",
                bases: &[5, 5],
                hw: 20,
                log_start: 0,
                message: "out of order or overlapping",
            },
            Case { name: "empty", bases: &[], hw: 20, log_start: 0, message: "is empty" },
            Case {
                name: "high watermark beyond log end",
                bases: &[0],
                hw: 99,
                log_start: 0,
                message: "high watermark 99 beyond the log end offset 20",
            },
            Case {
                name: "negative log start",
                bases: &[0],
                hw: 20,
                log_start: -1,
                message: "negative log start offset -1",
            },
        ];
        for c in cases {
            let segs = at(c.bases);
            let e = local_segments_to_delete(&LocalRetentionInput {
                segments: &segs,
                log_end_offset: 20,
                high_watermark: c.hw,
                log_start_offset: c.log_start,
                known_remote: None,
                retention: RetentionLimits { time_ms: Unlimited, bytes: Unlimited },
                now_ms: NOW,
            })
            .expect_err(c.name);
            assert!(e.to_string().contains(c.message), "{}: {e}", c.name);
        }
    }

    #[test]
    fn follower_log_start_sr17() {
        struct Case {
            name: &'static str,
            current: i64,
            leader: i64,
            want: i64,
        }
        let cases = [
            Case { name: "leader ahead: follow it", current: 100, leader: 250, want: 250 },
            Case { name: "leader behind: never move back", current: 300, leader: 250, want: 300 },
            Case { name: "equal", current: 7, leader: 7, want: 7 },
        ];
        for c in cases {
            assert_eq!(follower_log_start(c.current, c.leader), c.want, "{}", c.name);
        }
    }
}
