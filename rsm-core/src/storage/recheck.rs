//! A failed copy's objects, looked for again later (`copy.cleanup.recheck.ms`).
//!
//! A copy that fails deletes what it wrote. But a write may still be in flight then: a manifest PUT the
//! client gave up on that the store applies later, or a cleanup that timed out itself. Its objects would
//! then make a segment that looks complete (a manifest, its log and indexes) which the host holds only as
//! copy-started, or not at all. So, once the store's own timeouts have surely ended every request of the
//! attempt, the segment's keys are listed once more and whatever is there is deleted, with a WARN naming
//! it. Segment ids are new for each copy attempt (Kafka's `RemoteLogSegmentId.generateNew`, the engine's
//! too); a host that copies again under the same id cancels the pending look, so it never deletes a later
//! copy's objects.

use crate::backend::StorageBackend;
use crate::model::Uuid;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The pending second looks, by segment id.
#[derive(Debug, Default)]
pub(crate) struct CleanupRechecks {
    pending: Mutex<HashMap<Uuid, JoinHandle<()>>>,
}

impl CleanupRechecks {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, JoinHandle<()>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lists the keys under `stem` (the segment's objects: every key of it starts so) `after` from now,
    /// and deletes what is found; `segment` names it in the log. Needs a tokio runtime (without one, a
    /// one-shot tool's, nothing is scheduled: `rsm sweep` finds what is left).
    pub(crate) fn schedule(
        self: &Arc<Self>,
        backend: Arc<dyn StorageBackend>,
        id: Uuid,
        segment: String,
        stem: String,
        after: Duration,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let rechecks: Weak<Self> = Arc::downgrade(self);
        let task = runtime.spawn(async move {
            tokio::time::sleep(after).await;
            look_again(backend.as_ref(), &segment, &stem).await;
            if let Some(r) = rechecks.upgrade() {
                r.pending().remove(&id);
            }
        });
        if let Some(earlier) = self.pending().insert(id, task) {
            earlier.abort();
        }
    }

    /// Cancels the pending look at segment `id`, if any: a new copy under the same id is under way.
    pub(crate) fn cancel(&self, id: &Uuid) {
        if let Some(task) = self.pending().remove(id) {
            task.abort();
        }
    }

    /// Cancels every pending look; the tasks, to wait for their end (a task sleeping in the runtime at exit
    /// holds the store's memory: a leak checker's "possibly lost").
    pub(crate) fn cancel_all(&self) -> Vec<JoinHandle<()>> {
        let tasks: Vec<JoinHandle<()>> = self.pending().drain().map(|(_, t)| t).collect();
        tasks.iter().for_each(JoinHandle::abort);
        tasks
    }

    /// How many looks are pending.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pending().len()
    }
}

async fn look_again(backend: &dyn StorageBackend, segment: &str, stem: &str) {
    let found = match backend.list(stem).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(segment, error = %e.full_message(),
                "could not look again for the objects of a failed copy; `rsm sweep` and `rsm audit` find what is left");
            return;
        }
    };
    if found.is_empty() {
        tracing::debug!(segment, "a failed copy left nothing behind");
        return;
    }
    let keys: Vec<String> = found.into_iter().map(|o| o.key).collect();
    match backend.delete_many(&keys).await {
        Ok(()) => tracing::warn!(segment, keys = ?keys,
            "objects of a failed copy were in the store after it gave up (a write applied late, or a cleanup that failed); deleted"),
        Err(e) => tracing::warn!(segment, keys = ?keys, error = %e.full_message(),
            "objects of a failed copy are in the store after it gave up, and deleting them failed; `rsm audit` lists them"),
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::layers::LayeredBackend;
    use crate::backend::{MemoryBackend, StorageBackend};
    use crate::error::Result;
    use crate::rsm::RemoteStorageManager;
    use crate::testkit::rsm_contract::Fixture;
    use async_trait::async_trait;
    use bytes::Bytes;
    use std::sync::Arc;
    use std::time::Duration;

    /// A store whose manifest PUTs fail at once for the client while the store applies them `late` after
    /// (a request the client gave up on that the server had received).
    #[derive(Debug)]
    struct LateManifests {
        inner: Arc<dyn StorageBackend>,
        late: Duration,
    }

    #[async_trait]
    impl LayeredBackend for LateManifests {
        fn inner(&self) -> &Arc<dyn StorageBackend> {
            &self.inner
        }

        async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
            if !key.ends_with(".manifest") {
                return self.inner.put_bytes(key, bytes).await;
            }
            let (inner, owned, late) = (self.inner.clone(), key.to_string(), self.late);
            tokio::spawn(async move {
                tokio::time::sleep(late).await;
                inner.put_bytes(&owned, bytes).await.unwrap();
            });
            Err(crate::error::Error::storage(format!("PUT {key} timed out"), "timed out").transient())
        }
    }

    /// Copies segment 0 over a store that applies its manifest 100 ms after the copy failed; returns the
    /// objects of the segment 400 ms after the failure, and the checks pending then.
    async fn left_after_a_late_manifest(recheck_ms: &str, copy_again: bool) -> (Vec<String>, usize) {
        let late: Arc<dyn StorageBackend> =
            Arc::new(LateManifests { inner: Arc::new(MemoryBackend::new()), late: Duration::from_millis(100) });
        let f = Fixture::with_settings(late, "late-manifest", |_| {
            vec![("copy.cleanup.recheck.ms".to_string(), recheck_ms.to_string())]
        });
        let (_, md, data) = f.segment(0);
        let e = f.rsm.copy_log_segment_data(&md, &data).await.unwrap_err();
        assert!(e.is_transient(), "{e}");
        if copy_again {
            // The host tries again under the same id (Kafka never does: a new id each attempt); the
            // attempt cancels the second look, and its own manifest lands late too.
            let _ = f.rsm.copy_log_segment_data(&md, &data).await;
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        let prefix = f.rsm.keys(&md).shared_prefix().to_string();
        let keys = f.rsm.backend().list(&prefix).await.unwrap().into_iter().map(|o| o.key).collect();
        (keys, f.rsm.rechecks.len())
    }

    #[tokio::test]
    async fn a_manifest_applied_after_the_copy_failed_is_deleted_by_the_second_look() {
        // Without the second look, the late manifest stands beside the log and indexes the cleanup
        // deleted: a segment whose commit point exists.
        let (left, _) = left_after_a_late_manifest("0", false).await;
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].ends_with(".manifest"), "{left:?}");

        // With it (200 ms here), nothing is left, and nothing is pending.
        let (left, pending) = left_after_a_late_manifest("200", false).await;
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(pending, 0);

        // A copy under the same id meanwhile cancels the earlier attempt's look; its own failure schedules
        // one, which then deletes its late manifest.
        let (left, pending) = left_after_a_late_manifest("200", true).await;
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(pending, 0);
    }
}
