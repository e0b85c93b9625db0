//! `rsm tier`: the tiering engine run over partition directories, once or (`--watch`) until stopped, or
//! (`--dry-run`) its plan printed. A run (of `tier` or `expire`) that would delete data by a retention time
//! nobody set (no `retention.ms`: Kafka's default of 7 days) prints its plan and stops without `--yes`. A run
//! ends with the requests and bytes of each topic (and what they cost, with the `cost.*` prices set);
//! `--watch --metrics-addr` serves them to Prometheus.

use super::engine::Engine;
use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, human, out};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rsm_core::{Error, RemoteLogSegmentState, TopicIdPartition};
use rsm_engine::{RunPlan, RunReport, Totals};
use rsm_tiering::{ExpiryReason, LocalDeletionReason};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The arguments of `rsm tier`.
#[derive(Args)]
pub struct TierArgs {
    /// Partition directories (`topic-partition`).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The engine's store, settings and metadata.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Keep running: each partition again every remote.log.manager.task.interval.ms (default 30 s),
    /// following new segments, until the process is stopped.
    #[arg(long)]
    pub watch: bool,
    /// Print, per partition, what a run would copy, delete remotely and delete locally (offsets, bytes
    /// and the setting that makes each due), and change nothing.
    #[arg(long, conflicts_with = "watch")]
    pub dry_run: bool,
    /// With --watch: serve the requests and bytes of each topic (and with the cost.* prices set, what
    /// the requests cost) in Prometheus's text format on GET /metrics at HOST:PORT (port 0: a free
    /// one, printed at the start).
    #[arg(long, value_name = "HOST:PORT", requires = "watch")]
    pub metrics_addr: Option<String>,
    /// Run even when it would delete data by Kafka's default retention time of 7 days (retention.ms
    /// not set): copy segments and delete them in the same run (a first run over old records), or
    /// delete remote or local segments older than the default. Without it, or retention.ms set
    /// explicitly, such a run prints its plan and stops, changing nothing.
    #[arg(long)]
    pub yes: bool,
}

/// Runs `rsm tier` over `dirs`: with `dry_run` the plan only; else, unless `yes` or the retention time is
/// set explicitly, the plan first, and the run refused when it would delete data by the default retention
/// ([`refuse_untold_deletions`]).
pub fn run(
    o: &mut Out,
    dirs: &[PathBuf],
    engine: &EngineArgs,
    watch: bool,
    dry_run: bool,
    yes: bool,
    metrics_addr: Option<&str>,
) -> CmdResult {
    if dry_run {
        return tier_plan(o, dirs, engine);
    }
    refuse_untold_deletions(o, dirs, engine, RunKind::Tier, yes)?;
    tier_command(o, dirs, engine, watch, metrics_addr)
}

/// Which command a plan is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum RunKind {
    /// `rsm tier`: copies, then expires.
    Tier,
    /// `rsm expire`: expires only, copying nothing.
    Expire,
}

/// What a run would delete by retention when nobody set the retention time (Kafka's default of 7 days
/// applies).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Untold {
    /// Remote segments the run would copy and then delete by retention (time or size) in the same run: their
    /// data would exist nowhere afterwards.
    copied_then_expired: usize,
    /// Remote segments deleted because they are older than the (default) retention time.
    remote: usize,
    /// Local segments deleted by the (default) retention time: older than it, or below the log start
    /// offset it moves.
    local: usize,
}

impl Untold {
    fn any(&self) -> bool {
        self.copied_then_expired > 0 || self.remote > 0 || self.local > 0
    }

    fn add(&mut self, other: Untold) {
        self.copied_then_expired += other.copied_then_expired;
        self.remote += other.remote;
        self.local += other.local;
    }
}

/// What of `plan` deletes data by the retention time (remote segments older than it, local segments older
/// than it or below the log start it moves), and what it would copy and delete by retention at once; local
/// deletions by time count only when `local_told` is false (no `local.retention.ms` of its own, so the
/// retention time governs the local log too).
fn untold_deletions(plan: &RunPlan, local_told: bool) -> Untold {
    let remote = plan.expiration.expired.iter().filter(|(_, why)| *why == ExpiryReason::Time).count();
    let copied_then_expired = plan.copied_then_expired().len();
    let local = plan
        .expiration
        .local
        .iter()
        .filter(|d| match d.reason {
            LocalDeletionReason::LogStart => true,
            LocalDeletionReason::Time => !local_told,
            LocalDeletionReason::Size => false,
        })
        .count();
    Untold { copied_then_expired, remote, local }
}

/// `plan` (of a `tier` run: its copies, then its expiration over them) as an `expire` run does it: without
/// the copies, so without deleting the segments they would copy, remotely or locally.
fn expire_only(plan: &RunPlan) -> RunPlan {
    let copying: Vec<i64> = plan.copy.iter().flat_map(|c| &c.segments).map(|c| c.base_offset).collect();
    let mut out = plan.clone();
    out.copy = None;
    out.expiration.expired.retain(|(m, _)| !copying.contains(&m.start_offset));
    out.expiration.local.retain(|d| !copying.contains(&d.base_offset));
    out
}

/// Whether the settings give the local log a retention time of its own (`local.retention.ms` or
/// `log.local.retention.ms`, other than -2, which takes the retention time).
fn local_retention_told(engine: &EngineArgs) -> CmdResult<bool> {
    let settings = crate::settings::settings(engine.config.as_ref(), &engine.set)?;
    Ok(["local.retention.ms", "log.local.retention.ms"]
        .iter()
        .any(|k| settings.get(*k).is_some_and(|v| v.trim() != "-2")))
}

/// The plan-and-stop guard of `tier` and `expire`: unless `yes` or the retention time is set explicitly
/// (`retention.ms`, or the broker's `log.retention.*`), a run that would delete data by the retention time
/// (Kafka's default of 7 days, which the operator never named) prints its plan for each partition where it
/// would, and is refused (exit status 1) with nothing changed. A first run over old records (copy, then
/// delete at once) is one such run; so is any later run whose records have aged past the default.
pub(crate) fn refuse_untold_deletions(
    o: &mut Out,
    dirs: &[PathBuf],
    engine: &EngineArgs,
    kind: RunKind,
    yes: bool,
) -> CmdResult {
    if yes || engine.retention_explicit()? {
        return Ok(());
    }
    let local_told = local_retention_told(engine)?;
    let (e, _) = open_plan(engine)?;
    let rt = rsm_facade::runtime();
    let mut total = Untold::default();
    for (tp, dir) in e.add(dirs)?.iter().zip(dirs) {
        let plan = rt.block_on(e.manager.plan_partition(tp))?;
        let plan = match kind {
            RunKind::Tier => plan,
            RunKind::Expire => expire_only(&plan),
        };
        let u = untold_deletions(&plan, local_told);
        if u.any() {
            for line in plan_lines(tp, dir, &plan) {
                out!(o, "{line}");
            }
        }
        total.add(u);
    }
    e.close()?;
    if !total.any() {
        return Ok(());
    }
    let what = if total.copied_then_expired > 0 {
        format!(
            "this run would copy {n} segments and then delete them by retention in the same run (retention.ms \
             not set: Kafka's default keeps 7 days, and their records are older), so their data would exist \
             nowhere afterwards",
            n = total.copied_then_expired
        )
    } else {
        format!(
            "this run would delete {} remote and {} local segments by retention.ms, which is not set: Kafka's \
             default of 7 days applies, and their records are older",
            total.remote, total.local
        )
    };
    Err(Error::invalid(format!(
        "{what} (the plan is above). Set retention.ms explicitly (--set retention.ms=-1 keeps everything) or add \
         --yes to delete by the default; nothing was changed"
    ))
    .into())
}

/// Opens the engine to plan a run, creating nothing: a `file://` store whose directory does not exist and
/// that a run would create (`fs.root.create=true`) is planned as the empty store it would be, and the
/// second value says so.
fn open_plan(engine: &EngineArgs) -> CmdResult<(Engine, Option<String>)> {
    let settings = crate::settings::settings(engine.config.as_ref(), &engine.set)?;
    let create = settings.get("fs.root.create").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let root = engine.store.trim().strip_prefix("file://").map(PathBuf::from);
    match root {
        Some(root) if create && !root.exists() => {
            // The plan reads the partition directories and the metadata; a store that does not exist yet
            // holds nothing, as an empty one in memory does (without the filesystem store's own settings).
            let set = settings.iter().filter(|(k, _)| !k.starts_with("fs.")).map(|(k, v)| format!("{k}={v}")).collect();
            let stand_in = EngineArgs { store: "memory:".to_string(), config: None, set, ..engine.clone() };
            let note = format!(
                "store directory {} does not exist: a run creates it (fs.root.create=true); this plan created nothing",
                root.display()
            );
            Ok((stand_in.open_plan()?, Some(note)))
        }
        _ => Ok((engine.open_plan()?, None)),
    }
}

/// The bytes of the segments copied and not deleted, by topic, of the partitions `e` serves, as their
/// metadata gives them (Kafka's segment sizes: what the store holds besides, indexes and manifests, is
/// small; compression is not accounted). No request to the store.
fn stored_by_topic(e: &Engine) -> BTreeMap<String, u64> {
    let rt = rsm_facade::runtime();
    let mut out = BTreeMap::new();
    for (tp, _, _) in e.manager.partitions() {
        let Ok(segments) = rt.block_on(e.manager.metadata().list_remote_log_segments(&tp)) else { continue };
        let bytes: u64 = segments
            .iter()
            .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
            .map(|m| m.segment_size_in_bytes.max(0) as u64)
            .sum();
        *out.entry(tp.topic_partition.topic.clone()).or_default() += bytes;
    }
    out
}

/// Prints the requests and bytes of each topic so far, and with a price table what they cost.
fn print_topic_costs(o: &mut Out, e: &Engine) -> CmdResult {
    let store = e.store();
    let (level, topics) = store.requests_by_topic();
    let stored = if store.prices().is_some() { stored_by_topic(e) } else { BTreeMap::new() };
    for line in crate::metrics::topic_lines(level, &topics, store.prices(), &stored) {
        out!(o, "{line}");
    }
    Ok(())
}

/// A line for each copy a run kept although another copy covers its offsets, because that other copy does
/// not read back whole: the store holds damage an operator must see (`rsm audit`).
pub(crate) fn kept_duplicate_lines(
    tp: &TopicIdPartition,
    e: &rsm_engine::expiration::ExpirationOutcome,
) -> Vec<String> {
    e.kept_duplicates
        .iter()
        .map(|(m, why)| {
            format!(
                "{tp}: kept segment {} (offsets {}..={}), a copy another copy covers, as the only intact one: {why} \
                 (`rsm audit` lists the damage)",
                m.remote_log_segment_id.id, m.start_offset, m.end_offset
            )
        })
        .collect()
}

/// One line of a run's summary.
fn summary(tp: &TopicIdPartition, dir: &Path, r: &RunReport) -> String {
    let bytes: u64 = r.copy.copied.iter().map(|m| m.segment_size_in_bytes.max(0) as u64).sum();
    let stop = match r.copy.stop {
        Some(rsm_tiering::CopyStop::ActiveSegment) | None => String::new(),
        Some(rsm_tiering::CopyStop::Delayed { base_offset }) => format!(", copy delayed from offset {base_offset}"),
        Some(rsm_tiering::CopyStop::NotStable { base_offset }) => format!(", not stable from offset {base_offset}"),
    };
    let e = &r.expiration;
    let gaps = match e.gaps.first() {
        None => String::new(),
        Some(g) => format!(
            ", remote log gap at offsets {}..={} ({} in all): local segments from there are kept",
            g.start,
            g.end,
            e.gaps.len()
        ),
    };
    format!(
        "{tp} ({}): copied {} segments ({bytes} bytes), expired {} remote, deleted {} local, retried {} deletions, \
         removed {} unfinished copies, {} failed deletions, indexed {}{stop}{gaps}",
        dir.display(),
        r.copy.copied.len(),
        e.expired.len(),
        e.local_deleted.len(),
        e.retried.len(),
        e.abandoned_copies.len(),
        e.failed,
        r.indexed,
    )
}

/// What a run would do to the partition in `dir`, a line each: the segments it copies, the remote segments
/// it deletes and the local segments it deletes (offsets, bytes, and the setting that makes each due).
fn plan_lines(tp: &TopicIdPartition, dir: &Path, plan: &RunPlan) -> Vec<String> {
    let mut out = Vec::new();
    let local_bytes = |base: i64| std::fs::metadata(dir.join(format!("{base:020}.log"))).map_or(0, |m| m.len());
    for c in plan.copy.iter().flat_map(|c| &c.segments) {
        out.push(format!(
            "{tp}\tcopy\t{}..={}\t{} bytes\ta closed segment of a tiered topic (remote.storage.enable, remote.copy.lag.*)",
            c.base_offset, c.end_offset, c.size_bytes
        ));
    }
    let e = &plan.expiration;
    for m in &e.unfinished_copies {
        out.push(format!(
            "{tp}\tremove unfinished copy\t{}..={}\t{}",
            m.start_offset, m.end_offset, m.remote_log_segment_id.id
        ));
    }
    for m in &e.unfinished_deletions {
        out.push(format!(
            "{tp}\tfinish deletion\t{}..={}\t{}",
            m.start_offset, m.end_offset, m.remote_log_segment_id.id
        ));
    }
    for m in &e.duplicates {
        out.push(format!(
            "{tp}\tdelete remote duplicate\t{}..={}\t{} bytes\tanother copy holds these offsets (segment {}, once that \
             copy reads back whole)",
            m.start_offset, m.end_offset, m.segment_size_in_bytes, m.remote_log_segment_id.id
        ));
    }
    for (m, why) in &e.expired {
        let why = match why {
            ExpiryReason::Time => "older than retention.ms",
            ExpiryReason::Size => "over retention.bytes",
            ExpiryReason::LogStart => "below the log start offset",
        };
        out.push(format!(
            "{tp}\tdelete remote\t{}..={}\t{} bytes\t{why}",
            m.start_offset, m.end_offset, m.segment_size_in_bytes
        ));
    }
    for d in &e.local {
        let why = match d.reason {
            LocalDeletionReason::Time => "older than local.retention.ms, and remote",
            LocalDeletionReason::Size => "over local.retention.bytes, and remote",
            LocalDeletionReason::LogStart => "below the log start offset (its records expired)",
        };
        out.push(format!(
            "{tp}\tdelete local\t{}..={}\t{} bytes\t{why}",
            d.base_offset,
            d.end_offset,
            local_bytes(d.base_offset)
        ));
    }
    if let Some(g) = e.gaps.first() {
        out.push(format!(
            "{tp}\tgap\t{}..={}\tno copied segment holds these offsets: local segments from here are kept",
            g.start, g.end
        ));
    }
    if out.is_empty() {
        out.push(format!("{tp}\tnothing to do"));
    }
    out
}

/// Prints what a run over `dirs` would do (`--dry-run`), partition by partition. Changes nothing, and creates
/// nothing: not the store's directory either.
fn tier_plan(o: &mut Out, dirs: &[PathBuf], args: &EngineArgs) -> CmdResult {
    let (e, note) = open_plan(args)?;
    if let Some(note) = note {
        out!(o, "{note}");
    }
    let rt = rsm_facade::runtime();
    for (tp, dir) in e.add(dirs)?.iter().zip(dirs) {
        let plan = rt.block_on(e.manager.plan_partition(tp))?;
        for line in plan_lines(tp, dir, &plan) {
            out!(o, "{line}");
        }
    }
    e.close()?;
    Ok(())
}

/// `rsm tier`: one run of every partition, or the scheduler until the process is stopped.
fn tier_command(o: &mut Out, dirs: &[PathBuf], args: &EngineArgs, watch: bool, metrics: Option<&str>) -> CmdResult {
    let e = args.open(dirs)?;
    let tps = e.add(dirs)?;
    let rt = rsm_facade::runtime();
    out!(o, "tiering {} partitions to {} (metadata in {})", tps.len(), args.store, e.metadata_dir.display());
    if let Some(addr) = metrics {
        let bound = crate::metrics::serve(addr, e.shared_store())?;
        out!(o, "serving the requests and bytes of each topic on http://{bound}/metrics");
    }
    if !watch {
        let mut failures = 0;
        let pb = ProgressBar::new_spinner();
        pb.set_style(ProgressStyle::with_template("{spinner} {msg} {bytes} {bytes_per_sec}").expect("valid template"));
        pb.set_message("copying");
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
        let bar = pb.clone();
        e.manager.on_segment_copied(Arc::new(move |_, md| bar.inc(md.segment_size_in_bytes.max(0) as u64)));
        let results = rt.block_on(e.manager.run_all());
        pb.finish_and_clear();
        let t = e.manager.totals();
        let mut permanent = 0;
        for (tp, r) in &results {
            let dir =
                e.manager.partitions().into_iter().find(|(t, _, _)| t == tp).map(|(_, d, _)| d).unwrap_or_default();
            match r {
                Ok(r) => {
                    out!(o, "{}", summary(tp, &dir, r));
                    for line in kept_duplicate_lines(tp, &r.expiration) {
                        out!(o, "{line}");
                    }
                    // A damaged copy: a rerun keeps the duplicate the same way until it is mended.
                    if !r.expiration.kept_duplicates.is_empty() {
                        failures += 1;
                        permanent += 1;
                    }
                }
                Err(err) => {
                    failures += 1;
                    if !err.is_transient() {
                        permanent += 1;
                    }
                    let copied = t.iter().find(|(p, _)| p == tp).map_or(0, |(_, t)| t.copied);
                    out!(
                        o,
                        "{tp} ({}): FAILED after copying {copied} segments (recorded; a rerun does not copy them again): {}",
                        dir.display(),
                        err.full_message()
                    );
                }
            }
        }
        out!(
            o,
            "total: copied {} segments ({}), deleted {} remote and {} local, {failures} partitions failed",
            t.iter().map(|(_, t)| t.copied).sum::<u64>(),
            human(t.iter().map(|(_, t)| t.copied_bytes).sum()),
            t.iter().map(|(_, t)| t.remote_deleted).sum::<u64>(),
            t.iter().map(|(_, t)| t.local_deleted).sum::<u64>(),
        );
        print_topic_costs(o, &e)?;
        e.close()?;
        return match (failures, permanent) {
            (0, _) => Ok(()),
            (n, 0) => Err(Error::retriable(
                format!("{n} of {} partitions failed (a rerun retries them)", results.len()),
                "see above",
            )
            .into()),
            // A damaged local segment, a refused setting: a rerun fails the same way until it is mended.
            (n, p) => Err(Error::invalid(format!(
                "{n} of {} partitions failed, {p} of them for a reason a rerun does not mend (listed above)",
                results.len()
            ))
            .into()),
        };
    }
    e.manager.start(rt.handle())?;
    let mut last: Vec<(TopicIdPartition, Totals)> = Vec::new();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let now = e.manager.totals();
        for (tp, t) in &now {
            let before = last.iter().find(|(p, _)| p == tp).map(|(_, t)| t.clone()).unwrap_or_default();
            // A line when a run changed something (or failed), not for every quiet run.
            let quiet = Totals { runs: before.runs, failed_runs: before.failed_runs, ..t.clone() } == before;
            if t.runs != before.runs && !quiet {
                match &t.last_error {
                    Some(err) => out!(o, "{tp}: run {} FAILED: {err}", t.runs),
                    None => out!(
                        o,
                        "{tp}: run {}: copied {} segments in all ({}), deleted {} remote and {} local",
                        t.runs,
                        t.copied,
                        human(t.copied_bytes),
                        t.remote_deleted,
                        t.local_deleted
                    ),
                }
            }
        }
        last = now;
    }
}
