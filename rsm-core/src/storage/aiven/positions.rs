//! Byte positions of offsets and timestamps in a segment Aiven's plugin stored: from its own offset and time
//! indexes to the nearest batch before, then batch by batch (each checked as a fetch checks it) to the first
//! that reaches the offset or timestamp, as Kafka looks them up in a local segment.

use super::AivenSegment;
use crate::error::{Error, Result};
use crate::format::batch::{Batch, BatchIter};
use crate::format::index::{read_offset_index, read_time_index};
use crate::model::IndexType;
use bytes::BytesMut;
use futures::StreamExt;
use std::sync::Arc;

impl super::super::TieredStorage {
    /// The position of the first batch of Aiven segment `s` whose last offset is at least `offset`.
    pub(in crate::storage) async fn aiven_position_of_offset(&self, s: Arc<AivenSegment>, offset: i64) -> Result<u64> {
        let from = self.aiven_index_position(&s, offset).await?;
        self.aiven_first_batch(s.clone(), from, |b| b.last_offset() >= offset)
            .await?
            .ok_or_else(|| Error::corrupt(format!("Aiven segment {}: no batch reaches offset {offset}", s.id)))
    }

    /// The position of the first batch of Aiven segment `s` with a timestamp at or after `timestamp`, `None`
    /// when none is that late.
    pub(in crate::storage) async fn aiven_position_of_timestamp(
        &self,
        s: Arc<AivenSegment>,
        timestamp: i64,
    ) -> Result<Option<u64>> {
        let name = format!("of Aiven segment {}", s.id);
        let times = read_time_index(&name, s.start_offset, &self.aiven_index(&s, IndexType::Timestamp).await?)?;
        // Every batch before the last entry earlier than `timestamp` is earlier too.
        let from = match times.iter().rev().find(|e| e.timestamp < timestamp) {
            Some(e) => self.aiven_index_position(&s, e.offset).await?,
            None => 0,
        };
        self.aiven_first_batch(s, from, |b| b.max_timestamp() >= timestamp).await
    }

    /// The position the offset index gives for `offset`: of its last entry at or below it, or 0.
    async fn aiven_index_position(&self, s: &AivenSegment, offset: i64) -> Result<u64> {
        let name = format!("of Aiven segment {}", s.id);
        let bytes = self.aiven_index(s, IndexType::Offset).await?;
        let entries = read_offset_index(&name, s.start_offset, &bytes, s.log_length())?;
        Ok(entries.iter().rev().find(|e| e.offset <= offset).map_or(0, |e| e.position))
    }

    /// Walks the batches of `s` from position `from` (a batch) to the first `pred` accepts.
    async fn aiven_first_batch(
        &self,
        s: Arc<AivenSegment>,
        from: u64,
        pred: impl Fn(&Batch<'_>) -> bool,
    ) -> Result<Option<u64>> {
        if from >= s.log_length() {
            return Ok(None);
        }
        let mut stream = self.aiven_fetch(s, from as i64, None)?;
        let (mut buf, mut at) = (BytesMut::new(), from);
        while let Some(bytes) = stream.next().await {
            buf.extend_from_slice(&bytes?);
            let mut batches = BatchIter::new(&buf, at, false);
            while let Some(b) = batches.next_complete()? {
                if pred(&b) {
                    return Ok(Some(b.position()));
                }
            }
            let used = batches.consumed();
            at += used as u64;
            let _ = buf.split_to(used);
        }
        Ok(None)
    }
}
