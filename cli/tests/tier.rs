//! The engine's commands on real partition directories and a filesystem store: `rsm tier` once and again
//! (nothing copied twice, a directory without `partition.metadata` included), `rsm offsets`, `rsm read` by
//! offset and timestamp (the records written, from remote once the local segments are gone), `rsm expire`,
//! `rsm delete`, `rsm failed-deletions`.

mod common;
use common::tiering::{Setup, T0, copied_count, partition};
use common::{ok, rsm};
use rsm_core::model::Uuid;
use std::path::Path;

#[test]
fn tier_twice_copies_once_and_reads_from_remote() {
    let s = Setup::new();
    let closed = s.closed();
    assert!(closed >= 3, "{closed} closed segments");
    // Local retention of 1 ms: each copied segment also goes locally in the same run.
    let first = s.run(&["tier", &s.dir, "--set", "local.retention.ms=1", "--set", "retention.ms=-1"]);
    assert_eq!(copied_count(first.lines().nth(1).unwrap()), closed, "{first}");
    assert_eq!(s.closed(), 0, "the copied segments are gone locally: {first}");
    let second = s.run(&["tier", &s.dir, "--set", "local.retention.ms=1", "--set", "retention.ms=-1"]);
    assert_eq!(copied_count(second.lines().nth(1).unwrap()), 0, "{second}");

    let offsets = s.run(&["offsets", &s.dir]);
    let row: Vec<&str> = offsets.lines().nth(1).unwrap().split_whitespace().collect();
    let active: i64 = row[1].parse().unwrap();
    assert_eq!(row[3], "600", "Lz: {offsets}");
    assert_eq!((row[4], row[5].parse::<i64>().unwrap()), ("0", active - 1), "Rx, Ry: {offsets}");

    // Offsets 5..=24 from remote, with keys, values, headers and timestamps as written.
    let json = s.run(&["read", &s.dir, "--offset", "5", "--max-records", "20", "--json"]);
    let records: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 20, "{json}");
    for (i, r) in records.iter().enumerate() {
        let o = 5 + i as i64;
        assert_eq!(r["offset"], o);
        assert_eq!(r["key"], format!("k{o}"));
        assert_eq!(r["value"], format!("value-{o}"));
        assert_eq!(r["timestamp"], T0 + o);
        assert_eq!(r["headers"][0]["value"], o.to_string());
    }
    // From a timestamp: the first record at or after it, across segment ends.
    let table = s.run(&["read", &s.dir, "--timestamp", &(T0 + 37).to_string(), "--max-records", "3"]);
    let offsets: Vec<&str> = table.lines().skip(1).take(3).map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(offsets, ["37", "38", "39"], "{table}");
    // Past the remote log: an error naming the offset.
    let out =
        rsm(&[&["read", &s.dir, "--offset", "100000"][..], &s.args.iter().map(String::as_str).collect::<Vec<_>>()]
            .concat());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("offset 100000"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_directory_without_partition_metadata_is_copied_once() {
    let s = Setup::new();
    std::fs::remove_file(Path::new(&s.dir).join("partition.metadata")).unwrap();
    let closed = s.closed();
    let first = s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    assert_eq!(copied_count(first.lines().nth(1).unwrap()), closed, "{first}");
    let second = s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    assert_eq!(copied_count(second.lines().nth(1).unwrap()), 0, "copied again: {second}");
}

#[test]
fn expire_and_delete_remove_remote_segments() {
    let s = Setup::new();
    let closed = s.closed();
    s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    let ls = ok(&["ls", "--store", &s.args[1]]);
    let first_id = ls.lines().nth(1).unwrap().split('\t').nth(2).unwrap().to_string();
    let deleted = s.run(&["delete", "--segment", &first_id, "--dir", &s.dir]);
    assert!(deleted.starts_with(&format!("deleted segment {first_id}")), "{deleted}");
    // The records are years old: retention of a day expires every remote segment left, and the local ones.
    let expired = s.run(&["expire", &s.dir, "--set", "retention.ms=86400000"]);
    assert!(expired.contains(&format!("expired {} remote", closed - 1)), "{expired}");
    assert!(expired.contains(&format!("deleted {closed} local")), "{expired}");
    assert_eq!(s.run(&["failed-deletions", "list"]).trim(), "0 failed deletions");
    let ls = ok(&["ls", "--store", &s.args[1]]);
    assert!(ls.contains("total: 0 segments"), "{ls}");
}

#[test]
fn watch_follows_new_segments_until_stopped() {
    use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
    use std::io::{BufRead, BufReader};
    let t = tempfile::tempdir().unwrap();
    let spec = |records| PartitionSpec {
        topic_id: Uuid::new(7, 7),
        segment_bytes: 8 * 1024,
        records,
        records_per_batch: 10,
        value_bytes: 50,
        first_timestamp: T0,
        epoch_every_batches: 0,
        seed: 9,
        compression: None,
    };
    // The same partition twice: `grown` is `dir` after more records were written (same bytes before).
    let dir = generate_partition(&t.path().join("w").join("events-0"), &spec(400)).unwrap();
    let grown = generate_partition(&t.path().join("later").join("events-0"), &spec(1_200)).unwrap();
    std::fs::create_dir(t.path().join("store")).unwrap();
    let store = format!("file://{}", t.path().join("store").display());
    let meta = t.path().join("m").display().to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rsm"))
        .args(["tier", dir.to_str().unwrap(), "--store", &store, "--metadata-dir", &meta, "--watch"])
        .args(["--set", "remote.log.manager.task.interval.ms=100", "--set", "retention.ms=-1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    std::thread::spawn(move || {
        for l in lines.map_while(|l| l.ok()) {
            let _ = tx.send(l);
        }
    });
    let total = |n: usize| format!("copied {n} segments in all");
    let closed = |d: &Path| rsm_core::format::partition::LocalPartition::open(d).unwrap().closed_segments().len();
    let first = closed(&dir);
    let wait_for = |want: String| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.contains(&want) => return,
                Ok(_) => {}
                Err(_) => panic!("no `{want}` line"),
            }
        }
    };
    wait_for(total(first));
    // New segments arrive: the watcher copies them at its next run.
    for e in std::fs::read_dir(&grown).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let now = closed(&dir);
    assert!(now > first);
    wait_for(total(now));
    child.kill().unwrap();
    child.wait().unwrap();
    let ls = ok(&["ls", "--store", &store]);
    assert!(ls.contains(&format!("total: {now} segments")), "{ls}");
}

/// Every file under `dir` with its bytes, and every directory: what a command that only reads must leave
/// as it found it.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = vec![(dir.to_path_buf(), Vec::new())];
    for f in common::files(dir) {
        let bytes = std::fs::read(&f).unwrap();
        out.push((f, bytes));
    }
    out
}

fn fails(s: &Setup, cmd: &[&str]) -> String {
    let mut a: Vec<&str> = cmd.to_vec();
    a.extend(s.args.iter().map(String::as_str));
    let out = rsm(&a);
    assert!(!out.status.success(), "rsm {a:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `rsm delete` of a segment from the middle of the remote log, then `rsm tier` with local retention on:
/// the delete refuses without --force and says what it would cut; with --force the gap is reported by
/// `offsets`, `tier` and `audit` (exit 1), and local deletion stops at it, so every offset of the partition
/// is still somewhere (remote below the gap, local from it on).
#[test]
fn a_segment_deleted_from_the_middle_keeps_its_offsets_locally() {
    let s = Setup::new();
    let closed = s.closed();
    assert!(closed >= 4, "{closed}");
    s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    let ls = ok(&["ls", "--store", &s.args[1], "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&ls).unwrap();
    let mut segs: Vec<(i64, i64, String)> = doc["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["start_offset"].as_i64().unwrap(),
                v["end_offset"].as_i64().unwrap(),
                v["segment_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    segs.sort();
    let (start, end, middle) = segs[2].clone();

    let err = fails(&s, &["delete", "--segment", &middle]);
    assert!(
        err.contains(&format!("would leave offsets {start}..={end} held nowhere")) && err.contains("--force"),
        "{err}"
    );
    let listed = ok(&["ls", "--store", &s.args[1]]);
    assert!(listed.contains(&middle), "refused, yet deleted: {listed}");
    let deleted = s.run(&["delete", "--segment", &middle, "--force"]);
    assert!(deleted.contains(&format!("gap at offsets {start}..={end}")), "{deleted}");

    let tier = s.run(&["tier", &s.dir, "--set", "local.retention.ms=1", "--set", "retention.ms=-1"]);
    assert!(tier.contains(&format!("remote log gap at offsets {start}..={end}")), "{tier}");
    assert!(tier.contains("deleted 2 local"), "only the two segments below the gap go: {tier}");
    for (base, _, _) in &segs[2..] {
        assert!(Path::new(&s.dir).join(format!("{base:020}.log")).exists(), "local segment {base} was deleted");
    }
    let offsets = s.run(&["offsets", &s.dir]);
    assert!(offsets.contains(&format!("{start}..={end}")) && offsets.contains("1 gaps"), "{offsets}");
    // Below the gap, from remote.
    let json = s.run(&["read", &s.dir, "--offset", "0", "--max-records", "1", "--json"]);
    assert!(json.contains("\"value\":\"value-0\""), "{json}");

    let meta = &s.args[3];
    let out = rsm(&["audit", "--metadata-dir", meta, "--store", &s.args[1]]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "a gap exits 1: {text}");
    assert!(text.contains(&format!("GAP\torders-0\toffsets {start}..={end}")), "{text}");
}

/// Read commands against a mistyped metadata directory fail naming it and create nothing; against a
/// partition directory without `partition.metadata` they write none; a failed `tier` leaves no metadata
/// directory behind.
#[test]
fn read_commands_and_a_failed_tier_create_nothing() {
    let s = Setup::new();
    std::fs::remove_file(Path::new(&s.dir).join("partition.metadata")).unwrap();
    let root = Path::new(&s.dir).parent().unwrap().to_path_buf();
    let mistyped = root.join("metadta");
    let before = snapshot(&root);
    for cmd in [
        vec!["offsets", s.dir.as_str()],
        vec!["read", s.dir.as_str(), "--offset", "0"],
        vec!["failed-deletions", "list"],
    ] {
        let mut a = cmd.clone();
        a.extend(["--store", &s.args[1], "--metadata-dir", mistyped.to_str().unwrap()]);
        let out = rsm(&a);
        assert!(!out.status.success(), "{a:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("metadta"), "{a:?} names the directory: {err}");
        assert_eq!(snapshot(&root), before, "{a:?} changed the file system");
    }
    // A tier refused for a directory that is not a partition leaves no metadata directory.
    let out = rsm(&[
        "tier",
        root.join("nope-x").to_str().unwrap(),
        "--store",
        &s.args[1],
        "--metadata-dir",
        mistyped.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(!mistyped.exists(), "a failed tier made {}", mistyped.display());

    // With the metadata there, offsets reads and writes no partition.metadata.
    s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    std::fs::remove_file(Path::new(&s.dir).join("partition.metadata")).unwrap();
    let before = snapshot(&root);
    let offsets = s.run(&["offsets", &s.dir]);
    assert!(offsets.contains("orders-0"), "{offsets}");
    s.run(&["failed-deletions", "list"]);
    assert_eq!(snapshot(&root), before, "a read command changed the file system");
}

/// One writer per partition directory and per metadata directory: a second `rsm tier` while one is
/// running (`--watch`) is refused at once, naming the holder, whether it shares the partition or the
/// metadata; so is an `rsm copy` of the partition. After the first stops (SIGKILL), the next one runs.
#[test]
fn a_second_writer_is_refused_while_the_first_runs() {
    use std::io::{BufRead, BufReader};
    let s = Setup::new();
    let other = Path::new(&s.dir).parent().unwrap().join("other-0");
    partition(&other);
    let mut a: Vec<String> =
        vec!["tier".into(), s.dir.clone(), "--watch".into(), "--set".into(), "retention.ms=-1".into()];
    a.extend(s.args.iter().cloned());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rsm"))
        .args(&a)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("tiering 1 partitions"), "{first}");
    let pid = child.id().to_string();

    let elsewhere = Path::new(&s.dir).parent().unwrap().join("metadata-2");
    let same_partition = rsm(&[
        "tier",
        &s.dir,
        "--store",
        &s.args[1],
        "--metadata-dir",
        elsewhere.to_str().unwrap(),
        "--set",
        "retention.ms=-1",
    ]);
    let same_metadata = {
        let mut a = vec!["tier", other.to_str().unwrap(), "--set", "retention.ms=-1"];
        a.extend(s.args.iter().map(String::as_str));
        rsm(&a)
    };
    let copy = rsm(&["copy", "--dir", &s.dir, "--store", &s.args[1]]);
    // The refusals above came while the watch held its locks; let its first pass end before the kill,
    // so that what it copied is whole (a kill mid-copy is the crash test's subject, not this one's).
    let mut line = String::new();
    while !line.contains("segments in all") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the watch stopped before its first pass ended");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for (what, out, dir) in [
        ("partition", &same_partition, "orders-0"),
        ("metadata", &same_metadata, "metadata"),
        ("copy", &copy, "orders-0"),
    ] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: a second writer ran");
        assert!(err.contains("in use by process") && err.contains(&pid) && err.contains(dir), "{what}: {err}");
    }
    let again = s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    assert!(again.contains("copied 0 segments"), "the watch copied everything once: {again}");
}

/// A first run over records older than Kafka's default retention would copy every segment and then delete
/// it in the same run. `--dry-run` prints that plan (each segment, its offsets and bytes, and the setting
/// that makes it due) and changes no byte on disk or in the store; a run without retention.ms set prints the
/// plan and refuses, changing nothing; `--yes` runs it.
#[test]
fn a_first_run_that_would_delete_everything_shows_its_plan_first() {
    let s = Setup::new();
    let closed = s.closed();
    let root = Path::new(&s.dir).parent().unwrap().to_path_buf();
    let before = snapshot(&root);
    let plan = s.run(&["tier", &s.dir, "--dry-run"]);
    assert_eq!(plan.lines().filter(|l| l.contains("\tcopy\t")).count(), closed, "{plan}");
    assert_eq!(
        plan.lines().filter(|l| l.contains("\tdelete remote\t") && l.contains("retention.ms")).count(),
        closed,
        "{plan}"
    );
    assert_eq!(plan.lines().filter(|l| l.contains("\tdelete local\t")).count(), closed, "{plan}");
    assert_eq!(snapshot(&root), before, "--dry-run changed the file system or the store");

    let err = fails(&s, &["tier", &s.dir]);
    assert!(err.contains(&format!("copy {closed} segments and then delete them")) && err.contains("--yes"), "{err}");
    assert_eq!(snapshot(&root), before, "a refused run changed the file system or the store");
    // With retention kept, the plan copies and deletes nothing remote.
    let keep = s.run(&["tier", &s.dir, "--dry-run", "--set", "retention.ms=-1"]);
    assert!(!keep.contains("delete remote") && keep.contains("\tcopy\t"), "{keep}");

    let ran = s.run(&["tier", &s.dir, "--yes"]);
    assert!(ran.contains(&format!("expired {closed} remote")), "{ran}");
}

/// A metadata log damaged in its middle stops `tier` before any local deletion, naming the file; a new log
/// rebuilt from the store's manifests (`rsm rebuild-metadata`) then serves the engine again: nothing is copied
/// twice, the local segments go as retention says, and the records read back from remote.
#[test]
fn a_damaged_metadata_log_stops_tier_and_is_rebuilt_from_the_store() {
    let s = Setup::new();
    let closed = s.closed();
    s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    let meta = Path::new(&s.args[3]).to_path_buf();
    // The partition's state is in its metadata partition's snapshot (taken at close) and log files.
    let log = common::files(&meta)
        .into_iter()
        .filter(|f| !f.starts_with(meta.join("failed-deletions")))
        .find(|f| {
            let name = f.file_name().unwrap().to_string_lossy();
            (name == "snapshot" || name.ends_with(".log")) && std::fs::metadata(f).unwrap().len() > 16
        })
        .expect("a metadata file with records");
    let mut bytes = std::fs::read(&log).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&log, bytes).unwrap();
    let local_before = snapshot(Path::new(&s.dir));
    let err = fails(&s, &["tier", &s.dir, "--set", "retention.ms=-1", "--set", "local.retention.ms=1"]);
    assert!(err.contains(&log.display().to_string()), "names the damaged file: {err}");
    assert_eq!(snapshot(Path::new(&s.dir)), local_before, "a tier over damaged metadata changed the partition");

    let rebuilt = Path::new(&s.dir).parent().unwrap().join("metadata-rebuilt");
    let out = ok(&["rebuild-metadata", "--store", &s.args[1], "--metadata-dir", rebuilt.to_str().unwrap()]);
    assert!(out.contains(&format!("with {closed} segments")), "{out}");
    let err = rsm(&["rebuild-metadata", "--store", &s.args[1], "--metadata-dir", rebuilt.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&err.stderr).contains("exists"), "a rebuild never overwrites a metadata directory");
    let args = ["--store", &s.args[1], "--metadata-dir", rebuilt.to_str().unwrap()];
    let tier =
        ok(&[&["tier", &s.dir, "--set", "retention.ms=-1", "--set", "local.retention.ms=1"][..], &args].concat());
    assert!(tier.contains("copied 0 segments") && tier.contains(&format!("deleted {closed} local")), "{tier}");
    let json = ok(&[&["read", &s.dir, "--offset", "0", "--max-records", "1", "--json"][..], &args].concat());
    assert!(json.contains("\"value\":\"value-0\""), "{json}");
}

/// Two `rsm tier` runs, and a `tier` with a `copy`, started together on one partition, again and again: each
/// time every run either finishes or is refused naming the holder, the metadata log opens after, and the
/// store holds one copy of each segment.
#[test]
fn writers_started_together_never_store_a_segment_twice() {
    for round in 0..8 {
        let s = Setup::new();
        let closed = s.closed();
        let spawn = |args: Vec<String>| {
            std::process::Command::new(env!("CARGO_BIN_EXE_rsm"))
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let tier = || {
            let mut a: Vec<String> = vec!["tier".into(), s.dir.clone(), "--set".into(), "retention.ms=-1".into()];
            a.extend(s.args.iter().cloned());
            a
        };
        let second = if round % 2 == 0 {
            tier()
        } else {
            vec!["copy".into(), "--dir".into(), s.dir.clone(), "--store".into(), s.args[1].clone()]
        };
        let children = [spawn(tier()), spawn(second)];
        let mut refused = 0;
        for c in children {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success() || err.contains("is in use by"), "round {round}: {err}");
            refused += usize::from(!out.status.success());
        }
        // Both finishing means they did not overlap: a `copy` done before a `tier` started is not in the
        // tier's metadata, so the tier copies again (the engine trusts its metadata, as Kafka's does).
        if refused == 0 && round % 2 == 1 {
            continue;
        }
        // The metadata opens (a read beside no writer), and every segment is stored once.
        s.run(&["offsets", &s.dir]);
        let ls = ok(&["ls", "--store", &s.args[1], "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&ls).unwrap();
        let mut starts: Vec<i64> =
            doc["segments"].as_array().unwrap().iter().map(|v| v["start_offset"].as_i64().unwrap()).collect();
        starts.sort();
        let n = starts.len();
        starts.dedup();
        assert_eq!(starts.len(), n, "round {round}: a segment stored twice: {ls}");
        assert_eq!(n, closed, "round {round}: every closed segment once");
    }
}

/// Runs `rsm cmd` with the setup's store and metadata; it must fail with exit status 1 (no panic); returns
/// (stdout, stderr).
fn refused(s: &Setup, cmd: &[&str]) -> (String, String) {
    let mut a: Vec<&str> = cmd.to_vec();
    a.extend(s.args.iter().map(String::as_str));
    let out = rsm(&a);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert_eq!(out.status.code(), Some(1), "rsm {a:?}: stdout {stdout}\nstderr {stderr}");
    (stdout, stderr)
}

/// The plan-and-stop guard covers every run that would delete data by a retention time nobody set, not only
/// a first one: after a first run that kept everything (`retention.ms=-1`), a later `tier` or `expire`
/// without `retention.ms` would delete every remote and local segment of these years-old records by Kafka's
/// default of 7 days. Each prints its plan (each deletion with the setting that makes it due) and stops,
/// exit status 1, changing nothing; `expire --yes` runs it; and a run with nothing to delete needs no `--yes`.
#[test]
fn a_later_run_that_would_delete_by_the_default_retention_shows_its_plan_first() {
    let s = Setup::new();
    let closed = s.closed();
    let root = Path::new(&s.dir).parent().unwrap().to_path_buf();
    let first = s.run(&["tier", &s.dir, "--set", "retention.ms=-1"]);
    assert_eq!(copied_count(first.lines().nth(1).unwrap()), closed, "{first}");
    let before = snapshot(&root);

    for cmd in [&["tier", s.dir.as_str()][..], &["expire", s.dir.as_str()][..]] {
        let (plan, err) = refused(&s, cmd);
        assert_eq!(
            plan.lines().filter(|l| l.contains("\tdelete remote\t") && l.contains("older than retention.ms")).count(),
            closed,
            "{cmd:?}: {plan}"
        );
        assert_eq!(plan.lines().filter(|l| l.contains("\tdelete local\t")).count(), closed, "{cmd:?}: {plan}");
        assert!(!plan.contains("\tcopy\t"), "{cmd:?} copies nothing: {plan}");
        assert!(
            err.contains(&format!("would delete {closed} remote and {closed} local segments by retention.ms"))
                && err.contains("not set")
                && err.contains("--yes")
                && err.contains("nothing was changed"),
            "{cmd:?}: {err}"
        );
        assert_eq!(snapshot(&root), before, "{cmd:?}: a refused run changed the file system or the store");
    }
    // Told, it runs.
    let expired = s.run(&["expire", &s.dir, "--yes"]);
    assert!(expired.contains(&format!("expired {closed} remote, deleted {closed} local")), "{expired}");
    // Nothing left to delete: no --yes needed.
    let again = s.run(&["tier", &s.dir]);
    assert!(again.contains("expired 0 remote, deleted 0 local"), "{again}");
}

/// `--dry-run` creates nothing, not even the store's directory that `fs.root.create=true` asks a run to
/// create: it says the directory does not exist and plans over it as empty; the run itself then creates it.
#[test]
fn a_dry_run_does_not_create_the_store_directory() {
    let s = Setup::new();
    let root = Path::new(&s.dir).parent().unwrap().to_path_buf();
    let missing = root.join("new-store");
    let url = format!("file://{}", missing.display());
    let meta = root.join("metadata");
    let before = snapshot(&root);
    let args = ["tier", &s.dir, "--store", &url, "--metadata-dir", meta.to_str().unwrap()];
    let plan = ok(&[&args[..], &["--dry-run", "--set", "fs.root.create=true", "--set", "retention.ms=-1"]].concat());
    assert!(!missing.exists(), "the dry run created {}", missing.display());
    assert!(plan.contains(&format!("store directory {} does not exist", missing.display())), "{plan}");
    assert_eq!(plan.lines().filter(|l| l.contains("\tcopy\t")).count(), s.closed(), "{plan}");
    assert!(!meta.exists(), "the dry run created {}", meta.display());
    assert_eq!(snapshot(&root), before, "the dry run changed the file system");
    let ran = ok(&[&args[..], &["--set", "fs.root.create=true", "--set", "retention.ms=-1"]].concat());
    assert_eq!(copied_count(ran.lines().nth(1).unwrap()), s.closed(), "{ran}");
    assert!(missing.is_dir());
}
