//! The data-key cache ([`DataKeyCache`]): segments' data keys, unwrapped once and kept in memory only, so
//! that a KMS is asked once per segment, not once per fetch.

use super::envelope::KeyEnvelope;
use super::keyring::KeyRing;
use super::seal::DataKey;
use crate::error::Result;
use crate::model::Uuid;
use std::sync::Arc;

/// Segments' data keys, unwrapped once and kept in memory only (never written anywhere), so that a reader
/// asks a KMS once per segment, not once per fetch. An entry is found by the segment and its envelope as
/// the manifest holds it, so a manifest rewritten (rewrapped, or replaced by another's) is unwrapped anew;
/// concurrent first reads of a segment share one unwrap; a failed unwrap is not kept (the next read asks
/// again). At most `capacity` entries (the least recently used leaves first when full).
#[derive(Debug)]
pub struct DataKeyCache {
    keyring: Arc<KeyRing>,
    /// The least recently used key is dropped first when full.
    #[allow(clippy::type_complexity)]
    entries: std::sync::Mutex<lru::LruCache<(Uuid, i64, KeyEnvelope), Arc<tokio::sync::OnceCell<Arc<DataKey>>>>>,
}

impl DataKeyCache {
    /// Data keys of the segments whose KEKs `keyring` holds, at most `capacity` of them.
    pub fn new(keyring: Arc<KeyRing>, capacity: usize) -> Self {
        let capacity = std::num::NonZeroUsize::new(capacity.max(1)).expect("at least one");
        DataKeyCache { keyring, entries: std::sync::Mutex::new(lru::LruCache::new(capacity)) }
    }

    /// The keyring.
    pub fn keyring(&self) -> &KeyRing {
        &self.keyring
    }

    /// The data key `envelope` wraps for the segment (`segment_id`, `start_offset`): kept, or unwrapped
    /// ([`KeyEnvelope::unwrap`]) and kept.
    pub async fn get(&self, envelope: &KeyEnvelope, segment_id: Uuid, start_offset: i64) -> Result<Arc<DataKey>> {
        let cell = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let key = (segment_id, start_offset, envelope.clone());
            match entries.get(&key) {
                Some(c) => c.clone(),
                None => {
                    let c = Arc::new(tokio::sync::OnceCell::new());
                    entries.put(key, c.clone());
                    c
                }
            }
        };
        cell.get_or_try_init(|| async { envelope.unwrap(&self.keyring, segment_id, start_offset).await.map(Arc::new) })
            .await
            .cloned()
    }

    /// Drops the data keys of segment `segment` (deleted).
    pub fn forget(&self, segment: &Uuid) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<_> = entries.iter().filter(|((id, _, _), _)| id == segment).map(|(k, _)| k.clone()).collect();
        for k in gone {
            entries.pop(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{KEY_LEN, KeyBytes};

    /// The data-key cache keeps at most its capacity, dropping the least recently used first, and a
    /// segment's key once forgotten is unwrapped anew.
    #[tokio::test]
    async fn the_data_key_cache_drops_the_least_recently_used_first() {
        let ring = Arc::new(KeyRing::from_keys(Some("a"), [("a".to_string(), KeyBytes::new([1; KEY_LEN]))]).unwrap());
        let mut segments = Vec::new();
        for i in 0..3 {
            let seg = Uuid::new(7, i);
            segments.push((seg, DataKey::generate(&ring, "t", seg, 0).await.unwrap().1));
        }
        let cache = DataKeyCache::new(ring, 2);
        let get = |i: usize| {
            let (seg, env) = &segments[i];
            cache.get(env, *seg, 0)
        };
        let (a, b) = (get(0).await.unwrap(), get(1).await.unwrap());
        assert!(Arc::ptr_eq(&a, &get(0).await.unwrap()), "kept");
        get(2).await.unwrap(); // full: the least recently used (segment 1) leaves, not segment 0
        assert!(Arc::ptr_eq(&a, &get(0).await.unwrap()), "the recently used one is kept");
        assert!(!Arc::ptr_eq(&b, &get(1).await.unwrap()), "the least recently used one was dropped");
        cache.forget(&segments[0].0);
        assert!(!Arc::ptr_eq(&a, &get(0).await.unwrap()), "a forgotten segment is unwrapped anew");
    }
}
