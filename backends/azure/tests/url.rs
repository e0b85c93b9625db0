//! `az://container/prefix` opens the container of the URL on Azurite.

mod common;

use bytes::Bytes;
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_opens_container_and_prefix() {
    let e = common::env();
    let mut p = common::settings(&[]);
    p.remove("azure.container.name");
    let url = format!("az://{}/url-test/{}", e["RSM_TEST_AZURE_CONTAINER"], rsm_core::Uuid::random());
    let mut r = ConfigReader::new(&p);
    let (b, prefix) = rsm_backend_azure::open_url(&url, &mut r).unwrap();
    r.finish().unwrap();
    assert!(prefix.starts_with("url-test/") && prefix.ends_with('/'), "{prefix}");
    let key = format!("{prefix}obj");
    b.put_bytes(&key, Bytes::from_static(b"hello")).await.unwrap();
    assert_eq!(&b.get_range(&key, 0..u64::MAX).await.unwrap()[..], b"hello");
    assert_eq!(b.list(&prefix).await.unwrap().len(), 1);
    b.delete(&key).await.unwrap();
    assert!(b.list(&prefix).await.unwrap().is_empty());
}
