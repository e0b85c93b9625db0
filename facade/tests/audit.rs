//! `rsm_facade::audit::audit` as a host calls it: a filesystem store compared with the segments a host's
//! metadata holds, each class of finding in the report, and the deletion of orphans with its refusal.

use rsm_core::testkit::{files_under, fixture_partition};
use rsm_core::{ErrorKind, RemoteLogSegmentMetadata, RemoteLogSegmentState, Uuid};
use rsm_facade::Store;
use rsm_facade::audit::{AuditOptions, Gap, audit};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The store's files whose paths contain `part`.
fn stored(root: &Path, part: &str) -> Vec<std::path::PathBuf> {
    files_under(root).into_iter().filter(|p| p.to_string_lossy().contains(part)).collect()
}

#[test]
fn an_audit_reports_each_class_and_deletes_only_what_it_may() {
    let tmp = tempfile::tempdir().unwrap();
    let partition = fixture_partition(tmp.path(), 64 << 10, 3000);
    let closed = partition.closed_segments();
    assert!(closed.len() >= 3, "three closed segments, got {}", closed.len());
    let root = tmp.path().join("store");
    std::fs::create_dir(&root).unwrap();
    let store = Store::open(&format!("file://{}", root.display()), &BTreeMap::new()).unwrap();

    // Three segments copied; a fourth copy of the first segment's data under another id loses its manifest,
    // as an upload cut short leaves it.
    let mut copied: Vec<RemoteLogSegmentMetadata> = Vec::new();
    for seg in &closed[..3] {
        let mut md = partition.segment_metadata(seg, 0, 0).unwrap();
        store.copy(&md, &partition.segment_data(seg).unwrap()).unwrap();
        md.state = RemoteLogSegmentState::CopySegmentFinished;
        copied.push(md);
    }
    let mut cut_short = copied[0].clone();
    cut_short.remote_log_segment_id.id = Uuid::random();
    store.copy(&cut_short, &partition.segment_data(&closed[0]).unwrap()).unwrap();
    let cut_id = cut_short.remote_log_segment_id.id.to_string();
    for manifest in stored(&root, &format!("{cut_id}.manifest")) {
        std::fs::remove_file(manifest).unwrap();
    }
    // The third segment's log is lost; the metadata does not name the second.
    let lost_id = copied[2].remote_log_segment_id.id.to_string();
    std::fs::remove_file(&stored(&root, &format!("{lost_id}.log"))[0]).unwrap();
    let metadata = [copied[0].clone(), copied[2].clone()];

    let opts = AuditOptions { quick: true, ..AuditOptions::default() };
    let report = audit(&store, &metadata, &opts).unwrap();
    assert_eq!(report.partitions.len(), 1);
    let part = report.partitions.values().next().unwrap();
    assert_eq!(part.copied, 2);
    assert_eq!(part.lost.len(), 1);
    assert_eq!((part.lost[0].segment_id.as_str(), part.lost[0].problem.contains("missing .log")), (&*lost_id, true));
    assert_eq!(part.gaps, [Gap { first_offset: copied[1].start_offset, last_offset: copied[1].end_offset }]);
    let unreferenced: Vec<&str> = part.unreferenced.iter().map(|u| u.segment_id.as_str()).collect();
    assert_eq!(unreferenced, [copied[1].remote_log_segment_id.id.to_string()]);
    assert_eq!(part.unreferenced[0].start_offset, copied[1].start_offset);
    let mut orphans: Vec<&str> = part.orphans.iter().map(|o| o.key.as_str()).collect();
    orphans.sort();
    assert_eq!(orphans.len(), 2, "the cut-short copy's log and indexes: {orphans:?}");
    assert!(orphans.iter().all(|k| k.contains(&cut_id)), "{orphans:?}");
    assert!(part.orphans.iter().all(|o| o.older_than_min_age), "a safety age of zero");
    assert!(
        part.damaged.is_empty() && part.stuck.is_empty() && part.abandoned.is_empty() && part.unverified.is_empty()
    );
    assert_eq!(report.lost(), 1);
    assert!(report.deleted.is_empty(), "nothing deleted unless asked");

    // Metadata that knows nothing of the partition: every orphan looks like a stranger's, so nothing goes.
    let delete = AuditOptions { delete_orphans: true, ..opts.clone() };
    let refused = audit(&store, &[], &delete).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidArgument, "{refused}");
    assert!(refused.full_message().contains("refused"), "{refused}");
    assert_eq!(stored(&root, &cut_id).len(), 2, "nothing was deleted");

    // An orphan younger than the safety age is kept.
    let young = AuditOptions { min_age: Duration::from_secs(3600), ..delete.clone() };
    let report = audit(&store, &metadata, &young).unwrap();
    assert!(report.deleted.is_empty());
    assert!(report.partitions.values().flat_map(|p| &p.orphans).all(|o| !o.older_than_min_age));

    // The metadata of this partition: the orphans go, the unreferenced segment stays.
    let report = audit(&store, &metadata, &delete).unwrap();
    assert_eq!(report.deleted.len(), 2);
    assert!(stored(&root, &cut_id).is_empty());
    let unreferenced_id = copied[1].remote_log_segment_id.id.to_string();
    assert_eq!(stored(&root, &unreferenced_id).len(), 3, "a whole segment is never an orphan");
}
