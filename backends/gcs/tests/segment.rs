//! A 64 MiB segment through `TieredStorage` on fake-gcs-server with the default 25 MiB chunks (so its
//! log goes in a resumable upload): copied, fetched and deleted, byte for byte, printing what each step
//! cost in real HTTP requests and wall time (figures, not assertions: fake-gcs-server is an emulator).

mod common;

use rsm_backend_gcs::Op::{Post, Put};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib() {
    // The log: a session start (POST) and 3 chunks (PUT); the index bundle and the manifest: one media
    // upload (POST) each.
    common::SERVER.segment_round_trip("fake-gcs-server", &[(Put, 3), (Post, 3)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_copy_fetch_delete_64mib_as_one_object() {
    // The whole `.segment` object: a session start (POST) and 3 chunks (PUT).
    common::SERVER.segment_round_trip_in("fake-gcs-server", "single", &[(Put, 3), (Post, 1)]).await;
}
