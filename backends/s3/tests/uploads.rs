//! Incomplete multipart uploads on moto (the real S3 API): one a crash left (started, parts sent, never
//! completed nor aborted) is listed with its key, parts and bytes by ListMultipartUploads and ListParts,
//! invisible to the object listing, and gone once aborted; and an upload that fails or is dropped
//! mid-way (a source that fails, a copy whose future is dropped, as a timeout drops it) is aborted by the
//! backend itself, leaving nothing in the bucket.

mod common;

use bytes::Bytes;
use futures::StreamExt;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use rsm_backend_object_store::testing::segment_partition;
use rsm_backend_s3::Op;
use rsm_core::backend::layers::{Layer, UploadRateLimit};
use rsm_core::backend::{ByteStream, IncompleteUpload};
use rsm_core::config::{ConfigReader, props};
use rsm_core::testkit::unique_prefix;
use rsm_core::{RemoteStorageManager, StorageBackend, TieredConfig, TieredStorage};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const PART: usize = 5 << 20;

/// Waits until `what` holds of the uploads under `prefix` (within 30 s), returning them.
async fn uploads_until(
    b: &dyn StorageBackend,
    prefix: &str,
    what: &str,
    ok: impl Fn(&[IncompleteUpload]) -> bool,
) -> Vec<IncompleteUpload> {
    let t = Instant::now();
    loop {
        let listed = b.list_incomplete_uploads(prefix).await.unwrap();
        if ok(&listed) {
            return listed;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "{what}: still {listed:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_upload_a_crash_left_is_listed_with_its_bytes_and_aborted() {
    let b = common::SERVER.backend();
    let prefix = unique_prefix("uploads");
    let key = format!("{prefix}orders-AAAAAAAAAAAAAAAAAAAAAA/0/00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA.log");
    let before = SystemTime::now() - Duration::from_secs(1);
    // What a crash leaves: object_store's upload, two parts sent, then dropped (it neither completes nor
    // aborts on drop), as a killed process leaves it.
    let mut upload = b.store().put_multipart(&Path::parse(&key).unwrap()).await.unwrap();
    upload.put_part(Bytes::from(vec![1u8; PART]).into()).await.unwrap();
    upload.put_part(Bytes::from(vec![2u8; 1000]).into()).await.unwrap();
    drop(upload);
    // A completed object beside it, and an upload under another prefix: neither is listed.
    b.put_bytes(&format!("{prefix}done"), Bytes::from_static(b"done")).await.unwrap();
    let other = unique_prefix("uploads-other");
    let mut elsewhere = b.store().put_multipart(&Path::parse(format!("{other}x")).unwrap()).await.unwrap();
    elsewhere.put_part(Bytes::from_static(b"x").into()).await.unwrap();

    let http_before = b.http_counts().unwrap();
    let listed = b.list_incomplete_uploads(&prefix).await.unwrap();
    let requests = b.http_counts().unwrap().since(&http_before);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let u = &listed[0];
    assert_eq!((u.key.as_str(), u.parts, u.bytes), (key.as_str(), 2, Some(PART as u64 + 1000)), "{u:?}");
    assert!(!u.upload_id.is_empty());
    // moto says every upload started in 2010; its parts' times are true.
    assert!(u.initiated.is_some(), "{u:?}");
    assert!(u.last_part.is_some_and(|t| t >= before) && u.last_written() == u.last_part, "{u:?}");
    // One ListMultipartUploads and one ListParts, both listings.
    assert_eq!(requests.get(Op::List).requests, 2, "{requests}");
    assert_eq!(requests.total_requests(), 2, "{requests}");
    // Invisible to the object listing.
    let objects: Vec<String> = b.list(&prefix).await.unwrap().into_iter().map(|o| o.key).collect();
    assert_eq!(objects, [format!("{prefix}done")]);

    b.abort_upload(&u.key, &u.upload_id).await.unwrap();
    assert!(b.list_incomplete_uploads(&prefix).await.unwrap().is_empty());
    // Aborting what is gone is no error; the other prefix's upload is still there.
    b.abort_upload(&u.key, &u.upload_id).await.unwrap();
    let there = b.list_incomplete_uploads(&other).await.unwrap();
    assert_eq!(there.len(), 1, "{there:?}");
    elsewhere.abort().await.unwrap();
    assert!(b.list_incomplete_uploads(&other).await.unwrap().is_empty());
    assert_eq!(&b.get_range(&format!("{prefix}done"), 0..4).await.unwrap()[..], b"done");
}

/// Two full parts, then what `tail` gives.
fn parts_then(tail: ByteStream) -> ByteStream {
    let parts = futures::stream::iter([Ok(Bytes::from(vec![3u8; PART])), Ok(Bytes::from(vec![4u8; PART]))]);
    Box::pin(parts.chain(tail))
}

#[tokio::test]
async fn a_failed_upload_is_aborted() {
    let b = common::SERVER.backend();
    let prefix = unique_prefix("uploads-failed");
    let key = format!("{prefix}obj");
    let failing = futures::stream::once(async { Err(rsm_core::Error::invalid("the source broke")) });
    let e = b.put_stream(&key, parts_then(Box::pin(failing))).await.unwrap_err();
    assert!(e.to_string().contains("the source broke"), "{e}");
    // The abort is part of the failure: nothing is left once it returned.
    assert_eq!(b.list_incomplete_uploads(&prefix).await.unwrap(), []);
    assert!(b.list(&prefix).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_upload_dropped_mid_way_is_aborted() {
    let b = common::SERVER.backend();
    let prefix = unique_prefix("uploads-dropped");
    let key = format!("{prefix}obj");
    let upload = {
        let (b, key) = (b.clone(), key.clone());
        tokio::spawn(async move { b.put_stream(&key, parts_then(Box::pin(futures::stream::pending()))).await })
    };
    uploads_until(b.as_ref(), &prefix, "the upload starts", |u| u.len() == 1 && u[0].parts >= 1).await;
    // The caller gives up (a timeout, a failure beside it): the upload's future is dropped.
    upload.abort();
    assert!(upload.await.unwrap_err().is_cancelled());
    uploads_until(b.as_ref(), &prefix, "the dropped upload is aborted", <[_]>::is_empty).await;
    assert!(b.list(&prefix).await.unwrap().is_empty());
}

/// A segment copy whose future is dropped while its log is going up in parts (as the engine's
/// `rsm.engine.remote.timeout.ms` drops a copy) leaves no multipart upload behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_dropped_mid_upload_leaves_no_upload() {
    let b = common::SERVER.backend();
    let tmp = tempfile::tempdir().unwrap();
    let partition = segment_partition(tmp.path(), 24 << 20);
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 1_700_000_000_000).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let prefix = unique_prefix("uploads-copy");
    let p = props([("key.prefix", prefix.as_str())]);
    // Paced at 8 MiB/s, so the log (about 24 MiB) is still going up when the copy is dropped.
    let paced = UploadRateLimit::new(8 << 20).layer(b.clone());
    let rsm = Arc::new(TieredStorage::new(paced, TieredConfig::read(&mut ConfigReader::new(&p)).unwrap()));
    let copy = {
        let (rsm, md, data) = (rsm.clone(), md.clone(), data.clone());
        tokio::spawn(async move { rsm.copy_log_segment_data(&md, &data).await })
    };
    let started =
        uploads_until(b.as_ref(), &prefix, "the log's upload starts", |u| u.iter().any(|u| u.parts >= 1)).await;
    assert!(started.iter().all(|u| u.key.ends_with(".log")), "{started:?}");
    let log_bytes = std::fs::metadata(&data.log_segment).unwrap().len();
    assert!(started.iter().all(|u| u.bytes.unwrap() < log_bytes), "mid-upload: {started:?}");
    copy.abort();
    assert!(copy.await.unwrap_err().is_cancelled());
    uploads_until(b.as_ref(), &prefix, "the dropped copy's upload is aborted", <[_]>::is_empty).await;
    assert!(rsm.manifest(&md).await.is_err(), "no segment");
}
