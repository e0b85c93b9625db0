//! The settings of a chunk cache (`fetch.cache.*`, `fetch.prefetch.chunks`, read by the storage manager's
//! settings): its memory tier, its read-ahead and its disk tier.

use std::path::PathBuf;

/// The setting that names the disk tier's directory, named in its errors.
pub const DISK_PATH_KEY: &str = "fetch.cache.disk.path";

/// The disk tier of a [`ChunkCache`](super::ChunkCache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCacheConfig {
    /// The directory of the cache's files, owned by the cache.
    pub path: PathBuf,
    /// Bytes of files kept.
    pub capacity_bytes: u64,
}

/// The settings of a [`ChunkCache`](super::ChunkCache).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkCacheConfig {
    /// Bytes of whole chunks kept in memory.
    pub capacity_bytes: u64,
    /// Chunks read ahead for a sequential reader.
    pub prefetch_chunks: usize,
    /// The disk tier, if any.
    pub disk: Option<DiskCacheConfig>,
}
