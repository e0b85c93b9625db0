//! SR-32's partition index files kept beside the partition (SR-33): `remote-index/` in the partition
//! directory, so they move with it to another log directory (SR-28). The leader appends each segment as its
//! copy finishes; a follower, and a leader whose files a crash left apart, builds them from the copied
//! segments' manifests. They are derived data: when their ends disagree they are rebuilt.

use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::{ErrorKind, Result};
use rsm_core::format::remote_index::RemoteIndexFiles;
use rsm_core::storage::TieredStorage;
use std::path::{Path, PathBuf};

/// The directory of a partition's index files.
pub fn index_dir(partition_dir: &Path) -> PathBuf {
    partition_dir.join("remote-index")
}

/// Brings the index files of the partition in `partition_dir` up to date with `copied` (its copied
/// segments, in offset order): every segment after the last one indexed is appended from its manifest.
/// Returns how many segments were appended.
pub async fn sync(
    storage: &TieredStorage,
    partition_dir: &Path,
    max_bytes: u64,
    copied: &[RemoteLogSegmentMetadata],
) -> Result<usize> {
    let dir = index_dir(partition_dir);
    let mut files = RemoteIndexFiles::open(&dir, max_bytes)?;
    let last = match files.last_entry() {
        Ok(last) => last,
        Err(e) if e.kind() == ErrorKind::Corrupt => {
            tracing::warn!(dir = %dir.display(), error = %e, "rebuilding the partition's remote index files");
            std::fs::remove_dir_all(&dir).map_err(|e| rsm_core::Error::from_io(dir.display(), e))?;
            files = RemoteIndexFiles::open(&dir, max_bytes)?;
            None
        }
        Err(e) => return Err(e),
    };
    let mut indexed_to = last.map_or(-1, |e| e.last_offset);
    let mut appended = 0;
    for md in copied {
        // A segment the files already reach (or a duplicate copy of offsets already indexed) is skipped.
        if md.start_offset <= indexed_to {
            continue;
        }
        let manifest = storage.manifest(md).await?;
        files.append_segment(md.start_offset, &manifest.chunks)?;
        indexed_to = md.end_offset;
        appended += 1;
    }
    Ok(appended)
}
