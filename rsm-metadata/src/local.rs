//! The embedded default for one host: a durable local metadata log.
//!
//! Laid out as the metadata topic is: a directory per metadata partition (`metadata-<n>/`, the partition
//! of a user partition picked by [`crate::partitioner`]), each an append-only log of Kafka's own record
//! values (`<first offset>.log`, every record with its CRC-32C, fsynced before a write returns) and a
//! snapshot of its state with the offset it was taken at (`snapshot`, replaced atomically every
//! [`LocalMetadataConfig::snapshot_every`] records; the log files it covers are then removed). A restart
//! loads each snapshot and replays only the records after it; a torn tail that a crash left is cut, and
//! damage anywhere else is an error naming the file. The partition count and formula are kept in
//! `layout` and checked at every open, since changing them would route partitions elsewhere.

use crate::RemoteLogMetadataManager;
use crate::cache::{MetadataStore, PartitionState};
use crate::events::{MetadataEvent, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata};
use crate::log_file::RecordLog;
use crate::partitioner::{PartitionFormula, metadata_partition};
use crate::{records, snapshot};
use async_trait::async_trait;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition};
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};

/// Settings of a [`LocalMetadataManager`].
#[derive(Clone, Debug)]
pub struct LocalMetadataConfig {
    /// The directory holding the log (created if missing).
    pub dir: PathBuf,
    /// Metadata partitions (default 50, as the metadata topic's).
    pub partitions: u32,
    /// How a user partition's metadata partition is picked (default Kafka's).
    pub formula: PartitionFormula,
    /// Records appended to a metadata partition between two snapshots of it (default 10,000).
    pub snapshot_every: u64,
    /// Whether appends and snapshots are fsynced (default true; false only for tests and benchmarks).
    pub fsync: bool,
    /// Open to read only (default false): the directory and its `layout` must exist, nothing is created,
    /// cut, snapshotted or locked, and every write is refused. Readers run beside the one writer.
    pub read_only: bool,
}

impl LocalMetadataConfig {
    /// The defaults, in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        LocalMetadataConfig {
            dir: dir.into(),
            partitions: 50,
            formula: PartitionFormula::Kafka,
            snapshot_every: 10_000,
            fsync: true,
            read_only: false,
        }
    }
}

struct MetaPartition {
    dir: PathBuf,
    log: RecordLog,
    store: MetadataStore,
    since_snapshot: u64,
}

/// A [`RemoteLogMetadataManager`] over a durable local log: one host, no Kafka.
pub struct LocalMetadataManager {
    config: LocalMetadataConfig,
    /// The one writer's lock on the directory (none when read-only), released by `close`.
    lock: Mutex<Option<rsm_core::dir_lock::DirLock>>,
    partitions: Vec<Mutex<Option<MetaPartition>>>,
    registered: RwLock<HashSet<TopicIdPartition>>,
    closed: AtomicBool,
}

impl std::fmt::Debug for LocalMetadataManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalMetadataManager").field("config", &self.config).finish_non_exhaustive()
    }
}

fn layout_text(config: &LocalMetadataConfig) -> String {
    let formula = match config.formula {
        PartitionFormula::Kafka => "kafka",
        PartitionFormula::Seeds => "seeds",
    };
    format!("partitions={}\nformula={formula}\n", config.partitions)
}

/// Refuses a metadata directory path that exists and is not a directory (a regular file, say): an invalid
/// argument naming the path, rather than the storage error creating a directory over it would give.
fn refuse_non_directory(dir: &Path) -> Result<()> {
    match fs::metadata(dir) {
        Ok(m) if !m.is_dir() => Err(Error::invalid(format!(
            "metadata directory {} is not a directory (it exists as a {}): name a directory for the metadata \
             log (one that does not exist yet is created)",
            dir.display(),
            if m.is_file() { "regular file" } else { "file that is not a directory" }
        ))),
        _ => Ok(()),
    }
}

impl LocalMetadataManager {
    /// Opens the log in `config.dir`, recovering every metadata partition already there.
    pub fn open(config: LocalMetadataConfig) -> Result<Self> {
        if config.partitions == 0 {
            return Err(Error::config("partitions", "the number of metadata partitions must be at least 1"));
        }
        if config.snapshot_every == 0 {
            return Err(Error::config("snapshot_every", "must be at least 1"));
        }
        let dir = &config.dir;
        refuse_non_directory(dir)?;
        if config.read_only && !dir.is_dir() {
            return Err(Error::not_found(format!(
                "metadata directory {} (a read creates nothing: check --metadata-dir, or tier a partition first)",
                dir.display()
            )));
        }
        if !config.read_only {
            fs::create_dir_all(dir).map_err(|e| Error::storage(format!("creating {}", dir.display()), e))?;
        }
        // One writer at a time: two engines appending to one log would interleave their records.
        let lock = match config.read_only {
            true => None,
            false => Some(rsm_core::dir_lock::DirLock::exclusive(dir, "metadata directory")?),
        };
        let layout = dir.join("layout");
        let want = layout_text(&config);
        match fs::read_to_string(&layout) {
            Ok(have) if have == want => {}
            Ok(have) => {
                return Err(Error::config(
                    "partitions",
                    format!(
                        "{} was made with `{}`, not `{}`: a metadata log keeps its partition count and formula",
                        layout.display(),
                        have.trim().replace('\n', ", "),
                        want.trim().replace('\n', ", ")
                    ),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && config.read_only => {
                return Err(Error::not_found(format!("{} (is {} a metadata log?)", layout.display(), dir.display())));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let tmp = dir.join("layout.tmp");
                fs::write(&tmp, &want)
                    .and_then(|_| fs::File::open(&tmp)?.sync_all())
                    .and_then(|_| fs::rename(&tmp, &layout))
                    .map_err(|e| Error::storage(format!("writing {}", layout.display()), e))?;
                crate::log_file::sync_dir(dir, config.fsync)?;
            }
            Err(e) => return Err(Error::storage(format!("reading {}", layout.display()), e)),
        }
        let partitions: Vec<_> = (0..config.partitions).map(|_| Mutex::new(None)).collect();
        let manager = LocalMetadataManager {
            config,
            lock: Mutex::new(lock),
            partitions,
            registered: RwLock::new(HashSet::new()),
            closed: AtomicBool::new(false),
        };
        for p in 0..manager.config.partitions {
            if manager.partition_dir(p).exists() {
                drop(manager.lock(p)?);
            }
        }
        Ok(manager)
    }

    fn partition_dir(&self, p: u32) -> PathBuf {
        self.config.dir.join(format!("metadata-{p}"))
    }

    fn route(&self, tp: &TopicIdPartition) -> u32 {
        metadata_partition(self.config.formula, tp, self.config.partitions) as u32
    }

    /// The metadata partition, opened (recovered) on first use.
    fn lock(&self, p: u32) -> Result<MutexGuard<'_, Option<MetaPartition>>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::invalid("the local metadata manager is closed"));
        }
        let mut guard = self.partitions[p as usize].lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(open_partition(&self.partition_dir(p), self.config.fsync, self.config.read_only)?);
        }
        Ok(guard)
    }

    fn write(&self, event: MetadataEvent) -> Result<()> {
        if self.config.read_only {
            return Err(Error::invalid(format!(
                "metadata log {} is open read-only: nothing is written",
                self.config.dir.display()
            )));
        }
        let tp = event.partition().expect("only events naming a partition are written").clone();
        let mut guard = self.lock(self.route(&tp))?;
        let part = guard.as_mut().expect("opened by lock");
        part.store.check(&event)?;
        let value = records::encode(&event);
        part.log.append(&[&value])?;
        part.store.apply(&event).expect("checked before it was written");
        part.since_snapshot += 1;
        if part.since_snapshot >= self.config.snapshot_every {
            part.snapshot()?;
        }
        Ok(())
    }

    fn read<T>(&self, tp: &TopicIdPartition, f: impl FnOnce(Option<&PartitionState>) -> T) -> Result<T> {
        if !self.registered.read().unwrap_or_else(|e| e.into_inner()).contains(tp) {
            return Err(Error::not_found(format!(
                "partition {tp} is not registered with the metadata manager (register it as leader or follower first)"
            )));
        }
        let guard = self.lock(self.route(tp))?;
        Ok(f(guard.as_ref().expect("opened by lock").store.partition(tp)))
    }

    /// Every partition that has segments in the log, whether registered or not (for tools).
    pub fn all_partitions(&self) -> Result<Vec<TopicIdPartition>> {
        let mut out = Vec::new();
        for p in 0..self.config.partitions {
            if self.partition_dir(p).exists() {
                let guard = self.lock(p)?;
                out.extend(guard.as_ref().expect("opened").store.partitions().map(|(tp, _)| tp.clone()));
            }
        }
        Ok(out)
    }

    /// Opens an existing log with the partition count and formula it was made with (for tools), as its
    /// one writer.
    pub fn open_existing(dir: &Path) -> Result<Self> {
        Self::open(Self::existing_config(dir)?)
    }

    /// Opens an existing log with the partition count and formula it was made with, to read it only (for
    /// tools): nothing in `dir` is created or changed, and its writer may be running beside it.
    pub fn open_existing_read_only(dir: &Path) -> Result<Self> {
        let mut config = Self::existing_config(dir)?;
        config.read_only = true;
        Self::open(config)
    }

    /// The log in `dir` opened read-only as [`LocalMetadataManager::open_existing_read_only`] does, or, when
    /// `dir` does not exist, an empty read-only log that creates nothing (what a dry run before the first
    /// run reads).
    pub fn open_read_only_or_empty(dir: &Path) -> Result<Self> {
        if dir.exists() {
            return Self::open_existing_read_only(dir);
        }
        let mut config = LocalMetadataConfig::new(dir);
        config.read_only = true;
        Ok(LocalMetadataManager {
            partitions: (0..config.partitions).map(|_| Mutex::new(None)).collect(),
            config,
            lock: Mutex::new(None),
            registered: RwLock::new(HashSet::new()),
            closed: AtomicBool::new(false),
        })
    }

    /// Makes a new metadata log in `dir` (which must not exist) holding each of `segments` as copied: a
    /// segment record (copy started) and an update to copy finished, with the segment's own broker id and
    /// event time. What a store's manifests describe (each names its segment whole) becomes readable through
    /// the engine again after its metadata log was lost or damaged. Returns how many segments it holds.
    pub async fn rebuild(dir: &Path, segments: &[RemoteLogSegmentMetadata]) -> Result<usize> {
        if dir.exists() {
            return Err(Error::invalid(format!(
                "{} exists: a rebuilt metadata log goes into a new directory (move a damaged one aside first)",
                dir.display()
            )));
        }
        let m = Self::open(LocalMetadataConfig::new(dir))?;
        let mut tps: Vec<TopicIdPartition> =
            segments.iter().map(|s| s.remote_log_segment_id.topic_id_partition.clone()).collect();
        tps.sort_by_key(|tp| tp.to_string());
        tps.dedup();
        m.on_partition_leadership_changes(&tps, &[]).await?;
        let mut sorted: Vec<&RemoteLogSegmentMetadata> = segments.iter().collect();
        sorted.sort_by_key(|s| (s.remote_log_segment_id.topic_id_partition.to_string(), s.start_offset));
        for s in &sorted {
            let mut started = (*s).clone();
            started.state = RemoteLogSegmentState::CopySegmentStarted;
            m.add_remote_log_segment_metadata(&started).await?;
            let done = RemoteLogSegmentMetadataUpdate::of(
                s,
                RemoteLogSegmentState::CopySegmentFinished,
                s.event_timestamp_ms,
                s.broker_id,
            );
            m.update_remote_log_segment_metadata(&done).await?;
        }
        m.close().await?;
        Ok(sorted.len())
    }

    fn existing_config(dir: &Path) -> Result<LocalMetadataConfig> {
        refuse_non_directory(dir)?;
        let layout = dir.join("layout");
        let text = fs::read_to_string(&layout).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::not_found(format!(
                "{} (is {} a metadata log? a read creates nothing: check --metadata-dir)",
                layout.display(),
                dir.display()
            )),
            _ => Error::storage(format!("reading {} (is {} a metadata log?)", layout.display(), dir.display()), e),
        })?;
        let mut config = LocalMetadataConfig::new(dir);
        for line in text.lines() {
            match line.split_once('=') {
                Some(("partitions", n)) => {
                    config.partitions =
                        n.parse().map_err(|_| Error::corrupt(format!("{}: bad partitions `{n}`", layout.display())))?
                }
                Some(("formula", "kafka")) => config.formula = PartitionFormula::Kafka,
                Some(("formula", "seeds")) => config.formula = PartitionFormula::Seeds,
                _ => return Err(Error::corrupt(format!("{}: unexpected line `{line}`", layout.display()))),
            }
        }
        Ok(config)
    }

    /// Every segment of every partition in the log, in any state but delete finished (for tools).
    pub fn all_segments(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        let mut out = Vec::new();
        for p in 0..self.config.partitions {
            if self.partition_dir(p).exists() {
                let guard = self.lock(p)?;
                for (_, state) in guard.as_ref().expect("opened").store.partitions() {
                    out.extend(state.segments());
                }
            }
        }
        Ok(out)
    }

    /// Segments held in every metadata partition (for tools and reports).
    pub fn segment_count(&self) -> Result<usize> {
        let mut n = 0;
        for p in 0..self.config.partitions {
            if self.partition_dir(p).exists() {
                n += self.lock(p)?.as_ref().expect("opened").store.segment_count();
            }
        }
        Ok(n)
    }
}

fn open_partition(dir: &Path, fsync: bool, read_only: bool) -> Result<MetaPartition> {
    let snap = snapshot::load(&dir.join("snapshot"))?;
    let (start, mut store) = match snap {
        Some(s) => (s.next_offset, s.store),
        None => (0, MetadataStore::new()),
    };
    let log = match read_only {
        true => RecordLog::open_read_only(dir, start)?,
        false => RecordLog::open(dir, start, fsync)?,
    };
    if log.next_offset() < start {
        return Err(Error::corrupt(format!(
            "metadata log {}: its snapshot is at offset {start} but the log ends at {}",
            dir.display(),
            log.next_offset()
        )));
    }
    let mut replayed = 0u64;
    log.read_from(start, |offset, value| {
        let event = records::decode(value)
            .map_err(|e| Error::corrupt(format!("metadata log {}: record {offset}: {e}", dir.display())))?;
        if let Err(e) = store.apply(&event) {
            tracing::warn!(dir = %dir.display(), offset, error = %e, "skipped a metadata record Kafka's rules refuse");
        }
        replayed += 1;
        Ok(())
    })?;
    Ok(MetaPartition { dir: dir.to_path_buf(), log, store, since_snapshot: replayed })
}

impl MetaPartition {
    fn snapshot(&mut self) -> Result<()> {
        let next = self.log.next_offset();
        snapshot::save(&self.dir.join("snapshot"), next, &self.store)?;
        self.log.roll()?;
        self.log.remove_before(next)?;
        self.since_snapshot = 0;
        Ok(())
    }
}

#[async_trait]
impl RemoteLogMetadataManager for LocalMetadataManager {
    async fn add_remote_log_segment_metadata(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        self.write(MetadataEvent::Segment(metadata.clone()))
    }

    async fn update_remote_log_segment_metadata(&self, update: &RemoteLogSegmentMetadataUpdate) -> Result<()> {
        self.write(MetadataEvent::SegmentUpdate(update.clone()))
    }

    async fn put_remote_partition_delete_metadata(&self, metadata: &RemotePartitionDeleteMetadata) -> Result<()> {
        self.write(MetadataEvent::PartitionDelete(metadata.clone()))
    }

    async fn list_remote_log_segments(&self, partition: &TopicIdPartition) -> Result<Vec<RemoteLogSegmentMetadata>> {
        self.read(partition, |p| p.map(|p| p.segments()).unwrap_or_default())
    }

    async fn list_remote_log_segments_for_epoch(
        &self,
        partition: &TopicIdPartition,
        leader_epoch: i32,
    ) -> Result<Vec<RemoteLogSegmentMetadata>> {
        self.read(partition, |p| p.map(|p| p.segments_for_epoch(leader_epoch)).unwrap_or_default())
    }

    async fn remote_log_segment_metadata(
        &self,
        partition: &TopicIdPartition,
        leader_epoch: i32,
        offset: i64,
    ) -> Result<Option<RemoteLogSegmentMetadata>> {
        self.read(partition, |p| p.and_then(|p| p.segment_for_offset(leader_epoch, offset).cloned()))
    }

    async fn highest_offset_for_epoch(&self, partition: &TopicIdPartition, leader_epoch: i32) -> Result<Option<i64>> {
        self.read(partition, |p| p.and_then(|p| p.highest_offset_for_epoch(leader_epoch)))
    }

    async fn remote_log_size(&self, partition: &TopicIdPartition, leader_epoch: i32) -> Result<u64> {
        self.read(partition, |p| p.map_or(0, |p| p.size_for_epoch(leader_epoch)))
    }

    async fn earliest_log_offset(&self, partition: &TopicIdPartition) -> Result<Option<i64>> {
        self.read(partition, |p| p.and_then(|p| p.earliest_offset()))
    }

    async fn on_partition_leadership_changes(
        &self,
        leaders: &[TopicIdPartition],
        followers: &[TopicIdPartition],
    ) -> Result<()> {
        // One host: every event is already here, so registering only opens the partitions' logs.
        for tp in leaders.iter().chain(followers) {
            drop(self.lock(self.route(tp))?);
        }
        self.registered.write().unwrap_or_else(|e| e.into_inner()).extend(leaders.iter().chain(followers).cloned());
        Ok(())
    }

    async fn on_stop_partitions(&self, partitions: &[TopicIdPartition]) -> Result<()> {
        let mut registered = self.registered.write().unwrap_or_else(|e| e.into_inner());
        for tp in partitions {
            registered.remove(tp);
        }
        Ok(())
    }

    fn is_ready(&self) -> bool {
        !self.closed.load(Ordering::Acquire)
    }

    /// Open and registered: every event is local, so a partition is caught up as soon as it is registered.
    fn is_partition_ready(&self, partition: &TopicIdPartition) -> bool {
        self.is_ready() && self.registered.read().unwrap_or_else(|e| e.into_inner()).contains(partition)
    }

    async fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        for p in &self.partitions {
            let mut guard = p.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(part) = guard.as_mut()
                && part.since_snapshot > 0
                && !self.config.read_only
            {
                part.snapshot()?;
            }
            *guard = None;
        }
        self.lock.lock().unwrap_or_else(|e| e.into_inner()).take();
        Ok(())
    }
}
