//! Records, not batches, from one segment: what a consumer at an isolation level is given of a fetch at an
//! offset. The engine's `read_records` does the same over a whole remote log with its metadata; here the
//! host names the segment and the later segments of its partition, so a face without the engine (the C
//! ABI) reads records too. Thin: decoding, the aborted-transaction search and the filter are rsm-core's
//! ([`rsm_core::format::records`]).

use crate::runtime::runtime;
use crate::store::Store;
use rsm_core::format::records::isolation::{ConsumeBounds, IsolationLevel, consume};
use rsm_core::format::records::{DecodeLimits, Record};
use rsm_core::storage::TieredStorage;
use rsm_core::storage::transactions::{aborted_from, txn_filter};
use rsm_core::{Error, RemoteLogSegmentMetadata, Result};
use std::future::ready;

/// A fetch of records from one segment.
#[derive(Clone, Debug)]
pub struct RecordsFetch {
    /// The first offset wanted: one of the segment's.
    pub offset: i64,
    /// The most batch bytes to read (`max.partition.fetch.bytes`); the whole first batch is always read.
    pub max_bytes: u32,
    /// The most records to return.
    pub max_records: usize,
    /// `read_uncommitted` (every data record) or `read_committed` (aborted transactions' records dropped).
    pub isolation: IsolationLevel,
    /// The most bytes one batch may inflate to.
    pub limits: DecodeLimits,
}

/// What a fetch of records returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchedRecords {
    /// The records, strictly in offset order (control batches are never records).
    pub records: Vec<Record>,
    /// The offset to ask for next: after the last record returned when `max_records` stopped the fetch,
    /// else after the last whole batch read (past the segment's end when it was read to its end).
    pub next_offset: i64,
}

impl Store {
    /// Reads records of `segment` from `req.offset` as a consumer at `req.isolation` would get them: the
    /// bytes from the batch holding the offset ([`Store::position_of_offset`]), at most `req.max_bytes`
    /// but at least that whole batch, decoded within `req.limits`. At `read_committed` the aborted
    /// transactions come from the segment's transaction index, then from those of `later` (the segments
    /// after it in the same partition, in offset order) until the search is complete (Kafka's rule: an
    /// abort's marker, and so its index entry, may be in a later segment).
    ///
    /// An offset outside the segment is an invalid argument, as a `later` segment of another partition or
    /// out of order is; a batch past the limits or damaged is an error naming the segment.
    pub fn fetch_records(
        &self,
        segment: &RemoteLogSegmentMetadata,
        later: &[RemoteLogSegmentMetadata],
        req: &RecordsFetch,
    ) -> Result<FetchedRecords> {
        check_later(segment, later)?;
        runtime().block_on(fetch_records(&self.storage, segment, later, req))
    }
}

/// Refuses `later` segments that are not after `segment` in its partition, in offset order.
fn check_later(segment: &RemoteLogSegmentMetadata, later: &[RemoteLogSegmentMetadata]) -> Result<()> {
    let tp = &segment.remote_log_segment_id.topic_id_partition;
    let mut end = segment.end_offset;
    for (i, l) in later.iter().enumerate() {
        let other = &l.remote_log_segment_id.topic_id_partition;
        if other != tp {
            return Err(Error::invalid(format!("later segment {i} is of {other}, not of the segment's {tp}")));
        }
        if l.start_offset <= end {
            return Err(Error::invalid(format!(
                "later segment {i} starts at offset {}, not after offset {end} (the segments must follow the \
                 segment read, in offset order)",
                l.start_offset
            )));
        }
        end = l.end_offset;
    }
    Ok(())
}

async fn fetch_records(
    storage: &TieredStorage,
    segment: &RemoteLogSegmentMetadata,
    later: &[RemoteLogSegmentMetadata],
    req: &RecordsFetch,
) -> Result<FetchedRecords> {
    let position = storage.position_of_offset(segment, req.offset).await?;
    let bytes = storage.read_batches_from(segment, position, req.max_bytes).await?;
    // At read_committed: the segment's aborted transactions, then the later segments', in the order given.
    let aborted = |upper| async move {
        let mut rest = later.iter().cloned();
        Ok(aborted_from(storage, segment, |_| ready(Ok(rest.next())), req.offset, upper).await?.aborted)
    };
    let mut filter = txn_filter(req.isolation, &bytes, position, aborted).await?;
    let bounds = ConsumeBounds { from: req.offset, max_records: req.max_records, below: None };
    let got = consume(&bytes, position, bounds, &mut filter, &req.limits)
        .map_err(|e| e.context(format!("segment {}", segment.remote_log_segment_id)))?;
    Ok(FetchedRecords { records: got.records, next_offset: got.next_offset })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::{RemoteLogSegmentId, TopicIdPartition, TopicPartition, Uuid};

    fn segment(topic: &str, start: i64, end: i64) -> RemoteLogSegmentMetadata {
        let tp = TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new(topic, 0));
        RemoteLogSegmentMetadata {
            remote_log_segment_id: RemoteLogSegmentId::new(tp, Uuid::new(3, start)),
            start_offset: start,
            end_offset: end,
            max_timestamp_ms: 0,
            broker_id: 1,
            event_timestamp_ms: 0,
            segment_size_in_bytes: 100,
            segment_leader_epochs: [(0, start)].into(),
            custom_metadata: None,
            state: rsm_core::RemoteLogSegmentState::CopySegmentFinished,
            txn_idx_empty: false,
        }
    }

    #[test]
    fn later_segments_must_follow_in_the_same_partition() {
        let s = segment("t", 0, 9);
        check_later(&s, &[]).unwrap();
        check_later(&s, &[segment("t", 10, 19), segment("t", 25, 30)]).unwrap();
        let e = check_later(&s, &[segment("t", 10, 19), segment("t", 15, 30)]).unwrap_err();
        assert!(e.message().contains("later segment 1 starts at offset 15, not after offset 19"), "{e}");
        let e = check_later(&s, &[segment("t", 0, 9)]).unwrap_err();
        assert!(e.message().contains("later segment 0 starts at offset 0, not after offset 9"), "{e}");
        let e = check_later(&s, &[segment("u", 10, 19)]).unwrap_err();
        assert!(e.message().contains("later segment 0 is of") && e.message().contains("not of the segment's"), "{e}");
    }
}
