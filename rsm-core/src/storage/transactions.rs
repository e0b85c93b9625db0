//! The aborted transactions a `read_committed` fetch of remote data must know: one segment's transaction
//! index, fetched through the storage manager (and so its index cache) and searched by Kafka's rule. The
//! engine and the C ABI walk the segments after the one read with it until the search is complete.

use crate::error::{ErrorKind, Result};
use crate::format::records::isolation::{AbortedSearch, collect_aborted, read_txn_index};
use crate::model::{IndexType, RemoteLogSegmentMetadata};
use crate::rsm::RemoteStorageManager;

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
