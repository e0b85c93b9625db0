//! One `tracing` span per backend operation, and the operation and key on every error that passes.

use super::{Layer, LayeredBackend};
use crate::backend::{ByteStream, ObjectMeta, StorageBackend, TemporaryObject};
use crate::error::Result;
use async_trait::async_trait;
use bytes::Bytes;
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use tracing::Instrument;

/// Runs each call inside a debug span `rsm.backend` with the operation, the key and the byte range or
/// length; a failure is logged at debug level inside it and returned with the operation and the key as
/// context ([`crate::error::Error::operation`], [`crate::error::Error::field`]`("key")`).
#[derive(Debug)]
pub struct TracingLayer {
    inner: Arc<dyn StorageBackend>,
}

impl TracingLayer {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn StorageBackend>) -> Self {
        TracingLayer { inner }
    }
}

/// The [`Layer`] of a [`TracingLayer`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Tracing;

impl Layer for Tracing {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        Arc::new(TracingLayer::new(inner))
    }
}

async fn traced<T>(
    operation: &'static str,
    key: &str,
    detail: String,
    call: impl Future<Output = Result<T>> + Send,
) -> Result<T> {
    let span = tracing::debug_span!("rsm.backend", operation, key, detail);
    async move {
        call.await.map_err(|e| {
            tracing::debug!(error = %e, "failed");
            e.with_operation(operation).with_field("key", key)
        })
    }
    .instrument(span)
    .await
}

#[async_trait]
impl LayeredBackend for TracingLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        traced("put_file", key, format!("{len} bytes"), self.inner.put_file(key, path, len)).await
    }

    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        traced("put_stream", key, String::new(), self.inner.put_stream(key, data)).await
    }

    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        traced("put_bytes", key, format!("{} bytes", bytes.len()), self.inner.put_bytes(key, bytes)).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let detail = format!("{}..{}", range.start, range.end);
        traced("get_range", key, detail, self.inner.get_range(key, range)).await
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        traced("get_tail", key, format!("last {len} bytes"), self.inner.get_tail(key, len)).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        traced("delete", key, String::new(), self.inner.delete(key)).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let first = keys.first().map_or("", String::as_str);
        traced("delete_many", first, format!("{} keys", keys.len()), self.inner.delete_many(keys)).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        traced("list", prefix, String::new(), self.inner.list(prefix)).await
    }

    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        traced("list_temporary", prefix, String::new(), self.inner.list_temporary(prefix)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemoryBackend;
    use crate::error::ErrorKind;

    #[tokio::test]
    async fn errors_carry_operation_and_key() {
        let t: Arc<dyn StorageBackend> = Arc::new(TracingLayer::new(Arc::new(MemoryBackend::new())));
        let e = t.get_range("t/0/missing.log", 0..10).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.operation(), Some("get_range"));
        assert_eq!(e.field("key"), Some("t/0/missing.log"));
    }
}
