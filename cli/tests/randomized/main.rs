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
//!
//! Where things are: this file holds a run (its directory, its steps, its figures) and the test; `fixture`
//! parses the original segments, `files` lists the store's objects from their names, `commands` runs `rsm` and
//! plans the commands a step runs, `steps` does the faults by hand, and `oracle` decides what a step may lose and
//! checks it.

mod commands;
#[path = "../common/mod.rs"]
mod common;
mod files;
mod fixture;
mod oracle;
mod steps;

use common::Rng;
use files::{Object, copy_dir};
use fixture::Fixture;
use oracle::Perm;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
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
