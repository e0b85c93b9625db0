//! SR-26, SR-27 ListOffsets: the offset answered for each spec and isolation.

use rsm_core::error::Result;
use rsm_tiering::list_offsets::*;
use rsm_tiering::offsets::{OffsetRange, PartitionOffsets};
use std::cell::Cell;

/// Log start 100, Lx 300, Ly 450, HW 480, log end 500.
const OFFSETS: LogOffsets = LogOffsets {
    log_start_offset: 100,
    local_log_start_offset: 300,
    high_watermark: 480,
    last_stable_offset: 450,
    log_end_offset: 500,
};

fn at(timestamp: i64, offset: i64) -> Option<TimestampAndOffset> {
    Some(TimestampAndOffset { timestamp, offset })
}

#[test]
fn target_timestamps() {
    struct Case {
        name: &'static str,
        ts: i64,
        want: Result<OffsetSpec, &'static str>,
    }
    let cases = [
        Case { name: "-1 latest", ts: -1, want: Ok(OffsetSpec::Latest) },
        Case { name: "-2 earliest", ts: -2, want: Ok(OffsetSpec::Earliest) },
        Case { name: "-3 next local (seed)", ts: -3, want: Ok(OffsetSpec::NextLocal) },
        Case { name: "-4 earliest local (shipped alias)", ts: -4, want: Ok(OffsetSpec::NextLocal) },
        Case { name: "0 is a timestamp", ts: 0, want: Ok(OffsetSpec::Timestamp(0)) },
        Case { name: "a timestamp", ts: 1_700_000_000_000, want: Ok(OffsetSpec::Timestamp(1_700_000_000_000)) },
        Case {
            name: "-5 (latest tiered, shipped) is not supported",
            ts: -5,
            want: Err("target timestamp -5 is not supported"),
        },
    ];
    for c in cases {
        match (c.want, OffsetSpec::from_target_timestamp(c.ts)) {
            (Ok(w), Ok(g)) => assert_eq!(g, w, "{}", c.name),
            (Err(m), Err(e)) => assert!(e.to_string().contains(m), "{}: {e}", c.name),
            (w, g) => panic!("{}: wanted {w:?}, got {g:?}", c.name),
        }
    }
}

#[test]
fn list_offsets_sr26_sr27() {
    struct Case {
        name: &'static str,
        spec: OffsetSpec,
        isolation: Isolation,
        offsets: LogOffsets,
        remote: Option<TimestampAndOffset>,
        local: Option<TimestampAndOffset>,
        want: OffsetAnswer,
        /// (remote asked from, local asked from); None when not asked.
        asked: (Option<i64>, Option<i64>),
    }
    use Isolation::{ReadCommitted, ReadUncommitted, Replica};
    use OffsetAnswer::{Found, NotFound, Offset};
    let found = |t, o| Found(TimestampAndOffset { timestamp: t, offset: o });
    let cases = [
        Case {
            name: "earliest is the log start offset",
            spec: OffsetSpec::Earliest,
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: None,
            local: None,
            want: Offset(100),
            asked: (None, None),
        },
        Case {
            name: "latest, read_uncommitted: high watermark",
            spec: OffsetSpec::Latest,
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: None,
            local: None,
            want: Offset(480),
            asked: (None, None),
        },
        Case {
            name: "latest, read_committed: last stable offset",
            spec: OffsetSpec::Latest,
            isolation: ReadCommitted,
            offsets: OFFSETS,
            remote: None,
            local: None,
            want: Offset(450),
            asked: (None, None),
        },
        Case {
            name: "latest, replica: log end offset",
            spec: OffsetSpec::Latest,
            isolation: Replica,
            offsets: OFFSETS,
            remote: None,
            local: None,
            want: Offset(500),
            asked: (None, None),
        },
        Case {
            name: "next local: the local log start offset",
            spec: OffsetSpec::NextLocal,
            isolation: Replica,
            offsets: OFFSETS,
            remote: None,
            local: None,
            want: Offset(300),
            asked: (None, None),
        },
        Case {
            name: "next local never below the log start offset",
            spec: OffsetSpec::NextLocal,
            isolation: Replica,
            offsets: LogOffsets { log_start_offset: 350, ..OFFSETS },
            remote: None,
            local: None,
            want: Offset(350),
            asked: (None, None),
        },
        Case {
            name: "timestamp found in remote: local not asked",
            spec: OffsetSpec::Timestamp(1000),
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: at(1005, 120),
            local: at(1400, 310),
            want: found(1005, 120),
            asked: (Some(100), None),
        },
        Case {
            name: "timestamp not in remote: local asked from Lx",
            spec: OffsetSpec::Timestamp(5000),
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: None,
            local: at(5001, 320),
            want: found(5001, 320),
            asked: (Some(100), Some(300)),
        },
        Case {
            name: "timestamp in neither: not found",
            spec: OffsetSpec::Timestamp(9000),
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: None,
            local: None,
            want: NotFound,
            asked: (Some(100), Some(300)),
        },
        Case {
            name: "local asked from the log start offset when it is above Lx",
            spec: OffsetSpec::Timestamp(5000),
            isolation: ReadUncommitted,
            offsets: LogOffsets { log_start_offset: 350, ..OFFSETS },
            remote: None,
            local: at(5001, 360),
            want: found(5001, 360),
            asked: (Some(350), Some(350)),
        },
        Case {
            name: "a remote match below the log start offset is ignored",
            spec: OffsetSpec::Timestamp(1000),
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: at(1001, 50),
            local: at(1500, 300),
            want: found(1500, 300),
            asked: (Some(100), Some(300)),
        },
        Case {
            name: "a match at the high watermark is not readable uncommitted",
            spec: OffsetSpec::Timestamp(7000),
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: None,
            local: at(7000, 480),
            want: NotFound,
            asked: (Some(100), Some(300)),
        },
        Case {
            name: "a match above the last stable offset is not readable committed",
            spec: OffsetSpec::Timestamp(7000),
            isolation: ReadCommitted,
            offsets: OFFSETS,
            remote: None,
            local: at(7000, 460),
            want: NotFound,
            asked: (Some(100), Some(300)),
        },
        Case {
            name: "the same match is readable uncommitted",
            spec: OffsetSpec::Timestamp(7000),
            isolation: ReadUncommitted,
            offsets: OFFSETS,
            remote: None,
            local: at(7000, 460),
            want: found(7000, 460),
            asked: (Some(100), Some(300)),
        },
    ];
    for c in cases {
        let remote_from = Cell::new(None);
        let local_from = Cell::new(None);
        let got = list_offset(
            c.spec,
            c.isolation,
            &c.offsets,
            |_, from| {
                remote_from.set(Some(from));
                c.remote
            },
            |_, from| {
                local_from.set(Some(from));
                c.local
            },
        )
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(got, c.want, "{}: answer", c.name);
        assert_eq!((remote_from.get(), local_from.get()), c.asked, "{}: lookups", c.name);
    }
}

#[test]
fn list_offsets_bad_input() {
    struct Case {
        name: &'static str,
        spec: OffsetSpec,
        offsets: LogOffsets,
        message: &'static str,
    }
    let cases = [
        Case {
            name: "log start above high watermark",
            spec: OffsetSpec::Earliest,
            offsets: LogOffsets { log_start_offset: 490, ..OFFSETS },
            message: "inconsistent offsets: log start 490",
        },
        Case {
            name: "high watermark above log end",
            spec: OffsetSpec::Latest,
            offsets: LogOffsets { high_watermark: 501, ..OFFSETS },
            message: "inconsistent offsets",
        },
        Case {
            name: "last stable above high watermark",
            spec: OffsetSpec::Latest,
            offsets: LogOffsets { last_stable_offset: 481, ..OFFSETS },
            message: "inconsistent offsets",
        },
        Case {
            name: "negative timestamp spec",
            spec: OffsetSpec::Timestamp(-7),
            offsets: OFFSETS,
            message: "timestamp -7 is negative",
        },
    ];
    for c in cases {
        let e =
            list_offset(c.spec, Isolation::ReadUncommitted, &c.offsets, |_, _| None, |_, _| None).expect_err(c.name);
        assert!(e.to_string().contains(c.message), "{}: {e}", c.name);
    }
}

#[test]
fn log_offsets_from_partition_state() {
    let p = PartitionOffsets::new(50, vec![100, 200], 250, 240, 230, vec![OffsetRange { start: 0, end: 99 }])
        .expect("valid state");
    let o = LogOffsets::from(&p);
    assert_eq!(
        o,
        LogOffsets {
            log_start_offset: 50,
            local_log_start_offset: 100,
            high_watermark: 240,
            last_stable_offset: 230,
            log_end_offset: 250
        }
    );
}
