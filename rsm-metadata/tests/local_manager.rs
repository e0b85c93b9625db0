//! The local metadata manager through its contract: the segment lifecycle, Kafka's queries, registration,
//! refused transitions, restarts (with and without snapshots), the layout check, and a restart over many
//! segments.

use RemoteLogSegmentState::*;
use rsm_core::error::ErrorKind;
use rsm_core::model::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, TopicPartition, Uuid,
};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::partitioner::PartitionFormula;
use rsm_metadata::{RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate};
use std::path::Path;

fn tp(partition: i32) -> TopicIdPartition {
    TopicIdPartition::new(Uuid::new(11, 22), TopicPartition::new("orders", partition))
}

fn segment(tp: &TopicIdPartition, start: i64, end: i64, epochs: &[(i32, i64)]) -> RemoteLogSegmentMetadata {
    let id = RemoteLogSegmentId::new(tp.clone(), Uuid::random());
    RemoteLogSegmentMetadata::new(id, start, end, start + 1_000, 3, 5_000, 4096, epochs.iter().copied().collect())
        .unwrap()
}

fn config(dir: &Path) -> LocalMetadataConfig {
    let mut c = LocalMetadataConfig::new(dir);
    c.partitions = 5;
    c
}

async fn copy(m: &dyn RemoteLogMetadataManager, s: &RemoteLogSegmentMetadata) {
    m.add_remote_log_segment_metadata(s).await.unwrap();
    m.update_remote_log_segment_metadata(&RemoteLogSegmentMetadataUpdate::of(s, CopySegmentFinished, 6_000, 3))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_segment_lives_through_copy_and_delete_as_kafka_says() {
    let dir = tempfile::tempdir().unwrap();
    let m = LocalMetadataManager::open(config(dir.path())).unwrap();
    let p = tp(0);
    // Reads need registration.
    let err = m.list_remote_log_segments(&p).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("orders-0"), "{err}");
    m.on_partition_leadership_changes(std::slice::from_ref(&p), &[]).await.unwrap();

    let a = segment(&p, 0, 99, &[(0, 0)]);
    let b = segment(&p, 100, 199, &[(0, 100), (1, 150)]);
    m.add_remote_log_segment_metadata(&a).await.unwrap();
    assert_eq!(m.remote_log_segment_metadata(&p, 0, 50).await.unwrap(), None, "copy started is not readable");
    assert_eq!(m.list_remote_log_segments(&p).await.unwrap().len(), 1);
    m.update_remote_log_segment_metadata(&RemoteLogSegmentMetadataUpdate::of(&a, CopySegmentFinished, 6_000, 3))
        .await
        .unwrap();
    copy(&m, &b).await;

    let found = m.remote_log_segment_metadata(&p, 0, 50).await.unwrap().unwrap();
    assert_eq!((found.remote_log_segment_id.id, found.state), (a.remote_log_segment_id.id, CopySegmentFinished));
    assert_eq!(
        m.remote_log_segment_metadata(&p, 1, 160).await.unwrap().unwrap().remote_log_segment_id.id,
        b.remote_log_segment_id.id
    );
    assert_eq!(m.remote_log_segment_metadata(&p, 0, 160).await.unwrap(), None, "160 is in epoch 1");
    assert_eq!(m.highest_offset_for_epoch(&p, 0).await.unwrap(), Some(149));
    assert_eq!(m.highest_offset_for_epoch(&p, 1).await.unwrap(), Some(199));
    assert_eq!(m.remote_log_size(&p, 0).await.unwrap(), 8192);
    assert_eq!(m.earliest_log_offset(&p).await.unwrap(), Some(0));
    assert_eq!(m.list_remote_log_segments_for_epoch(&p, 1).await.unwrap().len(), 1);

    // A transition Kafka refuses: an error naming both states, and nothing changes.
    let bad = RemoteLogSegmentMetadataUpdate::of(&a, DeleteSegmentFinished, 7_000, 3);
    let err = m.update_remote_log_segment_metadata(&bad).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.to_string().contains("COPY_SEGMENT_FINISHED") && err.to_string().contains("DELETE_SEGMENT_FINISHED"),
        "{err}"
    );

    for state in [DeleteSegmentStarted, DeleteSegmentFinished] {
        m.update_remote_log_segment_metadata(&RemoteLogSegmentMetadataUpdate::of(&a, state, 8_000, 3)).await.unwrap();
    }
    assert_eq!(m.list_remote_log_segments(&p).await.unwrap().len(), 1);
    assert_eq!(m.earliest_log_offset(&p).await.unwrap(), Some(100));

    // A restart holds the same, and the refused update was never written.
    m.close().await.unwrap();
    assert!(m.list_remote_log_segments(&p).await.is_err(), "closed");
    let m = LocalMetadataManager::open(config(dir.path())).unwrap();
    m.on_partition_leadership_changes(&[], std::slice::from_ref(&p)).await.unwrap();
    let after = m.list_remote_log_segments(&p).await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!((after[0].remote_log_segment_id.id, after[0].state), (b.remote_log_segment_id.id, CopySegmentFinished));
    m.on_stop_partitions(std::slice::from_ref(&p)).await.unwrap();
    assert!(m.list_remote_log_segments(&p).await.is_err(), "stopped");
}

fn files_named(dir: &Path, suffix: &str) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            n += files_named(&p, suffix);
        } else if p.to_string_lossy().ends_with(suffix) {
            n += 1;
        }
    }
    n
}

#[tokio::test]
async fn snapshots_replace_the_log_they_cover_and_restarts_read_both() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.partitions = 1;
    c.snapshot_every = 5;
    let m = LocalMetadataManager::open(c.clone()).unwrap();
    let p = tp(0);
    let segments: Vec<_> = (0..6).map(|i| segment(&p, i * 10, i * 10 + 9, &[(0, i * 10)])).collect();
    for s in &segments {
        copy(&m, s).await;
    }
    // 12 events, a snapshot every 5: two snapshots, and only the file after the last one is left.
    assert_eq!(files_named(dir.path(), "snapshot"), 1);
    assert_eq!(files_named(dir.path(), ".log"), 1);
    drop(m); // no close: the last two events are only in the log
    let m = LocalMetadataManager::open(c).unwrap();
    m.on_partition_leadership_changes(std::slice::from_ref(&p), &[]).await.unwrap();
    let listed = m.list_remote_log_segments(&p).await.unwrap();
    assert_eq!(listed.len(), 6);
    assert!(listed.iter().all(|s| s.state == CopySegmentFinished));
    assert_eq!(m.highest_offset_for_epoch(&p, 0).await.unwrap(), Some(59));
}

#[tokio::test]
async fn a_log_keeps_its_layout() {
    let dir = tempfile::tempdir().unwrap();
    LocalMetadataManager::open(config(dir.path())).unwrap();
    let mut other = config(dir.path());
    other.partitions = 7;
    let err = LocalMetadataManager::open(other).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("partitions=5") && err.to_string().contains("partitions=7"), "{err}");
    let mut other = config(dir.path());
    other.formula = PartitionFormula::Seeds;
    assert!(LocalMetadataManager::open(other).is_err());
    // A tool opens it as it was made.
    assert!(LocalMetadataManager::open_existing(dir.path()).is_ok());
}

/// A restart over many segments: every segment back, in its state. `RSM_METADATA_RESTART_SEGMENTS` sets
/// how many (default 20,000; the note's figure is from 100,000 in a release build); the restart time is
/// printed, not asserted.
#[tokio::test]
async fn a_restart_over_many_segments_brings_every_one_back() {
    let n: i64 = std::env::var("RSM_METADATA_RESTART_SEGMENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let dir = tempfile::tempdir().unwrap();
    let mut c = LocalMetadataConfig::new(dir.path());
    c.fsync = false; // writing is not what is measured
    let m = LocalMetadataManager::open(c.clone()).unwrap();
    let partitions: Vec<_> = (0..20).map(tp).collect();
    for i in 0..n {
        let p = &partitions[(i % 20) as usize];
        let start = (i / 20) * 100;
        copy(&m, &segment(p, start, start + 99, &[(0, start)])).await;
    }
    drop(m);
    let t = std::time::Instant::now();
    let m = LocalMetadataManager::open(c).unwrap();
    let opened = t.elapsed();
    assert_eq!(m.segment_count().unwrap(), n as usize);
    m.on_partition_leadership_changes(&partitions, &[]).await.unwrap();
    for p in &partitions {
        let listed = m.list_remote_log_segments(p).await.unwrap();
        assert_eq!(listed.len() as i64, n / 20);
        assert!(listed.iter().all(|s| s.state == CopySegmentFinished));
    }
    println!("restart of a local metadata log with {n} segments: {:.1} ms", opened.as_secs_f64() * 1e3);
}

/// Every file under `dir` with its bytes, to show that a read changed nothing.
fn tree(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.push((p.clone(), Vec::new()));
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// One writer per metadata directory: a second writer is refused at once (two appenders would interleave
/// their records), and a reader beside the writer sees what it wrote, changes no byte, and can write nothing;
/// a reader of a directory that does not exist is told so and creates nothing.
#[tokio::test]
async fn one_writer_at_a_time_and_readers_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let writer = LocalMetadataManager::open(config(dir.path())).unwrap();
    let p = tp(3);
    writer.on_partition_leadership_changes(std::slice::from_ref(&p), &[]).await.unwrap();
    let a = segment(&p, 0, 99, &[(0, 0)]);
    copy(&writer, &a).await;

    let second = LocalMetadataManager::open(config(dir.path())).unwrap_err();
    assert_eq!(second.kind(), ErrorKind::Busy, "{second}");
    assert!(second.to_string().contains(&format!("process {}", std::process::id())), "{second}");
    assert!(LocalMetadataManager::open_existing(dir.path()).is_err(), "open_existing writes too");

    // A torn tail as a writer mid-append leaves it: the reader neither reads it nor cuts it.
    let log = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|d| d.is_dir() && std::fs::read_dir(d).unwrap().next().is_some())
        .expect("a metadata partition with a file");
    let active = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|f| f.extension().is_some_and(|x| x == "log"))
        .unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&active).unwrap();
    std::io::Write::write_all(&mut f, &[0, 0, 0, 40, 1, 2]).unwrap();
    drop(f);

    let before = tree(dir.path());
    let reader = LocalMetadataManager::open_existing_read_only(dir.path()).unwrap();
    reader.on_partition_leadership_changes(std::slice::from_ref(&p), &[]).await.unwrap();
    let seen = reader.list_remote_log_segments(&p).await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].remote_log_segment_id.id, seen[0].state), (a.remote_log_segment_id.id, CopySegmentFinished));
    let refused = reader.add_remote_log_segment_metadata(&segment(&p, 100, 199, &[(0, 100)])).await.unwrap_err();
    assert!(refused.to_string().contains("read-only"), "{refused}");
    reader.close().await.unwrap();
    assert_eq!(tree(dir.path()), before, "the reader changed the directory");
    writer.close().await.unwrap();

    let missing = dir.path().join("mistyped");
    let e = LocalMetadataManager::open_existing_read_only(&missing).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("mistyped"), "{e}");
    let mut c = config(&missing);
    c.read_only = true;
    assert_eq!(LocalMetadataManager::open(c).unwrap_err().kind(), ErrorKind::NotFound);
    assert!(!missing.exists(), "a read created the directory");
}
