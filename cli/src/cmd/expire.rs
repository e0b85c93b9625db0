//! `rsm expire`: remote and local retention applied now, without copying.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out};
use std::path::PathBuf;

/// Applies retention to the partitions in `dirs` and prints, a line each, what it deleted.
pub fn run(o: &mut Out, dirs: &[PathBuf], engine: &EngineArgs) -> CmdResult {
    let e = engine.open(dirs)?;
    let rt = rsm_facade::runtime();
    for (tp, dir) in e.add(dirs)?.iter().zip(dirs) {
        let x = rt.block_on(e.manager.expire_partition(tp))?;
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
    }
    Ok(e.close()?)
}
