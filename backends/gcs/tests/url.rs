//! `gs://bucket/prefix` opens the bucket of the URL on fake-gcs-server.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_opens_bucket_and_prefix() {
    common::SERVER.url_round_trip(&[], async |_, _| {}).await;
}
