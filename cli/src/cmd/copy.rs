//! `rsm copy`: the closed segments of a partition directory copied to a store, skipping those already whole
//! in it.

use crate::output::{Out, mib, now_ms, out, progress};
use crate::settings::{StoreArgs, settings};
use rsm_core::backend::Op;
use rsm_core::format::manifest::Manifest;
use rsm_core::format::partition::{LocalPartition, LocalSegment};
use rsm_core::{Error, RemoteLogSegmentMetadata, Result};
use rsm_facade::Store;
use std::path::Path;
use std::time::Instant;

/// What a copy of a partition did.
pub struct Copied {
    /// Segments copied now.
    pub copied: Vec<RemoteLogSegmentMetadata>,
    /// Segments already whole in the store, left alone.
    pub skipped: Vec<Manifest>,
    /// Segments whose earlier copy in the store is incomplete or unreadable (copied again), with why.
    pub redone: Vec<String>,
}

/// The whole copy in the store of a local closed segment, if there is one: a readable manifest of the same
/// partition, start and end offsets and log size, with every object present.
fn whole_copy<'a>(
    existing: &'a [(Manifest, Vec<&'static str>)],
    seg: &LocalSegment,
    log_len: u64,
) -> Option<&'a Manifest> {
    let end = seg.next_offset? - 1;
    existing.iter().find_map(|(m, missing)| {
        let md = &m.metadata;
        (missing.is_empty() && md.start_offset == seg.base_offset && md.end_offset == end && m.log_length == log_len)
            .then_some(m)
    })
}

/// Copies the closed segments of `partition`, skipping (when `skip_whole`) those already whole in the store.
pub fn copy_partition(store: &Store, partition: &LocalPartition, broker_id: i32, skip_whole: bool) -> Result<Copied> {
    let closed = partition.closed_segments();
    let mut existing = Vec::new();
    let mut redone = Vec::new();
    if skip_whole {
        for s in store.scan_segments(Some(&partition.topic_id_partition))? {
            match s.manifest {
                Ok(m) => existing.push((m, s.missing)),
                Err(e) => redone.push(format!("{} is unreadable ({})", s.manifest_key, e.full_message())),
            }
        }
    }
    let len_of =
        |s: &LocalSegment| std::fs::metadata(&s.log).map(|m| m.len()).map_err(|e| Error::from_io(s.log.display(), e));
    let mut todo = Vec::new();
    let mut skipped = Vec::new();
    for seg in closed {
        let len = len_of(seg)?;
        match whole_copy(&existing, seg, len) {
            Some(m) => skipped.push(m.clone()),
            None => {
                if let Some((m, missing)) = existing
                    .iter()
                    .find(|(m, missing)| m.metadata.start_offset == seg.base_offset && !missing.is_empty())
                {
                    redone.push(format!(
                        "segment {} at offset {} lacks {} in the store",
                        m.metadata.remote_log_segment_id.id,
                        seg.base_offset,
                        missing.join(", ")
                    ));
                }
                todo.push((seg, len));
            }
        }
    }
    let pb = progress(todo.iter().map(|(_, l)| l).sum(), "copy");
    let mut copied = Vec::new();
    for (seg, _) in todo {
        let md = partition.segment_metadata(seg, broker_id, now_ms())?;
        let data = partition.segment_data(seg)?;
        store.copy(&md, &data)?;
        pb.inc(md.segment_size_in_bytes as u64);
        copied.push(md);
    }
    pb.finish_and_clear();
    Ok(Copied { copied, skipped, redone })
}

/// Copies the closed segments of the partition directory `dir` to the store, skipping those already whole
/// in it, a line each, then a summary; `create` makes a file:// store's directory.
pub fn run(o: &mut Out, dir: &Path, store: StoreArgs, broker_id: i32, create: bool) -> Result<()> {
    let mut settings = settings(store.config.as_ref(), &store.set)?;
    if create {
        if rsm_facade::scheme_of(store.store.trim()) != "file" {
            return Err(Error::invalid(format!("--create is for file:// stores, not `{}`", store.store)));
        }
        settings.insert("fs.root.create".into(), "true".into());
    }
    let partition =
        LocalPartition::open(dir).map_err(|e| e.context(format!("partition directory {}", dir.display())))?;
    // One copy of a directory at a time: two would each store every segment (under ids of their own).
    let _lock = rsm_core::dir_lock::DirLock::exclusive(dir, "partition directory")?;
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
