//! A 64 MiB segment through `TieredStorage` on Azurite with the default 25 MiB blocks (so its log goes
//! in blocks and a block list): copied, fetched and deleted, byte for byte, printing what each step
//! cost in real HTTP requests and wall time (figures, not assertions: Azurite is an emulator).

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib() {
    // The log in 3 blocks and a block list, one PUT each for the index bundle and the manifest.
    common::SERVER.segment_round_trip("azurite", &[(rsm_backend_azure::Op::Put, 6)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib_as_one_object() {
    // The whole `.segment` object in 3 blocks and a block list.
    common::SERVER.segment_round_trip_in("azurite", "single", &[(rsm_backend_azure::Op::Put, 4)]).await;
}
