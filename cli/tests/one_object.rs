//! The operator commands over one-object segments (`segment.layout=single`): a copy writes one `.segment`
//! object per segment and a rerun skips them; `ls`, `verify --dir`, `sweep` and `rebuild-metadata` see them
//! as whole segments whatever layout the command is set to, and `rebuild-metadata` gives each its trailer as
//! custom metadata, as its copy did; a missing `.segment` object is a segment with no whole copy.

use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::{CustomMetadata, Uuid};
use rsm_metadata::local::LocalMetadataManager;

mod common;
use common::{files, ok, rsm};

#[test]
fn operator_commands_know_one_object_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let url = format!("file://{}", store.display());
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 64 * 1024,
        records: 2_000,
        records_per_batch: 10,
        value_bytes: 200,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 11,
        compression: None,
    };
    let dir = generate_partition(&tmp.path().join("orders-0"), &spec).unwrap();
    let d = dir.to_str().unwrap();
    let single = ["--set", "segment.layout=single"];
    // `rsm args` with the layout setting `layout`, which must succeed.
    let run = |args: &[&str], layout: &[&str]| {
        let all: Vec<&str> = args.iter().chain(layout).copied().collect();
        ok(&all)
    };
    let is_segment = |p: &std::path::PathBuf| p.extension().is_some_and(|e| e == "segment");
    let copied = run(&["copy", "--dir", d, "--store", &url, "--create"], &single);
    let segments: Vec<_> = files(&store).into_iter().filter(is_segment).collect();
    assert!(segments.len() >= 3, "{copied}");
    let others: Vec<_> = files(&store).into_iter().filter(|p| !is_segment(p)).collect();
    assert!(others.iter().all(|p| !p.to_string_lossy().contains("00000000")), "only .segment objects: {others:?}");
    let again = run(&["copy", "--dir", d, "--store", &url], &single);
    assert_eq!(again.matches("already in the store, skipped").count(), segments.len(), "{again}");
    for layout in [&single[..], &["--set", "segment.layout=split"][..]] {
        let what = format!("{layout:?}");
        let listed = run(&["ls", "--store", &url], layout);
        assert_eq!(listed.lines().filter(|l| l.starts_with("orders-0\t")).count(), segments.len(), "{what}: {listed}");
        assert!(!listed.contains("INCOMPLETE") && !listed.contains("DAMAGED"), "{what}: {listed}");
        let v = run(&["verify", "--dir", d, "--store", &url], layout);
        assert!(v.contains(&format!("verified {} segments", segments.len())) && !v.contains("MISSING"), "{what}: {v}");
        let swept = run(&["sweep", "--min-age", "0s", "--store", &url, "--yes"], layout);
        assert!(!swept.contains(".segment"), "{what}: a one-object segment is never an orphan: {swept}");
        assert_eq!(files(&store).into_iter().filter(is_segment).count(), segments.len(), "{what}");
    }
    let metadata = tmp.path().join("metadata").display().to_string();
    let rebuilt = run(&["rebuild-metadata", "--store", &url, "--metadata-dir", &metadata], &[]);
    assert!(!rebuilt.contains("SKIPPED"), "{rebuilt}");
    // Each rebuilt segment carries its object's trailer (the object's last 32 bytes, read here as a file) as
    // its custom metadata, after the one-object tag, as its copy returned it.
    let manager = LocalMetadataManager::open_existing_read_only(std::path::Path::new(&metadata)).unwrap();
    let listed = manager.all_segments().unwrap();
    assert_eq!(listed.len(), segments.len());
    for md in &listed {
        let id = md.remote_log_segment_id.id.to_string();
        let object = segments.iter().find(|p| p.to_string_lossy().contains(&id)).expect("its object");
        let bytes = std::fs::read(object).unwrap();
        let mut want = vec![0x01];
        want.extend_from_slice(&bytes[bytes.len() - 32..]);
        assert_eq!(md.custom_metadata, Some(CustomMetadata(want)), "{id}");
    }
    drop(manager);
    // The audit against that metadata: every copied segment is a whole copy, no object an orphan.
    let audit = run(&["audit", "--store", &url, "--metadata-dir", &metadata, "--min-age", "0s"], &[]);
    assert!(audit.contains(": 0 lost, 0 orphans,") && audit.contains(" 0 unreferenced segments"), "{audit}");
    // Against metadata that names none of them (rebuilt from an empty store): each is a whole segment no
    // metadata names, kept, not garbage.
    let empty = tmp.path().join("empty-store");
    std::fs::create_dir(&empty).unwrap();
    let nothing = tmp.path().join("no-metadata").display().to_string();
    run(&["rebuild-metadata", "--store", &format!("file://{}", empty.display()), "--metadata-dir", &nothing], &[]);
    let audit = run(&["audit", "--store", &url, "--metadata-dir", &nothing, "--min-age", "0s"], &[]);
    let want = format!(
        ": 0 lost, 0 orphans, 0 stuck, 0 abandoned copies, 0 deleted, 0 gaps, 0 unverified, {} unreferenced segments",
        segments.len()
    );
    assert!(audit.contains(&want), "{audit}");
    // One segment's object removed: it has no whole copy.
    std::fs::remove_file(&segments[1]).unwrap();
    let out = rsm(&["verify", "--store", &url, "--dir", d]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && text.contains("MISSING"), "{text}");
}
