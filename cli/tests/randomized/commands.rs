//! Running `rsm`: a command spawned, waited for (or killed), and what came of it; the commands a step plans,
//! with the offsets each may lose.

use crate::files::{Object, objects};
use crate::oracle::Perm;
use crate::{HANG, Run, now_ms, parse_age, tail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A command that ran.
pub(super) struct Done {
    pub(super) desc: String,
    pub(super) code: Option<i32>,
    pub(super) killed: bool,
    pub(super) stdout: String,
    pub(super) stderr: String,
    pub(super) took: Duration,
}

impl Done {
    pub(super) fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

pub(super) struct Proc {
    pub(super) child: Child,
    pub(super) out: PathBuf,
    pub(super) err: PathBuf,
    pub(super) desc: String,
    pub(super) kind: &'static str,
    pub(super) start: Instant,
}

/// A planned command: its kind (for timing), its arguments, and what it may lose.
pub(super) struct Planned {
    pub(super) kind: &'static str,
    pub(super) args: Vec<String>,
    pub(super) perm: Perm,
    /// For an audit or sweep: the min age, and whether the objects it deletes are checked.
    pub(super) sweep_min_age: Option<Duration>,
    /// For a rebuild: its new directory.
    pub(super) rebuilt: Option<PathBuf>,
    /// For a read: check the records it prints (and with which expectations).
    pub(super) read_committed: Option<bool>,
}

impl Planned {
    pub(super) fn new(kind: &'static str, args: Vec<String>) -> Self {
        Planned { kind, args, perm: Perm::default(), sweep_min_age: None, rebuilt: None, read_committed: None }
    }
}

impl Run<'_> {
    pub(super) fn spawn(&mut self, kind: &'static str, args: &[String]) -> Proc {
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

    pub(super) fn wait(&mut self, mut p: Proc, killed: bool) -> Result<Done, String> {
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
    pub(super) fn run_cmd(&mut self, kind: &'static str, args: &[String]) -> Result<Done, String> {
        let p = self.spawn(kind, args);
        self.wait(p, false)
    }

    /// A random moment within a run of `kind` (about as long as it usually takes).
    pub(super) fn kill_delay(&mut self, kind: &'static str) -> Duration {
        let est = self.est.get(kind).copied().unwrap_or(Duration::from_millis(60));
        Duration::from_micros(self.rng.below(est.as_micros() as u64 * 13 / 10 + 1))
    }

    // --- argument lists -----------------------------------------------------------------------------

    pub(super) fn engine_args(&self, cmd: &str, md: &Path, config: &Path) -> Vec<String> {
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

    pub(super) fn store_args(&self, cmd: &str, config: &Path) -> Vec<String> {
        vec![cmd.into(), "--store".into(), self.url.clone(), "--config".into(), Self::s(config)]
    }

    /// Random retention settings, and the offsets they allow to lose.
    pub(super) fn retention(&mut self, yes: bool) -> (Vec<String>, Perm) {
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

    pub(super) fn plan_tier(&mut self, md: &Path, config: &Path) -> Planned {
        let yes = self.rng.chance(50);
        let (sets, perm) = self.retention(yes);
        let mut args = self.engine_args("tier", md, config);
        args.extend(sets);
        if yes {
            args.push("--yes".into());
        }
        Planned { perm, ..Planned::new("tier", args) }
    }

    pub(super) fn plan_expire(&mut self, md: &Path, config: &Path) -> Planned {
        let (sets, perm) = self.retention(false);
        let mut args = self.engine_args("expire", md, config);
        args.extend(sets);
        Planned { perm, ..Planned::new("expire", args) }
    }

    pub(super) fn plan_copy(&mut self) -> Planned {
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

    pub(super) fn plan_delete(&mut self, md: &Path) -> Planned {
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

    pub(super) fn age(&mut self, long_only: bool) -> Option<&'static str> {
        if long_only {
            return *self.rng.pick(&[None, Some("1h"), Some("7d")]);
        }
        *self.rng.pick(&[None, Some("0s"), Some("0s"), Some("1s"), Some("1h"), Some("7d")])
    }

    pub(super) fn plan_audit(&mut self, long_only: bool) -> Planned {
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

    pub(super) fn plan_sweep(&mut self, long_only: bool) -> Planned {
        let age = self.age(long_only);
        let mut args = self.store_args("sweep", &self.config);
        args.push("--yes".into());
        if let Some(a) = age {
            args.extend(["--min-age".into(), a.into()]);
        }
        Planned { sweep_min_age: Some(parse_age(age.unwrap_or("1h"))), ..Planned::new("sweep", args) }
    }

    pub(super) fn plan_rewrap(&mut self, config: &Path) -> Planned {
        let key = if self.rng.chance(50) { "k1" } else { "k2" };
        let mut args = self.store_args("rewrap", config);
        args.extend(["--key".into(), key.into()]);
        Planned::new("rewrap", args)
    }

    pub(super) fn new_dir(&mut self, what: &str) -> PathBuf {
        self.dirs_made += 1;
        self.root.join(format!("{what}-{}", self.dirs_made))
    }

    pub(super) fn plan_rebuild(&mut self) -> Planned {
        let new = self.new_dir("md");
        let mut args = self.store_args("rebuild-metadata", &self.config);
        args.extend(["--metadata-dir".into(), Self::s(&new)]);
        Planned { rebuilt: Some(new), ..Planned::new("rebuild", args) }
    }

    pub(super) fn plan_read(&mut self, config: &Path) -> Planned {
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
    pub(super) fn plan_command(&mut self, concurrent: bool) -> Planned {
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

    pub(super) fn command_step(&mut self, p: Planned, kill: bool) -> Result<Perm, String> {
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
    pub(super) fn after_command(
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
}
