//! `rsm sweep`: what interrupted uploads left in the store, without any metadata, listed or deleted (and
//! incomplete multipart uploads listed or aborted).

use super::audit::parse_age;
use crate::exit::CmdResult;
use crate::output::{Out, human, out, upload_fields};
use crate::settings::StoreArgs;
use clap::Args;
use rsm_facade::audit::{AuditOptions, audit};
use rsm_metadata::local::LocalMetadataManager;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The arguments of `rsm sweep`.
#[derive(Args)]
pub struct SweepArgs {
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Objects and uploads written more recently are left alone (an upload may still be writing them):
    /// 30s, 10m, 1h, 2d.
    #[arg(long, default_value = "1h", value_parser = parse_age)]
    pub min_age: Duration,
    /// Delete them (and abort the uploads).
    #[arg(long)]
    pub yes: bool,
    /// A metadata log (`rsm tier`'s): also list the whole segments it does not name (a copy that gave up
    /// after its manifest landed, or metadata that lost them). They are kept: a sweep never deletes a
    /// committed segment.
    #[arg(long)]
    pub metadata_dir: Option<PathBuf>,
}

/// Lists the objects of segments without a manifest (never committed: the objects of a segment whose
/// manifest is in the store, readable or not, are never among them), the temporary upload files and the
/// incomplete multipart uploads to segments' keys last written at least `min_age` ago; deletes (and aborts)
/// them with `yes`. With `metadata_dir`, first lists the whole segments that metadata log does not name
/// (`rsm audit`'s unreferenced ones), kept whatever `yes` says.
pub fn run(o: &mut Out, store: &StoreArgs, min_age: Duration, yes: bool, metadata_dir: Option<&Path>) -> CmdResult {
    let store = store.open()?;
    if let Some(dir) = metadata_dir {
        let segments = LocalMetadataManager::open_existing_read_only(dir)?.all_segments()?;
        let opts = AuditOptions { topic: None, quick: true, min_age, delete_orphans: false };
        let report = audit(&store, &segments, &opts)?;
        for ((partition, topic_id), p) in &report.partitions {
            for u in &p.unreferenced {
                let (id, start, bytes) = (&u.segment_id, u.start_offset, u.bytes);
                out!(
                    o,
                    "KEPT\t{partition}\t{topic_id}\t{id}\toffset {start}\t{bytes} bytes\ta whole segment the metadata \
                     log does not name (a copy that gave up after its manifest landed, or metadata that lost it): \
                     `rsm delete --segment {id} --force` deletes it, `rsm rebuild-metadata` would bring it back"
                );
            }
        }
    }
    let found = store.orphans(None, min_age)?;
    let (verb, abort) = if yes { ("DELETE", "ABORT") } else { ("WOULD DELETE", "WOULD ABORT") };
    for (key, bytes) in &found.uncommitted {
        out!(
            o,
            "{verb}\t{key}\t{bytes} bytes\tan object of a segment with no manifest (an upload cut short before its \
             manifest; `rsm audit` says whether a metadata log copied the segment)"
        );
    }
    for (key, bytes) in &found.temporary {
        out!(o, "{verb}\t{key}\t{bytes} bytes\ta temporary file of an interrupted upload");
    }
    let now = SystemTime::now();
    for u in &found.uploads {
        out!(o, "{abort}\t{}\tan incomplete multipart upload (never completed)", upload_fields(u, now));
    }
    let n = found.uncommitted.len() + found.temporary.len() + found.uploads.len();
    if !yes {
        out!(
            o,
            "{n} leftovers ({}) older than the safety age; add --yes to delete them (nothing was deleted)",
            human(found.bytes())
        );
        return Ok(());
    }
    store.abort_uploads(&found.uploads)?;
    store.delete_objects(&found.keys())?;
    out!(o, "deleted {n} leftovers ({})", human(found.bytes()));
    Ok(())
}
