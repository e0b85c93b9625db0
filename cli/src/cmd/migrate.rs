//! `rsm migrate`: the segments Aiven's plugin stored rewritten in our format, one at a time, so that a crash at
//! any moment leaves each readable in one of the two (ours is copied and committed before any object of
//! Aiven's is deleted) and Kafka's metadata stays right (each segment keeps its id and offsets). A rerun goes
//! on where a run stopped, and finishes what it left (Aiven's objects of a segment already ours). Optional:
//! the plugin reads Aiven's segments where they are.

use crate::exit::CmdResult;
use crate::output::{Out, human, out, progress};
use crate::settings::StoreArgs;
use clap::Args;
use rsm_core::storage::Suffix;
use rsm_core::storage::aiven::Migrated;
use rsm_core::{Error, RemoteLogSegmentMetadata};
use rsm_facade::{Store, runtime};

/// The arguments of `rsm migrate`.
#[derive(Args)]
pub struct MigrateArgs {
    /// The store and its settings (`aiven.read.enabled`, `aiven.key.prefix` and, where it encrypted, its key
    /// pairs); the copies follow the store's own settings (`key.prefix`, `compression.*`, `encryption.*`,
    /// `upload.rate.limit.bytes.per.second`).
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only this topic's segments.
    #[arg(long)]
    pub topic: Option<String>,
    /// Only this partition's segments (with --topic).
    #[arg(long, requires = "topic", allow_hyphen_values = true)]
    pub partition: Option<i32>,
    /// Print what would be migrated, per partition, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `rsm migrate`: every Aiven segment in scope rewritten as ours, a line each, then a summary; fails when
/// some segment failed (a rerun retries it).
pub fn run(o: &mut Out, args: &MigrateArgs) -> CmdResult {
    let store = args.store.open()?;
    if store.storage().aiven_key_prefix().is_none() {
        return Err(Error::config("aiven.read.enabled", "is false: set it, with aiven.key.prefix, to migrate").into());
    }
    let in_scope = |md: &RemoteLogSegmentMetadata| {
        let tp = &md.remote_log_segment_id.topic_id_partition.topic_partition;
        args.topic.as_deref().is_none_or(|t| tp.topic == t) && args.partition.is_none_or(|p| tp.partition == p)
    };
    let mut todo = Vec::new();
    let mut failed = Vec::new();
    for s in store.scan_aiven_segments(None)? {
        match s.segment {
            Ok((_, md)) if in_scope(&md) => todo.push(md),
            Ok(_) => {}
            Err(e) => failed.push(format!("{}: {}", s.manifest_key, e.full_message())),
        }
    }
    let leftovers = leftovers(&store, &in_scope)?;
    let bytes: u64 = todo.iter().map(|m| m.segment_size_in_bytes as u64).sum();
    if args.dry_run {
        let mut by_partition: std::collections::BTreeMap<String, (usize, u64, i64, i64)> = Default::default();
        for m in &todo {
            let e = by_partition.entry(m.remote_log_segment_id.topic_id_partition.to_string()).or_insert((
                0,
                0,
                i64::MAX,
                i64::MIN,
            ));
            *e = (e.0 + 1, e.1 + m.segment_size_in_bytes as u64, e.2.min(m.start_offset), e.3.max(m.end_offset));
        }
        for (p, (n, b, first, last)) in &by_partition {
            out!(o, "would migrate\t{p}\t{n} segments\toffsets {first}..={last}\t{}", human(*b));
        }
        for m in &leftovers {
            out!(
                o,
                "would delete\t{}\tAiven objects left by an earlier migration (the segment is ours)",
                m.remote_log_segment_id
            );
        }
        for f in &failed {
            out!(o, "UNREADABLE\t{f}");
        }
        out!(
            o,
            "dry run: {} segments ({}) to migrate in {} partitions, {} left to finish; nothing changed",
            todo.len(),
            human(bytes),
            by_partition.len(),
            leftovers.len()
        );
        return Ok(());
    }
    let bar = progress(bytes, "migrating");
    let work = tempfile::tempdir().map_err(|e| Error::from_io("a temporary directory", e))?;
    let (mut copied, mut already, mut copied_bytes) = (0, 0, 0);
    for (i, md) in todo.iter().enumerate() {
        let id = &md.remote_log_segment_id;
        let dir = work.path().join(i.to_string());
        match runtime().block_on(store.storage().migrate_aiven_segment(md, &dir)) {
            Ok(Migrated::Copied(n)) => {
                copied += 1;
                copied_bytes += n;
                bar.inc(n);
                bar.suspend(|| {
                    o.line(format_args!(
                        "migrated {id} (offsets {}..={}, {})",
                        md.start_offset,
                        md.end_offset,
                        human(n)
                    ))
                })?;
            }
            Ok(Migrated::AlreadyOurs) => {
                already += 1;
                bar.inc(md.segment_size_in_bytes as u64);
                bar.suspend(|| o.line(format_args!("finished {id} (ours already; Aiven's objects deleted)")))?;
            }
            // A key pair or setting this run lacks fails every segment alike: stop at once, naming it.
            Err(e) if e.kind() == rsm_core::ErrorKind::Config => return Err(e.into()),
            Err(e) => failed.push(format!("{id}: {}", e.full_message())),
        }
    }
    bar.finish_and_clear();
    for md in &leftovers {
        runtime().block_on(store.storage().finish_aiven_migration(md))?;
        out!(o, "finished {} (Aiven objects an earlier migration left deleted)", md.remote_log_segment_id);
    }
    for f in &failed {
        out!(o, "FAILED\t{f}");
    }
    out!(
        o,
        "migrated {copied} segments ({}); {already} were ours already, {} left objects finished, {} failed",
        human(copied_bytes),
        leftovers.len(),
        failed.len()
    );
    if !failed.is_empty() {
        return Err(Error::retriable(
            format!("{} segments were not migrated (listed above); a rerun retries them", failed.len()),
            "see above",
        )
        .into());
    }
    Ok(())
}

/// Segments ours already whose `.log` or `.indexes` of Aiven's are still under `aiven.key.prefix` without its
/// manifest (a migration stopped after deleting it): their metadata, from our manifests.
fn leftovers(
    store: &Store,
    in_scope: &dyn Fn(&RemoteLogSegmentMetadata) -> bool,
) -> CmdResult<Vec<RemoteLogSegmentMetadata>> {
    let Some(prefix) = store.storage().aiven_key_prefix().map(str::to_string) else { return Ok(Vec::new()) };
    let objects = runtime().block_on(store.storage().backend().list(&prefix))?;
    let mut stems = std::collections::BTreeMap::<rsm_core::Uuid, (bool, bool)>::new();
    for o in &objects {
        let Some(k) = rsm_core::storage::parse_segment_key(&prefix, &o.key) else { continue };
        let e = stems.entry(k.segment_id).or_default();
        match k.suffix {
            Suffix::Log | Suffix::Indexes => e.0 = true,
            Suffix::AivenManifest => e.1 = true,
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (id, _) in stems.into_iter().filter(|(_, (data, manifest))| *data && !manifest) {
        if let Ok(m) = store.find_segment(&id)
            && in_scope(&m.metadata)
            && store
                .storage()
                .aiven_keys(&m.metadata)
                .is_some_and(|k| objects.iter().any(|o| o.key == k.log || o.key == k.indexes))
        {
            out.push(m.metadata.clone());
        }
    }
    Ok(out)
}
