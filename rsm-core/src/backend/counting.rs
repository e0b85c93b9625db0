//! Counts requests and bytes by operation around any backend, for tests and the CLI's summary.

use super::{ByteStream, ObjectMeta, StorageBackend};
use crate::error::Result;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Requests and bytes of one operation.
#[derive(Debug, Default)]
pub struct OpCounts {
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl OpCounts {
    fn add(&self, bytes: u64) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    /// Calls so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Bytes moved so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// Counters of every operation of the contract.
#[derive(Debug, Default)]
pub struct RequestCounts {
    /// Uploads (files and streams).
    pub put: OpCounts,
    /// Ranged reads.
    pub get: OpCounts,
    /// Deletes (one per key, or one per bulk call).
    pub delete: OpCounts,
    /// Listings.
    pub list: OpCounts,
}

impl RequestCounts {
    /// All requests.
    pub fn total(&self) -> u64 {
        self.put.requests() + self.get.requests() + self.delete.requests() + self.list.requests()
    }
}

/// Wraps a backend and counts what passes through, at the contract's level (one upload is one request
/// here, whatever the store does underneath).
#[derive(Debug)]
pub struct CountingBackend {
    inner: Arc<dyn StorageBackend>,
    counts: Arc<RequestCounts>,
}

impl CountingBackend {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn StorageBackend>) -> Self {
        CountingBackend { inner, counts: Arc::default() }
    }
    /// The live counters.
    pub fn counts(&self) -> Arc<RequestCounts> {
        self.counts.clone()
    }
}

#[async_trait]
impl StorageBackend for CountingBackend {
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.counts.put.add(len);
        self.inner.put_file(key, path, len).await
    }

    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        let counts = self.counts.clone();
        counts.put.add(0);
        let counted = data.inspect(move |b| {
            if let Ok(b) = b {
                counts.put.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
        });
        self.inner.put_stream(key, Box::pin(counted)).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let r = self.inner.get_range(key, range).await;
        self.counts.get.add(r.as_ref().map(|b| b.len() as u64).unwrap_or(0));
        r
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.counts.delete.add(0);
        self.inner.delete(key).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        self.counts.delete.add(0);
        self.inner.delete_many(keys).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.counts.list.add(0);
        self.inner.list(prefix).await
    }
}
