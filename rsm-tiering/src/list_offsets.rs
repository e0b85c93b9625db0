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
