//! `s3://bucket/prefix` opens the bucket of the URL on the moto server, and `s3.storage.class` reaches
//! the stored object.

mod common;

use std::io::{Read, Write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_opens_bucket_and_prefix_with_storage_class() {
    let e = common::SERVER.env();
    let (endpoint, bucket) = (&e["RSM_TEST_S3_ENDPOINT"], &e["RSM_TEST_S3_BUCKET"]);
    common::SERVER
        .url_round_trip(&[("s3.storage.class", "STANDARD_IA")], async |_, key| {
            // moto checks no signature (only that one is there): a HEAD with a dummy one shows the stored
            // storage class.
            let endpoint = endpoint.trim_start_matches("http://");
            let mut s = std::net::TcpStream::connect(endpoint).unwrap();
            write!(
                s,
                "HEAD /{bucket}/{key} HTTP/1.1\r\nHost: {endpoint}\r\nAuthorization: AWS4-HMAC-SHA256 Credential=rsm-test-access-key/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
            let mut head = String::new();
            s.read_to_string(&mut head).unwrap();
            assert!(head.to_ascii_lowercase().contains("x-amz-storage-class: standard_ia"), "{head}");
        })
        .await;
}
