//! Leaders and followers: a follower deletes local segments only once their remote metadata is known and
//! builds its partition index files from the remote copies; a leader that becomes a follower stops copying
//! after the segment in flight.

use rsm_core::backend::Op;
use rsm_core::backend::layers::{Fault, FaultRule};
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::remote_index::RemoteIndexFiles;
use rsm_engine::{RemoteLogManager, Role};
use rsm_metadata::failed_deletions::LocalFailedDeletions;
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::*;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_waits_for_the_leaders_metadata_then_deletes_and_indexes() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let storage = fs_storage(&store);
    let leader_dir = write_partition(&t.path().join("broker-1"), "replicated", 0, 11);
    let follower_dir = t.path().join("broker-2").join("replicated-0");
    copy_dir(&leader_dir, &follower_dir);
    let closed = LocalPartition::open(&follower_dir).unwrap().closed_segments().len();

    // Two hosts sharing one metadata manager, as two brokers share the metadata topic.
    let meta = t.path().join("metadata");
    let metadata = Arc::new(LocalMetadataManager::open(LocalMetadataConfig::new(&meta)).unwrap());
    let failed = Arc::new(LocalFailedDeletions::open(&meta.join("failed-deletions")).unwrap());
    let clock = Clock::new();
    clock.set(T0 + 2 * HOUR); // past local retention (1 h)
    let engine = |c| RemoteLogManager::new(c, Arc::clone(&storage), metadata.clone(), failed.clone()).unwrap();
    let (leader, follower) = (engine(clock.config(&[])), engine(clock.config(&[])));
    let tp = follower.add_partition(&follower_dir, Role::Follower, None).await.unwrap();

    let r = follower.run_partition(&tp).await.unwrap();
    assert!(r.copy.copied.is_empty(), "a follower never copies");
    assert!(r.expiration.local_deleted.is_empty(), "deleted before the remote metadata was known");
    assert_eq!(LocalPartition::open(&follower_dir).unwrap().closed_segments().len(), closed);

    assert_eq!(leader.add_partition(&leader_dir, Role::Leader { epoch: 1 }, None).await.unwrap(), tp);
    let copied = leader.run_partition(&tp).await.unwrap().copy.copied;
    assert_eq!(copied.len(), closed);

    let r = follower.run_partition(&tp).await.unwrap();
    assert_eq!(r.expiration.local_deleted.len(), closed, "the follower deletes what is now known remote");
    assert_eq!(r.indexed, closed, "the follower builds its index files from the remote copies");
    let index = RemoteIndexFiles::open(&follower_dir.join("remote-index"), 1 << 20).unwrap();
    for md in &copied {
        let e = index.lookup_offset(md.start_offset).unwrap().unwrap();
        assert_eq!(e.rdi.segment_id, md.remote_log_segment_id.id);
    }
    // The follower's index files are the leader's, byte for byte.
    for ext in ["remoteLogIndex", "remoteOffsetIndex", "remoteTimeIndex"] {
        let name = format!("{:020}.{ext}", 0);
        assert_eq!(
            std::fs::read(follower_dir.join("remote-index").join(&name)).unwrap(),
            std::fs::read(leader_dir.join("remote-index").join(&name)).unwrap(),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_becomes_a_follower_finishes_the_segment_in_flight_and_stops() {
    let t = tempfile::tempdir().unwrap();
    let (faults, storage) = faulty_fs_storage(t.path());
    // Every upload is slow: the role changes while the first segment is being copied.
    faults.add_rule(FaultRule {
        op: Some(Op::Put),
        key: "*".into(),
        fault: Fault::Delay(Duration::from_millis(100)),
        times: None,
    });
    let dir = write_partition(&t.path().join("logs"), "moving", 0, 13);
    let closed = LocalPartition::open(&dir).unwrap().closed_segments().len();
    let clock = Clock::new();
    let engine =
        Arc::new(RemoteLogManager::with_local_metadata(clock.config(&[]), storage, &t.path().join("m")).unwrap());
    let tp = engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    let run = tokio::spawn({
        let (engine, tp) = (Arc::clone(&engine), tp.clone());
        async move { engine.run_partition(&tp).await }
    });
    // Once the first copy has started (its metadata is written), the role changes.
    while engine.metadata().list_remote_log_segments(&tp).await.unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    engine.change_role(&tp, Role::Follower).await.unwrap();
    let r = run.await.unwrap().unwrap();
    assert!(!r.copy.copied.is_empty() && r.copy.copied.len() < closed, "copied {} of {closed}", r.copy.copied.len());
    let listed = engine.metadata().list_remote_log_segments(&tp).await.unwrap();
    assert_eq!(listed.len(), r.copy.copied.len(), "the segment in flight finished; no copy was left started");
    assert!(listed.iter().all(|m| m.state == rsm_core::model::RemoteLogSegmentState::CopySegmentFinished));
    // As a follower, it copies no more.
    assert!(engine.run_partition(&tp).await.unwrap().copy.copied.is_empty());
}
