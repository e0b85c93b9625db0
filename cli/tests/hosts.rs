//! The engine on several hosts (issue 26, item 4): two `rsm tier --bootstrap-server` processes, each on its
//! own copy of the same partitions (as two brokers' replicas are), one shared store and one metadata topic on
//! a real Kafka server. Leadership moves from host A to host B mid-run, A killed with SIGKILL while it copies:
//! B goes on without copying any segment a second time, removes the copy A left unfinished, deletes no local
//! segment before it is safely remote, and every record reads back in order; `rsm audit` finds nothing lost
//! and no orphans.

mod common;
use common::{ok, rsm};
use rsm_core::model::Uuid;
use rsm_core::testkit::log_writer::{PartitionWriter, Record};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const T0: i64 = 1_700_000_000_000;
const TOPIC: &str = "orders";
const PARTITIONS: i32 = 2;
/// Records before the log grows (host A's first run copies their closed segments) and after.
const FIRST: i64 = 1_500;
const GROWN: i64 = 9_000;
/// `rsm.engine.remote.timeout.ms` of both hosts.
const TIMEOUT_MS: u64 = 2_000;

fn value(o: i64) -> String {
    format!("value-{o}-{}", "x".repeat(180))
}

/// Partition `p` of the topic with `records` records in batches of 10: offset `o` has key `k{o}`, value
/// [`value`] and timestamp T0 + o. Written the same way for any `records`, so a partition written with more
/// is this one grown (the same bytes up to its end).
fn write_partition(root: &Path, p: i32, records: i64) -> PathBuf {
    let dir = root.join(format!("{TOPIC}-{p}"));
    let mut w = PartitionWriter::create(&dir, Uuid::new(26, 4), 32 * 1024, 4096).unwrap();
    for b in 0..records / 10 {
        let batch: Vec<Record> = (b * 10..b * 10 + 10)
            .map(|o| Record {
                key: Some(format!("k{o}").into_bytes()),
                value: Some(value(o).into_bytes()),
                headers: vec![],
                timestamp: T0 + o,
            })
            .collect();
        w.append(&batch).unwrap();
    }
    w.finish().unwrap()
}

/// The base offsets of the `.log` files in `dir`, sorted (the last is the active segment).
fn bases(dir: &Path) -> Vec<i64> {
    let mut v: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".log").and_then(|b| b.parse().ok())
        })
        .collect();
    v.sort();
    v
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Grows the replica `dir` to `grown` (the same partition with more records) as Kafka's log grows: the
/// active segment and the ones after come from `grown`, oldest first, each file renamed into place whole, so
/// a segment is complete (log and indexes) before the next one's log makes it a closed segment. The closed
/// segments `dir` had (some maybe deleted) are left as they are.
fn grow(dir: &Path, grown: &Path) {
    let active = *bases(dir).last().unwrap();
    let mut files: Vec<(i64, bool, String)> = std::fs::read_dir(grown)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| {
            let base: i64 = name.split('.').next().and_then(|b| b.parse().ok()).unwrap_or(-1);
            (base == -1 || base >= active).then(|| (base, name.ends_with(".log"), name))
        })
        .collect();
    files.sort();
    for (_, _, name) in files {
        // Beside the partition directory, not in it.
        let tmp = dir.with_file_name(format!(".growing-{name}"));
        std::fs::copy(grown.join(&name), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join(&name)).unwrap();
    }
}

/// One segment of the metadata topic as its events tell it.
#[derive(Debug, Default, Clone)]
struct Seg {
    partition: String,
    start: i64,
    end: i64,
    /// The broker that started the copy.
    broker: i32,
    /// Every state it went through, in order.
    states: Vec<String>,
}

impl Seg {
    fn finished(&self) -> bool {
        self.states.iter().any(|s| s == "COPY_SEGMENT_FINISHED")
    }
    fn deleted(&self) -> bool {
        self.states.iter().any(|s| s == "DELETE_SEGMENT_FINISHED")
    }
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key}= in {line}"))
}

/// Every segment of the metadata topic by id, from `rsm metadata` (each record as Kafka's serde decodes it).
fn segments(out: &str) -> BTreeMap<String, Seg> {
    let mut segs: BTreeMap<String, Seg> = BTreeMap::new();
    for line in out.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.get(1) {
            Some(&"segment") => {
                let s = Seg {
                    partition: words[2].to_string(),
                    start: field(line, "start").parse().unwrap(),
                    end: field(line, "end").parse().unwrap(),
                    broker: field(line, "broker").parse().unwrap(),
                    states: vec![field(line, "state").to_string()],
                };
                assert!(segs.insert(words[3].to_string(), s).is_none(), "segment {} added twice: {out}", words[3]);
            }
            Some(&"update") => {
                let s = segs.get_mut(words[3]).unwrap_or_else(|| panic!("an update before its segment: {line}"));
                assert_eq!(s.partition, words[2], "{line}");
                s.states.push(field(line, "state").to_string());
            }
            _ => panic!("unexpected metadata record: {line}"),
        }
    }
    segs
}

/// The copied segments (copy finished) by partition and offsets, each with the ids copied there.
fn finished_by_range(segs: &BTreeMap<String, Seg>) -> BTreeMap<(String, i64, i64), Vec<String>> {
    let mut out: BTreeMap<_, Vec<String>> = BTreeMap::new();
    for (id, s) in segs.iter().filter(|(_, s)| s.finished()) {
        out.entry((s.partition.clone(), s.start, s.end)).or_default().push(id.clone());
    }
    out
}

/// Each local segment of `original` that is gone from `dir` must be held whole by a finished copy that
/// was not deleted: a local segment goes only once it is safely remote.
fn check_local_deletions(host: &str, dir: &Path, original: &[(i64, i64)], segs: &BTreeMap<String, Seg>) -> usize {
    let left: BTreeSet<i64> = bases(dir).into_iter().collect();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let mut gone = 0;
    for &(base, end) in original.iter().filter(|(b, _)| !left.contains(b)) {
        gone += 1;
        let held = segs
            .values()
            .any(|s| s.partition.ends_with(&name) && s.finished() && !s.deleted() && s.start <= base && s.end >= end);
        assert!(held, "host {host} deleted local segment {base}..={end} of {name} before it was safely remote");
    }
    gone
}

/// The closed segments of `dir` as (base, last offset).
fn closed_ranges(dir: &Path) -> Vec<(i64, i64)> {
    let b = bases(dir);
    b.windows(2).map(|w| (w[0], w[1] - 1)).collect()
}

/// The store's objects not yet part of a whole segment (no manifest): an upload in flight.
fn uploading(store: &Path) -> usize {
    let files = common::files(store);
    let names: BTreeSet<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    names
        .iter()
        .filter(|n| !n.ends_with(".manifest"))
        .filter(|n| {
            let stem = n.trim_start_matches(".rsm-tmp-").split('.').next().unwrap_or_default();
            !names.contains(&format!("{stem}.manifest"))
        })
        .count()
}

fn manifests(store: &Path) -> usize {
    common::files(store).iter().filter(|f| f.extension().is_some_and(|e| e == "manifest")).count()
}

/// How many segments the metadata has copied (copy finished).
fn segs_finished(c: &Cluster) -> usize {
    c.metadata().values().filter(|s| s.finished()).count()
}

/// The copied count of `rsm tier`'s total line.
fn copied(out: &str) -> usize {
    let total = out.lines().find(|l| l.starts_with("total: copied ")).unwrap_or_else(|| panic!("no total: {out}"));
    total["total: copied ".len()..].split(' ').next().unwrap().parse().unwrap()
}

/// What every `rsm` run of the scenario shares: the store, the cluster and its (fresh) metadata topics.
struct Cluster {
    _t: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    url: String,
    bootstrap: String,
    topic: String,
    failed: String,
}

impl Cluster {
    fn new(bootstrap: String) -> Self {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        let store = root.join("store");
        std::fs::create_dir(&store).unwrap();
        let run = Uuid::random().to_string().replace(['-', '_'], "x");
        Cluster {
            url: format!("file://{}", store.display()),
            store,
            root,
            bootstrap,
            topic: format!("rsm-hosts-{run}"),
            failed: format!("rsm-hosts-failed-{run}"),
            _t: t,
        }
    }

    /// `rsm tier` arguments of host `broker` (its own snapshot directory) over `dirs`.
    fn tier_args(&self, broker: i32, dirs: &[PathBuf], extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = vec!["tier".into()];
        a.extend(dirs.iter().map(|d| d.display().to_string()));
        let snapshots = self.root.join(format!("host-{broker}-snapshots")).display().to_string();
        for s in [
            "--store",
            &self.url,
            "--metadata-dir",
            &snapshots,
            "--bootstrap-server",
            &self.bootstrap,
            "--set",
            "retention.ms=-1",
            "--set",
            "local.retention.ms=1",
            "--set",
            &format!("rsm.engine.broker.id={broker}"),
            "--set",
            "remote.log.manager.task.interval.ms=200",
            // A copy takes milliseconds here; one another broker started is taken as abandoned after twice this.
            "--set",
            &format!("rsm.engine.remote.timeout.ms={TIMEOUT_MS}"),
            "--set",
            "rlmm.config.remote.log.metadata.topic.replication.factor=1",
            "--set",
            "rlmm.config.remote.log.metadata.topic.num.partitions=3",
            "--set",
            &format!("rlmm.config.remote.log.metadata.topic.name={}", self.topic),
            "--set",
            &format!("rlmm.config.remote.log.metadata.failed.deletions.topic.name={}", self.failed),
        ] {
            a.push(s.to_string());
        }
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    fn tier(&self, broker: i32, dirs: &[PathBuf]) -> String {
        ok(&self.tier_args(broker, dirs, &[]).iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn watch(&self, broker: i32, dirs: &[PathBuf]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_rsm"))
            .args(self.tier_args(broker, dirs, &["--watch"]))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn metadata(&self) -> BTreeMap<String, Seg> {
        segments(&ok(&["metadata", "--bootstrap-server", &self.bootstrap, "--metadata-topic", &self.topic]))
    }

    /// `rsm audit` of the cluster's metadata against the store: its exit code and report.
    fn audit(&self) -> (Option<i32>, String) {
        let out = rsm(&[
            "audit",
            "--bootstrap-server",
            &self.bootstrap,
            "--metadata-topic",
            &self.topic,
            "--store",
            &self.url,
        ]);
        (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }

    /// Every record of the partition in `dir` below `end`, read back from remote through `rsm read`: offsets
    /// 0.. in order, each with its key and value as written.
    fn check_records(&self, broker: i32, dir: &Path, end: i64) {
        let mut a = self.tier_args(broker, &[dir.to_path_buf()], &[]);
        a[0] = "read".into();
        a.extend(["--offset", "0", "--max-records", &end.to_string(), "--json"].map(String::from));
        let out = ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let mut n = 0;
        for (i, line) in out.lines().enumerate() {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            let o = i as i64;
            assert_eq!(r["offset"], o, "{}: record {i} out of order", dir.display());
            assert_eq!(r["key"], format!("k{o}"), "{}: offset {o}", dir.display());
            assert_eq!(r["value"], value(o), "{}: offset {o}", dir.display());
            n += 1;
        }
        assert_eq!(n, end, "{}: {n} records read back of {end}", dir.display());
    }
}

/// Fails the test when the `--watch` process `child` of host `host` has stopped, with what it said.
fn still_running(host: &str, child: &mut Child) {
    if child.try_wait().unwrap().is_some() {
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        panic!("host {host}'s rsm tier --watch stopped: {err}");
    }
}

fn kafka() -> Option<String> {
    rsm_core::testkit::test_server(
        "RSM_TEST_KAFKA_BOOTSTRAP",
        "RSM_SKIP_KAFKA",
        "eval \"$(tools/servers/kafka.sh start)\"",
    )
}

/// Host A tiers (`--watch`) its replicas of two partitions; the log grows; A is killed with SIGKILL in the
/// middle of an upload; host B, leader now, tiers its own replicas (once, then again) through the same
/// metadata topic and store.
#[test]
fn leadership_moves_to_another_host_after_a_kill_mid_copy() {
    let Some(bootstrap) = kafka() else { return };
    let c = Cluster::new(bootstrap);
    let (first, grown) = (c.root.join("first"), c.root.join("grown"));
    let (mut a_dirs, mut b_dirs) = (Vec::new(), Vec::new());
    for p in 0..PARTITIONS {
        let (f, g) = (write_partition(&first, p, FIRST), write_partition(&grown, p, GROWN));
        let (a, b) =
            (c.root.join("host-a").join(f.file_name().unwrap()), c.root.join("host-b").join(g.file_name().unwrap()));
        copy_dir(&f, &a);
        copy_dir(&f, &b);
        a_dirs.push(a);
        b_dirs.push(b);
        // The grown partition holds the first one's bytes: it is the same log, later.
        assert_eq!(bases(&f)[..bases(&f).len() - 1], bases(&g)[..bases(&f).len() - 1]);
    }
    let first_closed: usize = a_dirs.iter().map(|d| closed_ranges(d).len()).sum();

    // Host A leads: its first pass copies the closed segments and deletes them locally.
    let mut a = c.watch(1, &a_dirs);
    let deadline = Instant::now() + Duration::from_secs(60);
    while manifests(&c.store) < first_closed || a_dirs.iter().any(|d| bases(d).len() > 1) {
        assert!(Instant::now() < deadline, "host A's first pass did not end: {} copied", manifests(&c.store));
        still_running("A", &mut a);
        std::thread::sleep(Duration::from_millis(20));
    }
    // The log grows on both replicas; A copies the new segments, and is killed in the middle of an upload.
    for (d, p) in a_dirs.iter().chain(&b_dirs).zip((0..PARTITIONS).cycle()) {
        grow(d, &grown.join(format!("{TOPIC}-{p}")));
    }
    let originals: Vec<Vec<(i64, i64)>> = b_dirs.iter().map(|d| closed_ranges(d)).collect();
    let all_closed: usize = originals.iter().map(Vec::len).sum();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "host A was never seen mid-upload: {} copied", manifests(&c.store));
        still_running("A", &mut a);
        if manifests(&c.store) >= first_closed + 4 && uploading(&c.store) > 0 {
            a.kill().unwrap(); // SIGKILL
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    a.wait().unwrap();

    // What A left: copies it finished, and one it started and never finished (the upload cut short).
    let segs = c.metadata();
    let by_a = segs.values().filter(|s| s.finished()).count();
    assert!(by_a > first_closed && by_a < all_closed, "host A copied {by_a} of {all_closed} before the kill");
    let unfinished: Vec<&Seg> = segs.values().filter(|s| !s.finished()).collect();
    assert!(segs.values().all(|s| s.broker == 1), "only host A wrote so far: {segs:?}");
    assert!((1..=PARTITIONS as usize).contains(&unfinished.len()), "the copies A was making when killed: {segs:?}");
    assert!(unfinished.iter().all(|s| s.states == ["COPY_SEGMENT_STARTED"]), "{segs:?}");
    let a_gone: usize = a_dirs.iter().zip(&originals).map(|(d, o)| check_local_deletions("A", d, o, &segs)).sum();
    assert!(a_gone >= first_closed, "host A deleted {a_gone} local segments, fewer than its first pass copied");
    let killed = Instant::now();

    // Host B leads now. At once: B cannot tell A's unfinished copies from copies still in flight, so it leaves
    // them and its copy waits at their offsets (the rest goes on).
    let out = c.tier(2, &b_dirs);
    let early = copied(&out);
    assert!(killed.elapsed() < Duration::from_millis(2 * TIMEOUT_MS), "B's first run came too late to test this");
    assert!(early < all_closed - by_a, "B copied past A's unfinished copy at once: {out}");
    for u in &unfinished {
        let line = out.lines().find(|l| l.contains(&u.partition)).unwrap();
        assert!(line.contains(&format!("copy delayed from offset {}", u.start)), "{line}");
        assert!(line.contains("removed 0 unfinished copies"), "{line}");
    }
    // Past the time a copy may take, B (`--watch`) removes them and copies the rest.
    let mut b = c.watch(2, &b_dirs);
    let deadline = Instant::now() + Duration::from_secs(60);
    while segs_finished(&c) < all_closed || b_dirs.iter().any(|d| bases(d).len() > 1) {
        assert!(Instant::now() < deadline, "host B did not finish: {:?}", c.metadata());
        still_running("B", &mut b);
        std::thread::sleep(Duration::from_millis(100));
    }
    b.kill().unwrap();
    let b_err = b.wait_with_output().unwrap().stderr;
    assert!(b_err.is_empty(), "{}", String::from_utf8_lossy(&b_err));
    let again = c.tier(2, &b_dirs);
    assert_eq!(copied(&again), 0, "{again}");
    let by_b = all_closed - by_a;

    let segs = c.metadata();
    let finished = finished_by_range(&segs);
    let twice: Vec<_> = finished.iter().filter(|(_, ids)| ids.len() > 1).collect();
    assert!(twice.is_empty(), "segments copied twice: {twice:?}");
    assert_eq!(finished.len(), all_closed, "every closed segment copied once");
    let (from_a, from_b) = (
        segs.values().filter(|s| s.finished() && s.broker == 1).count(),
        segs.values().filter(|s| s.finished() && s.broker == 2).count(),
    );
    assert_eq!((from_a, from_b), (by_a, by_b), "{segs:?}");
    let abandoned: Vec<&Seg> = segs.values().filter(|s| !s.finished()).collect();
    assert_eq!(abandoned.len(), unfinished.len(), "{segs:?}");
    for u in abandoned {
        let removed = ["COPY_SEGMENT_STARTED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"];
        assert_eq!(u.broker, 1, "{u:?}");
        assert_eq!(u.states, removed, "A's unfinished copy is removed");
    }
    for ((d, o), name) in b_dirs.iter().zip(&originals).zip(["B0", "B1"]) {
        let gone = check_local_deletions(name, d, o, &segs);
        assert_eq!(gone, o.len(), "{name}: every local segment goes once it is remote");
    }
    // The store: each closed segment once, whole; nothing else.
    let ls: serde_json::Value = serde_json::from_str(&ok(&["ls", "--store", &c.url, "--json"])).unwrap();
    let stored: Vec<(i64, i64, String)> = ls["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["status"], "ok", "{s}");
            (s["partition"].as_i64().unwrap(), s["start_offset"].as_i64().unwrap(), s["segment_id"].to_string())
        })
        .collect();
    let distinct: BTreeSet<(i64, i64)> = stored.iter().map(|(p, s, _)| (*p, *s)).collect();
    assert_eq!((stored.len(), distinct.len()), (all_closed, all_closed), "{ls}");
    let (code, report) = c.audit();
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains(&format!("audited {PARTITIONS} partitions: 0 lost, 0 orphans, 0 stuck")), "{report}");
    for (d, o) in b_dirs.iter().zip(&originals) {
        c.check_records(2, d, o.last().unwrap().1 + 1);
    }
    eprintln!(
        "handover: {all_closed} closed segments, {from_a} copied by host A (killed mid-upload), {from_b} by host B, \
         0 twice, {} unfinished copies removed; {a_gone} local segments deleted by A, {all_closed} by B",
        unfinished.len()
    );
}

/// Both hosts lead at once (A not dead: two hosts told to lead the same partitions): A tiers alone, B starts
/// too, the log grows on both replicas and both copy it. Without fencing neither can refuse the other, but
/// nothing is lost: neither removes a copy the other is making, a copy the other finished or is making is not
/// made again (only two copies started in the same instant both go on), the second copy of a range is deleted
/// by the same rule on both hosts, and no local segment goes before it is safely remote.
#[test]
fn two_hosts_leading_at_once_lose_nothing() {
    let Some(bootstrap) = kafka() else { return };
    let c = Cluster::new(bootstrap);
    let (first, grown) = (c.root.join("first"), c.root.join("grown"));
    let (mut a_dirs, mut b_dirs, mut originals) = (Vec::new(), Vec::new(), Vec::new());
    for p in 0..PARTITIONS {
        let (f, g) = (write_partition(&first, p, FIRST), write_partition(&grown, p, GROWN));
        let name = g.file_name().unwrap();
        let (a, b) = (c.root.join("host-a").join(name), c.root.join("host-b").join(name));
        copy_dir(&f, &a);
        copy_dir(&f, &b);
        a_dirs.push(a);
        b_dirs.push(b);
        originals.push(closed_ranges(&g));
    }
    let first_closed: usize = a_dirs.iter().map(|d| closed_ranges(d).len()).sum();
    let all_closed: usize = originals.iter().map(Vec::len).sum();
    let mut a = c.watch(1, &a_dirs);
    let deadline = Instant::now() + Duration::from_secs(60);
    while manifests(&c.store) < first_closed || a_dirs.iter().any(|d| bases(d).len() > 1) {
        assert!(Instant::now() < deadline, "host A's first pass did not end");
        still_running("A", &mut a);
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut b = c.watch(2, &b_dirs);
    for (d, p) in a_dirs.iter().chain(&b_dirs).zip((0..PARTITIONS).cycle()) {
        grow(d, &grown.join(format!("{TOPIC}-{p}")));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while segs_finished(&c) < all_closed || a_dirs.iter().chain(&b_dirs).any(|d| bases(d).len() > 1) {
        assert!(Instant::now() < deadline, "the hosts did not finish: {:?}", c.metadata());
        still_running("A", &mut a);
        still_running("B", &mut b);
        std::thread::sleep(Duration::from_millis(100));
    }
    // A few runs more, for any second copy to be deleted.
    std::thread::sleep(Duration::from_secs(2));
    for (host, mut child) in [("A", a), ("B", b)] {
        still_running(host, &mut child);
        child.kill().unwrap();
        let err = child.wait_with_output().unwrap().stderr;
        assert!(err.is_empty(), "host {host}: {}", String::from_utf8_lossy(&err));
    }

    let segs = c.metadata();
    let finished = finished_by_range(&segs);
    assert_eq!(finished.len(), all_closed, "every closed segment copied");
    let twice = finished.values().filter(|ids| ids.len() > 1).count();
    // Before the copy task looked at the metadata again before each segment, nearly every segment the two
    // hosts copied at once was copied by both (100 of the 100 new ones here).
    assert!(twice <= all_closed / 4, "{twice} of {all_closed} segments copied by both hosts");
    for ((tp, start, end), ids) in &finished {
        let live = ids.iter().filter(|id| !segs[*id].deleted()).count();
        assert_eq!(live, 1, "{tp} {start}..={end}: {live} copies left of {ids:?}");
    }
    let unfinished: Vec<_> = segs.values().filter(|s| !s.finished() && !s.deleted()).collect();
    assert!(unfinished.is_empty(), "copies left unfinished: {unfinished:?}");
    for (host, dirs) in [("A", &a_dirs), ("B", &b_dirs)] {
        for (d, o) in dirs.iter().zip(&originals) {
            assert_eq!(check_local_deletions(host, d, o, &segs), o.len(), "{}", d.display());
        }
    }
    let (code, report) = c.audit();
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains(&format!("audited {PARTITIONS} partitions: 0 lost, 0 orphans, 0 stuck")), "{report}");
    assert!(report.contains(" 0 gaps,"), "{report}");
    for (d, o) in b_dirs.iter().zip(&originals) {
        c.check_records(2, d, o.last().unwrap().1 + 1);
    }
    let by = |b: i32| segs.values().filter(|s| s.finished() && s.broker == b).count();
    eprintln!(
        "two leaders: {all_closed} closed segments, {} copies finished by host A, {} by host B, {twice} copied by \
         both (the second copy deleted), 0 lost",
        by(1),
        by(2)
    );
}
