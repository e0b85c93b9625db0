//! The blocking facade: opens a store by URL with its settings and runs the async core on one shared
//! tokio runtime. The CLI, the C ABI and JNI are thin faces over this crate, so they behave the same.
//!
//! Store URLs: `file:///absolute/path` (the embedded default), `s3://bucket/prefix`, `az://container/prefix`,
//! `gs://bucket/prefix`, `hdfs://namenode:port/path` and `memory:` (tests). Settings are the
//! keys a broker passes under `rsm.config.` (see [`rsm_core::TieredConfig`] and each backend).

#![warn(missing_docs)]

mod code;
pub use code::ResultCode;

use bytes::Bytes;
use futures::StreamExt;
use rsm_backend_fs::FsBackend;
use rsm_core::backend::{ByteStream, CountingBackend, MemoryBackend, RequestCounts, StorageBackend};
use rsm_core::config::ConfigReader;
use rsm_core::format::manifest::Manifest;
use rsm_core::tiered::VerifyReport;
use rsm_core::{
    CustomMetadata, Error, IndexType, LogSegmentData, RemoteLogSegmentMetadata, RemoteStorageManager, Result,
    TieredConfig, TieredStorage, TopicIdPartition,
};
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, OnceLock};
use tokio::runtime::Runtime;

/// The process-wide runtime all blocking calls run on.
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8))
            .thread_name("rsm-io")
            .enable_all()
            .build()
            .expect("the tokio runtime starts")
    })
}

/// Builds the backend a store URL names, reading its settings from `r`. Returns the backend and the key
/// prefix the URL's path names (empty for stores whose path is their root).
///
/// Backends are built inside the shared runtime, because some (HDFS) start background tasks on it.
pub fn open_backend(url: &str, r: &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)> {
    let _inside = runtime().enter();
    let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or(url);
    match scheme {
        "file" => {
            let path = &url["file://".len()..];
            if !path.starts_with('/') {
                return Err(Error::config(
                    "store",
                    format!("`{url}`: a file URL needs an absolute path (file:///...)"),
                ));
            }
            r.ignore("fs.root");
            let fsync = r.bool("fs.fsync", true)?;
            Ok((Arc::new(FsBackend::new(path, fsync)?), String::new()))
        }
        "hdfs" | "viewfs" => rsm_backend_hdfs::from_url(url, r),
        "s3" => rsm_backend_s3::from_url(url, r),
        "az" => rsm_backend_azure::from_url(url, r),
        "gs" => rsm_backend_gcs::from_url(url, r),
        "memory:" => Ok((Arc::new(MemoryBackend::new()), String::new())),
        _ => Err(Error::config(
            "store",
            format!(
                "unsupported store URL scheme `{}` (supported: file, s3, az, gs, hdfs, memory)",
                scheme.trim_end_matches(':')
            ),
        )),
    }
}

/// A store opened by URL: a [`TieredStorage`] over a request-counted backend.
#[derive(Debug)]
pub struct Store {
    storage: TieredStorage,
    counts: Arc<RequestCounts>,
}

impl Store {
    /// Opens `url` with `settings`; unknown settings fail, naming the key.
    pub fn open(url: &str, settings: &BTreeMap<String, String>) -> Result<Self> {
        let mut r = ConfigReader::new(settings);
        r.ignore("broker.id");
        let (backend, url_prefix) = open_backend(url, &mut r)?;
        let mut config = TieredConfig::read(&mut r)?;
        config.key_prefix = format!("{url_prefix}{}", config.key_prefix);
        r.finish()?;
        let counting = Arc::new(CountingBackend::new(backend));
        let counts = counting.counts();
        Ok(Store { storage: TieredStorage::new(counting, config), counts })
    }

    /// The storage manager.
    pub fn storage(&self) -> &TieredStorage {
        &self.storage
    }

    /// Requests and bytes so far, by operation.
    pub fn counts(&self) -> &RequestCounts {
        &self.counts
    }

    /// Copies a segment (see [`RemoteStorageManager::copy_log_segment_data`]).
    pub fn copy(&self, md: &RemoteLogSegmentMetadata, data: &LogSegmentData) -> Result<Option<CustomMetadata>> {
        runtime().block_on(self.storage.copy_log_segment_data(md, data))
    }

    /// Opens a reader of the segment's bytes `start..=end` (see [`RemoteStorageManager::fetch_log_segment`]).
    pub fn fetch(&self, md: &RemoteLogSegmentMetadata, start: i32, end: Option<i32>) -> Result<SegmentReader> {
        let stream = runtime().block_on(self.storage.fetch_log_segment(md, start, end))?;
        Ok(SegmentReader { stream: Some(stream), current: Bytes::new() })
    }

    /// The exact bytes of an index (see [`RemoteStorageManager::fetch_index`]).
    pub fn fetch_index(&self, md: &RemoteLogSegmentMetadata, index: IndexType) -> Result<Bytes> {
        runtime().block_on(self.storage.fetch_index(md, index))
    }

    /// Deletes a segment (see [`RemoteStorageManager::delete_log_segment_data`]).
    pub fn delete(&self, md: &RemoteLogSegmentMetadata) -> Result<()> {
        runtime().block_on(self.storage.delete_log_segment_data(md))
    }

    /// Committed segments of one partition, or of the whole store.
    pub fn list_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<Manifest>> {
        runtime().block_on(self.storage.list_segments(tp))
    }

    /// Byte position of the batch holding `offset`.
    pub fn position_of_offset(&self, md: &RemoteLogSegmentMetadata, offset: i64) -> Result<u32> {
        runtime().block_on(self.storage.position_of_offset(md, offset))
    }

    /// Byte position of the first batch with a timestamp at or after `timestamp`.
    pub fn position_of_timestamp(&self, md: &RemoteLogSegmentMetadata, timestamp: i64) -> Result<Option<u32>> {
        runtime().block_on(self.storage.position_of_timestamp(md, timestamp))
    }

    /// The manifest of a segment.
    pub fn manifest(&self, md: &RemoteLogSegmentMetadata) -> Result<Arc<Manifest>> {
        runtime().block_on(self.storage.manifest(md))
    }

    /// Reads and checks every chunk and index of a segment.
    pub fn verify(&self, md: &RemoteLogSegmentMetadata) -> Result<VerifyReport> {
        runtime().block_on(self.storage.verify(md))
    }
}

/// A blocking reader over a fetch stream. Dropping it stops the fetch and frees its buffers at once.
pub struct SegmentReader {
    stream: Option<ByteStream>,
    current: Bytes,
}

impl SegmentReader {
    /// The next piece of bytes (`None` at the end), without copying.
    pub fn next_bytes(&mut self) -> Result<Option<Bytes>> {
        if !self.current.is_empty() {
            return Ok(Some(std::mem::take(&mut self.current)));
        }
        let Some(stream) = self.stream.as_mut() else {
            return Ok(None);
        };
        match runtime().block_on(stream.next()) {
            Some(Ok(b)) => Ok(Some(b)),
            Some(Err(e)) => {
                self.stream = None;
                Err(e)
            }
            None => {
                self.stream = None;
                Ok(None)
            }
        }
    }
}

impl io::Read for SegmentReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.next_bytes() {
                Ok(Some(b)) => self.current = b,
                Ok(None) => return Ok(0),
                Err(e) => return Err(io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        let _ = self.current.split_to(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::config::props;

    #[test]
    fn store_urls_and_settings_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        Store::open(&url, &props([("chunk.size", "1048576"), ("broker.id", "3")])).unwrap();
        let e = Store::open(&url, &props([("chunk.sise", "1")])).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `chunk.sise`: unknown setting");
        let e = Store::open(&url, &props([("chunk.size", "12")])).unwrap_err();
        assert!(e.to_string().starts_with("invalid configuration `chunk.size`: 12 is out of range"), "{e}");
        let e = Store::open("ftp://x", &BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("unsupported store URL scheme `ftp`"), "{e}");
        let e = Store::open("file://relative", &BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("absolute path"), "{e}");
    }
}
