//! A randomized operator test (issue 39, item 8): seeded sequences of 20 to 200 operator steps over a copy of
//! a partition an independent Kafka client wrote (`tests/data/records/codecs-0` and `txn-0`, kafka-python), each
//! step the built `rsm` binary or a fault done by hand, and after every step an oracle that trusts nothing the
//! code under test says about what exists.
//!
//! Steps: `tier` (random `retention.ms`, `local.retention.ms`, `retention.bytes`, `local.retention.bytes`, with
//! and without `--yes`), `copy`, `delete --segment <id>` (ids read from the store's file names; with and without
//! `--force`; sometimes an id no segment has), `expire`, `audit --delete-orphans --yes` (random `--min-age`,
//! sometimes over a stale copy of the metadata directory saved earlier), `sweep --yes` (random `--min-age`),
//! `rewrap` (runs with encryption only: `encryption.enabled=true`, keys k1 and k2), `rebuild-metadata` into a
//! new directory (then sometimes switched to), and as faults: kill -9 at a random moment of any of those (spawn,
//! sleep a few ms, SIGKILL), a local segment removed or truncated (at a batch boundary with its indexes cut as a
//! broker's recovery cuts them, or raw, mid-batch), a byte of a store object flipped, a run whose store is an
//! empty mount point (the store directory moved away for the step: what the step writes there is lost when the
//! "share" comes back), a run with wrong key files (the right key ids), and two commands at once.
//!
//! The oracle. Expectations come from the fixture's `.jsonl` (every record a consumer reads) and its original
//! segment files only. After every step:
//! - every record offset still *required* is available: locally (its batch is whole in the partition
//!   directory's `<base>.log`, byte-identical to the original) or remotely (`rsm read --json` prints the record
//!   exactly as the jsonl has it). An offset stops being required only when it is lost in a step that was
//!   allowed to lose it: a step with an explicit finite `retention.ms` or `retention.bytes` (or `tier --yes` with
//!   Kafka's default retention, which the operator confirmed) may lose offsets below the point that retention
//!   reaches, computed from the original segments' timestamps and sizes; `delete --force` may lose its segment's
//!   offsets; `delete` without `--force` only offsets below every offset still remote (the log start moves); a
//!   local file removed or truncated by hand, or a store object damaged by hand, may lose the offsets it held,
//!   in that step (if a remote copy still held them, they stay required).
//! - no `rsm read` prints a record that differs from the jsonl (exit 0 or not), nor out of order;
//! - no command panics (exit 101, "panicked") or dies of a signal it was not sent, and none hangs;
//! - a hole (record offsets neither local nor remote between the first offset we read remotely and the active
//!   segment, whether allowed or not) is reported: by `rsm offsets` as a gap covering it (holes in segments whose
//!   store objects were damaged or never reached the store are left to `audit`), and, where it lies before the
//!   last remote offset, by `rsm audit --json` (exit non-zero, a gap or a lost segment covering it);
//! - `audit --delete-orphans` and `sweep` never delete an object of a segment whose manifest (or one-object
//!   `.segment`) exists, nor an object younger than `--min-age`;
//! - audit with wrong key files calls no segment lost that the right keys find sound;
//! - sometimes, on runs without faults that change transactions, `rsm read --isolation read_committed` prints
//!   only records of `<partition>.read_committed.jsonl`, exactly.
//!
//! Budget: a fixed list of seeds in the normal `cargo test` run (about two minutes in a debug build). By hand:
//! `RSM_RANDOM_SEED=<n>` runs that seed alone (or, with `RSM_RANDOM_STEPS`, seeds from it on), and
//! `RSM_RANDOM_STEPS=<n>` runs seeds one after another (20 to 200 steps each) until `n` steps in all. A run
//! that finds a violation stops there; the test goes on with the next seed and fails at the end, printing
//! for each violation its seed, step, the steps so far (as commands, `$T` the run's temporary directory) and
//! what was wrong. The figures (steps, kills, faults, offsets checked) go to stderr (`--nocapture`).
//! `RSM_RANDOM_BIN=<path>` runs that `rsm` binary instead of the one cargo built (a long run on a copy
//! pinned while the tree changes); `RSM_RANDOM_KEEP=1` keeps the directory of a run that found a violation.

mod common;
use common::Rng;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

thread_local! {
    /// Offsets the fixture under test holds no data record at (control records), for [`ranges`].
    static RECORDLESS: std::cell::RefCell<BTreeSet<i64>> = const { std::cell::RefCell::new(BTreeSet::new()) };
}

/// The seeds of the normal test run, and the steps each.
const DEFAULT_SEEDS: u64 = 12;
const FIXTURES: &[&str] = &["codecs-0", "txn-0"];
/// Longest a command may take before it counts as hung.
const HANG: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------------------
// Randomness

// ---------------------------------------------------------------------------------------------------------
// The fixture, parsed independently of the code under test

/// One v2 record batch of an original segment file.
#[derive(Clone, Debug)]
struct Batch {
    pos: usize,
    end: usize,
    first: i64,
    last: i64,
    max_ts: i64,
}

/// One original segment.
struct Segment {
    base: i64,
    /// One past its last offset (the next segment's base offset).
    next: i64,
    log: Vec<u8>,
    batches: Vec<Batch>,
    max_ts: i64,
}

/// A partition as kafka-python wrote it, and what a consumer reads from it.
struct Fixture {
    name: &'static str,
    dir: PathBuf,
    segments: Vec<Segment>,
    records: BTreeMap<i64, Value>,
    committed: BTreeMap<i64, Value>,
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

fn parse_batches(log: &[u8]) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 61 <= log.len() {
        let first = be_i64(log, pos);
        let len = be_i32(log, pos + 8) as usize;
        assert_eq!(log[pos + 16], 2, "the fixtures hold v2 batches only");
        let last = first + be_i32(log, pos + 23) as i64;
        let max_ts = be_i64(log, pos + 35);
        out.push(Batch { pos, end: pos + 12 + len, first, last, max_ts });
        pos += 12 + len;
    }
    assert_eq!(pos, log.len(), "whole batches");
    out
}

fn jsonl(path: &Path) -> BTreeMap<i64, Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["offset"].as_i64().unwrap(), v)
        })
        .collect()
}

impl Fixture {
    fn load(name: &'static str) -> Fixture {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/records");
        let dir = data.join(name);
        let mut bases: Vec<i64> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".log")?.parse().ok())
            .collect();
        bases.sort();
        let mut segments: Vec<Segment> = bases
            .iter()
            .map(|&base| {
                let log = std::fs::read(dir.join(format!("{base:020}.log"))).unwrap();
                let batches = parse_batches(&log);
                let next = batches.last().unwrap().last + 1;
                let max_ts = batches.iter().map(|b| b.max_ts).max().unwrap();
                Segment { base, next, log, batches, max_ts }
            })
            .collect();
        for i in 0..segments.len() - 1 {
            assert_eq!(segments[i].next, segments[i + 1].base, "{name}: gapless offsets");
            segments[i].next = segments[i + 1].base;
        }
        let records = jsonl(&data.join(format!("{name}.read_uncommitted.jsonl")));
        let committed = jsonl(&data.join(format!("{name}.read_committed.jsonl")));
        Fixture { name, dir, segments, records, committed }
    }

    fn active_base(&self) -> i64 {
        self.segments.last().unwrap().base
    }

    fn closed(&self) -> &[Segment] {
        &self.segments[..self.segments.len() - 1]
    }

    /// The original range `[start, next)` of the segment starting at `start` (a remote segment is a copy of
    /// one, perhaps truncated).
    fn range_from(&self, start: i64) -> (i64, i64) {
        let next = self.segments.iter().find(|s| s.base > start).map_or(self.active_base(), |s| s.base);
        (start, next)
    }

    fn segment_of(&self, offset: i64) -> Option<&Segment> {
        self.segments.iter().find(|s| s.base <= offset && offset < s.next)
    }

    /// Record offsets in `[a, b)`.
    fn records_in(&self, a: i64, b: i64) -> impl Iterator<Item = i64> + '_ {
        self.records.range(a..b).map(|(o, _)| *o)
    }
}

// ---------------------------------------------------------------------------------------------------------
// What a step may lose

/// The offsets a step is allowed to lose.
#[derive(Default, Clone, Debug)]
struct Perm {
    /// Half-open ranges whose offsets may be lost.
    any: Vec<(i64, i64, String)>,
    /// Half-open ranges whose offsets may be lost only below every offset still remote afterwards (a delete
    /// of the first remote segment moves the log start).
    below_remote: Vec<(i64, i64, String)>,
}

impl Perm {
    fn add(&mut self, other: Perm) {
        self.any.extend(other.any);
        self.below_remote.extend(other.below_remote);
    }

    fn allows(&self, o: i64, min_remote: Option<i64>) -> bool {
        self.any.iter().any(|(a, b, _)| *a <= o && o < *b)
            || self.below_remote.iter().any(|(a, b, _)| *a <= o && o < *b && min_remote.is_none_or(|m| o < m))
    }
}

// ---------------------------------------------------------------------------------------------------------
// Running rsm

/// A command that ran.
struct Done {
    desc: String,
    code: Option<i32>,
    killed: bool,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Done {
    fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

struct Proc {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    desc: String,
    kind: &'static str,
    start: Instant,
}

/// Ranges of consecutive values of `set` (consecutive as record offsets: control records between do not
/// split a range), for messages.
fn ranges(set: &BTreeSet<i64>) -> String {
    let mut out = Vec::new();
    let mut it = set.iter().copied();
    let Some(mut a) = it.next() else { return "none".into() };
    let mut b = a;
    for o in it {
        if o == b + 1 || (o <= b + 3 && RECORDLESS.with(|r| (b + 1..o).all(|x| r.borrow().contains(&x)))) {
            b = o;
        } else {
            out.push(if a == b { a.to_string() } else { format!("{a}..={b}") });
            a = o;
            b = o;
        }
    }
    out.push(if a == b { a.to_string() } else { format!("{a}..={b}") });
    let n = out.len();
    if n > 12 {
        out.truncate(12);
        out.push(format!("… ({n} ranges)"));
    }
    out.join(",")
}

/// Every `a..=b` in `text`.
fn gap_ranges(text: &str) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("..=") {
        let before: String =
            text[..i].chars().rev().take_while(|c| c.is_ascii_digit()).collect::<String>().chars().rev().collect();
        let after: String = text[i + 3..].chars().take_while(|c| c.is_ascii_digit()).collect();
        if let (Ok(a), Ok(b)) = (before.parse(), after.parse()) {
            out.push((a, b));
        }
    }
    out
}

/// A store object: its path, and the segment its name names (start offset, id), if any.
#[derive(Clone, Debug)]
struct Object {
    path: PathBuf,
    start: Option<i64>,
    id: Option<String>,
    ext: String,
    temporary: bool,
    mtime: Option<std::time::SystemTime>,
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() { walk(&p, out) } else { out.push(p) }
    }
}

fn objects(store: &Path) -> Vec<Object> {
    let mut files = Vec::new();
    walk(store, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let temporary = name.starts_with(".rsm-tmp-");
            // `{start:020}-{id}.{ext}`; a temporary file names its target after the prefix somewhere.
            let core = name.rsplit(".rsm-tmp-").next().unwrap_or(&name).to_string();
            let (start, id, ext) = match name.split_once('-') {
                Some((s, rest)) if !temporary && s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()) => {
                    let (id, ext) = rest.rsplit_once('.').unwrap_or((rest, ""));
                    (s.parse().ok(), Some(id.to_string()), ext.to_string())
                }
                _ => (None, None, core.rsplit_once('.').map_or(String::new(), |(_, e)| e.to_string())),
            };
            let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            Object { path, start, id, ext, temporary, mtime }
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            // A file may go while we copy (nothing runs now, but be lenient): skip it.
            let _ = std::fs::copy(&p, to.join(e.file_name()));
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Figures

#[derive(Default, Debug, Clone)]
struct Figures {
    runs: u64,
    steps: u64,
    commands: u64,
    kills: u64,
    faults: u64,
    checks: u64,
    offsets_checked: u64,
    reads: u64,
    violations: u64,
    /// Checks where a read with the default batch bytes stopped short of what a batch at a time read.
    partial_reads: u64,
    partial_read_example: Option<String>,
}

impl Figures {
    fn add(&mut self, o: &Figures) {
        self.runs += o.runs;
        self.steps += o.steps;
        self.commands += o.commands;
        self.kills += o.kills;
        self.faults += o.faults;
        self.checks += o.checks;
        self.offsets_checked += o.offsets_checked;
        self.reads += o.reads;
        self.violations += o.violations;
        self.partial_reads += o.partial_reads;
        if self.partial_read_example.is_none() {
            self.partial_read_example.clone_from(&o.partial_read_example);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// One run

/// A planned command: its kind (for timing), its arguments, and what it may lose.
struct Planned {
    kind: &'static str,
    args: Vec<String>,
    perm: Perm,
    /// For an audit or sweep: the min age, and whether the objects it deletes are checked.
    sweep_min_age: Option<Duration>,
    /// For a rebuild: its new directory.
    rebuilt: Option<PathBuf>,
    /// For a read: check the records it prints (and with which expectations).
    read_committed: Option<bool>,
}

impl Planned {
    fn new(kind: &'static str, args: Vec<String>) -> Self {
        Planned { kind, args, perm: Perm::default(), sweep_min_age: None, rebuilt: None, read_committed: None }
    }
}

struct Run<'f> {
    fx: &'f Fixture,
    rng: Rng,
    _tmp: tempfile::TempDir,
    root: PathBuf,
    dir: PathBuf,
    store: PathBuf,
    url: String,
    config: PathBuf,
    wrong_config: Option<PathBuf>,
    encrypted: bool,
    md: PathBuf,
    /// The partition number of the directory under test (`dir` is `<topic>-<part>`).
    part: u32,
    dirs_made: usize,
    stale: Vec<PathBuf>,
    /// Record offsets that must still be readable.
    required: BTreeSet<i64>,
    /// Start offsets of segments whose store objects we damaged, or which were written to an empty mount point.
    damaged_starts: BTreeSet<i64>,
    /// A local segment truncated mid-batch: the local log is damaged (engine commands may refuse it).
    local_damaged: bool,
    /// Whether the last check read anything remotely.
    had_remote: bool,
    /// Faults that change what read_committed may print (hand faults, flips, forced deletes, empty stores).
    touched: bool,
    log: Vec<String>,
    /// Holes not reported (see [`Run::soft`]).
    soft: Vec<String>,
    soft_seen: BTreeSet<String>,
    /// Log what each check saw (`RSM_RANDOM_VERBOSE`).
    verbose: bool,
    step: usize,
    est: BTreeMap<&'static str, Duration>,
    fig: Figures,
}

type Check = Result<(), String>;

impl<'f> Run<'f> {
    fn new(fx: &'f Fixture, mut rng: Rng) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let dir = root.join(fx.name);
        copy_dir(&fx.dir, &dir);
        let store = root.join("store");
        std::fs::create_dir(&store).unwrap();
        let url = format!("file://{}", store.display());
        let encrypted = rng.chance(35);
        let layout = if rng.chance(25) { "single" } else { "split" };
        let compression = rng.chance(30);
        let key = |name: &str, byte: u8| {
            let p = root.join(format!("{name}.key"));
            std::fs::write(&p, format!("{byte:02x}").repeat(32)).unwrap();
            p
        };
        let props = |k1: &Path, k2: &Path| {
            let mut s = format!(
                "chunk.size=65536\nfs.fsync=false\nsegment.layout={layout}\ncompression.enabled={compression}\n"
            );
            if encrypted {
                s += &format!(
                    "encryption.enabled=true\nencryption.keys=k1,k2\nencryption.key.id=k1\nencryption.key.k1.file={}\n\
                     encryption.key.k2.file={}\n",
                    k1.display(),
                    k2.display()
                );
            }
            s
        };
        let config = root.join("rsm.properties");
        let mut wrong_config = None;
        if encrypted {
            let (k1, k2) = (key("k1", 0x11), key("k2", 0x22));
            std::fs::write(&config, props(&k1, &k2)).unwrap();
            let (w1, w2) = (key("wrong-k1", 0x5a), key("wrong-k2", 0xa5));
            let w = root.join("wrong-keys.properties");
            std::fs::write(&w, props(&w1, &w2)).unwrap();
            wrong_config = Some(w);
        } else {
            std::fs::write(&config, props(Path::new("-"), Path::new("-"))).unwrap();
        }
        let md = root.join("md-0");
        let required = fx.records.keys().copied().collect();
        let mut run = Run {
            fx,
            rng,
            _tmp: tmp,
            root,
            dir,
            store,
            url,
            config,
            wrong_config,
            encrypted,
            md,
            part: fx.name.rsplit_once('-').unwrap().1.parse().unwrap(),
            dirs_made: 1,
            stale: Vec::new(),
            required,
            damaged_starts: BTreeSet::new(),
            local_damaged: false,
            had_remote: false,
            touched: false,
            log: Vec::new(),
            soft: Vec::new(),
            soft_seen: BTreeSet::new(),
            verbose: std::env::var_os("RSM_RANDOM_VERBOSE").is_some(),
            step: 0,
            est: BTreeMap::new(),
            fig: Figures { runs: 1, ..Figures::default() },
        };
        let cfg = std::fs::read_to_string(&run.config).unwrap().replace('\n', "; ");
        run.log.push(format!(
            "setup: cp -r tests/data/records/{} $T/; mkdir $T/store; $T/rsm.properties = {cfg}",
            fx.name
        ));
        run
    }

    fn t(&self, s: &str) -> String {
        s.replace(&self.root.display().to_string(), "$T")
    }

    fn s(p: &Path) -> String {
        p.display().to_string()
    }

    // --- commands -------------------------------------------------------------------------------------

    fn spawn(&mut self, kind: &'static str, args: &[String]) -> Proc {
        let n = self.fig.commands;
        self.fig.commands += 1;
        let out = self.root.join(format!("cmd-{n}.out"));
        let err = self.root.join(format!("cmd-{n}.err"));
        let bin = std::env::var_os("RSM_RANDOM_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_rsm").into());
        let child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("run rsm");
        let desc = format!("rsm {}", self.t(&args.join(" ")));
        Proc { child, out, err, desc, kind, start: Instant::now() }
    }

    fn wait(&mut self, mut p: Proc, killed: bool) -> Result<Done, String> {
        let status = loop {
            if let Some(s) = p.child.try_wait().unwrap() {
                break s;
            }
            if p.start.elapsed() > HANG {
                let _ = p.child.kill();
                let _ = p.child.wait();
                return Err(format!("`{}` hung: still running after {HANG:?}", p.desc));
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let took = p.start.elapsed();
        let stdout = String::from_utf8_lossy(&std::fs::read(&p.out).unwrap_or_default()).into_owned();
        let stderr = String::from_utf8_lossy(&std::fs::read(&p.err).unwrap_or_default()).into_owned();
        let _ = std::fs::remove_file(&p.out);
        let _ = std::fs::remove_file(&p.err);
        if !killed {
            let e = self.est.entry(p.kind).or_insert(took);
            *e = (*e * 3 + took) / 4;
        }
        let mut desc = p.desc;
        if killed {
            desc += &format!("   [SIGKILL after {:.1} ms]", took.as_secs_f64() * 1e3);
        }
        let d = Done { desc, code: status.code(), killed, stdout, stderr, took };
        if d.code == Some(101) || d.stderr.contains("panicked") {
            return Err(format!("`{}` panicked (exit {:?}): {}", d.desc, d.code, tail(&d.stderr)));
        }
        if d.code.is_none() && !killed {
            return Err(format!("`{}` died of a signal it was not sent: {status:?}: {}", d.desc, tail(&d.stderr)));
        }
        Ok(d)
    }

    /// Runs `args` to its end.
    fn run_cmd(&mut self, kind: &'static str, args: &[String]) -> Result<Done, String> {
        let p = self.spawn(kind, args);
        self.wait(p, false)
    }

    /// A random moment within a run of `kind` (about as long as it usually takes).
    fn kill_delay(&mut self, kind: &'static str) -> Duration {
        let est = self.est.get(kind).copied().unwrap_or(Duration::from_millis(60));
        Duration::from_micros(self.rng.below(est.as_micros() as u64 * 13 / 10 + 1))
    }

    // --- argument lists -----------------------------------------------------------------------------

    fn engine_args(&self, cmd: &str, md: &Path, config: &Path) -> Vec<String> {
        vec![
            cmd.into(),
            Self::s(&self.dir),
            "--store".into(),
            self.url.clone(),
            "--config".into(),
            Self::s(config),
            "--metadata-dir".into(),
            Self::s(md),
        ]
    }

    fn store_args(&self, cmd: &str, config: &Path) -> Vec<String> {
        vec![cmd.into(), "--store".into(), self.url.clone(), "--config".into(), Self::s(config)]
    }

    /// Random retention settings, and the offsets they allow to lose.
    fn retention(&mut self, yes: bool) -> (Vec<String>, Perm) {
        let mut set = Vec::new();
        let mut reach = 0i64; // offsets below may be lost
        let active = self.fx.active_base();
        let oldest_age = now_ms() - self.fx.closed().iter().map(|s| s.max_ts).max().unwrap();
        let r = self.rng.below(100);
        let retention_ms: Option<i64> = match r {
            0..45 => Some(-1),
            45..73 => Some(10_000_000_000_000), // now minus it is before the epoch: time retention off
            73..78 => Some(*self.rng.pick(&[0, 1000, 86_400_000, 604_800_000, 10_000_000_000])),
            78..81 => None, // Kafka's default, 7 days
            _ => Some(100_000_000_000_000),
        };
        match retention_ms {
            Some(ms) => set.push(format!("retention.ms={ms}")),
            None if yes => reach = active, // the operator confirmed the default retention
            None => {}
        }
        if let Some(ms) = retention_ms.filter(|&ms| ms >= 0) {
            // A segment goes when its largest timestamp is older than now minus retention.ms. The choices
            // above are far from the fixture's age (every segment old, or none), so the clock does not matter.
            assert!(ms < oldest_age / 2 || ms > oldest_age * 2 || now_ms() - ms < 0);
            if now_ms() - ms > 0 {
                let first_kept = self.fx.closed().iter().find(|s| s.max_ts > now_ms() - ms).map_or(active, |s| s.base);
                reach = reach.max(first_kept);
            }
        }
        match self.rng.below(100) {
            0..30 => set.push("local.retention.ms=0".into()),
            30..45 => set.push("local.retention.ms=-2".into()),
            45..60 => set.push("local.retention.ms=10000000000000".into()),
            _ => {}
        }
        if self.rng.chance(10) {
            set.push(format!("local.retention.bytes={}", self.rng.below(30_000)));
        }
        match self.rng.below(100) {
            0..3 => {
                set.push("retention.bytes=0".into());
                reach = active;
            }
            3..16 => {
                // The bytes of the newest k segments (the active one included): size retention keeps at least
                // that much, so it may delete a prefix up to where the rest holds no less (minus one segment,
                // as the limit is met by whole segments).
                let segs = &self.fx.segments;
                let k = 1 + self.rng.below(segs.len() as u64 - 1) as usize;
                let bytes: usize = segs[segs.len() - k..].iter().map(|s| s.log.len()).sum();
                set.push(format!("retention.bytes={bytes}"));
                let slack = segs.iter().map(|s| s.log.len()).max().unwrap();
                let p = segs
                    .iter()
                    .map(|s| s.base)
                    .filter(|&b| {
                        let rest: usize = segs.iter().filter(|s| s.base >= b).map(|s| s.log.len()).sum();
                        rest + slack >= bytes
                    })
                    .max()
                    .unwrap()
                    .min(active);
                reach = reach.max(p);
            }
            16..26 => set.push("retention.bytes=-1".into()),
            _ => {}
        }
        let mut perm = Perm::default();
        if reach > 0 {
            perm.any.push((0, reach, format!("retention ({})", set.join(" "))));
        }
        let args = set.into_iter().flat_map(|s| ["--set".to_string(), s]).collect();
        (args, perm)
    }

    fn plan_tier(&mut self, md: &Path, config: &Path) -> Planned {
        let yes = self.rng.chance(50);
        let (sets, perm) = self.retention(yes);
        let mut args = self.engine_args("tier", md, config);
        args.extend(sets);
        if yes {
            args.push("--yes".into());
        }
        Planned { perm, ..Planned::new("tier", args) }
    }

    fn plan_expire(&mut self, md: &Path, config: &Path) -> Planned {
        let (sets, perm) = self.retention(false);
        let mut args = self.engine_args("expire", md, config);
        args.extend(sets);
        Planned { perm, ..Planned::new("expire", args) }
    }

    fn plan_copy(&mut self) -> Planned {
        let args = vec![
            "copy".into(),
            "--dir".into(),
            Self::s(&self.dir),
            "--store".into(),
            self.url.clone(),
            "--config".into(),
            Self::s(&self.config),
        ];
        Planned::new("copy", args)
    }

    fn plan_delete(&mut self, md: &Path) -> Planned {
        let segs: BTreeMap<String, i64> = objects(&self.store)
            .into_iter()
            .filter(|o| self.mine(o))
            .filter(|o| !o.temporary && (o.ext == "manifest" || o.ext == "segment"))
            .filter_map(|o| Some((o.id?, o.start?)))
            .collect();
        let force = self.rng.chance(40);
        let (id, start) = if segs.is_empty() || self.rng.chance(8) {
            ("AAAAAAAAAAAAAAAAAAAAAA".to_string(), None)
        } else {
            let v: Vec<_> = segs.into_iter().collect();
            let (id, start) = self.rng.pick(&v).clone();
            (id, Some(start))
        };
        let mut args = vec!["delete".into(), "--segment".into(), id.clone()];
        args.extend(["--store".into(), self.url.clone(), "--config".into(), Self::s(&self.config)]);
        args.extend(["--metadata-dir".into(), Self::s(md)]);
        if force {
            args.push("--force".into());
            // A segment cut out of the middle may hold the marker of an aborted transaction whose records
            // stay: read_committed then reads them as Kafka would, so its check stops for this partition.
            self.touched = true;
        }
        let mut perm = Perm::default();
        if let Some(start) = start {
            let (a, b) = self.fx.range_from(start);
            if force {
                perm.any.push((a, b, format!("delete --force of segment {id} (from {start})")));
            } else {
                perm.below_remote.push((a, b, format!("delete of segment {id} (from {start}), a log start move")));
            }
        }
        Planned { perm, ..Planned::new("delete", args) }
    }

    fn age(&mut self, long_only: bool) -> Option<&'static str> {
        if long_only {
            return *self.rng.pick(&[None, Some("1h"), Some("7d")]);
        }
        *self.rng.pick(&[None, Some("0s"), Some("0s"), Some("1s"), Some("1h"), Some("7d")])
    }

    fn plan_audit(&mut self, long_only: bool) -> Planned {
        let md = if !self.stale.is_empty() && self.rng.chance(35) {
            self.rng.pick(&self.stale).clone()
        } else {
            self.md.clone()
        };
        let age = self.age(long_only);
        let mut args = vec!["audit".into(), "--metadata-dir".into(), Self::s(&md)];
        args.extend(self.store_args("", &self.config).into_iter().skip(1));
        args.extend(["--delete-orphans".into(), "--yes".into(), "--json".into()]);
        if let Some(a) = age {
            args.extend(["--min-age".into(), a.into()]);
        }
        let min_age = parse_age(age.unwrap_or("1h"));
        Planned { sweep_min_age: Some(min_age), ..Planned::new("audit", args) }
    }

    fn plan_sweep(&mut self, long_only: bool) -> Planned {
        let age = self.age(long_only);
        let mut args = self.store_args("sweep", &self.config);
        args.push("--yes".into());
        if let Some(a) = age {
            args.extend(["--min-age".into(), a.into()]);
        }
        Planned { sweep_min_age: Some(parse_age(age.unwrap_or("1h"))), ..Planned::new("sweep", args) }
    }

    fn plan_rewrap(&mut self, config: &Path) -> Planned {
        let key = if self.rng.chance(50) { "k1" } else { "k2" };
        let mut args = self.store_args("rewrap", config);
        args.extend(["--key".into(), key.into()]);
        Planned::new("rewrap", args)
    }

    fn new_dir(&mut self, what: &str) -> PathBuf {
        self.dirs_made += 1;
        self.root.join(format!("{what}-{}", self.dirs_made))
    }

    fn plan_rebuild(&mut self) -> Planned {
        let new = self.new_dir("md");
        let mut args = self.store_args("rebuild-metadata", &self.config);
        args.extend(["--metadata-dir".into(), Self::s(&new)]);
        Planned { rebuilt: Some(new), ..Planned::new("rebuild", args) }
    }

    fn plan_read(&mut self, config: &Path) -> Planned {
        let closed: Vec<i64> = self.fx.records.range(..self.fx.active_base()).map(|(o, _)| *o).collect();
        let at = *self.rng.pick(&closed);
        let committed = self.rng.chance(20);
        let mut args = self.engine_args("read", &self.md.clone(), config);
        args.extend(["--offset".into(), at.to_string(), "--json".into(), "--max-records".into()]);
        args.push((1 + self.rng.below(300)).to_string());
        if committed {
            args.extend(["--isolation".into(), "read_committed".into()]);
        }
        Planned { read_committed: Some(committed), ..Planned::new("read", args) }
    }

    /// One command for a step (or half of a concurrent pair).
    fn plan_command(&mut self, concurrent: bool) -> Planned {
        let md = self.md.clone();
        let config = self.config.clone();
        loop {
            let p = match self.rng.below(100) {
                0..30 => self.plan_tier(&md, &config),
                30..38 => self.plan_copy(),
                38..52 => self.plan_delete(&md),
                52..62 => self.plan_expire(&md, &config),
                62..72 => self.plan_audit(concurrent),
                72..79 => self.plan_sweep(concurrent),
                79..87 if self.encrypted => self.plan_rewrap(&config),
                87..94 => self.plan_rebuild(),
                94..100 if concurrent => self.plan_read(&config),
                _ => continue,
            };
            return p;
        }
    }

    // --- steps ----------------------------------------------------------------------------------------

    /// Runs one random step; returns what it may lose.
    fn step(&mut self) -> Result<Perm, String> {
        // Now and then keep a copy of the metadata as it is, for a later audit over stale metadata.
        if self.md.exists() && self.rng.chance(10) {
            let stale = self.new_dir("stale-md");
            copy_dir(&self.md.clone(), &stale);
            self.log.push(format!("       (cp -r {} {})", self.t(&Self::s(&self.md)), self.t(&Self::s(&stale))));
            self.stale.push(stale);
        }
        match self.rng.below(100) {
            0..62 => {
                let p = self.plan_command(false);
                let kill = self.rng.chance(25);
                self.command_step(p, kill)
            }
            62..67 => self.remove_local(),
            67..72 => self.truncate_local(),
            72..77 => self.flip(),
            77..83 => self.unmounted(),
            83..88 if self.encrypted => self.wrong_keys(),
            83..88 => self.read_step(),
            _ => self.concurrent(),
        }
    }

    fn command_step(&mut self, p: Planned, kill: bool) -> Result<Perm, String> {
        let before = objects(&self.store);
        let proc = self.spawn(p.kind, &p.args);
        let mut killed = false;
        if kill {
            let delay = self.kill_delay(p.kind);
            std::thread::sleep(delay);
            let mut proc = proc;
            if proc.child.try_wait().unwrap().is_none() {
                let _ = proc.child.kill();
                killed = true;
                self.fig.kills += 1;
            }
            let d = self.wait(proc, killed);
            self.after_command(&p, d, &before, true)
        } else {
            let d = self.wait(proc, false);
            self.after_command(&p, d, &before, true)
        }
    }

    /// Logs a command that ran and checks what is checked of it alone.
    fn after_command(
        &mut self,
        p: &Planned,
        d: Result<Done, String>,
        before: &[Object],
        alone: bool,
    ) -> Result<Perm, String> {
        let d = match d {
            Ok(d) => d,
            Err(e) => {
                self.log.push(format!("{:>4}: rsm {} ...", self.step, self.t(&p.args.join(" "))));
                return Err(e);
            }
        };
        self.log.push(format!(
            "{:>4}: {}   => {}",
            self.step,
            d.desc,
            if d.killed { "killed".to_string() } else { format!("exit {}", d.code.unwrap_or(-1)) }
        ));
        if let Some(committed) = p.read_committed {
            // After a fault that changes transactions (a marker removed by hand or by a forced delete), what
            // read_committed may print is Kafka's reading of the log as it now is, not the fixture's: its
            // records must still be real ones, byte for byte.
            self.check_read_output(&d, committed && !self.touched, None)?;
        }
        if let (Some(min_age), true) = (p.sweep_min_age, alone) {
            self.check_swept(&d, before, min_age)?;
        }
        // A rebuilt log is a snapshot of the store: one made while another command wrote to it may predate
        // those writes (the rebuild fails when it sees the store change under it, but not writes that begin
        // after it ends), so only one made alone is taken up, as an operator would after stopping writers.
        if let Some(new) = &p.rebuilt
            && d.ok()
            && alone
            && self.rng.chance(50)
        {
            self.md = new.clone();
            self.log.push(format!("       (switch to --metadata-dir {})", self.t(&Self::s(new))));
        }
        Ok(p.perm.clone())
    }

    /// An orphan sweep deleted only objects of segments without a manifest, and temporary files, at least
    /// `min_age` old.
    fn check_swept(&self, d: &Done, before: &[Object], min_age: Duration) -> Check {
        let after: BTreeSet<PathBuf> = objects(&self.store).into_iter().map(|o| o.path).collect();
        let committed: BTreeSet<(i64, String)> = before
            .iter()
            .filter(|o| !o.temporary && (o.ext == "manifest" || o.ext == "segment"))
            .filter_map(|o| Some((o.start?, o.id.clone()?)))
            .collect();
        for o in before.iter().filter(|o| !after.contains(&o.path)) {
            let key = o.start.zip(o.id.clone());
            if key.as_ref().is_some_and(|k| committed.contains(k)) {
                return Err(format!(
                    "`{}` deleted {} of a segment whose {} object exists (a committed segment is never an orphan)",
                    d.desc,
                    self.t(&Self::s(&o.path)),
                    if o.ext == "segment" { "one-object .segment" } else { "manifest" }
                ));
            }
            // Its age when the command started (a second of slack: file times are coarse).
            let age = o.mtime.and_then(|t| t.elapsed().ok()).unwrap_or_default();
            if age + Duration::from_secs(1) < min_age.saturating_sub(d.took) {
                return Err(format!(
                    "`{}` deleted {} although --min-age is {min_age:?} and it was {age:?} old",
                    d.desc,
                    self.t(&Self::s(&o.path))
                ));
            }
        }
        Ok(())
    }

    /// Whether a store object is of the partition under test (`…/<topic>-<topic id>/<partition>/<object>`).
    fn mine(&self, o: &Object) -> bool {
        o.path.parent().and_then(|p| p.file_name()).is_some_and(|n| n.to_string_lossy() == self.part.to_string())
    }

    /// The partition's name, `<topic>-<partition>`.
    fn partition_name(&self) -> String {
        format!("{}-{}", self.fx.name.rsplit_once('-').unwrap().0, self.part)
    }

    /// Once every closed offset is gone (retention reached them all), the run goes on over a fresh copy of
    /// the fixture as the topic's next partition, in the same store and metadata.
    fn fresh_partition(&mut self) {
        self.part += 1;
        self.dir = self.root.join(self.partition_name());
        copy_dir(&self.fx.dir, &self.dir);
        self.required = self.fx.records.keys().copied().collect();
        self.damaged_starts.clear();
        self.local_damaged = false;
        self.touched = false;
        self.log.push(format!(
            "       (every closed offset is gone: cp -r tests/data/records/{} $T/{}, the partition under test now)",
            self.fx.name,
            self.partition_name()
        ));
    }

    fn local_log(&self, base: i64) -> PathBuf {
        self.dir.join(format!("{base:020}.log"))
    }

    fn remove_local(&mut self) -> Result<Perm, String> {
        let present: Vec<i64> =
            self.fx.closed().iter().map(|s| s.base).filter(|b| self.local_log(*b).exists()).collect();
        if present.is_empty() {
            return self.truncate_local();
        }
        self.fig.faults += 1;
        self.touched = true;
        let base = *self.rng.pick(&present);
        let prefix = format!("{base:020}.");
        for e in std::fs::read_dir(&self.dir).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        self.log.push(format!("{:>4}: rm $T/{}/{base:020}.*   (by hand)", self.step, self.partition_name()));
        let (a, b) = self.fx.range_from(base);
        Ok(Perm { any: vec![(a, b, format!("local segment {base} removed by hand"))], ..Perm::default() })
    }

    fn truncate_local(&mut self) -> Result<Perm, String> {
        let candidates: Vec<(i64, usize)> = self
            .fx
            .closed()
            .iter()
            .filter_map(|s| Some((s.base, std::fs::metadata(self.local_log(s.base)).ok()?.len() as usize)))
            .filter(|(_, len)| *len > 0)
            .collect();
        if candidates.is_empty() {
            return self.flip();
        }
        self.fig.faults += 1;
        self.touched = true;
        let (base, len) = *self.rng.pick(&candidates);
        let seg = self.fx.segments.iter().find(|s| s.base == base).unwrap();
        let whole: Vec<&Batch> = seg.batches.iter().filter(|b| b.end <= len).collect();
        let path = self.local_log(base);
        let (cut, lost_from, how) = if self.rng.chance(12) || whole.len() < 2 {
            // Raw, anywhere: a batch cut in two, its indexes left as they are.
            let cut = 1 + self.rng.below(len as u64 - 1) as usize;
            let from = seg.batches.iter().find(|b| b.end > cut).map_or(seg.next, |b| b.first);
            self.local_damaged = true;
            (cut, from, "raw, indexes left as they were")
        } else {
            // At a batch boundary, keeping at least one batch, with the indexes cut as a broker's recovery
            // does: offset index entries past the end, time index entries past the last offset, aborted
            // transactions whose marker is gone.
            let keep = 1 + self.rng.below(whole.len() as u64 - 1) as usize;
            let cut = whole[keep].pos;
            let last = whole[keep - 1].last;
            let cut_entries = |ext: &str, size: usize, keep_it: &dyn Fn(&[u8]) -> bool| {
                let p = self.dir.join(format!("{base:020}.{ext}"));
                if let Ok(b) = std::fs::read(&p) {
                    let kept: Vec<u8> =
                        b.chunks(size).filter(|e| e.len() == size && keep_it(e)).flatten().copied().collect();
                    std::fs::write(&p, kept).unwrap();
                }
            };
            cut_entries("index", 8, &|e| be_i32(e, 4) >= 0 && (be_i32(e, 4) as usize) < cut);
            cut_entries("timeindex", 12, &|e| base + be_i32(e, 8) as i64 <= last);
            cut_entries("txnindex", 34, &|e| be_i64(e, 18) <= last);
            (cut, whole[keep].first, "at a batch boundary, indexes cut")
        };
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(cut as u64).unwrap();
        drop(f);
        self.log.push(format!(
            "{:>4}: truncate -s {cut} $T/{}/{base:020}.log   (by hand, {how}; was {len} bytes)",
            self.step,
            self.partition_name()
        ));
        Ok(Perm {
            any: vec![(lost_from, seg.next, format!("local segment {base} truncated by hand"))],
            ..Perm::default()
        })
    }

    fn flip(&mut self) -> Result<Perm, String> {
        let objs: Vec<Object> =
            objects(&self.store).into_iter().filter(|o| self.mine(o) && !o.temporary && o.start.is_some()).collect();
        if objs.is_empty() {
            self.log.push(format!("{:>4}: (nothing in the store to flip a byte of)", self.step));
            return Ok(Perm::default());
        }
        self.fig.faults += 1;
        self.touched = true;
        let o = self.rng.pick(&objs).clone();
        let mut bytes = std::fs::read(&o.path).unwrap();
        if bytes.is_empty() {
            return Ok(Perm::default());
        }
        let at = self.rng.below(bytes.len() as u64) as usize;
        let x = 1 + self.rng.below(255) as u8;
        bytes[at] ^= x;
        std::fs::write(&o.path, &bytes).unwrap();
        let start = o.start.unwrap();
        self.damaged_starts.insert(start);
        self.log.push(format!(
            "{:>4}: flip byte {at} (xor {x:#04x}) of {}   (by hand)",
            self.step,
            self.t(&Self::s(&o.path))
        ));
        let (a, b) = self.fx.range_from(start);
        Ok(Perm { any: vec![(a, b, format!("store object {} damaged by hand", o.ext))], ..Perm::default() })
    }

    /// A step whose store is an empty mount point: the store directory is moved away for the step, and what
    /// the step writes into the empty directory is lost when the "share" is mounted back.
    fn unmounted(&mut self) -> Result<Perm, String> {
        self.fig.faults += 1;
        self.touched = true;
        let md = self.md.clone();
        let config = self.config.clone();
        let p = match self.rng.below(100) {
            0..45 => self.plan_tier(&md, &config),
            45..65 => self.plan_expire(&md, &config),
            65..75 => self.plan_delete(&md),
            75..90 => self.plan_audit(false),
            _ => {
                let mut p = self.plan_rebuild();
                p.rebuilt = None; // never switched to
                p
            }
        };
        let away = self.root.join("store.mounted");
        std::fs::rename(&self.store, &away).unwrap();
        std::fs::create_dir(&self.store).unwrap();
        self.log.push(format!("{:>4}: (the store's share is not mounted: an empty $T/store)", self.step));
        let kill = self.rng.chance(15);
        let r = self.command_step(p, kill);
        let written: Vec<Object> = objects(&self.store);
        let starts: BTreeSet<i64> = written.iter().filter(|o| self.mine(o)).filter_map(|o| o.start).collect();
        self.damaged_starts.extend(starts.iter().copied());
        // With nothing remote before (a first run, or all of it expired), nothing tells the engine that the
        // empty directory is not the store: what it copied there, and deleted locally, is lost with the
        // share mounted back. With segments remote before, the metadata names segments the empty store lacks,
        // and the engine must stop before deleting anything local.
        let r = r.map(|mut perm| {
            if !self.had_remote {
                for &s in &starts {
                    let (a, b) = self.fx.range_from(s);
                    perm.any.push((a, b, "copied to an empty mount point with nothing remote before".into()));
                }
            }
            perm
        });
        std::fs::remove_dir_all(&self.store).unwrap();
        std::fs::rename(&away, &self.store).unwrap();
        self.log.push(format!(
            "       (share mounted back; {} objects written to the empty mount point are hidden again)",
            written.len()
        ));
        r
    }

    /// A command with wrong key files under the right key ids.
    fn wrong_keys(&mut self) -> Result<Perm, String> {
        self.fig.faults += 1;
        let wrong = self.wrong_config.clone().unwrap();
        let md = self.md.clone();
        match self.rng.below(100) {
            0..30 => {
                let p = self.plan_read(&wrong);
                let kill = self.rng.chance(10);
                self.command_step(p, kill)
            }
            30..60 => {
                // Audit with the wrong keys, then with the right ones: a segment the wrong keys cannot open
                // is not lost when the right keys open it (item 5).
                let mut a = vec!["audit".into(), "--metadata-dir".into(), Self::s(&md)];
                a.extend(self.store_args("", &wrong).into_iter().skip(1));
                a.push("--json".into());
                let wrong_run = self.run_cmd("audit", &a)?;
                self.log.push(format!(
                    "{:>4}: {}   => exit {}",
                    self.step,
                    wrong_run.desc,
                    wrong_run.code.unwrap_or(-1)
                ));
                let mut b = vec!["audit".into(), "--metadata-dir".into(), Self::s(&md)];
                b.extend(self.store_args("", &self.config).into_iter().skip(1));
                b.push("--json".into());
                let right = self.run_cmd("audit", &b)?;
                self.log.push(format!("{:>4}: {}   => exit {}", self.step, right.desc, right.code.unwrap_or(-1)));
                let lost = |d: &Done| -> BTreeSet<String> {
                    serde_json::from_str::<Value>(&d.stdout)
                        .ok()
                        .and_then(|v| {
                            Some(
                                v["partitions"]
                                    .as_array()?
                                    .iter()
                                    .flat_map(|p| p["lost"].as_array().cloned().unwrap_or_default())
                                    .filter_map(|l| Some(l["segment_id"].as_str()?.to_string()))
                                    .collect(),
                            )
                        })
                        .unwrap_or_default()
                };
                if right.stdout.trim_start().starts_with('{') {
                    let (w, r) = (lost(&wrong_run), lost(&right));
                    let false_loss: Vec<&String> = w.difference(&r).collect();
                    if !false_loss.is_empty() {
                        return Err(format!(
                            "audit with wrong key files reports segments LOST that the right keys read: {false_loss:?} \
                             (a wrong key is UNVERIFIED, not data loss); its stderr: {}",
                            tail(&wrong_run.stderr)
                        ));
                    }
                }
                Ok(Perm::default())
            }
            60..80 => {
                let p = self.plan_rewrap(&wrong);
                let kill = self.rng.chance(20);
                self.command_step(p, kill)
            }
            _ => {
                let p = self.plan_expire(&md, &wrong);
                let kill = self.rng.chance(20);
                self.command_step(p, kill)
            }
        }
    }

    fn read_step(&mut self) -> Result<Perm, String> {
        let c = self.config.clone();
        let p = self.plan_read(&c);
        self.command_step(p, false)
    }

    /// Two commands at once (the orphan sweeps with a safety age of an hour or more, as an operator running
    /// them beside a tier would), one of them sometimes killed.
    fn concurrent(&mut self) -> Result<Perm, String> {
        self.fig.faults += 1;
        let a = self.plan_command(true);
        let b = self.plan_command(true);
        let before = objects(&self.store);
        let pa = self.spawn(a.kind, &a.args);
        if self.rng.chance(50) {
            std::thread::sleep(Duration::from_micros(self.rng.below(20_000)));
        }
        let pb = self.spawn(b.kind, &b.args);
        let kill_which = if self.rng.chance(20) { Some(self.rng.chance(50)) } else { None };
        let (mut ka, mut kb) = (false, false);
        let (mut pa, mut pb) = (pa, pb);
        if let Some(first) = kill_which {
            let kind = if first { a.kind } else { b.kind };
            let delay = self.kill_delay(kind);
            std::thread::sleep(delay);
            let p = if first { &mut pa } else { &mut pb };
            if p.child.try_wait().unwrap().is_none() {
                let _ = p.child.kill();
                self.fig.kills += 1;
                if first { ka = true } else { kb = true }
            }
        }
        self.log.push(format!("{:>4}: two commands at once:", self.step));
        let da = self.wait(pa, ka);
        let db = self.wait(pb, kb);
        let mut perm = self.after_command(&a, da, &before, false)?;
        perm.add(self.after_command(&b, db, &before, false)?);
        Ok(perm)
    }

    // --- the oracle -----------------------------------------------------------------------------------

    /// Checks a read's output: every record printed is the expected record at its offset, in offset order,
    /// from `from` on. Returns the offsets proven.
    fn check_read_output(&self, d: &Done, committed: bool, from: Option<i64>) -> Result<BTreeSet<i64>, String> {
        let expected = if committed { &self.fx.committed } else { &self.fx.records };
        let start = from.or_else(|| {
            let i = d.desc.find("--offset ")?;
            d.desc[i + 9..].split_whitespace().next()?.parse().ok()
        });
        let mut proven = BTreeSet::new();
        let mut last: Option<i64> = None;
        // A read killed mid-write may leave its last line cut short: only whole lines count then.
        let text = match (d.killed, d.stdout.rfind('\n')) {
            (true, Some(i)) => &d.stdout[..=i],
            (true, None) => "",
            (false, _) => d.stdout.as_str(),
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).map_err(|e| {
                format!("`{}` (exit {:?}) printed a line that is not a JSON record ({e}): {line}", d.desc, d.code)
            })?;
            let o =
                v["offset"].as_i64().ok_or_else(|| format!("`{}` printed a record without offset: {line}", d.desc))?;
            if start.is_some_and(|s| o < s) || last.is_some_and(|l| o <= l) {
                return Err(format!(
                    "`{}` (exit {:?}) printed offset {o} out of order (from {start:?}, after {last:?})",
                    d.desc, d.code
                ));
            }
            match expected.get(&o) {
                Some(e) if *e == v => {}
                Some(e) => {
                    return Err(format!(
                        "`{}` (exit {:?}) printed a wrong record at offset {o}:\n  got      {line}\n  expected {e}",
                        d.desc, d.code
                    ));
                }
                None => {
                    return Err(format!(
                        "`{}` (exit {:?}) printed offset {o}, which no {} record has: {line}",
                        d.desc,
                        d.code,
                        if committed { "committed" } else { "data" }
                    ));
                }
            }
            proven.insert(o);
            last = Some(o);
        }
        Ok(proven)
    }

    /// Record offsets whose batch is whole and unchanged in the partition directory.
    fn local(&self) -> Result<BTreeSet<i64>, String> {
        let mut out = BTreeSet::new();
        for seg in &self.fx.segments {
            let Ok(cur) = std::fs::read(self.local_log(seg.base)) else { continue };
            if cur.len() > seg.log.len() || cur[..] != seg.log[..cur.len()] {
                return Err(format!(
                    "local segment {} changed: {} bytes, not a prefix of the original {} bytes",
                    seg.base,
                    cur.len(),
                    seg.log.len()
                ));
            }
            for b in seg.batches.iter().filter(|b| b.end <= cur.len()) {
                out.extend(self.fx.records_in(b.first, b.last + 1));
            }
        }
        Ok(out)
    }

    fn read_args(&self, at: i64, max: usize, committed: bool, max_bytes: Option<u32>) -> Vec<String> {
        let mut a = self.engine_args("read", &self.md, &self.config);
        a.extend(["--offset".into(), at.to_string(), "--json".into(), "--max-records".into(), max.to_string()]);
        if committed {
            a.extend(["--isolation".into(), "read_committed".into()]);
        }
        if let Some(b) = max_bytes {
            a.extend(["--max-bytes".into(), b.to_string()]);
        }
        a
    }

    /// Reads the offsets of `want` remotely (a read from the first, on to where it stops, then from the next
    /// not read yet, or the next segment's base when a read printed nothing). Returns the offsets proven.
    fn chase(&mut self, want: &BTreeSet<i64>, max_bytes: Option<u32>) -> Result<BTreeSet<i64>, String> {
        let mut proven = BTreeSet::new();
        let active = self.fx.active_base();
        let mut cursor = want.first().copied();
        while let Some(x) = cursor {
            let max = self.fx.records.range(x..active).count() + 5;
            let args = self.read_args(x, max, false, max_bytes);
            let d = self.run_cmd("read", &args)?;
            self.fig.reads += 1;
            let got = self.check_read_output(&d, false, Some(x))?;
            let next_from = match got.last() {
                Some(&y) => y + 1,
                None => self.fx.range_from(self.fx.segment_of(x).map_or(x, |s| s.base)).1,
            };
            proven.extend(got);
            cursor = want.range(next_from.max(x + 1)..).next().copied();
        }
        Ok(proven)
    }

    /// The offsets of `want` that are remote: read as an operator reads (`rsm read`'s default batch bytes per
    /// read); where that stops short, read again a batch at a time (`--max-bytes 1`), so that a damaged batch
    /// does not hide the intact ones a read of many batches at once fails with.
    fn remote(&mut self, want: &BTreeSet<i64>) -> Result<BTreeSet<i64>, String> {
        let mut proven = self.chase(want, None)?;
        let rest: BTreeSet<i64> = want.difference(&proven).copied().collect();
        if rest.is_empty() {
            return Ok(proven);
        }
        let fine = self.chase(&rest, Some(1))?;
        if !fine.is_empty() {
            self.fig.partial_reads += 1;
            if self.fig.partial_read_example.is_none() {
                self.fig.partial_read_example = Some(format!(
                    "step {}: offsets {} read a batch at a time (--max-bytes 1), not with the default batch bytes",
                    self.step,
                    ranges(&fine)
                ));
            }
        }
        proven.extend(fine);
        Ok(proven)
    }

    /// The checks after a step that may lose `perm`.
    fn check(&mut self, perm: &Perm) -> Check {
        self.fig.checks += 1;
        let active = self.fx.active_base();
        let local = self.local()?;
        let floor = self.required.first().copied().unwrap_or(active);
        // Everything from the lowest offset still required is read remotely (what lies below is lost for
        // good), local or not: the remote log's extent and holes are known from the reads, not from the code.
        let want: BTreeSet<i64> = self.fx.records_in(floor, active).collect();
        let remote = self.remote(&want)?;
        let missing: BTreeSet<i64> =
            want.iter().copied().filter(|o| !remote.contains(o) && !local.contains(o)).collect();
        let lost: BTreeSet<i64> = missing.intersection(&self.required).copied().collect();
        self.fig.offsets_checked += self.required.len() as u64;
        let min_remote = remote.first().copied();
        self.had_remote = min_remote.is_some();
        let unallowed: BTreeSet<i64> = lost.iter().copied().filter(|&o| !perm.allows(o, min_remote)).collect();
        if !unallowed.is_empty() {
            let why: Vec<String> = perm
                .any
                .iter()
                .map(|(a, b, w)| format!("{a}..{b} ({w})"))
                .chain(perm.below_remote.iter().map(|(a, b, w)| format!("{a}..{b} below the remote log ({w})")))
                .collect();
            return Err(format!(
                "offsets {} are held nowhere now (not in a whole local segment, `rsm read` does not return them), \
                 and this step was allowed to lose only: {}",
                ranges(&unallowed),
                if why.is_empty() { "nothing".to_string() } else { why.join("; ") }
            ));
        }
        self.required.retain(|o| !lost.contains(o));
        if self.verbose {
            self.log.push(format!(
                "       check: {} local, remote {}, missing {}, newly lost {}, {} required",
                local.len(),
                ranges(&remote),
                ranges(&missing),
                ranges(&lost),
                self.required.len()
            ));
        }

        // Holes: neither local nor remote, between the first remote offset and the active segment.
        if let Some(rx) = min_remote {
            let holes: BTreeSet<i64> = missing.iter().copied().filter(|&o| o > rx).collect();
            let damaged = |o: i64| self.damaged_starts.iter().any(|&s| s <= o && o < self.fx.range_from(s).1);
            let for_offsets: BTreeSet<i64> = holes.iter().copied().filter(|&o| !damaged(o)).collect();
            if !for_offsets.is_empty() {
                let args = self.engine_args("offsets", &self.md, &self.config);
                let d = self.run_cmd("offsets", &args)?;
                if !d.ok() && !self.local_damaged {
                    let first = *for_offsets.first().unwrap();
                    self.soft(format!("offsets failed {first}"), format!(
                        "offsets {} are neither local nor remote (a hole after the remote log start {rx}), and `{}` \
                         failed: {}",
                        ranges(&for_offsets),
                        d.desc,
                        tail(&d.stderr)
                    ));
                }
                if self.verbose {
                    self.log.push(format!("       hole check: {}", d.stdout.lines().nth(1).unwrap_or("").trim()));
                }
                if d.ok() {
                    let gaps = gap_ranges(&d.stdout);
                    let unreported: BTreeSet<i64> = for_offsets
                        .iter()
                        .copied()
                        .filter(|&o| !gaps.iter().any(|(a, b)| *a <= o && o <= *b))
                        .collect();
                    if let Some(&first) = unreported.first() {
                        self.soft(
                            format!("offsets {first}"),
                            format!(
                                "offsets {} are neither local nor remote (a hole after the remote log start {rx}), and \
                             `{}` reports no gap there:\n{}",
                                ranges(&unreported),
                                d.desc,
                                d.stdout.trim_end()
                            ),
                        );
                    }
                }
            }
            let ry = remote.last().copied().unwrap_or(rx);
            let for_audit: BTreeSet<i64> = holes.iter().copied().filter(|&o| o < ry).collect();
            if !for_audit.is_empty() {
                let mut a = vec!["audit".into(), "--metadata-dir".into(), Self::s(&self.md)];
                a.extend(self.store_args("", &self.config).into_iter().skip(1));
                a.push("--json".into());
                let d = self.run_cmd("audit", &a)?;
                let v: Option<Value> = serde_json::from_str(&d.stdout).ok();
                let mut covered: Vec<(i64, i64)> = Vec::new();
                let name = self.partition_name();
                for p in v.iter().flat_map(|v| v["partitions"].as_array().cloned().unwrap_or_default()) {
                    if p["partition"].as_str() != Some(name.as_str()) {
                        continue;
                    }
                    for g in p["gaps"].as_array().cloned().unwrap_or_default() {
                        covered
                            .push((g["first_offset"].as_i64().unwrap_or(-1), g["last_offset"].as_i64().unwrap_or(-2)));
                    }
                    for l in p["lost"].as_array().cloned().unwrap_or_default() {
                        let s = l["start_offset"].as_i64().unwrap_or(-1);
                        covered.push((s, self.fx.range_from(s).1 - 1));
                    }
                }
                if self.verbose {
                    self.log.push(format!("       audit hole check: exit {:?}, covered {covered:?}", d.code));
                }
                let unreported: BTreeSet<i64> =
                    for_audit.iter().copied().filter(|&o| !covered.iter().any(|(a, b)| *a <= o && o <= *b)).collect();
                if d.ok() || !unreported.is_empty() {
                    let first = *unreported.first().or(for_audit.first()).unwrap();
                    self.soft(
                        format!("audit {first}"),
                        format!(
                            "offsets {} are neither local nor remote, between remote offsets {rx} and {ry}, and `{}` \
                         (exit {:?}) does not report {}: {}",
                            ranges(&for_audit),
                            d.desc,
                            d.code,
                            ranges(&unreported),
                            tail(&d.stdout)
                        ),
                    );
                }
            }
        }

        // Now and then, on a run with no faults that change transactions: read_committed prints only committed
        // records, exactly.
        if let (false, Some(rx)) = (self.touched, min_remote)
            && self.rng.chance(15)
        {
            let max = self.fx.committed.range(rx..active).count() + 5;
            let args = self.read_args(rx, max, true, None);
            let d = self.run_cmd("read", &args)?;
            self.fig.reads += 1;
            self.check_read_output(&d, true, Some(rx))?;
        }
        Ok(())
    }

    /// A hole not reported: recorded (once per command and hole) and the run goes on, since the hole stays and
    /// would stop every later step the same way. Holes are of offsets lost in allowed steps (a loss that was
    /// not allowed stops the run before).
    fn soft(&mut self, key: String, what: String) {
        if self.soft_seen.insert(key) {
            self.fig.violations += 1;
            self.soft.push(format!(
                "step {}: {what}
steps so far:\n{}",
                self.step,
                self.log.join("\n")
            ));
        }
    }

    /// Runs `steps` steps, checking after each; returns the first violation.
    fn go(&mut self, steps: usize) -> Result<(), String> {
        self.check(&Perm::default())?;
        for i in 1..=steps {
            self.step = i;
            self.fig.steps += 1;
            let perm = self.step()?;
            if perm.any.iter().any(|(a, b, w)| *a == 0 && *b == self.fx.active_base() && w.starts_with("retention")) {
                self.log.push("       (retention may delete every closed segment)".into());
            }
            self.check(&perm)?;
            if self.required.range(..self.fx.active_base()).next().is_none() {
                self.fresh_partition();
                self.check(&Perm::default())?;
            }
        }
        Ok(())
    }
}

fn tail(s: &str) -> String {
    let s = s.trim();
    let start = s.char_indices().rev().nth(1500).map_or(0, |(i, _)| i);
    s[start..].to_string()
}

fn parse_age(s: &str) -> Duration {
    let (n, unit) = s.split_at(s.len() - 1);
    let n: u64 = n.parse().unwrap();
    Duration::from_secs(
        n * match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            _ => 86_400,
        },
    )
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|s| s.trim().parse().ok())
}

/// One seed: its partition, its steps, and the run.
fn run_seed(seed: u64, steps: Option<usize>, fixtures: &[Fixture], fig: &mut Figures) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let fx = &fixtures[rng.below(fixtures.len() as u64) as usize];
    // Drawn in either case, so that a seed runs the same steps whether or not RSM_RANDOM_STEPS cut it short.
    let drawn = 20 + rng.below(181) as usize;
    let steps = steps.unwrap_or(drawn);
    let t = Instant::now();
    RECORDLESS.with(|r| {
        *r.borrow_mut() = (0..fx.active_base()).filter(|o| !fx.records.contains_key(o)).collect();
    });
    let mut run = Run::new(fx, rng);
    let r = run.go(steps);
    if r.is_err() && std::env::var_os("RSM_RANDOM_KEEP").is_some() {
        let kept = std::mem::replace(&mut run._tmp, tempfile::tempdir().unwrap()).keep();
        eprintln!("seed {seed}: the run's directory ($T) is kept at {}", kept.display());
    }
    if let Some(e) = &mut run.fig.partial_read_example {
        *e = format!("seed {seed}, {e}");
    }
    fig.add(&run.fig);
    if std::env::var_os("RSM_RANDOM_VERBOSE").is_some() {
        eprintln!("{}", run.log.join("\n"));
    }
    eprintln!(
        "seed {seed}: {} ({}{}), {} of {steps} steps, {} kills, {} faults, {:.1}s{}",
        fx.name,
        if run.encrypted { "encrypted, " } else { "" },
        std::fs::read_to_string(&run.config).unwrap().lines().find(|l| l.starts_with("segment.layout")).unwrap_or(""),
        run.fig.steps,
        run.fig.kills,
        run.fig.faults,
        t.elapsed().as_secs_f64(),
        match (r.is_err(), run.soft.len()) {
            (true, _) => ": VIOLATION".to_string(),
            (false, 0) => String::new(),
            (false, n) => format!(": {n} holes not reported"),
        }
    );
    let mut out: Vec<String> = run
        .soft
        .iter()
        .map(|s| format!("VIOLATION (a hole not reported; the run went on): seed {seed} ({}), {s}\n", fx.name))
        .collect();
    out.extend(r.err().map(|why| {
        fig.violations += 1;
        format!(
            "VIOLATION: seed {seed} (RSM_RANDOM_SEED={seed}), step {} of {steps}, over {}:\n{why}\nsteps so far ($T is \
             the run's temporary directory):\n{}\n",
            run.step,
            fx.name,
            run.log.join("\n")
        )
    }));
    out
}

#[test]
fn randomized_operator_sequences_lose_nothing_they_are_not_allowed_to() {
    let fixtures: Vec<Fixture> = FIXTURES.iter().map(|n| Fixture::load(n)).collect();
    for fx in &fixtures {
        assert!(fx.closed().len() >= 4 && fx.records.len() > 500, "{}", fx.name);
    }
    let one = env_u64("RSM_RANDOM_SEED");
    let total = env_u64("RSM_RANDOM_STEPS");
    let t = Instant::now();
    let mut fig = Figures::default();
    let mut violations = Vec::new();
    match (one, total) {
        (Some(seed), None) => violations.extend(run_seed(seed, None, &fixtures, &mut fig)),
        (first, Some(total)) => {
            let mut seed = first.unwrap_or(1000);
            while fig.steps < total {
                let left = total - fig.steps;
                let mut rng = Rng::new(seed ^ 0x5eed);
                let steps = (20 + rng.below(181)).min(left.max(20)) as usize;
                violations.extend(run_seed(seed, Some(steps), &fixtures, &mut fig));
                seed += 1;
            }
        }
        (None, None) => {
            for seed in 1..=DEFAULT_SEEDS {
                violations.extend(run_seed(seed, None, &fixtures, &mut fig));
            }
        }
    }
    eprintln!(
        "randomized operator test: {} runs, {} steps, {} commands, {} kills, {} faults, {} checks, {} offsets \
         checked ({} remote reads), {} violations, {:.1}s",
        fig.runs,
        fig.steps,
        fig.commands,
        fig.kills,
        fig.faults,
        fig.checks,
        fig.offsets_checked,
        fig.reads,
        fig.violations,
        t.elapsed().as_secs_f64()
    );
    if let Some(e) = &fig.partial_read_example {
        eprintln!(
            "note: in {} checks a read of many batches at once (the default --max-bytes) failed as a whole where \
             reads a batch at a time returned intact records, e.g. {e}",
            fig.partial_reads
        );
    }
    if !violations.is_empty() {
        panic!("{} violations:\n\n{}", violations.len(), violations.join("\n"));
    }
}
