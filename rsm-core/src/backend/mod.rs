//! The storage contract each backend implements, an in-memory backend, the request accounting type and the
//! layers (counting, retry, faults, tracing) that wrap any backend.
//!
//! Keys are `/`-separated relative paths (`topic-id/0/00000000000000000000-id.log`). A backend never makes
//! a partial object visible: an upload either replaces the object whole or leaves it as it was.
//!
//! A store that stages uploads in temporary objects of its own (the filesystem and HDFS stores write a
//! hidden `.rsm-tmp-*` file beside the key and rename it over the key) leaves them behind when the process
//! dies mid-upload. [`StorageBackend::list`] never shows them; [`StorageBackend::list_temporary`] does, so
//! that the orphan sweep and a segment's delete can remove them with [`StorageBackend::delete`].
//!
//! A store with multipart uploads (S3) keeps the parts of an upload a crash cut short, invisible to
//! [`StorageBackend::list`] and billed, until the upload is aborted:
//! [`StorageBackend::list_incomplete_uploads`] lists them and [`StorageBackend::abort_upload`] aborts one.

mod capabilities;
mod counts;
pub mod layers;
mod memory;
mod pool;

pub use capabilities::Capabilities;
pub use counts::{CountSnapshot, KeyCounts, MAX_TOPICS, OTHER_TOPICS, Op, OpCount, RequestCounts};
pub use layers::{CountingLayer, LayeredBackend};
pub use memory::MemoryBackend;
pub use pool::{BufferPool, UNDONE, VecPool};

use crate::error::{Error, Result};
use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// A stream of bytes, pulled in order; memory is bounded by what the consumer holds.
pub type ByteStream = BoxStream<'static, Result<Bytes>>;

/// One listed object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The full key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// When the object was last written, if the store says.
    pub last_modified: Option<std::time::SystemTime>,
}

/// One temporary object of an upload, listed by [`StorageBackend::list_temporary`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemporaryObject {
    /// The temporary object itself: `key` is what [`StorageBackend::delete`] removes.
    pub meta: ObjectMeta,
    /// The key the upload was writing.
    pub target: String,
}

/// A multipart upload started and never completed nor aborted (one in flight, or one a crash cut short),
/// listed by [`StorageBackend::list_incomplete_uploads`]: its parts are in the store, invisible to
/// [`StorageBackend::list`], until [`StorageBackend::abort_upload`] removes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncompleteUpload {
    /// The key the upload was writing.
    pub key: String,
    /// The store's id of the upload, for [`StorageBackend::abort_upload`].
    pub upload_id: String,
    /// When the upload was started, if the store says.
    pub initiated: Option<SystemTime>,
    /// When its latest part was uploaded, if it has parts and the store says.
    pub last_part: Option<SystemTime>,
    /// Parts uploaded so far.
    pub parts: u64,
    /// Bytes of the parts uploaded so far; `None` when the store could not be asked (a key its client
    /// cannot address).
    pub bytes: Option<u64>,
}

impl IncompleteUpload {
    /// The upload's last sign of life: the later of its start and its latest part (an upload still sending
    /// parts looks young, however long ago it started); `None` when the store says neither.
    pub fn last_written(&self) -> Option<SystemTime> {
        self.initiated.max(self.last_part)
    }
}

/// The contract of a store. Async on tokio; every method may be called concurrently.
#[async_trait]
pub trait StorageBackend: Send + Sync + fmt::Debug + 'static {
    /// Uploads the first `len` bytes of the local file `path` as `key`, replacing any earlier object,
    /// with memory bounded independently of `len`. Fails if the file is shorter than `len`.
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()>;

    /// Uploads the bytes of `data` as `key`, replacing any earlier object, holding a bounded number of
    /// the stream's items at a time. A failed stream leaves no object behind.
    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()>;

    /// Reads bytes `range` of `key`. A range reaching past the end is cut at the end; a range starting past
    /// the end is an invalid argument; a missing key is not found.
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes>;

    /// Reads the last `len` bytes of `key` (all of it when it is shorter) and its size, in one request where
    /// the store can (a suffix range read), else a size look-up and a ranged read; a missing key is not
    /// found. How a one-object segment's manifest is found without knowing where it starts.
    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)>;

    /// Deletes `key`; deleting a missing key succeeds.
    async fn delete(&self, key: &str) -> Result<()>;

    /// Deletes many keys, in as few requests as the store allows; missing keys are not errors.
    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        for k in keys {
            self.delete(k).await?;
        }
        Ok(())
    }

    /// Every object whose key starts with `prefix`, sorted by key.
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>>;

    /// The temporary objects of uploads to keys that start with `prefix` (uploads in flight, and those a
    /// crash interrupted), sorted by key. Each one's `key` is the temporary object's own key, which
    /// [`StorageBackend::delete`] accepts; its `last_modified` is its last write, so an upload still writing
    /// looks young. Stores whose uploads are atomic by themselves (the cloud stores: one request, or a
    /// multipart upload that is invisible until completed) have none: the default lists nothing and sends no
    /// request.
    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        let _ = prefix;
        Ok(Vec::new())
    }

    /// The multipart uploads to keys that start with `prefix` that were started and never completed nor
    /// aborted (uploads in flight, and those a crash interrupted), sorted by key and then by their start,
    /// each with the bytes of its parts so far. Stores without multipart uploads, or whose unfinished
    /// uploads are temporary objects ([`StorageBackend::list_temporary`]), have none: the default lists
    /// nothing and sends no request.
    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        let _ = prefix;
        Ok(Vec::new())
    }

    /// Aborts the multipart upload `upload_id` to `key` (as listed by
    /// [`StorageBackend::list_incomplete_uploads`]): its parts are removed and it can no longer complete.
    /// Aborting an upload that is gone (completed or aborted) succeeds. The default has nothing to abort.
    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        let _ = (key, upload_id);
        Ok(())
    }

    /// Uploads `bytes` as `key` (a convenience over [`StorageBackend::put_stream`]).
    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.put_stream(key, Box::pin(futures::stream::once(async { Ok(bytes) }))).await
    }

    /// The store client's own count of the requests it really sent (over HTTP: every retry, part and
    /// batch), when it keeps one. Layers pass it through.
    fn store_requests(&self) -> Option<Arc<RequestCounts>> {
        None
    }

    /// Object `key` opened for positional reads in the calling thread, for a store whose objects are files
    /// this process reads itself (the filesystem store): a reader can then read straight into its caller's
    /// buffer, with no async hop and no copy of its own. `None` (the default) for the others, and from a
    /// layer that must see every read as a [`StorageBackend::get_range`] (the fault layer). A missing key
    /// is not found, as for `get_range`.
    fn open_local(&self, key: &str) -> Result<Option<Box<dyn LocalObject>>> {
        let _ = key;
        Ok(None)
    }

    /// What the store can do beyond this contract; none of it by default. Layers pass the store's on.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
}

/// An object opened by [`StorageBackend::open_local`]: blocking positional reads of its bytes.
pub trait LocalObject: Send + Sync + fmt::Debug {
    /// The object's size in bytes when it was opened.
    fn len(&self) -> u64;

    /// Whether the object is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` with the object's bytes from `position`; an error if the object ends first (named by its
    /// key, as a `get_range` failure would be).
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> Result<()>;
}

/// Checks a range against an object of `size` bytes and cuts it at the end, as
/// [`StorageBackend::get_range`] requires. Shared by the backends.
pub fn clamp_range(key: &str, range: Range<u64>, size: u64) -> Result<Range<u64>> {
    if range.start > range.end {
        return Err(Error::invalid(format!("object {key}: range {}..{} is reversed", range.start, range.end)));
    }
    if range.start > size {
        return Err(Error::invalid(format!(
            "object {key}: range {}..{} starts past its end ({size} bytes)",
            range.start, range.end
        )));
    }
    Ok(range.start..range.end.min(size))
}

/// Checks that a key is a relative `/`-separated path with no empty, `.` or `..` part and no NUL, so no
/// backend can be led outside its root. Shared by the backends.
pub fn validate_key(key: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid(format!("object key `{}`: {why}", key.escape_debug())));
    if key.is_empty() {
        return bad("empty");
    }
    if key.contains('\0') {
        return bad("contains NUL");
    }
    if key.starts_with('/') || key.starts_with('\\') {
        return bad("absolute");
    }
    if key.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
        return bad("has an empty, `.` or `..` part");
    }
    Ok(())
}

/// The bytes of a file read at a time by [`file_stream`].
const FILE_PIECE_BYTES: usize = 1 << 20;

/// The first `len` bytes of the file at `path` as a stream of pieces of [`FILE_PIECE_BYTES`] (an upload of a
/// file through a stream: the rate limit paces each piece, a one-object copy sends them on); an error naming the file if it is
/// shorter.
pub(crate) fn file_stream(path: &Path, len: u64) -> ByteStream {
    use futures::StreamExt;
    use tokio::io::AsyncReadExt;
    let path = path.to_path_buf();
    let state = (None::<tokio::fs::File>, 0u64);
    futures::stream::try_unfold(state, move |(file, sent)| {
        let path = path.clone();
        async move {
            if sent == len {
                return Ok(None);
            }
            let mut file = match file {
                Some(f) => f,
                None => tokio::fs::File::open(&path)
                    .await
                    .map_err(|e| Error::storage(format!("cannot open {} to upload it", path.display()), e))?,
            };
            let want = (len - sent).min(FILE_PIECE_BYTES as u64) as usize;
            let mut buf = vec![0u8; want];
            let mut got = 0;
            while got < want {
                let n = file
                    .read(&mut buf[got..])
                    .await
                    .map_err(|e| Error::storage(format!("cannot read {} to upload it", path.display()), e))?;
                if n == 0 {
                    return Err(Error::invalid(format!(
                        "{} is shorter than the {len} bytes to upload ({} read)",
                        path.display(),
                        sent + got as u64
                    )));
                }
                got += n;
            }
            Ok(Some((Bytes::from(buf), (Some(file), sent + want as u64))))
        }
    })
    .boxed()
}
