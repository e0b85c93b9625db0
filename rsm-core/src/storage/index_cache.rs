//! The remote indexes of [`TieredStorage`](super::TieredStorage) (SR-34): each read from the segment's
//! index bundle by the range its manifest gives and checked against the manifest's length and CRC
//! ([`read_index`]), then kept in a [`Cache`] weighed by bytes (`index.cache.bytes`), with concurrent cold
//! readers of one index sharing one ranged read.

use super::cache::{Cache, CacheStats};
use super::layout::Placement;
use crate::backend::StorageBackend;
use crate::error::{Error, Result};
use crate::format::manifest::IndexLocation;
use crate::model::{IndexType, RemoteLogSegmentId, Uuid};
use crate::single_flight::SingleFlight;
use bytes::Bytes;
use std::future::Future;

/// Remote indexes by segment and type, weighed by their bytes.
#[derive(Debug)]
pub(super) struct IndexCache {
    entries: Cache<(Uuid, IndexType), Bytes>,
    /// Index loads in flight: concurrent cold readers of one index share one ranged read.
    loads: SingleFlight<(Uuid, IndexType), Bytes>,
}

impl IndexCache {
    /// A cache of at most `bytes` bytes of indexes.
    pub(super) fn new(bytes: u64) -> Self {
        IndexCache { entries: Cache::new(bytes, |b: &Bytes| b.len() as u64), loads: SingleFlight::new() }
    }

    /// The index `index_type` of segment `id`: from the cache, or from `load` (run once for however many ask
    /// at once) and then kept. A failed load is not kept.
    pub(super) async fn get_or_load<F, Fut>(&self, id: Uuid, index_type: IndexType, load: F) -> Result<Bytes>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Bytes>>,
    {
        let cache_key = (id, index_type);
        if let Some(b) = self.entries.get(&cache_key) {
            return Ok(b);
        }
        self.loads
            .run(cache_key, || async {
                if let Some(b) = self.entries.peek(&cache_key) {
                    return Ok(b);
                }
                let bytes = load().await?;
                self.entries.insert(cache_key, bytes.clone());
                Ok(bytes)
            })
            .await
    }

    /// Forgets every index of segment `id`.
    pub(super) fn forget(&self, id: &Uuid) {
        self.entries.remove_where(|(s, _)| s == id);
    }

    /// Hits, misses and bytes.
    pub(super) fn stats(&self) -> CacheStats {
        self.entries.stats()
    }
}

/// Reads the index `index_type` of segment `id` at `loc` of its index bundle, wherever `at` puts the bundle
/// (its own object, or after the log in a one-object segment), corrupt when its bytes do not match the
/// manifest's length and CRC.
pub(super) async fn read_index(
    backend: &dyn StorageBackend,
    at: &Placement,
    loc: IndexLocation,
    index_type: IndexType,
    id: &RemoteLogSegmentId,
) -> Result<Bytes> {
    let key = &at.indexes;
    let start = at.indexes_base + loc.position;
    let bytes = backend.get_range(key, start..start + loc.length).await?;
    if bytes.len() as u64 != loc.length || crate::checksum::crc32c(&bytes) != loc.crc32c {
        return Err(Error::corrupt(format!(
            "{index_type} index of segment {id} in {key}: {} bytes do not match the manifest's length {} and CRC",
            bytes.len(),
            loc.length
        )));
    }
    Ok(bytes)
}
