//! `rsm rebuild-metadata`: a new local metadata log made from the store's manifests (and Aiven's, with
//! `aiven.read.enabled`).

use crate::exit::CmdResult;
use crate::output::{Out, out};
use crate::settings::StoreArgs;
use clap::Args;
use std::path::{Path, PathBuf};

/// The arguments of `rsm rebuild-metadata`.
#[derive(Args)]
pub struct RebuildMetadataArgs {
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The new metadata directory (must not exist).
    #[arg(long)]
    pub metadata_dir: PathBuf,
}

/// Writes a metadata log in `metadata_dir` holding every whole segment of the store, as copied (a one-object
/// segment with its trailer as custom metadata, as its copy returned it); a segment with objects missing or a
/// manifest that does not read is skipped, a line each.
pub fn run(o: &mut Out, store: &StoreArgs, metadata_dir: &Path) -> CmdResult {
    let store = store.open()?;
    let rt = rsm_facade::runtime();
    let mut whole = Vec::new();
    let scanned = store.scan_segments(None)?;
    let mut seen: std::collections::HashSet<rsm_core::Uuid> = scanned
        .iter()
        .filter_map(|s| {
            rsm_core::storage::layout::parse_segment_key(&store.storage().config().key_prefix, &s.manifest_key)
        })
        .map(|k| k.segment_id)
        .collect();
    for s in scanned {
        match s.manifest {
            Ok(m) if s.missing.is_empty() => {
                // A one-object segment's metadata carries its trailer, as its copy returned it: readers and
                // deletes then know its layout without looking.
                let mut md = m.metadata.clone();
                if let Some(t) = rsm_core::storage::Trailer::of_manifest(&m) {
                    md.custom_metadata = Some(t.custom_metadata());
                }
                whole.push(md)
            }
            Ok(m) => {
                out!(o, "SKIPPED\t{}\tmissing {}", m.metadata.remote_log_segment_id.id, s.missing.join(", "))
            }
            Err(e) => out!(o, "SKIPPED\t{}\t{}", s.manifest_key, e.full_message()),
        }
    }
    // The segments Aiven's plugin stored (`aiven.read.enabled`), as their manifests name them; one that is
    // ours too (a migration under way) once.
    let aiven_ids =
        |listed: &[rsm_core::storage::aiven::ListedAivenSegment]| -> std::collections::HashSet<rsm_core::Uuid> {
            listed.iter().filter_map(|a| a.segment.as_ref().ok()).map(|(_, md)| md.remote_log_segment_id.id).collect()
        };
    let aiven = store.scan_aiven_segments(None)?;
    for a in &aiven {
        match &a.segment {
            Ok((_, md)) if !seen.contains(&md.remote_log_segment_id.id) => whole.push(md.clone()),
            Ok(_) => {}
            Err(e) => out!(o, "SKIPPED\t{}\t{}", a.manifest_key, e.full_message()),
        }
    }
    seen.extend(aiven_ids(&aiven));
    let n = rt.block_on(rsm_metadata::local::LocalMetadataManager::rebuild(metadata_dir, &whole))?;
    out!(o, "rebuilt {} with {n} segments from the store's manifests", metadata_dir.display());
    // The log is the store as the scan found it: a store another process wrote to meanwhile (a copy, a
    // delete) has segments the log lacks, or lacks some it lists. One more listing tells.
    let mut now = rt.block_on(store.storage().committed_segment_ids(None))?;
    now.extend(aiven_ids(&store.scan_aiven_segments(None)?));
    let (came, went) = (now.difference(&seen).count(), seen.difference(&now).count());
    if came + went > 0 {
        return Err(rsm_core::Error::invalid(format!(
            "the store changed while {} was rebuilt ({came} segments committed, {went} gone since it was scanned): \
             something is writing to it, and this log does not describe it; stop what writes and rebuild again",
            metadata_dir.display()
        ))
        .into());
    }
    Ok(())
}
