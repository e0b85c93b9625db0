//! `rsm offsets`: each partition's local and remote offsets (Lx, Ly, Lz, Rx, Ry) and the gaps in its remote
//! log.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out};
use clap::Args;
use std::path::PathBuf;

/// The arguments of `rsm offsets`.
#[derive(Args)]
pub struct OffsetsArgs {
    /// Partition directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The engine's store, settings and metadata.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Prints the offsets of the partitions in `dirs`, a line each, and a line on the remote log gaps if any.
pub fn run(o: &mut Out, dirs: &[PathBuf], engine: &EngineArgs) -> CmdResult {
    let e = engine.open_read_only()?;
    let rt = rsm_facade::runtime();
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    out!(o, "{:<40} {:>12} {:>12} {:>12} {:>12} {:>12}  gaps", "partition", "Lx", "Ly", "Lz", "Rx", "Ry");
    let mut gaps = 0;
    let mut missing = Vec::new();
    for tp in e.add(dirs)? {
        let x = rt.block_on(e.manager.offsets(&tp))?;
        gaps += x.remote_gaps.len();
        missing.extend(x.missing_from_store.iter().map(|(id, r)| (tp.topic_partition.to_string(), *id, *r)));
        out!(
            o,
            "{:<40} {:>12} {:>12} {:>12} {:>12} {:>12}  {}",
            tp.topic_partition.to_string(),
            x.local_log_start,
            x.last_stable,
            x.local_log_end,
            opt(x.remote_log_start),
            opt(x.remote_log_end),
            gaps_text(&x.remote_gaps)
        );
    }
    if gaps > 0 {
        out!(
            o,
            "{gaps} gaps in the remote log: no copied segment holds those offsets (local segments from the \
                 first gap on are kept)"
        );
    }
    for (tp, id, r) in &missing {
        out!(
            o,
            "{tp}: segment {id} (offsets {}..={}) is in the metadata but not in the store: counted as a gap",
            r.start,
            r.end
        );
    }
    Ok(e.close()?)
}

/// Gaps of a remote log as `a..=b` ranges, or `-`.
fn gaps_text(gaps: &[rsm_tiering::OffsetRange]) -> String {
    match gaps {
        [] => "-".to_string(),
        _ => gaps.iter().map(|g| format!("{}..={}", g.start, g.end)).collect::<Vec<_>>().join(","),
    }
}
