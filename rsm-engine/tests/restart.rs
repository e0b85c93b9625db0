//! A restart of the engine over many remote segments: the metadata log opens, the partitions register and
//! the first run of each finds nothing to copy, expire or index. The segment count is
//! `RSM_ENGINE_RESTART_SEGMENTS` (default 2,000); the time is printed (run with `--release --nocapture`
//! for the figure).

use rsm_core::format::chunk::{ChunkEntry, Rdi, RdiObject, Transform};
use rsm_core::format::remote_index::RemoteIndexFiles;
use rsm_core::model::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, TopicPartition, Uuid,
};
use rsm_engine::{RemoteLogManager, Role};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::{RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate};
use std::time::Instant;

mod common;
use common::*;

const PARTITIONS: i64 = 10;
const OFFSETS_PER_SEGMENT: i64 = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_over_many_remote_segments_copies_nothing() {
    let total: i64 = std::env::var("RSM_ENGINE_RESTART_SEGMENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    let per = total / PARTITIONS;
    let t = tempfile::tempdir().unwrap();
    let meta = t.path().join("metadata");
    let logs = t.path().join("logs");
    let store = t.path().join("store");
    std::fs::create_dir(&store).unwrap();

    // What a leader left: the metadata of every copy, and each partition's directory with its active
    // segment and its index files up to date.
    let mut config = LocalMetadataConfig::new(&meta);
    config.fsync = false;
    let m = LocalMetadataManager::open(config).unwrap();
    let end = per * OFFSETS_PER_SEGMENT;
    let mut dirs = Vec::new();
    for p in 0..PARTITIONS {
        let topic_id = Uuid::random();
        let tp = TopicIdPartition::new(topic_id, TopicPartition::new("restart", p as i32));
        let dir = logs.join(format!("restart-{p}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("partition.metadata"), format!("version: 0\ntopic_id: {topic_id}\n")).unwrap();
        std::fs::write(dir.join(format!("{end:020}.log")), b"").unwrap();
        m.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
        let mut index = RemoteIndexFiles::open(&dir.join("remote-index"), 64 << 20).unwrap();
        for s in 0..per {
            let start = s * OFFSETS_PER_SEGMENT;
            let id = RemoteLogSegmentId::new(tp.clone(), Uuid::random());
            let md = RemoteLogSegmentMetadata::new(
                id.clone(),
                start,
                start + OFFSETS_PER_SEGMENT - 1,
                T0 + start,
                0,
                T0,
                1 << 20,
                [(0, start)].into(),
            )
            .unwrap();
            m.add_remote_log_segment_metadata(&md).await.unwrap();
            let done = RemoteLogSegmentMetadataUpdate::of(&md, RemoteLogSegmentState::CopySegmentFinished, T0, 0);
            m.update_remote_log_segment_metadata(&done).await.unwrap();
            let entry = ChunkEntry {
                first_offset: start,
                last_offset: start + OFFSETS_PER_SEGMENT - 1,
                first_timestamp: T0 + start,
                last_timestamp: T0 + start + OFFSETS_PER_SEGMENT - 1,
                data_length: 1 << 20,
                rdi: Rdi {
                    object: RdiObject::Log,
                    transform: Transform::None,
                    segment_start_offset: start,
                    segment_id: id.id,
                    stored_position: 0,
                    stored_length: 1 << 20,
                    crc32c: 0,
                    stored_crc32c: 0,
                    original_position: 0,
                },
            };
            index.append_segment(start, &[entry]).unwrap();
        }
        dirs.push(dir);
    }
    m.close().await.unwrap();
    drop(m);

    let clock = Clock::new();
    let started = Instant::now();
    let engine = RemoteLogManager::with_local_metadata(
        clock.config(&[("retention.ms", "-1"), ("local.retention.ms", "-2")]),
        fs_storage(&store),
        &meta,
    )
    .unwrap();
    let opened = started.elapsed();
    for d in &dirs {
        engine.add_partition(d, Role::Leader { epoch: 0 }, None).await.unwrap();
    }
    let registered = started.elapsed();
    for (tp, r) in engine.run_all().await {
        let r = r.unwrap_or_else(|e| panic!("{tp}: {e}"));
        assert!(r.copy.copied.is_empty(), "{tp}: copied again after the restart");
        assert_eq!((r.indexed, r.expiration.expired.len()), (0, 0), "{tp}");
        let o = engine.offsets(&tp).await.unwrap();
        assert_eq!((o.remote_log_start, o.remote_log_end), (Some(0), Some(end - 1)), "{tp}");
    }
    let ran = started.elapsed();
    println!(
        "engine restart over {} remote segments in {PARTITIONS} partitions: metadata open {:.1} ms, partitions \
         registered {:.1} ms, first run of every partition done {:.1} ms",
        per * PARTITIONS,
        opened.as_secs_f64() * 1e3,
        registered.as_secs_f64() * 1e3,
        ran.as_secs_f64() * 1e3
    );
}
