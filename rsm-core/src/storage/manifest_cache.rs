//! The manifests of [`TieredStorage`](super::TieredStorage): read from the store and checked against the
//! segment their key names ([`read_manifest`]), kept in a [`Cache`] (`manifest.cache.entries`,
//! `manifest.cache.ttl.ms`) with concurrent cold readers of one segment sharing one read, and the next
//! segment's manifest loaded ahead for a sequential reader ([`NextManifests`]), found by the segments it
//! knows by their start offsets ([`KnownSegments`]) or else by a listing.

use super::cache::{Cache, CacheStats};
use super::layout::{self, SegmentLayout, Suffix};
use super::single;
use crate::backend::StorageBackend;
use crate::error::{Error, ErrorKind, Result};
use crate::format::manifest::Manifest;
use crate::format::trailer::Trailer;
use crate::model::{RemoteLogSegmentMetadata, TopicIdPartition, Uuid};
use crate::single_flight::SingleFlight;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Reads and decodes the manifest at `key` of `backend`, and checks that it is the manifest of the segment
/// its key names (partition, start offset, segment id): correct bytes of another segment are wrong bytes, so
/// a manifest copied, moved or restored over another segment's key is corrupt, naming both. `key` is a
/// split segment's `.manifest` or a one-object segment's `.segment` (its manifest found from its trailer:
/// `known`, from the segment's custom metadata, or read from the object's tail).
pub(super) async fn read_manifest(backend: &dyn StorageBackend, key_prefix: &str, key: &str) -> Result<Manifest> {
    read_manifest_with(backend, key_prefix, key, None).await
}

/// [`read_manifest`], with the trailer of a one-object segment when its metadata carries it.
async fn read_manifest_with(
    backend: &dyn StorageBackend,
    key_prefix: &str,
    key: &str,
    known: Option<Trailer>,
) -> Result<Manifest> {
    let m = match Suffix::of(key) {
        Some(Suffix::Segment) => single::read_manifest(backend, key, known).await?,
        _ => Manifest::decode(&backend.get_range(key, 0..u64::MAX).await?, key)?,
    };
    let md = &m.metadata;
    match layout::parse_segment_key(key_prefix, key) {
        Some(k) if k.suffix.commits() && k.names(md) => Ok(m),
        named => Err(Error::corrupt(format!(
            "manifest {key} describes segment {} (offsets {}..={}), not {}: it belongs to another segment",
            md.remote_log_segment_id,
            md.start_offset,
            md.end_offset,
            named.map_or("a segment manifest's key".to_string(), |k| format!(
                "the segment its key names ({}:{} from offset {})",
                k.topic_id_partition, k.segment_id, k.start_offset
            )),
        ))),
    }
}

/// The keys where the manifest of the segment `metadata` may be, in the order to try them, each with the
/// trailer its custom metadata carries: a one-object segment's key alone when its metadata says so; else the
/// configured layout's key first and the other's on not found, so segments of both layouts read whatever
/// `segment.layout` says.
fn manifest_keys(
    key_prefix: &str,
    layout: SegmentLayout,
    metadata: &RemoteLogSegmentMetadata,
) -> Vec<(String, Option<Trailer>)> {
    let keys = layout::segment_keys(key_prefix, metadata);
    match (Trailer::of_metadata(metadata), layout) {
        (Some(t), _) => vec![(keys.segment, Some(t))],
        (None, SegmentLayout::Split) => vec![(keys.manifest, None), (keys.segment, None)],
        (None, SegmentLayout::Single) => vec![(keys.segment, None), (keys.manifest, None)],
    }
}

/// The manifest of the segment `metadata`, of whichever layout ([`manifest_keys`]), checked against its key
/// ([`read_manifest`]); not found, naming the first key tried, when no key holds it.
async fn load_manifest(
    backend: &dyn StorageBackend,
    key_prefix: &str,
    layout: SegmentLayout,
    metadata: &RemoteLogSegmentMetadata,
) -> Result<(String, Manifest)> {
    let keys = manifest_keys(key_prefix, layout, metadata);
    for (key, known) in &keys {
        match read_manifest_with(backend, key_prefix, key, *known).await {
            Ok(m) => return Ok((key.clone(), m)),
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::not_found(format!("segment {} (manifest {})", metadata.remote_log_segment_id, keys[0].0)))
}

/// How many segments [`KnownSegments`] remembers.
const KNOWN_SEGMENTS: usize = 16384;

/// The segments this storage manager has met (copied, read, or told of by its host: an engine knows each
/// segment's successor from its metadata), by partition and start offset, the most recent first when
/// several start at one offset: how the segment after another is found without listing the store.
pub(super) struct KnownSegments(Mutex<lru::LruCache<(TopicIdPartition, i64), RemoteLogSegmentMetadata>>);

impl KnownSegments {
    fn new() -> Self {
        KnownSegments(Mutex::new(lru::LruCache::new(std::num::NonZeroUsize::new(KNOWN_SEGMENTS).expect("non-zero"))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, lru::LruCache<(TopicIdPartition, i64), RemoteLogSegmentMetadata>> {
        // Each critical section leaves the map consistent, so a poisoned lock is usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers `md` as the segment starting at its start offset.
    pub(super) fn note(&self, md: &RemoteLogSegmentMetadata) {
        self.lock().put((md.remote_log_segment_id.topic_id_partition.clone(), md.start_offset), md.clone());
    }

    /// The segment of partition `tp` known to start at `offset`.
    fn starting_at(&self, tp: &TopicIdPartition, offset: i64) -> Option<RemoteLogSegmentMetadata> {
        self.lock().get(&(tp.clone(), offset)).cloned()
    }
}

impl std::fmt::Debug for KnownSegments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownSegments").field("segments", &self.lock().len()).finish()
    }
}

/// The manifests of the segments under `key_prefix` of a backend, by segment id, read once and kept.
#[derive(Debug)]
pub(super) struct ManifestCache {
    backend: Arc<dyn StorageBackend>,
    key_prefix: String,
    /// `segment.layout`: whose key is tried first for a segment whose metadata does not say.
    layout: SegmentLayout,
    entries: Arc<Cache<Uuid, Arc<Manifest>>>,
    known: Arc<KnownSegments>,
    /// Manifest reads in flight: concurrent cold readers of one segment share one read.
    loads: SingleFlight<Uuid, Arc<Manifest>>,
}

impl ManifestCache {
    /// A cache of at most `entries` manifests of the segments under `key_prefix` of `backend`, each served for
    /// at most `ttl` after it was read.
    pub(super) fn new(
        backend: Arc<dyn StorageBackend>,
        key_prefix: String,
        layout: SegmentLayout,
        entries: usize,
        ttl: Duration,
    ) -> Self {
        let entries = Arc::new(Cache::with_entries(entries).with_ttl(ttl));
        ManifestCache {
            backend,
            key_prefix,
            layout,
            entries,
            known: Arc::new(KnownSegments::new()),
            loads: SingleFlight::new(),
        }
    }

    /// The manifest of a segment read from the store now, whatever the cache holds, checked against the
    /// segment as the caller names it (its key, then its offsets), and kept in the cache.
    pub(super) async fn load(&self, metadata: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        let (key, m) = load_manifest(self.backend.as_ref(), &self.key_prefix, self.layout, metadata).await?;
        // The key names the caller's segment (read_manifest checked the manifest against it); its offsets
        // must be the caller's too.
        if m.metadata.end_offset != metadata.end_offset {
            return Err(Error::corrupt(format!(
                "manifest {key} describes segment {} with offsets {}..={}, not {}..={} as asked",
                m.metadata.remote_log_segment_id,
                m.metadata.start_offset,
                m.metadata.end_offset,
                metadata.start_offset,
                metadata.end_offset
            )));
        }
        let m = Arc::new(m);
        self.known.note(&m.metadata);
        self.entries.insert(metadata.remote_log_segment_id.id, m.clone());
        Ok(m)
    }

    /// [`read_manifest`] of `key`, not cached.
    pub(super) async fn read(&self, key: &str) -> Result<Manifest> {
        read_manifest(self.backend.as_ref(), &self.key_prefix, key).await
    }

    /// The manifest of a segment (cached); not found when the segment was never committed or was deleted.
    pub(super) async fn get(&self, metadata: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        let id = metadata.remote_log_segment_id.id;
        // Served from the cache only for the same segment as the caller names it: metadata with this id but
        // another partition or start offset names other keys, which a cold read would not find.
        let same = |m: &Manifest| {
            m.metadata.remote_log_segment_id == metadata.remote_log_segment_id
                && m.metadata.start_offset == metadata.start_offset
        };
        if let Some(m) = self.entries.get(&id).filter(|m| same(m)) {
            return Ok(m);
        }
        // Concurrent cold readers of a segment share one read of its manifest.
        self.loads
            .run(id, || async {
                if let Some(m) = self.entries.peek(&id).filter(|m| same(m)) {
                    return Ok(m);
                }
                self.load(metadata).await
            })
            .await
    }

    /// Keeps `manifest`, just written, as the manifest of segment `id`.
    pub(super) fn insert(&self, id: Uuid, manifest: Arc<Manifest>) {
        self.known.note(&manifest.metadata);
        self.entries.insert(id, manifest);
    }

    /// The segments met so far, by start offset.
    pub(super) fn known(&self) -> &KnownSegments {
        &self.known
    }

    /// Forgets the manifest of segment `id`.
    pub(super) fn remove(&self, id: &Uuid) {
        self.entries.remove(id);
    }

    /// Hits and misses.
    pub(super) fn stats(&self) -> CacheStats {
        self.entries.stats()
    }

    /// The read-ahead of next segments' manifests into this cache.
    pub(super) fn next_manifests(&self) -> Arc<NextManifests> {
        NextManifests::new(
            self.backend.clone(),
            self.key_prefix.clone(),
            self.layout,
            self.entries.clone(),
            self.known.clone(),
        )
    }
}

/// Loads the manifest of the segment after one that a sequential reader is finishing, into the manifest
/// cache, so that the reader's first fetch of it waits for no manifest (whose first chunks the chunk cache
/// then reads ahead). A successor already known ([`KnownSegments`]) is handed over from the cache, or its
/// manifest read by its key; else one listing of the keys that start at the next offset, then one read per
/// manifest found. One look per segment; later calls for the same segment hand over the successors found again
/// (from the manifest cache), so a read-ahead refused while the cache's bytes in flight were at their bound
/// is tried again as the reader goes on.
pub(super) struct NextManifests {
    backend: Arc<dyn StorageBackend>,
    key_prefix: String,
    layout: SegmentLayout,
    manifests: Arc<Cache<Uuid, Arc<Manifest>>>,
    known: Arc<KnownSegments>,
    /// The segments whose successor was looked for, with the successors found (empty until the listing
    /// and the manifests' reads are done).
    asked: std::sync::Mutex<lru::LruCache<Uuid, Vec<Uuid>>>,
}

impl NextManifests {
    fn new(
        backend: Arc<dyn StorageBackend>,
        key_prefix: String,
        layout: SegmentLayout,
        manifests: Arc<Cache<Uuid, Arc<Manifest>>>,
        known: Arc<KnownSegments>,
    ) -> Arc<Self> {
        let asked = std::sync::Mutex::new(lru::LruCache::new(std::num::NonZeroUsize::new(4096).expect("non-zero")));
        Arc::new(NextManifests { backend, key_prefix, layout, manifests, known, asked })
    }

    /// Loads the manifests of the segments that start right after `m` ends, unless that was asked for `m`
    /// already; `then` is given each one (to read its first chunks ahead): once loaded, and again on each
    /// later call for `m` while it is still in the manifest cache.
    pub(super) fn load_after(self: &Arc<Self>, m: &Arc<Manifest>, then: impl Fn(Arc<Manifest>) + Send + 'static) {
        let md = &m.metadata;
        let id = md.remote_log_segment_id.id;
        let found = {
            let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
            match asked.get(&id) {
                Some(found) => Some(found.clone()),
                None => {
                    asked.put(id, Vec::new());
                    None
                }
            }
        };
        if let Some(found) = found {
            for next in found.iter().filter_map(|n| self.manifests.peek(n)) {
                then(next);
            }
            return;
        }
        let tp = &md.remote_log_segment_id.topic_id_partition;
        let next_start = md.end_offset.saturating_add(1);
        let known = self.known.starting_at(tp, next_start);
        if let Some(next) = known.as_ref().and_then(|k| self.manifests.peek(&k.remote_log_segment_id.id)) {
            self.asked.lock().unwrap_or_else(|p| p.into_inner()).put(id, vec![next.metadata.remote_log_segment_id.id]);
            return then(next);
        }
        let prefix = layout::start_offset_prefix(&self.key_prefix, tp, next_start);
        let this = self.clone();
        tokio::spawn(async move {
            // The known successor's manifest by its keys (whichever layout it has); else (none known, or gone
            // since) what a listing finds.
            let mut ids = Vec::new();
            let (known_segments, manifests) = (this.known.clone(), this.manifests.clone());
            let found = move |next: Manifest, ids: &mut Vec<Uuid>| {
                let next = Arc::new(next);
                let next_id = next.metadata.remote_log_segment_id.id;
                known_segments.note(&next.metadata);
                let _ = manifests.insert(next_id, next.clone());
                ids.push(next_id);
                then(next);
            };
            if let Some(k) = known {
                match load_manifest(this.backend.as_ref(), &this.key_prefix, this.layout, &k).await {
                    Ok((_, next)) => found(next, &mut ids),
                    Err(e) => tracing::debug!(segment = %k.remote_log_segment_id, error = %e,
                        "cannot read the next segment's manifest ahead"),
                }
            }
            if ids.is_empty() {
                let keys = match this.backend.list(&prefix).await {
                    Ok(listed) => listed
                        .into_iter()
                        .filter(|o| matches!(Suffix::of(&o.key), Some(Suffix::Manifest | Suffix::Segment))),
                    Err(e) => {
                        return tracing::debug!(prefix, error = %e, "cannot list the next segment; its fetch will read its manifest");
                    }
                };
                for o in keys {
                    match read_manifest(this.backend.as_ref(), &this.key_prefix, &o.key).await {
                        Ok(next) => found(next, &mut ids),
                        Err(e) => {
                            tracing::debug!(key = o.key, error = %e, "cannot read the next segment's manifest ahead")
                        }
                    }
                }
            }
            this.asked.lock().unwrap_or_else(|p| p.into_inner()).put(id, ids);
        });
    }
}
