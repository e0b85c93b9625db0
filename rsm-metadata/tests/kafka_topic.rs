//! The Kafka-topic manager against a real broker (`eval "$(tools/servers/kafka.sh start)"`, which exports
//! `RSM_TEST_KAFKA_BOOTSTRAP`). Without it every test fails, unless `RSM_SKIP_KAFKA=1` outside CI: then
//! each says it is skipped. Each test has topics of its own (a random suffix).

use rskafka::client::partition::{Compression, OffsetAt, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::Record;
use rsm_core::error::ErrorKind;
use rsm_core::model::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, TopicPartition, Uuid,
};
use rsm_metadata::kafka::{KafkaFailedDeletions, KafkaMetadataConfig, KafkaMetadataManager, PARTITIONS};
use rsm_metadata::partitioner::{PartitionFormula, metadata_partition};
use rsm_metadata::{
    MetadataEvent, RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState, records,
};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use RemoteLogSegmentState::*;

/// The broker's address, or `None` when skipped locally.
fn bootstrap() -> Option<String> {
    rsm_core::testkit::test_server_vars(
        &["RSM_TEST_KAFKA_BOOTSTRAP"],
        "RSM_SKIP_KAFKA",
        "eval \"$(tools/servers/kafka.sh start)\"  # the Kafka broker",
    )
    .map(|v| v["RSM_TEST_KAFKA_BOOTSTRAP"].clone())
}

/// Now, as a record timestamp (raw records written by these tests go to topics with the broker's default
/// retention, 7 days, which would delete records stamped earlier).
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

/// The high watermark of every partition of `topic`.
async fn end_offsets(client: &Client, topic: &str, partitions: u32) -> Vec<i64> {
    let mut out = Vec::new();
    for p in 0..partitions as i32 {
        let pc = client.partition_client(topic, p, UnknownTopicHandling::Retry).await.unwrap();
        out.push(pc.get_offset(OffsetAt::Latest).await.unwrap());
    }
    out
}

fn user_partition(topic: &str, partition: i32) -> TopicIdPartition {
    TopicIdPartition::new(Uuid::random(), TopicPartition::new(topic, partition))
}

fn segment(tp: &TopicIdPartition, start: i64, end: i64, epoch: i32) -> RemoteLogSegmentMetadata {
    let id = RemoteLogSegmentId::generate_new(tp.clone());
    RemoteLogSegmentMetadata::new(id, start, end, 1_000 + end, 1, 2_000, 100, [(epoch, start)].into_iter().collect())
        .unwrap()
}

fn update(m: &RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> RemoteLogSegmentMetadataUpdate {
    RemoteLogSegmentMetadataUpdate::of(m, state, 3_000, 1)
}

async fn add_copied(m: &KafkaMetadataManager, s: &RemoteLogSegmentMetadata) {
    m.add_remote_log_segment_metadata(s).await.unwrap();
    m.update_remote_log_segment_metadata(&update(s, CopySegmentFinished)).await.unwrap();
}

fn copied(s: &RemoteLogSegmentMetadata) -> RemoteLogSegmentMetadata {
    update(s, CopySegmentFinished).apply_to(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_topic_is_created_with_the_configured_partitions_and_another_count_is_refused() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("create");
    let dir = tempfile::tempdir().unwrap();
    let m = KafkaMetadataManager::open(config(&b, &topic, 4, dir.path())).await.unwrap();
    assert!(m.is_ready());
    let topics = raw_client(&b).await.list_topics().await.unwrap();
    let t = topics.iter().find(|t| t.name == topic).expect("the metadata topic was created");
    assert_eq!(t.partitions.len(), 4);
    // Created with Kafka's metadata topic configs (SR-29: retention -1), which rskafka alone can not send.
    let configs = rsm_metadata::admin::topic_configs(std::slice::from_ref(&b), "test", &topic, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(configs.get("retention.ms").map(String::as_str), Some("-1"), "{configs:?}");
    assert_eq!(configs.get("cleanup.policy").map(String::as_str), Some("delete"), "{configs:?}");
    // Opening again on the existing topic works; with another count it is refused, naming the key.
    KafkaMetadataManager::open(config(&b, &topic, 4, dir.path())).await.unwrap();
    let err = KafkaMetadataManager::open(config(&b, &topic, 5, dir.path())).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert_eq!(err.config_key(), Some(PARTITIONS.key));
    assert!(err.message().contains("4 partitions"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_lifecycle_reads_back_and_a_closed_manager_refuses_calls() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("lifecycle");
    let dir = tempfile::tempdir().unwrap();
    let m = KafkaMetadataManager::open(config(&b, &topic, 3, dir.path())).await.unwrap();
    let tp = user_partition("orders", 0);

    // Not registered: a not-found error naming the partition.
    let err = m.list_remote_log_segments(&tp).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.message().contains(&tp.to_string()), "{err}");

    m.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
    assert!(m.list_remote_log_segments(&tp).await.unwrap().is_empty());
    let a = segment(&tp, 0, 99, 0);
    let b2 = segment(&tp, 100, 199, 0);
    m.add_remote_log_segment_metadata(&a).await.unwrap();
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), vec![a.clone()]);
    assert_eq!(m.remote_log_segment_metadata(&tp, 0, 50).await.unwrap(), None, "not copied yet");
    m.update_remote_log_segment_metadata(&update(&a, CopySegmentFinished)).await.unwrap();
    add_copied(&m, &b2).await;
    assert_eq!(m.remote_log_segment_metadata(&tp, 0, 150).await.unwrap(), Some(copied(&b2)));
    assert_eq!(m.highest_offset_for_epoch(&tp, 0).await.unwrap(), Some(199));
    assert_eq!(m.remote_log_size(&tp, 0).await.unwrap(), 200);
    assert_eq!(m.earliest_log_offset(&tp).await.unwrap(), Some(0));
    assert_eq!(m.list_remote_log_segments_for_epoch(&tp, 0).await.unwrap().len(), 2);

    m.update_remote_log_segment_metadata(&update(&a, DeleteSegmentStarted)).await.unwrap();
    assert_eq!(m.remote_log_segment_metadata(&tp, 0, 50).await.unwrap(), None);
    m.update_remote_log_segment_metadata(&update(&a, DeleteSegmentFinished)).await.unwrap();
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), vec![copied(&b2)]);
    assert_eq!(m.earliest_log_offset(&tp).await.unwrap(), Some(100));

    for state in [
        RemotePartitionDeleteState::DeletePartitionMarked,
        RemotePartitionDeleteState::DeletePartitionStarted,
        RemotePartitionDeleteState::DeletePartitionFinished,
    ] {
        let d = RemotePartitionDeleteMetadata {
            topic_id_partition: tp.clone(),
            state,
            event_timestamp_ms: 5,
            broker_id: 1,
        };
        m.put_remote_partition_delete_metadata(&d).await.unwrap();
    }
    assert!(m.list_remote_log_segments(&tp).await.unwrap().is_empty(), "a finished delete forgets the partition");

    // Stopped: reads are refused again.
    m.on_stop_partitions(std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap_err().kind(), ErrorKind::NotFound);

    m.close().await.unwrap();
    assert!(!m.is_ready());
    let err = m.list_remote_log_segments(&tp).await.unwrap_err();
    assert!(err.message().contains("closed"), "{err}");
    let err = m.add_remote_log_segment_metadata(&segment(&tp, 200, 299, 0)).await.unwrap_err();
    assert!(err.message().contains("closed"), "{err}");
    assert!(m.close().await.unwrap_err().message().contains("already closed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_transition_is_refused_and_nothing_is_produced() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("refused");
    let dir = tempfile::tempdir().unwrap();
    let m = KafkaMetadataManager::open(config(&b, &topic, 3, dir.path())).await.unwrap();
    let tp = user_partition("orders", 1);
    m.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
    let s = segment(&tp, 0, 9, 0);
    m.add_remote_log_segment_metadata(&s).await.unwrap();
    let client = raw_client(&b).await;
    let before = end_offsets(&client, &topic, 3).await;
    assert_eq!(before.iter().sum::<i64>(), 1);

    let err = m.update_remote_log_segment_metadata(&update(&s, DeleteSegmentFinished)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.message().contains("COPY_SEGMENT_STARTED") && err.message().contains("DELETE_SEGMENT_FINISHED"),
        "{err}"
    );
    // New metadata must start in copy started.
    let mut finished = segment(&tp, 10, 19, 0);
    finished.state = CopySegmentFinished;
    let err = m.add_remote_log_segment_metadata(&finished).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let unknown = segment(&tp, 10, 19, 0);
    let err = m.update_remote_log_segment_metadata(&update(&unknown, CopySegmentFinished)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let d = RemotePartitionDeleteMetadata {
        topic_id_partition: tp.clone(),
        state: RemotePartitionDeleteState::DeletePartitionFinished,
        event_timestamp_ms: 1,
        broker_id: 1,
    };
    assert_eq!(m.put_remote_partition_delete_metadata(&d).await.unwrap_err().kind(), ErrorKind::InvalidArgument);

    assert_eq!(end_offsets(&client, &topic, 3).await, before, "a refused event is not produced");
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), vec![s]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_on_another_host_sees_the_leaders_events() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("follower");
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = KafkaMetadataManager::open(config(&b, &topic, 3, dir_a.path())).await.unwrap();
    let tps: Vec<_> = (0..4).map(|p| user_partition("payments", p)).collect();
    leader.on_partition_leadership_changes(&tps, &[]).await.unwrap();
    let first: Vec<_> = tps.iter().map(|tp| segment(tp, 0, 49, 0)).collect();
    for s in &first {
        add_copied(&leader, s).await;
    }

    let follower = KafkaMetadataManager::open(config(&b, &topic, 3, dir_b.path())).await.unwrap();
    follower.on_partition_leadership_changes(&[], &tps[..1]).await.unwrap();
    assert_eq!(follower.list_remote_log_segments(&tps[0]).await.unwrap(), vec![copied(&first[0])]);
    // Registering another partition: its events are there (its metadata partition may be read already).
    follower.on_partition_leadership_changes(&[], &tps[1..]).await.unwrap();
    for (tp, s) in tps.iter().zip(&first) {
        assert_eq!(follower.list_remote_log_segments(tp).await.unwrap(), vec![copied(s)]);
    }
    // A follower read after a leader write sees it (strong consistency without a background consumer).
    let next = segment(&tps[2], 50, 99, 1);
    add_copied(&leader, &next).await;
    assert_eq!(follower.remote_log_segment_metadata(&tps[2], 1, 60).await.unwrap(), Some(copied(&next)));
    assert_eq!(follower.highest_offset_for_epoch(&tps[2], 1).await.unwrap(), Some(99));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_reads_only_the_records_after_its_snapshot() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("restart");
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tp = user_partition("clicks", 0);
    let mut all = Vec::new();
    {
        let m = KafkaMetadataManager::open(config(&b, &topic, 1, dir_a.path())).await.unwrap();
        m.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
        for i in 0..20 {
            let s = segment(&tp, i * 10, i * 10 + 9, 0);
            add_copied(&m, &s).await;
            all.push(copied(&s));
        }
        m.close().await.unwrap();
    }
    assert!(dir_a.path().join(format!("{topic}-0.snapshot")).exists());
    // Another host writes 3 events meanwhile.
    {
        let other = KafkaMetadataManager::open(config(&b, &topic, 1, dir_b.path())).await.unwrap();
        other.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
        let s = segment(&tp, 200, 209, 0);
        add_copied(&other, &s).await;
        other.update_remote_log_segment_metadata(&update(&all[0], DeleteSegmentStarted)).await.unwrap();
        all[0] = update(&all[0], DeleteSegmentStarted).apply_to(&all[0]);
        all.push(copied(&s));
        other.close().await.unwrap();
    }
    let m = KafkaMetadataManager::open(config(&b, &topic, 1, dir_a.path())).await.unwrap();
    m.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(m.records_fetched(), 3, "only the records after the snapshot are read");
    assert_eq!(m.next_offset(0).await, Some(43));
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), all);

    // A damaged snapshot is logged and the partition is read from its start.
    m.close().await.unwrap();
    let dir_c = tempfile::tempdir().unwrap();
    std::fs::write(dir_c.path().join(format!("{topic}-0.snapshot")), b"not a snapshot").unwrap();
    let m = KafkaMetadataManager::open(config(&b, &topic, 1, dir_c.path())).await.unwrap();
    m.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(m.records_fetched(), 43);
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_partition_formulas_route_to_the_partition_they_compute() {
    let Some(b) = bootstrap() else { return };
    let client = raw_client(&b).await;
    for formula in [PartitionFormula::Kafka, PartitionFormula::Seeds] {
        let topic = unique(&format!("{formula:?}").to_lowercase());
        let dir = tempfile::tempdir().unwrap();
        let n = 7;
        let m = KafkaMetadataManager::open(config(&b, &topic, n, dir.path()).with_partition_formula(formula))
            .await
            .unwrap();
        for p in 0..6 {
            let tp = user_partition("routed", p);
            let want = metadata_partition(formula, &tp, n);
            assert_eq!(m.metadata_partition_of(&tp), want);
            let before = end_offsets(&client, &topic, n).await;
            let s = segment(&tp, 0, 9, 0);
            m.add_remote_log_segment_metadata(&s).await.unwrap();
            let after = end_offsets(&client, &topic, n).await;
            for i in 0..n as usize {
                let grew = after[i] - before[i];
                assert_eq!(grew, i64::from(i as i32 == want), "{formula:?}: partition {i} (want {want})");
            }
            // The record: no key (as Kafka's ProducerManager), the value Kafka's serde bytes of the event.
            let pc = client.partition_client(topic.as_str(), want, UnknownTopicHandling::Retry).await.unwrap();
            let (recs, _) = pc.fetch_records(before[want as usize], 1..1_000_000, 1_000).await.unwrap();
            assert_eq!(recs[0].record.key, None);
            let value = recs[0].record.value.as_deref().unwrap();
            assert_eq!(records::decode(value).unwrap(), MetadataEvent::Segment(s));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_deletions_are_recorded_listed_and_drained() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("failed");
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b, &topic, 1, dir.path());
    let f = KafkaFailedDeletions::open(&c).await.unwrap();
    assert!(f.list().await.unwrap().is_empty());
    let configs = rsm_metadata::admin::topic_configs(
        std::slice::from_ref(&b),
        "test",
        &format!("{topic}-failed"),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert_eq!(configs.get("cleanup.policy").map(String::as_str), Some("compact"), "{configs:?}");
    let tp = user_partition("orders", 3);
    let segs: Vec<_> = (0..3).map(|i| copied(&segment(&tp, i * 10, i * 10 + 9, 0))).collect();
    for s in &segs {
        f.record(s).await.unwrap();
    }
    assert_eq!(f.list().await.unwrap(), segs);
    f.drain(&segs[1].remote_log_segment_id).await.unwrap();
    assert_eq!(f.list().await.unwrap(), vec![segs[0].clone(), segs[2].clone()]);
    // Another process sees the same, from the topic alone.
    let again = KafkaFailedDeletions::open(&c).await.unwrap();
    assert_eq!(again.list().await.unwrap(), vec![segs[0].clone(), segs[2].clone()]);
    // Recorded again after a drain: listed again.
    again.record(&segs[1]).await.unwrap();
    assert_eq!(f.list().await.unwrap().len(), 3);
    let topics = raw_client(&b).await.list_topics().await.unwrap();
    assert_eq!(topics.iter().find(|t| t.name == c.failed_deletions_topic).unwrap().partitions.len(), 1);
}

/// Catching up with 100,000 records: correctness only; the time is printed, not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catch_up_of_100_000_records_builds_the_whole_state() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("catchup");
    let dir = tempfile::tempdir().unwrap();
    // Created by the manager, then filled directly (batches of 1,000) as a busy cluster would have.
    KafkaMetadataManager::open(config(&b, &topic, 1, dir.path())).await.unwrap().close().await.unwrap();
    let client = raw_client(&b).await;
    let pc = client.partition_client(topic.as_str(), 0, UnknownTopicHandling::Retry).await.unwrap();
    let tp = user_partition("busy", 0);
    let mut batch = Vec::new();
    let mut segments = HashMap::new();
    for i in 0..50_000i64 {
        let s = segment(&tp, i * 10, i * 10 + 9, 0);
        for e in [MetadataEvent::Segment(s.clone()), MetadataEvent::SegmentUpdate(update(&s, CopySegmentFinished))] {
            batch.push(Record {
                key: None,
                value: Some(records::encode(&e)),
                headers: Default::default(),
                timestamp: now(),
            });
        }
        segments.insert(s.remote_log_segment_id.id, copied(&s));
        if batch.len() == 1_000 {
            pc.produce(std::mem::take(&mut batch), Compression::NoCompression).await.unwrap();
        }
    }
    assert_eq!(pc.get_offset(OffsetAt::Latest).await.unwrap(), 100_000);

    let fresh = tempfile::tempdir().unwrap();
    let m = KafkaMetadataManager::open(config(&b, &topic, 1, fresh.path())).await.unwrap();
    let t = Instant::now();
    m.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    let elapsed = t.elapsed();
    eprintln!("CATCH-UP: 100000 records in {elapsed:?} ({:.0} records/s)", 100_000.0 / elapsed.as_secs_f64());
    assert_eq!(m.records_fetched(), 100_000);
    let listed = m.list_remote_log_segments(&tp).await.unwrap();
    assert_eq!(listed.len(), 50_000);
    assert!(listed.iter().all(|s| segments[&s.remote_log_segment_id.id] == *s));
    assert_eq!(m.highest_offset_for_epoch(&tp, 0).await.unwrap(), Some(499_999));
    assert_eq!(m.remote_log_segment_metadata(&tp, 0, 123_456).await.unwrap().unwrap().start_offset, 123_450);
}

/// Records that do not decode, and events Kafka's rules refuse, are skipped (as Kafka's cache drops them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_records_and_refused_events_are_skipped() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("skipped");
    let dir = tempfile::tempdir().unwrap();
    let m = KafkaMetadataManager::open(config(&b, &topic, 1, dir.path())).await.unwrap();
    let tp = user_partition("noisy", 0);
    let good = segment(&tp, 0, 9, 0);
    let unknown = segment(&tp, 10, 19, 0);
    let client = raw_client(&b).await;
    let pc = client.partition_client(topic.as_str(), 0, UnknownTopicHandling::Retry).await.unwrap();
    let rec = |value: Option<Vec<u8>>| Record { key: None, value, headers: Default::default(), timestamp: now() };
    let values = vec![
        rec(Some(b"\xff\xffnot a metadata record".to_vec())),
        rec(None),
        rec(Some(records::encode(&MetadataEvent::SegmentUpdate(update(&unknown, CopySegmentFinished))))),
        rec(Some(records::encode(&MetadataEvent::Segment(good.clone())))),
    ];
    pc.produce(values, Compression::NoCompression).await.unwrap();
    m.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(m.records_fetched(), 4);
    assert_eq!(m.next_offset(0).await, Some(4));
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), vec![good.clone()]);
    // Writes go on past them.
    m.update_remote_log_segment_metadata(&update(&good, CopySegmentFinished)).await.unwrap();
    assert_eq!(m.list_remote_log_segments(&tp).await.unwrap(), vec![copied(&good)]);
}

/// A snapshot older than the topic's log start (records deleted) is logged and the partition read from
/// its start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_behind_the_log_start_reads_from_the_start() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("logstart");
    let dir = tempfile::tempdir().unwrap();
    let tp = user_partition("trimmed", 0);
    let (a, c) = (segment(&tp, 0, 9, 0), segment(&tp, 10, 19, 0));
    {
        let m = KafkaMetadataManager::open(config(&b, &topic, 1, dir.path())).await.unwrap();
        m.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
        add_copied(&m, &a).await;
        m.close().await.unwrap(); // snapshot at offset 2
    }
    let other = tempfile::tempdir().unwrap();
    let w = KafkaMetadataManager::open(config(&b, &topic, 1, other.path())).await.unwrap();
    add_copied(&w, &c).await; // offsets 2 and 3
    let client = raw_client(&b).await;
    let pc = client.partition_client(topic.as_str(), 0, UnknownTopicHandling::Retry).await.unwrap();
    pc.delete_records(3, 10_000).await.unwrap();
    assert_eq!(pc.get_offset(OffsetAt::Earliest).await.unwrap(), 3);

    let m = KafkaMetadataManager::open(config(&b, &topic, 1, dir.path())).await.unwrap();
    m.on_partition_leadership_changes(&[], std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(m.records_fetched(), 1, "read from the log start, not from the snapshot's position");
    assert_eq!(m.next_offset(0).await, Some(4));
    // What the deleted records held is lost: only the update at offset 3 is left, of a segment not known.
    assert!(m.list_remote_log_segments(&tp).await.unwrap().is_empty());
}

/// The names of the topics on the cluster that start with `prefix` (a test's own: tests run in parallel).
async fn topics_named(bootstrap: &str, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = raw_client(bootstrap)
        .await
        .list_topics()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// A reader's settings: Kafka's defaults (50 partitions, replication factor 3), as a user who does not
/// know the brokers' `remote.log.metadata.topic.num.partitions` passes them.
fn reader_config(bootstrap: &str, topic: &str, dir: &Path) -> KafkaMetadataConfig {
    let mut c = KafkaMetadataConfig::new(bootstrap, dir)
        .with_topic(topic)
        .with_failed_deletions_topic(format!("{topic}-failed"));
    c.request_timeout = Duration::from_secs(30);
    c.consume_wait = Duration::from_secs(60);
    c
}

/// Every file under `dir` with its bytes.
fn files_of(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_open_without_the_metadata_topic_fails_naming_it_and_creates_nothing() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("ro-missing");
    let t = tempfile::tempdir().unwrap();
    let snapshots = t.path().join("snapshots");
    let c = reader_config(&b, &topic, &snapshots);
    assert!(topics_named(&b, &topic).await.is_empty());
    let err = KafkaMetadataManager::open_read_only(c.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(err.message().contains(&topic), "{err}");
    assert!(err.message().contains(&b), "{err}");
    // A dry run's open: the missing topic reads as empty; still nothing is created, nothing is published.
    let empty = KafkaMetadataManager::open_read_only_or_empty(c.clone()).await.unwrap();
    assert!(empty.is_read_only());
    let tp = user_partition("orders", 0);
    empty.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await.unwrap();
    assert!(empty.list_remote_log_segments(&tp).await.unwrap().is_empty());
    assert_eq!(empty.highest_offset_for_epoch(&tp, 0).await.unwrap(), None);
    let err = empty.add_remote_log_segment_metadata(&segment(&tp, 0, 9, 0)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    empty.save_snapshots().await.unwrap();
    empty.close().await.unwrap();
    assert!(topics_named(&b, &topic).await.is_empty(), "a read-only open created a topic");
    assert!(!snapshots.exists(), "a read-only open created the snapshot directory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_open_takes_the_topics_partition_count_lists_and_refuses_writes() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("ro-read");
    let writer_dir = tempfile::tempdir().unwrap();
    let writer = KafkaMetadataManager::open(config(&b, &topic, 3, writer_dir.path())).await.unwrap();
    let (tp_a, tp_b) = (user_partition("orders", 0), user_partition("payments", 7));
    writer.on_partition_leadership_changes(&[tp_a.clone(), tp_b.clone()], &[]).await.unwrap();
    let (a0, a1, b0) = (segment(&tp_a, 0, 9, 0), segment(&tp_a, 10, 19, 1), segment(&tp_b, 0, 99, 0));
    for s in [&a0, &a1, &b0] {
        add_copied(&writer, s).await;
    }
    writer.close().await.unwrap();
    let topics = topics_named(&b, &topic).await;
    assert_eq!(topics, vec![topic.clone()], "the writer made the metadata topic only");
    let client = raw_client(&b).await;
    let ends = end_offsets(&client, &topic, 3).await;

    // With Kafka's default count (50), as a reader that does not know the brokers' setting: the topic's 3.
    let t = tempfile::tempdir().unwrap();
    let snapshots = t.path().join("snapshots");
    let c = reader_config(&b, &topic, &snapshots);
    assert_eq!(c.partitions, 50);
    let refused = KafkaMetadataManager::open(reader_config(&b, &topic, writer_dir.path())).await.unwrap_err();
    assert_eq!(refused.config_key(), Some(PARTITIONS.key), "a writer still refuses the other count: {refused}");
    let reader = KafkaMetadataManager::open_read_only(c.clone()).await.unwrap();
    assert!(reader.is_read_only());
    assert_eq!(reader.config().partitions, 3);
    assert_eq!(reader.metadata_partition_of(&tp_a), writer.metadata_partition_of(&tp_a));
    reader.on_partition_leadership_changes(&[], &[tp_a.clone(), tp_b.clone()]).await.unwrap();
    assert_eq!(reader.list_remote_log_segments(&tp_a).await.unwrap(), vec![copied(&a0), copied(&a1)]);
    assert_eq!(reader.list_remote_log_segments(&tp_b).await.unwrap(), vec![copied(&b0)]);
    assert_eq!(reader.highest_offset_for_epoch(&tp_a, 1).await.unwrap(), Some(19));
    // Publishing is refused before anything is produced.
    let new = segment(&tp_a, 20, 29, 1);
    let err = reader.add_remote_log_segment_metadata(&new).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("read only"), "{err}");
    let err = reader.update_remote_log_segment_metadata(&update(&a0, DeleteSegmentStarted)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let delete = RemotePartitionDeleteMetadata {
        topic_id_partition: tp_b.clone(),
        state: RemotePartitionDeleteState::DeletePartitionMarked,
        event_timestamp_ms: 5,
        broker_id: 1,
    };
    let err = reader.put_remote_partition_delete_metadata(&delete).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(end_offsets(&client, &topic, 3).await, ends, "a read-only manager produced records");
    // No snapshot is written: not on request, not at stop or close (every write path of a snapshot).
    reader.save_snapshots().await.unwrap();
    reader.on_stop_partitions(std::slice::from_ref(&tp_b)).await.unwrap();
    reader.close().await.unwrap();
    assert!(!snapshots.exists(), "a read-only open created the snapshot directory");

    // Over the writer's snapshots (one per metadata partition it read), with events after them that a
    // catch-up applies (a snapshot every event): the snapshots are read and left as they are.
    let before = files_of(writer_dir.path());
    assert!(!before.is_empty());
    let other_dir = tempfile::tempdir().unwrap();
    let other = KafkaMetadataManager::open(config(&b, &topic, 3, other_dir.path())).await.unwrap();
    other.on_partition_leadership_changes(std::slice::from_ref(&tp_a), &[]).await.unwrap();
    let a2 = segment(&tp_a, 20, 29, 1);
    add_copied(&other, &a2).await;
    other.close().await.unwrap();
    let mut c = reader_config(&b, &topic, writer_dir.path());
    c.snapshot_interval_events = 1;
    let reader = KafkaMetadataManager::open_read_only(c).await.unwrap();
    reader.on_partition_leadership_changes(&[], std::slice::from_ref(&tp_a)).await.unwrap();
    assert_eq!(reader.list_remote_log_segments(&tp_a).await.unwrap(), vec![copied(&a0), copied(&a1), copied(&a2)]);
    reader.save_snapshots().await.unwrap();
    reader.close().await.unwrap();
    assert_eq!(files_of(writer_dir.path()), before, "a read-only manager wrote a snapshot");
    assert_eq!(topics_named(&b, &topic).await, vec![topic.clone()], "a read-only open created a topic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_deletions_read_only_create_no_topic_and_refuse_writes() {
    let Some(b) = bootstrap() else { return };
    let topic = unique("ro-failed");
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b, &topic, 1, dir.path());
    let tp = user_partition("orders", 1);
    let s = copied(&segment(&tp, 0, 9, 0));
    // No topic: none listed, nothing created, writes refused.
    let f = KafkaFailedDeletions::open_read_only(&c).await.unwrap();
    assert!(f.is_read_only());
    assert!(f.list().await.unwrap().is_empty());
    let err = f.record(&s).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("read only"), "{err}");
    let err = f.drain(&s.remote_log_segment_id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(topics_named(&b, &topic).await.is_empty(), "a read-only open created a topic");
    // With the topic a writer made: listed as the writer left it, writes still refused.
    let writer = KafkaFailedDeletions::open(&c).await.unwrap();
    writer.record(&s).await.unwrap();
    let f = KafkaFailedDeletions::open_read_only(&c).await.unwrap();
    assert_eq!(f.list().await.unwrap(), vec![s.clone()]);
    let err = f.drain(&s.remote_log_segment_id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(writer.list().await.unwrap(), vec![s]);
}
