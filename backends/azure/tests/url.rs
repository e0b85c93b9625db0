//! `az://container/prefix` opens the container of the URL on Azurite.

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_opens_container_and_prefix() {
    common::SERVER.url_round_trip(&[], async |_, _| {}).await;
}
