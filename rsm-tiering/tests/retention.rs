//! SR-17 remote retention: which remote segments `expired_remote_segments` deletes, and why.

use Limit::{AtMost, Unlimited};
use rsm_tiering::retention::*;
use rsm_tiering::segments::RemoteSegment;
use rsm_tiering::settings::{Limit, RemoteRetention, SizeScope};

const DAY: i64 = 86_400_000;
const GB: u64 = 1 << 30;
const NOW: i64 = 100 * DAY;

fn seg(start: i64, end: i64, size: u64, age: i64) -> RemoteSegment {
    RemoteSegment { start_offset: start, end_offset: end, size_bytes: size, max_timestamp_ms: NOW - age }
}

/// Four 1 GB remote segments aged 10, 8, 6 and 2 days.
fn four() -> Vec<RemoteSegment> {
    vec![seg(0, 99, GB, 10 * DAY), seg(100, 199, GB, 8 * DAY), seg(200, 299, GB, 6 * DAY), seg(300, 399, GB, 2 * DAY)]
}

fn remote_only(time_ms: Limit, bytes: Limit) -> RemoteRetention {
    RemoteRetention { time_ms, bytes, size_scope: SizeScope::RemoteOnly }
}

#[test]
fn remote_retention() {
    use ExpiryReason::{LogStart, Size, Time};
    struct Case {
        name: &'static str,
        segments: Vec<RemoteSegment>,
        log_start: i64,
        local_start: i64,
        local_only: u64,
        retention: RemoteRetention,
        delete: &'static [(i64, ExpiryReason)],
        remote_start: Option<i64>,
        log_start_after: i64,
    }
    let cases = [
        Case {
            name: "unlimited: nothing expires",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(Unlimited, Unlimited),
            delete: &[],
            remote_start: Some(0),
            log_start_after: 0,
        },
        Case {
            name: "time 7 days: the 10 and 8 day old segments",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(AtMost(7 * DAY as u64), Unlimited),
            delete: &[(0, Time), (100, Time)],
            remote_start: Some(200),
            log_start_after: 200,
        },
        Case {
            name: "time boundary: age equal to the retention stays (Kafka: maxTimestamp < now - retention.ms)",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(AtMost(8 * DAY as u64), Unlimited),
            delete: &[(0, Time)],
            remote_start: Some(100),
            log_start_after: 100,
        },
        Case {
            name: "time boundary: age one ms over the retention expires",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(AtMost(8 * DAY as u64 - 1), Unlimited),
            delete: &[(0, Time), (100, Time)],
            remote_start: Some(200),
            log_start_after: 200,
        },
        Case {
            name: "time boundary: retention 0 keeps a segment stamped now, deletes one 1 ms old",
            segments: vec![seg(0, 99, GB, 1), seg(100, 199, GB, 0)],
            log_start: 0,
            local_start: 200,
            local_only: 0,
            retention: remote_only(AtMost(0), Unlimited),
            delete: &[(0, Time)],
            remote_start: Some(100),
            log_start_after: 100,
        },
        Case {
            name: "time boundary: age one ms under the retention stays",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(AtMost(8 * DAY as u64 + 1), Unlimited),
            delete: &[(0, Time)],
            remote_start: Some(100),
            log_start_after: 100,
        },
        Case {
            name: "now - retention.ms before the epoch: time retention is off (Kafka 4.1+)",
            segments: vec![seg(0, 99, GB, NOW + 10 * DAY)],
            log_start: 0,
            local_start: 100,
            local_only: 0,
            retention: remote_only(AtMost(NOW as u64 + 1), Unlimited),
            delete: &[],
            remote_start: Some(0),
            log_start_after: 0,
        },
        Case {
            name: "now - retention.ms exactly the epoch: time retention is on",
            segments: vec![seg(0, 99, GB, NOW + 10 * DAY)],
            log_start: 0,
            local_start: 100,
            local_only: 0,
            retention: remote_only(AtMost(NOW as u64), Unlimited),
            delete: &[(0, Time)],
            remote_start: None,
            log_start_after: 100,
        },
        Case {
            name: "time: the walk stops at the first young segment",
            segments: vec![seg(0, 99, GB, 10 * DAY), seg(100, 199, GB, DAY), seg(200, 299, GB, 10 * DAY)],
            log_start: 0,
            local_start: 300,
            local_only: 0,
            retention: remote_only(AtMost(7 * DAY as u64), Unlimited),
            delete: &[(0, Time)],
            remote_start: Some(100),
            log_start_after: 100,
        },
        Case {
            name: "time: a timestamp in the future never expires",
            segments: vec![seg(0, 99, GB, -DAY)],
            log_start: 0,
            local_start: 100,
            local_only: 0,
            retention: remote_only(AtMost(0), Unlimited),
            delete: &[],
            remote_start: Some(0),
            log_start_after: 0,
        },
        Case {
            name: "size 2 GB of 4: the two oldest",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(Unlimited, AtMost(2 * GB)),
            delete: &[(0, Size), (100, Size)],
            remote_start: Some(200),
            log_start_after: 200,
        },
        Case {
            name: "size boundary: total equal to the limit deletes nothing",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(Unlimited, AtMost(4 * GB)),
            delete: &[],
            remote_start: Some(0),
            log_start_after: 0,
        },
        Case {
            name: "size: a segment goes only when the excess covers all of it",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(Unlimited, AtMost(2 * GB + GB / 2)),
            delete: &[(0, Size)],
            remote_start: Some(100),
            log_start_after: 100,
        },
        Case {
            name: "time and size: time pays down the excess, size takes the rest",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(AtMost(9 * DAY as u64), AtMost(GB)),
            delete: &[(0, Time), (100, Size), (200, Size)],
            remote_start: Some(300),
            log_start_after: 300,
        },
        Case {
            name: "time and size: the larger of the two wins",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(AtMost(5 * DAY as u64), AtMost(3 * GB)),
            delete: &[(0, Time), (100, Time), (200, Time)],
            remote_start: Some(300),
            log_start_after: 300,
        },
        Case {
            name: "size never passes the local log start",
            segments: four(),
            log_start: 0,
            local_start: 200,
            local_only: 0,
            retention: remote_only(Unlimited, AtMost(GB)),
            delete: &[(0, Size), (100, Size)],
            remote_start: Some(200),
            log_start_after: 200,
        },
        Case {
            name: "size with the local log start inside a segment keeps that segment",
            segments: four(),
            log_start: 0,
            local_start: 150,
            local_only: 0,
            retention: remote_only(Unlimited, AtMost(GB)),
            delete: &[(0, Size)],
            remote_start: Some(100),
            log_start_after: 100,
        },
        Case {
            name: "time does pass the local log start: the local copy has expired too",
            segments: four(),
            log_start: 0,
            local_start: 200,
            local_only: 0,
            retention: remote_only(AtMost(5 * DAY as u64), Unlimited),
            delete: &[(0, Time), (100, Time), (200, Time)],
            remote_start: Some(300),
            log_start_after: 300,
        },
        Case {
            name: "log start breach (DeleteRecords) without any retention",
            segments: four(),
            log_start: 250,
            local_start: 400,
            local_only: 0,
            retention: remote_only(Unlimited, Unlimited),
            delete: &[(0, LogStart), (100, LogStart)],
            remote_start: Some(200),
            log_start_after: 250,
        },
        Case {
            name: "log start breach pays down the size excess too",
            segments: four(),
            log_start: 100,
            local_start: 400,
            local_only: 0,
            retention: remote_only(Unlimited, AtMost(3 * GB)),
            delete: &[(0, LogStart)],
            remote_start: Some(100),
            log_start_after: 100,
        },
        Case {
            name: "log start breach then size takes what is still over",
            segments: four(),
            log_start: 100,
            local_start: 400,
            local_only: 0,
            retention: remote_only(Unlimited, AtMost(2 * GB)),
            delete: &[(0, LogStart), (100, Size)],
            remote_start: Some(200),
            log_start_after: 200,
        },
        Case {
            name: "whole-log scope (retention.bytes) counts local-only bytes",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 2 * GB,
            retention: RemoteRetention { time_ms: Unlimited, bytes: AtMost(4 * GB), size_scope: SizeScope::WholeLog },
            delete: &[(0, Size), (100, Size)],
            remote_start: Some(200),
            log_start_after: 200,
        },
        Case {
            name: "remote-only scope (remote.log.retention.bytes) ignores local-only bytes",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 2 * GB,
            retention: remote_only(Unlimited, AtMost(4 * GB)),
            delete: &[],
            remote_start: Some(0),
            log_start_after: 0,
        },
        Case {
            name: "everything expires: no remote start left",
            segments: four(),
            log_start: 0,
            local_start: 400,
            local_only: 0,
            retention: remote_only(AtMost(DAY as u64), Unlimited),
            delete: &[(0, Time), (100, Time), (200, Time), (300, Time)],
            remote_start: None,
            log_start_after: 400,
        },
        Case {
            name: "empty remote tier",
            segments: vec![],
            log_start: 7,
            local_start: 7,
            local_only: 0,
            retention: remote_only(AtMost(0), AtMost(0)),
            delete: &[],
            remote_start: None,
            log_start_after: 7,
        },
    ];
    for c in cases {
        let plan = expired_remote_segments(&RetentionInput {
            segments: &c.segments,
            log_start_offset: c.log_start,
            local_log_start_offset: c.local_start,
            local_only_bytes: c.local_only,
            retention: c.retention,
            now_ms: NOW,
        })
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let got: Vec<(i64, ExpiryReason)> = plan.delete.iter().map(|e| (e.segment.start_offset, e.reason)).collect();
        assert_eq!(got, c.delete, "{}: deleted", c.name);
        assert_eq!(plan.new_remote_start, c.remote_start, "{}: remote start", c.name);
        assert_eq!(plan.new_log_start_offset, c.log_start_after, "{}: log start", c.name);
    }
}

#[test]
fn remote_retention_bad_input() {
    struct Case {
        name: &'static str,
        segments: Vec<RemoteSegment>,
        log_start: i64,
        message: &'static str,
    }
    let cases = [
        Case {
            name: "out of order",
            segments: vec![seg(100, 199, 1, 0), seg(0, 99, 1, 0)],
            log_start: 0,
            message: "out of order or overlapping",
        },
        Case {
            name: "contained",
            segments: vec![seg(0, 199, 1, 0), seg(100, 150, 1, 0)],
            log_start: 0,
            message: "out of order or overlapping",
        },
        Case { name: "bad range", segments: vec![seg(10, 9, 1, 0)], log_start: 0, message: "bad offset range" },
        Case { name: "negative log start", segments: vec![], log_start: -1, message: "must not be negative" },
    ];
    for c in cases {
        let e = expired_remote_segments(&RetentionInput {
            segments: &c.segments,
            log_start_offset: c.log_start,
            local_log_start_offset: 0,
            local_only_bytes: 0,
            retention: remote_only(Unlimited, Unlimited),
            now_ms: NOW,
        })
        .expect_err(c.name);
        assert!(e.to_string().contains(c.message), "{}: {e}", c.name);
    }
}
