//! `rsm ls` and `rsm verify` over a store damaged or misread by hand (issue 39, item 7): a committed-looking
//! segment whose manifest is gone is a problem once past the safety age, not a leftover of an interrupted
//! upload; a store listed without the key prefix its segments were written under names that prefix instead
//! of calling healthy segments damaged.

use rsm_core::Uuid;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

mod common;
use common::{files, ok, rsm};

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A partition of a few segments copied with `rsm copy` (and `sets`, `key=value` each) into a new
/// `file://` store under `root`: the store's URL, its directory and the copied segments' ids.
fn copied(root: &Path, sets: &[&str]) -> (String, PathBuf, Vec<String>) {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 64 * 1024,
        records: 2_000,
        records_per_batch: 10,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 3,
        compression: None,
    };
    let dir = generate_partition(&root.join("orders-0"), &spec).unwrap();
    let store = root.join("store");
    let url = format!("file://{}", store.display());
    let mut args = vec!["copy", "--dir", dir.to_str().unwrap(), "--store", &url, "--create"];
    args.extend(sets.iter().flat_map(|s| ["--set", s]));
    let out = ok(&args);
    let ids: Vec<String> =
        out.lines().filter(|l| l.contains("..=")).map(|l| l.split('\t').next().unwrap().to_string()).collect();
    assert!(ids.len() >= 3, "{out}");
    (url, store, ids)
}

/// The store object of segment `id` with extension `ext`.
fn object(store: &Path, id: &str, ext: &str) -> PathBuf {
    files(store).into_iter().find(|p| p.to_str().unwrap().ends_with(&format!("-{id}.{ext}"))).unwrap()
}

/// A committed segment's manifest removed: while its objects are young an upload may still be writing it, so
/// `ls` and `verify` say so and succeed; once they are older than the safety age (one hour) both exit
/// non-zero saying its manifest is missing, and do not call it a leftover of an interrupted upload (they
/// did, exiting 0, while `audit` said LOST).
#[test]
fn ls_and_verify_fail_on_a_committed_looking_segment_without_its_manifest() {
    let root = tempfile::tempdir().unwrap();
    let (url, store, ids) = copied(root.path(), &[]);
    let id = &ids[1];
    std::fs::remove_file(object(&store, id, "manifest")).unwrap();

    let json: serde_json::Value = serde_json::from_str(&ok(&["ls", "--store", &url, "--json"])).unwrap();
    assert!(json["segments"].as_array().unwrap().iter().all(|s| s["status"] == "ok"), "{json}");
    assert_eq!(json["leftovers"]["no_manifest_yet"][0]["segment_id"], id.as_str(), "{json}");
    for cmd in ["ls", "verify"] {
        let out = rsm(&[cmd, "--store", &url]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{cmd}: a young upload may be in flight: {stdout}{stderr}");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("NO MANIFEST YET\t{id}\t")))
            .unwrap_or_else(|| panic!("{cmd}: {stdout}"));
        assert!(line.contains("an upload may still be writing it"), "{line}");
    }

    // Its objects last written two hours ago.
    let old = SystemTime::now() - Duration::from_secs(2 * 3600);
    let (log, indexes) = (object(&store, id, "log"), object(&store, id, "indexes"));
    for p in [&log, &indexes] {
        std::fs::File::options().write(true).open(p).unwrap().set_modified(old).unwrap();
    }
    let bytes = std::fs::metadata(&log).unwrap().len() + std::fs::metadata(&indexes).unwrap().len();
    for cmd in ["ls", "verify"] {
        let out = rsm(&[cmd, "--store", &url]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stdout}{stderr}");
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("NO MANIFEST\t{id}\t")))
            .unwrap_or_else(|| panic!("{cmd}: {stdout}"));
        assert!(line.contains(".manifest is missing") && line.contains("cannot be read"), "{line}");
        assert!(!stdout.contains("leftovers of interrupted uploads"), "{cmd}: {stdout}");
        assert!(stderr.contains("without a manifest"), "{cmd}: {stderr}");
        for other in ids.iter().filter(|i| *i != id) {
            assert!(stdout.contains(other.as_str()), "{cmd} still reports {other}: {stdout}");
        }
    }
    let out = rsm(&["ls", "--store", &url, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entry = json["segments"].as_array().unwrap().iter().find(|s| s["segment_id"] == id.as_str()).unwrap();
    assert_eq!((entry["status"].as_str(), entry["bytes"].as_u64()), (Some("no_manifest"), Some(bytes)), "{json}");
    assert_eq!(json["totals"]["problems"], 1, "{json}");
    assert_eq!(json["leftovers"]["uncommitted"], serde_json::json!([]), "not a leftover: {json}");
    assert_eq!(json["leftovers"]["no_manifest_yet"], serde_json::json!([]), "{json}");
}

/// Segments written under a key prefix and listed without it (or with another): `ls` and `verify` name the
/// prefix they were found under and the setting to give, exit non-zero, and call nothing damaged (they said
/// DAMAGED, "belongs to another segment"). With the prefix, both are clean.
#[test]
fn a_store_listed_without_its_key_prefix_names_the_prefix() {
    for prefix in ["tiered/", "kafka-"] {
        let root = tempfile::tempdir().unwrap();
        let setting = format!("key.prefix={prefix}");
        let (url, _, ids) = copied(root.path(), &[&setting]);
        for cmd in ["ls", "verify"] {
            let out = rsm(&[cmd, "--store", &url]);
            let (stdout, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(1), "{prefix} {cmd}: {stdout}{stderr}");
            assert!(!stdout.contains("DAMAGED") && !stdout.contains("belongs to another segment"), "{stdout}");
            for id in &ids {
                let line = stdout
                    .lines()
                    .find(|l| l.starts_with("OTHER PREFIX\t") && l.contains(id.as_str()))
                    .unwrap_or_else(|| panic!("{prefix} {cmd}: {id}: {stdout}"));
                assert!(line.contains(&format!("key prefix `{prefix}`")), "{line}");
            }
            assert!(stderr.contains(&format!("--set key.prefix={prefix}")), "{prefix} {cmd}: {stderr}");
        }
        let out = rsm(&["ls", "--store", &url, "--json", "--topic", "orders"]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let listed = json["segments"].as_array().unwrap();
        assert_eq!(listed.len(), ids.len(), "{json}");
        assert!(listed.iter().all(|s| s["status"] == "other_prefix" && s["key_prefix"] == prefix), "{json}");

        let ls = ok(&["ls", "--store", &url, "--set", &setting]);
        assert!(ls.contains(&format!("total: {} segments", ids.len())), "{ls}");
        let v = ok(&["verify", "--store", &url, "--set", &setting]);
        assert!(v.contains(&format!("verified {} segments", ids.len())), "{v}");
    }
}

/// A segment whose manifest does not read and that no metadata references (`rsm audit` calls it DAMAGED and
/// keeps it): `rsm delete --segment` names its objects and deletes them only with `--force`.
#[test]
fn a_damaged_unreferenced_segment_is_deleted_only_by_a_forced_delete_naming_it() {
    let t = tempfile::tempdir().unwrap();
    let (url, store, ids) = copied(t.path(), &[]);
    let manifest = object(&store, &ids[0], "manifest");
    let (log, indexes) = (object(&store, &ids[0], "log"), object(&store, &ids[0], "indexes"));
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&manifest, bytes).unwrap();
    let md = t.path().join("metadata").display().to_string();
    let args = ["delete", "--segment", &ids[0], "--store", &url, "--metadata-dir", &md];
    let (stdout, stderr) = text(&rsm(&args));
    assert!(stderr.contains("is damaged") && stderr.contains("--force"), "{stdout}{stderr}");
    assert!(manifest.exists() && log.exists() && indexes.exists(), "refused, yet deleted");
    let out = ok(&[&args[..], &["--force"]].concat());
    assert!(out.contains("deleted the objects of damaged segment"), "{out}");
    assert!(!manifest.exists() && !log.exists() && !indexes.exists(), "{out}");
    assert!(object(&store, &ids[1], "manifest").exists(), "another segment's objects went");
}
