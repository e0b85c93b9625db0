//! Cross-cutting concerns as layers over any [`StorageBackend`]: each wraps another backend and changes
//! only what it is about, passing every other call through unchanged.
//!
//! A layer implements [`LayeredBackend`]: it names its inner backend, and every method it does not override
//! goes straight to that backend. A blanket implementation makes every layer a [`StorageBackend`], so
//! layers stack in any order and the backend contract suite runs over each of them.
//!
//! - [`CountingLayer`]: requests, failures and bytes by operation, into a [`RequestCounts`];
//! - [`RetryLayer`]: retries transient failures with exponential backoff and jitter, bounded by attempts and
//!   a deadline (settings `retry.*`), for stores whose client does not retry by itself;
//! - [`FaultLayer`]: injects errors, latency and hangs by operation and key pattern (tests, isolation);
//! - [`ParallelReadLayer`]: splits a long ranged read into parts read at once (`fetch.part.size`), for
//!   cloud stores;
//! - [`RateLimitLayer`]: paces uploads to one shared limit of bytes a second
//!   (`upload.rate.limit.bytes.per.second`);
//! - [`TracingLayer`]: one `tracing` span per operation, and the operation and key on every error;
//! - [`BreakerLayer`]: a circuit breaker per store: after transient failures in a row, calls fail at once
//!   for a growing interval, one call probing whether the store is back (settings `store.breaker.*`).
//!
//! A [`Layer`] is what puts a layer over a backend (after OpenDAL's `Layer`): the layers' configs implement
//! it ([`Counting`], [`RetryConfig`], [`Tracing`], [`BreakerConfig`]), so an opener (the facade's
//! `StoreBuilder`) builds a stack from a list of them, and a host adds its own the same way.

mod breaker;
mod counting;
mod faults;
mod parallel;
mod rate_limit;
mod retry;
mod tracing;

pub use self::tracing::{Tracing, TracingLayer};
pub use breaker::{BreakerConfig, BreakerLayer, BreakerState, BreakerStats, is_refusal};
pub use counting::{Counting, CountingLayer};
pub use faults::{Fault, FaultLayer, FaultRule};
pub use parallel::{MAX_SPLIT_BYTES, ParallelReadLayer, ParallelReads};
pub use rate_limit::{RateLimitLayer, UploadRateLimit};
pub use retry::{RetryConfig, RetryLayer};

use super::{
    ByteStream, Capabilities, IncompleteUpload, LocalObject, ObjectMeta, RequestCounts, StorageBackend, TemporaryObject,
};
use crate::error::Result;
use async_trait::async_trait;
use bytes::Bytes;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// What puts a layer over a backend: given the backend below, returns it wrapped. A stack is built by
/// applying layers in order, each over the stack so far ([`stack`]), so the last one applied is the
/// outermost: it sees every call first and every result last.
pub trait Layer: Send + Sync + fmt::Debug {
    /// Wraps `inner` in this layer.
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend>;
}

/// Applies `layers` over `backend` in order: the first is the innermost, the last the outermost.
pub fn stack<'a>(
    backend: Arc<dyn StorageBackend>,
    layers: impl IntoIterator<Item = &'a dyn Layer>,
) -> Arc<dyn StorageBackend> {
    layers.into_iter().fold(backend, |inner, layer| layer.layer(inner))
}

/// A backend that wraps another. Every method passes through to [`LayeredBackend::inner`] unless the
/// layer overrides it; `put_bytes` and `delete_many` pass through as themselves, so a store's own bulk
/// delete and a retry layer's replay of bytes still work below any layer.
#[async_trait]
pub trait LayeredBackend: Send + Sync + fmt::Debug + 'static {
    /// The wrapped backend.
    fn inner(&self) -> &Arc<dyn StorageBackend>;

    /// See [`StorageBackend::put_file`].
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.inner().put_file(key, path, len).await
    }

    /// See [`StorageBackend::put_stream`].
    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        self.inner().put_stream(key, data).await
    }

    /// See [`StorageBackend::put_bytes`].
    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.inner().put_bytes(key, bytes).await
    }

    /// See [`StorageBackend::get_range`].
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner().get_range(key, range).await
    }

    /// See [`StorageBackend::get_tail`].
    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        self.inner().get_tail(key, len).await
    }

    /// See [`StorageBackend::delete`].
    async fn delete(&self, key: &str) -> Result<()> {
        self.inner().delete(key).await
    }

    /// See [`StorageBackend::delete_many`].
    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        self.inner().delete_many(keys).await
    }

    /// See [`StorageBackend::list`].
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.inner().list(prefix).await
    }

    /// See [`StorageBackend::list_temporary`].
    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        self.inner().list_temporary(prefix).await
    }

    /// See [`StorageBackend::list_incomplete_uploads`].
    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        self.inner().list_incomplete_uploads(prefix).await
    }

    /// See [`StorageBackend::abort_upload`].
    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        self.inner().abort_upload(key, upload_id).await
    }

    /// See [`StorageBackend::store_requests`].
    fn store_requests(&self) -> Option<Arc<RequestCounts>> {
        self.inner().store_requests()
    }

    /// See [`StorageBackend::open_local`].
    fn open_local(&self, key: &str) -> Result<Option<Box<dyn LocalObject>>> {
        self.inner().open_local(key)
    }

    /// See [`StorageBackend::capabilities`].
    fn capabilities(&self) -> Capabilities {
        self.inner().capabilities()
    }
}

#[async_trait]
impl<T: LayeredBackend> StorageBackend for T {
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        LayeredBackend::put_file(self, key, path, len).await
    }
    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        LayeredBackend::put_stream(self, key, data).await
    }
    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        LayeredBackend::put_bytes(self, key, bytes).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        LayeredBackend::get_range(self, key, range).await
    }
    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        LayeredBackend::get_tail(self, key, len).await
    }
    async fn delete(&self, key: &str) -> Result<()> {
        LayeredBackend::delete(self, key).await
    }
    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        LayeredBackend::delete_many(self, keys).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        LayeredBackend::list(self, prefix).await
    }
    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        LayeredBackend::list_temporary(self, prefix).await
    }
    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        LayeredBackend::list_incomplete_uploads(self, prefix).await
    }
    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        LayeredBackend::abort_upload(self, key, upload_id).await
    }
    fn store_requests(&self) -> Option<Arc<RequestCounts>> {
        LayeredBackend::store_requests(self)
    }
    fn open_local(&self, key: &str) -> Result<Option<Box<dyn LocalObject>>> {
        LayeredBackend::open_local(self, key)
    }
    fn capabilities(&self) -> Capabilities {
        LayeredBackend::capabilities(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemoryBackend;

    #[tokio::test]
    async fn a_stack_applies_its_layers_innermost_first() {
        let counting = Counting::new(RequestCounts::new());
        let retry = RetryConfig::default();
        let layers: [&dyn Layer; 3] = [&counting, &retry, &Tracing];
        let backend = stack(Arc::new(MemoryBackend::new()), layers);
        let shown = format!("{backend:?}");
        let at = |name: &str| shown.find(name).unwrap_or_else(|| panic!("{name} in {shown}"));
        assert!(at("TracingLayer") < at("RetryLayer") && at("RetryLayer") < at("CountingLayer"), "{shown}");
        assert!(at("CountingLayer") < at("MemoryBackend"), "{shown}");
        backend.put_bytes("k", Bytes::from_static(b"abc")).await.unwrap();
        assert_eq!(counting.counts().snapshot().get(crate::backend::Op::Put).requests, 1);
    }
}
