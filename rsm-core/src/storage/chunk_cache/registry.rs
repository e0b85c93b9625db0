//! The chunk caches of this process, by their settings: every storage manager opened with the same cache
//! settings shares one ([`ChunkCache::for_process`]), which lives while one of them does, and a disk
//! directory serves one set of settings at a time.

use super::config::{ChunkCacheConfig, DISK_PATH_KEY};
use super::{ChunkCache, Shared, lock};
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex, Weak};

/// The caches of this process, by their settings ([`ChunkCache::for_process`]).
static PROCESS_CACHES: Mutex<Vec<(ChunkCacheConfig, Weak<Shared>)>> = Mutex::new(Vec::new());

/// The process's cache with these settings, opened if none lives; a disk directory already in use with
/// other settings is refused, naming [`DISK_PATH_KEY`].
pub(super) fn process_cache(config: ChunkCacheConfig) -> Result<ChunkCache> {
    let mut caches = lock(&PROCESS_CACHES);
    caches.retain(|(_, w)| w.strong_count() > 0);
    if let Some(shared) = caches.iter().find(|(c, _)| *c == config).and_then(|(_, w)| w.upgrade()) {
        return Ok(ChunkCache { shared });
    }
    if let Some(d) = &config.disk
        && caches.iter().any(|(c, _)| c.disk.as_ref().is_some_and(|o| o.path == d.path))
    {
        return Err(Error::config(
            DISK_PATH_KEY,
            format!(
                "the cache directory {} is in use in this process with other cache settings; give each setting its own directory",
                d.path.display()
            ),
        ));
    }
    let cache = ChunkCache::new(config.clone())?;
    caches.push((config, Arc::downgrade(&cache.shared)));
    Ok(cache)
}
