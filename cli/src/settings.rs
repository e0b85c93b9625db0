//! Where the store commands' store and settings come from: `--store`, `--config` (a properties file) and
//! `--set key=value` flags.

use clap::Args;
use rsm_core::config::parse_properties;
use rsm_core::{Error, Result};
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a store command's store and its settings come from.
#[derive(Args, Clone)]
pub struct StoreArgs {
    /// Store URL: file:///path (an existing directory), s3://bucket/prefix, az://container/prefix,
    /// gs://bucket/prefix, hdfs://namenode:port/path.
    #[arg(long)]
    pub store: String,
    /// A Java properties file of settings (the broker's rsm.config.* keys without the prefix).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// One setting, key=value; repeatable; wins over --config. Connect timeouts: s3.connect.timeout,
    /// azure.connect.timeout, gcs.connect.timeout, hdfs.connect.timeout (ms).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl StoreArgs {
    /// Opens the store with its settings (the engine's keys of a shared properties file left out).
    pub fn open(&self) -> Result<Store> {
        // One properties file serves every command: the engine's keys (retention.ms, remote.log.*, …) are
        // for `tier` and its kin, and a store command leaves them alone.
        let mut settings = settings(self.config.as_ref(), &self.set)?;
        settings.retain(|k, _| !rsm_engine::config::is_engine_key(k));
        Store::open(&self.store, &settings)
    }
}

/// The text of a `--config` file: a missing file is not found, and one that is not text (not UTF-8) is an
/// invalid argument naming it, not a storage error.
pub fn read_config_file(p: &Path) -> Result<String> {
    let bytes = std::fs::read(p).map_err(|e| Error::from_io(p.display(), e))?;
    String::from_utf8(bytes).map_err(|e| {
        Error::invalid(format!(
            "--config {}: not a properties file (byte {} is not UTF-8 text)",
            p.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Settings from an optional properties file, then `key=value` flags on top.
pub fn settings(config: Option<&PathBuf>, set: &[String]) -> Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    if let Some(p) = config {
        let text = read_config_file(p)?;
        settings = parse_properties(&text).map_err(|e| e.context(p.display()))?;
    }
    for kv in set {
        let (k, v) = kv.split_once('=').ok_or_else(|| Error::invalid(format!("--set `{kv}`: expected key=value")))?;
        settings.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(settings)
}
