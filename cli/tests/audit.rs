//! `rsm audit` against a real filesystem store and a local metadata log: a clean store reports nothing; a
//! removed object is reported as lost and objects no metadata knows as orphans, exactly those; orphans are
//! deleted only with `--yes` and only they are.

use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::{RemoteLogSegmentState, Uuid};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::{RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate};
use std::path::Path;
use std::process::Output;

mod common;
use common::rsm;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes to the metadata log in `meta_dir` that each of `segments` was copied: copy started, then finished.
fn record_copied(meta_dir: &Path, segments: &[rsm_core::RemoteLogSegmentMetadata]) {
    let manager = LocalMetadataManager::open(LocalMetadataConfig::new(meta_dir)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        for m in segments {
            let mut started = m.clone();
            started.state = RemoteLogSegmentState::CopySegmentStarted;
            manager.add_remote_log_segment_metadata(&started).await.unwrap();
            let done = RemoteLogSegmentMetadataUpdate::of(m, RemoteLogSegmentState::CopySegmentFinished, 1, 0);
            manager.update_remote_log_segment_metadata(&done).await.unwrap();
        }
        manager.close().await.unwrap();
    });
}

/// Copies a generated partition with `rsm copy` and writes what a broker's metadata would hold for it:
/// every segment copy started, then copy finished. Returns the store URL and the metadata log directory.
fn tiered(root: &Path) -> (String, String, Vec<rsm_core::RemoteLogSegmentMetadata>) {
    tiered_with(root, &[])
}

/// [`tiered`], the copy made with the settings `sets` (`key=value` each, passed as `--set`).
fn tiered_with(root: &Path, sets: &[String]) -> (String, String, Vec<rsm_core::RemoteLogSegmentMetadata>) {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 64 * 1024,
        records: 3_000,
        records_per_batch: 10,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 7,
        compression: None,
    };
    let dir = generate_partition(&root.join("orders-0"), &spec).unwrap();
    let store_dir = root.join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let url = format!("file://{}", store_dir.display());
    let mut copy = vec!["copy", "--dir", dir.to_str().unwrap(), "--store", &url];
    copy.extend(sets.iter().flat_map(|s| ["--set", s.as_str()]));
    let out = rsm(&copy);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let settings = sets.iter().map(|s| s.split_once('=').unwrap()).map(|(k, v)| (k.to_string(), v.to_string()));
    let store = rsm_facade::Store::open(&url, &settings.collect()).unwrap();
    let mut segments: Vec<_> = store.list_segments(None).unwrap().into_iter().map(|m| m.metadata).collect();
    segments.sort_by_key(|m| m.start_offset);
    assert!(segments.len() >= 3, "{} segments", segments.len());
    let meta_dir = root.join("metadata");
    record_copied(&meta_dir, &segments);
    (url, meta_dir.to_str().unwrap().to_string(), segments)
}

#[test]
fn audit_reports_exactly_what_was_lost_and_what_is_garbage() {
    let root = tempfile::tempdir().unwrap();
    let (url, meta, segments) = tiered(root.path());
    let audit = |extra: &[&str]| {
        let mut args = vec!["audit", "--metadata-dir", &meta, "--store", &url];
        args.extend_from_slice(extra);
        rsm(&args)
    };

    // Clean: nothing lost, no orphans.
    let out = audit(&[]);
    assert!(out.status.success(), "{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(text.contains("audited 1 partitions: 0 lost, 0 orphans, 0 stuck"), "{text}");
    assert!(
        text.contains(&format!(
            "orders-0\t{}\t{}\t0\t0\t0\t0",
            segments[0].remote_log_segment_id.topic_id_partition.topic_id,
            segments.len()
        )),
        "{text}"
    );

    // Lose one segment's log object; add objects no metadata knows, under the partition's directory.
    let store_dir = Path::new(url.strip_prefix("file://").unwrap());
    let lost = &segments[1];
    let part_dir = store_dir.join(format!("orders-{}/0", lost.remote_log_segment_id.topic_id_partition.topic_id));
    let lost_log = std::fs::read_dir(&part_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&format!("{}.log", lost.remote_log_segment_id.id)))
        .unwrap();
    std::fs::remove_file(&lost_log).unwrap();
    let stray = Uuid::random();
    let strays = [
        part_dir.join(format!("{:020}-{stray}.log", 99_999)),
        part_dir.join(format!("{:020}-{stray}.indexes", 99_999)),
    ];
    for s in &strays {
        std::fs::write(s, vec![7u8; 1234]).unwrap();
    }

    let out = audit(&["--json", "--min-age", "0s"]);
    assert_eq!(out.status.code(), Some(1), "data loss exits 1: {}", stdout(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["totals"]["lost"], 1, "{json}");
    assert_eq!(json["totals"]["orphans"], 2, "{json}");
    assert_eq!(json["totals"]["orphan_bytes"], 2468, "{json}");
    let p = &json["partitions"][0];
    assert_eq!(p["lost"][0]["segment_id"], lost.remote_log_segment_id.id.to_string(), "{json}");
    assert!(p["lost"][0]["problem"].as_str().unwrap().contains("missing .log"), "{json}");
    let mut orphan_keys: Vec<String> =
        p["orphans"].as_array().unwrap().iter().map(|o| o["key"].as_str().unwrap().to_string()).collect();
    orphan_keys.sort();
    assert!(orphan_keys.iter().all(|k| k.contains(&stray.to_string())), "{orphan_keys:?}");

    // Deleting needs --yes; without it nothing is deleted.
    let out = audit(&["--delete-orphans", "--min-age", "0s"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));
    assert!(strays.iter().all(|s| s.exists()));

    // With the default safety age (1 h) the new strays are kept.
    let out = audit(&["--delete-orphans", "--yes"]);
    assert!(stdout(&out).contains("0 deleted"), "{}", stdout(&out));
    assert!(strays.iter().all(|s| s.exists()));

    // With a zero safety age only the strays go; every other object stays.
    let before: usize = std::fs::read_dir(&part_dir).unwrap().count();
    let out = audit(&["--delete-orphans", "--yes", "--min-age", "0s"]);
    assert!(stdout(&out).contains("2 deleted"), "{}", stdout(&out));
    assert!(strays.iter().all(|s| !s.exists()));
    assert_eq!(std::fs::read_dir(&part_dir).unwrap().count(), before - 2);
    // The lost segment is still reported; the rest reads back whole.
    let out = audit(&["--min-age", "0s"]);
    assert!(stdout(&out).contains("1 lost, 0 orphans"), "{}", stdout(&out));
}

#[test]
fn damaged_data_is_lost_data_and_quick_skips_reading_it() {
    let root = tempfile::tempdir().unwrap();
    let (url, meta, segments) = tiered(root.path());
    let store_dir = Path::new(url.strip_prefix("file://").unwrap());
    let target = &segments[0];
    let part_dir = store_dir.join(format!("orders-{}/0", target.remote_log_segment_id.topic_id_partition.topic_id));
    let log = std::fs::read_dir(&part_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&format!("{}.log", target.remote_log_segment_id.id)))
        .unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    let out = rsm(&["audit", "--metadata-dir", &meta, "--store", &url]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(&format!("LOST\torders-0\t{}", target.remote_log_segment_id.id)), "{}", stdout(&out));
    let out = rsm(&["audit", "--metadata-dir", &meta, "--store", &url, "--quick"]);
    assert!(out.status.success(), "--quick reads no data: {}", stdout(&out));
}

/// A copy started and never finished is stuck once past the safety age, unless finished copies hold its
/// offsets: then a leader died while copying and the next one copied them again (Kafka keeps such a
/// copy-started record until retention passes it). That copy is reported abandoned, not stuck, and the
/// objects it left are orphans, deleted by `--delete-orphans --yes` with nothing else.
#[test]
fn a_copy_never_finished_is_stuck_unless_finished_copies_hold_its_offsets() {
    let root = tempfile::tempdir().unwrap();
    let (url, meta, segments) = tiered(root.path());
    let manager = LocalMetadataManager::open_existing(Path::new(&meta)).unwrap();
    let last = segments.iter().max_by_key(|m| m.end_offset).unwrap();
    let started = |from: &rsm_core::RemoteLogSegmentMetadata, start: i64, end: i64| {
        let mut m = from.clone();
        m.remote_log_segment_id.id = Uuid::random();
        m.state = RemoteLogSegmentState::CopySegmentStarted;
        m.event_timestamp_ms = 1_000;
        (m.start_offset, m.end_offset) = (start, end);
        m
    };
    // Offsets the finished copies hold (the first segment's), and offsets past them.
    let abandoned = started(&segments[0], segments[0].start_offset, segments[0].end_offset);
    let stuck = started(last, last.end_offset + 1, last.end_offset + 100);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        manager.add_remote_log_segment_metadata(&abandoned).await.unwrap();
        manager.add_remote_log_segment_metadata(&stuck).await.unwrap();
        manager.close().await.unwrap();
    });
    // The abandoned copy left two objects: its log cut short, and its index bundle.
    let store_dir = root.path().join("store");
    let files = rsm_core::testkit::files_under;
    let before = files(&store_dir);
    let first_id = segments[0].remote_log_segment_id.id.to_string();
    let abandoned_id = abandoned.remote_log_segment_id.id.to_string();
    let mut left = Vec::new();
    for ext in ["log", "indexes"] {
        let of_first = before.iter().find(|p| p.to_str().unwrap().ends_with(&format!("{first_id}.{ext}"))).unwrap();
        let to = std::path::PathBuf::from(of_first.to_str().unwrap().replace(&first_id, &abandoned_id));
        let bytes = std::fs::read(of_first).unwrap();
        std::fs::write(&to, &bytes[..bytes.len() / 2]).unwrap();
        left.push(to);
    }

    let out = rsm(&["audit", "--metadata-dir", &meta, "--store", &url]);
    let text = stdout(&out);
    assert!(out.status.success(), "neither a stuck nor an abandoned copy is data loss: {text}");
    let stuck_id = stuck.remote_log_segment_id.id;
    assert!(
        text.contains(&format!("STUCK\torders-0\t{stuck_id}\tCOPY_SEGMENT_STARTED since 1970-01-01T00:00:01Z")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "ABANDONED\torders-0\t{abandoned_id}\toffset {}\tcopy started 1970-01-01T00:00:01Z, never finished",
            segments[0].start_offset
        )),
        "{text}"
    );
    assert!(!text.contains(&format!("STUCK\torders-0\t{abandoned_id}")), "{text}");
    // Its objects are orphans, younger than the default safety age (1 h): kept.
    assert_eq!(text.matches("(younger than the safety age: kept)").count(), 2, "{text}");
    assert!(text.contains("0 lost, 2 orphans, 1 stuck, 1 abandoned copies, 0 deleted"), "{text}");

    let out = rsm(&["audit", "--metadata-dir", &meta, "--store", &url, "--min-age", "0s", "--delete-orphans", "--yes"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("2 deleted"), "{text}");
    assert!(left.iter().all(|p| !p.exists()), "the abandoned copy's objects are gone");
    assert_eq!(files(&store_dir), before, "nothing else was deleted");
}

/// An empty (or wrong) metadata log makes every object look unreferenced: the audit reports the whole
/// segments apart (`UNREFERENCED`, kept) and the objects not named like a segment's (`LEFT ALONE`), and
/// `--delete-orphans --yes` deletes nothing of a whole segment, refusing when the metadata knows none of the
/// partitions it would delete from.
#[test]
fn an_audit_over_an_empty_metadata_log_cannot_wipe_the_store() {
    let root = tempfile::tempdir().unwrap();
    let (url, _, segments) = tiered(root.path());
    let empty = root.path().join("empty-metadata");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(LocalMetadataManager::open(LocalMetadataConfig::new(&empty)).unwrap().close()).unwrap();
    let store_dir = Path::new(url.strip_prefix("file://").unwrap());
    std::fs::write(store_dir.join("README.txt"), b"not a segment").unwrap();
    // One segment's manifest lost: its two objects are garbage (no manifest), not a whole segment.
    let tid = segments[0].remote_log_segment_id.topic_id_partition.topic_id;
    let part_dir = store_dir.join(format!("orders-{tid}/0"));
    let gone = &segments[0].remote_log_segment_id.id;
    let manifest = std::fs::read_dir(&part_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&format!("{gone}.manifest")))
        .unwrap();
    std::fs::remove_file(&manifest).unwrap();
    let before = common::files(store_dir);

    let empty = empty.to_str().unwrap();
    let out = rsm(&["audit", "--metadata-dir", empty, "--store", &url, "--json", "--min-age", "0s"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["totals"]["unreferenced"], segments.len() - 1, "{json}");
    assert_eq!(json["totals"]["orphans"], 2, "the two objects of the segment without its manifest: {json}");
    assert_eq!(json["totals"]["left_alone"], 1, "{json}");
    assert_eq!(json["left_alone"][0]["key"], "README.txt", "{json}");

    let out = rsm(&["audit", "--metadata-dir", empty, "--store", &url, "--delete-orphans", "--yes", "--min-age", "0s"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused") && err.contains("nothing was deleted"), "{err}");
    assert_eq!(common::files(store_dir), before, "the store changed");
}

/// A metadata log older than the store (it knows the first two segments) and one byte of a later segment's
/// manifest flipped: that segment was committed (an upload cut short never writes its manifest), so the
/// orphan sweep keeps all its objects, whatever the safety age (issue 39, item 4: they were deleted as
/// orphans). The audit reports it apart, with its bytes, in text and JSON, and exits 1; `rsm sweep` keeps it
/// too.
#[test]
fn an_orphan_sweep_keeps_a_committed_segment_whose_manifest_is_damaged() {
    let root = tempfile::tempdir().unwrap();
    let (url, _, segments) = tiered(root.path());
    let stale = root.path().join("stale-metadata");
    record_copied(&stale, &segments[..2]);
    let stale = stale.to_str().unwrap();
    let store_dir = Path::new(url.strip_prefix("file://").unwrap());
    let damaged = &segments[2];
    let id = damaged.remote_log_segment_id.id.to_string();
    let object = |ext: &str| {
        common::files(store_dir).into_iter().find(|p| p.to_str().unwrap().ends_with(&format!("{id}.{ext}"))).unwrap()
    };
    let manifest = object("manifest");
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(&manifest, bytes).unwrap();
    let size: u64 = ["log", "indexes", "manifest"].iter().map(|e| std::fs::metadata(object(e)).unwrap().len()).sum();
    let before = common::files(store_dir);

    let out = rsm(&["audit", "--metadata-dir", stale, "--store", &url, "--delete-orphans", "--yes", "--min-age", "0s"]);
    let text = stdout(&out);
    assert_eq!(common::files(store_dir), before, "the sweep deleted objects of a committed segment: {text}");
    assert_eq!(out.status.code(), Some(1), "a damaged segment is damage: {text}");
    let line = text.lines().find(|l| l.starts_with("DAMAGED\t")).unwrap_or_else(|| panic!("no DAMAGED line: {text}"));
    assert!(
        line.starts_with(&format!("DAMAGED\torders-0\t{id}\toffset {}\t{size} bytes\t", damaged.start_offset)),
        "{line}"
    );
    assert!(line.contains("kept"), "{line}");
    assert!(!text.contains("ORPHAN\torders-0\t"), "{text}");
    assert!(text.contains("0 deleted"), "{text}");

    let out = rsm(&["audit", "--metadata-dir", stale, "--store", &url, "--json", "--min-age", "0s"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["totals"]["damaged"], 1, "{json}");
    assert_eq!(json["totals"]["orphans"], 0, "{json}");
    assert_eq!(json["totals"]["unreferenced"], segments.len() - 3, "{json}");
    let d = &json["partitions"][0]["damaged"][0];
    assert_eq!((d["segment_id"].as_str(), d["bytes"].as_u64()), (Some(id.as_str()), Some(size)), "{json}");
    assert_eq!(d["start_offset"], damaged.start_offset, "{json}");

    // `rsm sweep`, which has no metadata at all, keeps it too.
    common::ok(&["sweep", "--store", &url, "--min-age", "0s", "--yes"]);
    assert_eq!(common::files(store_dir), before, "the sweep deleted objects of a committed segment");
}

/// A key file of 64 hexadecimal characters, from `seed`.
fn key_file(root: &Path, name: &str, seed: u8) -> String {
    let path = root.join(name);
    let hex: String = (0..32u8).map(|i| format!("{:02x}", i.wrapping_mul(7).wrapping_add(seed))).collect();
    std::fs::write(&path, hex).unwrap();
    path.to_str().unwrap().to_string()
}

/// The right key id with another key's file: no segment's data key unwraps. That is a key problem, not data
/// loss (issue 39, item 5: every segment was LOST, exit 1): each segment is UNVERIFIED naming the key id,
/// the key is said to be probably wrong, and the audit exits 3. The right file audits clean.
#[test]
fn a_wrong_key_file_leaves_segments_unverified_not_lost() {
    let root = tempfile::tempdir().unwrap();
    let right = key_file(root.path(), "k1.key", 1);
    let wrong = key_file(root.path(), "other.key", 2);
    let sets = |file: &str| {
        ["encryption.enabled=true", "encryption.keys=k1", "encryption.key.id=k1"]
            .map(String::from)
            .into_iter()
            .chain([format!("encryption.key.k1.file={file}")])
            .collect::<Vec<_>>()
    };
    let (url, meta, segments) = tiered_with(root.path(), &sets(&right));
    let audit = |file: &str, extra: &[&str]| {
        let mut args = vec!["audit", "--metadata-dir", &meta, "--store", &url];
        let sets = sets(file);
        args.extend(sets.iter().flat_map(|s| ["--set", s.as_str()]));
        args.extend_from_slice(extra);
        rsm(&args)
    };
    let out = audit(&right, &[]);
    assert!(out.status.success(), "{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));

    let out = audit(&wrong, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.lines().any(|l| l.starts_with("LOST\t")), "{text}");
    assert!(text.contains("audited 1 partitions: 0 lost,"), "{text}");
    for m in &segments {
        let id = m.remote_log_segment_id.id;
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("UNVERIFIED\torders-0\t{id}\t")))
            .unwrap_or_else(|| panic!("{id} is not UNVERIFIED: {text}"));
        assert!(line.contains("`k1`"), "{line}");
    }
    let key = text.lines().find(|l| l.starts_with("KEY\tk1\t")).unwrap_or_else(|| panic!("no KEY line: {text}"));
    assert!(key.contains("probably") && key.contains(&format!("none of the {} segments", segments.len())), "{key}");
    let secret = std::fs::read_to_string(&wrong).unwrap();
    assert!(!text.contains(&secret) && !String::from_utf8_lossy(&out.stderr).contains(&secret), "a key printed");

    // `rsm verify` says the same: unverified (a setting this run lacks), nothing FAILED.
    let mut verify = vec!["verify", "--store", url.as_str()];
    let wrong_sets = sets(&wrong);
    verify.extend(wrong_sets.iter().flat_map(|s| ["--set", s.as_str()]));
    let out = rsm(&verify);
    let text = stdout(&out);
    assert!(!out.status.success(), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("UNVERIFIED\t") && l.contains("`k1`")).count(), segments.len());
    assert!(!text.contains("FAILED"), "{text}");

    let out = audit(&wrong, &["--json"]);
    assert_eq!(out.status.code(), Some(3));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (json["totals"]["lost"].as_u64(), json["totals"]["unverified"].as_u64()),
        (Some(0), Some(segments.len() as u64)),
        "{json}"
    );
    assert_eq!(json["partitions"][0]["unverified"][0]["key_id"], "k1", "{json}");
    let k = &json["keys"][0];
    assert_eq!((k["key_id"].as_str(), k["opened"].as_u64()), (Some("k1"), Some(0)), "{json}");
    assert_eq!(
        (k["refused"].as_u64(), k["probably_wrong"].as_bool()),
        (Some(segments.len() as u64), Some(true)),
        "{json}"
    );
}

/// The S3 store of the moto server the test command started (`RSM_TEST_S3_*`, from `tools/servers/moto.sh
/// start`; a missing one fails the test unless skipped locally with `RSM_SKIP_S3=1`), under a prefix of its
/// own: its URL and settings.
fn s3_store(name: &str) -> Option<(String, std::collections::BTreeMap<String, String>)> {
    let how = "eval \"$(tools/servers/moto.sh start)\"";
    let vars = ["ENDPOINT", "BUCKET", "REGION", "ACCESS_KEY", "SECRET_KEY"].map(|v| format!("RSM_TEST_S3_{v}"));
    let v = rsm_core::testkit::test_server_vars(&vars.each_ref().map(String::as_str), "RSM_SKIP_S3", how)?;
    let settings = [
        ("s3.endpoint.url", v["RSM_TEST_S3_ENDPOINT"].clone()),
        ("s3.region", v["RSM_TEST_S3_REGION"].clone()),
        ("aws.access.key.id", v["RSM_TEST_S3_ACCESS_KEY"].clone()),
        ("aws.secret.access.key", v["RSM_TEST_S3_SECRET_KEY"].clone()),
        // 5 MiB parts, so a segment of a few MiB goes multipart.
        ("s3.multipart.upload.part.size", "5242880".to_string()),
    ];
    let url = format!("s3://{}/{name}-{}/", v["RSM_TEST_S3_BUCKET"], Uuid::random());
    Some((url, settings.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

/// `--set k=v` for each setting.
fn set_flags(settings: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    settings.iter().flat_map(|(k, v)| ["--set".to_string(), format!("{k}={v}")]).collect()
}

/// `rsm copy` of `dir` killed with SIGKILL once its log's multipart upload has a part in the store (the
/// copy paced by the upload rate limit, so it is still uploading): the crash leaves that upload incomplete.
/// Returns it.
fn copy_killed_mid_upload(
    dir: &Path,
    url: &str,
    settings: &std::collections::BTreeMap<String, String>,
    store: &rsm_facade::Store,
) -> rsm_core::backend::IncompleteUpload {
    let before: Vec<String> = store.list_incomplete_uploads().unwrap().into_iter().map(|u| u.upload_id).collect();
    let mut args = vec!["copy".to_string(), "--dir".into(), dir.to_str().unwrap().into(), "--store".into(), url.into()];
    args.extend(set_flags(settings));
    args.extend(["--set".to_string(), "upload.rate.limit.bytes.per.second=2097152".to_string()]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rsm"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let upload = loop {
        let found = store.list_incomplete_uploads().unwrap().into_iter().find(|u| !before.contains(&u.upload_id));
        if let Some(u) = found.filter(|u| u.parts >= 1) {
            break u;
        }
        assert!(child.try_wait().unwrap().is_none(), "the copy ended before it was killed");
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "no part uploaded");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    upload
}

/// Incomplete multipart uploads on S3 (moto): `rsm copy` killed mid-upload leaves its log's upload in the
/// bucket, invisible to listings. `rsm audit` reports each with its key, bytes and age; with
/// `--delete-orphans --yes` it aborts those past the safety age (gone from ListMultipartUploads) and keeps the
/// younger one, and the segments copied before read back byte for byte; `rsm sweep` lists the rest and
/// aborts it with `--yes`.
#[test]
fn incomplete_multipart_uploads_are_reported_and_aborted_on_s3() {
    let Some((url, settings)) = s3_store("audit-uploads") else { return };
    let root = tempfile::tempdir().unwrap();
    let spec = |segment_bytes: usize, records: u64, value_bytes: usize| PartitionSpec {
        topic_id: Uuid::for_topic_name("orders"),
        segment_bytes,
        records,
        records_per_batch: 10,
        value_bytes,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 7,
        compression: None,
    };
    // Segments copied whole, and what the metadata says of them.
    let small = generate_partition(&root.path().join("a/orders-0"), &spec(64 * 1024, 3_000, 100)).unwrap();
    let mut copy = vec!["copy", "--dir", small.to_str().unwrap(), "--store", &url];
    let flags = set_flags(&settings);
    copy.extend(flags.iter().map(String::as_str));
    let out = rsm(&copy);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let store = rsm_facade::Store::open(&url, &settings).unwrap();
    let segments: Vec<_> = store.list_segments(None).unwrap().into_iter().map(|m| m.metadata).collect();
    assert!(segments.len() >= 3, "{} segments", segments.len());
    let meta_dir = root.path().join("metadata");
    record_copied(&meta_dir, &segments);
    let meta = meta_dir.to_str().unwrap();

    // The same partition, a segment of about 12 MiB: two copies of it killed mid-upload, 12 s apart.
    let big = generate_partition(&root.path().join("b/orders-0"), &spec(12 << 20, 16_000, 1000)).unwrap();
    let old = copy_killed_mid_upload(&big, &url, &settings, &store);
    std::thread::sleep(std::time::Duration::from_secs(12));
    let young = copy_killed_mid_upload(&big, &url, &settings, &store);
    let listed = store.list_incomplete_uploads().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    for u in [&old, &young] {
        assert!(u.key.ends_with(".log") && u.bytes.is_some_and(|b| b >= 5 << 20), "{u:?}");
        assert!(!store.list_objects().unwrap().0.iter().any(|o| o.key == u.key), "an upload is not an object");
    }

    let audit = |extra: &[&str]| {
        let mut args = vec!["audit", "--metadata-dir", meta, "--store", &url];
        args.extend(flags.iter().map(String::as_str));
        args.extend_from_slice(extra);
        rsm(&args)
    };
    // Past an 8 s safety age: the older upload is aborted, the younger one reported and kept.
    let out = audit(&["--delete-orphans", "--yes", "--min-age", "8s"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let line = |u: &rsm_core::backend::IncompleteUpload| {
        text.lines().find(|l| l.starts_with("UPLOAD\torders-0\t") && l.contains(&u.key)).map(str::to_string)
    };
    let old_line = line(&old).unwrap_or_else(|| panic!("no UPLOAD line for {}: {text}", old.key));
    assert!(old_line.contains(&format!("\t{} bytes\t", old.bytes.unwrap())), "{old_line}");
    assert!(!old_line.contains("younger than the safety age"), "{old_line}");
    let young_line = line(&young).unwrap_or_else(|| panic!("no UPLOAD line for {}: {text}", young.key));
    assert!(young_line.ends_with("(younger than the safety age: kept)"), "{young_line}");
    assert!(text.contains(&format!("ABORTED\t{}\tupload {}", old.key, old.upload_id)), "{text}");
    assert!(text.contains("0 lost,") && text.contains("2 incomplete uploads") && text.contains("1 aborted"), "{text}");
    let left: Vec<String> = store.list_incomplete_uploads().unwrap().into_iter().map(|u| u.upload_id).collect();
    assert_eq!(left, std::slice::from_ref(&young.upload_id), "only the older upload was aborted");

    // The segments copied before are untouched: every one reads back byte for byte.
    let local = rsm_core::format::partition::LocalPartition::open(&small).unwrap();
    for m in &segments {
        let seg = local.closed_segments().iter().find(|s| s.base_offset == m.start_offset).unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut store.fetch(m, 0, None).unwrap(), &mut got).unwrap();
        assert!(got == std::fs::read(&seg.log).unwrap(), "segment at {} differs", m.start_offset);
    }

    // As JSON, with the default safety age: the younger upload, its bytes and age, nothing aborted.
    let out = audit(&["--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["totals"]["incomplete_uploads"], 1, "{json}");
    let u = &json["incomplete_uploads"][0];
    assert_eq!(
        (u["key"].as_str(), u["upload_id"].as_str()),
        (Some(young.key.as_str()), Some(young.upload_id.as_str()))
    );
    assert_eq!(u["bytes"], young.bytes.unwrap(), "{json}");
    assert_eq!((u["partition"].as_str(), u["older_than_min_age"].as_bool()), (Some("orders-0"), Some(false)), "{json}");
    assert!(u["age_s"].as_u64().is_some_and(|a| a < 3600), "{json}");
    assert_eq!(json["aborted_uploads"], serde_json::json!([]), "{json}");

    // `rsm sweep`: without --yes it says what it would abort; with it, aborts it.
    let mut sweep = vec!["sweep", "--store", &url, "--min-age", "0s"];
    sweep.extend(flags.iter().map(String::as_str));
    let plan = common::ok(&sweep);
    assert!(plan.contains(&format!("WOULD ABORT\t{}\t", young.key)), "{plan}");
    assert_eq!(store.list_incomplete_uploads().unwrap().len(), 1, "nothing aborted without --yes");
    sweep.push("--yes");
    let done = common::ok(&sweep);
    assert!(done.contains(&format!("ABORT\t{}\t", young.key)), "{done}");
    assert!(store.list_incomplete_uploads().unwrap().is_empty());
    let reopened = rsm_facade::Store::open(&url, &settings).unwrap();
    assert_eq!(reopened.list_segments(None).unwrap().len(), segments.len(), "the sweep left every whole segment");
}

/// A copy that gave up whose manifest landed late (issue 40, item 6): Kafka cleaned the segment up (its
/// metadata says delete finished) but its objects are whole in the store. `rsm sweep` alone never touches a
/// committed segment; with the metadata log at hand it lists it (`KEPT`, named, with the command that
/// deletes it), keeps it under `--yes`, and `rsm delete --segment ID --force` then deletes it.
#[test]
fn sweep_lists_a_whole_segment_the_metadata_says_was_deleted() {
    let root = tempfile::tempdir().unwrap();
    let (url, _, segments) = tiered(root.path());
    let meta = root.path().join("late-metadata");
    record_copied(&meta, &segments[1..]);
    let late = &segments[0];
    let manager = LocalMetadataManager::open(LocalMetadataConfig::new(&meta)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let mut started = late.clone();
        started.state = RemoteLogSegmentState::CopySegmentStarted;
        manager.add_remote_log_segment_metadata(&started).await.unwrap();
        for state in [RemoteLogSegmentState::DeleteSegmentStarted, RemoteLogSegmentState::DeleteSegmentFinished] {
            let update = RemoteLogSegmentMetadataUpdate::of(late, state, 1, 0);
            manager.update_remote_log_segment_metadata(&update).await.unwrap();
        }
        manager.close().await.unwrap();
    });
    let meta = meta.to_str().unwrap();
    let id = late.remote_log_segment_id.id.to_string();
    let store_dir = Path::new(url.strip_prefix("file://").unwrap());
    let of_late = || common::files(store_dir).into_iter().filter(|p| p.to_string_lossy().contains(&id)).count();
    assert_eq!(of_late(), 3);

    let out = rsm(&["sweep", "--store", &url, "--min-age", "0s", "--yes", "--metadata-dir", meta]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let kept: Vec<&str> = text.lines().filter(|l| l.starts_with("KEPT\t")).collect();
    assert_eq!(kept.len(), 1, "{text}");
    assert!(kept[0].contains(&id) && kept[0].contains(&format!("rsm delete --segment {id} --force")), "{text}");
    assert_eq!(of_late(), 3, "kept under --yes: {text}");

    // Without the metadata log, the sweep says nothing of it.
    let out = rsm(&["sweep", "--store", &url, "--min-age", "0s"]);
    assert!(!stdout(&out).contains(&id), "{}", stdout(&out));

    // Over a mistyped metadata directory (empty: every segment looks unreferenced), even --force deletes
    // nothing.
    let typo = root.path().join("metadta");
    let out = rsm(&["delete", "--segment", &id, "--force", "--store", &url, "--metadata-dir", typo.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("a mistyped --metadata-dir?"), "{out:?}");
    assert_eq!(of_late(), 3);

    // The command it names deletes it.
    let out = rsm(&["delete", "--segment", &id, "--force", "--store", &url, "--metadata-dir", meta]);
    assert!(out.status.success(), "{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert_eq!(of_late(), 0, "{}", stdout(&out));
    for s in &segments[1..] {
        let other = s.remote_log_segment_id.id.to_string();
        assert_eq!(common::files(store_dir).iter().filter(|p| p.to_string_lossy().contains(&other)).count(), 3);
    }
}
