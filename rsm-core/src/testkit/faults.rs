//! A backend wrapper that fails chosen calls, to prove that failures leave nothing visible.

use crate::backend::{ByteStream, ObjectMeta, StorageBackend};
use crate::error::{Error, Result};
use async_trait::async_trait;
use bytes::Bytes;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Fails the uploads whose key ends with `fail_suffix` (a retriable error), passing everything else on.
#[derive(Debug)]
pub struct FailingUploads {
    inner: Arc<dyn StorageBackend>,
    fail_suffix: String,
    failures: AtomicUsize,
}

impl FailingUploads {
    /// Wraps `inner`; uploads to keys ending in `fail_suffix` fail.
    pub fn new(inner: Arc<dyn StorageBackend>, fail_suffix: &str) -> Self {
        FailingUploads { inner, fail_suffix: fail_suffix.to_string(), failures: AtomicUsize::new(0) }
    }

    /// How many uploads were failed.
    pub fn failures(&self) -> usize {
        self.failures.load(Ordering::SeqCst)
    }

    fn check(&self, key: &str) -> Result<()> {
        if key.ends_with(&self.fail_suffix) {
            self.failures.fetch_add(1, Ordering::SeqCst);
            return Err(Error::retriable(format!("injected failure uploading {key}"), "fault injection"));
        }
        Ok(())
    }
}

#[async_trait]
impl StorageBackend for FailingUploads {
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.check(key)?;
        self.inner.put_file(key, path, len).await
    }
    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        self.check(key)?;
        self.inner.put_stream(key, data).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }
    async fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(key).await
    }
    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        self.inner.delete_many(keys).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.inner.list(prefix).await
    }
}
