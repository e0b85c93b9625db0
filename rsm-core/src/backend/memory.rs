//! An in-memory backend, for unit tests and the `memory:` store URL.

use super::{ByteStream, ObjectMeta, StorageBackend, clamp_range, validate_key};
use crate::error::{Error, Result};
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::RwLock;
use std::time::SystemTime;

/// Objects held in a map; uploads become visible whole when complete.
#[derive(Debug, Default)]
pub struct MemoryBackend {
    objects: RwLock<BTreeMap<String, (Bytes, SystemTime)>>,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn insert(&self, key: &str, bytes: Bytes) {
        self.objects.write().expect("memory backend lock").insert(key.to_string(), (bytes, SystemTime::now()));
    }
}

#[async_trait]
impl StorageBackend for MemoryBackend {
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        validate_key(key)?;
        let mut data = tokio::fs::read(path).await.map_err(|e| Error::from_io(path.display(), e))?;
        if (data.len() as u64) < len {
            return Err(Error::invalid(format!("{}: {} bytes, expected at least {len}", path.display(), data.len())));
        }
        data.truncate(len as usize);
        self.insert(key, Bytes::from(data));
        Ok(())
    }

    async fn put_stream(&self, key: &str, mut data: ByteStream) -> Result<()> {
        validate_key(key)?;
        let mut buf = BytesMut::new();
        while let Some(item) = data.next().await {
            buf.extend_from_slice(&item?);
        }
        self.insert(key, buf.freeze());
        Ok(())
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        validate_key(key)?;
        let obj = self.objects.read().expect("memory backend lock").get(key).map(|(b, _)| b.clone());
        let obj = obj.ok_or_else(|| Error::not_found(format!("object {key}")))?;
        let r = clamp_range(key, range, obj.len() as u64)?;
        Ok(obj.slice(r.start as usize..r.end as usize))
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        validate_key(key)?;
        let obj = self.objects.read().expect("memory backend lock").get(key).map(|(b, _)| b.clone());
        let obj = obj.ok_or_else(|| Error::not_found(format!("object {key}")))?;
        let size = obj.len() as u64;
        Ok((obj.slice(size.saturating_sub(len) as usize..), size))
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        self.objects.write().expect("memory backend lock").remove(key);
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let objects = self.objects.read().expect("memory backend lock");
        Ok(objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, (v, t))| ObjectMeta { key: k.clone(), size: v.len() as u64, last_modified: Some(*t) })
            .collect())
    }
}
