//! `rsm rewrap`: key rotation. Every encrypted segment's data key is wrapped again under a new
//! key-encryption key, rewriting its manifest only; segments already under the new key are skipped, so a
//! rerun after an interruption goes on where it stopped.

use crate::exit::CmdResult;
use crate::output::{Out, out};
use crate::settings::StoreArgs;
use clap::Args;
use rsm_core::{Error, Result};
use rsm_facade::Store;

/// The arguments of `rsm rewrap`.
#[derive(Args)]
pub struct RewrapArgs {
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The new key-encryption key id (listed in encryption.keys, with its encryption.key.<id>.file).
    #[arg(long)]
    pub key: String,
    /// Only this topic's segments.
    #[arg(long)]
    pub topic: Option<String>,
}

/// What a rewrap did.
#[derive(Debug, Default)]
pub struct Rewrapped {
    /// Segments whose manifest was rewritten under the new key.
    pub rewrapped: usize,
    /// Segments under the new key already.
    pub already: usize,
    /// Segments stored without encryption (nothing to rewrap).
    pub plain: usize,
    /// Segments that failed, with why.
    pub failed: Vec<String>,
    /// Temporary manifests an interrupted rewrap left (a manifest's rewrite cut short), removed.
    pub removed_temporary: usize,
}

/// Re-wraps every encrypted segment of the store (of `topic` only, when given) under `new_id`, telling
/// `progress` of each segment as it is done (its manifest key, how many segments were looked at so far, and
/// how many the store lists); an error from `progress` stops the run.
pub fn rewrap(
    store: &Store,
    new_id: &str,
    topic: Option<&str>,
    mut progress: impl FnMut(&str, usize, usize) -> CmdResult,
) -> CmdResult<Rewrapped> {
    // The new key must be in the keyring before anything is looked at: a rewrap to a key that is not there
    // would rewrite nothing on a plain store, and fail every segment on an encrypted one.
    let keyring = store.storage().config().encryption.as_ref().map(|e| &e.keyring).ok_or_else(|| {
        Error::config("encryption.keys", format!("no key-encryption keys are set: list {new_id} (and the old keys)"))
    })?;
    keyring.kek(new_id)?;
    let mut out = Rewrapped::default();
    let segments = store.scan_segments(None)?;
    let total = segments.len();
    // A rewrite of a committed manifest cut short (a kill) leaves its temporary file beside it: only a rewrap
    // rewrites a committed manifest (a copy commits a manifest of a new segment id), so those go.
    let committed: std::collections::HashSet<&str> = segments.iter().map(|s| s.manifest_key.as_str()).collect();
    let (_, temporary) = store.list_objects()?;
    let leftovers: Vec<String> =
        temporary.into_iter().filter(|t| committed.contains(t.target.as_str())).map(|t| t.meta.key).collect();
    if !leftovers.is_empty() {
        store.delete_objects(&leftovers)?;
        out.removed_temporary = leftovers.len();
    }
    for (i, s) in segments.into_iter().enumerate() {
        let m = match &s.manifest {
            Ok(m) => m,
            Err(e) => {
                out.failed.push(format!("{}: {}", s.manifest_key, e.full_message()));
                continue;
            }
        };
        if topic.is_some_and(|t| m.metadata.remote_log_segment_id.topic_id_partition.topic_partition.topic != t) {
            continue;
        }
        if m.encryption.is_none() {
            out.plain += 1;
            continue;
        }
        match store.rewrap(&s.manifest_key, new_id) {
            Ok(true) => {
                out.rewrapped += 1;
                progress(&s.manifest_key, i + 1, total)?;
            }
            Ok(false) => out.already += 1,
            // A key the keyring lacks fails every segment alike: stop at once, naming it.
            Err(e) if e.kind() == rsm_core::ErrorKind::Config => return Err(e.into()),
            Err(e) => out.failed.push(format!("{}: {}", s.manifest_key, e.full_message())),
        }
    }
    Ok(out)
}

/// The error a rewrap with failures ends with.
pub fn failures(r: &Rewrapped) -> Result<()> {
    match r.failed.len() {
        0 => Ok(()),
        n => Err(Error::retriable(
            format!("{n} segments were not rewrapped (listed above); a rerun retries them"),
            "see above",
        )),
    }
}

/// `rsm rewrap`: rewraps the store's encrypted segments (of `topic` only, when given) under `key`, a line
/// per segment as it is done, then a summary; fails when some segment failed.
pub fn run(o: &mut Out, store: &StoreArgs, key: &str, topic: Option<&str>) -> CmdResult {
    let store = store.open()?;
    // Each segment's line as it is done (stdout is line-buffered), so an interrupted run shows how far
    // it got.
    let r = rewrap(&store, key, topic, |k, i, n| o.line(format_args!("rewrapped {k} ({i}/{n} looked at)")))?;
    for f in &r.failed {
        out!(o, "FAILED {f}");
    }
    out!(
        o,
        "rewrapped {} segments under {key}; {} were under it already, {} are not encrypted, {} failed{}",
        r.rewrapped,
        r.already,
        r.plain,
        r.failed.len(),
        match r.removed_temporary {
            0 => String::new(),
            n => format!("; removed {n} temporary manifests an interrupted rewrap left"),
        }
    );
    Ok(failures(&r)?)
}
