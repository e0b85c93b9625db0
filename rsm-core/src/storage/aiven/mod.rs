//! Segments Aiven's plugin stored, read through the same contract as ours (`aiven.read.enabled`): a fetch
//! by position, an index, a delete. [`crate::format::aiven`] holds the format; this module finds a segment's
//! objects, keeps what it found ([`AivenSegments`]) and streams its log checked (`walk`).

mod listing;
mod migrate;
mod positions;
pub mod settings;
mod walk;

use crate::backend::{ByteStream, StorageBackend};
use crate::crypto::AivenDataKey;
use crate::error::{Error, ErrorKind, Result};
use crate::format::aiven::{AivenCustomMetadata, AivenKeys, AivenManifest, decompress_chunk};
use crate::format::index::{check_producer_snapshot, read_offset_index, read_time_index};
use crate::format::trailer::Trailer;
use crate::model::{IndexType, RemoteLogSegmentId, RemoteLogSegmentMetadata, Uuid};
use bytes::Bytes;
use futures::StreamExt;
pub use listing::ListedAivenSegment;
pub use migrate::Migrated;
pub use settings::AivenConfig;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

/// The largest `.rsm-manifest` read (a variable chunk index of a 2 GiB segment takes a few KiB).
const MAX_MANIFEST_BYTES: u64 = 16 << 20;
/// Aiven segments kept found (manifest and unwrapped data key, about 1 KiB each).
const KEPT: usize = 4096;

/// Reads and parses the Aiven manifest at `key`, refusing one of [`MAX_MANIFEST_BYTES`] or more.
async fn read_manifest(backend: &dyn StorageBackend, key: &str) -> Result<AivenManifest> {
    let bytes = backend.get_range(key, 0..MAX_MANIFEST_BYTES).await?;
    if bytes.len() as u64 >= MAX_MANIFEST_BYTES {
        return Err(Error::corrupt(format!("Aiven manifest {key}: {MAX_MANIFEST_BYTES} bytes or more")));
    }
    AivenManifest::parse(&bytes, key)
}

/// An Aiven segment found in the store: its manifest, keys and (when encrypted) unwrapped data key.
#[derive(Debug)]
pub struct AivenSegment {
    /// The segment.
    pub id: RemoteLogSegmentId,
    /// Its first offset.
    pub start_offset: i64,
    /// Its manifest.
    pub manifest: AivenManifest,
    /// Its objects' keys.
    pub keys: AivenKeys,
    data_key: Option<AivenDataKey>,
}

impl AivenSegment {
    /// The original `.log`'s length.
    pub fn log_length(&self) -> u64 {
        self.manifest.chunks.original_file_size as u64
    }

    /// The original bytes of stored piece `stored` (a chunk, or an index when `original_len` is `None`):
    /// opened when encrypted, decompressed when a compressed chunk.
    fn undo(&self, stored: Bytes, original_len: Option<usize>, what: &str) -> Result<Bytes> {
        let opened = match &self.data_key {
            Some(k) => Bytes::from(k.open(&stored, what)?),
            None => stored,
        };
        match original_len {
            Some(n) if self.manifest.compression => Ok(Bytes::from(decompress_chunk(&opened, n, what)?)),
            Some(n) if opened.len() != n => {
                Err(Error::corrupt(format!("{what}: {} bytes stored, {n} expected", opened.len())))
            }
            _ => Ok(opened),
        }
    }
}

/// Finds and reads Aiven segments in one store.
#[derive(Debug)]
pub struct AivenSegments {
    backend: Arc<dyn StorageBackend>,
    config: AivenConfig,
    concurrency: usize,
    /// Segments found, by id; shared with fetches in flight, which forget a segment whose objects are gone.
    found: Found,
}

type Found = Arc<Mutex<lru::LruCache<Uuid, Arc<AivenSegment>>>>;

/// Forgets segment `id` in `found` when `r` failed because an object is gone (another process migrated or
/// deleted the segment): the next fetch looks it up again.
fn forget_if_gone<T>(found: &Found, id: &Uuid, r: Result<T>) -> Result<T> {
    if r.as_ref().is_err_and(|e| e.kind() == ErrorKind::NotFound) {
        found.lock().unwrap_or_else(|p| p.into_inner()).pop(id);
    }
    r
}

impl AivenSegments {
    /// A reader of the Aiven segments of `backend`, with `concurrency` ranged reads in flight per fetch.
    pub fn new(backend: Arc<dyn StorageBackend>, config: AivenConfig, concurrency: usize) -> Self {
        let kept = NonZeroUsize::new(KEPT).expect("non-zero");
        AivenSegments {
            backend,
            config,
            concurrency: concurrency.max(1),
            found: Arc::new(Mutex::new(lru::LruCache::new(kept))),
        }
    }

    /// The keys segment `md` has as an Aiven segment: under `aiven.key.prefix`, or where its custom metadata
    /// (Aiven's tagged fields, when it holds them) says.
    pub fn keys(&self, md: &RemoteLogSegmentMetadata) -> AivenKeys {
        AivenKeys::of(&self.config.key_prefix, md, Self::custom_metadata(md).as_ref())
    }

    /// Aiven's custom metadata of `md`, when it holds some (not ours, and parses as Aiven's).
    fn custom_metadata(md: &RemoteLogSegmentMetadata) -> Option<AivenCustomMetadata> {
        let bytes = &md.custom_metadata.as_ref()?.0;
        if bytes.is_empty() || Trailer::of_metadata(md).is_some() {
            return None;
        }
        AivenCustomMetadata::parse(bytes, &md.remote_log_segment_id.to_string()).ok()
    }

    /// Whether `md`'s custom metadata is Aiven's: the segment is one of its, whatever else is in the store.
    pub fn named_by_custom_metadata(&self, md: &RemoteLogSegmentMetadata) -> bool {
        Self::custom_metadata(md).is_some_and(|c| c != AivenCustomMetadata::default())
    }

    /// The segment with id `id`, if found before and kept.
    pub fn cached(&self, id: &Uuid) -> Option<Arc<AivenSegment>> {
        self.found.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// Forgets segment `id` (deleted).
    pub fn forget(&self, id: &Uuid) {
        self.found.lock().unwrap_or_else(|p| p.into_inner()).pop(id);
    }

    /// Segment `md` as Aiven's plugin stored it: `Ok(None)` when its `.rsm-manifest` is not in the store; an
    /// error when it is there but does not read, names another segment, or its data key does not unwrap.
    pub async fn find(&self, md: &RemoteLogSegmentMetadata) -> Result<Option<Arc<AivenSegment>>> {
        let keys = self.keys(md);
        let manifest = match read_manifest(self.backend.as_ref(), &keys.manifest).await {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        manifest.check_describes(md, &keys.manifest)?;
        let data_key = match &manifest.encryption {
            Some(e) => Some(self.config.key_pairs.unwrap(e, &format!("Aiven manifest {}", keys.manifest))?),
            None => None,
        };
        let id = md.remote_log_segment_id.clone();
        let segment =
            Arc::new(AivenSegment { id: id.clone(), start_offset: md.start_offset, manifest, keys, data_key });
        self.found.lock().unwrap_or_else(|p| p.into_inner()).put(id.id, segment.clone());
        Ok(Some(segment))
    }

    /// Streams the original bytes `start..end` of `segment`'s log, each checked before it is served: by its
    /// chunk's AES-GCM tag when encrypted, otherwise by the CRC of each record batch (`walk`: the fetch
    /// must then start on a batch, as Kafka's do, and a batch the end cuts is read whole to check it).
    pub fn stream(&self, segment: Arc<AivenSegment>, start: u64, end: u64) -> ByteStream {
        let chunks = &segment.manifest.chunks;
        let end = end.min(segment.log_length());
        let (Some(first), Some(last)) = (chunks.chunk_at(start), chunks.chunk_at(end.saturating_sub(1))) else {
            return futures::stream::empty().boxed();
        };
        let read = {
            let (backend, segment, found) = (self.backend.clone(), segment.clone(), self.found.clone());
            move |i: usize| {
                let (backend, segment, found) = (backend.clone(), segment.clone(), found.clone());
                async move {
                    let c = segment.manifest.chunks.chunk(i);
                    let what = format!("chunk {i} of Aiven segment {} ({})", segment.id, segment.keys.log);
                    let read = backend.get_range(&segment.keys.log, c.stored.clone()).await;
                    let stored = forget_if_gone(&found, &segment.id.id, read)?;
                    if stored.len() as u64 != c.stored.end - c.stored.start {
                        return Err(Error::corrupt(format!("{what}: the object ends inside it")));
                    }
                    let len = (c.original.end - c.original.start) as usize;
                    Ok((c.original.start, segment.undo(stored, Some(len), &what)?))
                }
            }
        };
        let wanted = futures::stream::iter(first..=last).map(read.clone()).buffered(self.concurrency);
        if segment.data_key.is_some() {
            // Every chunk was checked by its tag: cut the first and last to the fetch.
            return wanted
                .map(move |r| {
                    r.map(|(at, bytes)| {
                        let from = start.saturating_sub(at).min(bytes.len() as u64) as usize;
                        let to = (end - at).min(bytes.len() as u64) as usize;
                        bytes.slice(from..to)
                    })
                })
                .boxed();
        }
        // A batch the end cuts goes on into the next chunks, read one at a time as the walk needs them.
        let more = futures::stream::iter(last + 1..chunks.len()).then(read);
        let what = format!("Aiven segment {} ({})", segment.id, segment.keys.log);
        walk::checked(wanted.chain(more).boxed(), start, end, segment.log_length(), what)
    }

    /// The bytes of index `t` of `segment`: not found when the segment has none of that kind; an encrypted
    /// index checked by its tag; an offset or time index also by its entries.
    pub async fn index(&self, segment: &AivenSegment, t: IndexType) -> Result<Bytes> {
        let range = segment
            .manifest
            .index(t)
            .ok_or_else(|| Error::not_found(format!("{t} index of Aiven segment {}", segment.id)))?;
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        let of = format!("of Aiven segment {} ({})", segment.id, segment.keys.indexes);
        let what = format!("{t} index {of}");
        let read = self.backend.get_range(&segment.keys.indexes, range.clone()).await;
        let stored = forget_if_gone(&self.found, &segment.id.id, read)?;
        if stored.len() as u64 != range.end - range.start {
            return Err(Error::corrupt(format!("{what}: the object ends inside it")));
        }
        let bytes = segment.undo(stored, None, &what)?;
        // Checked as Kafka checks an index it fetches (whole entries, in order, inside the log), and the
        // producer snapshot by its own CRC-32C; the leader-epoch checkpoint and the transaction index carry
        // no check of their own (read from an encrypted segment, its tag checked them).
        match t {
            IndexType::Offset => {
                read_offset_index(&of, segment.start_offset, &bytes, segment.log_length())?;
            }
            IndexType::Timestamp => {
                read_time_index(&of, segment.start_offset, &bytes)?;
            }
            IndexType::ProducerSnapshot => check_producer_snapshot(&what, &bytes)?,
            _ => {}
        }
        Ok(bytes)
    }

    /// Deletes segment `md`'s Aiven objects (its manifest first), whichever exist.
    pub async fn delete(&self, md: &RemoteLogSegmentMetadata) -> Result<()> {
        self.forget(&md.remote_log_segment_id.id);
        let keys = self.keys(md).all();
        self.backend.delete_many(&keys[..1]).await?;
        self.backend.delete_many(&keys[1..]).await
    }
}

/// Where a segment asked for is stored: in our format, or Aiven's.
pub(super) enum Located {
    /// Ours: its manifest.
    Ours(Arc<crate::format::manifest::Manifest>),
    /// Aiven's.
    Aiven(Arc<AivenSegment>),
}

impl super::TieredStorage {
    /// Finds segment `md`: ours first, unless it is known to be Aiven's (found before, or its custom metadata
    /// is Aiven's); with `aiven.read.enabled`, a segment without a manifest of ours is looked up as Aiven's. Not
    /// found when neither is in the store.
    pub(super) async fn locate(&self, md: &RemoteLogSegmentMetadata) -> Result<Located> {
        let Some(aiven) = &self.aiven else { return self.manifest(md).await.map(Located::Ours) };
        if let Some(s) = aiven.cached(&md.remote_log_segment_id.id) {
            return Ok(Located::Aiven(s));
        }
        if aiven.named_by_custom_metadata(md) {
            md.validate()?;
            if let Some(s) = aiven.find(md).await? {
                return Ok(Located::Aiven(s));
            }
        }
        match self.manifest(md).await {
            Err(e) if e.kind() == ErrorKind::NotFound => match aiven.find(md).await? {
                Some(s) => Ok(Located::Aiven(s)),
                None => Err(Error::not_found(format!("{e}; nor Aiven's manifest {}", aiven.keys(md).manifest))),
            },
            found => found.map(Located::Ours),
        }
    }

    /// A fetch of `start_position..=end_position` of Aiven segment `s`, checked as [`AivenSegments::stream`]
    /// checks it.
    pub(super) fn aiven_fetch(
        &self,
        s: Arc<AivenSegment>,
        start_position: i64,
        end_position: Option<i64>,
    ) -> Result<ByteStream> {
        let aiven = self.aiven.as_ref().ok_or_else(|| Error::invalid("aiven.read.enabled is false"))?;
        let (start, end) = super::fetch::log_bounds(s.log_length(), &s.id, start_position, end_position)?;
        Ok(aiven.stream(s, start, end))
    }

    /// Index `t` of Aiven segment `s`.
    pub(super) async fn aiven_index(&self, s: &AivenSegment, t: IndexType) -> Result<Bytes> {
        let aiven = self.aiven.as_ref().ok_or_else(|| Error::invalid("aiven.read.enabled is false"))?;
        aiven.index(s, t).await
    }

    /// Deletes segment `md`'s objects as Aiven's plugin stored them, when Aiven's segments are read.
    pub(super) async fn delete_aiven(&self, md: &RemoteLogSegmentMetadata) -> Result<()> {
        match &self.aiven {
            // A one-object segment is ours, as its custom metadata says.
            Some(a) if Trailer::of_metadata(md).is_none() => a.delete(md).await,
            _ => Ok(()),
        }
    }
}

/// The format a segment is stored in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredFormat {
    /// Ours.
    Ours,
    /// Aiven's plugin's.
    Aiven,
}

impl super::TieredStorage {
    /// Whether segment `md` is in the store, and in which format (its manifest read and checked against it,
    /// and, for Aiven's, its data key unwrapped): not found when neither format holds it.
    pub async fn stored_format(&self, md: &RemoteLogSegmentMetadata) -> Result<StoredFormat> {
        Ok(match self.locate(md).await? {
            Located::Ours(_) => StoredFormat::Ours,
            Located::Aiven(_) => StoredFormat::Aiven,
        })
    }

    /// The key prefix Aiven's segments are read under, when `aiven.read.enabled`.
    pub fn aiven_key_prefix(&self) -> Option<&str> {
        self.config.aiven.as_ref().map(|a| a.key_prefix.as_str())
    }

    /// Reads and parses the Aiven manifest at `key`.
    pub async fn read_aiven_manifest(&self, key: &str) -> Result<AivenManifest> {
        read_manifest(self.backend.as_ref(), key).await
    }

    /// [`super::TieredStorage::verify`] of Aiven segment `s`: its whole log read and checked as a fetch checks
    /// it, and each of its indexes.
    pub(super) async fn verify_aiven(&self, s: Arc<AivenSegment>) -> Result<super::VerifyReport> {
        let checked_by = match s.data_key {
            Some(_) => "Aiven's format, encrypted: every chunk and index by its AES-GCM tag",
            None => {
                "Aiven's format, not encrypted: the log by its batches' CRC-32C, the offset and time indexes by \
                 their entries, the producer snapshot by its CRC-32C; its leader-epoch checkpoint and \
                 transaction index carry no check"
            }
        };
        let mut report =
            super::VerifyReport { chunks: s.manifest.chunks.len(), checked_by, ..super::VerifyReport::default() };
        if s.log_length() > 0 {
            let mut stream = self.aiven_fetch(s.clone(), 0, None)?;
            while let Some(bytes) = stream.next().await {
                report.bytes += bytes?.len() as u64;
            }
        }
        for t in IndexType::ALL {
            if s.manifest.index(t).is_some() {
                self.aiven_index(&s, t).await?;
                report.indexes += 1;
            }
        }
        Ok(report)
    }
}
