//! The engine's commands: `rsm tier`, `rsm offsets`, `rsm expire`, `rsm failed-deletions`, `rsm delete`
//! and `rsm read`, over `rsm-engine`'s remote log manager.

use clap::Args;
use rsm_core::config::parse_properties;
use rsm_core::{Error, Result, TopicIdPartition, Uuid};
use rsm_engine::config::is_engine_key;
use rsm_engine::{EngineConfig, RemoteLogManager, Role, RunReport};
use rsm_facade::Store;
use rsm_metadata::kafka::{KafkaFailedDeletions, KafkaMetadataConfig, KafkaMetadataManager};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the engine's store, settings and metadata come from.
#[derive(Args, Clone)]
pub struct EngineArgs {
    /// Store URL: file:///path (an existing directory), s3://bucket/prefix, az://container/prefix,
    /// gs://bucket/prefix, hdfs://namenode:port/path.
    #[arg(long)]
    pub store: String,
    /// A Java properties file: the store's settings (the broker's rsm.config.* keys without the prefix)
    /// and the engine's (Kafka's broker keys remote.log.*, log.*, topic keys retention.ms,
    /// local.retention.ms, remote.copy.lag.ms, ..., and rsm.engine.*).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// One setting, key=value, of either kind; repeatable; wins over --config.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The engine's metadata log (one host); default `$XDG_STATE_HOME/rsm/metadata`
    /// (`~/.local/state/rsm/metadata`). With --bootstrap-server, where its snapshots are kept.
    #[arg(long)]
    pub metadata_dir: Option<PathBuf>,
    /// Keep the metadata in a Kafka cluster's __remote_log_metadata topic instead (HOST:PORT); its
    /// settings are Kafka's, under rlmm.config. (rlmm.config.remote.log.metadata.topic.replication.factor=1).
    #[arg(long)]
    pub bootstrap_server: Option<String>,
}

/// The default metadata directory.
fn default_metadata_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("rsm").join("metadata"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| Error::invalid("neither XDG_STATE_HOME nor HOME is set: pass --metadata-dir"))?;
    Ok(PathBuf::from(home).join(".local/state/rsm/metadata"))
}

impl EngineArgs {
    /// The settings split into the store's and the engine's. The engine defaults to what `rsm tier` is
    /// for: remote storage on for the broker and the topics (either can be set to false, and then the
    /// engine refuses, naming the key).
    fn settings(&self) -> Result<(BTreeMap<String, String>, BTreeMap<String, String>)> {
        let mut all = BTreeMap::new();
        if let Some(p) = &self.config {
            let text = crate::read_config_file(p)?;
            all = parse_properties(&text).map_err(|e| e.context(p.display()))?;
        }
        for kv in &self.set {
            let (k, v) =
                kv.split_once('=').ok_or_else(|| Error::invalid(format!("--set `{kv}`: expected key=value")))?;
            all.insert(k.trim().to_string(), v.trim().to_string());
        }
        let (mut engine, store): (BTreeMap<_, _>, BTreeMap<_, _>) =
            all.into_iter().partition(|(k, _)| is_engine_key(k));
        for (k, v) in [
            ("remote.log.storage.system.enable", "true"),
            ("remote.log.storage.manager.class.name", "rsm"),
            ("remote.storage.enable", "true"),
        ] {
            engine.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        Ok((store, engine))
    }

    /// Opens the store, the metadata and the engine to work on the partitions in `dirs`: each is checked
    /// first (a partition directory, not a log a broker holds), so that a command refused for a bad
    /// directory leaves no metadata directory behind.
    pub fn open(&self, dirs: &[PathBuf]) -> Result<Engine> {
        for d in dirs {
            rsm_engine::local_log::LocalLog::open_read_only(d)?;
            rsm_engine::local_log::refuse_if_broker_holds(d)?;
        }
        self.open_as(Mode::Write)
    }

    /// Opens the store, the metadata and the engine to read only (offsets, records, failed deletions
    /// listed): nothing is created or changed, and a missing metadata directory is an error naming it.
    pub fn open_read_only(&self) -> Result<Engine> {
        self.open_as(Mode::Read)
    }

    /// Opens the engine to plan a run (`--dry-run`): as [`EngineArgs::open_read_only`], but a metadata
    /// directory that does not exist yet (before the first run) is an empty metadata log.
    pub fn open_plan(&self) -> Result<Engine> {
        self.open_as(Mode::Plan)
    }

    /// Whether the settings name the retention time explicitly (`retention.ms`, or the broker's
    /// `log.retention.ms`, `.minutes` or `.hours`) rather than taking Kafka's default of 7 days.
    pub fn retention_explicit(&self) -> Result<bool> {
        let (_, engine) = self.settings()?;
        Ok(["retention.ms", "log.retention.ms", "log.retention.minutes", "log.retention.hours"]
            .iter()
            .any(|k| engine.contains_key(*k)))
    }

    fn open_as(&self, mode: Mode) -> Result<Engine> {
        let read_only = mode != Mode::Write;
        let (store_settings, engine_settings) = self.settings()?;
        let store = Store::open(&self.store, &store_settings)?;
        let config = EngineConfig::from_props(&engine_settings)?;
        let dir = match &self.metadata_dir {
            Some(d) => d.clone(),
            None => default_metadata_dir()?,
        };
        let rt = rsm_facade::runtime();
        let manager = match &self.bootstrap_server {
            None if mode == Mode::Plan => RemoteLogManager::read_only(
                config,
                store.shared_storage(),
                Arc::new(rsm_metadata::local::LocalMetadataManager::open_read_only_or_empty(&dir)?),
                Arc::new(rsm_metadata::failed_deletions::LocalFailedDeletions::open_read_only(
                    &dir.join("failed-deletions"),
                )?),
            )?,
            None if read_only => RemoteLogManager::with_local_metadata_read_only(config, store.shared_storage(), &dir)
                .map_err(|e| e.context("--metadata-dir"))?,
            None => RemoteLogManager::with_local_metadata(config, store.shared_storage(), &dir)?,
            Some(bootstrap) => {
                // The metadata manager's settings, as a broker passes them (`rlmm.config.*`, prefix removed).
                let mut m: std::collections::HashMap<String, String> =
                    config.broker.metadata_config.clone().into_iter().collect();
                m.insert("bootstrap.servers".into(), bootstrap.clone());
                m.entry(rsm_metadata::kafka::SNAPSHOT_DIR_KEY.into()).or_insert_with(|| dir.display().to_string());
                let kc = KafkaMetadataConfig::from_map(&m)?;
                let (metadata, failed) = rt.block_on(async {
                    Ok::<_, Error>((
                        KafkaMetadataManager::open(kc.clone()).await?,
                        KafkaFailedDeletions::open(&kc).await?,
                    ))
                })?;
                RemoteLogManager::new(config, store.shared_storage(), Arc::new(metadata), Arc::new(failed))?
            }
        };
        Ok(Engine { manager: Arc::new(manager), metadata_dir: dir, store })
    }
}

/// What an engine is opened for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Tier, expire, delete, retry.
    Write,
    /// Offsets, records, lists.
    Read,
    /// A dry run.
    Plan,
}

/// An open engine.
pub struct Engine {
    /// The manager.
    pub manager: Arc<RemoteLogManager>,
    /// Where its metadata (or its snapshots) are.
    pub metadata_dir: PathBuf,
    store: Store,
}

impl Engine {
    /// Serves `dirs` as their leader.
    pub fn add(&self, dirs: &[PathBuf]) -> Result<Vec<TopicIdPartition>> {
        let rt = rsm_facade::runtime();
        dirs.iter().map(|d| rt.block_on(self.manager.add_partition(d, Role::Leader { epoch: 0 }, None))).collect()
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Closes the manager (the metadata is flushed and closed).
    pub fn close(self) -> Result<()> {
        rsm_facade::runtime().block_on(self.manager.close())
    }
}

/// One line of a run's summary.
pub fn summary(tp: &TopicIdPartition, dir: &Path, r: &RunReport) -> String {
    let bytes: u64 = r.copy.copied.iter().map(|m| m.segment_size_in_bytes.max(0) as u64).sum();
    let stop = match r.copy.stop {
        Some(rsm_tiering::CopyStop::ActiveSegment) | None => String::new(),
        Some(rsm_tiering::CopyStop::Delayed { base_offset }) => format!(", copy delayed from offset {base_offset}"),
        Some(rsm_tiering::CopyStop::NotStable { base_offset }) => format!(", not stable from offset {base_offset}"),
    };
    let e = &r.expiration;
    let gaps = match e.gaps.first() {
        None => String::new(),
        Some(g) => format!(
            ", remote log gap at offsets {}..={} ({} in all): local segments from there are kept",
            g.start,
            g.end,
            e.gaps.len()
        ),
    };
    format!(
        "{tp} ({}): copied {} segments ({bytes} bytes), expired {} remote, deleted {} local, retried {} deletions, \
         removed {} unfinished copies, {} failed deletions, indexed {}{stop}{gaps}",
        dir.display(),
        r.copy.copied.len(),
        e.expired.len(),
        e.local_deleted.len(),
        e.retried.len(),
        e.abandoned_copies.len(),
        e.failed,
        r.indexed,
    )
}

/// What a run would do to the partition in `dir`, a line each: the segments it copies, the remote segments
/// it deletes and the local segments it deletes (offsets, bytes, and the setting that makes each due).
pub fn plan_lines(tp: &TopicIdPartition, dir: &Path, plan: &rsm_engine::RunPlan) -> Vec<String> {
    use rsm_tiering::{ExpiryReason, LocalDeletionReason};
    let mut out = Vec::new();
    let local_bytes = |base: i64| std::fs::metadata(dir.join(format!("{base:020}.log"))).map_or(0, |m| m.len());
    for c in plan.copy.iter().flat_map(|c| &c.segments) {
        out.push(format!(
            "{tp}\tcopy\t{}..={}\t{} bytes\ta closed segment of a tiered topic (remote.storage.enable, remote.copy.lag.*)",
            c.base_offset, c.end_offset, c.size_bytes
        ));
    }
    let e = &plan.expiration;
    for m in &e.unfinished_copies {
        out.push(format!(
            "{tp}\tremove unfinished copy\t{}..={}\t{}",
            m.start_offset, m.end_offset, m.remote_log_segment_id.id
        ));
    }
    for m in &e.unfinished_deletions {
        out.push(format!(
            "{tp}\tfinish deletion\t{}..={}\t{}",
            m.start_offset, m.end_offset, m.remote_log_segment_id.id
        ));
    }
    for m in &e.duplicates {
        out.push(format!(
            "{tp}\tdelete remote duplicate\t{}..={}\t{} bytes\tanother copy holds these offsets",
            m.start_offset, m.end_offset, m.segment_size_in_bytes
        ));
    }
    for (m, why) in &e.expired {
        let why = match why {
            ExpiryReason::Time => "older than retention.ms",
            ExpiryReason::Size => "over retention.bytes",
            ExpiryReason::LogStart => "below the log start offset",
        };
        out.push(format!(
            "{tp}\tdelete remote\t{}..={}\t{} bytes\t{why}",
            m.start_offset, m.end_offset, m.segment_size_in_bytes
        ));
    }
    for d in &e.local {
        let why = match d.reason {
            LocalDeletionReason::Time => "older than local.retention.ms, and remote",
            LocalDeletionReason::Size => "over local.retention.bytes, and remote",
            LocalDeletionReason::LogStart => "below the log start offset (its records expired)",
        };
        out.push(format!(
            "{tp}\tdelete local\t{}..={}\t{} bytes\t{why}",
            d.base_offset,
            d.end_offset,
            local_bytes(d.base_offset)
        ));
    }
    if let Some(g) = e.gaps.first() {
        out.push(format!(
            "{tp}\tgap\t{}..={}\tno copied segment holds these offsets: local segments from here are kept",
            g.start, g.end
        ));
    }
    if out.is_empty() {
        out.push(format!("{tp}\tnothing to do"));
    }
    out
}

/// Gaps of a remote log as `a..=b` ranges, or `-`.
pub fn gaps_text(gaps: &[rsm_tiering::OffsetRange]) -> String {
    match gaps {
        [] => "-".to_string(),
        _ => gaps.iter().map(|g| format!("{}..={}", g.start, g.end)).collect::<Vec<_>>().join(","),
    }
}

/// A segment id as `ls` prints it.
pub fn parse_segment_id(s: &str) -> Result<Uuid> {
    s.parse().map_err(|e: Error| e.context(format!("segment id `{s}`")))
}

/// What `rsm read` found: records, and the batches it could not decode (compressed, legacy), by offset.
#[derive(Default)]
pub struct ReadOut {
    /// The records, in offset order.
    pub records: Vec<rsm_core::format::record::RecordView>,
    /// Batches shown as such: (base offset, why their records are not shown).
    pub undecoded: Vec<(i64, String)>,
}

/// The first offset of the copied segments at or after timestamp `ts`: the batch the segment's time index
/// names, read through the store.
async fn offset_of_timestamp(engine: &RemoteLogManager, tp: &TopicIdPartition, ts: i64) -> Result<i64> {
    use futures::TryStreamExt;
    use rsm_core::RemoteStorageManager;
    let mut copied: Vec<_> = engine
        .metadata()
        .list_remote_log_segments(tp)
        .await?
        .into_iter()
        .filter(|m| m.state == rsm_core::RemoteLogSegmentState::CopySegmentFinished)
        .collect();
    copied.sort_by_key(|m| m.start_offset);
    for md in copied.iter().filter(|m| m.max_timestamp_ms >= ts) {
        if let Some(pos) = engine.storage().position_of_timestamp(md, ts).await? {
            let head: Vec<bytes::Bytes> =
                engine.storage().fetch_log_segment(md, pos as i32, Some(pos as i32 + 7)).await?.try_collect().await?;
            let head = head.concat();
            let base = head.get(..8).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
            return base.ok_or_else(|| {
                Error::corrupt(format!("segment {} at position {pos}: short read", md.remote_log_segment_id.id))
            });
        }
    }
    Err(Error::not_found(format!("no remote record of {tp} has a timestamp at or after {ts}")))
}

/// Reads up to `max_records` records of `tp` from remote storage, from `offset` or from the first record at or
/// after `timestamp`, through the reader pool.
pub async fn read(
    engine: &RemoteLogManager,
    tp: &TopicIdPartition,
    offset: Option<i64>,
    timestamp: Option<i64>,
    max_records: usize,
    max_bytes: u32,
    timeout: std::time::Duration,
) -> Result<ReadOut> {
    use rsm_core::format::batch::BatchIter;
    use rsm_core::format::record::{is_control, records};
    let mut next = match (offset, timestamp) {
        (Some(o), _) => o,
        (None, Some(ts)) => offset_of_timestamp(engine, tp, ts).await?,
        (None, None) => return Err(Error::invalid("--offset or --timestamp is required")),
    };
    let mut out = ReadOut::default();
    let mut first = true;
    while out.records.len() < max_records {
        let deadline = tokio::time::Instant::now() + timeout;
        let r = match engine.read(tp, next, max_bytes, deadline).await {
            Ok(r) => r,
            // Past the remote log's end after the first read: the records end there.
            Err(e) if !first && e.kind() == rsm_core::ErrorKind::NotFound => break,
            Err(e) => return Err(e),
        };
        first = false;
        let mut it = BatchIter::new(&r.bytes, u64::from(r.start_position), false);
        let mut advanced = false;
        while let Some(batch) = it.next_complete()? {
            advanced = true;
            next = batch.last_offset() + 1;
            if is_control(&batch) {
                continue;
            }
            match records(&batch) {
                Ok(rs) => out.records.extend(rs.into_iter().filter(|x| {
                    x.offset >= offset.unwrap_or(i64::MIN) && x.timestamp >= timestamp.unwrap_or(i64::MIN)
                })),
                Err(e) if e.kind() == rsm_core::ErrorKind::InvalidArgument => {
                    out.undecoded.push((batch.base_offset(), e.message().to_string()))
                }
                Err(e) => return Err(e),
            }
            if out.records.len() >= max_records {
                break;
            }
        }
        if !advanced {
            return Err(Error::corrupt(format!("a read of {tp} at offset {next} returned no whole batch")));
        }
    }
    out.records.truncate(max_records);
    Ok(out)
}
