//! SR-21 local deletion (leaders and followers) and SR-17 a follower's log start.

mod common;

use Limit::{AtMost, Unlimited};
use common::{aged, at};
use rsm_tiering::follower::*;
use rsm_tiering::offsets::OffsetRange;
use rsm_tiering::settings::{Limit, RetentionLimits};

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
        Case { name: "out of order", bases: &[10, 5], hw: 20, log_start: 0, message: "out of order or overlapping" },
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
