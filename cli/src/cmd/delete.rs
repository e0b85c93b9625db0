//! `rsm delete`: one remote segment deleted through the engine, refused (without `--force`) when it is not
//! the first segment of the remote log.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out};
use rsm_core::{Error, Result, Uuid};

/// Deletes the segment `segment` names: its metadata to delete started, its objects, its metadata to
/// delete finished.
pub fn run(o: &mut Out, segment: &str, force: bool, engine: &EngineArgs) -> CmdResult {
    let id = parse_segment_id(segment)?;
    let e = engine.open(&[])?;
    let manifest = e.store().find_segment(&id)?;
    let tp = manifest.metadata.remote_log_segment_id.topic_id_partition.clone();
    let rt = rsm_facade::runtime();
    let cut = rt.block_on(e.manager.deletion_cut(&tp, &id))?;
    if let Some(gap) = cut.filter(|_| !force) {
        e.close()?;
        return Err(Error::invalid(format!(
            "segment {id} (offsets {}..={}) is not the first segment of the remote log of {tp}: deleting it \
                 cuts offsets {}..={} out of the middle of the remote log, and consumers of them would find \
                 nothing (their local copy, if any, would be kept). Add --force to delete it anyway; nothing was \
                 deleted",
            gap.start, gap.end, gap.start, gap.end
        ))
        .into());
    }
    let md = rt.block_on(e.manager.delete_segment(&tp, &id))?;
    out!(o, "deleted segment {} of {tp} (offsets {}..={})", id, md.start_offset, md.end_offset);
    if cut.is_some() {
        out!(o, "the remote log of {tp} has a gap at offsets {}..={} now", md.start_offset, md.end_offset);
    }
    Ok(e.close()?)
}

/// A segment id as `ls` prints it.
fn parse_segment_id(s: &str) -> Result<Uuid> {
    s.parse().map_err(|e: Error| e.context(format!("segment id `{s}`")))
}
