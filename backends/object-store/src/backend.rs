//! [`ObjectStoreBackend`]: the adapter itself, its settings, and the [`StorageBackend`] calls that are not
//! reads or uploads (those are in `read.rs` and `upload.rs`): tails, deletes, listings, the store's own
//! request counts.

use crate::errors::{Class, Redactor, classify, map_error};
use crate::unfinished::UnfinishedReads;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as ObjectPath;
use object_store::{Attributes, GetOptions, GetRange, ObjectStore};
use rsm_core::backend::{
    ByteStream, CountSnapshot, IncompleteUpload, ObjectMeta, RequestCounts, StorageBackend, clamp_range, validate_key,
};
use rsm_core::single_flight::SingleFlight;
use rsm_core::{Error, Result};
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

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
/// has multipart uploads supplies this ([`crate::CloudStores::with_uploads`]), and the backend's
/// [`rsm_core::backend::StorageBackend::list_incomplete_uploads`] and [`rsm_core::backend::StorageBackend::abort_upload`] go through it.
#[async_trait]
pub trait MultipartUploads: Send + Sync + fmt::Debug {
    /// The uploads to keys starting with `prefix` never completed nor aborted, each with its parts' bytes;
    /// see [`rsm_core::backend::StorageBackend::list_incomplete_uploads`].
    async fn list(&self, prefix: &str) -> Result<Vec<IncompleteUpload>>;

    /// Aborts upload `upload_id` to `key`; one that is gone is no error.
    async fn abort(&self, key: &str, upload_id: &str) -> Result<()>;
}

/// A [`StorageBackend`] over an object_store store.
pub struct ObjectStoreBackend {
    pub(crate) name: &'static str,
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) lister: Option<Arc<dyn PaginatedListStore>>,
    pub(crate) uploads: Option<Arc<dyn MultipartUploads>>,
    pub(crate) upload: UploadSettings,
    pub(crate) attributes: Attributes,
    pub(crate) redactor: Redactor,
    pub(crate) counter: Option<Arc<RequestCounts>>,
    /// Whether the store answers a suffix range (`bytes=-N`); without, a tail read is a HEAD and a ranged GET.
    pub(crate) suffix_reads: bool,
    /// Reads that stopped before their end, for the same read asked again to continue.
    pub(crate) unfinished: UnfinishedReads,
    /// Ranged reads running, by key and range.
    pub(crate) reads: SingleFlight<(String, u64, u64), Bytes>,
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

    pub(crate) fn err(&self, op: &str, key: &str, e: object_store::Error) -> Error {
        map_error(self.name, op, key, e, &self.redactor)
    }

    pub(crate) fn path(key: &str) -> Result<ObjectPath> {
        validate_key(key)?;
        ObjectPath::parse(key).map_err(|e| Error::invalid(format!("object key `{}`: {e}", key.escape_debug())))
    }
}

#[async_trait]
impl StorageBackend for ObjectStoreBackend {
    /// A cloud store's: object_store retries its own requests, across a network.
    fn capabilities(&self) -> rsm_core::backend::Capabilities {
        rsm_core::backend::Capabilities::CLOUD
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.upload_file(key, path, len).await
    }

    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        self.upload_stream(key, data).await
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
    pub(crate) async fn size_of(&self, key: &str, location: &ObjectPath) -> Result<u64> {
        object_store::ObjectStoreExt::head(self.store.as_ref(), location)
            .await
            .map(|m| m.size)
            .map_err(|e| self.err("reading", key, e))
    }
}
