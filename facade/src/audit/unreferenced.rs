//! The audit's side of the store: the objects of segments no finished copy references (never known,
//! deletion finished, or a copy abandoned). A segment whose commit object is there was committed (an upload
//! cut short never writes its manifest), so it is kept, as unreferenced when whole and as damaged otherwise;
//! the objects of the others, and temporary objects, are orphans. Incomplete multipart uploads are listed
//! beside them.

use super::Listing;
use super::report::{AuditOptions, DamagedSegment, Orphan, Report, UnreferencedSegment, UploadFinding};
use crate::Store;
use rsm_core::backend::IncompleteUpload;
use rsm_core::storage::Suffix;
use std::collections::HashSet;

/// Adds to the report each committed segment in scope whose id is not in `referenced`: unreferenced when
/// whole (its manifest reads as the segment its key names, its objects all there), damaged otherwise.
/// Returns the ids of the segments it kept so.
pub(super) fn check_committed(
    store: &Store,
    referenced: &HashSet<String>,
    opts: &AuditOptions,
    listing: &Listing<'_>,
    report: &mut Report,
) -> HashSet<String> {
    let mut kept: HashSet<String> = HashSet::new();
    for (id, objs) in &listing.by_segment {
        if referenced.contains(id) {
            continue;
        }
        // A split segment's manifest, or a one-object segment's object (its own manifest).
        let Some(manifest) = objs.iter().find(|o| Suffix::of(&o.key).is_some_and(Suffix::commits)) else { continue };
        let Some((partition, _)) = listing.prefixes.owner(&manifest.key) else { continue };
        if !opts.partition_in_scope(&partition) {
            continue;
        }
        let aiven = Suffix::of(&manifest.key) == Some(Suffix::AivenManifest);
        let missing: Vec<&str> = match Suffix::of(&manifest.key) {
            Some(Suffix::Segment) => Vec::new(),
            _ => [Suffix::Log, Suffix::Indexes]
                .into_iter()
                .filter(|s| !objs.iter().any(|o| Suffix::of(&o.key) == Some(*s)))
                .map(Suffix::dotted)
                .collect(),
        };
        let bytes = objs.iter().map(|o| o.size).sum();
        let part = report.partitions.entry(partition).or_default();
        let segment_id = id.clone();
        // Aiven's manifest names its start offset as its key does.
        let read = match aiven {
            true => crate::runtime()
                .block_on(store.storage().read_aiven_manifest(&manifest.key))
                .map(|_| listing.prefixes.segment_key(&manifest.key).map_or(-1, |k| k.start_offset)),
            false => store.read_manifest(&manifest.key).map(|m| m.metadata.start_offset),
        };
        match read {
            Ok(start_offset) if missing.is_empty() => {
                part.unreferenced.push(UnreferencedSegment { segment_id, start_offset, bytes })
            }
            read => {
                let mut why: Vec<String> = read.err().map(|e| e.full_message()).into_iter().collect();
                if !missing.is_empty() {
                    why.push(format!("missing {}", missing.join(", ")));
                }
                let start_offset = listing.prefixes.segment_key(&manifest.key).map_or(-1, |k| k.start_offset);
                let mut keys: Vec<String> = objs.iter().map(|o| o.key.clone()).collect();
                keys.sort();
                part.damaged.push(DamagedSegment { segment_id, start_offset, bytes, problem: why.join("; "), keys });
            }
        }
        kept.insert(id.clone());
    }
    kept
}

/// Adds to the report, as orphans, the objects in scope of segments neither in `referenced` nor `kept`,
/// then the temporary objects of uploads to keys in scope.
pub(super) fn collect_orphans(
    referenced: &HashSet<String>,
    kept: &HashSet<String>,
    opts: &AuditOptions,
    listing: &Listing<'_>,
    report: &mut Report,
) {
    for o in listing.objects {
        let Some((partition, id)) = listing.prefixes.owner(&o.key) else { continue };
        if !opts.partition_in_scope(&partition) || referenced.contains(&id) || kept.contains(&id) {
            continue;
        }
        let older_than_min_age = listing.old(o, opts.min_age);
        let part = report.partitions.entry(partition).or_default();
        part.orphans.push(Orphan { key: o.key.clone(), bytes: o.size, older_than_min_age });
    }
    for t in listing.temporary {
        let Some((partition, _)) = listing.prefixes.owner(&t.target) else { continue };
        if !opts.partition_in_scope(&partition) {
            continue;
        }
        let older_than_min_age = listing.old(&t.meta, opts.min_age);
        let part = report.partitions.entry(partition).or_default();
        part.orphans.push(Orphan { key: t.meta.key.clone(), bytes: t.meta.size, older_than_min_age });
    }
}

/// Adds to the report the incomplete uploads in scope: those to segments' keys with their partition, the
/// others (someone else's uploads, left alone) only when no topic narrows the audit.
pub(super) fn check_uploads(
    uploads: Vec<IncompleteUpload>,
    opts: &AuditOptions,
    listing: &Listing<'_>,
    report: &mut Report,
) {
    for upload in uploads {
        let partition = listing.prefixes.owner(&upload.key).map(|(p, _)| p);
        let in_scope = match &partition {
            Some(p) => opts.partition_in_scope(p),
            None => opts.topic.is_none(),
        };
        if !in_scope {
            continue;
        }
        let old =
            upload.last_written().is_some_and(|t| listing.now.duration_since(t).unwrap_or_default() >= opts.min_age);
        report.uploads.push(UploadFinding { upload, partition: partition.map(|p| p.0), old });
    }
}
