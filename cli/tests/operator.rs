//! The `rsm` binary as an operator meets it: read commands that never create a store, a closed pipe, the
//! listing's columns, filters and JSON, fetch arguments, the messages that used to mislead, reruns that skip
//! whole segments, `verify --dir` both ways, and a store whose root is missing, full or read-only. Every
//! test runs the built binary against a real filesystem store.

use rsm_core::Uuid;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{files, ok, rsm};

/// Runs `rsm args`, which must fail with `message` on stderr; returns stdout.
fn fails<S: AsRef<str> + std::fmt::Debug>(args: &[S], message: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rsm")).args(args.iter().map(|a| a.as_ref())).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "rsm {args:?} should fail; stdout {}", String::from_utf8_lossy(&out.stdout));
    assert_ne!(out.status.code(), Some(101), "rsm {args:?} panicked: {err}");
    assert!(err.contains(message), "rsm {args:?}: stderr {err:?} lacks {message:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn partition_named(root: &Path, name: &str, records: u64, seed: u64) -> PathBuf {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 64 * 1024,
        records,
        records_per_batch: 10,
        value_bytes: 200,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed,
        compression: None,
    };
    generate_partition(&root.join(name), &spec).unwrap()
}

fn store_url(root: &Path) -> String {
    format!("file://{}", root.display())
}

/// The ids a `copy` printed for the segments it copied or skipped.
fn ids(copy_out: &str) -> Vec<String> {
    copy_out.lines().filter(|l| l.contains("..=")).map(|l| l.split('\t').next().unwrap().to_string()).collect()
}

#[test]
fn read_commands_never_create_a_store() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("tierd");
    let url = store_url(&missing);
    let named = format!("filesystem store root {}", missing.display());
    fails(&["ls", "--store", &url], &named);
    fails(&["verify", "--store", &url], &named);
    fails(&["fetch", "--store", &url, "--segment", "AAAAAAAAAAAAAAAAAAAAAQ"], &named);
    let dir = partition_named(tmp.path(), "orders-0", 600, 1);
    fails(&["copy", "--dir", dir.to_str().unwrap(), "--store", &url], &named);
    assert!(!missing.exists(), "no command created {}", missing.display());
    // Asked for, copy makes it.
    let out = ok(&["copy", "--dir", dir.to_str().unwrap(), "--store", &url, "--create"]);
    assert!(missing.is_dir() && !ids(&out).is_empty(), "{out}");
    fails(&["copy", "--dir", dir.to_str().unwrap(), "--store", "memory:", "--create"], "--create is for file://");
}

/// A reader that closes the pipe at once (`rsm ls | head -0`): rsm exits quietly with success, no panic.
#[test]
fn a_closed_pipe_ends_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let url = store_url(&store);
    let dir = partition_named(tmp.path(), "orders-0", 3_000, 2);
    ok(&["copy", "--dir", dir.to_str().unwrap(), "--store", &url, "--create"]);
    for args in [vec!["ls", "--store", &url], vec!["verify", "--store", &url], vec!["ls", "--store", &url, "--json"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rsm"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes away before rsm writes a line
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(err.is_empty(), "{args:?} says nothing: {err}");
    }
    // Through a real shell pipe as well.
    let sh = format!(
        "set -o pipefail 2>/dev/null; '{}' ls --store '{url}' | head -c 10 >/dev/null",
        env!("CARGO_BIN_EXE_rsm")
    );
    let out = Command::new("bash").args(["-c", &sh]).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "{:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
}

#[test]
fn ls_shows_ids_times_sizes_and_totals_and_filters() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let url = store_url(&store);
    let a = partition_named(tmp.path(), "orders-0", 1_500, 3);
    let b = partition_named(tmp.path(), "pay-ments-7", 1_000, 4);
    let a_ids = ids(&ok(&["copy", "--dir", a.to_str().unwrap(), "--store", &url, "--create"]));
    let b_ids = ids(&ok(&["copy", "--dir", b.to_str().unwrap(), "--store", &url]));
    assert!(a_ids.len() >= 2 && !b_ids.is_empty());
    let topic_id = |dir: &Path| {
        let text = std::fs::read_to_string(dir.join("partition.metadata")).unwrap();
        text.lines().find_map(|l| l.strip_prefix("topic_id:")).unwrap().trim().to_string()
    };
    let ls = ok(&["ls", "--store", &url]);
    let header = ls.lines().next().unwrap();
    assert!(header.contains("topic id") && header.contains("copied at") && header.contains("size"), "{ls}");
    assert!(ls.contains(&topic_id(&a)) && ls.contains(&topic_id(&b)), "{ls}");
    assert!(ls.contains(" KiB\t"), "human sizes: {ls}");
    let year = ls.lines().nth(1).unwrap().rsplit('\t').next().unwrap();
    assert!(year.starts_with("20") && year.ends_with('Z'), "copy time in UTC: {year}");
    let n = a_ids.len() + b_ids.len();
    assert!(ls.lines().last().unwrap().starts_with(&format!("total: {n} segments, ")), "{ls}");
    assert!(ls.lines().last().unwrap().contains("in 2 partitions"), "{ls}");

    let only_b = ok(&["ls", "--store", &url, "--topic", "pay-ments"]);
    assert!(b_ids.iter().all(|id| only_b.contains(id)) && !a_ids.iter().any(|id| only_b.contains(id)), "{only_b}");
    let only_a = ok(&["ls", "--store", &url, "--partition", "0"]);
    assert!(a_ids.iter().all(|id| only_a.contains(id)) && !b_ids.iter().any(|id| only_a.contains(id)), "{only_a}");
    let none = ok(&["ls", "--store", &url, "--topic", "orders", "--partition", "7"]);
    assert!(none.contains("total: 0 segments"), "{none}");

    let json: serde_json::Value = serde_json::from_str(&ok(&["ls", "--store", &url, "--json"])).unwrap();
    let segs = json["segments"].as_array().unwrap();
    assert_eq!(segs.len(), n);
    assert_eq!(json["totals"]["segments"], n);
    let sum: u64 = segs.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
    assert_eq!(json["totals"]["bytes"], sum);
    let b0 = segs.iter().find(|s| s["segment_id"] == b_ids[0].as_str()).unwrap();
    assert_eq!((b0["topic"].as_str(), b0["partition"].as_i64()), (Some("pay-ments"), Some(7)));
    assert_eq!(b0["topic_id"].as_str(), Some(topic_id(&b).as_str()));
    assert_eq!(b0["status"], "ok");
    assert!(b0["copied_at_ms"].as_i64().unwrap() > 1_700_000_000_000);
    let filtered: serde_json::Value =
        serde_json::from_str(&ok(&["ls", "--store", &url, "--json", "--topic", "orders"])).unwrap();
    assert_eq!(filtered["segments"].as_array().unwrap().len(), a_ids.len());
}

#[test]
fn fetch_arguments_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let url = store_url(&store);
    let dir = partition_named(tmp.path(), "orders-0", 1_500, 5);
    let id = ids(&ok(&["copy", "--dir", dir.to_str().unwrap(), "--store", &url, "--create"]))[0].clone();
    let seg = ["fetch", "--store", &url, "--segment", &id];
    let with = |extra: &[&str]| -> Vec<String> { seg.iter().chain(extra).map(|s| s.to_string()).collect() };
    fails(&with(&["--bytes", "0"]), "--bytes 0: must be at least 1");
    fails(&with(&["--bytes", "-5"]), "--bytes -5: must be at least 1");
    fails(&with(&["--index", "offset", "--offset", "3"]), "cannot be used with");
    fails(&with(&["--index", "offset", "--bytes", "3"]), "cannot be used with");
    // Negative numbers in the `--flag value` form reach rsm, which names what is wrong.
    fails(&with(&["--position", "-1"]), "start position -1 is outside segment");
    // An id beginning with `-` is an id, not a flag.
    fails(
        &["fetch", "--store", &url, "--segment", "-AAAAAAAAAAAAAAAAAAAAQ"],
        "not found: segment -AAAAAAAAAAAAAAAAAAAAQ",
    );

    // A failed fetch with -o leaves no file, and does not touch one that is there.
    let out = tmp.path().join("out.bin");
    let o = out.to_str().unwrap();
    fails(&with(&["--position", "999999999", "-o", o]), "is outside segment");
    assert!(!out.exists(), "a failed fetch left {}", out.display());
    std::fs::write(&out, b"earlier").unwrap();
    fails(&with(&["--position", "999999999", "-o", o]), "is outside segment");
    assert_eq!(std::fs::read(&out).unwrap(), b"earlier");
    assert_eq!(files(tmp.path()).iter().filter(|p| p.to_string_lossy().contains("rsm-part")).count(), 0);

    // The full id an error prints (`topicId:topic-partition:id`) is accepted back, and checked.
    let log = std::fs::read(dir.join("00000000000000000000.log")).unwrap();
    let text = std::fs::read_to_string(dir.join("partition.metadata")).unwrap();
    let topic_id = text.lines().find_map(|l| l.strip_prefix("topic_id:")).unwrap().trim().to_string();
    let full = format!("{topic_id}:orders-0:{id}");
    ok(&["fetch", "--store", &url, "--segment", &full, "--bytes", "100", "-o", o]);
    assert_eq!(std::fs::read(&out).unwrap(), log[..100]);
    // `--offset -1` and `--timestamp -1` reach rsm too. An offset below the segment is refused as one past its
    // end is, naming it; a timestamp is a search (the first batch at or after it), so -1 is the start.
    fails(
        &["fetch", "--store", &url, "--segment", &id, "--offset", "-1", "--bytes", "50", "-o", o],
        "`offset` -1 is outside segment",
    );
    ok(&["fetch", "--store", &url, "--segment", &id, "--timestamp", "-1", "--bytes", "50", "-o", o]);
    assert_eq!(std::fs::read(&out).unwrap(), log[..50]);
    fails(&["fetch", "--store", &url, "--segment", &format!("{topic_id}:orders-1:{id}")], "belongs to");
}

#[test]
fn messages_say_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let url = store_url(&store);
    // Only an active segment: nothing to copy, and rsm says why.
    let small = partition_named(tmp.path(), "quiet-0", 20, 6);
    let out = ok(&["copy", "--dir", small.to_str().unwrap(), "--store", &url]);
    assert!(out.contains("copied 0 segments") && out.contains("holds only its active segment"), "{out}");
    // An empty typed setting names its key.
    let dir = partition_named(tmp.path(), "orders-0", 1_500, 7);
    let d = dir.to_str().unwrap();
    fails(&["copy", "--dir", d, "--store", &url, "--set", "chunk.size="], "`chunk.size`: is empty");
    // Java properties: `key value`, `key:value`, comments and a continued line.
    let props = tmp.path().join("rsm.properties");
    std::fs::write(
        &props,
        "# tiering\n! also a comment\nchunk.size 65536\nfetch.concurrency:2\nfs.fsync = \\\n  false\n",
    )
    .unwrap();
    let out = ok(&["copy", "--dir", d, "--store", &url, "--config", props.to_str().unwrap()]);
    assert!(!ids(&out).is_empty(), "{out}");
    std::fs::write(&props, "chunk.size=\\u12\n").unwrap();
    fails(&["ls", "--store", &url, "--config", props.to_str().unwrap()], "rsm.properties");
    std::fs::write(&props, "chunk.size 12\n").unwrap();
    fails(&["ls", "--store", &url, "--config", props.to_str().unwrap()], "`chunk.size`: 12 is out of range");
    // verify counts chunks and reads apart.
    let v = ok(&["verify", "--store", &url]);
    assert!(v.lines().any(|l| l.starts_with("ok\t") && l.contains("chunks checked (") && l.contains(" reads)")), "{v}");

    // A negative size is out of range, not "not an integer".
    fails(&["ls", "--store", &url, "--set", "chunk.size=-1"], "`chunk.size`: -1 is out of range");
    // A --config file that is not text is named as such, not a storage error.
    let junk = tmp.path().join("junk.properties");
    std::fs::write(&junk, [0xff, 0xfe, 0x00, 0x81, 0x92]).unwrap();
    fails(&["ls", "--store", &url, "--config", junk.to_str().unwrap()], "junk.properties: not a properties file");
    // A broker id is 0 or more.
    fails(&["copy", "--dir", d, "--store", &url, "--broker-id=-1"], "--broker-id");
    // The file system's root is not a store.
    fails(&["ls", "--store", "file:///"], "the file system's root is not a store");
    // A rewrap to a key the settings do not hold is refused at once, even on a plain store.
    fails(&["rewrap", "--store", &url, "--key", "k9"], "encryption.keys");
    // One properties file serves the engine and the store commands: engine keys are not unknown to verify.
    std::fs::write(&props, "retention.ms=-1\nlocal.retention.ms=1000\nremote.log.manager.task.interval.ms=100\n")
        .unwrap();
    ok(&["verify", "--store", &url, "--config", props.to_str().unwrap()]);
    // A stray .log inside a segment's offsets is named as such.
    let stray_dir = partition_named(tmp.path(), "stray-0", 1_500, 8);
    let stray = stray_dir.join(format!("{:020}.log", 5));
    std::fs::write(&stray, b"").unwrap();
    fails(
        &["copy", "--dir", stray_dir.to_str().unwrap(), "--store", &url],
        &format!("is {} a stray or misnamed file?", stray.display()),
    );
    // An unknown scheme names the supported ones, memory as tests only.
    fails(&["ls", "--store", "ftp://x/y"], "memory (tests only)");
}

/// A damaged local segment fails `tier` for good, naming the file, and the summary keeps what was copied
/// before it; the command does not claim a rerun would mend it.
#[test]
fn a_damaged_local_segment_is_a_permanent_failure_named_by_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let url = store_url(&store);
    let dir = partition_named(tmp.path(), "hurt-0", 1_500, 9);
    let third = rsm_core::format::partition::LocalPartition::open(&dir).unwrap().closed_segments()[2].log.clone();
    let mut bytes = std::fs::read(&third).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&third, bytes).unwrap();
    let meta = tmp.path().join("meta");
    let out = fails(
        &[
            "tier",
            dir.to_str().unwrap(),
            "--store",
            &url,
            "--metadata-dir",
            meta.to_str().unwrap(),
            "--set",
            "retention.ms=-1",
        ],
        "a rerun does not mend",
    );
    assert!(out.contains("FAILED after copying 2 segments"), "{out}");
    assert!(out.contains(&third.display().to_string()), "the damaged file is named: {out}");
    assert!(out.contains("total: copied 2 segments"), "{out}");
}

/// A rerun copies only what is missing, and says which segments it skipped.
#[test]
fn a_rerun_skips_whole_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let url = store_url(&store);
    let dir = partition_named(tmp.path(), "orders-0", 2_000, 8);
    let d = dir.to_str().unwrap();
    let first = ok(&["copy", "--dir", d, "--store", &url, "--create"]);
    let copied = ids(&first);
    assert!(copied.len() >= 3, "{first}");
    let before = files(&store);
    let again = ok(&["copy", "--dir", d, "--store", &url]);
    assert_eq!(again.matches("already in the store, skipped").count(), copied.len(), "{again}");
    assert!(again.contains("copied 0 segments, 0.0 MiB in"), "{again}");
    assert!(again.contains(&format!("; {} already in the store;", copied.len())), "{again}");
    assert_eq!(files(&store), before, "a rerun wrote nothing");
    // One segment's log removed from the store: the rerun copies that one again, and says why.
    let log = before.iter().find(|p| p.to_string_lossy().ends_with(&format!("-{}.log", copied[1]))).unwrap();
    std::fs::remove_file(log).unwrap();
    let third = ok(&["copy", "--dir", d, "--store", &url]);
    assert!(
        third.contains(&format!("note: segment {} at offset", copied[1])) && third.contains("lacks .log"),
        "{third}"
    );
    assert!(third.contains("copied 1 segments"), "{third}");
}

/// `verify --dir` looks both ways: a closed local segment without a copy in the store fails verify.
#[test]
fn verify_dir_reports_a_segment_missing_from_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let url = store_url(&store);
    let dir = partition_named(tmp.path(), "orders-0", 2_000, 9);
    let d = dir.to_str().unwrap();
    let copied = ids(&ok(&["copy", "--dir", d, "--store", &url, "--create"]));
    let v = ok(&["verify", "--store", &url, "--dir", d]);
    assert!(v.contains(&format!("verified {} segments", copied.len())) && !v.contains("MISSING"), "{v}");
    let manifest =
        files(&store).into_iter().find(|p| p.to_string_lossy().ends_with(&format!("-{}.manifest", copied[1]))).unwrap();
    let base = manifest.file_name().unwrap().to_string_lossy()[..20].parse::<i64>().unwrap();
    std::fs::remove_file(&manifest).unwrap();
    let out = fails(&["verify", "--store", &url, "--dir", d], "1 closed local segments have no whole copy");
    assert!(out.contains(&format!("MISSING\torders-0 offset {base}\t")), "{out}");
    assert!(out.contains(&format!("{base:020}.log has no whole copy in the store")), "{out}");
    // Without --dir, the store alone is consistent.
    ok(&["verify", "--store", &url]);
}

/// The store's root deleted before a copy: the error names the root and nothing is created there.
#[test]
fn a_missing_root_is_named_and_never_recreated() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let url = store_url(&store);
    let dir = partition_named(tmp.path(), "orders-0", 2_000, 10);
    let d = dir.to_str().unwrap();
    ok(&["copy", "--dir", d, "--store", &url, "--create"]);
    std::fs::remove_dir_all(&store).unwrap();
    fails(&["copy", "--dir", d, "--store", &url], &format!("filesystem store root {}", store.display()));
    assert!(!store.exists(), "the root was recreated");
}

/// A mounted tmpfs, unmounted on drop; `None` where this process cannot mount (not root, no privilege).
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, options: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs", at.to_str().unwrap()])
            .stderr(Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Mount(at.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Committed segments as `rsm ls --json` reports them: (segment id, start offset, status).
fn listed(url: &str) -> Vec<(String, i64, String)> {
    let out = rsm(&["ls", "--store", url, "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["segment_id"].as_str().unwrap_or("").to_string(),
                s["start_offset"].as_i64().unwrap_or(-1),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A store that fills up during a copy, and a read-only one: clear errors, and only whole segments visible.
/// Needs a tiny tmpfs, so it runs where the test may mount one (as root); elsewhere it says so and passes.
#[test]
fn a_full_or_read_only_store_fails_clearly_and_shows_only_whole_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = partition_named(tmp.path(), "orders-0", 6_000, 11);
    let d = dir.to_str().unwrap();
    let full_root = tmp.path().join("full");
    let Some(_full) = Mount::tmpfs(&full_root, "size=512k") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root), so no full-disk or read-only store");
        return;
    };
    let url = store_url(&full_root);
    fails(
        &["copy", "--dir", d, "--store", &url, "--set", "fs.fsync=false"],
        &format!("filesystem store root {} is full", full_root.display()),
    );
    let whole = listed(&url);
    assert!(whole.iter().all(|(_, _, status)| status == "ok"), "only whole segments: {whole:?}");
    ok(&["verify", "--store", &url]);
    let fetched = tmp.path().join("fetched");
    for (id, start, _) in &whole {
        ok(&["fetch", "--store", &url, "--segment", id, "-o", fetched.to_str().unwrap()]);
        assert!(std::fs::read(&fetched).unwrap() == std::fs::read(dir.join(format!("{start:020}.log"))).unwrap());
    }
    let out = fails(&["verify", "--store", &url, "--dir", d], "have no whole copy in the store");
    assert!(out.contains("MISSING"), "the segments that did not fit are missing: {out}");

    let ro_root = tmp.path().join("ro");
    let _ro = Mount::tmpfs(&ro_root, "ro,size=1m").expect("a second tmpfs mounts where the first did");
    let url = store_url(&ro_root);
    fails(
        &["copy", "--dir", d, "--store", &url],
        &format!("filesystem store root {} is on a read-only filesystem", ro_root.display()),
    );
    assert!(files(&ro_root).is_empty());
    assert!(ok(&["ls", "--store", &url]).contains("total: 0 segments"));
}

/// A store given as a path (`/abs/path`, `./store`, `file:/abs`) is not an unknown URL scheme: the error
/// says which `file://` URL to use.
#[test]
fn a_path_for_a_store_is_told_the_file_url() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let dir = partition_named(tmp.path(), "orders-0", 600, 3);
    let d = dir.to_str().unwrap();
    let path = store.to_str().unwrap();
    let want = format!("`{path}` is a path, not a store URL: use `file://{path}`");
    fails(&["ls", "--store", path], &want);
    fails(&["copy", "--dir", d, "--store", path], &want);
    fails(&["tier", d, "--store", path, "--set", "retention.ms=-1"], &want);
    fails(&["ls", "--store", "./store"], "a filesystem store is `file://` and an absolute path");
    fails(&["ls", "--store", &format!("file:{path}")], &format!("use `file://{path}`"));
    assert!(files(&store).is_empty(), "nothing was copied");
}

/// A `--metadata-dir` that names a regular file is named as not a directory (not a storage error "File
/// exists"), by writers, dry runs and readers alike, and the file is left as it was.
#[test]
fn a_file_for_the_metadata_dir_is_named_as_not_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let url = store_url(&store);
    let dir = partition_named(tmp.path(), "orders-0", 600, 3);
    let d = dir.to_str().unwrap();
    let file = tmp.path().join("metadata-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let named = format!("metadata directory {} is not a directory", file.display());
    for cmd in [
        &["tier", d, "--set", "retention.ms=-1"][..],
        &["tier", d, "--dry-run"][..],
        &["expire", d, "--set", "retention.ms=-1"][..],
        &["offsets", d][..],
    ] {
        let args = [cmd, &["--store", &url, "--metadata-dir", file.to_str().unwrap()][..]].concat();
        fails(&args, &named);
        let out = rsm(&args);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("File exists"), "{cmd:?}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
    assert!(files(&store).is_empty(), "nothing was copied");
}
