//! `gs://bucket/prefix` opens the bucket of the URL on fake-gcs-server.

mod common;

use bytes::Bytes;
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_opens_bucket_and_prefix() {
    let e = common::env();
    let mut p = common::settings(&[]);
    p.remove("gcs.bucket.name");
    let url = format!("gs://{}/url-test/{}", e["RSM_TEST_GCS_BUCKET"], rsm_core::Uuid::random());
    let mut r = ConfigReader::new(&p);
    let (b, prefix) = rsm_backend_gcs::open_url(&url, &mut r).unwrap();
    r.finish().unwrap();
    assert!(prefix.starts_with("url-test/") && prefix.ends_with('/'), "{prefix}");
    let key = format!("{prefix}obj");
    b.put_bytes(&key, Bytes::from_static(b"hello")).await.unwrap();
    assert_eq!(&b.get_range(&key, 0..u64::MAX).await.unwrap()[..], b"hello");
    assert_eq!(b.list(&prefix).await.unwrap().len(), 1);
    b.delete(&key).await.unwrap();
    assert!(b.list(&prefix).await.unwrap().is_empty());
}
