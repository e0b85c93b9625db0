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
    /// Keep the metadata in a Kafka cluster's __remote_log_metadata topic instead (HOST:PORT).
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
            let text = std::fs::read_to_string(p).map_err(|e| Error::from_io(p.display(), e))?;
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

    /// Opens the store, the metadata and the engine.
    pub fn open(&self) -> Result<Engine> {
        let (store_settings, engine_settings) = self.settings()?;
        let store = Store::open(&self.store, &store_settings)?;
        let config = EngineConfig::from_props(&engine_settings)?;
        let dir = match &self.metadata_dir {
            Some(d) => d.clone(),
            None => default_metadata_dir()?,
        };
        let rt = rsm_facade::runtime();
        let manager = match &self.bootstrap_server {
            None => {
                std::fs::create_dir_all(&dir).map_err(|e| Error::from_io(dir.display(), e))?;
                RemoteLogManager::with_local_metadata(config, store.shared_storage(), &dir)?
            }
            Some(bootstrap) => {
                let kc = KafkaMetadataConfig::new(bootstrap.as_str(), dir.clone());
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
    format!(
        "{tp} ({}): copied {} segments ({bytes} bytes), expired {} remote, deleted {} local, retried {} deletions, \
         removed {} unfinished copies, {} failed deletions, indexed {}{stop}",
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

/// A segment id as `ls` prints it.
pub fn parse_segment_id(s: &str) -> Result<Uuid> {
    s.parse().map_err(|e: Error| e.context(format!("segment id `{s}`")))
}
