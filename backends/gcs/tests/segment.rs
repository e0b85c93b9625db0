//! A 64 MiB segment through `TieredStorage` on fake-gcs-server with the default 25 MiB chunks (so its
//! log goes in a resumable upload): copied, fetched and deleted, byte for byte, printing what each step
//! cost in real HTTP requests and wall time (figures, not assertions: fake-gcs-server is an emulator).

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib() {
    let b = common::backend_with(&common::settings(&[]));
    let report = rsm_backend_object_store::testing::segment_round_trip("gcs/fake-gcs-server", b, 64 << 20).await;
    println!("{report}");
    // The log: a session start (POST) and 3 chunks (PUT); the index bundle and the manifest: one media
    // upload (POST) each.
    let put = report.copy_http.get(rsm_backend_gcs::Method::Put).requests;
    let post = report.copy_http.get(rsm_backend_gcs::Method::Post).requests;
    assert_eq!((put, post), (3, 3), "{}", report.copy_http);
}
