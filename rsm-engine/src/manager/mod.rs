//! The remote log manager (SR-15, SR-22): the partitions the engine serves, their roles, and one run of a
//! partition's work (copy, expiration, index files), driven by the [`Scheduler`] once started.

use crate::config::EngineConfig;
use crate::copy::{self, CopyOutcome};
use crate::expiration::{self, ExpirationOutcome};
use crate::index_files;
use crate::local_log::{self, LocalLog};
use crate::reader::ReaderPool;
use crate::scheduler::{Scheduler, SchedulerConfig};
pub use crate::state::{CopyListener, Role, Totals};
use crate::state::{PartitionState, Shared, lock};
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::dir_lock::DirLock;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentState, TopicIdPartition};
use rsm_core::storage::TieredStorage;
use rsm_metadata::RemoteLogMetadataManager;
use rsm_metadata::failed_deletions::{FailedDeletions, LocalFailedDeletions};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_tiering::settings::{TopicPolicy, TopicSettings};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod deletion;
mod offsets;

pub use deletion::DeletionEffect;
pub use offsets::Offsets;

/// What one run of a partition's work did.
#[derive(Debug, Default)]
pub struct RunReport {
    /// The copy task's part.
    pub copy: CopyOutcome,
    /// The expiration task's part.
    pub expiration: ExpirationOutcome,
    /// Segments appended to the partition's index files.
    pub indexed: usize,
}

/// What one run of a partition's work would do now ([`RemoteLogManager::plan_partition`]): nothing is
/// changed to work it out.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The segments the copy task would copy (none for a follower), and where it would stop.
    pub copy: Option<rsm_tiering::CopyPlan>,
    /// What the expiration task would delete, remotely and locally, once those copies are done.
    pub expiration: crate::expiration::ExpirationPlan,
}

impl RunPlan {
    /// The remote segments this run would both copy and delete by retention: data it has not copied in an
    /// earlier run and that no copy keeps afterwards (a first run over old records).
    pub fn copied_then_expired(&self) -> Vec<&RemoteLogSegmentMetadata> {
        let copying = |m: &RemoteLogSegmentMetadata| {
            self.copy.as_ref().is_some_and(|c| c.segments.iter().any(|s| s.base_offset == m.start_offset))
        };
        self.expiration.expired.iter().map(|(m, _)| m).filter(|m| copying(m)).collect()
    }
}

/// The seeds' remote log manager over real partition directories.
pub struct RemoteLogManager {
    shared: Arc<Shared>,
    partitions: Mutex<HashMap<TopicIdPartition, Arc<PartitionState>>>,
    scheduler: Mutex<Option<Arc<Scheduler<TopicIdPartition>>>>,
    readers: Mutex<Option<Arc<ReaderPool>>>,
}

impl RemoteLogManager {
    /// A manager over `storage` and `metadata`. It refuses to exist when the broker settings have remote
    /// storage off (SR-1): `remote.log.storage.system.enable` must be true.
    pub fn new(
        config: EngineConfig,
        storage: Arc<TieredStorage>,
        metadata: Arc<dyn RemoteLogMetadataManager>,
        failed: Arc<dyn FailedDeletions>,
    ) -> Result<Self> {
        if !config.broker.remote_storage_enabled {
            return Err(Error::config(
                rsm_tiering::settings::catalogue::REMOTE_LOG_STORAGE_SYSTEM_ENABLE.key,
                "remote storage is off on this broker: the remote log manager does not start",
            ));
        }
        Ok(RemoteLogManager {
            shared: Arc::new(Shared {
                config,
                read_only: false,
                on_copied: Mutex::new(None),
                storage,
                metadata,
                failed,
            }),
            partitions: Mutex::new(HashMap::new()),
            scheduler: Mutex::new(None),
            readers: Mutex::new(None),
        })
    }

    /// A manager whose metadata is the durable local log in `metadata_dir` (one host), with its failed
    /// deletions in `metadata_dir/failed-deletions`.
    pub fn with_local_metadata(config: EngineConfig, storage: Arc<TieredStorage>, metadata_dir: &Path) -> Result<Self> {
        let metadata = LocalMetadataManager::open(LocalMetadataConfig::new(metadata_dir))?;
        let failed = LocalFailedDeletions::open(&metadata_dir.join("failed-deletions"))?;
        Self::new(config, storage, Arc::new(metadata), Arc::new(failed))
    }

    /// A manager that only reads the durable local log in `metadata_dir` (offsets, records, failed
    /// deletions listed): nothing is created or changed there or in the partition directories, a missing
    /// directory is an error naming it, and runs, expirations and deletions are refused.
    pub fn with_local_metadata_read_only(
        config: EngineConfig,
        storage: Arc<TieredStorage>,
        metadata_dir: &Path,
    ) -> Result<Self> {
        let metadata = LocalMetadataManager::open_existing_read_only(metadata_dir)?;
        let failed = LocalFailedDeletions::open_read_only(&metadata_dir.join("failed-deletions"))?;
        Self::read_only(config, storage, Arc::new(metadata), Arc::new(failed))
    }

    /// A manager over `metadata` that only reads: no partition is locked, and runs, expirations and
    /// deletions are refused.
    pub fn read_only(
        config: EngineConfig,
        storage: Arc<TieredStorage>,
        metadata: Arc<dyn RemoteLogMetadataManager>,
        failed: Arc<dyn FailedDeletions>,
    ) -> Result<Self> {
        let mut m = Self::new(config, storage, metadata, failed)?;
        Arc::get_mut(&mut m.shared).expect("not shared yet").read_only = true;
        Ok(m)
    }

    fn refuse_if_read_only(&self, what: &str) -> Result<()> {
        match self.shared.read_only {
            true => Err(Error::invalid(format!("{what}: this engine was opened to read only"))),
            false => Ok(()),
        }
    }

    /// The failed-deletions log.
    pub fn failed_deletions(&self) -> &Arc<dyn FailedDeletions> {
        &self.shared.failed
    }

    /// Calls `listener` after each segment a copy task finishes, from the task (keep it quick).
    pub fn on_segment_copied(&self, listener: CopyListener) {
        *lock(&self.shared.on_copied) = Some(listener);
    }

    /// The engine's settings.
    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// The storage the engine copies to.
    pub fn storage(&self) -> &Arc<TieredStorage> {
        &self.shared.storage
    }

    /// The metadata manager.
    pub fn metadata(&self) -> &Arc<dyn RemoteLogMetadataManager> {
        &self.shared.metadata
    }

    /// Serves the partition in `dir` in `role`, with `topic` settings (else the engine's). A directory
    /// already served under another path (moved to another log directory, SR-28) is picked up at its new
    /// place: its remote data, metadata and index files are its own. Returns the partition.
    pub async fn add_partition(
        &self,
        dir: &Path,
        role: Role,
        topic: Option<&TopicSettings>,
    ) -> Result<TopicIdPartition> {
        // An engine opened to read only needs the directory to name the partition, nothing more: its
        // segments may be gone, and a broker may hold it (nothing is copied from it or deleted).
        let tp = match self.shared.read_only {
            true => rsm_core::format::partition::LocalPartition::identify(dir)?,
            false => {
                let tp = LocalLog::open_read_only(dir)?.partition().topic_id_partition.clone();
                local_log::refuse_if_broker_holds(dir)?;
                tp
            }
        };
        let policy = TopicPolicy::resolve(topic.unwrap_or(&self.shared.config.topic), &self.shared.config.broker)
            .map_err(|e| e.context(format!("partition {tp}")))?;
        for w in &policy.warnings {
            tracing::warn!(partition = %tp, "{w}");
        }
        if !policy.remote_storage {
            return Err(Error::config(
                rsm_tiering::settings::catalogue::REMOTE_STORAGE_ENABLE.key,
                format!("partition {tp} ({}) is not tiered", dir.display()),
            ));
        }
        let (leaders, followers) = match role {
            Role::Leader { .. } => (vec![tp.clone()], vec![]),
            Role::Follower => (vec![], vec![tp.clone()]),
        };
        self.shared.metadata.on_partition_leadership_changes(&leaders, &followers).await?;
        let existing = lock(&self.partitions).get(&tp).cloned();
        // One engine writes a partition directory at a time (a second `rsm tier` or `rsm copy` of it fails
        // at once); this engine keeps the lock it holds on a directory it already serves there.
        let held = existing.as_ref().is_some_and(|s| s.dir() == dir && lock(&s.dir_lock).is_some());
        let dir_lock = match self.shared.read_only || held {
            true => None,
            false => {
                // A directory moved (renamed) is the one this engine holds already: its old lock goes first,
                // and is taken again if the new place cannot be locked.
                let had = existing.as_ref().is_some_and(|s| lock(&s.dir_lock).take().is_some());
                let what = format!("partition directory of {tp}");
                match DirLock::exclusive(dir, &what) {
                    Ok(l) => Some(l),
                    Err(e) => {
                        if let Some(s) = existing.as_ref().filter(|_| had) {
                            *lock(&s.dir_lock) = DirLock::exclusive(&s.dir(), &what).ok();
                        }
                        return Err(e);
                    }
                }
            }
        };
        match existing {
            Some(state) => {
                let _run = state.run.lock().await;
                *lock(&state.dir) = dir.to_path_buf();
                if dir_lock.is_some() {
                    *lock(&state.dir_lock) = dir_lock;
                }
                *lock(&state.role) = role;
            }
            None => {
                let state = Arc::new(PartitionState {
                    tp: tp.clone(),
                    policy,
                    dir: Mutex::new(dir.to_path_buf()),
                    dir_lock: Mutex::new(dir_lock),
                    role: Mutex::new(role),
                    run: tokio::sync::Mutex::new(()),
                    totals: Mutex::new(Totals::default()),
                });
                lock(&self.partitions).insert(tp.clone(), state);
            }
        }
        if let Some(s) = lock(&self.scheduler).as_ref() {
            s.add(tp.clone());
        }
        Ok(tp)
    }

    /// Changes the partition's role. A leader that becomes a follower finishes the segment it is copying
    /// and copies no more; a copy it leaves behind is removed by the next leader's expiration.
    pub async fn change_role(&self, tp: &TopicIdPartition, role: Role) -> Result<()> {
        let state = self.state(tp)?;
        *lock(&state.role) = role;
        let (leaders, followers) = match role {
            Role::Leader { .. } => (vec![tp.clone()], vec![]),
            Role::Follower => (vec![], vec![tp.clone()]),
        };
        self.shared.metadata.on_partition_leadership_changes(&leaders, &followers).await
    }

    /// Stops serving the partition: its work is no longer scheduled (a run in flight finishes first).
    /// Nothing local or remote is removed.
    pub async fn stop_partition(&self, tp: &TopicIdPartition) -> Result<()> {
        let state = self.state(tp)?;
        if let Some(s) = lock(&self.scheduler).as_ref() {
            s.remove(tp);
        }
        let _run = state.run.lock().await;
        lock(&self.partitions).remove(tp);
        self.shared.metadata.on_stop_partitions(std::slice::from_ref(tp)).await
    }

    /// The partitions served, with their directories and roles.
    pub fn partitions(&self) -> Vec<(TopicIdPartition, PathBuf, Role)> {
        lock(&self.partitions).values().map(|s| (s.tp.clone(), s.dir(), s.role())).collect()
    }

    /// What the runs of each partition did since it was added.
    pub fn totals(&self) -> Vec<(TopicIdPartition, Totals)> {
        let mut v: Vec<_> = lock(&self.partitions).values().map(|s| (s.tp.clone(), lock(&s.totals).clone())).collect();
        v.sort_by_key(|(tp, _)| tp.to_string());
        v
    }

    pub(crate) fn state(&self, tp: &TopicIdPartition) -> Result<Arc<PartitionState>> {
        lock(&self.partitions)
            .get(tp)
            .cloned()
            .ok_or_else(|| Error::not_found(format!("partition {tp} is not served by this engine")))
    }

    /// One run of the partition's work: copy (leader), expiration, index files. Runs of one partition never
    /// overlap.
    pub async fn run_partition(&self, tp: &TopicIdPartition) -> Result<RunReport> {
        self.refuse_if_read_only(&format!("a run of {tp}"))?;
        let state = self.state(tp)?;
        run_partition(&self.shared, &state).await
    }

    /// What one run of the partition's work would do now (copy, remote and local retention), worked out
    /// from its directory and its metadata alone: nothing is copied, deleted or written (`rsm tier
    /// --dry-run`).
    pub async fn plan_partition(&self, tp: &TopicIdPartition) -> Result<RunPlan> {
        let state = self.state(tp)?;
        let log = LocalLog::open_read_only(&state.dir())?;
        let now = self.shared.config.now_ms();
        let summaries = log.summaries()?;
        let leo = log.log_end_offset();
        let mut remote = self.shared.metadata.list_remote_log_segments(tp).await?;
        let copy = match state.role() {
            Role::Leader { .. } => Some(copy::plan(&self.shared.config, &state, &log, &summaries, leo, &remote, now)?),
            Role::Follower => None,
        };
        let partition = log.partition();
        for c in copy.iter().flat_map(|c| &c.segments) {
            let mut md = partition.segment_metadata(log.segment(c.base_offset)?, self.shared.config.broker_id, now)?;
            md.state = RemoteLogSegmentState::CopySegmentFinished;
            remote.push(md);
        }
        let expiration = expiration::plan(&self.shared.config, &state, &summaries, leo, &remote, now)?;
        Ok(RunPlan { copy, expiration })
    }

    /// One run of every partition's work, in the order of their names; each partition's result apart.
    pub async fn run_all(&self) -> Vec<(TopicIdPartition, Result<RunReport>)> {
        let mut states: Vec<_> = lock(&self.partitions).values().cloned().collect();
        states.sort_by_key(|s| s.tp.to_string());
        let mut out = Vec::with_capacity(states.len());
        for s in states {
            out.push((s.tp.clone(), run_partition(&self.shared, &s).await));
        }
        out
    }

    /// One run of the partition's expiration only (remote and local retention, unfinished deletions and
    /// copies), without copying.
    pub async fn expire_partition(&self, tp: &TopicIdPartition) -> Result<ExpirationOutcome> {
        self.refuse_if_read_only(&format!("the expiration of {tp}"))?;
        let state = self.state(tp)?;
        let _run = state.run.lock().await;
        let log = LocalLog::open(&state.dir())?;
        let remote = self.shared.metadata.list_remote_log_segments(tp).await?;
        expiration::run(&self.shared, &state, &log, &remote).await
    }

    /// Starts the scheduler (SR-6, SR-7, SR-18): every partition served, and every one added later, runs at
    /// once and then every `remote.log.manager.task.interval.ms`, after a failure sooner or later by the
    /// backoff. Starting twice is an error.
    pub fn start(self: &Arc<Self>, runtime: &tokio::runtime::Handle) -> Result<()> {
        self.refuse_if_read_only("starting the scheduler")?;
        let mut slot = lock(&self.scheduler);
        if slot.is_some() {
            return Err(Error::invalid("the remote log manager is started already"));
        }
        let b = &self.shared.config.broker;
        let config = SchedulerConfig {
            workers: b.thread_pool_size as usize,
            interval: std::time::Duration::from_millis(b.task_interval_ms),
            backoff_initial: self.shared.config.retry_backoff,
            backoff_max: self.shared.config.retry_backoff_max,
        };
        let weak = Arc::downgrade(self);
        let scheduler = Scheduler::start(config, runtime, move |tp: TopicIdPartition| {
            let weak = weak.clone();
            async move {
                let Some(this) = weak.upgrade() else { return Ok(()) };
                let state = this.state(&tp)?;
                let report = run_partition(&this.shared, &state).await?;
                if !report.copy.copied.is_empty() || !report.expiration.expired.is_empty() {
                    tracing::info!(partition = %tp, copied = report.copy.copied.len(),
                        expired = report.expiration.expired.len(),
                        local_deleted = report.expiration.local_deleted.len(), "partition run");
                }
                Ok(())
            }
        })?;
        for tp in lock(&self.partitions).keys() {
            scheduler.add(tp.clone());
        }
        *slot = Some(Arc::new(scheduler));
        Ok(())
    }

    /// The scheduler, once started.
    pub fn scheduler(&self) -> Option<Arc<Scheduler<TopicIdPartition>>> {
        lock(&self.scheduler).clone()
    }

    /// Stops: the scheduler takes no new run and waits for the runs in flight, the reader pool fails the
    /// reads still queued and waits for those being served; then the metadata manager is closed. No task is left running.
    pub async fn close(&self) -> Result<()> {
        let scheduler = lock(&self.scheduler).take();
        if let Some(s) = scheduler {
            s.shutdown().await;
        }
        let readers = lock(&self.readers).take();
        if let Some(r) = readers {
            r.shutdown().await;
        }
        for state in lock(&self.partitions).values() {
            lock(&state.dir_lock).take();
        }
        self.shared.metadata.close().await
    }
}

async fn run_partition(shared: &Shared, state: &PartitionState) -> Result<RunReport> {
    let _run = state.run.lock().await;
    let result = run_locked(shared, state).await;
    let mut t = lock(&state.totals);
    t.runs += 1;
    match &result {
        Ok(r) => {
            t.remote_deleted += (r.expiration.expired.len() + r.expiration.retried.len()) as u64;
            t.local_deleted += r.expiration.local_deleted.len() as u64;
            t.last_error = None;
        }
        Err(e) => {
            t.failed_runs += 1;
            t.last_error = Some(e.full_message());
        }
    }
    result
}

async fn run_locked(shared: &Shared, state: &PartitionState) -> Result<RunReport> {
    // KIP-1105: as Kafka's copy and expiration tasks, nothing is copied or deleted while the partition's
    // metadata is not caught up (or no longer served): a run decided on it could copy twice or delete early.
    if !shared.metadata.is_partition_ready(&state.tp) {
        return Err(Error::busy(format!(
            "the remote log metadata of {} is not ready (not caught up, or stopped): this run copied and deleted \
             nothing",
            state.tp
        )));
    }
    let dir = state.dir();
    let log = LocalLog::open(&dir)?;
    if log.partition().topic_id_partition != state.tp {
        return Err(Error::invalid(format!(
            "{} now holds partition {}, not {}",
            dir.display(),
            log.partition().topic_id_partition,
            state.tp
        )));
    }
    let mut remote = shared.metadata.list_remote_log_segments(&state.tp).await?;
    let mut copy = CopyOutcome::default();
    let copied = copy::run(shared, state, &log, &remote, &mut copy).await;
    // What the copy did before any failure is done and recorded: it counts.
    {
        let mut t = lock(&state.totals);
        t.copied += copy.copied.len() as u64;
        t.copied_bytes += copy.copied.iter().map(|m| m.segment_size_in_bytes.max(0) as u64).sum::<u64>();
    }
    copied?;
    // Whatever the copy did, the metadata now has it.
    for md in &copy.copied {
        remote.retain(|m| m.remote_log_segment_id != md.remote_log_segment_id);
        remote.push(md.clone());
    }
    let expiration = expiration::run(shared, state, &log, &remote).await?;
    let mut copied: Vec<RemoteLogSegmentMetadata> = remote
        .into_iter()
        .filter(|m| {
            m.state == RemoteLogSegmentState::CopySegmentFinished
                && !expiration.expired.iter().any(|e| e.remote_log_segment_id == m.remote_log_segment_id)
        })
        .collect();
    copied.sort_by_key(|m| (m.start_offset, m.end_offset));
    let sync = index_files::sync(&shared.storage, &dir, shared.config.index_max_bytes, &copied);
    let indexed = crate::config::within(&shared.config, || format!("index files of {}", state.tp), sync).await?;
    Ok(RunReport { copy, expiration, indexed })
}
