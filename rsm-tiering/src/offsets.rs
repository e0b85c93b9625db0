//! Local and remote offset constraints (SR-20), as a per-partition state whose every transition is
//! checked.
//!
//! Conventions (Kafka's): Lx, the local log start offset, and Rx / Ry, the first and last offsets in
//! remote storage, are inclusive; Lz, the local log end offset, and Ly, the last stable offset, are
//! exclusive (the next offset to be written, the first offset not yet stable). The seed's `Ly >= Ry`
//! therefore holds as `Ry < Ly`: only records below the last stable offset are ever copied.

use super::delete_records::new_log_start;
use rsm_core::error::{Error, Result};

/// A closed range of offsets, both ends inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetRange {
    /// The first offset.
    pub start: i64,
    /// The last offset.
    pub end: i64,
}

/// What a transition did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// The state changed.
    Applied,
    /// The state did not change: the transition must wait until the state allows it (the reason says
    /// what it waits for).
    Deferred(String),
}

/// The outcome of [`PartitionOffsets::delete_records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogStartMoved {
    /// The log start offset after the request.
    pub log_start_offset: i64,
    /// The remote segments now entirely below it, to clean asynchronously (SR-25).
    pub remote_to_clean: Vec<OffsetRange>,
}

/// Checks the seed's offset constraints (SR-20): `Lz >= Ly >= Lx`, and when remote storage holds
/// anything, `Ly >= Ry >= Rx` (with Ly exclusive: `Ry < Ly`).
pub fn check_offsets(lx: i64, ly: i64, lz: i64, remote: Option<OffsetRange>) -> Result<()> {
    if lz < ly {
        return Err(Error::invalid(format!("Lz >= Ly violated: local log end offset {lz} < last stable offset {ly}")));
    }
    if ly < lx {
        return Err(Error::invalid(format!(
            "Ly >= Lx violated: last stable offset {ly} < local log start offset {lx}"
        )));
    }
    if let Some(r) = remote {
        if r.end >= ly {
            return Err(Error::invalid(format!(
                "Ly >= Ry violated: remote log end offset {} is not below the last stable offset {ly}",
                r.end
            )));
        }
        if r.end < r.start {
            return Err(Error::invalid(format!(
                "Ry >= Rx violated: remote log end offset {} < remote log start offset {}",
                r.end, r.start
            )));
        }
    }
    Ok(())
}

/// The remote log as its copied segments cover it: the offsets covered without a gap from the remote log
/// start, and the gaps above them (a segment deleted from the middle by hand, a copy lost).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteCoverage {
    /// From the remote log start (the lowest copied offset) to the last offset before the first gap: the
    /// only remote offsets a local segment may be deleted against.
    pub contiguous: Option<OffsetRange>,
    /// The offsets no copied segment holds between the remote log start and the remote log end, oldest
    /// first.
    pub gaps: Vec<OffsetRange>,
}

/// The coverage of the copied segments `segments` (any order; overlapping segments, as a leader change
/// leaves, cover their union).
pub fn remote_coverage(segments: &[OffsetRange]) -> RemoteCoverage {
    let mut sorted: Vec<OffsetRange> = segments.to_vec();
    sorted.sort_by_key(|r| (r.start, r.end));
    let mut out = RemoteCoverage::default();
    let mut reach: Option<OffsetRange> = None;
    for r in sorted {
        reach = Some(match reach {
            None => r,
            Some(cur) if r.start <= cur.end.saturating_add(1) => {
                OffsetRange { start: cur.start, end: cur.end.max(r.end) }
            }
            Some(cur) => {
                out.gaps.push(OffsetRange { start: cur.end + 1, end: r.start - 1 });
                if out.contiguous.is_none() {
                    out.contiguous = Some(cur);
                }
                r
            }
        });
    }
    if out.contiguous.is_none() {
        out.contiguous = reach;
    }
    out
}

/// The gaps of a partition's log: the offsets between two copied segments (`remote`) that no copied
/// segment holds (a segment deleted by hand from the middle of the remote log: local deletion stops there,
/// whether or not the local log still holds them), and outside the remote log's span the offsets neither a
/// copied segment nor a local segment (`local`: the offsets each holds; empty when none or not known)
/// holds (a last remote segment deleted after its local copy went, a local segment removed by hand). Any
/// order, overlaps allowed; oldest first. The one rule `rsm offsets`, `rsm tier` and the engine report
/// gaps by.
pub fn log_gaps(remote: &[OffsetRange], local: &[OffsetRange]) -> Vec<OffsetRange> {
    let mut out = remote_coverage(remote).gaps;
    let low = remote.iter().map(|r| r.start).min();
    let high = remote.iter().map(|r| r.end).max();
    // A hole of the whole log lies inside a gap of the remote log or wholly outside its span.
    let outside = |h: &OffsetRange| low.is_none_or(|l| h.end < l) || high.is_none_or(|x| h.start > x);
    out.extend(remote_coverage(&[remote, local].concat()).gaps.into_iter().filter(outside));
    out.sort_by_key(|g| g.start);
    out
}

/// The offsets of `range` that none of `held` holds, oldest first.
pub fn uncovered(range: OffsetRange, held: &[OffsetRange]) -> Vec<OffsetRange> {
    let mut sorted: Vec<OffsetRange> =
        held.iter().copied().filter(|h| h.end >= range.start && h.start <= range.end).collect();
    sorted.sort_by_key(|h| (h.start, h.end));
    let mut out = Vec::new();
    let mut next = range.start;
    for h in sorted {
        if h.start > next {
            out.push(OffsetRange { start: next, end: (h.start - 1).min(range.end) });
        }
        next = next.max(h.end.saturating_add(1));
        if next > range.end {
            return out;
        }
    }
    if next <= range.end {
        out.push(OffsetRange { start: next, end: range.end });
    }
    out
}

/// Whether the local segment `[first_offset, last_offset]` may be deleted without losing data: it lies
/// below the log start offset (its records are no longer part of the log), or every offset of it from the
/// log start on is in `covered`, the remote offsets contiguous from the remote log start
/// ([`RemoteCoverage::contiguous`]). A segment in or past a gap of the remote log, or below the remote log
/// start, stays: its offsets exist nowhere else.
pub fn local_segment_deletable(
    first_offset: i64,
    last_offset: i64,
    covered: Option<OffsetRange>,
    log_start_offset: i64,
) -> bool {
    let from = first_offset.max(log_start_offset);
    last_offset < log_start_offset || covered.is_some_and(|r| from >= r.start && last_offset <= r.end)
}

/// A partition's offsets: the log start offset, the local segments, the high watermark, the last stable
/// offset and the remote segments. Every transition keeps [`PartitionOffsets::check`] true: one that
/// would break it is rejected (an error, the state unchanged) or deferred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOffsets {
    log_start: i64,
    local: Vec<i64>,
    local_end: i64,
    high_watermark: i64,
    last_stable: i64,
    remote: Vec<OffsetRange>,
}

impl PartitionOffsets {
    /// A state from its parts, checked. `local_segment_bases` are the base offsets of the local segments,
    /// oldest first, the last being the active segment; `remote` the remote segments, oldest first.
    pub fn new(
        log_start_offset: i64,
        local_segment_bases: Vec<i64>,
        local_log_end_offset: i64,
        high_watermark: i64,
        last_stable_offset: i64,
        remote: Vec<OffsetRange>,
    ) -> Result<Self> {
        let s = PartitionOffsets {
            log_start: log_start_offset,
            local: local_segment_bases,
            local_end: local_log_end_offset,
            high_watermark,
            last_stable: last_stable_offset,
            remote,
        };
        s.check()?;
        Ok(s)
    }

    /// The partition's log start offset (the earliest offset a consumer can read).
    pub fn log_start_offset(&self) -> i64 {
        self.log_start
    }

    /// Lx: the first offset held locally (the base offset of the oldest local segment).
    pub fn local_log_start_offset(&self) -> i64 {
        self.local[0]
    }

    /// Ly: the last stable offset.
    pub fn last_stable_offset(&self) -> i64 {
        self.last_stable
    }

    /// The high watermark.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Lz: the local log end offset.
    pub fn local_log_end_offset(&self) -> i64 {
        self.local_end
    }

    /// Rx: the first offset in remote storage, if any.
    pub fn remote_log_start_offset(&self) -> Option<i64> {
        self.remote.first().map(|r| r.start)
    }

    /// Ry: the last offset in remote storage, if any.
    pub fn remote_log_end_offset(&self) -> Option<i64> {
        self.remote.last().map(|r| r.end)
    }

    /// The base offsets of the local segments, oldest first; the last is the active segment.
    pub fn local_segments(&self) -> &[i64] {
        &self.local
    }

    /// The remote segments, oldest first.
    pub fn remote_segments(&self) -> &[OffsetRange] {
        &self.remote
    }

    /// Checks every constraint:
    /// - the seed's `Lz >= Ly >= Lx` and `Ly >= Ry >= Rx` ([`check_offsets`]), and `Lz >= HW >= Ly`;
    /// - local segments strictly ascending, the active one starting at or below Lz;
    /// - remote segments each starting and ending after the one before;
    /// - `0 <= log start <= HW`;
    /// - nothing lost: every offset from the log start offset up to Lx is in remote storage.
    pub fn check(&self) -> Result<()> {
        let Some(&active) = self.local.last() else {
            return Err(Error::invalid("no local segment: the active segment must be present"));
        };
        let lx = self.local[0];
        if lx < 0 {
            return Err(Error::invalid(format!("local log start offset {lx} is negative")));
        }
        if let Some(w) = self.local.windows(2).find(|w| w[1] <= w[0]) {
            return Err(Error::invalid(format!(
                "local segments out of order or overlapping: {} follows {}",
                w[1], w[0]
            )));
        }
        if active > self.local_end {
            return Err(Error::invalid(format!(
                "the active segment starts at {active} beyond the local log end offset {}",
                self.local_end
            )));
        }
        for (i, r) in self.remote.iter().enumerate() {
            if r.start < 0 || r.end < r.start {
                return Err(Error::invalid(format!("remote segment [{}, {}] is malformed", r.start, r.end)));
            }
            if i > 0 && (r.start <= self.remote[i - 1].start || r.end <= self.remote[i - 1].end) {
                return Err(Error::invalid(format!(
                    "remote segments out of order or overlapping: [{}, {}] after [{}, {}]",
                    r.start,
                    r.end,
                    self.remote[i - 1].start,
                    self.remote[i - 1].end
                )));
            }
        }
        let remote = match (self.remote.first(), self.remote.last()) {
            (Some(f), Some(l)) => Some(OffsetRange { start: f.start, end: l.end }),
            _ => None,
        };
        check_offsets(lx, self.last_stable, self.local_end, remote)?;
        if self.high_watermark < self.last_stable || self.high_watermark > self.local_end {
            return Err(Error::invalid(format!(
                "Lz >= HW >= Ly violated: high watermark {} is outside [{}, {}]",
                self.high_watermark, self.last_stable, self.local_end
            )));
        }
        if self.log_start < 0 || self.log_start > self.high_watermark {
            return Err(Error::invalid(format!(
                "log start offset {} is outside [0, high watermark {}]",
                self.log_start, self.high_watermark
            )));
        }
        // Every offset in [log start, Lx) must be in remote storage.
        let mut next = self.log_start;
        for r in &self.remote {
            if next >= lx || r.start > next {
                break;
            }
            next = next.max(r.end + 1);
        }
        if next < lx {
            return Err(Error::invalid(format!(
                "offsets {next} to {} are neither local nor remote (log start offset {}, local log start \
                 offset {lx})",
                lx - 1,
                self.log_start
            )));
        }
        Ok(())
    }

    fn commit(&mut self, next: PartitionOffsets, what: &str) -> Result<Transition> {
        next.check().map_err(|e| e.context(format!("{what} rejected")))?;
        *self = next;
        Ok(Transition::Applied)
    }

    /// Records were appended: Lz moves to `new_end`. A lower end is rejected.
    pub fn append(&mut self, new_end: i64) -> Result<Transition> {
        if new_end < self.local_end {
            return Err(Error::invalid(format!(
                "append rejected: new end {new_end} is below the local log end offset {}",
                self.local_end
            )));
        }
        let next = PartitionOffsets { local_end: new_end, ..self.clone() };
        self.commit(next, "append")
    }

    /// The high watermark and the last stable offset advanced. Moving either back is rejected, as is a
    /// state breaking `Lz >= HW >= Ly`.
    pub fn advance(&mut self, high_watermark: i64, last_stable_offset: i64) -> Result<Transition> {
        if high_watermark < self.high_watermark || last_stable_offset < self.last_stable {
            return Err(Error::invalid(format!(
                "advance rejected: high watermark {high_watermark} / last stable offset {last_stable_offset} \
                 would move back from {} / {}",
                self.high_watermark, self.last_stable
            )));
        }
        let next = PartitionOffsets { high_watermark, last_stable: last_stable_offset, ..self.clone() };
        self.commit(next, "advance")
    }

    /// The active segment is rolled: a new active segment starts at Lz. An empty active segment is not
    /// rolled (deferred until it holds records).
    pub fn roll(&mut self) -> Result<Transition> {
        let active = *self.local.last().expect("checked: never empty");
        if active == self.local_end {
            return Ok(Transition::Deferred(format!("the active segment at {active} is empty")));
        }
        let mut next = self.clone();
        next.local.push(self.local_end);
        self.commit(next, "roll")
    }

    /// The copy of the closed local segment starting at `base_offset` finished (SR-16). Rejected when
    /// the segment is not closed, not entirely below the last stable offset, already covered remotely,
    /// or would leave a gap of needed offsets between the remote end and it.
    pub fn copy_done(&mut self, base_offset: i64) -> Result<Transition> {
        let Some(i) = self.local.iter().position(|&b| b == base_offset) else {
            return Err(Error::invalid(format!("copy rejected: no local segment starts at {base_offset}")));
        };
        if i + 1 == self.local.len() {
            return Err(Error::invalid(format!("copy rejected: the segment at {base_offset} is the active segment")));
        }
        let end = self.local[i + 1] - 1;
        if end >= self.last_stable {
            return Err(Error::invalid(format!(
                "copy rejected: segment [{base_offset}, {end}] is not entirely below the last stable offset {}",
                self.last_stable
            )));
        }
        if let Some(ry) = self.remote_log_end_offset()
            && end <= ry
        {
            return Err(Error::invalid(format!(
                "copy rejected: segment [{base_offset}, {end}] is already covered up to remote offset {ry}"
            )));
        }
        let needed_from = self.remote_log_end_offset().map_or(self.local[0], |ry| ry + 1).max(self.log_start);
        if base_offset > needed_from {
            return Err(Error::invalid(format!(
                "copy rejected: segment [{base_offset}, {end}] would leave offsets {needed_from} to {} out of \
                 remote storage",
                base_offset - 1
            )));
        }
        let mut next = self.clone();
        next.remote.push(OffsetRange { start: base_offset, end });
        self.commit(next, "copy")
    }

    /// The oldest remote segment, `segment`, was deleted (SR-17). The log start offset moves past it.
    /// Deleting any other remote segment is rejected.
    pub fn remote_delete(&mut self, segment: OffsetRange) -> Result<Transition> {
        if self.remote.first() != Some(&segment) {
            return Err(Error::invalid(format!(
                "remote delete rejected: [{}, {}] is not the oldest remote segment",
                segment.start, segment.end
            )));
        }
        let mut next = self.clone();
        next.remote.remove(0);
        next.log_start = next.log_start.max(segment.end + 1);
        self.commit(next, "remote delete")
    }

    /// The oldest local segment is deleted (local retention, SR-20). Allowed only when nothing is lost
    /// ([`local_segment_deletable`]); deferred until it is copied otherwise, and deferred while it would
    /// put Lx above Ly. The active segment is never deleted.
    pub fn local_delete(&mut self) -> Result<Transition> {
        if self.local.len() == 1 {
            return Err(Error::invalid("local delete rejected: the active segment is never deleted"));
        }
        let (base, last) = (self.local[0], self.local[1] - 1);
        let covered = remote_coverage(&self.remote).contiguous;
        if !local_segment_deletable(base, last, covered, self.log_start) {
            return Ok(Transition::Deferred(format!(
                "segment [{base}, {last}] is not in remote storage yet (highest remote offset {:?}) and not \
                 below the log start offset {}",
                self.remote_log_end_offset(),
                self.log_start
            )));
        }
        if self.local[1] > self.last_stable {
            return Ok(Transition::Deferred(format!(
                "deleting segment [{base}, {last}] would put the local log start offset {} above the last \
                 stable offset {}",
                self.local[1], self.last_stable
            )));
        }
        let mut next = self.clone();
        next.local.remove(0);
        self.commit(next, "local delete")
    }

    /// A DeleteRecords request (SR-25): moves the log start offset (above the current one, at most the
    /// high watermark; -1 means the high watermark) and returns at once with the remote segments to clean.
    pub fn delete_records(&mut self, requested: i64) -> Result<LogStartMoved> {
        let new = new_log_start(requested, self.log_start, self.high_watermark)?;
        let next = PartitionOffsets { log_start: new, ..self.clone() };
        self.commit(next, "delete records")?;
        Ok(LogStartMoved {
            log_start_offset: new,
            remote_to_clean: self.remote.iter().take_while(|r| r.end < new).copied().collect(),
        })
    }
}
