//! The settings of [`TieredStorage`](super::TieredStorage).

use super::chunk_cache::{ChunkCacheConfig, DISK_PATH_KEY, DiskCacheConfig};
use crate::config::{ConfigReader, Kind, Setting, Unit};
use crate::crypto::{self, KeyRing, KmsConnector};
use crate::error::{Error, Result};
use crate::format::transform::{CompressionConfig, DEFAULT_FRAME_SIZE};

/// The encryption settings (`encryption.*`, see [`crate::crypto`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncryptionConfig {
    /// `encryption.keys`, `encryption.key.id`, `encryption.key.<id>.file` or `.kms.key.id`,
    /// `encryption.topic.<topic>.key.id` and `encryption.kms.*`: the KEKs, read whenever keys are listed, so
    /// encrypted segments read back with encryption of new copies off.
    pub keyring: KeyRing,
    /// `encryption.enabled`: encrypt new copies under the active KEK (default false).
    pub encrypt: bool,
}

/// `compression.enabled`.
pub const COMPRESSION_ENABLED: Setting = Setting::bool("compression.enabled", false).with_doc(
    "compress each chunk of a new copy with zstd, in independent frames of `compression.frame.size`, read back \
     through every path (chunk cache included) and checked before and after decompression (a read of part of a \
     chunk reads and decompresses only the frames holding it, and checks its blocks); segments copied before, or \
     with other settings, read as they are",
);
/// `compression.heuristic.enabled`.
pub const COMPRESSION_HEURISTIC: Setting = Setting::bool("compression.heuristic.enabled", true).with_doc(
    "with compression on: leave a chunk as it is when most of its bytes are in batches the producer compressed \
     (batch codec not none), or when compressing saves less than `compression.min.saving.percent`; `false` \
     compresses every chunk",
);
/// `compression.level`.
pub const COMPRESSION_LEVEL: Setting =
    Setting::int("compression.level", 1, 22).with_default(3).with_doc("the zstd level");
/// `compression.min.saving.percent`.
pub const COMPRESSION_MIN_SAVING: Setting = Setting::int("compression.min.saving.percent", 0, 99)
    .with_default(10)
    .with_doc("with the heuristic on: the least saving, in percent of a chunk's bytes, for it to be stored compressed");

/// `compression.frame.size`.
pub const COMPRESSION_FRAME_SIZE: Setting = Setting::int("compression.frame.size", 0, 256 << 20)
    .with_default(DEFAULT_FRAME_SIZE as i128)
    .with_unit(Unit::Bytes)
    .with_checks("0, or a multiple of `chunk.block.size` of at most `chunk.size`")
    .with_doc(
        "with compression on: the original bytes of each independent zstd frame of a chunk (the last may be \
         shorter), compressed (and with encryption sealed) on its own, so a read of part of a chunk reads and \
         decompresses only the frames holding it (about 4% more stored bytes than one frame per chunk); when not \
         set, 256 KiB rounded down to whole blocks and to at most `chunk.size`; 0 stores each chunk as one zstd \
         frame (read whole, decompressed up to the last block a read wants), the format builds before frames \
         read",
    );

/// The frame size when `compression.frame.size` is not set: [`DEFAULT_FRAME_SIZE`] rounded down to whole
/// blocks of `block_size` and to at most `chunk_size` (at least one block), so that a smaller `chunk.size` or
/// an odd `chunk.block.size` set alone is not an error about a setting the operator never wrote.
fn default_frame_size(chunk_size: u32, block_size: u32) -> u32 {
    let block = block_size.max(1);
    (DEFAULT_FRAME_SIZE.min(chunk_size) / block).max(1) * block
}

/// The compression settings; every key is validated whether or not compression is on (so a typo surfaces
/// before it is turned on), and the result is `None` unless `compression.enabled` is true. A frame size
/// that is set must be 0 or a multiple of `block_size` of at most `chunk_size`.
fn read_compression(r: &mut ConfigReader<'_>, chunk_size: u32, block_size: u32) -> Result<Option<CompressionConfig>> {
    let enabled = r.get_bool(&COMPRESSION_ENABLED)?;
    let frame_size: u32 = r.get_int_or(&COMPRESSION_FRAME_SIZE, default_frame_size(chunk_size, block_size))?;
    let set = r.get_string(&COMPRESSION_FRAME_SIZE).is_some();
    if set && frame_size != 0 && (!frame_size.is_multiple_of(block_size.max(1)) || frame_size > chunk_size) {
        return Err(Error::config(
            COMPRESSION_FRAME_SIZE.key,
            format!(
                "{frame_size} is neither 0 nor a multiple of `{}` ({block_size}) of at most `{}` ({chunk_size})",
                CHUNK_BLOCK_SIZE.key, CHUNK_SIZE.key
            ),
        ));
    }
    let c = CompressionConfig {
        heuristic: r.get_bool(&COMPRESSION_HEURISTIC)?,
        level: r.get_int(&COMPRESSION_LEVEL)?,
        min_saving_percent: r.get_int(&COMPRESSION_MIN_SAVING)?,
        frame_size,
    };
    Ok(enabled.then_some(c))
}

/// `segment.layout`.
pub const SEGMENT_LAYOUT: Setting =
    Setting::of("segment.layout", Kind::Choice(&["split", "single"])).with_text_default("split").with_doc(
        "how a new copy stores a segment: `split`, three objects (`.log`, `.indexes`, `.manifest` written last); \
         `single`, one `.segment` object (log, index bundle, manifest, a 32-byte trailer locating them): one PUT and \
         one DELETE per segment below the multipart threshold instead of three and two; segments of either layout \
         read whatever the setting, but releases before it cannot read `single` segments (no rollback past it)",
    );

/// `key.prefix`.
pub const KEY_PREFIX: Setting =
    Setting::of("key.prefix", Kind::String).with_text_default("").with_doc("prepended to every object key");
/// `chunk.size`.
pub const CHUNK_SIZE: Setting = Setting::int("chunk.size", 64 << 10, 256 << 20)
    .with_default(4 << 20)
    .with_unit(Unit::Bytes)
    .with_doc("target chunk size in bytes; chunks end on record-batch boundaries");
/// `chunk.block.size`.
pub const CHUNK_BLOCK_SIZE: Setting = Setting::int("chunk.block.size", 4 << 10, 16 << 20)
    .with_default(crate::format::chunk::DEFAULT_BLOCK_SIZE as i128)
    .with_unit(Unit::Bytes)
    .with_doc(
        "bytes per CRC-32C block inside a chunk; reads cover whole blocks, each checked before its bytes are returned",
    );
/// `fetch.concurrency`.
pub const FETCH_CONCURRENCY: Setting = Setting::int("fetch.concurrency", 1, 64).with_default(4).with_doc(
    "ranged reads in flight per fetch or verify, holding at most concurrency × `chunk.size` (a transformed \
     read's stored bytes counted beside its original ones; a chunk larger than `chunk.size`, of one large batch, \
     read in parts of about `chunk.size`), whatever the segment's size or its batches'; the chunks undone and \
     the filesystem store's read buffers are reused, up to 32 MiB kept of each. Peak RSS of `rsm fetch` of a \
     whole 500 MiB segment and of `rsm verify`, compressed or encrypted, 16 KiB or 40 MiB batches (benches \
     `fetch_memory`): 24-41 MB at 4, 66-111 MB at 16; plain 4 MiB chunks 33 MB at 4, 129 MB at 16",
);
/// `copy.verify.checksums`.
pub const COPY_VERIFY_CHECKSUMS: Setting =
    Setting::bool("copy.verify.checksums", true).with_doc("check every batch's CRC-32C while copying");
/// `manifest.cache.entries`.
pub const MANIFEST_CACHE_ENTRIES: Setting =
    Setting::int("manifest.cache.entries", 0, 1_000_000).with_default(1000).with_doc("manifests kept in memory");
/// `manifest.cache.ttl.ms`.
pub const MANIFEST_CACHE_TTL_MS: Setting = Setting::long("manifest.cache.ttl.ms", 1_000, 7 * 24 * 3_600_000)
    .with_default(3_600_000)
    .with_unit(Unit::Millis)
    .with_doc(
        "how long a cached manifest is served before it is read again, so a segment deleted by another host stops \
         being served from memory",
    );
/// `fetch.timeout.ms`.
pub const FETCH_TIMEOUT_MS: Setting =
    Setting::long("fetch.timeout.ms", 0, 3_600_000).with_default(500).with_unit(Unit::Millis).with_doc(
        "the longest a caller of the broker plugin or the C ABI waits on the store for a fetch (opening it, each \
         piece of its bytes, an index), then the read fails at once as retriable, naming the segment's key, and the \
         requests behind it are cancelled; Kafka gives up a remote fetch after `remote.fetch.max.wait.ms` (500 by \
         default), so a read that outlives it serves nobody: set both alike; 0 waits as long as the store's own \
         timeouts",
    );
/// `copy.timeout.ms`.
pub const COPY_TIMEOUT_MS: Setting =
    Setting::long("copy.timeout.ms", 0, 86_400_000).with_default(600_000).with_unit(Unit::Millis).with_doc(
        "the longest a copy through the broker plugin or the C ABI may take, then it fails as retriable and what \
         it wrote is deleted (a store that hangs frees the broker's copy thread); 0: as long as the store's own \
         timeouts allow",
    );
/// `copy.cleanup.recheck.ms`.
pub const COPY_CLEANUP_RECHECK_MS: Setting =
    Setting::long("copy.cleanup.recheck.ms", 0, 86_400_000).with_default(60_000).with_unit(Unit::Millis).with_doc(
        "after a copy fails and deletes what it wrote, its segment's objects are looked for again this long after \
         (one listing) and deleted: a write the store applied late (a manifest PUT still in flight when the copy \
         gave up) leaves no segment that looks complete; a new copy under the same segment id cancels it; longer \
         than the store's own request timeouts; 0: no second look (`rsm sweep` and `rsm audit` find what is left)",
    );
/// `fetch.cache.bytes`.
pub const FETCH_CACHE_BYTES: Setting =
    Setting::long("fetch.cache.bytes", 0, 64 << 30).with_default(0).with_unit(Unit::Bytes).with_doc(
        "whole checked chunks kept in memory for every fetch of the store (0 is off); concurrent readers of a chunk \
         share one read; a random read of a chunk missed for the first time reads only its blocks, around the \
         cache, and the chunk is kept from its second miss (or a sequential reader's first); over a filesystem \
         store only compressed or encrypted chunks are kept (the page cache holds the others), and only from a \
         random reader's second miss",
    );
/// `fetch.prefetch.chunks`.
pub const FETCH_PREFETCH_CHUNKS: Setting = Setting::int("fetch.prefetch.chunks", 0, 64).with_default(2).with_doc(
    "with the chunk cache on: chunks read ahead for a sequential (catch-up) reader, at most a quarter of \
     `fetch.cache.bytes` at once (one chunk when none is in flight); a random reader gets none, nor does any \
     reader of a filesystem store",
);
/// `fetch.cache.disk.path`.
pub const FETCH_CACHE_DISK_PATH: Setting =
    Setting::of(DISK_PATH_KEY, Kind::Path).with_checks("an absolute directory").with_doc(
        "the chunk cache's disk tier: an absolute directory of its own (one process at a time), kept across \
     restarts (oldest written removed first when it shrinks); a hit reads only the blocks it serves, checks them \
     against the manifest and writes nothing; a file that fails is dropped and fetched again",
    );
/// `fetch.cache.disk.bytes`.
pub const FETCH_CACHE_DISK_BYTES: Setting = Setting::long("fetch.cache.disk.bytes", 16 << 20, 64 << 40)
    .with_unit(Unit::Bytes)
    .with_checks("required with `fetch.cache.disk.path`, and only with it")
    .with_doc("bytes of chunk files kept in the disk tier, least recently used removed first");
/// `index.cache.bytes`.
pub const INDEX_CACHE_BYTES: Setting = Setting::long("index.cache.bytes", 0, 64 << 30)
    .with_default(64 << 20)
    .with_unit(Unit::Bytes)
    .with_doc("remote indexes kept in memory (SR-34), least recently used evicted first (0 is off)");

/// [`SEGMENT_LAYOUT`]: `split` (the default) or `single`, in any case; anything else is refused, naming the key.
fn read_segment_layout(r: &mut ConfigReader<'_>) -> Result<super::layout::SegmentLayout> {
    use super::layout::SegmentLayout;
    match r.get_string(&SEGMENT_LAYOUT).map(str::trim) {
        None => Ok(SegmentLayout::Split),
        Some(v) if v.eq_ignore_ascii_case("split") => Ok(SegmentLayout::Split),
        Some(v) if v.eq_ignore_ascii_case("single") => Ok(SegmentLayout::Single),
        Some(v) => Err(Error::config(SEGMENT_LAYOUT.key, format!("`{v}` is neither `split` nor `single`"))),
    }
}

fn read_disk_cache(r: &mut ConfigReader<'_>) -> Result<Option<DiskCacheConfig>> {
    const DISK_BYTES_KEY: &str = FETCH_CACHE_DISK_BYTES.key;
    let path =
        r.get_string(&FETCH_CACHE_DISK_PATH).map(str::trim).filter(|p| !p.is_empty()).map(std::path::PathBuf::from);
    let bytes = r.get_string(&FETCH_CACHE_DISK_BYTES).is_some();
    match path {
        None if bytes => Err(Error::config(DISK_BYTES_KEY, format!("is set but `{DISK_PATH_KEY}` is not"))),
        None => Ok(None),
        Some(p) if !p.is_absolute() => {
            Err(Error::config(DISK_PATH_KEY, format!("must be an absolute directory, not `{}`", p.display())))
        }
        Some(_) if !bytes => Err(Error::config(DISK_BYTES_KEY, format!("is required with `{DISK_PATH_KEY}`"))),
        Some(path) => Ok(Some(DiskCacheConfig { path, capacity_bytes: r.get_int_or(&FETCH_CACHE_DISK_BYTES, 0)? })),
    }
}

/// The settings [`TieredConfig::read`] reads (the encryption ones through [`KeyRing::read`]), in the order
/// the documentation lists them.
pub const SETTINGS: &[&Setting] = &[
    &CHUNK_SIZE,
    &CHUNK_BLOCK_SIZE,
    &FETCH_CONCURRENCY,
    &FETCH_TIMEOUT_MS,
    &COPY_TIMEOUT_MS,
    &COPY_CLEANUP_RECHECK_MS,
    &COPY_VERIFY_CHECKSUMS,
    &COMPRESSION_ENABLED,
    &COMPRESSION_HEURISTIC,
    &COMPRESSION_LEVEL,
    &COMPRESSION_MIN_SAVING,
    &COMPRESSION_FRAME_SIZE,
    &crypto::ENCRYPTION_ENABLED,
    &crypto::ENCRYPTION_KEY_ID,
    &crypto::ENCRYPTION_KEYS,
    &crypto::ENCRYPTION_KEY_FILE,
    &crypto::ENCRYPTION_KEY_KMS,
    &crypto::ENCRYPTION_KMS_KEY_ID,
    &crypto::ENCRYPTION_TOPIC_KEY_ID,
    &crypto::ENCRYPTION_KMS_REGION,
    &crypto::ENCRYPTION_KMS_ENDPOINT,
    &crypto::ENCRYPTION_KMS_ACCESS_KEY_ID,
    &crypto::ENCRYPTION_KMS_SECRET_ACCESS_KEY,
    &crypto::ENCRYPTION_KMS_SESSION_TOKEN,
    &MANIFEST_CACHE_ENTRIES,
    &MANIFEST_CACHE_TTL_MS,
    &FETCH_CACHE_BYTES,
    &FETCH_PREFETCH_CHUNKS,
    &FETCH_CACHE_DISK_PATH,
    &FETCH_CACHE_DISK_BYTES,
    &INDEX_CACHE_BYTES,
    &SEGMENT_LAYOUT,
    &KEY_PREFIX,
    &super::aiven::settings::AIVEN_READ_ENABLED,
    &super::aiven::settings::AIVEN_KEY_PREFIX,
    &super::aiven::settings::AIVEN_KEY_PAIRS,
    &super::aiven::settings::AIVEN_PRIVATE_KEY_FILE,
];

/// Settings of [`TieredStorage`](super::TieredStorage), each field read from the [`Setting`] it names (which
/// holds the key, range, default and meaning).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TieredConfig {
    /// [`KEY_PREFIX`]: prepended to every object key.
    pub key_prefix: String,
    /// [`CHUNK_SIZE`]: target chunk size in bytes.
    pub chunk_size: u32,
    /// [`CHUNK_BLOCK_SIZE`]: bytes per CRC-32C block inside each chunk: a read is widened to whole blocks and
    /// every block checked before its bytes are returned.
    pub block_size: u32,
    /// [`FETCH_CONCURRENCY`]: ranged reads in flight per fetch.
    pub fetch_concurrency: usize,
    /// [`FETCH_TIMEOUT_MS`]: the longest a blocking caller (the facade's fetches) waits on the store at a
    /// time; `None` for no bound of its own.
    pub fetch_timeout: Option<std::time::Duration>,
    /// [`COPY_TIMEOUT_MS`]: the longest a blocking caller's copy (the facade's) may take; `None` for no bound
    /// of its own.
    pub copy_timeout: Option<std::time::Duration>,
    /// [`COPY_CLEANUP_RECHECK_MS`]: how long after a failed copy its objects are looked for again and
    /// deleted; `None` for no second look.
    pub copy_cleanup_recheck: Option<std::time::Duration>,
    /// [`COPY_VERIFY_CHECKSUMS`]: check every batch's CRC-32C while copying.
    pub verify_checksums: bool,
    /// [`MANIFEST_CACHE_ENTRIES`]: manifests kept in memory.
    pub manifest_cache_entries: usize,
    /// [`MANIFEST_CACHE_TTL_MS`]: how long a cached manifest is served before it is read again, so a segment
    /// deleted by another host stops being served from memory.
    pub manifest_cache_ttl: std::time::Duration,
    /// [`FETCH_CACHE_BYTES`]: whole checked chunks kept in memory, shared by every fetch of this storage
    /// manager (0 is off). With it on, a fetch reads whole chunks once, and concurrent readers of a chunk
    /// share one read.
    pub fetch_cache_bytes: u64,
    /// [`FETCH_PREFETCH_CHUNKS`]: with the chunk cache on, chunks read ahead for a sequential reader; at most a
    /// quarter of `fetch.cache.bytes` is read ahead at once.
    pub fetch_prefetch_chunks: usize,
    /// [`FETCH_CACHE_DISK_PATH`] and [`FETCH_CACHE_DISK_BYTES`]: the chunk cache's disk tier, a directory of
    /// its own (absolute) holding at most that many bytes of chunks, kept across restarts (none unless set;
    /// the bytes are required with the path).
    pub fetch_cache_disk: Option<DiskCacheConfig>,
    /// [`INDEX_CACHE_BYTES`]: remote indexes kept in memory (SR-34), least recently used evicted first (0 is
    /// off).
    pub index_cache_bytes: u64,
    /// Chunk compression of new copies: [`COMPRESSION_ENABLED`] turns it on; then each chunk is stored as
    /// independent zstd frames of [`COMPRESSION_FRAME_SIZE`] original bytes (one frame when 0) at
    /// [`COMPRESSION_LEVEL`], unless, with [`COMPRESSION_HEURISTIC`], the producer compressed most of its
    /// batches or compressing saves less than [`COMPRESSION_MIN_SAVING`] of it. Segments copied with other
    /// settings, or before, read the same ([`crate::format::transform`]).
    pub compression: Option<CompressionConfig>,
    /// Envelope encryption ([`crypto::ENCRYPTION_ENABLED`] and the others): `encryption.enabled` encrypts every chunk of new
    /// copies with AES-256-GCM under a fresh data key per segment, wrapped under the KEK `encryption.key.id`;
    /// the KEKs are `encryption.keys` (comma-separated ids, the active one among them), each read from the
    /// file `encryption.key.<id>.file` (64 hexadecimal characters) or an AWS KMS key
    /// (`encryption.key.<id>.kms.key.id`); a topic's copies may use a key of their own
    /// (`encryption.topic.<topic>.key.id`). `None` when no keys are listed.
    pub encryption: Option<EncryptionConfig>,
    /// [`SEGMENT_LAYOUT`]: how new copies store a segment (three objects, or one); segments of either layout
    /// read whatever it says, the configured one's key tried first.
    pub segment_layout: super::layout::SegmentLayout,
    /// Segments Aiven's plugin stored, read too ([`super::aiven::settings::AIVEN_READ_ENABLED`] and the
    /// others): where, and the key pairs that unwrap their data keys. `None` unless asked for.
    pub aiven: Option<super::aiven::AivenConfig>,
}

impl Default for TieredConfig {
    /// The declared defaults.
    fn default() -> Self {
        TieredConfig {
            key_prefix: String::new(),
            chunk_size: CHUNK_SIZE.default_int(),
            block_size: CHUNK_BLOCK_SIZE.default_int(),
            fetch_concurrency: FETCH_CONCURRENCY.default_int(),
            fetch_timeout: bound(FETCH_TIMEOUT_MS.default_int()),
            copy_timeout: bound(COPY_TIMEOUT_MS.default_int()),
            copy_cleanup_recheck: bound(COPY_CLEANUP_RECHECK_MS.default_int()),
            verify_checksums: COPY_VERIFY_CHECKSUMS.default_bool(),
            manifest_cache_entries: MANIFEST_CACHE_ENTRIES.default_int(),
            manifest_cache_ttl: std::time::Duration::from_millis(MANIFEST_CACHE_TTL_MS.default_int()),
            fetch_cache_bytes: FETCH_CACHE_BYTES.default_int(),
            fetch_prefetch_chunks: FETCH_PREFETCH_CHUNKS.default_int(),
            fetch_cache_disk: None,
            index_cache_bytes: INDEX_CACHE_BYTES.default_int(),
            compression: None,
            encryption: None,
            segment_layout: super::layout::SegmentLayout::Split,
            aiven: None,
        }
    }
}

impl TieredConfig {
    /// Reads the settings from `r`, with the declared defaults for absent keys. No KMS client: a KMS key
    /// (`encryption.key.<id>.kms.key.id`) is a config error naming its setting; a host with one reads the
    /// settings with [`TieredConfig::read_with_kms`].
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        Self::read_with_kms(r, None)
    }

    /// [`TieredConfig::read`], with `kms_connector` making the KEK of each KMS key (the host's KMS client;
    /// the facade's store builder passes AWS KMS's).
    pub fn read_with_kms(r: &mut ConfigReader<'_>, kms_connector: Option<&dyn KmsConnector>) -> Result<Self> {
        let key_prefix = r.get_string(&KEY_PREFIX).unwrap_or("").to_string();
        if !key_prefix.is_empty() {
            crate::backend::validate_key(&format!("{key_prefix}x"))
                .map_err(|e| Error::config(KEY_PREFIX.key, e.to_string()))?;
        }
        let chunk_size = r.get_int(&CHUNK_SIZE)?;
        let block_size = r.get_int(&CHUNK_BLOCK_SIZE)?;
        Ok(TieredConfig {
            key_prefix,
            chunk_size,
            block_size,
            fetch_concurrency: r.get_int(&FETCH_CONCURRENCY)?,
            fetch_timeout: bound(r.get_int(&FETCH_TIMEOUT_MS)?),
            copy_timeout: bound(r.get_int(&COPY_TIMEOUT_MS)?),
            copy_cleanup_recheck: bound(r.get_int(&COPY_CLEANUP_RECHECK_MS)?),
            verify_checksums: r.get_bool(&COPY_VERIFY_CHECKSUMS)?,
            manifest_cache_entries: r.get_int(&MANIFEST_CACHE_ENTRIES)?,
            manifest_cache_ttl: std::time::Duration::from_millis(r.get_int(&MANIFEST_CACHE_TTL_MS)?),
            fetch_cache_bytes: r.get_int(&FETCH_CACHE_BYTES)?,
            fetch_prefetch_chunks: r.get_int(&FETCH_PREFETCH_CHUNKS)?,
            fetch_cache_disk: read_disk_cache(r)?,
            index_cache_bytes: r.get_int(&INDEX_CACHE_BYTES)?,
            compression: read_compression(r, chunk_size, block_size)?,
            encryption: KeyRing::read(r, kms_connector)?
                .map(|(keyring, encrypt)| EncryptionConfig { keyring, encrypt }),
            segment_layout: read_segment_layout(r)?,
            aiven: super::aiven::AivenConfig::read(r)?,
        })
    }
}

/// A `*.timeout.ms` setting as a bound: 0 is none.
fn bound(ms: u64) -> Option<std::time::Duration> {
    (ms > 0).then(|| std::time::Duration::from_millis(ms))
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
    fn the_defaults_are_the_declared_ones() {
        let empty = props::<_, &str, &str>([]);
        assert_eq!(TieredConfig::read(&mut ConfigReader::new(&empty)).unwrap(), TieredConfig::default());
        let d = TieredConfig::default();
        assert_eq!((d.chunk_size, d.block_size, d.fetch_concurrency), (4 << 20, 64 << 10, 4));
        assert_eq!(d.manifest_cache_ttl, std::time::Duration::from_secs(3600));
    }

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
    fn the_frame_size_is_whole_blocks_of_at_most_a_chunk() {
        let read = |pairs: &[(&str, &str)]| {
            let mut p = props(pairs.iter().copied());
            p.insert("compression.enabled".into(), "true".into());
            TieredConfig::read(&mut ConfigReader::new(&p)).map(|c| c.compression.unwrap().frame_size)
        };
        // (settings, the frame size)
        let good: [(&[(&str, &str)], u32); 8] = [
            (&[], 262_144),
            (&[("compression.frame.size", "0")], 0),
            (&[("compression.frame.size", "1048576")], 1 << 20),
            (&[("compression.frame.size", "4194304")], 4 << 20),
            // Not set: 256 KiB cut to the chunk, or rounded down to whole blocks (at least one).
            (&[("chunk.size", "65536")], 65_536),
            (&[("chunk.size", "100000"), ("chunk.block.size", "4096")], 98_304),
            (&[("chunk.block.size", "49152")], 245_760),
            (&[("chunk.block.size", "1048576")], 1 << 20),
        ];
        for (settings, want) in good {
            assert_eq!(read(settings).unwrap(), want, "{settings:?}");
        }
        // (settings, pieces of the message)
        type Bad = (&'static [(&'static str, &'static str)], &'static [&'static str]);
        let bad: [Bad; 5] = [
            (&[("compression.frame.size", "100000")], &["100000", "`chunk.block.size` (65536)"]),
            (&[("compression.frame.size", "8388608")], &["8388608", "`chunk.size` (4194304)"]),
            (&[("chunk.size", "131072"), ("compression.frame.size", "262144")], &["262144", "(131072)"]),
            (&[("compression.frame.size", "-1")], &["range"]),
            (&[("compression.frame.size", " ")], &["is empty"]),
        ];
        for (settings, says) in bad {
            let e = read(settings).unwrap_err();
            assert_eq!(e.config_key(), Some("compression.frame.size"), "{settings:?}: {e}");
            for piece in says {
                assert!(e.to_string().contains(piece), "{settings:?}: {e}");
            }
        }
        // Checked with compression off too, so a mistake surfaces before compression is turned on.
        let p = props([("compression.frame.size", "1000")]);
        let e = TieredConfig::read(&mut ConfigReader::new(&p)).unwrap_err();
        assert_eq!(e.config_key(), Some("compression.frame.size"), "{e}");
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
        assert_eq!(
            (
                COMPRESSION_LEVEL.default_int(),
                COMPRESSION_HEURISTIC.default_bool(),
                COMPRESSION_MIN_SAVING.default_int()
            ),
            (on.level, on.heuristic, on.min_saving_percent),
            "the declared defaults are CompressionConfig's"
        );
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
