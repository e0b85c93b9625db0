//! The filesystem backend: objects are files under a root directory (local disk or a mounted share).
//!
//! Every upload goes to a hidden temporary file in the target directory, is fsynced (unless `fs.fsync` is
//! off), and is renamed over the key atomically, so readers see the old object or the new one, never
//! part of one. Uploads of local files use the kernel's copy path: a reflink (`FICLONE`) where the
//! filesystem shares extents, else `copy_file_range` (through `std::io::copy`). Keys can never leave the
//! root: `..`, absolute paths, empty parts and NUL are refused.

#![warn(missing_docs)]

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use rsm_core::backend::{
    BufferPool, ByteStream, ObjectMeta, StorageBackend, TemporaryObject, clamp_range, validate_key,
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

/// Reads up to this size run in place rather than on the blocking pool (see `get_range`): a fetch's first
/// read, which is up to `rsm_core::storage::fetch::FIRST_READ_BYTES` widened to whole blocks at both ends
/// (1 MiB + 256 KiB at most with the default 64 KiB blocks), is one of them; whole-chunk reads (4 MiB by
/// default) are not.
const INLINE_READ_MAX: u64 = 2 << 20;

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
    /// A store under `root`, created if missing. `fsync` makes every upload durable before it is visible.
    pub fn new(root: impl Into<PathBuf>, fsync: bool) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io_err(root.display()))?;
        let root = root.canonicalize().map_err(io_err(root.display()))?;
        Ok(FsBackend { root, fsync, buffers: BufferPool::new(READ_BUFFERS_RETAINED) })
    }

    /// Reads `fs.root` (required) and `fs.fsync` (default true).
    pub fn from_config(r: &mut ConfigReader<'_>) -> Result<Self> {
        let root = r.required("fs.root")?.to_string();
        let fsync = r.bool("fs.fsync", true)?;
        Self::new(root, fsync).map_err(|e| Error::config("fs.root", e.to_string()))
    }

    /// Opens `file:///absolute/path` with `fs.fsync` (default true) from `r`: the store rooted at the path,
    /// with no key prefix of its own.
    pub fn from_url(url: &str, r: &mut ConfigReader<'_>) -> Result<(std::sync::Arc<dyn StorageBackend>, String)> {
        let path = url.strip_prefix("file://").unwrap_or(url);
        if !path.starts_with('/') {
            return Err(Error::config(
                rsm_core::config::STORE_URL_KEY,
                format!("`{url}`: a file URL needs an absolute path (file:///...)"),
            ));
        }
        r.ignore("fs.root");
        let fsync = r.bool("fs.fsync", true)?;
        Ok((std::sync::Arc::new(Self::new(path, fsync)?), String::new()))
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

    /// Creates the parent directory of `target` and a fresh temporary file beside it.
    fn create_tmp(target: &Path) -> io::Result<(File, PathBuf)> {
        let parent = target.parent().expect("keys have a parent under the root");
        for attempt in 0..3 {
            fs::create_dir_all(parent)?;
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

    fn put_file_blocking(&self, key: &str, src: &Path, len: u64) -> Result<()> {
        let target = self.path(key)?;
        let mut input = File::open(src).map_err(io_err(src.display()))?;
        let src_len = input.metadata().map_err(io_err(src.display()))?.len();
        if src_len < len {
            return Err(Error::invalid(format!("{}: {src_len} bytes, expected at least {len}", src.display())));
        }
        let (mut out, tmp) = Self::create_tmp(&target).map_err(io_err(format!("object {key}")))?;
        let result = (|| {
            if !(src_len == len && reflink(&input, &out)) {
                let copied = io::copy(&mut (&mut input).take(len), &mut out)?;
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
            Error::from_io(format!("object {key} (from {})", src.display()), e)
        })
    }

    fn get_range_blocking(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path(key)?;
        let f = File::open(&path).map_err(io_err(format!("object {key}")))?;
        let size = f.metadata().map_err(io_err(format!("object {key}")))?.len();
        let r = clamp_range(key, range, size)?;
        self.buffers
            .read((r.end - r.start) as usize, |buf| f.read_exact_at(buf, r.start))
            .map_err(io_err(format!("object {key}")))
    }

    fn delete_blocking(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::from_io(format!("object {key}"), e)),
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
fn reflink(src: &File, dst: &File) -> bool {
    use std::os::fd::AsRawFd;
    const FICLONE: libc::c_ulong = 0x4004_9409;
    // SAFETY: both descriptors are open for the duration of the call; FICLONE only reads its argument.
    unsafe { libc::ioctl(dst.as_raw_fd(), FICLONE as _, src.as_raw_fd()) == 0 }
}

#[async_trait]
impl StorageBackend for FsBackend {
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        let (this, key, path) = (self.clone(), key.to_string(), path.to_path_buf());
        blocking(move || this.put_file_blocking(&key, &path, len)).await
    }

    async fn put_stream(&self, key: &str, mut data: ByteStream) -> Result<()> {
        let target = self.path(key)?;
        let t = target.clone();
        let (file, tmp) = blocking(move || FsBackend::create_tmp(&t).map_err(io_err(t.display()))).await?;
        let mut out = tokio::fs::File::from_std(file);
        let written: Result<()> = async {
            while let Some(item) = data.next().await {
                out.write_all(&item?).await.map_err(io_err(format!("object {key}")))?;
            }
            out.flush().await.map_err(io_err(format!("object {key}")))
        }
        .await;
        let file = out.into_std().await;
        let this = self.clone();
        let key_owned = key.to_string();
        blocking(move || {
            let committed =
                written.and_then(|_| this.commit(file, &tmp, &target).map_err(io_err(format!("object {key_owned}"))));
            if committed.is_err() {
                let _ = fs::remove_file(&tmp);
            }
            committed
        })
        .await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        // A small read (a fetch's first piece) runs in place on a multi-thread runtime: handing it to a
        // blocking-pool thread and back costs two thread wake-ups, more than the read itself from the
        // page cache. Larger reads (read-ahead of whole chunks) go to the pool, so they overlap.
        let small = range.end.saturating_sub(range.start) <= INLINE_READ_MAX;
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if small && multi_thread {
            return tokio::task::block_in_place(|| self.get_range_blocking(key, range));
        }
        let (this, key) = (self.clone(), key.to_string());
        blocking(move || this.get_range_blocking(&key, range)).await
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

    #[tokio::test]
    async fn keys_stay_under_the_root_and_temp_files_are_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let b = FsBackend::new(dir.path().join("store"), false).unwrap();
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
    fn config_names_the_key() {
        let p = rsm_core::config::props([("fs.fsync", "maybe"), ("fs.root", "/tmp/x")]);
        let e = FsBackend::from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`fs.fsync`"), "{e}");
        let p = rsm_core::config::props([("fs.fsync", "true")]);
        let e = FsBackend::from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`fs.root`"), "{e}");
    }
}
