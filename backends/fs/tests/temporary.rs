//! The temporary files a crash mid-upload leaves (`.rsm-tmp-*` beside the key) on the real filesystem store:
//! listed by `list_temporary` (never by `list`), removed by the orphan sweep once older than its safety age,
//! and removed with their segment when the segment is deleted. Each leftover is written by hand, as the store
//! writes it, with the age a crash long ago would give it.

use bytes::Bytes;
use rsm_backend_fs::FsBackend;
use rsm_core::storage::{ORPHAN_MIN_AGE, SegmentKeys};
use rsm_core::testkit::rsm_contract::{Fixture, collect};
use rsm_core::{RemoteStorageManager, StorageBackend};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A store in a fresh directory, with a fixture of real segments under a prefix of its own.
fn store(name: &str) -> (tempfile::TempDir, Arc<FsBackend>, Fixture) {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(FsBackend::create(dir.path().join("store"), true).unwrap());
    let f = Fixture::new(backend.clone(), name);
    (dir, backend, f)
}

/// Leaves a temporary file of an upload to `key` as the store names it (`.rsm-tmp-{file name}.{random}`
/// beside the key), last written `age` ago. Returns its path.
fn leave_tmp(b: &FsBackend, key: &str, age: Duration) -> PathBuf {
    let target = b.root().join(key);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let name = target.file_name().unwrap().to_string_lossy().into_owned();
    let tmp = target.with_file_name(format!(".rsm-tmp-{name}.{}", rsm_core::Uuid::random()));
    std::fs::write(&tmp, b"half an upload").unwrap();
    let f = std::fs::File::options().write(true).open(&tmp).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
    tmp
}

/// The key of a file under the store's root.
fn key_of(b: &FsBackend, p: &Path) -> String {
    p.strip_prefix(b.root()).unwrap().to_string_lossy().into_owned()
}

const OLD: Duration = Duration::from_secs(2 * 3600);
const YOUNG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn the_sweep_removes_old_temporary_files_and_keeps_young_ones() {
    let (_dir, b, f) = store("sweep-tmp");
    let (_, md0, data0) = f.segment(0);
    let (_, md1, _) = f.segment(1);
    let (_, md2, _) = f.segment(2);
    f.rsm.copy_log_segment_data(&md0, &data0).await.unwrap();
    let tp = md0.remote_log_segment_id.topic_id_partition.clone();
    let (k0, k1, k2): (SegmentKeys, SegmentKeys, SegmentKeys) = (f.rsm.keys(&md0), f.rsm.keys(&md1), f.rsm.keys(&md2));
    // A crash long ago during the copy of segment 1 (its .log and index bundle half written), and during a
    // second copy of the committed segment 0 (its manifest); an upload of segment 2 still writing.
    let old = [leave_tmp(&b, &k1.log, OLD), leave_tmp(&b, &k1.indexes, OLD), leave_tmp(&b, &k0.manifest, OLD)];
    let young = leave_tmp(&b, &k2.log, YOUNG);

    // Hidden from the listing of objects, shown by the listing of temporary objects with their targets.
    let prefix = rsm_core::storage::partition_prefix(&f.config.key_prefix, &tp);
    assert_eq!(b.list(&prefix).await.unwrap().len(), 3, "only the committed segment's objects are objects");
    let listed = b.list_temporary(&prefix).await.unwrap();
    let mut targets: Vec<&str> = listed.iter().map(|t| t.target.as_str()).collect();
    targets.sort();
    let mut want = vec![k0.manifest.as_str(), k1.log.as_str(), k1.indexes.as_str(), k2.log.as_str()];
    want.sort();
    assert_eq!(targets, want);
    assert!(listed.iter().all(|t| t.meta.key.contains("/.rsm-tmp-") && t.meta.size == 14), "{listed:?}");
    // A prefix narrower than the partition finds only its own.
    let only_2 = b.list_temporary(k2.log.strip_suffix("log").unwrap()).await.unwrap();
    assert_eq!(only_2.len(), 1);
    assert_eq!(only_2[0].meta.key, key_of(&b, &young));

    // The sweep, at its safety age, removes the old ones and reports each; the young one stays.
    let swept = f.rsm.sweep_orphans(Some(&tp), ORPHAN_MIN_AGE).await.unwrap();
    let mut want: Vec<String> = old.iter().map(|p| key_of(&b, p)).collect();
    want.sort();
    assert_eq!(swept, want);
    for p in &old {
        assert!(!p.exists(), "{} removed", p.display());
    }
    assert!(young.exists(), "an upload younger than {ORPHAN_MIN_AGE:?} may be in flight: kept");
    // The committed segment is whole.
    let got = collect(f.fresh_rsm().fetch_log_segment(&md0, 0, None).await.unwrap()).await.unwrap();
    assert!(got == std::fs::read(&data0.log_segment).unwrap(), "segment 0 reads back whole");

    // A sweep of the whole store finds leftovers in every partition; a zero age takes the young one too.
    let elsewhere = leave_tmp(&b, &format!("{}other-topic-id/3/x.log", f.config.key_prefix), OLD);
    let swept = f.rsm.sweep_orphans(None, ORPHAN_MIN_AGE).await.unwrap();
    assert_eq!(swept, vec![key_of(&b, &elsewhere)]);
    assert!(!elsewhere.exists());
    let swept = f.rsm.sweep_orphans(Some(&tp), Duration::ZERO).await.unwrap();
    assert_eq!(swept, vec![key_of(&b, &young)]);
    assert!(b.list_temporary("").await.unwrap().is_empty());
}

#[tokio::test]
async fn deleting_a_segment_removes_its_temporary_files() {
    let (_dir, b, f) = store("delete-tmp");
    let (_, md0, data0) = f.segment(0);
    let (_, md1, _) = f.segment(1);
    let (_, md2, _) = f.segment(2);
    f.rsm.copy_log_segment_data(&md0, &data0).await.unwrap();
    let (k0, k1, k2) = (f.rsm.keys(&md0), f.rsm.keys(&md1), f.rsm.keys(&md2));
    // Segment 1's copy was killed just now: its .log is uploaded, its index bundle and manifest half written.
    b.put_bytes(&k1.log, Bytes::from_static(b"uploaded")).await.unwrap();
    let tmp1 = [leave_tmp(&b, &k1.indexes, YOUNG), leave_tmp(&b, &k1.manifest, YOUNG)];
    // A retried copy of segment 0 left one too; segment 2's upload is someone else's.
    let tmp0 = leave_tmp(&b, &k0.log, OLD);
    let tmp2 = leave_tmp(&b, &k2.log, YOUNG);

    // The broker deletes the unfinished segment: its objects and its temporary files go, whatever their
    // age; the other segments' files stay.
    f.rsm.delete_log_segment_data(&md1).await.unwrap();
    for p in &tmp1 {
        assert!(!p.exists(), "{} removed with its segment", p.display());
    }
    assert!(!b.root().join(&k1.log).exists());
    assert!(tmp0.exists() && tmp2.exists(), "other segments' temporary files stay");
    let got = collect(f.fresh_rsm().fetch_log_segment(&md0, 0, None).await.unwrap()).await.unwrap();
    assert!(got == std::fs::read(&data0.log_segment).unwrap(), "segment 0 reads back whole");

    // Deleting the committed segment takes its leftover too; then the partition holds only segment 2's.
    f.rsm.delete_log_segment_data(&md0).await.unwrap();
    assert!(!tmp0.exists());
    let tp = md0.remote_log_segment_id.topic_id_partition.clone();
    let prefix = rsm_core::storage::partition_prefix(&f.config.key_prefix, &tp);
    assert!(b.list(&prefix).await.unwrap().is_empty());
    let left = b.list_temporary(&prefix).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].meta.key, key_of(&b, &tmp2));
    // Deleting segment 2, never copied, removes its file, and the emptied partition directory goes.
    f.rsm.delete_log_segment_data(&md2).await.unwrap();
    assert!(!tmp2.exists());
    assert!(!tmp2.parent().unwrap().exists(), "the emptied partition directory is pruned");
}
