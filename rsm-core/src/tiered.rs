//! [`TieredStorage`]: the one [`RemoteStorageManager`] implementation, over any [`StorageBackend`].
//!
//! Remote layout of a segment (three objects, so a copy costs three uploads):
//! `{prefix}{topic}-{topicId}/{partition}/{startOffset:020}-{segmentId}.log` (the `.log` file as is),
//! `….indexes` (the five indexes back to back) and `….manifest` (written last: the commit point).

use crate::backend::{ByteStream, StorageBackend};
use crate::config::ConfigReader;
use crate::error::{Error, ErrorKind, Result};
use crate::format::batch::{BatchIter, batch_size_at};
use crate::format::chunk::{ChunkEntry, Chunker};
use crate::format::index::{read_offset_index, read_time_index};
use crate::format::manifest::{IndexLocation, Manifest};
use crate::model::{CustomMetadata, IndexType, LogSegmentData, RemoteLogSegmentMetadata, TopicIdPartition, Uuid};
use crate::rsm::RemoteStorageManager;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::collections::HashMap;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The most a fetch that starts inside a chunk reads before yielding its first bytes: one default consumer
/// fetch (`max.partition.fetch.bytes`, 1 MiB) plus room for the batches the broker reads past between the
/// offset-index entry it starts from and the fetch offset, so that the broker's usual fetch is one ranged read.
const FIRST_READ_BYTES: u64 = (1 << 20) + (128 << 10);

/// Settings of [`TieredStorage`], read from the keys named on each field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TieredConfig {
    /// `key.prefix`: prepended to every object key (default empty).
    pub key_prefix: String,
    /// `chunk.size`: target chunk size in bytes, 64 KiB to 256 MiB (default 4 MiB).
    pub chunk_size: u32,
    /// `fetch.concurrency`: ranged reads in flight per fetch, 1 to 64 (default 4).
    pub fetch_concurrency: usize,
    /// `copy.verify.checksums`: check every batch's CRC-32C while copying (default true).
    pub verify_checksums: bool,
    /// `manifest.cache.entries`: manifests kept in memory, 0 to 1,000,000 (default 1000).
    pub manifest_cache_entries: usize,
}

impl Default for TieredConfig {
    fn default() -> Self {
        TieredConfig {
            key_prefix: String::new(),
            chunk_size: 4 << 20,
            fetch_concurrency: 4,
            verify_checksums: true,
            manifest_cache_entries: 1000,
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
            fetch_concurrency: r.int_in("fetch.concurrency", d.fetch_concurrency, 1..=64)?,
            verify_checksums: r.bool("copy.verify.checksums", d.verify_checksums)?,
            manifest_cache_entries: r.int_in("manifest.cache.entries", d.manifest_cache_entries, 0..=1_000_000)?,
        })
    }
}

/// The object keys of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentKeys {
    /// The `.log` data.
    pub log: String,
    /// The index bundle.
    pub indexes: String,
    /// The manifest.
    pub manifest: String,
}

/// The key prefix of a partition: `{prefix}{topic}-{topicId}/{partition}/`.
pub fn partition_prefix(key_prefix: &str, tp: &TopicIdPartition) -> String {
    format!("{key_prefix}{}-{}/{}/", tp.topic_partition.topic, tp.topic_id, tp.topic_partition.partition)
}

/// The keys of the segment `metadata` describes.
pub fn segment_keys(key_prefix: &str, metadata: &RemoteLogSegmentMetadata) -> SegmentKeys {
    let id = &metadata.remote_log_segment_id;
    let base =
        format!("{}{:020}-{}", partition_prefix(key_prefix, &id.topic_id_partition), metadata.start_offset, id.id);
    SegmentKeys { log: format!("{base}.log"), indexes: format!("{base}.indexes"), manifest: format!("{base}.manifest") }
}

/// Checks the chunks a fetch covers whole as their bytes stream past in order: each chunk's CRC-32C is
/// summed across the reads that carry it and compared when its last byte arrives. The chunk the fetch
/// starts inside (its start is never read) is not checked.
struct ChunkCheck {
    manifest: Arc<Manifest>,
    key: String,
    /// Position of the next byte expected.
    next: u64,
    /// Index of the chunk holding `next`.
    chunk: usize,
    /// CRC-32C of the current chunk's bytes so far, when it was seen from its start.
    crc: Option<u32>,
}

impl ChunkCheck {
    fn new(manifest: Arc<Manifest>, key: String, start: u64) -> Self {
        let chunk = manifest.chunk_at_position(start).unwrap_or(manifest.chunks.len());
        let whole = manifest.chunks.get(chunk).is_some_and(|c| c.position() == start);
        ChunkCheck { manifest, key, next: start, chunk, crc: whole.then_some(0) }
    }

    /// Takes the next bytes of the stream; fails on a chunk whose last byte is among them and whose
    /// CRC-32C is not its entry's.
    fn feed(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let Some(c) = self.manifest.chunks.get(self.chunk) else {
                return Err(Error::corrupt(format!("object {}: bytes past its last chunk", self.key)));
            };
            let n = ((c.end() - self.next) as usize).min(bytes.len());
            self.crc = self.crc.map(|crc| crc32c::crc32c_append(crc, &bytes[..n]));
            self.next += n as u64;
            bytes = &bytes[n..];
            if self.next == c.end() {
                if let Some(crc) = self.crc {
                    c.check_crc(crc, &self.key)?;
                }
                self.chunk += 1;
                self.crc = Some(0);
            }
        }
        Ok(())
    }
}

/// Cached manifests with the tick of their last use.
type CacheMap = HashMap<Uuid, (Arc<Manifest>, u64)>;

/// A small LRU of decoded manifests. Only successes are cached.
#[derive(Debug, Default)]
struct ManifestCache {
    capacity: usize,
    inner: Mutex<(u64, CacheMap)>,
}

impl ManifestCache {
    fn get(&self, id: &Uuid) -> Option<Arc<Manifest>> {
        let mut g = self.inner.lock().expect("manifest cache lock");
        g.0 += 1;
        let tick = g.0;
        g.1.get_mut(id).map(|e| {
            e.1 = tick;
            e.0.clone()
        })
    }

    fn put(&self, id: Uuid, m: Arc<Manifest>) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock().expect("manifest cache lock");
        g.0 += 1;
        let tick = g.0;
        if g.1.len() >= self.capacity && !g.1.contains_key(&id) {
            let oldest = g.1.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| *k);
            if let Some(k) = oldest {
                g.1.remove(&k);
            }
        }
        g.1.insert(id, (m, tick));
    }

    fn remove(&self, id: &Uuid) {
        self.inner.lock().expect("manifest cache lock").1.remove(id);
    }
}

/// Kafka's remote storage contract over any backend.
#[derive(Debug)]
pub struct TieredStorage {
    backend: Arc<dyn StorageBackend>,
    config: TieredConfig,
    manifests: ManifestCache,
}

/// What [`TieredStorage::verify`] checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Chunks read and checked.
    pub chunks: usize,
    /// Log bytes read.
    pub bytes: u64,
    /// Index files read and checked.
    pub indexes: usize,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::from_io(path.display(), e)
}

/// Reads the first `len` bytes of the log at `path` in blocks, checks every batch (CRC-32C when `verify`)
/// and cuts the chunk table. Memory: one block, or one batch when a batch is larger.
fn scan_log(path: &Path, len: u64, chunker: &mut Chunker, verify: bool) -> Result<()> {
    const BLOCK: usize = 1 << 20;
    let mut file = std::fs::File::open(path).map_err(io_err(path))?.take(len);
    let mut buf = vec![0u8; BLOCK];
    let (mut filled, mut file_pos, mut read_total) = (0usize, 0u64, 0u64);
    loop {
        while filled < buf.len() && read_total < len {
            let n = file.read(&mut buf[filled..]).map_err(io_err(path))?;
            if n == 0 {
                return Err(Error::invalid(format!(
                    "{}: ended after {read_total} bytes, expected {len}",
                    path.display()
                )));
            }
            filled += n;
            read_total += n as u64;
        }
        let mut it = BatchIter::new(&buf[..filled], file_pos, verify);
        while let Some(b) = it.next_complete()? {
            chunker.push(&b);
        }
        let consumed = it.consumed();
        if consumed == 0 && filled == buf.len() {
            // One batch larger than the buffer: grow to hold it.
            let need = batch_size_at(&buf[..filled], file_pos)?.expect("a full buffer holds a header");
            buf.resize(need, 0);
            continue;
        }
        buf.copy_within(consumed..filled, 0);
        filled -= consumed;
        file_pos += consumed as u64;
        if read_total == len {
            if filled > 0 {
                return Err(Error::corrupt(format!("truncated record batch at position {file_pos}")));
            }
            return Ok(());
        }
    }
}

impl TieredStorage {
    /// A storage manager over `backend`.
    pub fn new(backend: Arc<dyn StorageBackend>, config: TieredConfig) -> Self {
        let manifests = ManifestCache { capacity: config.manifest_cache_entries, ..Default::default() };
        TieredStorage { backend, config, manifests }
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn StorageBackend> {
        &self.backend
    }

    /// The settings.
    pub fn config(&self) -> &TieredConfig {
        &self.config
    }

    /// The keys of a segment.
    pub fn keys(&self, metadata: &RemoteLogSegmentMetadata) -> SegmentKeys {
        segment_keys(&self.config.key_prefix, metadata)
    }

    /// Reads and decodes the manifest at `key`.
    pub async fn read_manifest(&self, key: &str) -> Result<Manifest> {
        let bytes = self.backend.get_range(key, 0..u64::MAX).await?;
        Manifest::decode(&bytes, key)
    }

    /// The manifest of a segment (cached); not found when the segment was never committed or was deleted.
    pub async fn manifest(&self, metadata: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        metadata.validate()?;
        let id = metadata.remote_log_segment_id.id;
        if let Some(m) = self.manifests.get(&id) {
            return Ok(m);
        }
        let key = self.keys(metadata).manifest;
        let m = self.read_manifest(&key).await.map_err(|e| match e.kind() {
            ErrorKind::NotFound => {
                Error::not_found(format!("segment {} (manifest {key})", metadata.remote_log_segment_id))
            }
            _ => e,
        })?;
        if m.metadata.remote_log_segment_id != metadata.remote_log_segment_id {
            return Err(Error::corrupt(format!(
                "manifest {key} describes segment {}",
                m.metadata.remote_log_segment_id
            )));
        }
        let m = Arc::new(m);
        self.manifests.put(id, m.clone());
        Ok(m)
    }

    /// Every committed segment under the partition `tp` (or under the whole prefix when `None`), by key.
    pub async fn list_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<Manifest>> {
        let prefix = match tp {
            Some(tp) => partition_prefix(&self.config.key_prefix, tp),
            None => self.config.key_prefix.clone(),
        };
        let mut out = Vec::new();
        for o in self.backend.list(&prefix).await? {
            if o.key.ends_with(".manifest") {
                out.push(self.read_manifest(&o.key).await?);
            }
        }
        Ok(out)
    }

    /// Deletes the objects of segments that have no manifest (the leftovers of failed copies whose
    /// cleanup did not finish) and were last written more than `min_age` ago, so copies still in flight
    /// are left alone. Returns the deleted keys. Covers one partition, or the whole prefix when `None`.
    pub async fn sweep_orphans(
        &self,
        tp: Option<&TopicIdPartition>,
        min_age: std::time::Duration,
    ) -> Result<Vec<String>> {
        let prefix = match tp {
            Some(tp) => partition_prefix(&self.config.key_prefix, tp),
            None => self.config.key_prefix.clone(),
        };
        let objects = self.backend.list(&prefix).await?;
        let committed: std::collections::HashSet<&str> =
            objects.iter().filter_map(|o| o.key.strip_suffix(".manifest")).collect();
        let now = std::time::SystemTime::now();
        let orphans: Vec<String> = objects
            .iter()
            .filter(|o| {
                let stem = o.key.rsplit_once('.').map(|(s, _)| s).unwrap_or(&o.key);
                let is_segment_object = o.key.ends_with(".log") || o.key.ends_with(".indexes");
                let old = o.last_modified.is_some_and(|t| now.duration_since(t).unwrap_or_default() >= min_age);
                is_segment_object && old && !committed.contains(stem)
            })
            .map(|o| o.key.clone())
            .collect();
        if !orphans.is_empty() {
            tracing::info!(count = orphans.len(), prefix = %prefix, "deleting objects of uncommitted segments");
            self.backend.delete_many(&orphans).await?;
        }
        Ok(orphans)
    }

    async fn upload_indexes(
        &self,
        key: &str,
        data: &LogSegmentData,
        base_offset: i64,
        log_len: u64,
    ) -> Result<[Option<IndexLocation>; 5]> {
        async fn read(p: &PathBuf) -> Result<Bytes> {
            Ok(Bytes::from(tokio::fs::read(p).await.map_err(io_err(p))?))
        }
        let offset = read(&data.offset_index).await?;
        read_offset_index(&data.offset_index.display().to_string(), base_offset, &offset, log_len)?;
        let time = read(&data.time_index).await?;
        read_time_index(&data.time_index.display().to_string(), base_offset, &time)?;
        let snapshot = read(&data.producer_snapshot_index).await?;
        let txn = match &data.transaction_index {
            Some(p) => Some(read(p).await?),
            None => None,
        };
        let parts: [Option<Bytes>; 5] =
            [Some(offset), Some(time), Some(snapshot), txn, Some(data.leader_epoch_index.clone())];
        let mut locations = [None; 5];
        let mut position = 0u64;
        for (slot, part) in locations.iter_mut().zip(&parts) {
            if let Some(b) = part {
                *slot = Some(IndexLocation { position, length: b.len() as u64, crc32c: crc32c::crc32c(b) });
                position += b.len() as u64;
            }
        }
        let stream = futures::stream::iter(parts.into_iter().flatten().map(Ok));
        self.backend.put_stream(key, Box::pin(stream)).await?;
        Ok(locations)
    }

    async fn copy_inner(&self, md: &RemoteLogSegmentMetadata, data: &LogSegmentData, keys: &SegmentKeys) -> Result<()> {
        let log_path = data.log_segment.clone();
        let log_len = tokio::fs::metadata(&log_path).await.map_err(io_err(&log_path))?.len();
        if log_len > i32::MAX as u64 {
            return Err(Error::invalid(format!(
                "{}: {log_len} bytes, above Kafka's 2 GiB segment limit",
                log_path.display()
            )));
        }
        if log_len != md.segment_size_in_bytes as u64 {
            tracing::warn!(segment = %md.remote_log_segment_id, log_len, metadata_size = md.segment_size_in_bytes,
                "log file size differs from the metadata's segment size; copying the file as it is");
        }
        let verify = self.config.verify_checksums;
        let mut chunker = Chunker::new(self.config.chunk_size as u64, md.start_offset, md.remote_log_segment_id.id);
        let scan_path = log_path.clone();
        let scan = tokio::task::spawn_blocking(move || {
            scan_log(&scan_path, log_len, &mut chunker, verify).map(|_| chunker.finish())
        });
        // The scan and both uploads run at once; all three finish before any result is judged, so a
        // cleanup never races an upload still in flight.
        let (scan, log_up, idx_up) = tokio::join!(
            scan,
            self.backend.put_file(&keys.log, &log_path, log_len),
            self.upload_indexes(&keys.indexes, data, md.start_offset, log_len)
        );
        let chunks: Vec<ChunkEntry> =
            scan.map_err(|e| Error::storage("log scan task failed", e))?.map_err(|e| e.context(log_path.display()))?;
        log_up?;
        let indexes = idx_up?;
        if let (Some(first), Some(last)) = (chunks.first(), chunks.last())
            && (first.first_offset < md.start_offset || last.last_offset > md.end_offset)
        {
            return Err(Error::invalid(format!(
                "{}: holds offsets {}..={}, outside the metadata's {}..={}",
                log_path.display(),
                first.first_offset,
                last.last_offset,
                md.start_offset,
                md.end_offset
            )));
        }
        let manifest = Manifest {
            metadata: md.clone(),
            log_length: log_len,
            chunk_target: self.config.chunk_size,
            indexes,
            chunks,
        };
        self.backend.put_bytes(&keys.manifest, Bytes::from(manifest.encode())).await?;
        self.manifests.put(md.remote_log_segment_id.id, Arc::new(manifest));
        Ok(())
    }

    /// Streams the bytes `start..end` of a committed segment's log, in order. The first ranged read takes
    /// at most [`FIRST_READ_BYTES`] (the broker's usual fetch, whatever the chunk size and wherever it
    /// starts, is that one read); after it, one read per chunk. The first two reads go one at a time (a
    /// reader that stops early has cost at most one read more than it used), then up to `fetch.concurrency`
    /// are in flight. Every read is checked for length, and every chunk the fetch covers whole is checked
    /// against its CRC-32C before its last bytes are yielded: a chunk read whole in one read (every chunk
    /// after the first read) is checked before any of its bytes are yielded; one that straddles the end of
    /// the first read has its first part yielded before the check. The chunks the fetch starts or ends
    /// inside are checked for length only.
    pub fn stream_range(&self, manifest: Arc<Manifest>, key: String, start: u64, end: u64) -> ByteStream {
        let end = end.min(manifest.chunks.last().map_or(0, |c| c.end()));
        let mut reads: Vec<Range<u64>> = Vec::new();
        if start < end && manifest.chunk_at_position(start).is_some() {
            reads.push(start..end.min(start + FIRST_READ_BYTES));
            let mut at = reads[0].end;
            while let Some(i) = manifest.chunk_at_position(at).filter(|_| at < end) {
                let e = end.min(manifest.chunks[i].end());
                reads.push(at..e);
                at = e;
            }
        }
        let backend = self.backend.clone();
        let read = {
            let key = key.clone();
            move |r: Range<u64>| {
                let backend = backend.clone();
                let key = key.clone();
                async move {
                    let bytes = backend.get_range(&key, r.clone()).await?;
                    if bytes.len() as u64 != r.end - r.start {
                        return Err(Error::corrupt(format!(
                            "object {key}: read {}..{} returned {} bytes",
                            r.start,
                            r.end,
                            bytes.len()
                        )));
                    }
                    Ok(bytes)
                }
            }
        };
        let rest = reads.split_off(reads.len().min(2));
        let concurrency = self.config.fetch_concurrency;
        let head = futures::stream::iter(reads).then(read.clone());
        let rest = futures::stream::iter(rest).map(read).buffered(concurrency);
        let mut check = ChunkCheck::new(manifest, key, start);
        Box::pin(head.chain(rest).map(move |r| r.and_then(|b| check.feed(&b).map(|()| b))))
    }

    /// Byte position of the first batch holding `offset` or a later one, from the manifest and one chunk.
    pub async fn position_of_offset(&self, md: &RemoteLogSegmentMetadata, offset: i64) -> Result<u32> {
        let m = self.manifest(md).await?;
        let Some(i) = m.chunk_for_offset(offset) else {
            return Err(Error::invalid(format!(
                "offset {offset} is past the end of segment {} (last offset {})",
                md.remote_log_segment_id, md.end_offset
            )));
        };
        self.find_in_chunk(&m, i, |b| b.last_offset() >= offset).await?.ok_or_else(|| {
            Error::corrupt(format!(
                "segment {}: chunk {i} has no batch reaching offset {offset}",
                md.remote_log_segment_id
            ))
        })
    }

    /// Byte position of the first batch with a timestamp at or after `timestamp`, or `None` when no record
    /// in the segment is that late.
    pub async fn position_of_timestamp(&self, md: &RemoteLogSegmentMetadata, timestamp: i64) -> Result<Option<u32>> {
        let m = self.manifest(md).await?;
        let Some(i) = m.chunk_for_timestamp(timestamp) else {
            return Ok(None);
        };
        self.find_in_chunk(&m, i, |b| b.max_timestamp() >= timestamp).await
    }

    async fn find_in_chunk(
        &self,
        m: &Arc<Manifest>,
        i: usize,
        pred: impl Fn(&crate::format::batch::Batch<'_>) -> bool,
    ) -> Result<Option<u32>> {
        let c = m.chunks[i];
        let key = self.keys(&m.metadata).log;
        let bytes = self.backend.get_range(&key, c.position()..c.end()).await?;
        c.verify(&bytes, &key)?;
        for b in BatchIter::new(&bytes, c.position(), false) {
            let b = b.map_err(|e| e.context(&key))?;
            if pred(&b) {
                return Ok(Some(b.position() as u32));
            }
        }
        Ok(None)
    }

    /// Reads every chunk and index of a segment and checks them against the manifest.
    pub async fn verify(&self, md: &RemoteLogSegmentMetadata) -> Result<VerifyReport> {
        let m = self.manifest(md).await?;
        let key = self.keys(md).log;
        let mut report = VerifyReport::default();
        let mut s = self.stream_range(m.clone(), key, 0, m.log_length);
        while let Some(b) = s.next().await {
            report.bytes += b?.len() as u64;
            report.chunks += 1;
        }
        for t in IndexType::ALL {
            if m.index(t).is_some() {
                self.fetch_index(md, t).await?;
                report.indexes += 1;
            }
        }
        Ok(report)
    }
}

#[async_trait]
impl RemoteStorageManager for TieredStorage {
    async fn copy_log_segment_data(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<CustomMetadata>> {
        metadata.validate()?;
        let keys = self.keys(metadata);
        self.manifests.remove(&metadata.remote_log_segment_id.id);
        let result = self.copy_inner(metadata, data, &keys).await;
        if let Err(e) = &result {
            tracing::warn!(segment = %metadata.remote_log_segment_id, error = %e.full_message(), "copy failed; removing its objects");
            let all = [keys.manifest, keys.log, keys.indexes];
            if let Err(ce) = self.backend.delete_many(&all).await {
                tracing::warn!(segment = %metadata.remote_log_segment_id, error = %ce.full_message(),
                    "cleanup after a failed copy failed; the objects are garbage without a manifest");
            }
        }
        result.map(|_| None).map_err(|e| e.context(format!("copy of segment {}", metadata.remote_log_segment_id)))
    }

    async fn fetch_log_segment(
        &self,
        metadata: &RemoteLogSegmentMetadata,
        start_position: i32,
        end_position: Option<i32>,
    ) -> Result<ByteStream> {
        let m = self.manifest(metadata).await?;
        let id = &metadata.remote_log_segment_id;
        if start_position < 0 || start_position as u64 >= m.log_length {
            return Err(Error::invalid(format!(
                "start position {start_position} is outside segment {id} of {} bytes",
                m.log_length
            )));
        }
        let end = match end_position {
            Some(e) if e < start_position => {
                return Err(Error::invalid(format!(
                    "end position {e} is before start position {start_position} in segment {id}"
                )));
            }
            Some(e) => (e as u64 + 1).min(m.log_length),
            None => m.log_length,
        };
        let key = self.keys(metadata).log;
        Ok(self.stream_range(m, key, start_position as u64, end))
    }

    async fn fetch_index(&self, metadata: &RemoteLogSegmentMetadata, index_type: IndexType) -> Result<Bytes> {
        let m = self.manifest(metadata).await?;
        let id = &metadata.remote_log_segment_id;
        let loc = m.index(index_type).ok_or_else(|| Error::not_found(format!("{index_type} index of segment {id}")))?;
        let key = self.keys(metadata).indexes;
        let bytes = self.backend.get_range(&key, loc.position..loc.position + loc.length).await?;
        if bytes.len() as u64 != loc.length || crc32c::crc32c(&bytes) != loc.crc32c {
            return Err(Error::corrupt(format!(
                "{index_type} index of segment {id} in {key}: {} bytes do not match the manifest's length {} and CRC",
                bytes.len(),
                loc.length
            )));
        }
        Ok(bytes)
    }

    async fn delete_log_segment_data(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        metadata.validate()?;
        let keys = self.keys(metadata);
        self.manifests.remove(&metadata.remote_log_segment_id.id);
        // The manifest first: from then on the segment does not exist for readers.
        self.backend.delete(&keys.manifest).await?;
        self.backend.delete_many(&[keys.log, keys.indexes]).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{CountingBackend, MemoryBackend, ObjectMeta};
    use crate::error::ErrorKind;
    use crate::testkit::rsm_contract::{Fixture, collect};
    use std::ops::Range;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Tracks how many ranged reads are in flight at once, and the reads started (a store bills a request
    /// that was started and then cancelled) with the bytes they asked for. Each read waits 5 ms.
    #[derive(Debug)]
    struct InFlight {
        inner: Arc<dyn StorageBackend>,
        now: AtomicUsize,
        max: AtomicUsize,
        started: AtomicUsize,
        started_bytes: AtomicUsize,
    }

    impl InFlight {
        fn new() -> Self {
            InFlight {
                inner: Arc::new(MemoryBackend::new()),
                now: 0.into(),
                max: 0.into(),
                started: 0.into(),
                started_bytes: 0.into(),
            }
        }
    }

    #[async_trait]
    impl StorageBackend for InFlight {
        async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
            self.inner.put_file(key, path, len).await
        }
        async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
            self.inner.put_stream(key, data).await
        }
        async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
            self.started.fetch_add(1, Ordering::SeqCst);
            self.started_bytes.fetch_add((range.end - range.start) as usize, Ordering::SeqCst);
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let r = self.inner.get_range(key, range).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            r
        }
        async fn delete(&self, key: &str) -> Result<()> {
            self.inner.delete(key).await
        }
        async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
            self.inner.list(prefix).await
        }
    }

    /// A segment of about 16 MiB in 4 MiB chunks (the default) copied to a backend: big enough for a
    /// fetch to take several reads after the first.
    struct Big {
        rsm: TieredStorage,
        md: RemoteLogSegmentMetadata,
        log: Vec<u8>,
        m: Arc<Manifest>,
        _dir: tempfile::TempDir,
    }

    async fn big_segment(backend: Arc<dyn StorageBackend>) -> Big {
        let dir = tempfile::tempdir().unwrap();
        let partition = crate::testkit::fixture_partition(dir.path(), 16 << 20, 100_000);
        let seg = partition.closed_segments()[0].clone();
        let md = partition.segment_metadata(&seg, 1, 0).unwrap();
        let data = partition.segment_data(&seg).unwrap();
        let rsm = TieredStorage::new(backend, TieredConfig::default());
        rsm.copy_log_segment_data(&md, &data).await.unwrap();
        let log = std::fs::read(&data.log_segment).unwrap();
        let m = rsm.manifest(&md).await.unwrap();
        assert!(m.chunks.len() >= 4 && m.chunks[0].data_length > 3 << 20, "4 MiB chunks: {}", m.chunks.len());
        Big { rsm, md, log, m, _dir: dir }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_run_concurrently_but_bounded_and_in_order() {
        let tracker = Arc::new(InFlight::new());
        let big = big_segment(tracker.clone()).await;
        for concurrency in [1, 3] {
            tracker.max.store(0, Ordering::SeqCst);
            let cfg = TieredConfig { fetch_concurrency: concurrency, ..TieredConfig::default() };
            let rsm = TieredStorage::new(tracker.clone(), cfg);
            let got = collect(rsm.fetch_log_segment(&big.md, 0, None).await.unwrap()).await.unwrap();
            assert!(got == big.log, "concurrency {concurrency}: bytes in order");
            assert_eq!(
                tracker.max.load(Ordering::SeqCst),
                concurrency,
                "reads in flight at most and at least {concurrency}"
            );
        }
    }

    #[tokio::test]
    async fn sweep_removes_only_old_uncommitted_objects() {
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let f = Fixture::new(backend.clone(), "sweep");
        let (_, md0, data0) = f.segment(0);
        let (_, md1, _) = f.segment(1);
        f.rsm.copy_log_segment_data(&md0, &data0).await.unwrap();
        // The leftovers of a copy of segment 1 that died before its manifest.
        let orphan = f.rsm.keys(&md1);
        backend.put_bytes(&orphan.log, Bytes::from_static(b"partial")).await.unwrap();
        backend.put_bytes(&orphan.indexes, Bytes::from_static(b"partial")).await.unwrap();
        let tp = md0.remote_log_segment_id.topic_id_partition.clone();
        let young = f.rsm.sweep_orphans(Some(&tp), std::time::Duration::from_secs(3600)).await.unwrap();
        assert!(young.is_empty(), "a copy that may be in flight is left alone: {young:?}");
        let mut swept = f.rsm.sweep_orphans(Some(&tp), std::time::Duration::ZERO).await.unwrap();
        swept.sort();
        let mut want = vec![orphan.log.clone(), orphan.indexes.clone()];
        want.sort();
        assert_eq!(swept, want);
        let left = backend.list(&partition_prefix(&f.config.key_prefix, &tp)).await.unwrap();
        assert_eq!(left.len(), 3, "the committed segment stays whole: {left:?}");
        assert!(collect(f.fresh_rsm().fetch_log_segment(&md0, 0, None).await.unwrap()).await.is_ok());
    }

    #[tokio::test]
    async fn a_fetch_inside_a_chunk_reads_at_most_a_fetch_first() {
        let counting = Arc::new(CountingBackend::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let Big { rsm, md, log, .. } = big_segment(counting).await;
        let start = 1000i32;
        let bytes_before = counts.get.bytes();
        let mut s = rsm.fetch_log_segment(&md, start, None).await.unwrap();
        let first = s.next().await.unwrap().unwrap();
        assert_eq!(first.len() as u64, FIRST_READ_BYTES, "the first read is cut");
        assert_eq!(counts.get.bytes() - bytes_before, FIRST_READ_BYTES);
        // The rest still arrives whole and in order.
        let mut all = first.to_vec();
        while let Some(b) = s.next().await {
            all.extend_from_slice(&b.unwrap());
        }
        assert!(all == log[start as usize..]);
    }

    /// The broker's read of one fetch: about a mebibyte from a batch boundary, then close. It is one ranged
    /// read wherever it starts, and a reader that wants more costs one read more, not a read-ahead burst.
    #[tokio::test]
    async fn a_broker_fetch_costs_one_or_two_ranged_reads() {
        let tracker = Arc::new(InFlight::new());
        let Big { rsm, md, log, m, .. } = big_segment(tracker.clone()).await;
        let c1 = m.chunks[1];
        let fetch = (1u64 << 20) + (16 << 10);
        let past = |at: u64| m.chunks[m.chunk_at_position(at).unwrap()].end() - at;
        // (case, start, bytes the reader takes, reads started, bytes asked for)
        let cases = [
            ("inside a chunk, far from its end", c1.position() + 1000, fetch, 1, FIRST_READ_BYTES),
            ("at a chunk's start", c1.position(), fetch, 1, FIRST_READ_BYTES),
            ("near a chunk's end, across it", c1.end() - (100 << 10), fetch, 1, FIRST_READ_BYTES),
            (
                "a little more than the first read: then the rest of that chunk",
                c1.position() + 1000,
                FIRST_READ_BYTES + 1,
                2,
                FIRST_READ_BYTES + past(c1.position() + 1000 + FIRST_READ_BYTES),
            ),
        ];
        for (case, start, wanted, requests, bytes) in cases {
            let (r0, b0) = (tracker.started.load(Ordering::SeqCst), tracker.started_bytes.load(Ordering::SeqCst));
            let mut s = rsm.fetch_log_segment(&md, start as i32, None).await.unwrap();
            let mut got = Vec::new();
            while (got.len() as u64) < wanted {
                got.extend_from_slice(&s.next().await.unwrap().unwrap());
            }
            drop(s);
            tokio::task::yield_now().await;
            assert!(got[..] == log[start as usize..start as usize + got.len()], "{case}: bytes");
            assert_eq!(tracker.started.load(Ordering::SeqCst) - r0, requests, "{case}: ranged reads started");
            assert_eq!((tracker.started_bytes.load(Ordering::SeqCst) - b0) as u64, bytes, "{case}: bytes asked for");
        }
    }

    /// A chunk that straddles the end of the first read is still checked, across the two reads.
    #[tokio::test]
    async fn a_chunk_split_across_reads_is_still_checked() {
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let Big { rsm, md, log, m, .. } = big_segment(backend.clone()).await;
        let c1 = m.chunks[1];
        // Start 100 KiB before chunk 1: the first read ends inside chunk 1, the second reads its rest.
        let start = c1.position() - (100 << 10);
        assert!(start + FIRST_READ_BYTES > c1.position() && start + FIRST_READ_BYTES < c1.end());
        let key = rsm.keys(&md).log;
        for (case, damage_at, fails) in [
            ("in the part the first read carries", c1.position() + 1000, true),
            ("in the part the second read carries", c1.end() - 1000, true),
            ("in the chunk the fetch starts inside", start + 10, false),
        ] {
            let mut damaged = log.clone();
            damaged[damage_at as usize] ^= 0x40;
            backend.put_bytes(&key, Bytes::from(damaged)).await.unwrap();
            let fresh = TieredStorage::new(backend.clone(), TieredConfig::default());
            let r = collect(fresh.fetch_log_segment(&md, start as i32, Some(c1.end() as i32 - 1)).await.unwrap()).await;
            match r {
                Err(e) if fails => {
                    assert_eq!(e.kind(), ErrorKind::Corrupt, "{case}: {e}");
                    assert!(e.to_string().contains(&format!("position {}", c1.position())), "{case}: {e}");
                }
                Ok(bytes) if !fails => assert_eq!(bytes.len() as u64, c1.end() - start, "{case}"),
                other => panic!("{case}: {:?}", other.map(|b| b.len())),
            }
        }
    }

    #[tokio::test]
    async fn an_early_close_costs_one_read() {
        let counting = Arc::new(CountingBackend::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let f = Fixture::new(counting, "early-close");
        let (_, md, data) = f.segment(0);
        f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        let (before, bytes_before) = (counts.get.requests(), counts.get.bytes());
        let mut s = f.rsm.fetch_log_segment(&md, 0, None).await.unwrap();
        let first = s.next().await.unwrap().unwrap();
        assert!(first.len() >= 17, "a batch header is there");
        drop(s);
        tokio::task::yield_now().await;
        assert_eq!(counts.get.requests() - before, 1, "one ranged read for the header, not the segment");
        assert!(counts.get.bytes() - bytes_before <= FIRST_READ_BYTES);
    }
}
