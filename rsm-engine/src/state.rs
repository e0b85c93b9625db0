//! The engine's state: what the engine, its tasks and its readers share ([`Shared`]), and each partition it
//! serves ([`PartitionState`]: its directory, role, run lock and totals). The manager creates and changes
//! it; the copy and expiration tasks read it.

use crate::config::EngineConfig;
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::dir_lock::DirLock;
use rsm_core::model::TopicIdPartition;
use rsm_core::storage::TieredStorage;
use rsm_metadata::RemoteLogMetadataManager;
use rsm_metadata::failed_deletions::FailedDeletions;
use rsm_tiering::settings::TopicPolicy;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// What this host is for a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The leader: it copies, applies remote retention and writes the metadata.
    Leader {
        /// The leader epoch.
        epoch: i32,
    },
    /// A follower: it reads the metadata a leader wrote, deletes local segments once they are known to be
    /// remote, and builds its index files from the remote copies.
    Follower,
}

/// Told of each segment a copy task finishes: its partition and metadata (for progress displays).
pub type CopyListener = Arc<dyn Fn(&TopicIdPartition, &RemoteLogSegmentMetadata) + Send + Sync>;

/// What the engine, its tasks and its readers share.
pub(crate) struct Shared {
    pub(crate) config: EngineConfig,
    /// Reads only (offsets, records, lists): no partition is locked, and no run, expiration or deletion
    /// is started.
    pub(crate) read_only: bool,
    pub(crate) on_copied: Mutex<Option<CopyListener>>,
    pub(crate) storage: Arc<TieredStorage>,
    pub(crate) metadata: Arc<dyn RemoteLogMetadataManager>,
    pub(crate) failed: Arc<dyn FailedDeletions>,
}

/// One partition the engine serves.
pub(crate) struct PartitionState {
    pub(crate) tp: TopicIdPartition,
    pub(crate) policy: TopicPolicy,
    pub(crate) dir: Mutex<PathBuf>,
    /// This engine's exclusive lock on the directory: one writer of a partition at a time (none for a
    /// read-only engine; released at close).
    pub(crate) dir_lock: Mutex<Option<DirLock>>,
    pub(crate) role: Mutex<Role>,
    /// One run of the partition's work at a time (the scheduler's, `run_partition`'s, a move's).
    pub(crate) run: tokio::sync::Mutex<()>,
    pub(crate) totals: Mutex<Totals>,
}

impl PartitionState {
    pub(crate) fn role(&self) -> Role {
        *lock(&self.role)
    }

    pub(crate) fn dir(&self) -> PathBuf {
        lock(&self.dir).clone()
    }
}

/// What the runs of a partition did since it was added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Runs, successful or not.
    pub runs: u64,
    /// Runs that failed.
    pub failed_runs: u64,
    /// Segments copied.
    pub copied: u64,
    /// Bytes of the segments copied.
    pub copied_bytes: u64,
    /// Remote segments deleted.
    pub remote_deleted: u64,
    /// Local segments deleted.
    pub local_deleted: u64,
    /// The last run's error, if it failed.
    pub last_error: Option<String>,
}

/// Locks `m`, taking the value of a lock a panic poisoned as it is.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
