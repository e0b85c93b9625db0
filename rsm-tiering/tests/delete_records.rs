//! SR-25 DeleteRecords: the new log start offset and what it deletes.

use rsm_core::error::Result;
use rsm_tiering::delete_records::*;
use rsm_tiering::segments::RemoteSegment;

fn r(start: i64, end: i64) -> RemoteSegment {
    RemoteSegment { start_offset: start, end_offset: end, size_bytes: 10, max_timestamp_ms: 0 }
}

#[test]
fn delete_records_sr25() {
    struct Case {
        name: &'static str,
        requested: i64,
        log_start: i64,
        hw: i64,
        remote: Vec<RemoteSegment>,
        want: Result<(i64, bool, &'static [i64]), &'static str>,
    }
    let three = || vec![r(0, 99), r(100, 199), r(200, 299)];
    let cases = [
        Case {
            name: "moves the log start",
            requested: 150,
            log_start: 0,
            hw: 500,
            remote: three(),
            want: Ok((150, true, &[0])),
        },
        Case {
            name: "exactly at a segment boundary cleans that segment",
            requested: 200,
            log_start: 0,
            hw: 500,
            remote: three(),
            want: Ok((200, true, &[0, 100])),
        },
        Case {
            name: "up to the high watermark is allowed",
            requested: 500,
            log_start: 0,
            hw: 500,
            remote: three(),
            want: Ok((500, true, &[0, 100, 200])),
        },
        Case {
            name: "-1 means the high watermark",
            requested: -1,
            log_start: 0,
            hw: 250,
            remote: three(),
            want: Ok((250, true, &[0, 100])),
        },
        Case {
            name: "at or below the current log start changes nothing",
            requested: 50,
            log_start: 120,
            hw: 500,
            remote: three(),
            want: Ok((120, false, &[0])),
        },
        Case {
            name: "equal to the current log start changes nothing",
            requested: 120,
            log_start: 120,
            hw: 500,
            remote: vec![],
            want: Ok((120, false, &[])),
        },
        Case {
            name: "no remote segments",
            requested: 10,
            log_start: 0,
            hw: 500,
            remote: vec![],
            want: Ok((10, true, &[])),
        },
        Case {
            name: "above the high watermark",
            requested: 501,
            log_start: 0,
            hw: 500,
            remote: three(),
            want: Err("above the high watermark 500 (OFFSET_OUT_OF_RANGE)"),
        },
        Case {
            name: "negative other than -1",
            requested: -2,
            log_start: 0,
            hw: 500,
            remote: three(),
            want: Err("offset -2 is negative"),
        },
        Case {
            name: "log start above the high watermark",
            requested: 10,
            log_start: 600,
            hw: 500,
            remote: vec![],
            want: Err("outside [0, high watermark 500]"),
        },
        Case {
            name: "remote list out of order",
            requested: 10,
            log_start: 0,
            hw: 500,
            remote: vec![r(100, 199), r(0, 99)],
            want: Err("out of order"),
        },
    ];
    for c in cases {
        let got = delete_records(c.requested, c.log_start, c.hw, &c.remote);
        match c.want {
            Ok((start, moved, clean)) => {
                let o = got.unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert_eq!(o.log_start_offset, start, "{}: log start", c.name);
                assert_eq!(o.moved, moved, "{}: moved", c.name);
                let bases: Vec<i64> = o.remote_to_clean.iter().map(|s| s.start_offset).collect();
                assert_eq!(bases, clean, "{}: remote to clean", c.name);
            }
            Err(msg) => {
                let e = got.expect_err(c.name);
                assert!(e.to_string().contains(msg), "{}: {e}", c.name);
            }
        }
    }
}
