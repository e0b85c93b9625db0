//! ListOffsets on a tiered partition (SR-26, SR-27): earliest, latest, a timestamp (remote time indexes
//! first, then local), and NEXT_LOCAL_TIMESTAMP for followers.

use super::offsets::PartitionOffsets;
use rsm_core::error::{Error, Result};

/// Target timestamp -1: the latest offset.
pub const LATEST_TIMESTAMP: i64 = -1;
/// Target timestamp -2: the earliest offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// Target timestamp -3 in the seed (KIP-405): the first offset a follower must replicate locally. Kafka as
/// shipped gives -3 to MAX_TIMESTAMP instead (KIP-734); see [`OffsetSpec::from_target_timestamp`].
pub const NEXT_LOCAL_TIMESTAMP: i64 = -3;
/// Target timestamp -4 in Kafka as shipped (EARLIEST_LOCAL_TIMESTAMP): the local log start offset, which
/// is what followers use where the seed has -3. Accepted as an alias of [`NEXT_LOCAL_TIMESTAMP`].
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;

/// What a ListOffsets request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// -2: the log start offset (local or remote, whichever is earliest).
    Earliest,
    /// -1: the end of what the requester may read.
    Latest,
    /// -3 (seed) / -4 (shipped): the first offset a follower must replicate locally.
    NextLocal,
    /// A timestamp >= 0: the first offset whose timestamp is at or after it.
    Timestamp(i64),
}

impl OffsetSpec {
    /// The spec for a request's target timestamp, in the seed's numbering: -1, -2, -3
    /// (NEXT_LOCAL_TIMESTAMP) and -4 (Kafka's EARLIEST_LOCAL_TIMESTAMP, the same answer). Kafka's -3
    /// (MAX_TIMESTAMP, from request version 7) and -5 (LATEST_TIERED_TIMESTAMP) are not supported: a host
    /// speaking the wire protocol maps them itself.
    pub fn from_target_timestamp(ts: i64) -> Result<OffsetSpec> {
        match ts {
            LATEST_TIMESTAMP => Ok(OffsetSpec::Latest),
            EARLIEST_TIMESTAMP => Ok(OffsetSpec::Earliest),
            NEXT_LOCAL_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => Ok(OffsetSpec::NextLocal),
            t if t >= 0 => Ok(OffsetSpec::Timestamp(t)),
            t => Err(Error::invalid(format!(
                "target timestamp {t} is not supported (allowed: -4, -3, -2, -1, or a timestamp >= 0)"
            ))),
        }
    }
}

/// Who asks, which decides the latest offset they may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A consumer reading uncommitted records: up to the high watermark.
    ReadUncommitted,
    /// A consumer reading committed records only: up to the last stable offset.
    ReadCommitted,
    /// A replica (follower or tool): up to the log end offset.
    Replica,
}

/// The offsets of a partition that ListOffsets answers from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsets {
    /// The partition's log start offset.
    pub log_start_offset: i64,
    /// Lx: the first offset held locally.
    pub local_log_start_offset: i64,
    /// The high watermark.
    pub high_watermark: i64,
    /// Ly: the last stable offset.
    pub last_stable_offset: i64,
    /// Lz: the log end offset.
    pub log_end_offset: i64,
}

impl From<&PartitionOffsets> for LogOffsets {
    fn from(p: &PartitionOffsets) -> Self {
        LogOffsets {
            log_start_offset: p.log_start_offset(),
            local_log_start_offset: p.local_log_start_offset(),
            high_watermark: p.high_watermark(),
            last_stable_offset: p.last_stable_offset(),
            log_end_offset: p.local_log_end_offset(),
        }
    }
}

/// A record found by timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampAndOffset {
    /// The record's timestamp.
    pub timestamp: i64,
    /// The record's offset.
    pub offset: i64,
}

/// The answer to a ListOffsets request for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetAnswer {
    /// An offset (for earliest, latest and next-local).
    Offset(i64),
    /// The first record at or after the requested timestamp.
    Found(TimestampAndOffset),
    /// No record at or after the requested timestamp that the requester may read (Kafka answers offset -1
    /// and timestamp -1).
    NotFound,
}

/// Answers a ListOffsets request (SR-26, SR-27).
///
/// - Earliest (-2): the log start offset.
/// - Latest (-1): the high watermark for [`Isolation::ReadUncommitted`], the last stable offset for
///   [`Isolation::ReadCommitted`], the log end offset for [`Isolation::Replica`].
/// - NextLocal (-3): the local log start offset (not below the log start offset): the first offset a
///   follower replicates locally; everything before it is in remote storage.
/// - A timestamp: `remote(ts, from)` is asked first, `local(ts, from)` only when remote has no match; each
///   returns the first record with a timestamp at or after `ts` and an offset at or after `from` (the log
///   start offset; for local, not below Lx). A match at or beyond the end the requester may read is not
///   returned.
pub fn list_offset<R, L>(
    spec: OffsetSpec,
    isolation: Isolation,
    offsets: &LogOffsets,
    remote: R,
    local: L,
) -> Result<OffsetAnswer>
where
    R: FnOnce(i64, i64) -> Option<TimestampAndOffset>,
    L: FnOnce(i64, i64) -> Option<TimestampAndOffset>,
{
    let o = offsets;
    if o.log_start_offset < 0
        || o.log_start_offset > o.high_watermark
        || o.last_stable_offset > o.high_watermark
        || o.high_watermark > o.log_end_offset
        || o.local_log_start_offset < 0
        || o.local_log_start_offset > o.log_end_offset
    {
        return Err(Error::invalid(format!(
            "inconsistent offsets: log start {}, local log start {}, last stable {}, high watermark {}, log end {} \
             (need 0 <= log start <= high watermark, last stable <= high watermark <= log end, local log start \
             in [0, log end])",
            o.log_start_offset, o.local_log_start_offset, o.last_stable_offset, o.high_watermark, o.log_end_offset
        )));
    }
    let readable_end = match isolation {
        Isolation::ReadUncommitted => o.high_watermark,
        Isolation::ReadCommitted => o.last_stable_offset,
        Isolation::Replica => o.log_end_offset,
    };
    Ok(match spec {
        OffsetSpec::Earliest => OffsetAnswer::Offset(o.log_start_offset),
        OffsetSpec::Latest => OffsetAnswer::Offset(readable_end),
        OffsetSpec::NextLocal => OffsetAnswer::Offset(o.local_log_start_offset.max(o.log_start_offset)),
        OffsetSpec::Timestamp(ts) if ts < 0 => {
            return Err(Error::invalid(format!("timestamp {ts} is negative")));
        }
        OffsetSpec::Timestamp(ts) => {
            let from = o.log_start_offset;
            let found = match remote(ts, from).filter(|f| f.offset >= from) {
                Some(f) => Some(f),
                None => {
                    let local_from = from.max(o.local_log_start_offset);
                    local(ts, local_from).filter(|f| f.offset >= local_from)
                }
            };
            match found {
                Some(f) if f.offset < readable_end => OffsetAnswer::Found(f),
                _ => OffsetAnswer::NotFound,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
            let e = list_offset(c.spec, Isolation::ReadUncommitted, &c.offsets, |_, _| None, |_, _| None)
                .expect_err(c.name);
            assert!(e.to_string().contains(c.message), "{}: {e}", c.name);
        }
    }

    #[test]
    fn log_offsets_from_partition_state() {
        let p = PartitionOffsets::new(
            50,
            vec![100, 200],
            250,
            240,
            230,
            vec![super::super::offsets::OffsetRange { start: 0, end: 99 }],
        )
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
}
