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

#[cfg(test)]
mod tests;
