//! Counts requests, failures and bytes by operation at the contract's level.

use super::{Layer, LayeredBackend};
use crate::backend::{
    ByteStream, IncompleteUpload, KeyCounts, LocalObject, ObjectMeta, Op, RequestCounts, StorageBackend,
};
use crate::error::Result;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// Counts what passes through into a [`RequestCounts`]: one request per call (one upload is one request
/// here, whatever the store does underneath), the bytes sent and received, and the calls that failed.
/// [`StorageBackend::list_temporary`] passes through uncounted: it sends no request to a cloud store, and on
/// the stores that stage uploads it is a walk of their own directories, not an object request.
/// [`StorageBackend::list_incomplete_uploads`] counts as one [`Op::List`] and
/// [`StorageBackend::abort_upload`] as one [`Op::Delete`] (the store's client counts the real requests:
/// [`StorageBackend::store_requests`]).
#[derive(Debug)]
pub struct CountingLayer {
    inner: Arc<dyn StorageBackend>,
    counts: Arc<RequestCounts>,
}

impl CountingLayer {
    /// Wraps `inner` with fresh counters.
    pub fn new(inner: Arc<dyn StorageBackend>) -> Self {
        Self::with_counts(inner, RequestCounts::new())
    }

    /// Wraps `inner`, counting into `counts`.
    pub fn with_counts(inner: Arc<dyn StorageBackend>, counts: Arc<RequestCounts>) -> Self {
        CountingLayer { inner, counts }
    }

    /// The live counters.
    pub fn counts(&self) -> Arc<RequestCounts> {
        self.counts.clone()
    }
}

/// Counts `r` as a failure of `op` when it is one, and passes it on.
fn judge<T>(counts: &KeyCounts, op: Op, r: Result<T>) -> Result<T> {
    if r.is_err() {
        counts.fail(op);
    }
    r
}

/// A local object whose every positional read counts as one get of its bytes.
#[derive(Debug)]
struct CountedLocal {
    inner: Box<dyn LocalObject>,
    counts: KeyCounts,
}

impl LocalObject for CountedLocal {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> Result<()> {
        self.counts.start(Op::Get, 0);
        let r = self.inner.read_exact_at(buf, position);
        match &r {
            Ok(()) => self.counts.add_received(Op::Get, buf.len() as u64),
            Err(_) => self.counts.fail(Op::Get),
        }
        r
    }
}

/// The [`Layer`] of a [`CountingLayer`] that counts into counters given here, so whoever stacks it keeps
/// them (the facade's `Store::counts`).
#[derive(Clone, Debug)]
pub struct Counting {
    counts: Arc<RequestCounts>,
}

impl Counting {
    /// Counting into `counts`.
    pub fn new(counts: Arc<RequestCounts>) -> Self {
        Counting { counts }
    }

    /// The counters the layer counts into.
    pub fn counts(&self) -> Arc<RequestCounts> {
        self.counts.clone()
    }
}

impl Layer for Counting {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        Arc::new(CountingLayer::with_counts(inner, self.counts()))
    }
}

#[async_trait]
impl LayeredBackend for CountingLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        let counts = self.counts.for_key(key);
        counts.start(Op::Put, len);
        judge(&counts, Op::Put, self.inner.put_file(key, path, len).await)
    }

    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        let counts = self.counts.for_key(key);
        counts.start(Op::Put, 0);
        let each = counts.clone();
        let counted = data.inspect(move |b| {
            if let Ok(b) = b {
                each.add_sent(Op::Put, b.len() as u64);
            }
        });
        judge(&counts, Op::Put, self.inner.put_stream(key, Box::pin(counted)).await)
    }

    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        let counts = self.counts.for_key(key);
        counts.start(Op::Put, bytes.len() as u64);
        judge(&counts, Op::Put, self.inner.put_bytes(key, bytes).await)
    }

    fn open_local(&self, key: &str) -> Result<Option<Box<dyn LocalObject>>> {
        let counts = self.counts.for_key(key);
        let opened = judge(&counts, Op::Get, self.inner.open_local(key))?;
        Ok(opened.map(|inner| Box::new(CountedLocal { inner, counts }) as Box<dyn LocalObject>))
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let counts = self.counts.for_key(key);
        counts.start(Op::Get, 0);
        let r = judge(&counts, Op::Get, self.inner.get_range(key, range).await);
        if let Ok(b) = &r {
            counts.add_received(Op::Get, b.len() as u64);
        }
        r
    }

    /// One GET (a suffix range read; where the store needs a size look-up first, that is its own request,
    /// seen by the store's counter).
    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        let counts = self.counts.for_key(key);
        counts.start(Op::Get, 0);
        let r = judge(&counts, Op::Get, self.inner.get_tail(key, len).await);
        if let Ok((b, _)) = &r {
            counts.add_received(Op::Get, b.len() as u64);
        }
        r
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let counts = self.counts.for_key(key);
        counts.start(Op::Delete, 0);
        judge(&counts, Op::Delete, self.inner.delete(key).await)
    }

    /// One request, counted for the topic of its first key (a segment's objects share theirs).
    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let counts = self.counts.for_key(keys.first().map_or("", String::as_str));
        counts.start(Op::Delete, 0);
        judge(&counts, Op::Delete, self.inner.delete_many(keys).await)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let counts = self.counts.for_key(prefix);
        counts.start(Op::List, 0);
        judge(&counts, Op::List, self.inner.list(prefix).await)
    }

    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        let counts = self.counts.for_key(prefix);
        counts.start(Op::List, 0);
        judge(&counts, Op::List, self.inner.list_incomplete_uploads(prefix).await)
    }

    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        let counts = self.counts.for_key(key);
        counts.start(Op::Delete, 0);
        judge(&counts, Op::Delete, self.inner.abort_upload(key, upload_id).await)
    }
}
