//! One adapter from any [`object_store::ObjectStore`] to rsm's [`StorageBackend`], shared by the S3, Azure
//! Blob and GCS backends, so each of those crates only reads its settings and builds its store.
//!
//! What the adapter adds over object_store:
//! - **Uploads with bounded memory.** An object of at most the multipart threshold goes in one PUT;
//!   a larger one goes multipart, read part by part with at most [`UploadSettings::parts_in_flight`] parts
//!   in flight (memory is parts in flight x part size). Any failure aborts the multipart upload, so a
//!   failed upload never leaves an object, and never clobbers an earlier one; so does an upload dropped
//!   before it completed (its future cancelled by a timeout, or by the failure of an upload beside it):
//!   the abort is sent in the background.
//! - **Incomplete multipart uploads** listed and aborted, for a store whose crate supplies
//!   [`MultipartUploads`] (object_store lists none): what a crash mid-upload leaves, invisible and billed.
//! - **Our range contract.** A range past the end is cut; a range starting at the end is empty; one
//!   starting past it is an invalid argument; a missing key is not found. A read that asks for bytes costs
//!   one GET; a HEAD is added only for empty ranges and for reads the server answered with 416.
//! - **Listing by raw prefix**, sorted, with sizes and times (object_store's own `list` only matches
//!   whole path segments).
//! - **Error kinds**: not found, retriable (timeouts, connection failures, 5xx, 429, 408) or permanent;
//!   every message names the key and is scrubbed of secrets (see [`Redactor`]).
//! - **An HTTP request counter** ([`CountingConnector`], into [`RequestCounts`]) below object_store, counting
//!   every real request by method.
//! - **A retry budget per store** ([`BudgetConnector`], under the counter): retries are a share of
//!   successes beyond a burst, and a throttled answer waits longer before its retry.
//! - **Reads that go on**: an answer that breaks off is read on from the byte it reached, a read that
//!   stops before its end (given up at its caller's deadline) leaves its bytes for the same read asked
//!   again to go on from, and the same read asked twice at once is sent once.
//!
//! The cloud crates describe their settings and client with a [`CloudStore`]; [`cloud`] assembles the
//! backend and gives each crate its constructors, so none of them writes that code again.

#![warn(missing_docs)]

mod budget;
pub mod cloud;
mod counter;
mod errors;
mod settings;
#[cfg(feature = "testing")]
pub mod testing;
mod unfinished;

pub use budget::{BudgetConnector, RetryBudget, RetryBudgetSettings, RetryBudgetSpent, retry_budget_spent};
pub use cloud::{CloudKind, CloudStore, CloudStores};
pub use counter::CountingConnector;
pub use errors::{Class, Redactor, ScrubbedCause, StatusError, classify, map_error, percent_encode};
pub use rsm_core::backend::{CountSnapshot, Op, OpCount, RequestCounts};
pub use settings::{ClientSettings, split_store_url};

/// What the exported macros name; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use rsm_core;
    pub use rsm_core::Result;
    pub use rsm_core::backend::StorageBackend;
    pub use rsm_core::config::ConfigReader;
    pub use std::sync::Arc;
}

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as ObjectPath;
use object_store::{
    Attributes, GetOptions, GetRange, MultipartUpload, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
};
use rsm_core::backend::{ByteStream, IncompleteUpload, ObjectMeta, StorageBackend, clamp_range, validate_key};
use rsm_core::single_flight::SingleFlight;
use rsm_core::{Error, Result};
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use unfinished::{ReadProgress, UnfinishedReads};

/// The most times one read asks again for the rest of an answer that broke off ([`ObjectStoreBackend::get_range`]).
const RESUMES: usize = 64;

/// The fewest bytes an answer that broke off must have brought for the read to ask for the rest again: a
/// store that cuts every answer sooner fails the read.
const RESUME_PROGRESS: usize = 1024;

/// The object_store range of our `range` (`u64::MAX` as its end: to the object's end).
fn get_range_of(range: &Range<u64>) -> Option<GetRange> {
    match (range.start, range.end) {
        (0, u64::MAX) => None,
        (s, u64::MAX) => Some(GetRange::Offset(s)),
        (s, e) => Some(GetRange::Bounded(s..e)),
    }
}

/// `pieces` (`len` bytes in all) as one buffer: the one piece itself, or a copy of them all.
fn joined(mut pieces: Vec<Bytes>, len: usize) -> Bytes {
    if pieces.len() == 1 {
        return pieces.pop().unwrap_or_default();
    }
    let mut all = BytesMut::with_capacity(len);
    pieces.iter().for_each(|p| all.extend_from_slice(p));
    all.freeze()
}

/// How uploads are cut into requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadSettings {
    /// Objects of at most this many bytes go in one PUT; larger ones go multipart.
    pub multipart_threshold: u64,
    /// Size of every multipart part but the last.
    pub part_size: usize,
    /// Parts uploaded at once (at least 1).
    pub parts_in_flight: usize,
}

impl Default for UploadSettings {
    fn default() -> Self {
        UploadSettings { multipart_threshold: 25 << 20, part_size: 25 << 20, parts_in_flight: 4 }
    }
}

impl UploadSettings {
    /// Parts of `part_size` bytes, with the threshold equal to one part.
    pub fn with_part_size(part_size: usize) -> Self {
        UploadSettings { multipart_threshold: part_size as u64, part_size, ..Default::default() }
    }
}

/// The incomplete multipart uploads of a store, which object_store does not list: a cloud crate whose store
/// has multipart uploads supplies this ([`CloudStores::with_uploads`]), and the backend's
/// [`StorageBackend::list_incomplete_uploads`] and [`StorageBackend::abort_upload`] go through it.
#[async_trait]
pub trait MultipartUploads: Send + Sync + fmt::Debug {
    /// The uploads to keys starting with `prefix` never completed nor aborted, each with its parts' bytes;
    /// see [`StorageBackend::list_incomplete_uploads`].
    async fn list(&self, prefix: &str) -> Result<Vec<IncompleteUpload>>;

    /// Aborts upload `upload_id` to `key`; one that is gone is no error.
    async fn abort(&self, key: &str, upload_id: &str) -> Result<()>;
}

/// A [`StorageBackend`] over an object_store store.
pub struct ObjectStoreBackend {
    name: &'static str,
    store: Arc<dyn ObjectStore>,
    lister: Option<Arc<dyn PaginatedListStore>>,
    uploads: Option<Arc<dyn MultipartUploads>>,
    upload: UploadSettings,
    attributes: Attributes,
    redactor: Redactor,
    counter: Option<Arc<RequestCounts>>,
    /// Whether the store answers a suffix range (`bytes=-N`); without, a tail read is a HEAD and a ranged GET.
    suffix_reads: bool,
    /// Reads that stopped before their end, for the same read asked again to continue.
    unfinished: UnfinishedReads,
    /// Ranged reads running, by key and range.
    reads: SingleFlight<(String, u64, u64), Bytes>,
}

impl fmt::Debug for ObjectStoreBackend {
    /// Shows the store's name and bucket (object_store's `Display`) and the upload settings, never
    /// credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectStoreBackend")
            .field("backend", &self.name)
            .field("store", &self.redactor.scrub(&self.store.to_string()))
            .field("upload", &self.upload)
            .field("attributes", &self.attributes.len())
            .finish()
    }
}

impl ObjectStoreBackend {
    /// Wraps `store`; `name` (such as `s3`) appears in error messages.
    pub fn new(name: &'static str, store: Arc<dyn ObjectStore>) -> Self {
        ObjectStoreBackend {
            name,
            store,
            lister: None,
            uploads: None,
            upload: UploadSettings::default(),
            attributes: Attributes::new(),
            redactor: Redactor::default(),
            counter: None,
            suffix_reads: true,
            unfinished: UnfinishedReads::default(),
            reads: SingleFlight::new(),
        }
    }

    /// Whether the store answers suffix range reads (the default); object_store's Azure client refuses
    /// them, so an Azure backend reads an object's tail with a HEAD (its size) and a ranged GET.
    pub fn with_suffix_reads(mut self, suffix_reads: bool) -> Self {
        self.suffix_reads = suffix_reads;
        self
    }

    /// Lists through `lister` (the same store), which takes raw key prefixes in one request per page.
    /// Without it, listing reads the enclosing "directory" and filters.
    pub fn with_paginated_list(mut self, lister: Arc<dyn PaginatedListStore>) -> Self {
        self.lister = Some(lister);
        self
    }

    /// Lists and aborts incomplete multipart uploads through `uploads` (the same store); without it the
    /// backend lists none.
    pub fn with_multipart_uploads(mut self, uploads: Arc<dyn MultipartUploads>) -> Self {
        self.uploads = Some(uploads);
        self
    }

    /// Sets how uploads are cut.
    pub fn with_upload(mut self, upload: UploadSettings) -> Self {
        assert!(upload.part_size > 0 && upload.parts_in_flight > 0);
        self.upload = upload;
        self
    }

    /// Attributes sent with every upload (such as a storage class).
    pub fn with_attributes(mut self, attributes: Attributes) -> Self {
        self.attributes = attributes;
        self
    }

    /// Secrets to scrub from every error message.
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Remembers the HTTP counter the store's connector counts into, for [`Self::http_counts`].
    pub fn with_counter(mut self, counter: Arc<RequestCounts>) -> Self {
        self.counter = Some(counter);
        self
    }

    /// Requests and bytes so far by HTTP method, if a counter was attached.
    pub fn http_counts(&self) -> Option<CountSnapshot> {
        self.counter.as_ref().map(|c| c.snapshot())
    }

    /// The upload settings.
    pub fn upload_settings(&self) -> UploadSettings {
        self.upload
    }

    /// The wrapped store.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    fn err(&self, op: &str, key: &str, e: object_store::Error) -> Error {
        map_error(self.name, op, key, e, &self.redactor)
    }

    /// The bytes of the read `progress` of `range` of `key`, whose next answer is `answer`, read on from the
    /// byte reached when an answer breaks off ([`RESUMES`]): object_store resumes a cut answer a few times
    /// (`<p>.max.retries`) and then fails the read, and a caller reading it again from its start read the
    /// same bytes over and over (a broker under cut connections read 82 MB to serve nothing). Each further
    /// answer asks for the rest only, of the same version of the object (its ETag), and must bring at least
    /// [`RESUME_PROGRESS`] bytes for the next. A read that stops before its end (failed, or dropped at its
    /// caller's deadline) leaves what it received to the next read of the same range ([`unfinished`]).
    async fn read_resuming(
        &self,
        key: &str,
        location: &ObjectPath,
        range: &Range<u64>,
        mut progress: ReadProgress<'_>,
        first: object_store::GetResult,
    ) -> Result<Bytes> {
        if progress.e_tag.is_none() {
            progress.e_tag = first.meta.e_tag.clone();
        }
        let mut answer = first;
        let mut resumes = 0;
        loop {
            let before = progress.got;
            let mut stream = answer.into_stream();
            let mut broke = None;
            while let Some(piece) = stream.next().await {
                match piece {
                    Ok(b) => progress.push(b),
                    Err(e) => {
                        broke = Some(e);
                        break;
                    }
                }
            }
            let Some(e) = broke else { return Ok(progress.finish()) };
            let transient = classify(&e) == Class::Transient;
            if !transient || progress.got - before < RESUME_PROGRESS || resumes == RESUMES {
                progress.keep_on_drop(transient);
                return Err(self.err("reading", key, e).with_field("bytes read", progress.got));
            }
            resumes += 1;
            tracing::debug!(key, at = range.start + progress.got as u64, resumes, error = %e,
                "an answer broke off; reading the rest");
            answer = self.read_rest(key, location, range, &mut progress).await?;
        }
    }

    /// The answer to a read of what `progress` has not received of `range`, of the version it has (an
    /// object changed since is read from its start again).
    async fn read_rest(
        &self,
        key: &str,
        location: &ObjectPath,
        range: &Range<u64>,
        progress: &mut ReadProgress<'_>,
    ) -> Result<object_store::GetResult> {
        let at = range.start + progress.got as u64;
        let rest = if range.end == u64::MAX { GetRange::Offset(at) } else { GetRange::Bounded(at..range.end) };
        let opts = GetOptions { range: Some(rest), if_match: progress.e_tag.clone(), ..Default::default() };
        match self.store.get_opts(location, opts).await {
            Ok(answer) => Ok(answer),
            Err(object_store::Error::Precondition { .. }) => {
                tracing::debug!(key, "the object changed since a read of it stopped; reading it again");
                progress.restart();
                let opts = GetOptions { range: get_range_of(range), ..Default::default() };
                self.store.get_opts(location, opts).await.map_err(|e| self.err("reading", key, e))
            }
            Err(e) => {
                progress.keep_on_drop(classify(&e) == Class::Transient);
                Err(self.err("reading", key, e))
            }
        }
    }

    /// The bytes `range` (not empty) of `key`, continuing a read of the same range that stopped before its
    /// end ([`unfinished`]).
    async fn read_range(&self, key: &str, location: &ObjectPath, range: Range<u64>) -> Result<Bytes> {
        let mut progress = self.unfinished.start(key, &range);
        if progress.got > 0 {
            tracing::debug!(
                key,
                at = range.start + progress.got as u64,
                "reading on where a read of the range stopped"
            );
            let answer = self.read_rest(key, location, &range, &mut progress).await?;
            return self.read_resuming(key, location, &range, progress, answer).await;
        }
        let opts = GetOptions { range: get_range_of(&range), ..Default::default() };
        match self.store.get_opts(location, opts).await {
            Ok(answer) => self.read_resuming(key, location, &range, progress, answer).await,
            Err(e) if classify(&e) == Class::RangeNotSatisfiable => {
                // The range starts at or past the end (or the object is empty): which one decides
                // between empty bytes and an invalid argument.
                let size = self.size_of(key, location).await?;
                let r = clamp_range(key, range, size)?;
                if r.is_empty() { Ok(Bytes::new()) } else { Err(self.err("reading", key, e)) }
            }
            Err(e) => Err(self.err("reading", key, e)),
        }
    }

    fn path(key: &str) -> Result<ObjectPath> {
        validate_key(key)?;
        ObjectPath::parse(key).map_err(|e| Error::invalid(format!("object key `{}`: {e}", key.escape_debug())))
    }

    fn put_options(&self) -> PutOptions {
        PutOptions { attributes: self.attributes.clone(), ..Default::default() }
    }

    async fn put_single(&self, key: &str, path: &ObjectPath, payload: PutPayload) -> Result<()> {
        self.store.put_opts(path, payload, self.put_options()).await.map_err(|e| self.err("uploading", key, e))?;
        Ok(())
    }

    async fn start_multipart(&self, key: &str, path: &ObjectPath) -> Result<Box<dyn MultipartUpload>> {
        let opts = PutMultipartOptions { attributes: self.attributes.clone(), ..Default::default() };
        self.store.put_multipart_opts(path, opts).await.map_err(|e| self.err("starting a multipart upload of", key, e))
    }

    /// Aborts `upload` after `cause`, logging (not returning) a failure to abort.
    async fn abort(&self, key: &str, mut upload: Box<dyn MultipartUpload>, cause: &Error) {
        tracing::warn!(backend = self.name, key, error = %cause.full_message(), "upload failed; aborting the multipart upload");
        if let Err(e) = upload.abort().await {
            let e = self.err("aborting the multipart upload of", key, e);
            tracing::warn!(backend = self.name, key, error = %e.full_message(),
                "abort failed; the store's lifecycle rules must remove the parts");
        }
    }
}

/// Parts of one multipart upload, sent with a bounded number in flight.
struct PartSender<'a> {
    backend: &'a ObjectStoreBackend,
    key: &'a str,
    /// The upload until it is completed or aborted; dropped before either (the caller's future dropped
    /// mid-upload), it is aborted in the background ([`Drop`]).
    upload: Option<Box<dyn MultipartUpload>>,
    /// Parts run as tasks, so they progress while the next part is read; dropping the set aborts them.
    in_flight: tokio::task::JoinSet<object_store::Result<()>>,
}

impl<'a> PartSender<'a> {
    async fn start(backend: &'a ObjectStoreBackend, key: &'a str, path: &ObjectPath) -> Result<Self> {
        let upload = backend.start_multipart(key, path).await?;
        Ok(PartSender { backend, key, upload: Some(upload), in_flight: tokio::task::JoinSet::new() })
    }

    fn upload(&mut self) -> &mut Box<dyn MultipartUpload> {
        self.upload.as_mut().expect("the upload is held until completed or aborted")
    }

    /// Queues one part, first waiting for room.
    async fn send(&mut self, part: PutPayload) -> Result<()> {
        while self.in_flight.len() >= self.backend.upload.parts_in_flight {
            self.wait_one().await?;
        }
        let part = self.upload().put_part(part);
        self.in_flight.spawn(part);
        Ok(())
    }

    async fn wait_one(&mut self) -> Result<()> {
        if let Some(r) = self.in_flight.join_next().await {
            let r = r.map_err(|e| Error::storage(format!("uploading a part of `{}`", self.key), e))?;
            r.map_err(|e| self.backend.err("uploading a part of", self.key, e))?;
        }
        Ok(())
    }

    async fn complete(mut self) -> Result<()> {
        let r = async {
            while !self.in_flight.is_empty() {
                self.wait_one().await?;
            }
            self.upload()
                .complete()
                .await
                .map_err(|e| self.backend.err("completing the multipart upload of", self.key, e))
        }
        .await;
        match r {
            Ok(_) => {
                self.upload = None;
                Ok(())
            }
            Err(e) => {
                self.fail(&e).await;
                Err(e)
            }
        }
    }

    /// Drops the parts in flight and aborts the upload.
    async fn fail(mut self, cause: &Error) {
        // Stops the part uploads still running before the upload itself is aborted.
        self.in_flight.abort_all();
        while self.in_flight.join_next().await.is_some() {}
        if let Some(upload) = self.upload.take() {
            self.backend.abort(self.key, upload, cause).await;
        }
    }
}

impl Drop for PartSender<'_> {
    /// An upload neither completed nor aborted (its future was dropped mid-upload: a timeout, or the
    /// failure of an upload beside it) is aborted by a task of its own, so its parts do not stay in the
    /// store, invisible and billed; without a runtime to run it, it stays for the orphan sweep.
    fn drop(&mut self) {
        let Some(mut upload) = self.upload.take() else { return };
        self.in_flight.abort_all();
        let (name, key, redactor) = (self.backend.name, self.key.to_string(), self.backend.redactor.clone());
        tracing::warn!(backend = name, key, "upload dropped before it completed; aborting the multipart upload");
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(backend = name, key, "no runtime to abort the multipart upload; `rsm sweep` removes it");
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = upload.abort().await {
                let e = map_error(name, "aborting the multipart upload of", &key, e, &redactor);
                tracing::warn!(backend = name, key, error = %e.full_message(),
                    "abort failed; `rsm sweep` or the store's lifecycle rules must remove the parts");
            }
        });
    }
}

async fn read_part(file: &mut tokio::fs::File, key: &str, path: &Path, n: usize) -> Result<Bytes> {
    let mut buf = BytesMut::zeroed(n);
    file.read_exact(&mut buf).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::invalid(format!("uploading `{key}`: {} is shorter than the length asked for", path.display()))
        } else {
            Error::from_io(path.display(), e)
        }
    })?;
    Ok(buf.freeze())
}

#[async_trait]
impl StorageBackend for ObjectStoreBackend {
    /// A cloud store's: object_store retries its own requests, across a network.
    fn capabilities(&self) -> rsm_core::backend::Capabilities {
        rsm_core::backend::Capabilities::CLOUD
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        let location = Self::path(key)?;
        let mut file = tokio::fs::File::open(path).await.map_err(|e| Error::from_io(path.display(), e))?;
        let actual = file.metadata().await.map_err(|e| Error::from_io(path.display(), e))?.len();
        if actual < len {
            return Err(Error::invalid(format!(
                "uploading `{key}`: {} has {actual} bytes, fewer than the {len} asked for",
                path.display()
            )));
        }
        if len <= self.upload.multipart_threshold {
            let bytes = read_part(&mut file, key, path, len as usize).await?;
            return self.put_single(key, &location, bytes.into()).await;
        }
        let mut sender = PartSender::start(self, key, &location).await?;
        let mut left = len;
        while left > 0 {
            let n = left.min(self.upload.part_size as u64) as usize;
            let r = match read_part(&mut file, key, path, n).await {
                Ok(part) => sender.send(part.into()).await,
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                sender.fail(&e).await;
                return Err(e);
            }
            left -= n as u64;
        }
        sender.complete().await
    }

    async fn put_stream(&self, key: &str, mut data: ByteStream) -> Result<()> {
        let location = Self::path(key)?;
        let part_size = self.upload.part_size;
        // Pieces of the part being gathered, sliced (not copied) at part boundaries.
        let mut pending: Vec<Bytes> = Vec::new();
        let mut pending_len = 0usize;
        let mut sender: Option<PartSender<'_>> = None;
        loop {
            let item = data.next().await;
            let step: Result<bool> = async {
                match item {
                    None => Ok(false),
                    Some(Err(e)) => Err(e.context(format!("uploading `{key}`: the source failed"))),
                    Some(Ok(mut b)) => {
                        while !b.is_empty() {
                            if pending_len == part_size {
                                // A full part and more to come: it goes as a multipart part.
                                if sender.is_none() {
                                    sender = Some(PartSender::start(self, key, &location).await?);
                                }
                                let part: PutPayload = std::mem::take(&mut pending).into_iter().collect();
                                pending_len = 0;
                                sender.as_mut().expect("started").send(part).await?;
                            }
                            let take = (part_size - pending_len).min(b.len());
                            pending.push(b.split_to(take));
                            pending_len += take;
                        }
                        Ok(true)
                    }
                }
            }
            .await;
            match step {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) => {
                    if let Some(s) = sender.take() {
                        s.fail(&e).await;
                    }
                    return Err(e);
                }
            }
        }
        let rest: PutPayload = pending.into_iter().collect();
        match sender {
            None => self.put_single(key, &location, rest).await,
            Some(mut s) => {
                if rest.content_length() > 0
                    && let Err(e) = s.send(rest).await
                {
                    s.fail(&e).await;
                    return Err(e);
                }
                s.complete().await
            }
        }
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let location = Self::path(key)?;
        if range.start > range.end {
            return Err(Error::invalid(format!("object {key}: range {}..{} is reversed", range.start, range.end)));
        }
        if range.start == range.end {
            // No bytes wanted: only whether the key exists and the range starts within it.
            let size = self.size_of(key, &location).await?;
            clamp_range(key, range, size)?;
            return Ok(Bytes::new());
        }
        // A read of the same range running already (a broker asking again for a fetch it gave up on, while
        // the first read still runs) is waited for, not sent again.
        let read = (key.to_string(), range.start, range.end);
        self.reads.run(read, || self.read_range(key, &location, range)).await
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        let location = Self::path(key)?;
        if !self.suffix_reads || len == 0 {
            let size = self.size_of(key, &location).await?;
            let start = size.saturating_sub(len);
            let bytes = if start == size { Bytes::new() } else { self.get_range(key, start..size).await? };
            return Ok((bytes, size));
        }
        let opts = GetOptions { range: Some(GetRange::Suffix(len)), ..Default::default() };
        let got = match self.store.get_opts(&location, opts).await {
            Ok(r) => {
                let size = r.meta.size;
                r.bytes().await.map(|b| (b, size))
            }
            Err(e) => Err(e),
        };
        match got {
            Ok((b, size)) if b.len() as u64 == len.min(size) => Ok((b, size)),
            Ok((b, size)) => Err(Error::corrupt(format!(
                "object {key}: a read of its last {len} bytes returned {} of its {size}",
                b.len()
            ))),
            Err(e) if classify(&e) == Class::NotFound => Err(self.err("reading", key, e)),
            // An empty object has no suffix to give: a store refuses the range (416), or answers whole (moto),
            // which the client refuses.
            Err(e) => match self.size_of(key, &location).await {
                Ok(0) => Ok((Bytes::new(), 0)),
                _ => Err(self.err("reading", key, e)),
            },
        }
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let location = Self::path(key)?;
        match object_store::ObjectStoreExt::delete(self.store.as_ref(), &location).await {
            Ok(()) => Ok(()),
            Err(e) if classify(&e) == Class::NotFound => Ok(()),
            Err(e) => Err(self.err("deleting", key, e)),
        }
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let paths = keys.iter().map(|k| Self::path(k)).collect::<Result<Vec<_>>>()?;
        let input = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
        let mut results = self.store.delete_stream(input);
        let mut first_error = None;
        while let Some(r) = results.next().await {
            match r {
                Ok(_) => {}
                Err(e) if classify(&e) == Class::NotFound => {}
                Err(e) => {
                    if first_error.is_none() {
                        let key = match &e {
                            object_store::Error::NotFound { path, .. } => path.clone(),
                            _ => format!("{} (one of {} keys)", keys[0], keys.len()),
                        };
                        first_error = Some(self.err("deleting", &key, e));
                    }
                }
            }
        }
        match first_error {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let mut out = Vec::new();
        let convert = |m: object_store::ObjectMeta| ObjectMeta {
            key: m.location.to_string(),
            size: m.size,
            last_modified: Some(m.last_modified.into()),
        };
        match &self.lister {
            Some(lister) => {
                let mut token = None;
                loop {
                    let opts = PaginatedListOptions { page_token: token.take(), ..Default::default() };
                    let p = (!prefix.is_empty()).then_some(prefix);
                    let page = lister.list_paginated(p, opts).await.map_err(|e| self.err("listing", prefix, e))?;
                    out.extend(page.result.objects.into_iter().map(convert).filter(|o| o.key.starts_with(prefix)));
                    match page.page_token {
                        Some(t) => token = Some(t),
                        None => break,
                    }
                }
            }
            None => {
                // object_store's list matches whole segments: list the enclosing directory, then filter.
                let dir = prefix.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                let dir = (!dir.is_empty()).then(|| ObjectPath::from(dir));
                let mut s = self.store.list(dir.as_ref());
                while let Some(m) = s.next().await {
                    let m = m.map_err(|e| self.err("listing", prefix, e))?;
                    let o = convert(m);
                    if o.key.starts_with(prefix) {
                        out.push(o);
                    }
                }
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out.dedup_by(|a, b| a.key == b.key);
        Ok(out)
    }

    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        match &self.uploads {
            Some(u) => u.list(prefix).await,
            None => Ok(Vec::new()),
        }
    }

    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        validate_key(key)?;
        match &self.uploads {
            Some(u) => u.abort(key, upload_id).await,
            None => Ok(()),
        }
    }

    fn store_requests(&self) -> Option<Arc<RequestCounts>> {
        self.counter.clone()
    }
}

impl ObjectStoreBackend {
    async fn size_of(&self, key: &str, location: &ObjectPath) -> Result<u64> {
        object_store::ObjectStoreExt::head(self.store.as_ref(), location)
            .await
            .map(|m| m.size)
            .map_err(|e| self.err("reading", key, e))
    }
}
