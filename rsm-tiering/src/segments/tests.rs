//! Tests of the segment list checks (crate-internal: `check_local`, `check_remote`, `age_ms`).

use super::*;

/// A local segment of one byte with no timestamp, at `base`.
fn l(base: i64) -> LocalSegmentSummary {
    LocalSegmentSummary { base_offset: base, size_bytes: 1, largest_timestamp_ms: 0 }
}

/// `got` is Ok when `error` is None, else an error whose text contains `error`.
fn assert_outcome<T: std::fmt::Debug>(case: &str, got: Result<T>, error: Option<&str>) {
    match error {
        None => assert!(got.is_ok(), "{case}: {got:?}"),
        Some(msg) => {
            let e = got.expect_err(case);
            assert!(e.to_string().contains(msg), "{case}: {e}");
        }
    }
}

fn r(start: i64, end: i64) -> RemoteSegment {
    RemoteSegment { start_offset: start, end_offset: end, size_bytes: 1, max_timestamp_ms: 0 }
}

#[test]
fn local_lists() {
    struct Case {
        name: &'static str,
        segments: Vec<LocalSegmentSummary>,
        log_end: i64,
        error: Option<&'static str>,
    }
    let cases = [
        Case { name: "one active segment", segments: vec![l(0)], log_end: 0, error: None },
        Case { name: "ascending", segments: vec![l(0), l(10), l(20)], log_end: 25, error: None },
        Case { name: "empty", segments: vec![], log_end: 0, error: Some("is empty") },
        Case { name: "negative base", segments: vec![l(-1)], log_end: 0, error: Some("negative base") },
        Case {
            name: "out of order",
            segments: vec![l(10), l(0)],
            log_end: 20,
            error: Some("out of order or overlapping: segment 1 starts at 0"),
        },
        Case {
            name: "duplicate base (overlap)",
            segments: vec![l(0), l(10), l(10)],
            log_end: 20,
            error: Some("segment 2 starts at 10 but the one before it starts at 10"),
        },
        Case {
            name: "active beyond log end",
            segments: vec![l(0), l(30)],
            log_end: 20,
            error: Some("beyond the log end offset 20"),
        },
    ];
    for c in cases {
        assert_outcome(c.name, check_local(&c.segments, c.log_end), c.error);
    }
}

#[test]
fn remote_lists() {
    struct Case {
        name: &'static str,
        segments: Vec<RemoteSegment>,
        error: Option<&'static str>,
    }
    let cases = [
        Case { name: "empty", segments: vec![], error: None },
        Case { name: "contiguous", segments: vec![r(0, 9), r(10, 19)], error: None },
        Case { name: "gap allowed", segments: vec![r(0, 9), r(20, 29)], error: None },
        Case { name: "partial overlap after leader change", segments: vec![r(0, 9), r(5, 19)], error: None },
        Case { name: "end before start", segments: vec![r(5, 4)], error: Some("bad offset range [5, 4]") },
        Case { name: "negative start", segments: vec![r(-1, 4)], error: Some("bad offset range") },
        Case {
            name: "out of order",
            segments: vec![r(10, 19), r(0, 9)],
            error: Some("segment 1 [0, 9] does not start and end after segment 0 [10, 19]"),
        },
        Case { name: "duplicate", segments: vec![r(0, 9), r(0, 9)], error: Some("out of order or overlapping") },
        Case { name: "contained", segments: vec![r(0, 19), r(5, 10)], error: Some("out of order or overlapping") },
    ];
    for c in cases {
        assert_outcome(c.name, check_remote(&c.segments), c.error);
    }
}

#[test]
fn ages_saturate() {
    assert_eq!(age_ms(10, 3), 7);
    assert_eq!(age_ms(3, 10), -7);
    assert_eq!(age_ms(i64::MAX, -10), i64::MAX);
    assert_eq!(age_ms(i64::MIN, 10), i64::MIN);
}
