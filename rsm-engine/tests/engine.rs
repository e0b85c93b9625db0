//! The engine over real partition directories: many partitions through copy, reads, local and remote
//! retention and a restart, on the filesystem store and on S3 (moto); repeated runs copy nothing twice; a
//! partition directory moved to another log directory is picked up without copying again; a failed copy
//! leaves nothing behind and is retried under a new segment id. The filesystem run again in one-object
//! segments (`segment.layout=single`): each copy's trailer kept as the segment's custom metadata, across a
//! restart, and used by every read and delete.

use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::backend::layers::{Fault, FaultRule};
use rsm_core::backend::{Op, StorageBackend};
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::remote_index::RemoteIndexFiles;
use rsm_core::model::{RemoteLogSegmentState, TopicIdPartition, Uuid};
use rsm_core::rsm::RemoteStorageManager;
use rsm_core::storage::{SegmentLayout, TieredConfig, TieredStorage, Trailer};
use rsm_core::testkit::s3_test_server;
use rsm_engine::{EngineConfig, RemoteLogManager, Role};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

mod common;
use common::*;

async fn remote(engine: &RemoteLogManager, tp: &TopicIdPartition) -> Vec<RemoteLogSegmentMetadata> {
    let mut v = engine.metadata().list_remote_log_segments(tp).await.unwrap();
    v.sort_by_key(|m| m.start_offset);
    v
}

fn copied(v: &[RemoteLogSegmentMetadata]) -> Vec<&RemoteLogSegmentMetadata> {
    v.iter().filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished).collect()
}

async fn read_all(storage: &TieredStorage, md: &RemoteLogSegmentMetadata) -> Vec<u8> {
    use futures::TryStreamExt;
    // A one-object segment's metadata carries its trailer (the copy's custom metadata); a split one's none.
    let single = storage.config().segment_layout == SegmentLayout::Single;
    assert_eq!(Trailer::of_metadata(md).is_some(), single, "custom metadata {:?}", md.custom_metadata);
    let chunks: Vec<bytes::Bytes> = storage.fetch_log_segment(md, 0, None).await.unwrap().try_collect().await.unwrap();
    chunks.concat()
}

/// The whole life of many partitions on one store.
async fn lifecycle(storage: Arc<TieredStorage>) {
    let t = tempfile::tempdir().unwrap();
    let log_dir = t.path().join("kafka-logs");
    let meta = t.path().join("metadata");
    let clock = Clock::new();
    let dirs: Vec<PathBuf> = (0..6).map(|p| write_partition(&log_dir, "orders", p, 7 + p as u64)).collect();
    let originals: Vec<BTreeMap<i64, Vec<u8>>> = dirs
        .iter()
        .map(|d| {
            let lp = LocalPartition::open(d).unwrap();
            lp.closed_segments().iter().map(|s| (s.base_offset, std::fs::read(&s.log).unwrap())).collect()
        })
        .collect();
    assert!(originals.iter().all(|o| o.len() >= 3), "each partition has several closed segments");

    let engine = RemoteLogManager::with_local_metadata(clock.config(&[]), Arc::clone(&storage), &meta).unwrap();
    let mut tps = Vec::new();
    for d in &dirs {
        tps.push(engine.add_partition(d, Role::Leader { epoch: 0 }, None).await.unwrap());
    }

    // 1. Every closed segment is copied, byte for byte, and indexed beside its partition.
    for (tp, r) in engine.run_all().await {
        let r = r.unwrap_or_else(|e| panic!("{tp}: {e}"));
        assert!(r.expiration.local_deleted.is_empty(), "{tp}: nothing is old enough yet");
    }
    for (i, tp) in tps.iter().enumerate() {
        let listed = remote(&engine, tp).await;
        let done = copied(&listed);
        assert_eq!(done.len(), originals[i].len(), "{tp}: one copy per closed segment");
        assert_eq!(listed.len(), done.len(), "{tp}: no copy left unfinished");
        for md in done {
            assert_eq!(read_all(&storage, md).await, originals[i][&md.start_offset], "{tp} at {}", md.start_offset);
        }
        let index = RemoteIndexFiles::open(&dirs[i].join("remote-index"), 1 << 20).unwrap();
        for &base in originals[i].keys() {
            let e = index.lookup_offset(base).unwrap().expect("indexed");
            assert_eq!(e.rdi.segment_start_offset, base, "{tp}: the index names the segment of offset {base}");
        }
        let o = engine.offsets(tp).await.unwrap();
        assert_eq!(o.local_log_start, 0);
        assert_eq!(o.local_log_end, 3_000);
        assert_eq!(o.remote_log_start, Some(0));
        // The last closed segment ends where the active one starts.
        let active = LocalPartition::open(&dirs[i]).unwrap().segments.last().unwrap().base_offset;
        assert_eq!(o.remote_log_end, Some(active - 1));
    }

    // 2. A second run copies nothing.
    for (tp, r) in engine.run_all().await {
        assert!(r.unwrap().copy.copied.is_empty(), "{tp}: copied again");
    }

    // 3. Past local retention (1 h), the closed local segments go; the remote ones stay.
    clock.set(T0 + 2 * HOUR);
    for (tp, r) in engine.run_all().await {
        let r = r.unwrap();
        let i = tps.iter().position(|t| *t == tp).unwrap();
        assert_eq!(r.expiration.local_deleted, originals[i].keys().copied().collect::<Vec<_>>(), "{tp}");
        assert!(r.expiration.expired.is_empty(), "{tp}: remote retention is a day");
        assert_eq!(LocalPartition::open(&dirs[i]).unwrap().segments.len(), 1, "{tp}: the active segment stays");
    }
    engine.close().await.unwrap();

    // 4. A restart over the same metadata copies nothing and still reads everything.
    let engine = RemoteLogManager::with_local_metadata(clock.config(&[]), Arc::clone(&storage), &meta).unwrap();
    for d in &dirs {
        engine.add_partition(d, Role::Leader { epoch: 0 }, None).await.unwrap();
    }
    for (tp, r) in engine.run_all().await {
        let r = r.unwrap();
        assert!(r.copy.copied.is_empty() && r.expiration.expired.is_empty(), "{tp}");
        let i = tps.iter().position(|t| *t == tp).unwrap();
        for md in copied(&remote(&engine, &tp).await) {
            assert_eq!(read_all(&storage, md).await, originals[i][&md.start_offset]);
        }
    }

    // 5. Past remote retention (a day), the remote segments go too: metadata and objects.
    clock.set(T0 + 30 * HOUR);
    for (tp, r) in engine.run_all().await {
        let r = r.unwrap();
        let i = tps.iter().position(|t| *t == tp).unwrap();
        assert_eq!(r.expiration.expired.len(), originals[i].len(), "{tp}");
        assert_eq!(r.expiration.failed, 0);
        let listed = remote(&engine, &tp).await;
        assert!(listed.iter().all(|m| m.state == RemoteLogSegmentState::DeleteSegmentFinished), "{tp}");
        assert!(storage.list_segments(Some(&tp)).await.unwrap().is_empty(), "{tp}: objects left in the store");
    }
    engine.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_partitions_through_copy_retention_and_restart_on_the_filesystem() {
    let store = tempfile::tempdir().unwrap();
    lifecycle(fs_storage(store.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_partitions_through_copy_retention_and_restart_in_one_object_segments() {
    let store = tempfile::tempdir().unwrap();
    let backend: Arc<dyn StorageBackend> = Arc::new(rsm_backend_fs::FsBackend::new(store.path(), false).unwrap());
    let config = TieredConfig { segment_layout: SegmentLayout::Single, ..TieredConfig::default() };
    lifecycle(Arc::new(TieredStorage::new(backend, config))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_partitions_through_copy_retention_and_restart_on_s3() {
    let Some(v) = s3_test_server() else { return };
    let settings: BTreeMap<String, String> = [
        ("s3.endpoint.url", v["RSM_TEST_S3_ENDPOINT"].clone()),
        ("s3.region", v["RSM_TEST_S3_REGION"].clone()),
        ("aws.access.key.id", v["RSM_TEST_S3_ACCESS_KEY"].clone()),
        ("aws.secret.access.key", v["RSM_TEST_S3_SECRET_KEY"].clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let url = format!("s3://{}/rsm-engine-{}/", v["RSM_TEST_S3_BUCKET"], Uuid::random());
    let store = tokio::task::spawn_blocking(move || rsm_facade::Store::open(&url, &settings)).await.unwrap().unwrap();
    lifecycle(store.shared_storage()).await;
}

#[tokio::test]
async fn a_partition_moved_to_another_log_directory_is_not_copied_again() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let clock = Clock::new();
    let dir = write_partition(&t.path().join("disk-a"), "moves", 0, 3);
    let engine =
        RemoteLogManager::with_local_metadata(clock.config(&[]), fs_storage(&store), &t.path().join("m")).unwrap();
    let tp = engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    let first = engine.run_partition(&tp).await.unwrap().copy.copied.len();
    assert!(first >= 3);

    // The broker moves the directory to another disk (JBOD), index files and all.
    let moved = t.path().join("disk-b").join("moves-0");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&dir, &moved).unwrap();
    assert_eq!(engine.add_partition(&moved, Role::Leader { epoch: 0 }, None).await.unwrap(), tp);
    let r = engine.run_partition(&tp).await.unwrap();
    assert!(r.copy.copied.is_empty(), "copied again after the move");
    assert_eq!(r.indexed, 0, "the index files moved with the directory");
    assert_eq!(engine.partitions()[0].1, moved);
    assert_eq!(copied(&remote(&engine, &tp).await).len(), first);
}

#[tokio::test]
async fn a_failed_copy_leaves_nothing_and_is_retried_under_a_new_id() {
    let t = tempfile::tempdir().unwrap();
    let (faults, storage) = faulty_fs_storage(t.path());
    let clock = Clock::new();
    let dir = write_partition(&t.path().join("logs"), "fails", 0, 5);
    let engine =
        RemoteLogManager::with_local_metadata(clock.config(&[]), Arc::clone(&storage), &t.path().join("m")).unwrap();
    let tp = engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    // The manifest of every segment fails to upload: the data objects are written, then the copy fails.
    faults.add_rule(FaultRule {
        op: Some(Op::Put),
        key: "*.manifest".into(),
        fault: Fault::permanent(rsm_core::ErrorKind::Storage),
        times: None,
    });
    let e = engine.run_partition(&tp).await.unwrap_err();
    assert!(e.to_string().contains("copy of segment"), "{e}");
    // The attempt's metadata went to delete finished, which the listing no longer shows (as Kafka's).
    assert!(remote(&engine, &tp).await.is_empty(), "the attempt's metadata is left open");
    let failed_id =
        e.to_string().split("copy of segment ").nth(1).and_then(|r| r.split(' ').next()).unwrap().to_string();
    let (objects, temporary) = {
        let b = faults.clone();
        (b.list("").await.unwrap(), b.list_temporary("").await.unwrap())
    };
    assert!(objects.is_empty() && temporary.is_empty(), "the attempt left {objects:?} {temporary:?}");

    faults.clear();
    let r = engine.run_partition(&tp).await.unwrap();
    assert!(r.copy.copied.len() >= 3);
    assert_ne!(r.copy.copied[0].remote_log_segment_id.id.to_string(), failed_id, "a new segment id");
    assert_eq!(r.copy.copied[0].start_offset, 0);
}

#[tokio::test]
async fn the_engine_does_not_start_with_remote_storage_off() {
    let t = tempfile::tempdir().unwrap();
    let mut c = EngineConfig::from_props(&props(&[])).unwrap();
    c.broker.remote_storage_enabled = false;
    let e = match RemoteLogManager::with_local_metadata(c, fs_storage(t.path()), &t.path().join("m")) {
        Ok(_) => panic!("started with remote storage off"),
        Err(e) => e,
    };
    assert_eq!(e.config_key(), Some("remote.log.storage.system.enable"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_runs_every_partition_and_close_leaves_nothing_running() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let clock = Clock::new();
    let config =
        clock.config(&[("remote.log.manager.task.interval.ms", "50"), ("remote.log.manager.thread.pool.size", "2")]);
    let engine =
        Arc::new(RemoteLogManager::with_local_metadata(config, fs_storage(&store), &t.path().join("m")).unwrap());
    let logs = t.path().join("logs");
    let mut tps = Vec::new();
    for p in 0..4 {
        tps.push(
            engine
                .add_partition(&write_partition(&logs, "sched", p, 20 + p as u64), Role::Leader { epoch: 0 }, None)
                .await
                .unwrap(),
        );
    }
    engine.start(&tokio::runtime::Handle::current()).unwrap();
    assert!(engine.start(&tokio::runtime::Handle::current()).is_err(), "started twice");
    // A partition added after the start is scheduled too.
    tps.push(
        engine.add_partition(&write_partition(&logs, "sched", 4, 24), Role::Leader { epoch: 0 }, None).await.unwrap(),
    );
    let scheduler = engine.scheduler().unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(60), scheduler.wait_for_runs(3)).await.unwrap();
    for (tp, totals) in engine.totals() {
        assert!(totals.runs >= 3 && totals.failed_runs == 0, "{tp}: {totals:?}");
        assert!(totals.copied >= 3, "{tp}: {totals:?}");
        assert_eq!(copied(&remote(&engine, &tp).await).len() as u64, totals.copied, "{tp}: copied once");
    }
    // Reads through the reader pool, as the leader.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let r = engine.read(&tps[0], 0, 1 << 20, deadline).await.unwrap();
    assert_eq!(r.start_position, 0);
    assert!(!r.bytes.is_empty());
    engine.change_role(&tps[1], Role::Follower).await.unwrap();
    let e = engine.read(&tps[1], 0, 1 << 20, deadline).await.unwrap_err();
    assert!(e.to_string().contains("follower"), "{e}");

    engine.close().await.unwrap();
    let runs: Vec<u64> = engine.totals().iter().map(|(_, t)| t.runs).collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(engine.totals().iter().map(|(_, t)| t.runs).collect::<Vec<_>>(), runs, "a run after close");
    assert_eq!(scheduler.running(), 0);
}

#[tokio::test]
async fn deleting_a_partition_removes_its_remote_data_and_stops_serving_it() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let storage = fs_storage(&store);
    let clock = Clock::new();
    let engine =
        RemoteLogManager::with_local_metadata(clock.config(&[]), Arc::clone(&storage), &t.path().join("m")).unwrap();
    let logs = t.path().join("logs");
    let gone =
        engine.add_partition(&write_partition(&logs, "gone", 0, 31), Role::Leader { epoch: 0 }, None).await.unwrap();
    let kept =
        engine.add_partition(&write_partition(&logs, "kept", 0, 32), Role::Leader { epoch: 0 }, None).await.unwrap();
    let copied_gone = engine.run_partition(&gone).await.unwrap().copy.copied.len();
    let copied_kept = engine.run_partition(&kept).await.unwrap().copy.copied.len();

    assert_eq!(engine.delete_partition(&gone).await.unwrap(), copied_gone);
    assert!(storage.list_segments(Some(&gone)).await.unwrap().is_empty());
    assert!(remote(&engine, &gone).await.is_empty());
    assert!(engine.run_partition(&gone).await.is_err(), "still served");
    assert_eq!(storage.list_segments(Some(&kept)).await.unwrap().len(), copied_kept, "another partition's data went");
}

/// A remote segment deleted by hand from the middle of the remote log (`rsm delete --force`) leaves a gap:
/// local retention then deletes local segments only up to the gap, so every offset of the partition stays
/// readable, locally or remotely; the gap is reported by the run and by the offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_in_the_remote_log_stops_local_deletion_there() {
    let t = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let storage = fs_storage(store.path());
    let dir = write_partition(&t.path().join("kafka-logs"), "gappy", 0, 11);
    let closed: Vec<(i64, i64)> = {
        let lp = LocalPartition::open(&dir).unwrap();
        lp.closed_segments().iter().map(|s| (s.base_offset, s.next_offset.unwrap() - 1)).collect()
    };
    assert!(closed.len() >= 4, "{closed:?}");
    let clock = Clock::new();
    // Local retention off for the copy run (as `rsm tier` with retention off), then 1 ms.
    let engine = RemoteLogManager::with_local_metadata(
        clock.config(&[("local.retention.ms", "-2")]),
        Arc::clone(&storage),
        &t.path().join("metadata"),
    )
    .unwrap();
    let tp = engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    let r = engine.run_partition(&tp).await.unwrap();
    assert_eq!(r.copy.copied.len(), closed.len());
    assert!(r.expiration.local_deleted.is_empty() && r.expiration.gaps.is_empty());
    let middle = copied(&remote(&engine, &tp).await)[2].clone();
    engine.delete_segment(&tp, &middle.remote_log_segment_id.id).await.unwrap();
    engine.close().await.unwrap();

    clock.set(T0 + 2 * HOUR);
    let engine = RemoteLogManager::with_local_metadata(
        clock.config(&[("local.retention.ms", "1")]),
        Arc::clone(&storage),
        &t.path().join("metadata"),
    )
    .unwrap();
    engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    let gap = rsm_tiering::OffsetRange { start: middle.start_offset, end: middle.end_offset };
    for run in 0..2 {
        let r = engine.run_partition(&tp).await.unwrap();
        assert_eq!(r.expiration.gaps, vec![gap], "run {run}");
        let want: Vec<i64> = if run == 0 { closed[..2].iter().map(|c| c.0).collect() } else { vec![] };
        assert_eq!(r.expiration.local_deleted, want, "run {run}: only the segments below the gap go");
    }
    let o = engine.offsets(&tp).await.unwrap();
    assert_eq!(o.remote_gaps, vec![gap]);
    assert_eq!(o.local_log_start, middle.start_offset, "the local log starts at the gap");
    // Every offset of the partition is somewhere: remote below the gap, local from it.
    let remote_now = copied(&remote(&engine, &tp).await).into_iter().cloned().collect::<Vec<_>>();
    for &(base, end) in &closed {
        let local = LocalPartition::open(&dir).unwrap().segments.iter().any(|s| s.base_offset == base);
        let remote = remote_now.iter().any(|m| m.start_offset <= base && m.end_offset >= end);
        assert!(local || remote, "offsets {base}..={end} exist nowhere");
        if base >= middle.start_offset {
            assert!(local, "offsets {base}..={end} at or past the gap are kept locally");
        }
    }
    engine.close().await.unwrap();
}

/// KIP-1105: as Kafka's copy and expiration tasks, a run does nothing while the partition's metadata is not
/// ready, and says so; once it is ready again, the run copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_the_partitions_metadata_to_be_ready() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let dir = write_partition(&t.path().join("kafka-logs"), "ready", 0, 3);
    let clock = Clock::new();
    let engine =
        RemoteLogManager::with_local_metadata(clock.config(&[]), fs_storage(&store), &t.path().join("metadata"))
            .unwrap();
    let tp = engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap();
    assert!(engine.metadata().is_partition_ready(&tp));
    engine.metadata().on_stop_partitions(std::slice::from_ref(&tp)).await.unwrap();
    assert!(!engine.metadata().is_partition_ready(&tp));

    let e = engine.run_partition(&tp).await.unwrap_err();
    assert_eq!(e.kind(), rsm_core::ErrorKind::Busy, "{e}");
    assert!(e.message().contains(&format!("metadata of {tp} is not ready")), "{e}");
    let objects = |dir: &std::path::Path| rsm_core::testkit::files_under(dir).len();
    assert_eq!(objects(&store), 0, "nothing copied while not ready");

    engine.metadata().on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
    let r = engine.run_partition(&tp).await.unwrap();
    assert!(!r.copy.copied.is_empty(), "copied once ready");
    assert!(objects(&store) > 0);
}
