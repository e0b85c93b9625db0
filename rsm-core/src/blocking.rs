//! Blocking file reads from async code, at the cost each size deserves.

use crate::error::{Error, Result};

/// The largest read run in place ([`read_in_place_or_pool`]): a fetch's first read, up to
/// [`crate::storage::fetch::FIRST_READ_BYTES`] widened to whole blocks at both ends (1 MiB + 256 KiB at most
/// with the default 64 KiB blocks), is one; a whole chunk (4 MiB by default) is not.
pub const IN_PLACE_READ_MAX: u64 = 2 << 20;

/// Runs the blocking read `f` of `len` bytes (or the undoing of `len` bytes of a chunk's transforms): a small
/// one (at most [`IN_PLACE_READ_MAX`]) in place on a multi-thread runtime, as handing it to a blocking-pool
/// thread and back costs two thread wake-ups, more than the read itself from the page cache, and can queue it
/// behind a whole chunk's work there; a larger one (a whole chunk read ahead) on the blocking pool, so that it
/// overlaps other work.
pub async fn read_in_place_or_pool<T: Send + 'static>(len: u64, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if len <= IN_PLACE_READ_MAX && multi_thread {
        return Ok(tokio::task::block_in_place(f));
    }
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::storage("blocking read task failed", e))
}
