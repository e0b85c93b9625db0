//! Records, not batches (SR-19, SR-23): a consumer's fetch of remote data for a host without a JVM broker.
//!
//! [`RemoteLogManager::read_records`] reads through the reader pool ([`RemoteLogManager::read`]) from an
//! offset, decodes every batch (every codec, legacy v0/v1 wrappers opened, within [`DecodeLimits`]) and
//! gives the records a consumer at the request's isolation level would get, strictly in offset order:
//! - `read_uncommitted`: every data record;
//! - `read_committed`: the records of aborted transactions dropped, by the aborted transactions of the
//!   segments' transaction indexes (the segment read, then the later remote segments, then the partition
//!   directory's local segments past the remote log, until the search is complete: Kafka's rule), and no
//!   record at or past the last stable offset when the host names one.
//!
//! Control batches are never records. The answer says where to continue, so a host pages through a
//! partition with repeated calls.

use crate::manager::RemoteLogManager;
use crate::reader::find_segment;
use rsm_core::format::records::isolation::{
    AbortedTxn, ConsumeBounds, IsolationLevel, collect_aborted, consume, read_txn_index,
};
use rsm_core::format::records::{DecodeLimits, Record};
use rsm_core::storage::transactions::{aborted_from, txn_filter};
use rsm_core::{Error, ErrorKind, RemoteLogSegmentMetadata, Result, TopicIdPartition};
use rsm_metadata::RemoteLogMetadataManager;
use std::time::Duration;

/// A consumer's fetch of records from remote storage.
#[derive(Clone, Debug)]
pub struct RecordsRequest {
    /// The first offset wanted.
    pub offset: i64,
    /// `read_uncommitted` (Kafka's default) or `read_committed`.
    pub isolation: IsolationLevel,
    /// The most records to return.
    pub max_records: usize,
    /// The most batch bytes to read (`max.partition.fetch.bytes`); the whole first batch is always read.
    pub max_bytes: u32,
    /// The most bytes one batch may inflate to.
    pub limits: DecodeLimits,
    /// At `read_committed`, no record at or past this offset is returned (the host's last stable offset);
    /// without one, every copied record counts as stable, as the engine copies only closed segments.
    pub last_stable_offset: Option<i64>,
    /// How long each remote read may take, retries included (the consumer's fetch timeout).
    pub timeout: Duration,
}

impl Default for RecordsRequest {
    /// From offset 0, `read_uncommitted`, 500 records (Kafka's `max.poll.records`), 1 MiB
    /// (`max.partition.fetch.bytes`), default limits, no last stable offset, 30 s per read.
    fn default() -> Self {
        RecordsRequest {
            offset: 0,
            isolation: IsolationLevel::ReadUncommitted,
            max_records: 500,
            max_bytes: 1 << 20,
            limits: DecodeLimits::default(),
            last_stable_offset: None,
            timeout: Duration::from_secs(30),
        }
    }
}

/// What a fetch of records returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordsRead {
    /// The records, strictly in offset order.
    pub records: Vec<Record>,
    /// The offset to ask for next.
    pub next_offset: i64,
    /// Whether the fetch stopped at the end of the remote log or at the last stable offset: nothing more
    /// is there to read now.
    pub at_end: bool,
}

impl RemoteLogManager {
    /// Reads records of `tp` from remote storage as a consumer at `req.isolation` would get them; see the
    /// [module](self) docs. An offset outside the remote log is not found; a batch past the decode limits or
    /// damaged is an error naming it.
    pub async fn read_records(&self, tp: &TopicIdPartition, req: &RecordsRequest) -> Result<RecordsRead> {
        let committed = req.isolation == IsolationLevel::ReadCommitted;
        let below = req.last_stable_offset.filter(|_| committed);
        let mut out = RecordsRead { next_offset: req.offset, ..RecordsRead::default() };
        let mut bytes_read = 0usize;
        let mut first = true;
        while out.records.len() < req.max_records && (first || bytes_read < req.max_bytes as usize) {
            if below.is_some_and(|b| out.next_offset >= b) {
                out.at_end = true;
                break;
            }
            let left = (req.max_bytes as usize).saturating_sub(bytes_read).max(1) as u32;
            let deadline = tokio::time::Instant::now() + req.timeout;
            let read = match self.read(tp, out.next_offset, left, deadline).await {
                Ok(r) => r,
                // Past the remote log's end after the first read: the records end there.
                Err(e) if !first && e.kind() == ErrorKind::NotFound => {
                    out.at_end = true;
                    break;
                }
                Err(e) => return Err(e),
            };
            first = false;
            let position = read.start_position;
            let aborted = |upper| self.aborted_transactions(tp, &read.segment, out.next_offset, upper);
            let mut filter = txn_filter(req.isolation, &read.bytes, position, aborted).await?;
            let bounds =
                ConsumeBounds { from: out.next_offset, max_records: req.max_records - out.records.len(), below };
            let got = consume(&read.bytes, position, bounds, &mut filter, &req.limits)
                .map_err(|e| e.context(format!("segment {} of {tp}", read.segment.remote_log_segment_id)))?;
            bytes_read += got.batch_bytes;
            out.records.extend(got.records);
            out.next_offset = got.next_offset;
            if got.reached_bound {
                out.at_end = true;
                break;
            }
        }
        Ok(out)
    }

    /// The aborted transactions that matter to a fetch of `[fetch_offset, upper_bound)` read from
    /// `segment`: from its transaction index, then the later remote segments', then the local segments'
    /// past the remote log, until an entry says no later one can matter.
    async fn aborted_transactions(
        &self,
        tp: &TopicIdPartition,
        segment: &RemoteLogSegmentMetadata,
        fetch_offset: i64,
        upper_bound: i64,
    ) -> Result<Vec<AbortedTxn>> {
        let metadata = self.metadata().as_ref();
        let next = |s: &RemoteLogSegmentMetadata| later_segment(metadata, tp, s.end_offset);
        let walk = aborted_from(self.storage().as_ref(), segment, next, fetch_offset, upper_bound).await?;
        let mut aborted = walk.aborted;
        if walk.complete {
            return Ok(aborted);
        }
        // Aborts whose markers are not copied yet are in the local segments after the remote log: files
        // read off the async threads.
        let dir = self.state(tp)?.dir();
        let after = walk.last_end_offset;
        let local =
            tokio::task::spawn_blocking(move || local_aborted(&dir, after, fetch_offset, upper_bound)).await.map_err(
                |e| Error::storage(format!("reading the local transaction indexes of {tp}: the task failed"), e),
            )??;
        aborted.extend(local);
        Ok(aborted)
    }
}

/// The remote segment of `tp` after the one ending at `end_offset`, `None` past the remote log's end.
async fn later_segment(
    metadata: &dyn RemoteLogMetadataManager,
    tp: &TopicIdPartition,
    end_offset: i64,
) -> Result<Option<RemoteLogSegmentMetadata>> {
    match find_segment(metadata, tp, end_offset.saturating_add(1)).await {
        Ok(next) => Ok(Some(next)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The aborted transactions that matter to a fetch of `[fetch_offset, upper_bound)` in the `.txnindex`
/// files of the partition directory's segments whose base offset is past `after`, oldest first, until an
/// entry says no later one can matter. A directory that only names the partition has none.
fn local_aborted(dir: &std::path::Path, after: i64, fetch_offset: i64, upper_bound: i64) -> Result<Vec<AbortedTxn>> {
    let mut indexes = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::from_io(dir.display(), e))? {
        let e = e.map_err(|e| Error::from_io(dir.display(), e))?;
        let name = e.file_name();
        let base = name.to_str().and_then(|n| n.strip_suffix(".txnindex")).and_then(|b| b.parse::<i64>().ok());
        if let Some(b) = base.filter(|&b| b > after) {
            indexes.push((b, e.path()));
        }
    }
    indexes.sort();
    let mut aborted = Vec::new();
    for (_, path) in indexes {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            // Deleted by local retention since the listing: covered by remote segments.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::from_io(format_args!("reading {}", path.display()), e)),
        };
        let search = collect_aborted(&read_txn_index(&path.display().to_string(), &bytes)?, fetch_offset, upper_bound);
        aborted.extend(search.aborted);
        if search.complete {
            break;
        }
    }
    Ok(aborted)
}
