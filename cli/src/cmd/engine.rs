//! What the engine's commands (`rsm tier`, `rsm offsets`, `rsm expire`, `rsm failed-deletions`, `rsm delete`
//! and `rsm read`) share: their arguments ([`EngineArgs`]) and the engine they open over `rsm-engine`'s
//! remote log manager ([`Engine`]).

use crate::settings::read_config_file;
use clap::Args;
use rsm_core::config::parse_properties;
use rsm_core::{Error, Result, TopicIdPartition};
use rsm_engine::config::is_engine_key;
use rsm_engine::{EngineConfig, RemoteLogManager, Role};
use rsm_facade::Store;
use rsm_metadata::kafka::{KafkaFailedDeletions, KafkaMetadataConfig, KafkaMetadataManager};
use std::collections::BTreeMap;
use std::path::PathBuf;
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
    /// Commands that only read create no topic and take the topic's partition count.
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
            let text = read_config_file(p)?;
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
    /// listed): nothing is created or changed, and a missing metadata directory is an error naming it
    /// (with `--bootstrap-server`, a missing metadata topic; a missing failed-deletions topic lists none).
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
                // Reading creates nothing: no topic, no snapshot directory, no snapshot; the metadata topic's
                // partition count is the topic's (the one the brokers use), whatever is configured.
                let (metadata, failed) = rt.block_on(async {
                    Ok::<_, Error>(match mode {
                        Mode::Write => {
                            (KafkaMetadataManager::open(kc.clone()).await?, KafkaFailedDeletions::open(&kc).await?)
                        }
                        // A dry run before the first run: no metadata topic yet is an empty metadata log.
                        Mode::Plan => (
                            KafkaMetadataManager::open_read_only_or_empty(kc.clone()).await?,
                            KafkaFailedDeletions::open_read_only(&kc).await?,
                        ),
                        Mode::Read => (
                            KafkaMetadataManager::open_read_only(kc.clone()).await?,
                            KafkaFailedDeletions::open_read_only(&kc).await?,
                        ),
                    })
                })?;
                let (metadata, failed) = (Arc::new(metadata), Arc::new(failed));
                match read_only {
                    true => RemoteLogManager::read_only(config, store.shared_storage(), metadata, failed)?,
                    false => RemoteLogManager::new(config, store.shared_storage(), metadata, failed)?,
                }
            }
        };
        Ok(Engine { manager: Arc::new(manager), metadata_dir: dir, store: Arc::new(store) })
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
    store: Arc<Store>,
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

    /// The store, shared (the metrics responder of `rsm tier --watch` keeps one).
    pub fn shared_store(&self) -> Arc<Store> {
        Arc::clone(&self.store)
    }

    /// Closes the manager (the metadata is flushed and closed).
    pub fn close(self) -> Result<()> {
        rsm_facade::runtime().block_on(self.manager.close())
    }
}
