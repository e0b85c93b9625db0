//! SR-16 copy eligibility and delayed upload (KIP-1241): which segments `segments_to_copy` copies, and when.

mod common;

use common::{aged, at};
use rsm_core::config::props;
use rsm_tiering::copy::*;
use rsm_tiering::segments::LocalSegmentSummary;
use rsm_tiering::settings::{BrokerSettings, TopicPolicy, TopicSettings};
use rsm_tiering::settings::{CopyLag, Lag};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
const GB: u64 = 1 << 30;
const NOW: i64 = 100 * DAY;

/// Five closed segments of 1 GB at 0, 100, 200, 300, 400 and an active one of 0.5 GB at 500.
/// Bytes after each closed segment: 4.5, 3.5, 2.5, 1.5, 0.5 GB.
fn partition(ages: [i64; 6]) -> Vec<LocalSegmentSummary> {
    (0..6)
        .map(|i| LocalSegmentSummary {
            base_offset: i as i64 * 100,
            size_bytes: if i == 5 { GB / 2 } else { GB },
            largest_timestamp_ms: NOW - ages[i],
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// Ages 8 d, 6 d, 2 d, exactly 1 d, 12 h; active 1 h.
    Typical,
    /// Everything written in the last hour: no time lag passes.
    Recent,
    /// Everything 8 days old (a backfill): every time lag up to 8 days passes.
    Old,
}

fn scenario(s: Scenario) -> Vec<LocalSegmentSummary> {
    match s {
        Scenario::Typical => partition([8 * DAY, 6 * DAY, 2 * DAY, DAY, 12 * HOUR, HOUR]),
        Scenario::Recent => partition([HOUR; 6]),
        Scenario::Old => partition([8 * DAY; 6]),
    }
}

/// The test matrix of seed 004 (KIP-1241), row by row as read in `delayed-upload-matrix.md`, each
/// sub-row a named case. Settings go through parsing and resolution; the plan is checked on a
/// partition whose segment ages and sizes separate the expected lags.
#[test]
fn delayed_upload_matrix_004() {
    struct Case {
        name: &'static str,
        topic: &'static [(&'static str, &'static str)],
        lag: CopyLag,
        scenario: Scenario,
        copied: &'static [i64],
        stop: CopyStop,
    }
    use Lag::{After, Immediate, Unlimited};
    const D7: &str = "604800000";
    const D1: &str = "86400000";
    const D3: &str = "259200000";
    const GB1: &str = "1073741824";
    const GB3: &str = "3221225472";
    const ALL: &[i64] = &[0, 100, 200, 300, 400];
    let active = CopyStop::ActiveSegment;
    let delayed = |b| CopyStop::Delayed { base_offset: b };
    let cases = [
        // Case 1: lag time 0, anything else: no lag.
        Case {
            name: "1: lag.ms=0, lag.bytes=-1, local 7d/3GB -> no lag",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "0"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: Immediate, bytes: After(3 * GB) },
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "1: lag.ms=0, lag.bytes=1GB -> no lag",
            topic: &[("remote.copy.lag.ms", "0"), ("remote.copy.lag.bytes", GB1)],
            lag: CopyLag { time_ms: Immediate, bytes: After(GB) },
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "1: lag.ms=0, everything else -1 -> no lag",
            topic: &[
                ("retention.ms", "-1"),
                ("local.retention.ms", "-1"),
                ("local.retention.bytes", "-1"),
                ("remote.copy.lag.ms", "0"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: Immediate, bytes: Unlimited },
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        // Case 2: lag size 0, anything else: no lag.
        Case {
            name: "2: lag.bytes=0, lag.ms=-1, local 7d -> no lag",
            topic: &[("local.retention.ms", D7), ("remote.copy.lag.ms", "-1"), ("remote.copy.lag.bytes", "0")],
            lag: CopyLag { time_ms: After(7 * DAY as u64), bytes: Immediate },
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "2: lag.bytes=0, lag.ms=1d -> no lag",
            topic: &[("remote.copy.lag.ms", D1), ("remote.copy.lag.bytes", "0")],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: Immediate },
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        // Case 3: local size -1 and lag size -1: no size check; the time setting decides.
        Case {
            name: "3: local.bytes=-1, lag.bytes=-1, lag.ms=1d -> time decides (1 day)",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", "-1"),
                ("remote.copy.lag.ms", D1),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: Unlimited },
            scenario: Scenario::Typical,
            copied: &[0, 100, 200, 300],
            stop: delayed(400),
        },
        Case {
            name: "3: local.bytes=-1, lag.bytes=-1, lag.ms=1d -> size does not pass for recent data",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", "-1"),
                ("remote.copy.lag.ms", D1),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: Unlimited },
            scenario: Scenario::Recent,
            copied: &[],
            stop: delayed(0),
        },
        Case {
            name: "3: all four -1 -> never uploaded",
            topic: &[
                ("retention.ms", "-1"),
                ("local.retention.ms", "-1"),
                ("local.retention.bytes", "-1"),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: Unlimited, bytes: Unlimited },
            scenario: Scenario::Old,
            copied: &[],
            stop: delayed(0),
        },
        // Case 4: local time -1 and lag time -1: no time check; the size setting decides.
        Case {
            name: "4: local.ms=-1, lag.ms=-1, lag.bytes=1GB -> size decides (1 GB)",
            topic: &[
                ("retention.ms", "-1"),
                ("local.retention.ms", "-1"),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", GB1),
            ],
            lag: CopyLag { time_ms: Unlimited, bytes: After(GB) },
            scenario: Scenario::Typical,
            copied: &[0, 100, 200, 300],
            stop: delayed(400),
        },
        Case {
            name: "4: local.ms=-1, lag.ms=-1 -> old timestamps do not pass the time check",
            topic: &[
                ("retention.ms", "-1"),
                ("local.retention.ms", "-1"),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: Unlimited, bytes: After(3 * GB) },
            scenario: Scenario::Old,
            copied: &[0, 100],
            stop: delayed(200),
        },
        // Case 5: local 7 days, local size unlimited.
        Case {
            name: "5a: local 7d/-1, lags 0/0 -> no lag",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", "-1"),
                ("remote.copy.lag.ms", "0"),
                ("remote.copy.lag.bytes", "0"),
            ],
            lag: CopyLag::IMMEDIATE,
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "5b: local 7d/-1, lags 1d/-1 -> lag 1 day",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", "-1"),
                ("remote.copy.lag.ms", D1),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: Unlimited },
            scenario: Scenario::Typical,
            copied: &[0, 100, 200, 300],
            stop: delayed(400),
        },
        Case {
            name: "5c: local 7d/-1, lags -1/-1 -> lag 7 days",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", "-1"),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: After(7 * DAY as u64), bytes: Unlimited },
            scenario: Scenario::Typical,
            copied: &[0],
            stop: delayed(100),
        },
        // Case 6: local time unlimited, local 3 GB.
        Case {
            name: "6a: local -1/3GB, lags 0/0 -> no lag",
            topic: &[
                ("retention.ms", "-1"),
                ("local.retention.ms", "-1"),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "0"),
                ("remote.copy.lag.bytes", "0"),
            ],
            lag: CopyLag::IMMEDIATE,
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "6b: local -1/3GB, lags -1/1GB -> lag 1 GB",
            topic: &[
                ("retention.ms", "-1"),
                ("local.retention.ms", "-1"),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", GB1),
            ],
            lag: CopyLag { time_ms: Unlimited, bytes: After(GB) },
            scenario: Scenario::Recent,
            copied: &[0, 100, 200, 300],
            stop: delayed(400),
        },
        Case {
            name: "6c: local -1/3GB, lags -1/-1 -> lag 3 GB",
            topic: &[
                ("retention.ms", "-1"),
                ("local.retention.ms", "-1"),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: Unlimited, bytes: After(3 * GB) },
            scenario: Scenario::Recent,
            copied: &[0, 100],
            stop: delayed(200),
        },
        // Case 7: local 7 days and 3 GB.
        Case {
            name: "7a: local 7d/3GB, lags 0/0 -> no lag",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "0"),
                ("remote.copy.lag.bytes", "0"),
            ],
            lag: CopyLag::IMMEDIATE,
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "7b: local 7d/3GB, lags 1d/1GB, typical -> 1 day or 1 GB",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", D1),
                ("remote.copy.lag.bytes", GB1),
            ],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: After(GB) },
            scenario: Scenario::Typical,
            copied: &[0, 100, 200, 300],
            stop: delayed(400),
        },
        Case {
            name: "7b: lags 1d/1GB, recent data -> the size lag is met first",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", D1),
                ("remote.copy.lag.bytes", GB1),
            ],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: After(GB) },
            scenario: Scenario::Recent,
            copied: &[0, 100, 200, 300],
            stop: delayed(400),
        },
        Case {
            name: "7b: lags 1d/1GB, old data -> the time lag is met first",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", D1),
                ("remote.copy.lag.bytes", GB1),
            ],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: After(GB) },
            scenario: Scenario::Old,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "7c: local 7d/3GB, lags -1/-1, typical -> 7 days or 3 GB",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: After(7 * DAY as u64), bytes: After(3 * GB) },
            scenario: Scenario::Typical,
            copied: &[0, 100],
            stop: delayed(200),
        },
        Case {
            name: "7c: lags -1/-1, old data -> 7 days met first",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: After(7 * DAY as u64), bytes: After(3 * GB) },
            scenario: Scenario::Old,
            copied: ALL,
            stop: active,
        },
        Case {
            name: "7c: lags -1/-1 with a 3d local time -> 3 days or 3 GB",
            topic: &[
                ("local.retention.ms", D3),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", "-1"),
                ("remote.copy.lag.bytes", "-1"),
            ],
            lag: CopyLag { time_ms: After(3 * DAY as u64), bytes: After(3 * GB) },
            scenario: Scenario::Typical,
            copied: &[0, 100],
            stop: delayed(200),
        },
        // Case 8: a lag of 0 on either setting means upload now.
        Case {
            name: "8: local 7d/3GB, lags 1d/0 -> no lag",
            topic: &[
                ("local.retention.ms", D7),
                ("local.retention.bytes", GB3),
                ("remote.copy.lag.ms", D1),
                ("remote.copy.lag.bytes", "0"),
            ],
            lag: CopyLag { time_ms: After(DAY as u64), bytes: Immediate },
            scenario: Scenario::Recent,
            copied: ALL,
            stop: active,
        },
    ];
    let broker =
        BrokerSettings { remote_storage_enabled: true, storage_manager: Some("fs".into()), ..Default::default() };
    for c in cases {
        let mut pairs = vec![("remote.storage.enable", "true")];
        pairs.extend_from_slice(c.topic);
        let t = TopicSettings::from_props(&props(pairs)).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let policy = TopicPolicy::resolve(&t, &broker).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert!(policy.remote_storage, "{}: tiered", c.name);
        assert_eq!(policy.copy_lag, c.lag, "{}: resolved lag", c.name);
        let segs = scenario(c.scenario);
        let plan = segments_to_copy(&CopyInput {
            segments: &segs,
            log_end_offset: 550,
            last_stable_offset: 550,
            highest_remote_offset: None,
            lag: policy.copy_lag,
            now_ms: NOW,
        })
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let bases: Vec<i64> = plan.segments.iter().map(|s| s.base_offset).collect();
        assert_eq!(bases, c.copied, "{}: copied ({:?})", c.name, c.scenario);
        assert_eq!(plan.stop, c.stop, "{}: stop", c.name);
    }
}

/// Boundaries and the walk's other rules, on hand-built partitions.
#[test]
fn copy_rules() {
    struct Case {
        name: &'static str,
        /// (base offset, size, age in ms); the last is the active segment.
        segments: &'static [(i64, u64, i64)],
        log_end: i64,
        lso: i64,
        remote: Option<i64>,
        lag: CopyLag,
        copied: &'static [(i64, i64)],
        stop: CopyStop,
    }
    use Lag::{After, Immediate, Unlimited};
    let time = |ms: u64| CopyLag { time_ms: After(ms), bytes: Unlimited };
    let size = |b: u64| CopyLag { time_ms: Unlimited, bytes: After(b) };
    let cases = [
        Case {
            name: "boundary: age equal to the time lag passes",
            segments: &[(0, 10, 1000), (10, 10, 0)],
            log_end: 15,
            lso: 15,
            remote: None,
            lag: time(1000),
            copied: &[(0, 9)],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "boundary: age one ms below the time lag waits",
            segments: &[(0, 10, 999), (10, 10, 0)],
            log_end: 15,
            lso: 15,
            remote: None,
            lag: time(1000),
            copied: &[],
            stop: CopyStop::Delayed { base_offset: 0 },
        },
        Case {
            name: "boundary: bytes after equal to the size lag passes",
            segments: &[(0, 10, 0), (10, 30, 0), (20, 20, 0)],
            log_end: 25,
            lso: 25,
            remote: None,
            lag: size(50),
            copied: &[(0, 9)],
            stop: CopyStop::Delayed { base_offset: 10 },
        },
        Case {
            name: "boundary: bytes after one below the size lag waits",
            segments: &[(0, 10, 0), (10, 30, 0), (20, 19, 0)],
            log_end: 25,
            lso: 25,
            remote: None,
            lag: size(50),
            copied: &[],
            stop: CopyStop::Delayed { base_offset: 0 },
        },
        Case {
            name: "the active segment's bytes count toward the size lag",
            segments: &[(0, 10, 0), (10, 100, 0)],
            log_end: 15,
            lso: 15,
            remote: None,
            lag: size(100),
            copied: &[(0, 9)],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "a negative age (timestamp in the future) passes the time check",
            segments: &[(0, 10, -5000), (10, 10, 0)],
            log_end: 15,
            lso: 15,
            remote: None,
            lag: time(1000),
            copied: &[(0, 9)],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "the first delayed segment delays all that follow",
            segments: &[(0, 10, 5000), (10, 10, 10), (20, 10, 5000), (30, 10, 0)],
            log_end: 35,
            lso: 35,
            remote: None,
            lag: time(1000),
            copied: &[(0, 9)],
            stop: CopyStop::Delayed { base_offset: 10 },
        },
        Case {
            name: "either check passing is enough",
            segments: &[(0, 10, 0), (10, 10, 5000), (20, 5, 0)],
            log_end: 25,
            lso: 25,
            remote: None,
            lag: CopyLag { time_ms: After(1000), bytes: After(15) },
            copied: &[(0, 9), (10, 19)],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "both unlimited means never, even for old data",
            segments: &[(0, 10, i64::MAX / 2), (10, 10, 0)],
            log_end: 15,
            lso: 15,
            remote: None,
            lag: CopyLag { time_ms: Unlimited, bytes: Unlimited },
            copied: &[],
            stop: CopyStop::Delayed { base_offset: 0 },
        },
        Case {
            name: "the active segment is never copied",
            segments: &[(0, 10, 0)],
            log_end: 50,
            lso: 50,
            remote: None,
            lag: CopyLag::IMMEDIATE,
            copied: &[],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "segment ending just below the LSO is copied; the next one is not stable",
            segments: &[(0, 10, 0), (10, 10, 0), (20, 10, 0)],
            log_end: 25,
            lso: 15,
            remote: None,
            lag: CopyLag::IMMEDIATE,
            copied: &[(0, 9)],
            stop: CopyStop::NotStable { base_offset: 10 },
        },
        Case {
            name: "LSO equal to the next base: the segment is entirely below it",
            segments: &[(0, 10, 0), (10, 10, 0), (20, 10, 0)],
            log_end: 25,
            lso: 10,
            remote: None,
            lag: CopyLag::IMMEDIATE,
            copied: &[(0, 9)],
            stop: CopyStop::NotStable { base_offset: 10 },
        },
        Case {
            name: "LSO inside the first segment: nothing is stable",
            segments: &[(0, 10, 0), (10, 10, 0)],
            log_end: 15,
            lso: 5,
            remote: None,
            lag: CopyLag::IMMEDIATE,
            copied: &[],
            stop: CopyStop::NotStable { base_offset: 0 },
        },
        Case {
            name: "segments already covered remotely are skipped",
            segments: &[(0, 10, 0), (10, 10, 0), (20, 10, 0), (30, 10, 0)],
            log_end: 35,
            lso: 35,
            remote: Some(19),
            lag: CopyLag::IMMEDIATE,
            copied: &[(20, 29)],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "a partly covered segment is copied whole",
            segments: &[(0, 10, 0), (10, 10, 0), (20, 10, 0)],
            log_end: 25,
            lso: 25,
            remote: Some(14),
            lag: CopyLag::IMMEDIATE,
            copied: &[(10, 19)],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "covered segments are skipped before the lag is checked",
            segments: &[(0, 10, 0), (10, 10, 5000), (20, 10, 0)],
            log_end: 25,
            lso: 25,
            remote: Some(9),
            lag: time(1000),
            copied: &[(10, 19)],
            stop: CopyStop::ActiveSegment,
        },
        Case {
            name: "lag 0 on time with a size lag: upload now",
            segments: &[(0, 10, 0), (10, 1, 0)],
            log_end: 15,
            lso: 15,
            remote: None,
            lag: CopyLag { time_ms: Immediate, bytes: After(1 << 40) },
            copied: &[(0, 9)],
            stop: CopyStop::ActiveSegment,
        },
    ];
    for c in cases {
        let segs = aged(c.segments, NOW);
        let plan = segments_to_copy(&CopyInput {
            segments: &segs,
            log_end_offset: c.log_end,
            last_stable_offset: c.lso,
            highest_remote_offset: c.remote,
            lag: c.lag,
            now_ms: NOW,
        })
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let got: Vec<(i64, i64)> = plan.segments.iter().map(|s| (s.base_offset, s.end_offset)).collect();
        assert_eq!(got, c.copied, "{}: copied", c.name);
        assert_eq!(plan.stop, c.stop, "{}: stop", c.name);
    }
}

#[test]
fn copy_bad_input() {
    struct Case {
        name: &'static str,
        bases: &'static [i64],
        log_end: i64,
        lso: i64,
        remote: Option<i64>,
        message: &'static str,
    }
    let cases = [
        Case { name: "empty", bases: &[], log_end: 0, lso: 0, remote: None, message: "is empty" },
        Case {
            name: "out of order",
            bases: &[10, 0],
            log_end: 20,
            lso: 20,
            remote: None,
            message: "out of order or overlapping",
        },
        Case {
            name: "overlapping (same base)",
            bases: &[0, 0],
            log_end: 20,
            lso: 20,
            remote: None,
            message: "out of order or overlapping",
        },
        Case {
            name: "LSO beyond log end",
            bases: &[0],
            log_end: 20,
            lso: 21,
            remote: None,
            message: "last stable offset 21 is outside [0, log end offset 20]",
        },
        Case {
            name: "negative LSO",
            bases: &[0],
            log_end: 20,
            lso: -1,
            remote: None,
            message: "last stable offset -1",
        },
        Case {
            name: "negative remote offset",
            bases: &[0],
            log_end: 20,
            lso: 20,
            remote: Some(-1),
            message: "highest remote offset -1 is negative",
        },
    ];
    for c in cases {
        let segs = at(c.bases);
        let e = segments_to_copy(&CopyInput {
            segments: &segs,
            log_end_offset: c.log_end,
            last_stable_offset: c.lso,
            highest_remote_offset: c.remote,
            lag: CopyLag::IMMEDIATE,
            now_ms: NOW,
        })
        .expect_err(c.name);
        assert_eq!(e.kind(), rsm_core::error::ErrorKind::InvalidArgument, "{}: {e}", c.name);
        assert!(e.to_string().contains(c.message), "{}: {e}", c.name);
    }
}
