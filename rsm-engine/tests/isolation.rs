//! Isolation from the store (SR-36): with the store hanging, a partition's copy gives up after the remote
//! timeout with a transient error and deletes nothing local, and so does a partition whose local deletion
//! must first see its copies in the store; when the store returns, the copies and deletions resume.

use rsm_core::backend::layers::{Fault, FaultRule};
use rsm_core::format::partition::LocalPartition;
use rsm_engine::{RemoteLogManager, Role};

mod common;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_store_holds_no_partition_for_good_and_loses_nothing() {
    let t = tempfile::tempdir().unwrap();
    let (faults, storage) = faulty_fs_storage(t.path());
    let clock = Clock::new();
    let engine = RemoteLogManager::with_local_metadata(
        clock.config(&[("rsm.engine.remote.timeout.ms", "300")]),
        storage,
        &t.path().join("m"),
    )
    .unwrap();
    let logs = t.path().join("logs");
    let (a_dir, b_dir) = (write_partition(&logs, "a", 0, 1), write_partition(&logs, "b", 0, 2));
    let a = engine.add_partition(&a_dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    let b = engine.add_partition(&b_dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    // b is copied while the store works; a is not.
    let b_copied = engine.run_partition(&b).await.unwrap().copy.copied.len();
    let a_closed = LocalPartition::open(&a_dir).unwrap().closed_segments().len();

    faults.add_rule(FaultRule { op: None, key: "*".into(), fault: Fault::Hang, times: None });
    clock.set(T0 + 2 * HOUR); // past local retention

    let e = engine.run_partition(&a).await.unwrap_err();
    assert!(e.is_transient(), "{e}");
    assert!(e.full_message().contains("rsm.engine.remote.timeout.ms"), "{}", e.full_message());
    assert_eq!(LocalPartition::open(&a_dir).unwrap().closed_segments().len(), a_closed, "a lost local data");

    // b's local segments are copied, but a local segment goes only once this store is seen to hold its copy:
    // while the store hangs, b's run gives up after the remote timeout too, transiently, deleting nothing.
    let b_closed = LocalPartition::open(&b_dir).unwrap().closed_segments().len();
    let e = engine.run_partition(&b).await.unwrap_err();
    assert!(e.is_transient() && e.full_message().contains("are kept"), "{}", e.full_message());
    assert_eq!(LocalPartition::open(&b_dir).unwrap().closed_segments().len(), b_closed, "b lost local data");

    // The store returns: b's local segments go, a's copy resumes, the attempt the hang cut short is cleaned up.
    faults.clear();
    let r = engine.run_partition(&b).await.unwrap();
    assert_eq!(r.expiration.local_deleted.len(), b_copied);
    let r = engine.run_partition(&a).await.unwrap();
    assert_eq!(r.copy.copied.len(), a_closed);
    // Its cleanup hung too, after the metadata went to delete started: now its deletion is retried.
    assert_eq!(r.expiration.retried.len() + r.expiration.abandoned_copies.len(), 1, "the attempt the hang cut short");
    let listed = engine.metadata().list_remote_log_segments(&a).await.unwrap();
    assert_eq!(listed.len(), a_closed);
    // The same run deletes a's local segments, now remote (past local retention).
    assert_eq!(r.expiration.local_deleted.len(), a_closed);
}
