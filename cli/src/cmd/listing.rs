//! What `rsm ls` and `rsm verify` say alike of a store's listing: a segment that cannot be used (objects
//! missing, a manifest that does not read), and what interrupted uploads left.

use crate::exit::CmdResult;
use crate::output::{Out, human, out};
use rsm_core::format::manifest::Manifest;
use rsm_core::storage::ListedSegment;
use rsm_facade::Store;

/// A listed segment's manifest, or a line on stdout saying what is wrong with it (and `None`).
pub fn usable(o: &mut Out, s: ListedSegment, problems: &mut usize) -> CmdResult<Option<Manifest>> {
    Ok(match s.manifest {
        Ok(m) if s.missing.is_empty() => Some(m),
        Ok(m) => {
            *problems += 1;
            out!(o, "INCOMPLETE\t{}\tmissing {}", m.metadata.remote_log_segment_id.id, s.missing.join(", "));
            None
        }
        Err(e) => {
            *problems += 1;
            out!(o, "DAMAGED\t{}\t{}", s.manifest_key, e.full_message());
            None
        }
    })
}

/// A line on what interrupted uploads left in the store (of any age), when there is anything.
pub fn leftovers(o: &mut Out, store: &Store) -> CmdResult {
    let found = store.orphans(None, std::time::Duration::ZERO)?;
    if !found.is_empty() {
        out!(
            o,
            "leftovers of interrupted uploads: {} objects of uncommitted segments, {} temporary files, {} incomplete \
             multipart uploads ({}); `rsm sweep` removes those older than an hour",
            found.uncommitted.len(),
            found.temporary.len(),
            found.uploads.len(),
            human(found.bytes())
        );
    }
    Ok(())
}
