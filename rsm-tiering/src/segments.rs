//! The segment shapes the rules work on, and the checks that reject lists out of order or overlapping.

use rsm_core::error::{Error, Result};

/// A segment of the local log, as the copy and local-retention rules see it: only the facts they need
/// (base offset, size, largest timestamp). The segment's files in a partition directory are
/// [`rsm_core::format::partition::LocalSegment`].
///
/// Its last offset is the next segment's base offset minus one; for the active (last) segment it is the
/// log end offset minus one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalSegmentSummary {
    /// The first offset of the segment.
    pub base_offset: i64,
    /// The size of the `.log` file in bytes.
    pub size_bytes: u64,
    /// The largest record timestamp in the segment, in ms since the epoch. When the segment holds no
    /// timestamps, pass what Kafka uses instead: the file's last-modified time.
    pub largest_timestamp_ms: i64,
}

/// A segment in remote storage: its offsets (both inclusive), size and largest record timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteSegment {
    /// The first offset of the segment.
    pub start_offset: i64,
    /// The last offset of the segment (inclusive).
    pub end_offset: i64,
    /// The size of the segment's log data in bytes.
    pub size_bytes: u64,
    /// The largest record timestamp in the segment, in ms since the epoch.
    pub max_timestamp_ms: i64,
}

/// Checks a local segment list: not empty (the active segment is always there), base offsets
/// non-negative and strictly ascending (oldest first, no two segments sharing offsets), and the active
/// segment starting at or below the log end offset.
pub(crate) fn check_local(segments: &[LocalSegmentSummary], log_end_offset: i64) -> Result<()> {
    let Some(active) = segments.last() else {
        return Err(Error::invalid("local segment list is empty: the active segment must be present"));
    };
    let mut prev: Option<i64> = None;
    for (i, s) in segments.iter().enumerate() {
        if s.base_offset < 0 {
            return Err(Error::invalid(format!("local segment {i} has a negative base offset {}", s.base_offset)));
        }
        if let Some(p) = prev
            && s.base_offset <= p
        {
            return Err(Error::invalid(format!(
                "local segments out of order or overlapping: segment {i} starts at {} but the one before \
                 it starts at {p}",
                s.base_offset
            )));
        }
        prev = Some(s.base_offset);
    }
    if active.base_offset > log_end_offset {
        return Err(Error::invalid(format!(
            "the active segment starts at {} beyond the log end offset {log_end_offset}",
            active.base_offset
        )));
    }
    Ok(())
}

/// Checks a remote segment list: oldest first, each segment well formed (`0 <= start <= end`), and each
/// one starting and ending after the one before it.
///
/// A segment that starts inside the previous one but ends after it (a partial overlap) is accepted:
/// Kafka produces those after a leader change, when the new leader's local segment boundaries differ from
/// the ones already copied. A segment that lies inside the previous one, repeats it, or comes before it
/// is rejected.
pub(crate) fn check_remote(segments: &[RemoteSegment]) -> Result<()> {
    let mut prev: Option<&RemoteSegment> = None;
    for (i, s) in segments.iter().enumerate() {
        if s.start_offset < 0 || s.end_offset < s.start_offset {
            return Err(Error::invalid(format!(
                "remote segment {i} has a bad offset range [{}, {}]",
                s.start_offset, s.end_offset
            )));
        }
        if let Some(p) = prev
            && (s.start_offset <= p.start_offset || s.end_offset <= p.end_offset)
        {
            return Err(Error::invalid(format!(
                "remote segments out of order or overlapping: segment {i} [{}, {}] does not start and end \
                 after segment {} [{}, {}]",
                s.start_offset,
                s.end_offset,
                i - 1,
                p.start_offset,
                p.end_offset
            )));
        }
        prev = Some(s);
    }
    Ok(())
}

/// The age of a record with timestamp `ts` at `now_ms`, saturating instead of overflowing.
pub(crate) fn age_ms(now_ms: i64, ts: i64) -> i64 {
    now_ms.saturating_sub(ts)
}

/// Builders and checks the rules' table-driven tests share.
#[cfg(test)]
pub(crate) mod test_support {
    use super::LocalSegmentSummary;
    use rsm_core::error::Result;

    /// A local segment of one byte with no timestamp, at `base`.
    pub(crate) fn l(base: i64) -> LocalSegmentSummary {
        LocalSegmentSummary { base_offset: base, size_bytes: 1, largest_timestamp_ms: 0 }
    }

    /// Local segments from `(base offset, size, age in ms at now_ms)` rows.
    pub(crate) fn aged(rows: &[(i64, u64, i64)], now_ms: i64) -> Vec<LocalSegmentSummary> {
        rows.iter()
            .map(|&(b, s, age)| LocalSegmentSummary {
                base_offset: b,
                size_bytes: s,
                largest_timestamp_ms: now_ms - age,
            })
            .collect()
    }

    /// One-byte local segments at `bases`.
    pub(crate) fn at(bases: &[i64]) -> Vec<LocalSegmentSummary> {
        bases.iter().map(|&b| l(b)).collect()
    }

    /// `got` is Ok when `error` is None, else an error whose text contains `error`.
    pub(crate) fn assert_outcome<T: std::fmt::Debug>(case: &str, got: Result<T>, error: Option<&str>) {
        match error {
            None => assert!(got.is_ok(), "{case}: {got:?}"),
            Some(msg) => {
                let e = got.expect_err(case);
                assert!(e.to_string().contains(msg), "{case}: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{assert_outcome, l};
    use super::*;

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
}
