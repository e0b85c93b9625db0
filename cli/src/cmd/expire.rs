//! `rsm expire`: remote and local retention applied now, without copying. A run that would delete data by
//! the default retention time (no `retention.ms` set) prints its plan and stops without `--yes`, as `rsm
//! tier` does.

use super::engine::EngineArgs;
use super::tier::{RunKind, kept_duplicate_lines, refuse_untold_deletions};
use crate::exit::CmdResult;
use crate::output::{Out, out};
use clap::Args;
use std::path::PathBuf;

/// The arguments of `rsm expire`.
#[derive(Args)]
pub struct ExpireArgs {
    /// Partition directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The engine's store, settings and metadata.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Run even when it would delete remote or local segments by Kafka's default retention time of
    /// 7 days (retention.ms not set); without it, or retention.ms set explicitly, such a run prints its
    /// plan and stops, changing nothing.
    #[arg(long)]
    pub yes: bool,
}

/// Applies retention to the partitions in `dirs` and prints, a line each, what it deleted; first, unless
/// `yes` or the retention time is set explicitly, refuses (with the plan printed, nothing changed) a run that
/// would delete data by Kafka's default retention time.
pub fn run(o: &mut Out, dirs: &[PathBuf], engine: &EngineArgs, yes: bool) -> CmdResult {
    refuse_untold_deletions(o, dirs, engine, RunKind::Expire, yes)?;
    let e = engine.open(dirs)?;
    let rt = rsm_facade::runtime();
    let mut kept = 0;
    for (tp, dir) in e.add(dirs)?.iter().zip(dirs) {
        let x = rt.block_on(e.manager.expire_partition(tp))?;
        kept += x.kept_duplicates.len();
        out!(
            o,
            "{tp} ({}): expired {} remote, deleted {} local, retried {} deletions, removed {} unfinished copies, {} failed deletions",
            dir.display(),
            x.expired.len(),
            x.local_deleted.len(),
            x.retried.len(),
            x.abandoned_copies.len(),
            x.failed
        );
        for line in kept_duplicate_lines(tp, &x) {
            out!(o, "{line}");
        }
    }
    e.close()?;
    if kept > 0 {
        return Err(rsm_core::Error::invalid(format!(
            "{kept} copies kept because the copies covering their offsets do not read back whole (listed above)"
        ))
        .into());
    }
    Ok(())
}
