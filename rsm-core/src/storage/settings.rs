//! The settings of [`TieredStorage`](super::TieredStorage).

use crate::config::ConfigReader;
use crate::error::{Error, Result};

/// Settings of [`TieredStorage`](super::TieredStorage), read from the keys named on each field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TieredConfig {
    /// `key.prefix`: prepended to every object key (default empty).
    pub key_prefix: String,
    /// `chunk.size`: target chunk size in bytes, 64 KiB to 256 MiB (default 4 MiB).
    pub chunk_size: u32,
    /// `chunk.block.size`: bytes per CRC-32C block inside each chunk, 4 KiB to 16 MiB (default 64 KiB): a read
    /// is widened to whole blocks and every block checked before its bytes are returned.
    pub block_size: u32,
    /// `fetch.concurrency`: ranged reads in flight per fetch, 1 to 64 (default 4).
    pub fetch_concurrency: usize,
    /// `copy.verify.checksums`: check every batch's CRC-32C while copying (default true).
    pub verify_checksums: bool,
    /// `manifest.cache.entries`: manifests kept in memory, 0 to 1,000,000 (default 1000).
    pub manifest_cache_entries: usize,
    /// `manifest.cache.ttl.ms`: how long a cached manifest is served before it is read again, 1 s to 7 days
    /// (default 1 hour), so a segment deleted by another host stops being served from memory.
    pub manifest_cache_ttl: std::time::Duration,
    /// `fetch.cache.bytes`: whole checked chunks kept in memory, shared by every fetch of this storage manager,
    /// 0 (off, the default) to 64 GiB. With it on, a fetch reads whole chunks once, and concurrent readers of a
    /// chunk share one read.
    pub fetch_cache_bytes: u64,
    /// `fetch.prefetch.chunks`: with the chunk cache on, chunks read ahead for a sequential reader, 0 to 64
    /// (default 2).
    pub fetch_prefetch_chunks: usize,
    /// `index.cache.bytes`: remote indexes kept in memory (SR-34), least recently used evicted first, 0 (off)
    /// to 64 GiB (default 64 MiB).
    pub index_cache_bytes: u64,
}

impl Default for TieredConfig {
    fn default() -> Self {
        TieredConfig {
            key_prefix: String::new(),
            chunk_size: 4 << 20,
            block_size: crate::format::chunk::DEFAULT_BLOCK_SIZE,
            fetch_concurrency: 4,
            verify_checksums: true,
            manifest_cache_entries: 1000,
            manifest_cache_ttl: std::time::Duration::from_secs(3600),
            fetch_cache_bytes: 0,
            fetch_prefetch_chunks: 2,
            index_cache_bytes: 64 << 20,
        }
    }
}

impl TieredConfig {
    /// Reads the settings from `r`, with defaults for absent keys.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let d = TieredConfig::default();
        let key_prefix = r.string("key.prefix").unwrap_or("").to_string();
        if !key_prefix.is_empty() {
            crate::backend::validate_key(&format!("{key_prefix}x"))
                .map_err(|e| Error::config("key.prefix", e.to_string()))?;
        }
        Ok(TieredConfig {
            key_prefix,
            chunk_size: r.int_in("chunk.size", d.chunk_size, 64 << 10..=256 << 20)?,
            block_size: r.int_in("chunk.block.size", d.block_size, 4 << 10..=16 << 20)?,
            fetch_concurrency: r.int_in("fetch.concurrency", d.fetch_concurrency, 1..=64)?,
            verify_checksums: r.bool("copy.verify.checksums", d.verify_checksums)?,
            manifest_cache_entries: r.int_in("manifest.cache.entries", d.manifest_cache_entries, 0..=1_000_000)?,
            manifest_cache_ttl: std::time::Duration::from_millis(r.int_in(
                "manifest.cache.ttl.ms",
                d.manifest_cache_ttl.as_millis() as u64,
                1_000..=7 * 24 * 3_600_000,
            )?),
            fetch_cache_bytes: r.int_in("fetch.cache.bytes", d.fetch_cache_bytes, 0..=64 << 30)?,
            fetch_prefetch_chunks: r.int_in("fetch.prefetch.chunks", d.fetch_prefetch_chunks, 0..=64)?,
            index_cache_bytes: r.int_in("index.cache.bytes", d.index_cache_bytes, 0..=64 << 30)?,
        })
    }
}
