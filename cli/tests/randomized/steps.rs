//! The faults a step does by hand (a local segment removed or truncated, a store byte flipped, an empty
//! mount point, wrong key files) and the steps that run commands in other ways (a read, two at once).

use crate::commands::Done;
use crate::files::{Object, objects};
use crate::fixture::{Batch, be_i32, be_i64};
use crate::oracle::Perm;
use crate::{Run, tail};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

impl Run<'_> {
    pub(super) fn local_log(&self, base: i64) -> PathBuf {
        self.dir.join(format!("{base:020}.log"))
    }

    pub(super) fn remove_local(&mut self) -> Result<Perm, String> {
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

    pub(super) fn truncate_local(&mut self) -> Result<Perm, String> {
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

    pub(super) fn flip(&mut self) -> Result<Perm, String> {
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
    pub(super) fn unmounted(&mut self) -> Result<Perm, String> {
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
    pub(super) fn wrong_keys(&mut self) -> Result<Perm, String> {
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

    pub(super) fn read_step(&mut self) -> Result<Perm, String> {
        let c = self.config.clone();
        let p = self.plan_read(&c);
        self.command_step(p, false)
    }

    /// Two commands at once (the orphan sweeps with a safety age of an hour or more, as an operator running
    /// them beside a tier would), one of them sometimes killed.
    pub(super) fn concurrent(&mut self) -> Result<Perm, String> {
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
}
