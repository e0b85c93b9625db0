//! The aborted transactions a `read_committed` fetch of remote data must know, and the filter a consumer
//! reads a fetch through: one segment's transaction index, fetched through the storage manager (and so its
//! index cache) and searched by Kafka's rule ([`aborted_in_segment`]); the walk from the segment read over
//! the later segments of its partition until the search is complete ([`aborted_from`]); and the
//! [`TxnFilter`] of a fetched range at an isolation level ([`txn_filter`]). The engine and the C ABI's
//! facade both read records through these; they differ only in how they name the later segments.

use crate::error::{ErrorKind, Result};
use crate::format::records::isolation::{
    AbortedSearch, AbortedTxn, IsolationLevel, TxnFilter, collect_aborted, fetch_upper_bound, read_txn_index,
};
use crate::model::{IndexType, RemoteLogSegmentMetadata};
use crate::rsm::RemoteStorageManager;
use std::future::Future;

/// The entries of `segment`'s transaction index that matter to a fetch of `[fetch_offset, upper_bound)`,
/// and whether later segments can add none. A segment without a transaction index has none.
pub async fn aborted_in_segment(
    rsm: &dyn RemoteStorageManager,
    segment: &RemoteLogSegmentMetadata,
    fetch_offset: i64,
    upper_bound: i64,
) -> Result<AbortedSearch> {
    let bytes = match rsm.fetch_index(segment, IndexType::Transaction).await {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(AbortedSearch::default()),
        Err(e) => return Err(e),
    };
    let name = format!("transaction index of segment {}", segment.remote_log_segment_id);
    Ok(collect_aborted(&read_txn_index(&name, &bytes)?, fetch_offset, upper_bound))
}

/// What [`aborted_from`] found over the segments it searched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbortedWalk {
    /// The aborted transactions overlapping the fetch, from every segment searched, in the order found.
    pub aborted: Vec<AbortedTxn>,
    /// Whether an entry said no later segment can add one; `false` when the segments ran out first (the
    /// caller may then search further logs, such as the local segments past the remote log).
    pub complete: bool,
    /// The end offset of the last segment searched.
    pub last_end_offset: i64,
}

/// The aborted transactions that matter to a fetch of `[fetch_offset, upper_bound)` read from `segment`:
/// its transaction index's, then those of the later segments of its partition in offset order, until an
/// entry says no later one can matter (Kafka's rule: an abort's marker, and so its index entry, may be in a
/// later segment). `next` is given the segment last searched and names the one after it, or `None` when
/// there is none.
pub async fn aborted_from<N, F>(
    rsm: &dyn RemoteStorageManager,
    segment: &RemoteLogSegmentMetadata,
    mut next: N,
    fetch_offset: i64,
    upper_bound: i64,
) -> Result<AbortedWalk>
where
    N: FnMut(&RemoteLogSegmentMetadata) -> F,
    F: Future<Output = Result<Option<RemoteLogSegmentMetadata>>>,
{
    let mut aborted = Vec::new();
    let mut searched = segment.clone();
    loop {
        let AbortedSearch { aborted: found, complete } =
            aborted_in_segment(rsm, &searched, fetch_offset, upper_bound).await?;
        aborted.extend(found);
        if complete {
            return Ok(AbortedWalk { aborted, complete, last_end_offset: searched.end_offset });
        }
        match next(&searched).await? {
            Some(later) => searched = later,
            None => return Ok(AbortedWalk { aborted, complete, last_end_offset: searched.end_offset }),
        }
    }
}

/// The filter a consumer at `isolation` reads a fetched range through (`bytes`, whose first byte is at
/// `position` in its segment): at `read_committed` it knows the aborted transactions `aborted` gives for the
/// fetch's upper bound ([`fetch_upper_bound`]); at `read_uncommitted`, or when the range holds no whole
/// batch, it knows none and `aborted` is not called. A damaged range is an error either way.
pub async fn txn_filter<A, F>(isolation: IsolationLevel, bytes: &[u8], position: u64, aborted: A) -> Result<TxnFilter>
where
    A: FnOnce(i64) -> F,
    F: Future<Output = Result<Vec<AbortedTxn>>>,
{
    let aborted = match (isolation, fetch_upper_bound(bytes, position)?) {
        (IsolationLevel::ReadCommitted, Some(upper)) => aborted(upper).await?,
        _ => Vec::new(),
    };
    Ok(TxnFilter::new(isolation, aborted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ByteStream;
    use crate::error::Error;
    use crate::format::records::{DecodeLimits, isolation::ConsumeBounds, isolation::consume};
    use crate::model::{CustomMetadata, LogSegmentData, RemoteLogSegmentId, TopicIdPartition, TopicPartition, Uuid};
    use crate::testkit::log_writer::{BatchOptions, Record, encode_batch_with, encode_control_batch};
    use bytes::Bytes;
    use std::collections::BTreeMap;
    use std::future::ready;
    use std::sync::Mutex;

    /// A storage manager that holds only transaction indexes, by segment start offset, and records which
    /// it was asked for.
    #[derive(Default)]
    struct TxnIndexes {
        by_start: BTreeMap<i64, Vec<u8>>,
        asked: Mutex<Vec<i64>>,
    }

    #[async_trait::async_trait]
    impl RemoteStorageManager for TxnIndexes {
        async fn copy_log_segment_data(
            &self,
            _: &RemoteLogSegmentMetadata,
            _: &LogSegmentData,
        ) -> Result<Option<CustomMetadata>> {
            Err(Error::invalid("not in this test"))
        }

        async fn fetch_log_segment(&self, _: &RemoteLogSegmentMetadata, _: i64, _: Option<i64>) -> Result<ByteStream> {
            Err(Error::invalid("not in this test"))
        }

        async fn fetch_index(&self, md: &RemoteLogSegmentMetadata, index_type: IndexType) -> Result<Bytes> {
            assert_eq!(index_type, IndexType::Transaction);
            self.asked.lock().unwrap().push(md.start_offset);
            let bytes = self.by_start.get(&md.start_offset).ok_or_else(|| Error::not_found("no transaction index"))?;
            Ok(Bytes::from(bytes.clone()))
        }

        async fn delete_log_segment_data(&self, _: &RemoteLogSegmentMetadata) -> Result<()> {
            Err(Error::invalid("not in this test"))
        }
    }

    fn segment(start: i64, end: i64) -> RemoteLogSegmentMetadata {
        let tp = TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new("t", 0));
        RemoteLogSegmentMetadata::new(
            RemoteLogSegmentId::new(tp, Uuid::new(3, start)),
            start,
            end,
            0,
            1,
            0,
            100,
            [(0, start)].into(),
        )
        .unwrap()
    }

    /// A transaction index of `(producer id, first offset, last offset, last stable offset)` entries.
    fn txn_index(entries: &[(i64, i64, i64, i64)]) -> Vec<u8> {
        let mut b = Vec::new();
        for &(pid, first, last, lso) in entries {
            b.extend_from_slice(&0i16.to_be_bytes());
            for v in [pid, first, last, lso] {
                b.extend_from_slice(&v.to_be_bytes());
            }
        }
        b
    }

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64, last_stable_offset: i64) -> AbortedTxn {
        AbortedTxn { producer_id, first_offset, last_offset, last_stable_offset }
    }

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn the_walk_goes_on_to_later_segments_until_the_search_is_complete() {
        let rsm = TxnIndexes {
            by_start: [
                (0, txn_index(&[(7, 5, 12, 5)])),
                // 10..19 has no transaction index.
                (20, txn_index(&[(8, 15, 22, 15), (9, 16, 25, 30)])),
                (40, txn_index(&[(10, 18, 41, 50)])),
            ]
            .into(),
            ..TxnIndexes::default()
        };
        let later = [segment(10, 19), segment(20, 39), segment(40, 49)];
        let mut rest = later.iter().cloned();
        let walk = block_on(aborted_from(&rsm, &segment(0, 9), |_| ready(Ok(rest.next())), 0, 30)).unwrap();
        let want = AbortedWalk {
            aborted: vec![txn(7, 5, 12, 5), txn(8, 15, 22, 15), txn(9, 16, 25, 30)],
            complete: true,
            last_end_offset: 39,
        };
        assert_eq!(walk, want);
        assert_eq!(*rsm.asked.lock().unwrap(), [0, 10, 20], "the segment after the complete search is not read");

        // Without a complete search the walk ends with the segments, naming the last one searched.
        let mut rest = later[..1].iter().cloned();
        let walk = block_on(aborted_from(&rsm, &segment(0, 9), |_| ready(Ok(rest.next())), 0, 30)).unwrap();
        assert_eq!((walk.aborted, walk.complete, walk.last_end_offset), (vec![txn(7, 5, 12, 5)], false, 19));

        // An error naming the next segment ends the walk with it.
        let failed = block_on(aborted_from(&rsm, &segment(0, 9), |_| ready(Err(Error::invalid("no next"))), 0, 30));
        assert!(failed.unwrap_err().message().contains("no next"));
    }

    #[test]
    fn the_filter_asks_for_aborted_transactions_only_at_read_committed() {
        let data = |base, pid| {
            let options = BatchOptions { producer_id: pid, transactional: true, ..BatchOptions::default() };
            encode_batch_with(
                base,
                0,
                &[Record { key: None, value: Some(vec![1]), headers: vec![], timestamp: 0 }],
                &options,
            )
        };
        let mut bytes = data(10, 1);
        bytes.extend(data(11, 2));
        bytes.extend(encode_control_batch(12, 0, 1, 0, false, 0, 0));
        let aborted = vec![txn(1, 10, 12, 13)];
        let read = |isolation| {
            let asked = Mutex::new(None);
            let ask = |upper| {
                *asked.lock().unwrap() = Some(upper);
                ready(Ok(aborted.clone()))
            };
            let mut filter = block_on(txn_filter(isolation, &bytes, 0, ask)).unwrap();
            let bounds = ConsumeBounds { from: 10, max_records: 10, below: None };
            let got = consume(&bytes, 0, bounds, &mut filter, &DecodeLimits::default()).unwrap();
            (got.records.iter().map(|r| r.offset).collect::<Vec<_>>(), asked.into_inner().unwrap())
        };
        assert_eq!(read(IsolationLevel::ReadCommitted), (vec![11], Some(13)), "the aborted record is dropped");
        assert_eq!(read(IsolationLevel::ReadUncommitted), (vec![10, 11], None), "nothing asked, nothing dropped");

        // No whole batch: nothing to ask about.
        let asked = block_on(txn_filter(IsolationLevel::ReadCommitted, &bytes[..20], 0, |_| async {
            panic!("no upper bound, no search")
        }));
        assert!(asked.is_ok());
    }
}
