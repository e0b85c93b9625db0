//! The disk tier of the chunk cache: one file per whole chunk in a directory of its own, bounded in bytes,
//! least recently used removed first, kept across restarts.
//!
//! A file holds a chunk's original bytes and nothing else; its name says whose chunk it is
//! (`<store>-<segment>-<chunk>.chunk`, the store as a hash of its URL and key prefix, the segment id in hex).
//! The manifest that names the chunk is what checks it: a file is served only after its length, its blocks'
//! CRC-32C and its entry's CRC-32C matched, and a file that fails is deleted and the chunk fetched again. A
//! file is written under a temporary name and renamed into place, so a crash leaves either a whole file or a
//! temporary one, which the next start deletes; no write is synced, because a torn file fails its check.
//!
//! A hit reads only the blocks it serves ([`DiskTier::get_range`]) and writes nothing: in memory the files
//! are ordered by use, and at start the directory's files are indexed in the order they were written (their
//! modification time) and the oldest removed until the rest fit. One process at a time owns a directory:
//! it holds an exclusive lock on `.lock` in it.

use super::ChunkKey;
use crate::error::{Error, Result};
use crate::model::Uuid;
use crate::storage::cache::{Cache, CacheStats};
use bytes::Bytes;
use std::fs::{self, File};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

const SUFFIX: &str = ".chunk";
const TMP_SUFFIX: &str = ".tmp";
const LOCK_FILE: &str = ".lock";

/// The disk tier; see the module documentation. Blocking: call it from a blocking thread.
pub(crate) struct DiskTier {
    dir: PathBuf,
    /// Every file held, weighed by its length.
    index: Cache<ChunkKey, u64>,
    /// Files that failed their check and were removed.
    dropped: AtomicU64,
    /// Writes that failed (a full disk): the chunk stays uncached on disk, and the failure is logged.
    write_failures: AtomicU64,
    /// Numbers each write's temporary file, so that concurrent writes of one chunk never share one.
    writes: AtomicU64,
    /// Held for as long as the tier is open: the directory's lock.
    _lock: File,
}

impl std::fmt::Debug for DiskTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskTier").field("dir", &self.dir).field("index", &self.index).finish()
    }
}

fn file_name(key: &ChunkKey) -> String {
    let (scope, id, chunk) = key;
    let id: String = id.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("{scope:016x}-{id}-{chunk}{SUFFIX}")
}

fn parse_name(name: &str) -> Option<ChunkKey> {
    let stem = name.strip_suffix(SUFFIX)?;
    let mut parts = stem.splitn(3, '-');
    let (scope, id, chunk) = (parts.next()?, parts.next()?, parts.next()?);
    if scope.len() != 16 || id.len() != 32 {
        return None;
    }
    let scope = u64::from_str_radix(scope, 16).ok()?;
    let id = u128::from_str_radix(id, 16).ok()?;
    Some((scope, Uuid::from_bytes(id.to_be_bytes()), chunk.parse().ok()?))
}

impl DiskTier {
    /// Opens (creating it if need be) the tier in `dir`, holding at most `capacity` bytes of files; errors
    /// name `key`, the setting that gave the directory.
    pub(crate) fn open(dir: &Path, capacity: u64, key: &str) -> Result<Self> {
        let fail = |what: &str, e: std::io::Error| Error::config(key, format!("{what} {}: {e}", dir.display()));
        fs::create_dir_all(dir).map_err(|e| fail("cannot create the cache directory", e))?;
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE))
            .map_err(|e| fail("cannot open the lock file in", e))?;
        // A tier of this process that is closing (its last background write ending) lets go within
        // moments: try for a second before calling the directory taken.
        let mut tries = 0;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        while unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            tries += 1;
            if tries < 50 {
                std::thread::sleep(std::time::Duration::from_millis(20));
                continue;
            }
            return Err(Error::config(
                key,
                format!("the cache directory {} is in use by another storage manager or process", dir.display()),
            ));
        }
        let mut found = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| fail("cannot list the cache directory", e))? {
            let entry = entry.map_err(|e| fail("cannot list the cache directory", e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.ends_with(TMP_SUFFIX) {
                // A write that a crash interrupted.
                let _ = fs::remove_file(entry.path());
                continue;
            }
            let Some(k) = parse_name(name) else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            found.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), k, meta.len()));
        }
        found.sort_by_key(|(at, ..)| *at);
        let tier = DiskTier {
            dir: dir.to_path_buf(),
            index: Cache::new(capacity, |len: &u64| *len),
            dropped: AtomicU64::new(0),
            write_failures: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            _lock: lock,
        };
        for (_, k, len) in found {
            tier.keep(k, len);
        }
        Ok(tier)
    }

    fn path(&self, key: &ChunkKey) -> PathBuf {
        self.dir.join(file_name(key))
    }

    /// Records a file as held, removing the files evicted to make room (and the file itself when it is
    /// larger than the whole tier).
    fn keep(&self, key: ChunkKey, len: u64) {
        if len > self.index.stats().capacity {
            let _ = fs::remove_file(self.path(&key));
            return;
        }
        for (old, _) in self.index.insert(key, len) {
            let _ = fs::remove_file(self.path(&old));
        }
    }

    /// Whether a file for `key` is held, without counting a lookup.
    pub(crate) fn contains(&self, key: &ChunkKey) -> bool {
        self.index.get_quiet(key)
    }

    /// The bytes of the file for `key`, if one is held and readable (counted as a hit or a miss); `check`
    /// decides whether they may be served: a file it refuses is deleted, counted, and `None` returned.
    pub(crate) fn get(&self, key: &ChunkKey, check: impl FnOnce(&[u8]) -> Result<()>) -> Option<Bytes> {
        self.index.get(key)?;
        let path = self.path(key);
        let verdict = match fs::read(&path) {
            // Evicted (or removed by hand) since the lookup: a miss, not a damaged file.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.index.remove(key);
                return None;
            }
            Err(e) => Err(Error::from_io(format!("chunk cache file {}", path.display()), e)),
            Ok(bytes) => check(&bytes).map(|()| bytes),
        };
        self.verdict(key, &path, verdict)
    }

    /// Bytes `range` of the file for `key`, a chunk of `chunk_len` bytes, if one is held and readable
    /// (counted as a hit or a miss), read alone: `check` decides whether they may be served, and a file it
    /// refuses, or of another length, is deleted, counted, and `None` returned. Nothing is written.
    pub(crate) fn get_range(
        &self,
        key: &ChunkKey,
        chunk_len: u64,
        range: std::ops::Range<u64>,
        check: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Option<Bytes> {
        use std::os::unix::fs::FileExt;
        self.index.get(key)?;
        let path = self.path(key);
        let file = match File::open(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.index.remove(key);
                return None;
            }
            other => other,
        };
        let what = || format!("chunk cache file {}", path.display());
        let verdict = file.map_err(|e| Error::from_io(what(), e)).and_then(|f| {
            let len = f.metadata().map_err(|e| Error::from_io(what(), e))?.len();
            if len != chunk_len || range.end > len {
                return Err(Error::corrupt(format!("{}: {len} bytes, the chunk has {chunk_len}", what())));
            }
            let mut bytes = vec![0u8; (range.end - range.start) as usize];
            f.read_exact_at(&mut bytes, range.start).map_err(|e| Error::from_io(what(), e))?;
            check(&bytes).map(|()| bytes)
        });
        self.verdict(key, &path, verdict)
    }

    /// Serves checked bytes; deletes and counts a file that failed.
    fn verdict(&self, key: &ChunkKey, path: &Path, verdict: Result<Vec<u8>>) -> Option<Bytes> {
        match verdict {
            Ok(bytes) => Some(Bytes::from(bytes)),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "chunk cache file failed its check; deleted, the chunk is read again");
                self.dropped.fetch_add(1, Ordering::Relaxed);
                self.index.remove(key);
                let _ = fs::remove_file(path);
                None
            }
        }
    }

    /// Writes `bytes` as the file for `key` (under a temporary name of its own, then renamed), evicting
    /// older files. Concurrent writes of one chunk each write their own file, and the last rename wins.
    pub(crate) fn put(&self, key: ChunkKey, bytes: &[u8]) {
        let path = self.path(&key);
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        let tmp = self.dir.join(format!("{}.{n}{TMP_SUFFIX}", file_name(&key)));
        let written = File::create(&tmp).and_then(|mut f| f.write_all(bytes)).and_then(|()| fs::rename(&tmp, &path));
        match written {
            Ok(()) => self.keep(key, bytes.len() as u64),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                self.write_failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(file = %path.display(), error = %e, "cannot write a chunk cache file; the chunk is not kept on disk");
            }
        }
    }

    /// Deletes the files of every chunk `pred` accepts.
    pub(crate) fn forget(&self, pred: impl Fn(&ChunkKey) -> bool) {
        for k in self.index.remove_where(pred) {
            let _ = fs::remove_file(self.path(&k));
        }
    }

    /// Hits, misses, evictions, files and bytes held.
    pub(crate) fn stats(&self) -> CacheStats {
        self.index.stats()
    }

    /// Files that failed their check and were deleted.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Writes that failed.
    pub(crate) fn write_failures(&self) -> u64 {
        self.write_failures.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> ChunkKey {
        (0xfeed, Uuid::from_bytes([7; 16]), n)
    }

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        let k = (u64::MAX, Uuid::random(), 123);
        assert_eq!(parse_name(&file_name(&k)), Some(k));
        for stranger in ["notes.txt", "0-0-0.chunk", "zzzzzzzzzzzzzzzz-00000000000000000000000000000000-1.chunk"] {
            assert_eq!(parse_name(stranger), None, "{stranger}");
        }
    }

    #[test]
    fn concurrent_writes_of_one_chunk_all_succeed_and_leave_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 64 << 20, "fetch.cache.disk.path").unwrap();
        let bytes = vec![0x5a; 256 << 10];
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..50).for_each(|_| tier.put(key(9), &bytes)));
            }
        });
        assert_eq!(tier.write_failures(), 0, "writers shared a temporary file");
        assert_eq!(&tier.get(&key(9), |_| Ok(())).unwrap()[..], &bytes[..]);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(!names.iter().any(|n| n.to_string_lossy().ends_with(TMP_SUFFIX)), "{names:?}");
    }

    #[test]
    fn bounded_kept_across_a_restart_in_order_of_use_and_a_bad_file_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 300, "fetch.cache.disk.path").unwrap();
        let again = DiskTier::open(dir.path(), 300, "fetch.cache.disk.path").unwrap_err();
        assert!(again.to_string().contains("in use"), "{again}");
        for n in 0..3 {
            tier.put(key(n), &[n as u8; 100]);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let modified = |n| fs::metadata(dir.path().join(file_name(&key(n)))).unwrap().modified().unwrap();
        let written = modified(0);
        assert!(tier.get(&key(0), |_| Ok(())).is_some(), "0 is now the most recently used");
        assert_eq!(
            &tier.get_range(&key(0), 100, 10..20, |b| if b == [0; 10] { Ok(()) } else { panic!() }).unwrap()[..],
            &[0; 10]
        );
        assert_eq!(modified(0), written, "a hit writes nothing, not even the file's time");
        tier.put(key(3), &[3; 100]);
        assert!(!tier.contains(&key(1)) && !dir.path().join(file_name(&key(1))).exists(), "1 went, file and all");
        assert_eq!(tier.stats().weight, 300);
        fs::write(dir.path().join("leftover.chunk.tmp"), b"torn").unwrap();
        drop(tier);

        // A smaller tier after a restart keeps the two most recently written: 2 and 3.
        let tier = DiskTier::open(dir.path(), 200, "fetch.cache.disk.path").unwrap();
        let held: Vec<bool> = (0..4).map(|n| tier.contains(&key(n))).collect();
        assert_eq!(held, [false, false, true, true]);
        assert!(!dir.path().join("leftover.chunk.tmp").exists(), "a torn write is removed");
        assert_eq!(&tier.get(&key(3), |_| Ok(())).unwrap()[..], &[3; 100][..]);

        let refused = tier.get(&key(2), |_| Err(Error::corrupt("damaged")));
        assert!(refused.is_none() && !tier.contains(&key(2)) && !dir.path().join(file_name(&key(2))).exists());
        assert_eq!(tier.dropped(), 1);
        // A file of another length than its chunk's is dropped by a partial read too.
        assert!(tier.get_range(&key(3), 101, 0..10, |_| Ok(())).is_none());
        assert!(!tier.contains(&key(3)) && tier.dropped() == 2);
    }

    #[test]
    fn an_unusable_directory_names_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        fs::write(&file, b"x").unwrap();
        let e = DiskTier::open(&file.join("cache"), 1 << 20, "fetch.cache.disk.path").unwrap_err();
        assert_eq!(e.config_key(), Some("fetch.cache.disk.path"), "{e}");
    }
}
