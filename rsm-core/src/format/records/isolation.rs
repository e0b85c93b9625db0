//! Isolation levels: which records of a log a consumer is given, by Kafka's rules.
//!
//! - `read_uncommitted` (the consumer's default) gives every data record.
//! - `read_committed` drops the records of aborted transactions. Which transactions were aborted comes from
//!   the segments' transaction indexes (`.txnindex`): Kafka appends an entry there, in the segment holding
//!   the abort marker, for each aborted transaction (producer id, first offset, the marker's offset, and
//!   the last stable offset once it completed). A fetch collects the entries that overlap what it read
//!   ([`collect_aborted`], Kafka's `TransactionIndex.collectAbortedTxns`), reading later segments' indexes
//!   until one says nothing later can matter; the consumer then skips a transactional batch while its
//!   producer has an aborted transaction that started at or before it and whose abort marker it has not yet
//!   passed ([`TxnFilter`], Kafka's `CompletedFetch`).
//!
//! Control batches (commit and abort markers) are never records, at either level.

use super::{ControlType, DecodeLimits, DecodedBatch, Record, decode_batch};
use crate::error::{Error, Result};
use crate::format::batch::BatchIter;
use crate::format::codec::Reader;
use std::collections::HashSet;

/// A consumer's `isolation.level`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IsolationLevel {
    /// Every data record (Kafka's default).
    #[default]
    ReadUncommitted,
    /// Only records of committed transactions and of non-transactional producers.
    ReadCommitted,
}

impl IsolationLevel {
    /// Kafka's name for the level: `read_uncommitted` or `read_committed`.
    pub fn name(self) -> &'static str {
        match self {
            IsolationLevel::ReadUncommitted => "read_uncommitted",
            IsolationLevel::ReadCommitted => "read_committed",
        }
    }
}

impl std::fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for IsolationLevel {
    type Err = Error;

    /// Parses Kafka's names (case-insensitive); anything else is an invalid argument naming the value.
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "read_uncommitted" => Ok(IsolationLevel::ReadUncommitted),
            "read_committed" => Ok(IsolationLevel::ReadCommitted),
            _ => Err(Error::invalid(format!("isolation level '{s}' is not one of read_uncommitted, read_committed"))),
        }
    }
}

/// Size of one `.txnindex` entry: version i16, producer id i64, first, last and last stable offsets i64.
pub const TXN_INDEX_ENTRY_SIZE: usize = 34;
/// The only `.txnindex` entry version Kafka writes.
const TXN_INDEX_VERSION: i16 = 0;

/// One aborted transaction, as a `.txnindex` entry records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AbortedTxn {
    /// The producer that aborted.
    pub producer_id: i64,
    /// The offset of the transaction's first record.
    pub first_offset: i64,
    /// The offset of its abort marker.
    pub last_offset: i64,
    /// The partition's last stable offset once the abort completed.
    pub last_stable_offset: i64,
}

/// The entries of a `.txnindex` file (`name` says which, for errors). A length that is not a whole number
/// of entries, or an entry of another version, is corrupt, naming the file and the entry's position.
pub fn read_txn_index(name: &str, bytes: &[u8]) -> Result<Vec<AbortedTxn>> {
    if !bytes.len().is_multiple_of(TXN_INDEX_ENTRY_SIZE) {
        return Err(Error::corrupt(format!(
            "transaction index {name}: {} bytes is not a whole number of {TXN_INDEX_ENTRY_SIZE}-byte entries",
            bytes.len()
        )));
    }
    let mut r = Reader::new(bytes, name);
    let mut out = Vec::with_capacity(bytes.len() / TXN_INDEX_ENTRY_SIZE);
    while r.remaining() > 0 {
        let at = r.position();
        let version = r.i16()?;
        if version != TXN_INDEX_VERSION {
            return Err(Error::corrupt(format!(
                "transaction index {name}: the entry at byte {at} has version {version}, not {TXN_INDEX_VERSION}"
            )));
        }
        out.push(AbortedTxn {
            producer_id: r.i64()?,
            first_offset: r.i64()?,
            last_offset: r.i64()?,
            last_stable_offset: r.i64()?,
        });
    }
    Ok(out)
}

/// What one transaction index says about a fetch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AbortedSearch {
    /// The aborted transactions overlapping the fetch.
    pub aborted: Vec<AbortedTxn>,
    /// Whether no later segment's index can add one: an entry's last stable offset reached the fetch's
    /// upper bound.
    pub complete: bool,
}

/// The entries that matter to a fetch of `[fetch_offset, upper_bound)`: those whose marker is at or after
/// the fetch's start and whose transaction began before its end; complete once an entry's last stable
/// offset reaches `upper_bound` (Kafka's `TransactionIndex.collectAbortedTxns`).
pub fn collect_aborted(entries: &[AbortedTxn], fetch_offset: i64, upper_bound: i64) -> AbortedSearch {
    let mut out = AbortedSearch::default();
    for e in entries {
        if e.last_offset >= fetch_offset && e.first_offset < upper_bound {
            out.aborted.push(*e);
        }
        if e.last_stable_offset >= upper_bound {
            out.complete = true;
            break;
        }
    }
    out
}

/// A consumer's view of one fetch: which batches' records it is given. Build one per fetch with the
/// aborted transactions collected for it, then ask [`TxnFilter::admit`] of each batch in offset order.
#[derive(Clone, Debug)]
pub struct TxnFilter {
    isolation: IsolationLevel,
    /// Aborted transactions by first offset, not yet reached.
    pending: Vec<AbortedTxn>,
    next: usize,
    /// Producers inside an aborted transaction at the current batch.
    aborting: HashSet<i64>,
}

impl TxnFilter {
    /// A filter at `isolation` knowing the fetch's aborted transactions (ignored at `read_uncommitted`).
    pub fn new(isolation: IsolationLevel, mut aborted: Vec<AbortedTxn>) -> Self {
        aborted.sort_by_key(|t| (t.first_offset, t.producer_id));
        aborted.dedup();
        TxnFilter { isolation, pending: aborted, next: 0, aborting: HashSet::new() }
    }

    /// Whether `batch`'s records go to the consumer; batches must come in offset order. Control batches
    /// never do; at `read_committed` a transactional batch of a producer inside an aborted transaction does
    /// not, and an abort marker ends that transaction.
    pub fn admit(&mut self, batch: &DecodedBatch) -> bool {
        if self.isolation == IsolationLevel::ReadCommitted && batch.producer_id >= 0 {
            while let Some(t) = self.pending.get(self.next).filter(|t| t.first_offset <= batch.last_offset) {
                self.aborting.insert(t.producer_id);
                self.next += 1;
            }
            if batch.control == Some(ControlType::Abort) {
                self.aborting.remove(&batch.producer_id);
            } else if batch.transactional && self.aborting.contains(&batch.producer_id) {
                return false;
            }
        }
        batch.control.is_none()
    }
}

/// The transactions a log leaves open, as Kafka's producer state tracks them: a transactional data batch
/// opens its producer's transaction (when none is open) at its base offset, and a transaction marker (a
/// control batch with the transactional bit, commit or abort) closes it. Show it a log's batches in offset
/// order; [`OpenTransactions::first_open_offset`] is then the log's last stable offset when some
/// transaction is open (Kafka's LSO: a `read_committed` consumer reads nothing at or past it, and no segment
/// reaching it is copied). Only the batch header is read; a legacy batch is never transactional.
#[derive(Clone, Debug, Default)]
pub struct OpenTransactions {
    /// The first offset of each producer's open transaction, by producer id.
    open: std::collections::HashMap<i64, i64>,
}

impl OpenTransactions {
    /// Takes the next batch of the log into account.
    pub fn observe(&mut self, batch: &crate::format::batch::Batch<'_>) {
        if batch.magic() < 2 || batch.attributes() & super::TRANSACTIONAL_BIT == 0 {
            return;
        }
        if super::is_control(batch) {
            self.open.remove(&batch.producer_id());
        } else {
            self.open.entry(batch.producer_id()).or_insert_with(|| batch.base_offset());
        }
    }

    /// The first offset of the earliest transaction still open, if any.
    pub fn first_open_offset(&self) -> Option<i64> {
        self.open.values().copied().min()
    }
}

/// The offset after the last whole batch of a fetched range (`bytes`, whose first byte is at `position` in
/// its segment), `None` when it holds no whole batch: the upper bound of the fetch when collecting its
/// aborted transactions.
pub fn fetch_upper_bound(bytes: &[u8], position: u64) -> Result<Option<i64>> {
    let mut it = BatchIter::new(bytes, position, false);
    let mut last = None;
    while let Some(b) = it.next_complete()? {
        last = Some(b.last_offset().saturating_add(1));
    }
    Ok(last)
}

/// What a consumer is given of one fetched range.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumed {
    /// The records, in offset order.
    pub records: Vec<Record>,
    /// The offset to fetch next: after the last record given when `max_records` stopped it, else after the
    /// last whole batch.
    pub next_offset: i64,
    /// Bytes of the whole batches gone through.
    pub batch_bytes: usize,
    /// Whether it stopped at `below` (the last stable offset).
    pub reached_bound: bool,
}

/// Where a consumer's fetch of a range starts and what bounds it.
#[derive(Clone, Copy, Debug)]
pub struct ConsumeBounds {
    /// The first offset wanted: records before it (earlier in the first batch) are not given.
    pub from: i64,
    /// The most records to give.
    pub max_records: usize,
    /// No record at or past this offset is given (a `read_committed` fetch's last stable offset).
    pub below: Option<i64>,
}

/// The records a consumer is given of a fetched range (`bytes`, whose first byte is at `position` in its
/// segment): each whole batch decoded within `limits`, admitted or not by `filter`, in offset order. A
/// range without a whole batch is corrupt: a fetch always returns at least its first batch.
pub fn consume(
    bytes: &[u8],
    position: u64,
    bounds: ConsumeBounds,
    filter: &mut TxnFilter,
    limits: &DecodeLimits,
) -> Result<Consumed> {
    let mut it = BatchIter::new(bytes, position, false);
    let mut out = Consumed { next_offset: bounds.from, ..Consumed::default() };
    let mut whole = false;
    while out.records.len() < bounds.max_records
        && let Some(batch) = it.next_complete()?
    {
        whole = true;
        out.batch_bytes += batch.size();
        let decoded = decode_batch(&batch, limits)?;
        let last = decoded.last_offset;
        if filter.admit(&decoded) {
            for r in decoded.records {
                if r.offset < bounds.from {
                    continue;
                }
                if bounds.below.is_some_and(|b| r.offset >= b) {
                    out.reached_bound = true;
                    return Ok(out);
                }
                out.next_offset = r.offset.saturating_add(1);
                out.records.push(r);
                if out.records.len() >= bounds.max_records {
                    return Ok(out);
                }
            }
        }
        out.next_offset = out.next_offset.max(last.saturating_add(1));
        if let Some(below) = bounds.below.filter(|&b| out.next_offset >= b) {
            out.reached_bound = true;
            out.next_offset = below;
            return Ok(out);
        }
    }
    if !whole && bounds.max_records > 0 {
        return Err(Error::corrupt(format!(
            "the {} bytes fetched at position {position} (offset {}) hold no whole batch",
            bytes.len(),
            bounds.from
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i64, first: i64, last: i64, lso: i64) -> Vec<u8> {
        let mut b = 0i16.to_be_bytes().to_vec();
        for v in [pid, first, last, lso] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b
    }

    fn batch(base: i64, last: i64, pid: i64, transactional: bool, control: Option<ControlType>) -> DecodedBatch {
        DecodedBatch {
            base_offset: base,
            last_offset: last,
            magic: 2,
            producer_id: pid,
            producer_epoch: 0,
            transactional,
            control,
            records: vec![],
        }
    }

    #[test]
    fn isolation_levels_parse_by_kafka_name() {
        for (text, want) in [
            ("read_committed", Some(IsolationLevel::ReadCommitted)),
            ("READ_UNCOMMITTED", Some(IsolationLevel::ReadUncommitted)),
            ("committed", None),
            ("", None),
        ] {
            let got = text.parse::<IsolationLevel>();
            assert_eq!(got.as_ref().ok().copied(), want, "{text}");
            if let Err(e) = got {
                assert!(e.message().contains(&format!("'{text}'")), "{e}");
            }
        }
        assert_eq!(IsolationLevel::default(), IsolationLevel::ReadUncommitted);
    }

    #[test]
    fn txn_index_entries_read_and_damage_is_named() {
        let mut bytes = entry(7, 10, 20, 21);
        bytes.extend(entry(8, 15, 30, 31));
        let got = read_txn_index("00000000000000000000.txnindex", &bytes).unwrap();
        assert_eq!(
            got,
            vec![
                AbortedTxn { producer_id: 7, first_offset: 10, last_offset: 20, last_stable_offset: 21 },
                AbortedTxn { producer_id: 8, first_offset: 15, last_offset: 30, last_stable_offset: 31 },
            ]
        );
        assert!(read_txn_index("x.txnindex", &[]).unwrap().is_empty());
        let e = read_txn_index("x.txnindex", &bytes[..40]).unwrap_err();
        assert!(e.message().contains("x.txnindex") && e.message().contains("40 bytes"), "{e}");
        bytes[34..36].copy_from_slice(&1i16.to_be_bytes());
        let e = read_txn_index("x.txnindex", &bytes).unwrap_err();
        assert!(e.message().contains("byte 34") && e.message().contains("version 1"), "{e}");
    }

    /// The table of Kafka's `TransactionIndexTest.testCollectAbortedTransactions` (its entries, fetch ranges
    /// and expected answers), so the rule is Kafka's and not only ours.
    #[test]
    fn aborted_transactions_collected_as_kafka_does() {
        let t = |pid, first, last, lso| AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        };
        let entries = [t(0, 0, 10, 11), t(1, 5, 15, 13), t(2, 18, 35, 25), t(3, 32, 50, 40)];
        let cases: &[(i64, i64, &[usize], bool)] = &[
            (0, 100, &[0, 1, 2, 3], false),
            (0, 32, &[0, 1, 2], true),
            (0, 35, &[0, 1, 2, 3], true),
            (10, 35, &[0, 1, 2, 3], true),
            (11, 35, &[1, 2, 3], true),
            (20, 41, &[2, 3], false),
        ];
        for &(from, to, want, complete) in cases {
            let got = collect_aborted(&entries, from, to);
            let want: Vec<_> = want.iter().map(|&i| entries[i]).collect();
            assert_eq!((got.aborted, got.complete), (want, complete), "fetch {from}..{to}");
        }
    }

    #[test]
    fn read_committed_skips_aborted_batches_until_their_marker() {
        let aborted = vec![AbortedTxn { producer_id: 1, first_offset: 10, last_offset: 14, last_stable_offset: 15 }];
        let log = [
            (batch(5, 9, 1, true, None), true),     // before the aborted txn started
            (batch(10, 11, 1, true, None), false),  // aborted
            (batch(12, 12, 2, true, None), true),   // another producer
            (batch(13, 13, -1, false, None), true), // not transactional
            (batch(14, 14, 1, true, Some(ControlType::Abort)), false), // the marker: never a record
            (batch(15, 16, 1, true, None), true),   // a new transaction
            (batch(17, 17, 1, true, Some(ControlType::Commit)), false),
        ];
        let mut committed = TxnFilter::new(IsolationLevel::ReadCommitted, aborted.clone());
        let mut uncommitted = TxnFilter::new(IsolationLevel::ReadUncommitted, aborted);
        for (b, want) in &log {
            assert_eq!(committed.admit(b), *want, "read_committed at {}", b.base_offset);
            assert_eq!(uncommitted.admit(b), b.control.is_none(), "read_uncommitted at {}", b.base_offset);
        }
    }
}
