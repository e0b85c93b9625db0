//! `rsm copy`: the closed segments of a partition directory copied to a store, skipping those already whole
//! in it ([`Store::copy_partition`] has the rule).

use crate::exit::CmdResult;
use crate::output::{Out, mib, out, progress};
use crate::settings::{StoreArgs, settings};
use clap::Args;
use rsm_core::backend::Op;
use rsm_core::format::partition::LocalPartition;
use rsm_core::{Error, Result};
use rsm_facade::{CopyProgress, PartitionCopy, Store};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The arguments of `rsm copy`.
#[derive(Args)]
pub struct CopyArgs {
    /// The partition directory (`topic-partition`).
    #[arg(long)]
    pub dir: PathBuf,
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Broker id recorded in the segment metadata (0 or more, as Kafka's node.id).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(0..))]
    pub broker_id: i32,
    /// Create a file:// store's directory if it does not exist (`--set fs.root.create=true`).
    #[arg(long)]
    pub create: bool,
}

/// [`Store::copy_partition`] with a progress bar (on stderr) of the bytes to copy.
pub fn copy_partition(
    store: &Store,
    partition: &LocalPartition,
    broker_id: i32,
    skip_whole: bool,
) -> Result<PartitionCopy> {
    let mut bar = None;
    let done = store.copy_partition(partition, broker_id, skip_whole, |p| match p {
        CopyProgress::Start { bytes } => bar = Some(progress(bytes, "copy")),
        CopyProgress::Copied(md) => {
            if let Some(pb) = &bar {
                pb.inc(md.segment_size_in_bytes as u64)
            }
        }
    })?;
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    Ok(done)
}

/// Copies the closed segments of the partition directory `dir` to the store, skipping those already whole
/// in it, a line each, then a summary; `create` makes a file:// store's directory.
pub fn run(o: &mut Out, dir: &Path, store: StoreArgs, broker_id: i32, create: bool) -> CmdResult {
    let mut settings = settings(store.config.as_ref(), &store.set)?;
    if create {
        if rsm_facade::scheme_of(store.store.trim()) != "file" {
            return Err(Error::invalid(format!("--create is for file:// stores, not `{}`", store.store)).into());
        }
        settings.insert("fs.root.create".into(), "true".into());
    }
    let (partition, _lock) = rsm_facade::open_partition_for_copy(dir)?;
    let store = Store::open(&store.store, &settings)?;
    if partition.closed_segments().is_empty() {
        let active = &partition.segments[partition.segments.len() - 1];
        out!(
            o,
            "copied 0 segments: {} holds only its active segment {}, which is never copied (the broker copies a \
             segment once it rolls to the next)",
            dir.display(),
            active.log.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        );
        return Ok(());
    }
    let t = Instant::now();
    let done = copy_partition(&store, &partition, broker_id, true)?;
    for why in &done.redone {
        out!(o, "note: {why}; copying it again");
    }
    for m in &done.skipped {
        let md = &m.metadata;
        out!(
            o,
            "{}\t{}..={}\t{} bytes\talready in the store, skipped",
            md.remote_log_segment_id.id,
            md.start_offset,
            md.end_offset,
            m.log_length
        );
    }
    let bytes: u64 = done.copied.iter().map(|m| m.segment_size_in_bytes as u64).sum();
    for m in &done.copied {
        out!(
            o,
            "{}\t{}..={}\t{} bytes",
            m.remote_log_segment_id.id,
            m.start_offset,
            m.end_offset,
            m.segment_size_in_bytes
        );
    }
    let c = store.counts();
    out!(
        o,
        "copied {} segments, {:.1} MiB in {:.2}s; {} already in the store; {} requests ({} PUT)",
        done.copied.len(),
        mib(bytes),
        t.elapsed().as_secs_f64(),
        done.skipped.len(),
        c.total_requests(),
        c.get(Op::Put).requests
    );
    Ok(())
}
