//! Segments whose deletion from the store failed (SR-35), kept durably so that an operator or a later
//! run can list them and retry: the default topic name is [`FAILED_DELETIONS_TOPIC`]; one host keeps
//! them in a local log of the same records.
//!
//! The local log holds Kafka's record values: a failed deletion is the segment's
//! `RemoteLogSegmentMetadataRecord` (all a retry needs to delete it), a drained one is a
//! `RemoteLogSegmentMetadataUpdateRecord` to `DELETE_SEGMENT_FINISHED` for the same segment.

use crate::events::{MetadataEvent, RemoteLogSegmentMetadataUpdate};
use crate::log_file::RecordLog;
use crate::records;
use async_trait::async_trait;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

pub use crate::records::FAILED_DELETIONS_TOPIC;

/// A durable list of segments whose deletion failed.
#[async_trait]
pub trait FailedDeletions: Send + Sync {
    /// Records that deleting `metadata`'s segment failed; recording it again is harmless.
    async fn record(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()>;
    /// The segments recorded and not drained, oldest first.
    async fn list(&self) -> Result<Vec<RemoteLogSegmentMetadata>>;
    /// Removes a segment from the list (its deletion succeeded since); draining an unknown one is harmless.
    async fn drain(&self, id: &RemoteLogSegmentId) -> Result<()>;
}

/// [`FailedDeletions`] in a local log (one host).
pub struct LocalFailedDeletions {
    inner: Mutex<(RecordLog, BTreeMap<i64, RemoteLogSegmentMetadata>)>,
}

impl LocalFailedDeletions {
    /// Opens (creating) the log in `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        Self::load(RecordLog::open(dir, 0, true)?, dir)
    }

    /// Opens the log in `dir` to list it only: nothing is created or changed (a missing log is empty), and
    /// recording or draining is refused.
    pub fn open_read_only(dir: &Path) -> Result<Self> {
        Self::load(RecordLog::open_read_only(dir, 0)?, dir)
    }

    fn load(log: RecordLog, dir: &Path) -> Result<Self> {
        let mut pending = BTreeMap::new();
        log.read_from(0, |offset, value| {
            match records::decode(value)
                .map_err(|e| Error::corrupt(format!("failed-deletions log {}: record {offset}: {e}", dir.display())))?
            {
                MetadataEvent::Segment(m) => {
                    pending.retain(|_, old: &mut RemoteLogSegmentMetadata| {
                        old.remote_log_segment_id != m.remote_log_segment_id
                    });
                    pending.insert(offset, m);
                }
                MetadataEvent::SegmentUpdate(u) => {
                    pending.retain(|_, old| old.remote_log_segment_id != u.remote_log_segment_id);
                }
                other => {
                    return Err(Error::corrupt(format!(
                        "failed-deletions log {}: record {offset} is not a segment record: {other:?}",
                        dir.display()
                    )));
                }
            }
            Ok(())
        })?;
        Ok(LocalFailedDeletions { inner: Mutex::new((log, pending)) })
    }
}

#[async_trait]
impl FailedDeletions for LocalFailedDeletions {
    async fn record(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (log, pending) = &mut *inner;
        let offset = log.append(&[&records::encode(&MetadataEvent::Segment(metadata.clone()))])?;
        pending.retain(|_, old| old.remote_log_segment_id != metadata.remote_log_segment_id);
        pending.insert(offset, metadata.clone());
        Ok(())
    }

    async fn list(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        Ok(self.inner.lock().unwrap_or_else(|e| e.into_inner()).1.values().cloned().collect())
    }

    async fn drain(&self, id: &RemoteLogSegmentId) -> Result<()> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (log, pending) = &mut *inner;
        let Some(m) = pending.values().find(|m| &m.remote_log_segment_id == id).cloned() else {
            return Ok(());
        };
        let done = RemoteLogSegmentMetadataUpdate::of(
            &m,
            RemoteLogSegmentState::DeleteSegmentFinished,
            m.event_timestamp_ms,
            m.broker_id,
        );
        log.append(&[&records::encode(&MetadataEvent::SegmentUpdate(done))])?;
        pending.retain(|_, old| &old.remote_log_segment_id != id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::model::{TopicIdPartition, TopicPartition, Uuid};

    fn segment(n: i64) -> RemoteLogSegmentMetadata {
        let tp = TopicIdPartition::new(Uuid::new(1, 1), TopicPartition::new("t", 0));
        let mut m = RemoteLogSegmentMetadata::new(
            RemoteLogSegmentId::new(tp, Uuid::random()),
            n * 10,
            n * 10 + 9,
            0,
            1,
            0,
            10,
            [(0, n * 10)].into(),
        )
        .unwrap();
        m.state = RemoteLogSegmentState::DeleteSegmentStarted;
        m
    }

    #[tokio::test]
    async fn recorded_failures_survive_a_restart_until_drained() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (segment(0), segment(1), segment(2));
        let log = LocalFailedDeletions::open(dir.path()).unwrap();
        for m in [&a, &b, &c, &a] {
            log.record(m).await.unwrap();
        }
        log.drain(&b.remote_log_segment_id).await.unwrap();
        log.drain(&segment(9).remote_log_segment_id).await.unwrap(); // unknown: harmless
        let ids =
            |v: Vec<RemoteLogSegmentMetadata>| v.into_iter().map(|m| m.remote_log_segment_id.id).collect::<Vec<_>>();
        assert_eq!(ids(log.list().await.unwrap()), vec![c.remote_log_segment_id.id, a.remote_log_segment_id.id]);
        drop(log);
        let log = LocalFailedDeletions::open(dir.path()).unwrap();
        let listed = log.list().await.unwrap();
        assert_eq!(ids(listed.clone()), vec![c.remote_log_segment_id.id, a.remote_log_segment_id.id]);
        assert_eq!(listed[1], a, "the whole metadata comes back, for the retry");
    }
}
