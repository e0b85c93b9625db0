//! A 64 MiB segment through `TieredStorage` on moto with the default 25 MiB parts (so its log goes
//! multipart): copied, fetched and deleted, byte for byte, printing what each step cost in real HTTP
//! requests and wall time (figures, not assertions: moto is an emulator).

mod common;

use rsm_backend_s3::Op;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib() {
    // One multipart upload for the log (create, 3 parts, complete), one PUT each for the index bundle
    // and the manifest; no listing.
    common::SERVER.segment_round_trip("moto", &[(Op::Put, 5), (Op::Post, 2)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib_as_one_object() {
    // One multipart upload for the whole `.segment` object (create, 3 parts, complete): the index bundle
    // and the manifest ride in its last part.
    common::SERVER.segment_round_trip_in("moto", "single", &[(Op::Put, 3), (Op::Post, 2)]).await;
}
