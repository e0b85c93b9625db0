//! `s3://bucket/prefix` opens the bucket of the URL on the moto server, and `s3.storage.class` reaches
//! the stored object.

mod common;

use bytes::Bytes;
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;
use std::io::{Read, Write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_opens_bucket_and_prefix_with_storage_class() {
    let e = common::env();
    let mut p = common::settings(&[("s3.storage.class", "STANDARD_IA")]);
    p.remove("s3.bucket.name");
    let url = format!("s3://{}/url-test/{}/", e["RSM_TEST_S3_BUCKET"], rsm_core::Uuid::random());
    let mut r = ConfigReader::new(&p);
    let (b, prefix) = rsm_backend_s3::open_url(&url, &mut r).unwrap();
    r.finish().unwrap();
    assert!(prefix.starts_with("url-test/") && prefix.ends_with('/'), "{prefix}");
    let key = format!("{prefix}obj");
    b.put_bytes(&key, Bytes::from_static(b"hello")).await.unwrap();
    assert_eq!(&b.get_range(&key, 0..u64::MAX).await.unwrap()[..], b"hello");
    assert_eq!(b.list(&prefix).await.unwrap().len(), 1);
    println!("{}", b.http_counts().unwrap());

    // moto checks no signature (only that one is there): a HEAD with a dummy one shows the stored
    // storage class.
    let endpoint = e["RSM_TEST_S3_ENDPOINT"].trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&endpoint).unwrap();
    write!(
        s,
        "HEAD /{}/{key} HTTP/1.1\r\nHost: {endpoint}\r\nAuthorization: AWS4-HMAC-SHA256 Credential=rsm-test-access-key/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00\r\nConnection: close\r\n\r\n",
        e["RSM_TEST_S3_BUCKET"]
    )
    .unwrap();
    let mut head = String::new();
    s.read_to_string(&mut head).unwrap();
    assert!(head.to_ascii_lowercase().contains("x-amz-storage-class: standard_ia"), "{head}");
    b.delete(&key).await.unwrap();
}
