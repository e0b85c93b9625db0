//! `rsm delete`: one remote segment deleted through the engine, refused (without `--force`) when it would
//! leave offsets held nowhere: a hole between remote segments, or between the remote log's end and the local
//! log's start. Deleting the oldest data is a move of the log start, and says so.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out};
use clap::Args;
use rsm_core::{Error, Result, Uuid};
use rsm_engine::local_log::LocalLog;
use rsm_tiering::OffsetRange;
use std::path::{Path, PathBuf};

/// The arguments of `rsm delete`.
#[derive(Args)]
pub struct DeleteArgs {
    /// The segment id, as `ls` prints it.
    #[arg(long, allow_hyphen_values = true)]
    pub segment: String,
    /// Delete it even though some of its offsets would then be held nowhere (no other copied segment
    /// nor the local log holds them, and offsets below them stay): that cuts a gap in the log (the
    /// local copy of offsets above it, if any, is then kept: local deletion stops at a gap).
    #[arg(long)]
    pub force: bool,
    /// The partition's directory, so that offsets its local log still holds count as held (without it,
    /// deleting the remote log's last segment needs --force).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The engine's store, settings and metadata.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Deletes the segment `segment` names: its metadata to delete started, its objects, its metadata to
/// delete finished. `dir`, the partition's directory, tells which offsets the local log still holds.
pub fn run(o: &mut Out, segment: &str, force: bool, dir: Option<&Path>, engine: &EngineArgs) -> CmdResult {
    let id = parse_segment_id(segment)?;
    let local = dir.map(local_range).transpose()?;
    // Everything is decided over the metadata opened to read (a metadata directory not there yet is empty,
    // and none is created), and the metadata is opened to write only for a deletion that goes ahead.
    let e = engine.open_plan()?;
    // A segment whose manifest does not read (damaged) is found by its objects' keys.
    let (tp, damaged) = match e.store().find_segment(&id) {
        Ok(m) => (m.metadata.remote_log_segment_id.topic_id_partition.clone(), Vec::new()),
        Err(err) if err.kind() != rsm_core::ErrorKind::NotFound => {
            let objects = objects_of(e.store(), &id)?;
            let Some(first) = objects.first() else { return Err(err.into()) };
            (first.1.clone(), objects)
        }
        Err(err) => return Err(err.into()),
    };
    if !rsm_facade::runtime().block_on(e.manager.knows_segment(&tp, &id))? {
        // No metadata references it (never known, or its deletion finished: a copy that gave up whose
        // manifest landed late): its objects, whatever they hold, as `rsm audit` and `rsm sweep` report it.
        let whole = damaged.is_empty();
        // A whole segment is deleted so only against a metadata log that holds its partition: over a
        // mistyped --metadata-dir (empty) every segment looks unreferenced.
        let others = rsm_facade::runtime().block_on(e.manager.metadata().list_remote_log_segments(&tp))?;
        if whole && others.is_empty() {
            e.close()?;
            return Err(Error::not_found(format!(
                "segment {id} of {tp} is not in the metadata, which holds no segment of {tp} at all (a mistyped \
                 --metadata-dir?); nothing was deleted"
            ))
            .into());
        }
        let objects = if whole { objects_of(e.store(), &id)? } else { damaged };
        return delete_unreferenced(o, e, &id, &tp, &objects, whole, force);
    }
    if let (Some(d), Some((dir_tp, _))) = (dir, &local)
        && *dir_tp != tp
    {
        e.close()?;
        return Err(Error::invalid(format!(
            "segment {id} belongs to {tp}, but {} is the directory of {dir_tp}; nothing was deleted",
            d.display()
        ))
        .into());
    }
    let rt = rsm_facade::runtime();
    let local_ranges = local.as_ref().map(|l| l.1.as_slice());
    let effect = rt.block_on(e.manager.deletion_cut(&tp, &id, local_ranges))?;
    if let Some(refused) = refusal(&effect, &id, &tp, dir, force) {
        e.close()?;
        return Err(refused.into());
    }
    e.close()?;
    let e = engine.open(&[])?;
    // Decided again with the metadata held for writing: a run that wrote meanwhile (a copy of these offsets,
    // another delete) changed what this delete leaves, and none writes until this one ends.
    let effect = match rt.block_on(e.manager.deletion_cut(&tp, &id, local_ranges)) {
        Ok(effect) => match refusal(&effect, &id, &tp, dir, force) {
            None => effect,
            Some(refused) => {
                e.close()?;
                return Err(refused.into());
            }
        },
        Err(err) => {
            e.close()?;
            return Err(err.into());
        }
    };
    let md = rt.block_on(e.manager.delete_segment(&tp, &id))?;
    out!(o, "deleted segment {} of {tp} (offsets {}..={})", id, md.start_offset, md.end_offset);
    if let Some(m) = effect.log_start_move {
        out!(o, "offsets {}..={} left the log of {tp}: its start moved to {}", m.start, m.end, m.end + 1);
    }
    if effect.holes.is_empty()
        && let Some(g) = effect.remote_gaps.first()
    {
        out!(
            o,
            "the remote log of {tp} has a gap at offsets {}..={} now, which the local log holds: local deletion \
             stops there",
            g.start,
            g.end
        );
    }
    if !effect.holes.is_empty() {
        out!(o, "the log of {tp} has a gap at offsets {} now: they are held nowhere", ranges(&effect.holes));
    }
    Ok(e.close()?)
}

/// Why a delete is refused without `--force`, if it is: it would leave offsets held nowhere, or it moves the
/// log start while the local log's offsets are not known (without `--dir`: offsets it still holds below
/// would be copied again by the next run, beside a hole where the segment was).
fn refusal(
    effect: &rsm_engine::DeletionEffect,
    id: &Uuid,
    tp: &rsm_core::TopicIdPartition,
    dir: Option<&Path>,
    force: bool,
) -> Option<Error> {
    if force {
        return None;
    }
    if !effect.holes.is_empty() {
        return Some(hole_refusal(effect, id, tp, dir));
    }
    match (effect.log_start_move, dir) {
        (Some(m), None) => Some(Error::invalid(format!(
            "deleting segment {id} of {tp} moves the log start past offsets {}..={}, but whether the partition's \
             local log holds offsets below them is not known (a later run would copy those again, beside a hole \
             where this segment was): pass the partition directory (--dir) to check, or --force; nothing was \
             deleted",
            m.start, m.end
        ))),
        _ => None,
    }
}

/// The refusal of a delete that would leave offsets held nowhere: which, and why no other copy holds them.
fn hole_refusal(
    effect: &rsm_engine::DeletionEffect,
    id: &Uuid,
    tp: &rsm_core::TopicIdPartition,
    dir: Option<&Path>,
) -> Error {
    let seg = effect.segment;
    let local_note = match dir {
        Some(d) => format!("the local log in {} does not hold them either", d.display()),
        None => "and the local log may not hold them: pass the partition directory (--dir) to check it".to_string(),
    };
    let copies = match effect.unreadable_copies.as_slice() {
        [] => "no other copied segment holds them".to_string(),
        damaged => {
            let each: Vec<String> = damaged
                .iter()
                .map(|(other, r, why)| format!("segment {other} (offsets {}..={}): {why}", r.start, r.end))
                .collect();
            format!("no other copied segment holds them whole (not read back whole: {})", each.join("; "))
        }
    };
    Error::invalid(format!(
        "deleting segment {id} of {tp} (offsets {}..={}) would leave offsets {} held nowhere: {copies}, \
         {local_note}, and offsets below them stay in the log, so consumers of them would find nothing. Add \
         --force to delete it anyway; nothing was deleted",
        seg.start,
        seg.end,
        ranges(&effect.holes)
    ))
}

/// The objects of segment `id` in the store, found by their keys (key, partition, bytes).
fn objects_of(store: &rsm_facade::Store, id: &Uuid) -> Result<Vec<(String, rsm_core::TopicIdPartition, u64)>> {
    let prefix = store.storage().config().key_prefix.clone();
    let (objects, _) = store.list_objects()?;
    Ok(objects
        .into_iter()
        .filter_map(|o| {
            let k = rsm_core::storage::layout::parse_segment_key(&prefix, &o.key).filter(|k| k.segment_id == *id)?;
            Some((o.key, k.topic_id_partition, o.size))
        })
        .collect())
}

/// Deletes the objects of a segment that no metadata references, whole (`rsm audit`'s `UNREFERENCED`, `rsm
/// sweep`'s `KEPT`) or damaged (its manifest does not read: `DAMAGED`): only with `--force`, naming them
/// first.
fn delete_unreferenced(
    o: &mut Out,
    e: super::engine::Engine,
    id: &Uuid,
    tp: &rsm_core::TopicIdPartition,
    objects: &[(String, rsm_core::TopicIdPartition, u64)],
    whole: bool,
    force: bool,
) -> CmdResult {
    let keys: Vec<String> = objects.iter().map(|x| x.0.clone()).collect();
    let bytes: u64 = objects.iter().map(|x| x.2).sum();
    let what = if whole { "unreferenced" } else { "damaged" };
    if !force {
        e.close()?;
        let state = if whole {
            "is whole, but no metadata references it (a copy that gave up after its manifest landed, or metadata \
             that lost it)"
        } else {
            "is damaged (its manifest does not read) and no metadata references it"
        };
        return Err(Error::invalid(format!(
            "segment {id} of {tp} {state}: deleting it deletes its objects {} ({bytes} bytes), whatever they hold. \
             Add --force to delete them; nothing was deleted",
            keys.join(", ")
        ))
        .into());
    }
    e.store().delete_objects(&keys)?;
    out!(
        o,
        "deleted the objects of {what} segment {id} of {tp}, which no metadata references: {} ({bytes} bytes)",
        keys.join(", ")
    );
    Ok(e.close()?)
}

/// The partition of the directory `dir`, and the offsets its segments hold.
fn local_range(dir: &Path) -> Result<(rsm_core::TopicIdPartition, Vec<OffsetRange>)> {
    let log = LocalLog::open_read_only(dir)?;
    Ok((log.partition().topic_id_partition.clone(), log.held_ranges()?))
}

fn ranges(r: &[OffsetRange]) -> String {
    r.iter().map(|g| format!("{}..={}", g.start, g.end)).collect::<Vec<_>>().join(", ")
}

/// A segment id as `ls` prints it.
fn parse_segment_id(s: &str) -> Result<Uuid> {
    s.parse().map_err(|e: Error| e.context(format!("segment id `{s}`")))
}
