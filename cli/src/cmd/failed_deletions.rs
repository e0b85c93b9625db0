//! `rsm failed-deletions`: the deletions that failed and wait for a retry (SR-35), listed or retried now.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out};
use clap::Args;
use rsm_core::Error;

/// The arguments of `rsm failed-deletions`.
#[derive(Args)]
pub struct FailedDeletionsArgs {
    /// `list` or `retry`.
    #[arg(value_parser = ["list", "retry"])]
    pub action: String,
    /// The engine's store, settings and metadata.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `list` prints the failed deletions; `retry` retries them and fails if any fails again.
pub fn run(o: &mut Out, action: &str, engine: &EngineArgs) -> CmdResult {
    let e = if action == "list" { engine.open_read_only()? } else { engine.open(&[])? };
    let rt = rsm_facade::runtime();
    let mut failed = 0;
    if action == "list" {
        let list = rt.block_on(e.manager.failed_deletions().list())?;
        for md in &list {
            out!(
                o,
                "{} {} offsets {}..={}",
                md.remote_log_segment_id.topic_id_partition,
                md.remote_log_segment_id.id,
                md.start_offset,
                md.end_offset
            );
        }
        out!(o, "{} failed deletions", list.len());
    } else {
        let results = rt.block_on(e.manager.retry_failed_deletions())?;
        for (md, r) in &results {
            match r {
                Ok(()) => {
                    out!(o, "deleted {} {}", md.remote_log_segment_id.topic_id_partition, md.remote_log_segment_id.id)
                }
                Err(err) => {
                    failed += 1;
                    out!(
                        o,
                        "FAILED {} {}: {}",
                        md.remote_log_segment_id.topic_id_partition,
                        md.remote_log_segment_id.id,
                        err.full_message()
                    )
                }
            }
        }
        out!(o, "{} retried, {} deleted, {failed} failed again", results.len(), results.len() - failed);
    }
    e.close()?;
    match failed {
        0 => Ok(()),
        n => Err(Error::retriable(format!("{n} deletions failed again"), "see above").into()),
    }
}
