//! Copy eligibility (SR-16) with delayed upload (KIP-1241): which local segments a leader copies to
//! remote storage now, oldest first.

use super::segments::{LocalSegmentSummary, age_ms, check_local};
use super::settings::{CopyLag, Lag};
use rsm_core::error::{Error, Result};

/// What the copy rule looks at for one partition.
#[derive(Debug, Clone, Copy)]
pub struct CopyInput<'a> {
    /// The local segments, oldest first; the last one is the active segment.
    pub segments: &'a [LocalSegmentSummary],
    /// The log end offset (the next offset to be written).
    pub log_end_offset: i64,
    /// The last stable offset: the first offset not yet stable (exclusive, as in Kafka).
    pub last_stable_offset: i64,
    /// The highest offset already in remote storage, if any (inclusive).
    pub highest_remote_offset: Option<i64>,
    /// The topic's resolved lags.
    pub lag: CopyLag,
    /// Now, in ms since the epoch.
    pub now_ms: i64,
}

/// A segment to copy: its offsets (both inclusive) and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyCandidate {
    /// The segment's base offset.
    pub base_offset: i64,
    /// The segment's last offset (the next segment's base offset minus one).
    pub end_offset: i64,
    /// The segment's size in bytes.
    pub size_bytes: u64,
}

/// Why the walk stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyStop {
    /// It reached the active segment, which is never copied.
    ActiveSegment,
    /// The segment at this base offset is not entirely below the last stable offset.
    NotStable {
        /// The base offset of that segment.
        base_offset: i64,
    },
    /// The segment at this base offset is delayed by the lags; every later segment waits too.
    Delayed {
        /// The base offset of that segment.
        base_offset: i64,
    },
}

/// The segments to copy now, oldest first, and why the walk stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPlan {
    /// The segments to copy, oldest first.
    pub segments: Vec<CopyCandidate>,
    /// Where and why the walk stopped.
    pub stop: CopyStop,
}

/// Returns the segments to copy now, oldest first.
///
/// A closed segment is a candidate when it is entirely below the last stable offset and not already
/// covered by remote storage (its last offset is above the highest remote offset; a segment that is only
/// partly covered, as after a leader change, is copied whole). Candidates are walked oldest first:
/// - a lag of 0 on either setting means upload now;
/// - otherwise a segment is eligible when an enabled check passes: time (now minus the segment's largest
///   timestamp is at least the time lag; a negative age passes) or size (the bytes of every later
///   segment, the active one included, are at least the size lag); a lag resolved to unlimited is a
///   check that never passes, so both unlimited means never;
/// - the first segment not eligible stops the walk: every later segment waits too.
///
/// Errors: the segment list is empty, out of order or overlapping; the active segment or the last
/// stable offset is beyond the log end offset; a negative offset.
pub fn segments_to_copy(input: &CopyInput<'_>) -> Result<CopyPlan> {
    let segs = input.segments;
    check_local(segs, input.log_end_offset)?;
    if input.last_stable_offset < 0 || input.last_stable_offset > input.log_end_offset {
        return Err(Error::invalid(format!(
            "last stable offset {} is outside [0, log end offset {}]",
            input.last_stable_offset, input.log_end_offset
        )));
    }
    if let Some(ry) = input.highest_remote_offset
        && ry < 0
    {
        return Err(Error::invalid(format!("highest remote offset {ry} is negative; pass None for none")));
    }

    // bytes_after[i]: bytes of every segment after i, the active one included.
    let mut bytes_after = vec![0u64; segs.len()];
    for i in (0..segs.len().saturating_sub(1)).rev() {
        bytes_after[i] = bytes_after[i + 1].saturating_add(segs[i + 1].size_bytes);
    }

    let mut out = Vec::new();
    for i in 0..segs.len() - 1 {
        let seg = segs[i];
        let next_base = segs[i + 1].base_offset;
        let end = next_base - 1;
        if input.highest_remote_offset.is_some_and(|ry| end <= ry) {
            continue;
        }
        if next_base > input.last_stable_offset {
            return Ok(CopyPlan { segments: out, stop: CopyStop::NotStable { base_offset: seg.base_offset } });
        }
        let age = age_ms(input.now_ms, seg.largest_timestamp_ms);
        if !eligible(input.lag, age, bytes_after[i]) {
            return Ok(CopyPlan { segments: out, stop: CopyStop::Delayed { base_offset: seg.base_offset } });
        }
        out.push(CopyCandidate { base_offset: seg.base_offset, end_offset: end, size_bytes: seg.size_bytes });
    }
    Ok(CopyPlan { segments: out, stop: CopyStop::ActiveSegment })
}

/// The delayed-upload decision for one segment of age `age_ms` with `bytes_after` bytes after it.
pub fn eligible(lag: CopyLag, age_ms: i64, bytes_after: u64) -> bool {
    if lag.time_ms == Lag::Immediate || lag.bytes == Lag::Immediate {
        return true;
    }
    let time_ok = match lag.time_ms {
        Lag::After(ms) => age_ms < 0 || age_ms as u64 >= ms,
        _ => false,
    };
    let size_ok = match lag.bytes {
        Lag::After(b) => bytes_after >= b,
        _ => false,
    };
    time_ok || size_ok
}
