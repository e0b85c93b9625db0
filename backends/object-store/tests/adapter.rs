//! The adapter on object_store's in-memory store: the whole backend contract (no server needed), and
//! what only a probe can see: single PUT up to the threshold, multipart beyond it with a bounded number
//! of parts in flight, and an abort after any failure (a part, the source stream, the file).

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, UploadPart,
};
use rsm_backend_object_store::{ObjectStoreBackend, UploadSettings};
use rsm_core::{Error, ErrorKind, StorageBackend};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

async fn make() -> Arc<dyn StorageBackend> {
    Arc::new(ObjectStoreBackend::new("memory", Arc::new(InMemory::new())).with_upload(UploadSettings {
        multipart_threshold: 1 << 20,
        part_size: 1 << 20,
        parts_in_flight: 3,
    }))
}

mod contract {
    rsm_core::backend_contract_tests!(super::make());
}

/// Counts what the adapter asks of the store, and fails the chosen part.
#[derive(Debug, Default)]
struct Probe {
    inner: InMemory,
    puts: AtomicUsize,
    multiparts: AtomicUsize,
    parts: Arc<AtomicUsize>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    aborts: Arc<AtomicUsize>,
    completes: Arc<AtomicUsize>,
    /// 1-based index of a part that fails (0: none).
    fail_part: usize,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Probe")
    }
}

struct ProbeUpload {
    inner: Box<dyn MultipartUpload>,
    n: usize,
    fail_part: usize,
    parts: Arc<AtomicUsize>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    aborts: Arc<AtomicUsize>,
    completes: Arc<AtomicUsize>,
}

impl std::fmt::Debug for ProbeUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProbeUpload")
    }
}

#[async_trait]
impl MultipartUpload for ProbeUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.n += 1;
        let fail = self.n == self.fail_part;
        let inner = self.inner.put_part(data);
        let (parts, now, max) = (self.parts.clone(), self.in_flight.clone(), self.max_in_flight.clone());
        Box::pin(async move {
            parts.fetch_add(1, Ordering::SeqCst);
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            if fail {
                return Err(object_store::Error::Generic {
                    store: "probe",
                    source: "Server returned non-2xx status code: 503 Service Unavailable: busy".into(),
                });
            }
            inner.await
        })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        self.completes.fetch_add(1, Ordering::SeqCst);
        self.inner.complete().await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.aborts.fetch_add(1, Ordering::SeqCst);
        self.inner.abort().await
    }
}

#[async_trait]
impl ObjectStore for Probe {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.multiparts.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(ProbeUpload {
            inner: self.inner.put_multipart_opts(location, opts).await?,
            n: 0,
            fail_part: self.fail_part,
            parts: self.parts.clone(),
            in_flight: self.in_flight.clone(),
            max_in_flight: self.max_in_flight.clone(),
            aborts: self.aborts.clone(),
            completes: self.completes.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

fn probe(fail_part: usize) -> (Arc<Probe>, ObjectStoreBackend) {
    let p = Arc::new(Probe { fail_part, ..Default::default() });
    let b = ObjectStoreBackend::new("probe", p.clone()).with_upload(UploadSettings {
        multipart_threshold: 1 << 20,
        part_size: 1 << 20,
        parts_in_flight: 3,
    });
    (p, b)
}

fn file_of(n: usize) -> (tempfile::NamedTempFile, Bytes) {
    let d = rsm_core::testkit::backend_contract::data(n, 11);
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&d).unwrap();
    f.flush().unwrap();
    (f, d)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_to_the_threshold_is_one_put() {
    let (p, b) = probe(0);
    let (f, d) = file_of(1 << 20);
    b.put_file("k/file", f.path(), 1 << 20).await.unwrap();
    let pieces: Vec<Result<Bytes, Error>> = (0..4).map(|i| Ok(d.slice(i << 18..(i + 1) << 18))).collect();
    b.put_stream("k/stream", Box::pin(futures::stream::iter(pieces))).await.unwrap();
    assert_eq!(p.puts.load(Ordering::SeqCst), 2);
    assert_eq!(p.multiparts.load(Ordering::SeqCst), 0);
    assert_eq!(b.get_range("k/stream", 0..u64::MAX).await.unwrap(), d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_files_go_multipart_with_bounded_parts_in_flight() {
    let (p, b) = probe(0);
    let n = (10 << 20) + 12345;
    let (f, d) = file_of(n);
    b.put_file("k/big", f.path(), n as u64).await.unwrap();
    assert_eq!(p.puts.load(Ordering::SeqCst), 0);
    assert_eq!(p.multiparts.load(Ordering::SeqCst), 1);
    assert_eq!(p.completes.load(Ordering::SeqCst), 1);
    assert_eq!(p.parts.load(Ordering::SeqCst), 11);
    let max = p.max_in_flight.load(Ordering::SeqCst);
    assert!((2..=3).contains(&max), "parts in flight at most: {max}");
    assert_eq!(b.get_range("k/big", 0..u64::MAX).await.unwrap(), d);

    // A stream one byte over a part goes multipart in two parts.
    let (p, b) = probe(0);
    let d = rsm_core::testkit::backend_contract::data((1 << 20) + 1, 3);
    b.put_stream("k/s", Box::pin(futures::stream::iter([Ok(d.clone())]))).await.unwrap();
    assert_eq!(p.multiparts.load(Ordering::SeqCst), 1);
    assert_eq!(b.get_range("k/s", 0..u64::MAX).await.unwrap(), d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_part_aborts_and_leaves_nothing() {
    let (p, b) = probe(4);
    let (f, _) = file_of(10 << 20);
    let e = b.put_file("k/big", f.path(), 10 << 20).await.unwrap_err();
    assert!(e.is_transient(), "{}", e.full_message());
    assert!(e.to_string().contains("k/big"), "{e}");
    assert_eq!(p.aborts.load(Ordering::SeqCst), 1);
    assert_eq!(p.completes.load(Ordering::SeqCst), 0);
    assert_eq!(b.get_range("k/big", 0..1).await.unwrap_err().kind(), ErrorKind::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_stream_aborts_and_leaves_nothing() {
    let (p, b) = probe(0);
    let mut items: Vec<Result<Bytes, Error>> =
        (0..5).map(|i| Ok(rsm_core::testkit::backend_contract::data(1 << 20, i))).collect();
    items.push(Err(Error::retriable("source broke", "test")));
    let e = b.put_stream("k/s", Box::pin(futures::stream::iter(items))).await.unwrap_err();
    assert!(e.full_message().contains("source broke"), "{}", e.full_message());
    assert_eq!(p.multiparts.load(Ordering::SeqCst), 1);
    assert_eq!(p.aborts.load(Ordering::SeqCst), 1);
    assert_eq!(p.completes.load(Ordering::SeqCst), 0);
    assert!(b.list("k/").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_file_is_refused_before_any_request() {
    let (p, b) = probe(0);
    let (f, _) = file_of(1000);
    let e = b.put_file("k/short", f.path(), 5 << 20).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(p.multiparts.load(Ordering::SeqCst) + p.puts.load(Ordering::SeqCst), 0);
}
