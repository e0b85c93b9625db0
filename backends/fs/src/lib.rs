//! The filesystem backend: objects are files under a root directory (local disk or a mounted share).
//!
//! Every upload goes to a hidden temporary file in the target directory, is fsynced (unless `fs.fsync` is
//! off; the writeback of each 32 MiB piece is started as soon as it is written, so the fsync at the end
//! waits for little more than the last piece), and is renamed over the key atomically, so readers see the old object or the new one, never
//! part of one. Uploads of local files use the kernel's copy path: a reflink (`FICLONE`) where the
//! filesystem shares extents, else `copy_file_range` (through `std::io::copy`). Keys can never leave the
//! root: `..`, absolute paths, empty parts and NUL are refused.
//!
//! The root must exist when the store opens ([`FsBackend::new`]; [`FsBackend::create`] and
//! `fs.root.create=true` make it first), and the store never makes it again: directories are created below
//! the root only. If the root vanishes (deleted, or a network share unmounted), every operation fails with
//! an error naming the root, and nothing is written in its place, so an unmounted share never fills the
//! disk under its mount point.
//!
//! # Settings
//! <!-- settings:fs:begin -->
//! | key | default | meaning |
//! |---|---|---|
//! | `fs.fsync` | true | (filesystem store) fsync every object and its directory before it becomes visible |
//! | `fs.root.create` | false | (filesystem store) create the store's directory (and its parents) when it opens if it is missing; otherwise a missing directory is an error naming it. The store never recreates its directory afterwards: if it vanishes (deleted, share unmounted) every call fails naming it, and nothing is written in its place |
//! | `fs.root` | (none) | (filesystem store) the root, required by `FsBackend::from_config` (a `file://` URL names it otherwise) |
//! <!-- settings:fs:end -->

#![warn(missing_docs)]

pub mod config;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use rsm_core::backend::{
    BufferPool, ByteStream, Capabilities, LocalObject, ObjectMeta, StorageBackend, TemporaryObject, clamp_range,
    validate_key,
};
use rsm_core::config::ConfigReader;
use rsm_core::{Error, Result};
use std::fs::{self, File};
use std::io::{self, Read};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// Free read buffers kept for reuse (a few chunks' worth).
const READ_BUFFERS_RETAINED: usize = 32 << 20;

/// Prefix of temporary upload files (`.rsm-tmp-{file name}.{random id}`, beside the key); `list` skips them,
/// `list_temporary` lists them.
const TMP_PREFIX: &str = ".rsm-tmp-";

/// A store rooted at a directory.
#[derive(Debug, Clone)]
pub struct FsBackend {
    root: PathBuf,
    fsync: bool,
    buffers: BufferPool,
}

fn io_err(what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> Error {
    move |e| Error::from_io(what, e)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::storage("filesystem task failed", e))?
}

impl FsBackend {
    /// The store under the existing directory `root`; a missing root is an error naming it (see
    /// [`FsBackend::create`]). `fsync` makes every upload durable before it is visible.
    pub fn new(root: impl Into<PathBuf>, fsync: bool) -> Result<Self> {
        let root = root.into();
        match fs::metadata(&root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::invalid(format!("filesystem store root {} is not a directory", root.display())));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::not_found(format!(
                    "filesystem store root {}: no such directory (create it first, or set fs.root.create=true; \
                     `rsm copy --create`)",
                    root.display()
                )));
            }
            Err(e) => return Err(Error::from_io(format!("filesystem store root {}", root.display()), e)),
        }
        let root = root.canonicalize().map_err(io_err(format!("filesystem store root {}", root.display())))?;
        if root.parent().is_none() {
            // A listing of the store would walk the whole file system, and a sweep could touch any file.
            return Err(Error::invalid(format!(
                "filesystem store root {}: the file system's root is not a store; name the store's own directory",
                root.display()
            )));
        }
        Ok(FsBackend { root, fsync, buffers: BufferPool::new(READ_BUFFERS_RETAINED) })
    }

    /// [`FsBackend::new`], creating `root` and its parents first when missing. Only opening creates it: a
    /// root that vanishes later is never made again.
    pub fn create(root: impl Into<PathBuf>, fsync: bool) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io_err(format!("filesystem store root {}", root.display())))?;
        Self::new(root, fsync)
    }

    fn open_root(root: &str, fsync: bool, create: bool) -> Result<Self> {
        if create { Self::create(root, fsync) } else { Self::new(root, fsync) }
    }

    /// Reads `fs.root` (required), `fs.fsync` (default true) and `fs.root.create` (default false).
    pub fn from_config(r: &mut ConfigReader<'_>) -> Result<Self> {
        let root = r.get_required(&config::ROOT)?.to_string();
        let fsync = r.get_bool(&config::FSYNC)?;
        let create = r.get_bool(&config::ROOT_CREATE)?;
        Self::open_root(&root, fsync, create).map_err(|e| Error::config(config::ROOT.key, e.to_string()))
    }

    /// Opens `file:///absolute/path` with `fs.fsync` (default true) and `fs.root.create` (default false)
    /// from `r`: the store rooted at the path, which must exist unless `fs.root.create` is true, with no key
    /// prefix of its own.
    pub fn from_url(url: &str, r: &mut ConfigReader<'_>) -> Result<(std::sync::Arc<dyn StorageBackend>, String)> {
        let path = url.strip_prefix("file://").unwrap_or(url);
        if !path.starts_with('/') {
            return Err(Error::config(
                rsm_core::config::STORE_URL_KEY,
                format!("`{url}`: a file URL needs an absolute path (file:///...)"),
            ));
        }
        r.ignore(config::ROOT.key);
        let fsync = r.get_bool(&config::FSYNC)?;
        let create = r.get_bool(&config::ROOT_CREATE)?;
        Ok((std::sync::Arc::new(Self::open_root(path, fsync, create)?), String::new()))
    }

    /// The error of every operation once the root is gone, naming it (not the object or the source file).
    fn root_missing(&self) -> Error {
        Error::new(
            rsm_core::ErrorKind::Storage,
            format!(
                "filesystem store root {} is missing (deleted, or a share unmounted); the store never recreates it",
                self.root.display()
            ),
        )
    }

    /// `err`, or the root's error when the root is gone (which is then the real cause).
    fn or_root_missing(&self, err: Error) -> Error {
        if self.root.is_dir() { err } else { self.root_missing() }
    }

    /// The error of a write to `what` (an object key): the root's when it is gone, and one naming the store
    /// when it is full, read-only or not writable, the causes an operator acts on.
    fn write_error(&self, what: impl std::fmt::Display, e: io::Error) -> Error {
        let why = match e.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => "is full",
            io::ErrorKind::ReadOnlyFilesystem => "is on a read-only filesystem",
            io::ErrorKind::PermissionDenied => "is not writable (permission denied)",
            _ => return self.or_root_missing(Error::from_io(what, e)),
        };
        Error::storage(format!("filesystem store root {} {why}, writing {what}", self.root.display()), e)
    }

    /// Creates `dir` and the directories between it and the root, never the root itself.
    fn create_dirs_below_root(&self, dir: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        let mut d = dir;
        while d != self.root {
            match fs::metadata(d) {
                Ok(m) if m.is_dir() => break,
                Ok(_) => return Err(io::Error::other(format!("{} is not a directory", d.display()))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(d),
                Err(e) => return Err(e),
            }
            d = d.parent().ok_or_else(|| io::Error::other("a key's directory is under the root"))?;
        }
        for d in missing.into_iter().rev() {
            match fs::create_dir(d) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                // The parent is gone: the root (or a directory a concurrent delete pruned).
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> Result<PathBuf> {
        validate_key(key)?;
        Ok(self.root.join(key))
    }

    fn tmp_path(target: &Path) -> PathBuf {
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let r = rsm_core::Uuid::random();
        target.with_file_name(format!("{TMP_PREFIX}{name}.{r}"))
    }

    /// Creates the parent directory of `target` (below the root, never the root) and a fresh temporary
    /// file beside it; the root's error when the root is gone.
    fn create_tmp(&self, target: &Path, key: &str) -> Result<(File, PathBuf)> {
        self.create_tmp_io(target).map_err(|e| self.write_error(format!("object {key}"), e))
    }

    fn create_tmp_io(&self, target: &Path) -> io::Result<(File, PathBuf)> {
        let parent = target.parent().ok_or_else(|| io::Error::other("a key has a parent under the root"))?;
        for attempt in 0..3 {
            self.create_dirs_below_root(parent)?;
            let tmp = Self::tmp_path(target);
            match File::options().write(true).create_new(true).open(&tmp) {
                Ok(f) => return Ok((f, tmp)),
                // A concurrent delete pruned the directory between the two calls: make it again.
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempt < 2 => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("loop returns")
    }

    /// Makes a finished temporary file the object: fsync, rename, fsync the directory.
    fn commit(&self, file: File, tmp: &Path, target: &Path) -> io::Result<()> {
        if self.fsync {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(tmp, target)?;
        if self.fsync {
            File::open(target.parent().expect("parent"))?.sync_all()?;
        }
        Ok(())
    }

    /// Copies `len` bytes of `input` into `out` (`copy_file_range` through `io::copy`). With `fs.fsync`, in
    /// pieces of [`WRITEBACK_PIECE`], each piece's writeback started (`sync_file_range`, not waited for) as
    /// soon as it is copied, so the disk writes while the next piece is copied and the fsync at the end has
    /// little left to wait for.
    fn copy_starting_writeback(&self, input: &mut File, out: &mut File, len: u64) -> io::Result<u64> {
        if !self.fsync {
            return io::copy(&mut input.take(len), out);
        }
        let mut copied = 0;
        while copied < len {
            let piece = (len - copied).min(WRITEBACK_PIECE);
            let n = io::copy(&mut (&mut *input).take(piece), out)?;
            start_writeback(out, copied, n);
            copied += n;
            if n < piece {
                break;
            }
        }
        Ok(copied)
    }

    fn put_file_blocking(&self, key: &str, src: &Path, len: u64) -> Result<()> {
        let target = self.path(key)?;
        let mut input = File::open(src).map_err(io_err(src.display()))?;
        let src_len = input.metadata().map_err(io_err(src.display()))?.len();
        if src_len < len {
            return Err(Error::invalid(format!("{}: {src_len} bytes, expected at least {len}", src.display())));
        }
        let (mut out, tmp) = self.create_tmp(&target, key)?;
        let result = (|| {
            if !(src_len == len && reflink(&input, &out)) {
                let copied = self.copy_starting_writeback(&mut input, &mut out, len)?;
                if copied != len {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("copied {copied} of {len} bytes"),
                    ));
                }
            }
            self.commit(out, &tmp, &target)
        })();
        result.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            self.write_error(format!("object {key} (from {})", src.display()), e)
        })
    }

    fn get_range_blocking(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path(key)?;
        let f = File::open(&path).map_err(|e| self.or_root_missing(Error::from_io(format!("object {key}"), e)))?;
        let size = f.metadata().map_err(io_err(format!("object {key}")))?.len();
        let r = clamp_range(key, range, size)?;
        self.buffers
            .read((r.end - r.start) as usize, |buf| f.read_exact_at(buf, r.start))
            .map_err(io_err(format!("object {key}")))
    }

    /// The last `len` bytes of `key` and its size: the file's length, then one positional read.
    fn get_tail_blocking(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        let path = self.path(key)?;
        let f = File::open(&path).map_err(|e| self.or_root_missing(Error::from_io(format!("object {key}"), e)))?;
        let size = f.metadata().map_err(io_err(format!("object {key}")))?.len();
        let start = size.saturating_sub(len);
        let bytes = self
            .buffers
            .read((size - start) as usize, |buf| f.read_exact_at(buf, start))
            .map_err(io_err(format!("object {key}")))?;
        Ok((bytes, size))
    }

    fn delete_blocking(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            // Deleting from a vanished root would only look like success.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return if self.root.is_dir() { Ok(()) } else { Err(self.root_missing()) };
            }
            Err(e) => return Err(self.or_root_missing(Error::from_io(format!("object {key}"), e))),
        }
        // Prune directories left empty, up to the root; a failure here is only untidiness.
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.root || fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }

    fn list_blocking(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        Ok(self.walk(prefix, false)?.into_iter().map(|t| t.meta).collect())
    }

    /// The files under the deepest directory `prefix` names whose key starts with `prefix`: the objects
    /// (temporary files skipped), or with `temporary` only the temporary files of uploads to such keys,
    /// each with the key it was for. Sorted by key.
    fn walk(&self, prefix: &str, temporary: bool) -> Result<Vec<TemporaryObject>> {
        // Walk from the deepest directory the prefix names, then filter by the whole prefix.
        let dir_part = prefix.rfind('/').map(|i| &prefix[..i]).unwrap_or("");
        if !dir_part.is_empty() {
            validate_key(dir_part)?;
        }
        let start = if dir_part.is_empty() { self.root.clone() } else { self.root.join(dir_part) };
        if !self.root.is_dir() {
            return Err(self.root_missing());
        }
        let mut out = Vec::new();
        let mut stack = vec![start];
        while let Some(dir) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::from_io(dir.display(), e)),
            };
            for e in entries {
                let e = e.map_err(io_err(dir.display()))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let tmp_of = name.strip_prefix(TMP_PREFIX).map(|n| n.rsplit_once('.').map_or(n, |(target, _)| target));
                let ft = e.file_type().map_err(io_err(e.path().display()))?;
                // Only files are told apart: directories are walked in both modes (none is temporary).
                if tmp_of.is_some() != (temporary && !ft.is_dir()) {
                    continue;
                }
                let path = e.path();
                let rel = path.strip_prefix(&self.root).expect("under root").to_string_lossy().into_owned();
                if ft.is_dir() {
                    if prefix.starts_with(&format!("{rel}/"))
                        || rel.starts_with(prefix)
                        || format!("{rel}/").starts_with(prefix)
                    {
                        stack.push(path);
                    }
                    continue;
                }
                let target = match tmp_of {
                    Some(t) => match rel.rfind('/') {
                        Some(i) => format!("{}/{t}", &rel[..i]),
                        None => t.to_string(),
                    },
                    None => rel.clone(),
                };
                if ft.is_file() && target.starts_with(prefix) {
                    let meta = e.metadata().map_err(io_err(path.display()))?;
                    let meta = ObjectMeta { key: rel, size: meta.len(), last_modified: meta.modified().ok() };
                    out.push(TemporaryObject { meta, target });
                }
            }
        }
        out.sort_by(|a, b| a.meta.key.cmp(&b.meta.key));
        Ok(out)
    }
}

/// Tries `FICLONE` (shared extents on btrfs, XFS, bcachefs); false when the filesystem cannot.
/// The pieces in which a file is copied into a synced store, each piece's writeback started once copied.
const WRITEBACK_PIECE: u64 = 32 << 20;

/// Starts writing `len` bytes of `file` at `offset` back to disk, without waiting (`sync_file_range`
/// with `SYNC_FILE_RANGE_WRITE`): only a head start for the fsync that follows, so a failure is ignored
/// (the fsync reports it).
fn start_writeback(file: &impl std::os::fd::AsRawFd, offset: u64, len: u64) {
    let (Ok(offset), Ok(len)) = (libc::off64_t::try_from(offset), libc::off64_t::try_from(len)) else { return };
    // SAFETY: the descriptor is open for the duration of the call, which takes no pointers.
    unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE) };
}

fn reflink(src: &File, dst: &File) -> bool {
    use std::os::fd::AsRawFd;
    const FICLONE: libc::c_ulong = 0x4004_9409;
    // SAFETY: both descriptors are open for the duration of the call; FICLONE only reads its argument.
    unsafe { libc::ioctl(dst.as_raw_fd(), FICLONE as _, src.as_raw_fd()) == 0 }
}

/// An object file opened for positional reads ([`StorageBackend::open_local`]).
#[derive(Debug)]
struct LocalFile {
    file: File,
    key: String,
    len: u64,
}

impl LocalObject for LocalFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> Result<()> {
        self.file.read_exact_at(buf, position).map_err(io_err(format!(
            "object {} ({} bytes at {position} of {})",
            self.key,
            buf.len(),
            self.len
        )))
    }
}

#[async_trait]
impl StorageBackend for FsBackend {
    fn open_local(&self, key: &str) -> Result<Option<Box<dyn LocalObject>>> {
        let path = self.path(key)?;
        let file = File::open(&path).map_err(|e| self.or_root_missing(Error::from_io(format!("object {key}"), e)))?;
        let len = file.metadata().map_err(io_err(format!("object {key}")))?.len();
        Ok(Some(Box::new(LocalFile { file, key: key.to_string(), len })))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { reads_local_files: true, ..Capabilities::default() }
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        let (this, key, path) = (self.clone(), key.to_string(), path.to_path_buf());
        blocking(move || this.put_file_blocking(&key, &path, len)).await
    }

    async fn put_stream(&self, key: &str, mut data: ByteStream) -> Result<()> {
        let target = self.path(key)?;
        let (this, t, k) = (self.clone(), target.clone(), key.to_string());
        let (file, tmp) = blocking(move || this.create_tmp(&t, &k)).await?;
        let mut out = tokio::fs::File::from_std(file);
        let written: Result<()> = async {
            // With `fs.fsync`, each piece's writeback starts once it is written, as for `put_file`.
            let (mut len, mut started) = (0u64, 0u64);
            while let Some(item) = data.next().await {
                let item = item?;
                out.write_all(&item).await.map_err(|e| self.write_error(format!("object {key}"), e))?;
                len += item.len() as u64;
                if self.fsync && len - started >= WRITEBACK_PIECE {
                    start_writeback(&out, started, len - started);
                    started = len;
                }
            }
            out.flush().await.map_err(|e| self.write_error(format!("object {key}"), e))
        }
        .await;
        let file = out.into_std().await;
        let this = self.clone();
        let key_owned = key.to_string();
        blocking(move || {
            let committed = written.and_then(|_| {
                this.commit(file, &tmp, &target).map_err(|e| this.write_error(format!("object {key_owned}"), e))
            });
            if committed.is_err() {
                let _ = fs::remove_file(&tmp);
            }
            committed.map_err(|e| this.or_root_missing(e))
        })
        .await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        // A small read (a fetch's first piece) runs in place; a whole chunk read ahead on the pool.
        let (this, key) = (self.clone(), key.to_string());
        let len = range.end.saturating_sub(range.start);
        rsm_core::blocking::read_in_place_or_pool(len, move || this.get_range_blocking(&key, range)).await?
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        let (this, key) = (self.clone(), key.to_string());
        blocking(move || this.get_tail_blocking(&key, len)).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let (this, key) = (self.clone(), key.to_string());
        blocking(move || this.delete_blocking(&key)).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let (this, keys) = (self.clone(), keys.to_vec());
        blocking(move || keys.iter().try_for_each(|k| this.delete_blocking(k))).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let (this, prefix) = (self.clone(), prefix.to_string());
        blocking(move || this.list_blocking(&prefix)).await
    }

    /// The `.rsm-tmp-*` files beside the keys that start with `prefix`: an upload's, until it is renamed over
    /// its key, or left by a crash mid-upload. Their keys are their paths under the root.
    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        let (this, prefix) = (self.clone(), prefix.to_string());
        blocking(move || this.walk(&prefix, true)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synced copy of a file longer than one writeback piece, and of the first bytes of one, holds every
    /// byte in order (the pieces neither repeat nor skip bytes).
    #[tokio::test]
    async fn a_synced_copy_in_writeback_pieces_is_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let b = FsBackend::create(dir.path().join("store"), true).unwrap();
        let len = 2 * WRITEBACK_PIECE + 12_345;
        let data: Vec<u8> = (0..len + 100).map(|i| (i % 251) as u8 ^ (i >> 20) as u8).collect();
        let src = dir.path().join("src.log");
        fs::write(&src, &data).unwrap();
        b.put_file("whole", &src, len + 100).await.unwrap();
        assert!(fs::read(dir.path().join("store/whole")).unwrap() == data);
        b.put_file("head", &src, len).await.unwrap();
        assert!(fs::read(dir.path().join("store/head")).unwrap()[..] == data[..len as usize]);
    }

    #[tokio::test]
    async fn keys_stay_under_the_root_and_temp_files_are_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let b = FsBackend::create(dir.path().join("store"), false).unwrap();
        b.put_bytes("a/b", Bytes::from_static(b"x")).await.unwrap();
        assert_eq!(fs::read(dir.path().join("store/a/b")).unwrap(), b"x");
        fs::write(dir.path().join("store/a/.rsm-tmp-c.123"), b"partial").unwrap();
        assert_eq!(b.list("a/").await.unwrap().len(), 1);
        fs::write(dir.path().join("outside"), b"secret").unwrap();
        assert!(b.get_range("../outside", 0..10).await.is_err());
        fs::remove_file(dir.path().join("store/a/.rsm-tmp-c.123")).unwrap();
        b.delete("a/b").await.unwrap();
        assert!(!dir.path().join("store/a").exists(), "empty directories are pruned");
        assert!(dir.path().join("store").exists(), "the root stays");
    }

    #[test]
    fn the_root_must_exist_when_the_store_opens() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("mistyped");
        let e = FsBackend::new(&root, false).unwrap_err();
        assert_eq!(e.kind(), rsm_core::ErrorKind::NotFound);
        assert!(e.to_string().contains(&format!("filesystem store root {}", root.display())), "{e}");
        let p = rsm_core::config::props([("fs.fsync", "false")]);
        let url = format!("file://{}", root.display());
        assert!(FsBackend::from_url(&url, &mut ConfigReader::new(&p)).is_err());
        assert!(!root.exists(), "opening never creates the root");
        fs::write(dir.path().join("file"), b"x").unwrap();
        let e = FsBackend::new(dir.path().join("file"), false).unwrap_err();
        assert!(e.to_string().contains("is not a directory"), "{e}");
        // Asked for, the root (and its parents) is made when the store opens.
        let p = rsm_core::config::props([("fs.root.create", "true")]);
        let nested = format!("file://{}/a/b", root.display());
        FsBackend::from_url(&nested, &mut ConfigReader::new(&p)).unwrap();
        assert!(root.join("a/b").is_dir());
    }

    /// A root deleted after the store opened: uploads, reads, listings and deletes fail naming the root, and
    /// nothing is created where it was.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_vanished_root_is_never_recreated_and_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let b = FsBackend::create(&root, true).unwrap();
        b.put_bytes("t-x/0/a.log", Bytes::from_static(b"one")).await.unwrap();
        let src = dir.path().join("source.log");
        fs::write(&src, b"source bytes").unwrap();
        fs::remove_dir_all(&root).unwrap();
        let named = |e: Error| {
            let m = e.full_message();
            assert!(m.contains(&format!("filesystem store root {} is missing", root.display())), "{m}");
            assert!(!m.contains("source.log"), "the source file is not the fault: {m}");
            assert!(!root.exists(), "{} was recreated", root.display());
        };
        named(b.put_file("t-x/0/b.log", &src, 12).await.unwrap_err());
        named(b.put_bytes("t-x/0/c.indexes", Bytes::from_static(b"idx")).await.unwrap_err());
        named(b.put_bytes("top", Bytes::from_static(b"idx")).await.unwrap_err());
        named(b.get_range("t-x/0/a.log", 0..3).await.unwrap_err());
        named(b.list("").await.unwrap_err());
        named(b.list("t-x/0/").await.unwrap_err());
        named(b.delete("t-x/0/a.log").await.unwrap_err());
        // A missing source file is still the source file's error.
        fs::create_dir(&root).unwrap();
        let e = b.put_file("t-x/0/b.log", &dir.path().join("absent.log"), 1).await.unwrap_err();
        assert!(e.to_string().contains("absent.log"), "{e}");
    }

    #[test]
    fn the_file_systems_root_is_not_a_store() {
        for root in ["/", "/.", "/tmp/.."] {
            let e = FsBackend::new(root, false).unwrap_err();
            assert!(e.to_string().contains("the file system's root is not a store"), "{root}: {e}");
        }
    }

    #[test]
    fn config_names_the_key() {
        let p = rsm_core::config::props([("fs.fsync", "maybe"), ("fs.root", "/tmp/x")]);
        let e = FsBackend::from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`fs.fsync`"), "{e}");
        let p = rsm_core::config::props([("fs.fsync", "true")]);
        let e = FsBackend::from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`fs.root`"), "{e}");
    }
}
