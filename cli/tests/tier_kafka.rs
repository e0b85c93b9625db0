//! `rsm tier` with the remote log metadata on a real Kafka topic (the test server's one-node broker): a
//! partition copied once across runs, and the read commands creating nothing, not even the topic.

mod common;
use common::tiering::{copied_count, partition};
use common::{ok, rsm};
use rsm_core::model::Uuid;

#[test]
fn tier_with_the_metadata_on_a_kafka_topic_copies_once() {
    let Some(bootstrap) = rsm_core::testkit::test_server(
        "RSM_TEST_KAFKA_BOOTSTRAP",
        "RSM_SKIP_KAFKA",
        "eval \"$(tools/servers/kafka.sh start)\"",
    ) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("kafka-tiered-0");
    partition(&dir);
    std::fs::create_dir(t.path().join("store")).unwrap();
    let run = Uuid::random().to_string().replace(['-', '_'], "x");
    let store = format!("file://{}", t.path().join("store").display());
    let snapshots = t.path().join("snapshots").display().to_string();
    let args = |cmd: &str| -> Vec<String> {
        [
            cmd,
            dir.to_str().unwrap(),
            "--store",
            &store,
            "--metadata-dir",
            &snapshots,
            "--bootstrap-server",
            &bootstrap,
            "--set",
            "retention.ms=-1",
            "--set",
            "rlmm.config.remote.log.metadata.topic.replication.factor=1",
            "--set",
            "rlmm.config.remote.log.metadata.topic.num.partitions=3",
            "--set",
            &format!("rlmm.config.remote.log.metadata.topic.name=rsm-tier-{run}"),
            "--set",
            &format!("rlmm.config.remote.log.metadata.failed.deletions.topic.name=rsm-tier-failed-{run}"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let run_rsm = |cmd: &str| ok(&args(cmd).iter().map(String::as_str).collect::<Vec<_>>());
    let closed = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "log"))
        .count()
        - 1;
    let first = run_rsm("tier");
    assert_eq!(copied_count(first.lines().nth(1).unwrap()), closed, "{first}");
    // Another host (no snapshots of its own) reads the same topic and copies nothing again.
    std::fs::remove_dir_all(&snapshots).unwrap();
    let second = run_rsm("tier");
    assert_eq!(copied_count(second.lines().nth(1).unwrap()), 0, "{second}");
    let offsets = run_rsm("offsets");
    assert!(offsets.lines().nth(1).unwrap().split_whitespace().nth(4) == Some("0"), "Rx: {offsets}");
}

/// Whether the Kafka cluster at `bootstrap` has `topic` (its configs are described, or it is unknown).
fn topic_exists(bootstrap: &str, topic: &str) -> bool {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let servers = [bootstrap.to_string()];
    let timeout = std::time::Duration::from_secs(30);
    match rt.block_on(rsm_metadata::admin::topic_configs(&servers, "rsm-cli-test", topic, timeout)) {
        Ok(_) => true,
        // UNKNOWN_TOPIC_OR_PARTITION
        Err(e) if e.message().contains("Kafka error 3 ") => false,
        Err(e) => panic!("describing topic {topic}: {e}"),
    }
}

/// `rsm offsets`, `rsm read` and `rsm failed-deletions list` with `--bootstrap-server` only read: without the
/// metadata topic they fail naming it; with it (3 partitions, made by `rsm tier`) they read it with Kafka's
/// default settings (50 partitions, replication factor 3), taking the topic's count; no topic, snapshot
/// directory or snapshot is made either way. A dry run before the first run plans with no metadata.
#[test]
fn read_commands_with_the_metadata_on_a_kafka_topic_create_nothing() {
    let Some(bootstrap) = rsm_core::testkit::test_server(
        "RSM_TEST_KAFKA_BOOTSTRAP",
        "RSM_SKIP_KAFKA",
        "eval \"$(tools/servers/kafka.sh start)\"",
    ) else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("kafka-read-0");
    partition(&dir);
    std::fs::create_dir(t.path().join("store")).unwrap();
    let run = Uuid::random().to_string().replace(['-', '_'], "x");
    let (topic, failed) = (format!("rsm-read-{run}"), format!("rsm-read-failed-{run}"));
    let store = format!("file://{}", t.path().join("store").display());
    let snapshots = t.path().join("snapshots");
    let snapshots_arg = snapshots.display().to_string();
    let dir_arg = dir.display().to_string();
    // Kafka's defaults for everything but the topics' names.
    let common = |cmd: &[&str], failed: &str| -> Vec<String> {
        let mut a: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        for s in [
            "--store",
            &store,
            "--metadata-dir",
            &snapshots_arg,
            "--bootstrap-server",
            &bootstrap,
            "--set",
            &format!("rlmm.config.remote.log.metadata.topic.name={topic}"),
            "--set",
            &format!("rlmm.config.remote.log.metadata.failed.deletions.topic.name={failed}"),
        ] {
            a.push(s.to_string());
        }
        a
    };
    let strs = |a: &[String]| a.iter().map(String::to_string).collect::<Vec<_>>();
    let reads: [&[&str]; 3] = [
        &["offsets", &dir_arg],
        &["read", &dir_arg, "--offset", "0", "--max-records", "5", "--json"],
        &["failed-deletions", "list"],
    ];

    // No metadata topic: each read fails naming it, and creates nothing.
    for cmd in &reads[..2] {
        let a = strs(&common(cmd, &failed));
        let out = rsm(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd:?} succeeded without the metadata topic");
        assert!(stderr.contains(&topic) && stderr.contains(&bootstrap), "{cmd:?}: {stderr}");
    }
    // A dry run before the first run: the plan of an empty metadata log.
    let a = common(&["tier", &dir_arg, "--dry-run", "--set", "retention.ms=-1"], &failed);
    let plan = ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(plan.contains("copy"), "{plan}");
    assert!(!topic_exists(&bootstrap, &topic), "a read created the metadata topic");
    assert!(!topic_exists(&bootstrap, &failed), "a read created the failed-deletions topic");
    assert!(!snapshots.exists(), "a read created the snapshot directory");

    // A writer tiers through a 3-partition topic (replication factor 1: one broker).
    let mut a = common(&["tier", &dir_arg], &failed);
    for s in [
        "--set",
        "retention.ms=-1",
        "--set",
        "rlmm.config.remote.log.metadata.topic.replication.factor=1",
        "--set",
        "rlmm.config.remote.log.metadata.topic.num.partitions=3",
    ] {
        a.push(s.to_string());
    }
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(topic_exists(&bootstrap, &topic) && topic_exists(&bootstrap, &failed));
    std::fs::remove_dir_all(&snapshots).unwrap();

    // Readers with Kafka's default count (50) and another failed-deletions topic (none yet): they read.
    let other_failed = format!("{failed}-other");
    let out: Vec<String> = reads
        .iter()
        .map(|cmd| ok(&common(cmd, &other_failed).iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    let row: Vec<&str> = out[0].lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[4], "0", "Rx: {}", out[0]);
    let records: Vec<serde_json::Value> = out[1].lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 5, "{}", out[1]);
    assert_eq!(records[0]["value"], "value-0");
    assert_eq!(out[2].trim(), "0 failed deletions");
    assert!(!topic_exists(&bootstrap, &other_failed), "a read created the failed-deletions topic");
    assert!(!snapshots.exists(), "a read created the snapshot directory");
}
