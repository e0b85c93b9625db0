//! Builders and checks the rules' table-driven tests share (each test file uses some of them).
#![allow(dead_code)]

use rsm_core::error::Result;
use rsm_tiering::LocalSegmentSummary;

/// A local segment of one byte with no timestamp, at `base`.
pub fn l(base: i64) -> LocalSegmentSummary {
    LocalSegmentSummary { base_offset: base, size_bytes: 1, largest_timestamp_ms: 0 }
}

/// Local segments from `(base offset, size, age in ms at now_ms)` rows.
pub fn aged(rows: &[(i64, u64, i64)], now_ms: i64) -> Vec<LocalSegmentSummary> {
    rows.iter()
        .map(|&(b, s, age)| LocalSegmentSummary { base_offset: b, size_bytes: s, largest_timestamp_ms: now_ms - age })
        .collect()
}

/// One-byte local segments at `bases`.
pub fn at(bases: &[i64]) -> Vec<LocalSegmentSummary> {
    bases.iter().map(|&b| l(b)).collect()
}

/// `got` is Ok when `error` is None, else an error whose text contains `error`.
pub fn assert_outcome<T: std::fmt::Debug>(case: &str, got: Result<T>, error: Option<&str>) {
    match error {
        None => assert!(got.is_ok(), "{case}: {got:?}"),
        Some(msg) => {
            let e = got.expect_err(case);
            assert!(e.to_string().contains(msg), "{case}: {e}");
        }
    }
}
