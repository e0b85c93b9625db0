//! What the engine's tests share: settings, a clock they move, real partition directories, a store.
#![allow(dead_code)]

use rsm_core::TieredConfig;
use rsm_core::backend::StorageBackend;
use rsm_core::model::Uuid;
use rsm_core::storage::TieredStorage;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_engine::EngineConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

pub const T0: i64 = 1_700_000_000_000;
pub const HOUR: i64 = 3_600_000;

pub fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = [
        ("remote.log.storage.system.enable", "true"),
        ("remote.log.storage.manager.class.name", "rsm"),
        ("remote.storage.enable", "true"),
        ("local.retention.ms", "3600000"),
        ("retention.ms", "86400000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in pairs {
        m.insert(k.to_string(), v.to_string());
    }
    m
}

pub struct Clock(pub Arc<AtomicI64>);

impl Clock {
    pub fn new() -> Self {
        Clock(Arc::new(AtomicI64::new(T0 + 10 * 60_000)))
    }
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
    pub fn config(&self, pairs: &[(&str, &str)]) -> EngineConfig {
        let c = Arc::clone(&self.0);
        EngineConfig::from_props(&props(pairs)).unwrap().with_clock(Arc::new(move || c.load(Ordering::SeqCst)))
    }
}

pub fn write_partition(log_dir: &Path, topic: &str, partition: i32, seed: u64) -> PathBuf {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 64 * 1024,
        records: 3_000,
        records_per_batch: 10,
        value_bytes: 100,
        first_timestamp: T0,
        epoch_every_batches: 120,
        seed,
        compression: None,
    };
    generate_partition(&log_dir.join(format!("{topic}-{partition}")), &spec).unwrap()
}

pub fn fs_storage(root: &Path) -> Arc<TieredStorage> {
    let backend: Arc<dyn StorageBackend> = Arc::new(rsm_backend_fs::FsBackend::new(root, false).unwrap());
    Arc::new(TieredStorage::new(backend, TieredConfig::default()))
}

/// A filesystem store in `root/store` behind a fault layer, and the storage over it.
pub fn faulty_fs_storage(root: &Path) -> (Arc<rsm_core::backend::layers::FaultLayer>, Arc<TieredStorage>) {
    let store = root.join("store");
    std::fs::create_dir_all(&store).unwrap();
    let fs: Arc<dyn StorageBackend> = Arc::new(rsm_backend_fs::FsBackend::new(&store, false).unwrap());
    let faults = Arc::new(rsm_core::backend::layers::FaultLayer::new(fs));
    let storage = Arc::new(TieredStorage::new(faults.clone(), TieredConfig::default()));
    (faults, storage)
}
