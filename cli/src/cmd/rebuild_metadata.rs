//! `rsm rebuild-metadata`: a new local metadata log made from the store's manifests.

use crate::exit::CmdResult;
use crate::output::{Out, out};
use crate::settings::StoreArgs;
use std::path::Path;

/// Writes a metadata log in `metadata_dir` holding every whole segment of the store, as copied; a segment
/// with objects missing or a manifest that does not read is skipped, a line each.
pub fn run(o: &mut Out, store: &StoreArgs, metadata_dir: &Path) -> CmdResult {
    let store = store.open()?;
    let mut whole = Vec::new();
    for s in store.scan_segments(None)? {
        match s.manifest {
            Ok(m) if s.missing.is_empty() => whole.push(m.metadata),
            Ok(m) => {
                out!(o, "SKIPPED\t{}\tmissing {}", m.metadata.remote_log_segment_id.id, s.missing.join(", "))
            }
            Err(e) => out!(o, "SKIPPED\t{}\t{}", s.manifest_key, e.full_message()),
        }
    }
    let n = rsm_facade::runtime().block_on(rsm_metadata::local::LocalMetadataManager::rebuild(metadata_dir, &whole))?;
    out!(o, "rebuilt {} with {n} segments from the store's manifests", metadata_dir.display());
    Ok(())
}
