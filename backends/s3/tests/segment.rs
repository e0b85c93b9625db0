//! A 64 MiB segment through `TieredStorage` on moto with the default 25 MiB parts (so its log goes
//! multipart): copied, fetched and deleted, byte for byte, printing what each step cost in real HTTP
//! requests and wall time (figures, not assertions: moto is an emulator).

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib() {
    let b = common::backend_with(&common::settings(&[]));
    let report = rsm_backend_object_store::testing::segment_round_trip("s3/moto", b, 64 << 20).await;
    println!("{report}");
    // One multipart upload for the log (create, 3 parts, complete), one PUT each for the index bundle
    // and the manifest; no listing.
    let put = report.copy_http.get(rsm_backend_s3::Method::Put).requests;
    let post = report.copy_http.get(rsm_backend_s3::Method::Post).requests;
    assert_eq!((put, post), (5, 2), "{}", report.copy_http);
}
