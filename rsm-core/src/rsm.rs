//! Kafka's `RemoteStorageManager` contract (KIP-405, SR-13), in Rust.
//!
//! `configure` is the implementation's constructor (it takes the prefix-stripped `rsm.config.` map) and
//! `close` is `Drop`. The JNI and C faces call these through the blocking facade.

use crate::backend::ByteStream;
use crate::error::Result;
use crate::model::{CustomMetadata, IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use async_trait::async_trait;
use bytes::Bytes;

/// The five operations a broker calls on its remote storage plugin.
#[async_trait]
pub trait RemoteStorageManager: Send + Sync {
    /// Copies a closed segment and its indexes. Every attempt comes with a new segment id; data left by an
    /// earlier attempt with the same id is overwritten. A failed copy leaves no visible segment. Returns
    /// custom metadata to store with the segment, if any.
    async fn copy_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<CustomMetadata>>;

    /// The segment's bytes from `start_position` to `end_position`, both inclusive (to the end of the
    /// segment when `end_position` is `None` or past it), as a stream that never holds the whole segment.
    /// A missing segment is not found; a start outside the segment is an invalid argument.
    async fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start_position: i64,
        end_position: Option<i64>,
    ) -> Result<ByteStream>;

    /// The exact bytes of one of the segment's original index files. A segment without a transaction
    /// index answers not found for it.
    async fn fetch_index(&self, metadata: &RemoteLogSegmentMetadata, index_type: IndexType) -> Result<Bytes>;

    /// Deletes the segment's data; deleting what is already gone succeeds.
    async fn delete_log_segment_data(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()>;
}
