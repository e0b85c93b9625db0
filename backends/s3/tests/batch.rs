//! Deleting many keys costs one request per 1000 keys on S3 (`DeleteObjects`), counted at the HTTP level
//! against the moto server.

mod common;

use bytes::Bytes;
use futures::StreamExt;
use rsm_backend_s3::Op;
use rsm_core::StorageBackend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_and_one_deletes_take_two_requests() {
    let b = common::SERVER.backend();
    let p = rsm_core::testkit::unique_prefix("batch");
    let keys: Vec<String> = (0..1001).map(|i| format!("{p}k{i:04}")).collect();
    futures::stream::iter(keys.iter())
        .map(|k| b.put_bytes(k, Bytes::from_static(b"x")))
        .buffer_unordered(16)
        .for_each(|r| async { r.unwrap() })
        .await;
    assert_eq!(b.list(&p).await.unwrap().len(), 1001);
    let before = b.http_counts().unwrap();
    b.delete_many(&keys).await.unwrap();
    let cost = b.http_counts().unwrap().since(&before);
    println!("delete of 1001 keys: {cost}");
    assert_eq!(cost.get(Op::Post).requests, 2, "{cost}");
    assert_eq!(cost.total_requests(), 2, "{cost}");
    assert!(b.list(&p).await.unwrap().is_empty());
}
