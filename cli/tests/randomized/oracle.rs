//! The oracle: what a step may lose, and the checks after it, trusting nothing the code under test says about
//! what exists (records are read back with `rsm read` and compared with the fixture's `.jsonl`).

use crate::commands::Done;
use crate::files::{Object, objects};
use crate::{Check, RECORDLESS, Run, tail};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// The offsets a step is allowed to lose.
#[derive(Default, Clone, Debug)]
pub(super) struct Perm {
    /// Half-open ranges whose offsets may be lost.
    pub(super) any: Vec<(i64, i64, String)>,
    /// Half-open ranges whose offsets may be lost only below every offset still remote afterwards (a delete
    /// of the first remote segment moves the log start).
    pub(super) below_remote: Vec<(i64, i64, String)>,
}

impl Perm {
    pub(super) fn add(&mut self, other: Perm) {
        self.any.extend(other.any);
        self.below_remote.extend(other.below_remote);
    }

    pub(super) fn allows(&self, o: i64, min_remote: Option<i64>) -> bool {
        self.any.iter().any(|(a, b, _)| *a <= o && o < *b)
            || self.below_remote.iter().any(|(a, b, _)| *a <= o && o < *b && min_remote.is_none_or(|m| o < m))
    }
}

/// Ranges of consecutive values of `set` (consecutive as record offsets: control records between do not
/// split a range), for messages.
pub(super) fn ranges(set: &BTreeSet<i64>) -> String {
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
pub(super) fn gap_ranges(text: &str) -> Vec<(i64, i64)> {
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

impl Run<'_> {
    /// An orphan sweep deleted only objects of segments without a manifest, and temporary files, at least
    /// `min_age` old.
    pub(super) fn check_swept(&self, d: &Done, before: &[Object], min_age: Duration) -> Check {
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

    /// Checks a read's output: every record printed is the expected record at its offset, in offset order,
    /// from `from` on. Returns the offsets proven.
    pub(super) fn check_read_output(
        &self,
        d: &Done,
        committed: bool,
        from: Option<i64>,
    ) -> Result<BTreeSet<i64>, String> {
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
    pub(super) fn local(&self) -> Result<BTreeSet<i64>, String> {
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

    pub(super) fn read_args(&self, at: i64, max: usize, committed: bool, max_bytes: Option<u32>) -> Vec<String> {
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
    pub(super) fn chase(&mut self, want: &BTreeSet<i64>, max_bytes: Option<u32>) -> Result<BTreeSet<i64>, String> {
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
    pub(super) fn remote(&mut self, want: &BTreeSet<i64>) -> Result<BTreeSet<i64>, String> {
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
    pub(super) fn check(&mut self, perm: &Perm) -> Check {
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
    pub(super) fn soft(&mut self, key: String, what: String) {
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
}
