//! A consumer's read of a segment by position: up to a byte budget, but always the whole first batch
//! (Kafka's `minOneMessage`), so a fetch of a batch larger than the budget still makes progress. The
//! engine's reader pool and the facade's record fetch both read this way.

use super::TieredStorage;
use crate::error::{Error, Result};
use crate::format::batch::{MAGIC_OFFSET, batch_size_at};
use crate::model::RemoteLogSegmentMetadata;
use crate::rsm::RemoteStorageManager;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;

impl TieredStorage {
    /// Up to `max_bytes` of `segment` from `position` (a batch boundary), widened to the whole batch there:
    /// whole batches but maybe the last, which may be cut at `max_bytes`. Every byte was checked by the
    /// fetch. A batch running past the segment's end is corrupt, naming the segment and position.
    pub async fn read_batches_from(
        &self,
        segment: &RemoteLogSegmentMetadata,
        position: u64,
        max_bytes: u32,
    ) -> Result<Bytes> {
        let mut bytes = self.read_range(segment, position, u64::from(max_bytes)).await?;
        let size = match batch_size_at(&bytes, position)? {
            Some(size) => size,
            None => {
                let header = self.read_range(segment, position, MAGIC_OFFSET as u64 + 1).await?;
                batch_size_at(&header, position)?.ok_or_else(|| {
                    Error::corrupt(format!(
                        "segment {}: {} bytes at position {position} are too short for a batch header",
                        segment.remote_log_segment_id,
                        header.len()
                    ))
                })?
            }
        };
        if size > bytes.len() {
            bytes = self.read_range(segment, position, size as u64).await?;
            if bytes.len() < size {
                return Err(Error::corrupt(format!(
                    "segment {}: the batch at position {position} has {size} bytes but the segment ends after {}",
                    segment.remote_log_segment_id,
                    bytes.len()
                )));
            }
        }
        Ok(bytes)
    }

    /// `len` bytes (at least 1) of the segment from `position`, fewer at its end.
    async fn read_range(&self, segment: &RemoteLogSegmentMetadata, position: u64, len: u64) -> Result<Bytes> {
        let start = i64::try_from(position)
            .map_err(|_| Error::invalid(format!("position {position} is past the largest segment position")))?;
        let end = position.saturating_add(len.max(1) - 1).min(i64::MAX as u64) as i64;
        let mut stream = self.fetch_log_segment(segment, start, Some(end)).await?;
        let mut out = BytesMut::with_capacity(len.min(16 << 20) as usize);
        while let Some(b) = stream.next().await {
            out.extend_from_slice(&b?);
        }
        Ok(out.freeze())
    }
}
