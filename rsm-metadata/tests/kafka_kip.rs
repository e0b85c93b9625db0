//! KIP-1105 readiness and KIP-1266 compacted metadata topics, against a real broker
//! (`eval "$(tools/servers/kafka.sh start)"`, which exports `RSM_TEST_KAFKA_BOOTSTRAP`). Without it every
//! Kafka test fails, unless `RSM_SKIP_KAFKA=1` outside CI: then each says it is skipped. Each test has
//! topics of its own (a random suffix).

use rskafka::client::partition::{Compression, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::Record;
use rsm_core::model::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, TopicPartition, Uuid,
};
use rsm_metadata::admin::{NewTopic, create_topic, topic_configs};
use rsm_metadata::kafka::{KafkaMetadataConfig, KafkaMetadataManager, read_topic};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::records::{self, MetadataRecord, SegmentKey, Tombstone};
use rsm_metadata::{MetadataEvent, RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate};
use std::path::Path;
use std::time::Duration;

use RemoteLogSegmentState::*;

fn bootstrap() -> Option<String> {
    rsm_core::testkit::test_server_vars(
        &["RSM_TEST_KAFKA_BOOTSTRAP"],
        "RSM_SKIP_KAFKA",
        "eval \"$(tools/servers/kafka.sh start)\"  # the Kafka broker",
    )
    .map(|v| v["RSM_TEST_KAFKA_BOOTSTRAP"].clone())
}

fn now() -> rskafka::chrono::DateTime<rskafka::chrono::Utc> {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    rskafka::chrono::DateTime::from_timestamp_millis(ms).unwrap()
}

fn unique(name: &str) -> String {
    format!("rsm-test-{name}-{}", Uuid::random())
}

fn config(bootstrap: &str, topic: &str, partitions: u32, dir: &Path) -> KafkaMetadataConfig {
    let mut c = KafkaMetadataConfig::new(bootstrap, dir)
        .with_topic(topic)
        .with_partitions(partitions)
        .with_replication_factor(1)
        .with_failed_deletions_topic(format!("{topic}-failed"));
    c.request_timeout = Duration::from_secs(30);
    c.consume_wait = Duration::from_secs(60);
    c
}

async fn raw_client(bootstrap: &str) -> Client {
    ClientBuilder::new(vec![bootstrap.to_string()]).build().await.unwrap()
}

fn user_partition(topic: &str, partition: i32) -> TopicIdPartition {
    TopicIdPartition::new(Uuid::random(), TopicPartition::new(topic, partition))
}

fn segment(tp: &TopicIdPartition, start: i64, end: i64) -> RemoteLogSegmentMetadata {
    let id = RemoteLogSegmentId::generate_new(tp.clone());
    RemoteLogSegmentMetadata::new(id, start, end, 1_000 + end, 1, 2_000, 100, [(0, start)].into_iter().collect())
        .unwrap()
}

fn update(m: &RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> RemoteLogSegmentMetadataUpdate {
    RemoteLogSegmentMetadataUpdate::of(m, state, 3_000, 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_readiness_follows_assignment_stop_and_close() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("ready");
    let (leader_dir, follower_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = KafkaMetadataManager::open(config(&b, &topic, 2, leader_dir.path())).await.unwrap();
    let follower = KafkaMetadataManager::open(config(&b, &topic, 2, follower_dir.path())).await.unwrap();
    let tp = user_partition("ready", 0);
    let other = user_partition("ready", 1);

    // Not assigned: not ready, on either host, though both managers are open.
    assert!(leader.is_ready() && follower.is_ready());
    assert!(!leader.is_partition_ready(&tp) && !follower.is_partition_ready(&tp));

    leader.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
    assert!(leader.is_partition_ready(&tp));
    assert!(!leader.is_partition_ready(&other), "only the assigned partition is ready");
    let segments: Vec<_> = (0..5).map(|i| segment(&tp, i * 10, i * 10 + 9)).collect();
    for s in &segments {
        leader.add_remote_log_segment_metadata(s).await.unwrap();
        leader.update_remote_log_segment_metadata(&update(s, CopySegmentFinished)).await.unwrap();
    }
    assert!(!follower.is_partition_ready(&tp), "the follower was not assigned the partition yet");

    // Assigned as follower: ready once the call returns, and then everything written before is read.
    follower.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    assert!(follower.is_partition_ready(&tp));
    let index = follower.metadata_partition_of(&tp);
    let end = raw_client(&b)
        .await
        .partition_client(topic.as_str(), index, UnknownTopicHandling::Retry)
        .await
        .unwrap()
        .get_offset(rskafka::client::partition::OffsetAt::Latest)
        .await
        .unwrap();
    assert_eq!(follower.next_offset(index).await, Some(end), "ready means caught up to the assignment's end");
    assert_eq!(follower.list_remote_log_segments(&tp).await.unwrap().len(), segments.len());

    // Stopped: not ready (and not served); assigned again: ready again.
    follower.on_stop_partitions(std::slice::from_ref(&tp)).await.unwrap();
    assert!(!follower.is_partition_ready(&tp));
    assert!(follower.list_remote_log_segments(&tp).await.is_err());
    follower.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    assert!(follower.is_partition_ready(&tp));

    // Closed: nothing is ready.
    follower.close().await.unwrap();
    assert!(!follower.is_ready() && !follower.is_partition_ready(&tp));
    assert!(leader.is_partition_ready(&tp), "the other host's manager is unaffected");
    leader.close().await.unwrap();
    assert!(!leader.is_partition_ready(&tp));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_readiness_stays_off_when_the_catch_up_fails() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("unready");
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b, &topic, 1, dir.path());
    c.request_timeout = Duration::from_secs(3);
    c.consume_wait = Duration::from_secs(3);
    let m = KafkaMetadataManager::open(c).await.unwrap();
    // The metadata topic is deleted under the manager: the assignment's catch-up can not be done, so the
    // partition must not be reported ready.
    let client = raw_client(&b).await;
    client.controller_client().unwrap().delete_topic(&topic, 30_000).await.unwrap();
    let tp = user_partition("unready", 0);
    assert!(m.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.is_err());
    assert!(m.is_ready(), "the manager itself is open");
    assert!(!m.is_partition_ready(&tp), "a partition whose metadata was not caught up is not ready");
}

#[tokio::test]
async fn local_readiness_follows_assignment_stop_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let m = LocalMetadataManager::open(LocalMetadataConfig::new(dir.path())).unwrap();
    let tp = user_partition("local", 0);
    assert!(m.is_ready());
    assert!(!m.is_partition_ready(&tp), "open, but the partition is not assigned");
    m.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
    assert!(m.is_partition_ready(&tp));
    m.on_stop_partitions(std::slice::from_ref(&tp)).await.unwrap();
    assert!(!m.is_partition_ready(&tp));
    m.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    assert!(m.is_partition_ready(&tp));
    m.close().await.unwrap();
    assert!(!m.is_partition_ready(&tp));
}

/// A record as KIP-1266's proposal writes it: the segment key of the event's state, the event's value.
fn keyed(event: &MetadataEvent) -> Record {
    let key = match event {
        MetadataEvent::Segment(m) => SegmentKey::new(&m.remote_log_segment_id, m.state),
        MetadataEvent::SegmentUpdate(u) => SegmentKey::new(&u.remote_log_segment_id, u.state),
        _ => unreachable!("segment events only"),
    };
    Record {
        key: Some(key.encode().to_vec()),
        value: Some(records::encode(event)),
        headers: Default::default(),
        timestamp: now(),
    }
}

fn tombstone(id: &RemoteLogSegmentId, state: RemoteLogSegmentState) -> Record {
    Record {
        key: Some(SegmentKey::new(id, state).encode().to_vec()),
        value: None,
        headers: Default::default(),
        timestamp: now(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_metadata_topic_with_keys_and_tombstones_is_read() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("compacted");
    let dir = tempfile::tempdir().unwrap();
    let servers = vec![b.clone()];
    let configs = [("cleanup.policy", "compact".to_string()), ("retention.ms", "-1".to_string())];
    let new = NewTopic { name: &topic, partitions: 1, replication_factor: 1, configs: &configs };
    assert!(create_topic(&servers, "test", &new, Duration::from_secs(30)).await.unwrap());
    let got = topic_configs(&servers, "test", &topic, Duration::from_secs(30)).await.unwrap();
    assert_eq!(got.get("cleanup.policy").map(String::as_str), Some("compact"), "{got:?}");

    let tp = user_partition("compacted", 0);
    let (kept, deleted) = (segment(&tp, 0, 9), segment(&tp, 10, 19));
    let client = raw_client(&b).await;
    let pc = client.partition_client(topic.as_str(), 0, UnknownTopicHandling::Retry).await.unwrap();
    // The broker refuses a record without a key on a compacted topic (what Kafka 4.4's writer sends).
    let unkeyed = Record {
        key: None,
        value: Some(records::encode(&MetadataEvent::Segment(kept.clone()))),
        headers: Default::default(),
        timestamp: now(),
    };
    assert!(pc.produce(vec![unkeyed], Compression::NoCompression).await.is_err(), "a compacted topic needs keys");

    let mut batch = Vec::new();
    for s in [&kept, &deleted] {
        batch.push(keyed(&MetadataEvent::Segment(s.clone())));
        batch.push(keyed(&MetadataEvent::SegmentUpdate(update(s, CopySegmentFinished))));
    }
    batch.push(keyed(&MetadataEvent::SegmentUpdate(update(&deleted, DeleteSegmentStarted))));
    batch.push(keyed(&MetadataEvent::SegmentUpdate(update(&deleted, DeleteSegmentFinished))));
    for state in [CopySegmentStarted, CopySegmentFinished, DeleteSegmentStarted, DeleteSegmentFinished] {
        batch.push(tombstone(&deleted.remote_log_segment_id, state));
    }
    // A tombstone of the kept segment's copy-started record only: by the proposal's meaning its records are
    // deleted, so the reader forgets it too. Written to a second user partition's segment to keep `kept`.
    let tp2 = user_partition("compacted", 1);
    let forgotten = segment(&tp2, 0, 9);
    batch.push(keyed(&MetadataEvent::Segment(forgotten.clone())));
    batch.push(keyed(&MetadataEvent::SegmentUpdate(update(&forgotten, CopySegmentFinished))));
    batch.push(tombstone(&forgotten.remote_log_segment_id, CopySegmentStarted));
    let written = batch.len() as i64;
    pc.produce(batch, Compression::NoCompression).await.unwrap();

    // The manager (reading and writing, as a broker host opens it) reads the topic.
    let m = KafkaMetadataManager::open(config(&b, &topic, 1, dir.path())).await.unwrap();
    m.on_partition_leadership_changes(&[], &[tp.clone(), tp2.clone()]).await.unwrap();
    assert!(m.is_partition_ready(&tp) && m.is_partition_ready(&tp2));
    assert_eq!(m.next_offset(0).await, Some(written), "every record read, tombstones included");
    let copied = update(&kept, CopySegmentFinished).apply_to(&kept);
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), vec![copied.clone()]);
    assert_eq!(m.remote_log_segment_metadata(&tp, 0, 5).await.unwrap(), Some(copied));
    assert!(m.remote_log_segment_metadata(&tp, 0, 15).await.unwrap().is_none(), "the deleted segment is gone");
    assert!(m.list_remote_log_segments(&tp2).await.unwrap().is_empty(), "the tombstoned segment is forgotten");
    m.close().await.unwrap();

    // The reader for tools sees every record, the tombstones as tombstones.
    let all = read_topic(&config(&b, &topic, 1, dir.path())).await.unwrap();
    assert_eq!(all.len() as i64, written);
    let tombstones: Vec<_> = all
        .iter()
        .filter_map(|r| match &r.record {
            Ok(MetadataRecord::Tombstone(Tombstone::Segment(k))) => Some(k.segment_id),
            _ => None,
        })
        .collect();
    let mut want = vec![deleted.remote_log_segment_id.id; 4];
    want.push(forgotten.remote_log_segment_id.id);
    assert_eq!(tombstones, want);
    assert!(all.iter().all(|r| r.record.is_ok()), "every record reads");
    assert_eq!(all.iter().filter(|r| r.event().is_some()).count(), written as usize - 5);
    // Applied in order as `rsm audit` applies them: the same state as the manager's.
    let mut store = rsm_metadata::cache::MetadataStore::new();
    for r in all {
        r.apply_to(&mut store).unwrap();
    }
    let held: Vec<_> = store.partitions().flat_map(|(_, p)| p.segments()).collect();
    assert_eq!(held, vec![update(&kept, CopySegmentFinished).apply_to(&kept)]);
}
