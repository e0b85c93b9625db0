//! Snapshots of a metadata partition's state with the position it was read to.

use crate::cache::MetadataStore;
use rsm_core::error::Result;
use std::path::Path;

/// A metadata partition's state as a snapshot holds it.
#[derive(Debug)]
pub struct PartitionSnapshot {
    /// The position of the next event to read after this state.
    pub next_offset: i64,
    /// The state of the user partitions of the metadata partition.
    pub store: MetadataStore,
}

/// Writes `store` and `next_offset` to `path`, atomically (temporary file, fsync, rename, fsync of the
/// directory): after a crash `path` holds the old snapshot or the new one, whole.
pub fn save(path: &Path, next_offset: i64, store: &MetadataStore) -> Result<()> {
    let _ = (path, next_offset, store);
    todo!("snapshot::save")
}

/// Reads the snapshot at `path`: `None` when there is none; a damaged one is a corrupt error naming it.
pub fn load(path: &Path) -> Result<Option<PartitionSnapshot>> {
    let _ = path;
    todo!("snapshot::load")
}
