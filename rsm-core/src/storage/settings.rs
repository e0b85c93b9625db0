//! The settings of [`TieredStorage`](super::TieredStorage).

use super::chunk_cache::{ChunkCacheConfig, DISK_PATH_KEY, DiskCacheConfig};
use crate::config::ConfigReader;
use crate::crypto::FileKeyRing;
use crate::error::{Error, Result};
use crate::format::transform::CompressionConfig;

/// The encryption settings (`encryption.*`, see [`crate::crypto`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptionConfig {
    /// `encryption.keys`, `encryption.key.id` and `encryption.key.<id>.file`: the KEKs, read whenever keys
    /// are listed, so encrypted segments read back with encryption of new copies off.
    pub keyring: FileKeyRing,
    /// `encryption.enabled`: encrypt new copies under the active KEK (default false).
    pub encrypt: bool,
}

/// The setting that turns chunk compression on.
pub const COMPRESSION_ENABLED_KEY: &str = "compression.enabled";
/// The setting of the compression heuristic.
pub const COMPRESSION_HEURISTIC_KEY: &str = "compression.heuristic.enabled";
/// The setting of the zstd level.
pub const COMPRESSION_LEVEL_KEY: &str = "compression.level";
/// The setting of the heuristic's least saving.
pub const COMPRESSION_MIN_SAVING_KEY: &str = "compression.min.saving.percent";

/// The compression settings; every key is validated whether or not compression is on (so a typo surfaces
/// before it is turned on), and the result is `None` unless `compression.enabled` is true.
fn read_compression(r: &mut ConfigReader<'_>) -> Result<Option<CompressionConfig>> {
    let d = CompressionConfig::default();
    let enabled = r.bool(COMPRESSION_ENABLED_KEY, false)?;
    let c = CompressionConfig {
        heuristic: r.bool(COMPRESSION_HEURISTIC_KEY, d.heuristic)?,
        level: r.int_in(COMPRESSION_LEVEL_KEY, d.level, 1..=22)?,
        min_saving_percent: r.int_in(COMPRESSION_MIN_SAVING_KEY, d.min_saving_percent, 0..=99)?,
    };
    Ok(enabled.then_some(c))
}

const DISK_BYTES_KEY: &str = "fetch.cache.disk.bytes";

fn read_disk_cache(r: &mut ConfigReader<'_>) -> Result<Option<DiskCacheConfig>> {
    let path = r.string(DISK_PATH_KEY).map(str::trim).filter(|p| !p.is_empty()).map(std::path::PathBuf::from);
    let bytes = r.string(DISK_BYTES_KEY).is_some();
    match path {
        None if bytes => Err(Error::config(DISK_BYTES_KEY, format!("is set but `{DISK_PATH_KEY}` is not"))),
        None => Ok(None),
        Some(p) if !p.is_absolute() => {
            Err(Error::config(DISK_PATH_KEY, format!("must be an absolute directory, not `{}`", p.display())))
        }
        Some(_) if !bytes => Err(Error::config(DISK_BYTES_KEY, format!("is required with `{DISK_PATH_KEY}`"))),
        Some(path) => {
            Ok(Some(DiskCacheConfig { path, capacity_bytes: r.int_in(DISK_BYTES_KEY, 0, 16 << 20..=64 << 40)? }))
        }
    }
}

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
    /// (default 2); at most a quarter of `fetch.cache.bytes` is read ahead at once.
    pub fetch_prefetch_chunks: usize,
    /// `fetch.cache.disk.path` and `fetch.cache.disk.bytes`: the chunk cache's disk tier, a directory of its
    /// own (absolute) holding at most that many bytes of chunks, 16 MiB to 64 TiB, kept across restarts
    /// (default none; the bytes are required with the path).
    pub fetch_cache_disk: Option<DiskCacheConfig>,
    /// `index.cache.bytes`: remote indexes kept in memory (SR-34), least recently used evicted first, 0 (off)
    /// to 64 GiB (default 64 MiB).
    pub index_cache_bytes: u64,
    /// Chunk compression of new copies: `compression.enabled` (default false) turns it on; then each chunk
    /// is stored as one zstd frame at `compression.level` (1 to 22, default 3), unless, with
    /// `compression.heuristic.enabled` (default true), the producer compressed most of its batches or
    /// compressing saves less than `compression.min.saving.percent` of it (0 to 99, default 10). Segments
    /// copied with other settings, or before, read the same ([`crate::format::transform`]).
    pub compression: Option<CompressionConfig>,
    /// Envelope encryption: `encryption.enabled` (default false) encrypts every chunk of new copies with
    /// AES-256-GCM under a fresh data key per segment, wrapped under the KEK `encryption.key.id`; the KEKs
    /// are `encryption.keys` (comma-separated ids, the active one among them), each read from the file
    /// `encryption.key.<id>.file` (64 hexadecimal characters). `None` when no keys are listed.
    pub encryption: Option<EncryptionConfig>,
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
            fetch_cache_disk: None,
            index_cache_bytes: 64 << 20,
            compression: None,
            encryption: None,
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
            fetch_cache_disk: read_disk_cache(r)?,
            index_cache_bytes: r.int_in("index.cache.bytes", d.index_cache_bytes, 0..=64 << 30)?,
            compression: read_compression(r)?,
            encryption: FileKeyRing::read(r)?.map(|(keyring, encrypt)| EncryptionConfig { keyring, encrypt }),
        })
    }
}

impl TieredConfig {
    /// The chunk cache these settings ask for: none unless `fetch.cache.bytes` or the disk tier is set.
    pub fn chunk_cache(&self) -> Option<ChunkCacheConfig> {
        (self.fetch_cache_bytes > 0 || self.fetch_cache_disk.is_some()).then(|| ChunkCacheConfig {
            capacity_bytes: self.fetch_cache_bytes,
            prefetch_chunks: self.fetch_prefetch_chunks,
            disk: self.fetch_cache_disk.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::props;

    #[test]
    fn the_disk_tier_needs_an_absolute_directory_and_a_bound() {
        let read = |pairs: &[(&str, &str)]| {
            let p = props(pairs.iter().copied());
            TieredConfig::read(&mut ConfigReader::new(&p))
        };
        let d = read(&[("fetch.cache.disk.path", "/var/cache/rsm"), ("fetch.cache.disk.bytes", "1073741824")])
            .unwrap()
            .fetch_cache_disk
            .unwrap();
        assert_eq!((d.path.to_str(), d.capacity_bytes), (Some("/var/cache/rsm"), 1 << 30));
        assert_eq!(read(&[]).unwrap().chunk_cache(), None, "no cache unless asked for");
        // (settings, the key the error names, a piece of its message)
        type Case = (&'static [(&'static str, &'static str)], &'static str, &'static str);
        let cases: [Case; 4] = [
            (&[("fetch.cache.disk.path", "cache")], "fetch.cache.disk.path", "absolute"),
            (&[("fetch.cache.disk.path", "/c")], "fetch.cache.disk.bytes", "required"),
            (&[("fetch.cache.disk.bytes", "1073741824")], "fetch.cache.disk.bytes", "is not"),
            (&[("fetch.cache.disk.path", "/c"), ("fetch.cache.disk.bytes", "1024")], "fetch.cache.disk.bytes", "range"),
        ];
        for (settings, key, says) in cases {
            let e = read(settings).unwrap_err();
            assert_eq!(e.config_key(), Some(key), "{settings:?}: {e}");
            assert!(e.to_string().contains(says), "{settings:?}: {e}");
        }
    }

    #[test]
    fn compression_is_off_by_default_and_its_keys_are_checked() {
        let read = |pairs: &[(&str, &str)]| {
            let p = props(pairs.iter().copied());
            TieredConfig::read(&mut ConfigReader::new(&p))
        };
        let on = CompressionConfig::default();
        // (settings, what they give)
        type Good = (&'static [(&'static str, &'static str)], Option<CompressionConfig>);
        let good: [Good; 5] = [
            (&[], None),
            (&[("compression.level", "9")], None),
            (&[("compression.enabled", "true")], Some(on)),
            (
                &[("compression.enabled", "TRUE"), ("compression.heuristic.enabled", "false")],
                Some(CompressionConfig { heuristic: false, ..on }),
            ),
            (
                &[
                    ("compression.enabled", "true"),
                    ("compression.level", "19"),
                    ("compression.min.saving.percent", "0"),
                ],
                Some(CompressionConfig { level: 19, min_saving_percent: 0, ..on }),
            ),
        ];
        for (settings, want) in good {
            assert_eq!(read(settings).unwrap().compression, want, "{settings:?}");
        }
        assert_eq!((on.level, on.heuristic, on.min_saving_percent), (3, true, 10), "the documented defaults");
        // (settings, the key the error names, a piece of its message)
        type Bad = (&'static [(&'static str, &'static str)], &'static str, &'static str);
        let bad: [Bad; 6] = [
            (&[("compression.enabled", "yes")], "compression.enabled", "not true or false"),
            (&[("compression.heuristic.enabled", "1")], "compression.heuristic.enabled", "not true or false"),
            (&[("compression.enabled", "true"), ("compression.level", "0")], "compression.level", "range"),
            (&[("compression.level", "23")], "compression.level", "range"),
            (&[("compression.level", "fast")], "compression.level", "not an integer"),
            (&[("compression.min.saving.percent", "100")], "compression.min.saving.percent", "range"),
        ];
        for (settings, key, says) in bad {
            let e = read(settings).unwrap_err();
            assert_eq!(e.config_key(), Some(key), "{settings:?}: {e}");
            assert!(e.to_string().contains(says), "{settings:?}: {e}");
        }
    }
}
