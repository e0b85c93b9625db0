//! Crash points: `rsm copy` killed with SIGKILL at 50+ random moments of its run. After each kill the store
//! shows only whole segments, each byte-identical to its source; a rerun copies only what is missing and
//! leaves exactly one whole copy of every closed segment; what the kill left behind (objects of a segment
//! without a manifest, and the uploads' temporary files `.rsm-tmp-*`, which the store's listing never shows)
//! is found by the orphan sweep, after which the store holds exactly the whole segments' objects.
//!
//! `RSM_CRASH_SEED=<n>` repeats a run's delays; `RSM_CRASH_KILLS=<n>` changes how many kills (default 50).

use rsm_core::Uuid;
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_facade::Store;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{Rng, files};

fn copy_command(dir: &Path, url: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rsm"));
    c.args(["copy", "--dir", dir.to_str().unwrap(), "--store", url, "--set", "chunk.size=65536"]);
    c
}

fn is_tmp(p: &Path) -> bool {
    p.file_name().unwrap().to_string_lossy().starts_with(".rsm-tmp-")
}

/// Every segment the store lists must be whole and byte-identical to its source (log and offset index);
/// returns how many there are by base offset.
fn check_whole_segments(url: &str, partition: &LocalPartition, when: &str) -> BTreeMap<i64, usize> {
    let store = Store::open(url, &BTreeMap::new()).unwrap();
    let mut by_offset = BTreeMap::new();
    for s in store.scan_segments(None).unwrap() {
        let m = s.manifest.unwrap_or_else(|e| panic!("{when}: unreadable manifest {}: {e}", s.manifest_key));
        assert!(s.missing.is_empty(), "{when}: {} lacks {:?}", s.manifest_key, s.missing);
        let md = &m.metadata;
        let seg = partition
            .closed_segments()
            .iter()
            .find(|x| x.base_offset == md.start_offset)
            .unwrap_or_else(|| panic!("{when}: segment at {} is no closed local segment", md.start_offset));
        let mut got = Vec::new();
        store.fetch(md, 0, None).unwrap().read_to_end(&mut got).unwrap();
        assert!(got == std::fs::read(&seg.log).unwrap(), "{when}: segment {} differs from its source", md.start_offset);
        let index = store.fetch_index(md, rsm_core::IndexType::Offset).unwrap();
        assert!(index == std::fs::read(seg.log.with_extension("index")).unwrap(), "{when}: offset index differs");
        *by_offset.entry(md.start_offset).or_insert(0) += 1;
    }
    by_offset
}

#[test]
fn copy_killed_at_random_moments_leaves_only_whole_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 64 * 1024,
        records: 3_000,
        records_per_batch: 10,
        value_bytes: 200,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 11,
        compression: None,
    };
    let dir = generate_partition(&tmp.path().join("orders-3"), &spec).unwrap();
    let partition = LocalPartition::open(&dir).unwrap();
    let closed: BTreeSet<i64> = partition.closed_segments().iter().map(|s| s.base_offset).collect();
    assert!(closed.len() >= 8, "{} closed segments", closed.len());

    // How long a whole copy takes here, process start included: the kills spread over that. The median of
    // three copies, so one cold first run (binary and files not yet in the page cache) does not stretch the
    // window past what the killed copies take, which left most kills landing after the copy had finished.
    let mut runs: Vec<Duration> = (0..3)
        .map(|i| {
            let calibration = tmp.path().join(format!("calibration-{i}"));
            std::fs::create_dir(&calibration).unwrap();
            let t = Instant::now();
            let out = copy_command(&dir, &format!("file://{}", calibration.display())).output().unwrap();
            let took = t.elapsed();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            took
        })
        .collect();
    runs.sort();
    let full = runs[1];

    let seed = std::env::var("RSM_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    let kills: usize = std::env::var("RSM_CRASH_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(50);
    eprintln!("crash points: {kills} kills over a {full:?} copy of {} segments, RSM_CRASH_SEED={seed}", closed.len());
    let mut rng = Rng(seed);
    let (mut mid_copy, mut orphans_swept, mut tmp_left) = (0, 0, 0);
    for kill in 0..kills {
        let root = tmp.path().join(format!("store-{kill}"));
        std::fs::create_dir(&root).unwrap();
        let url = format!("file://{}", root.display());
        let delay = Duration::from_micros(rng.below(full.as_micros() as u64));
        let when = format!("kill {kill} after {delay:?} (RSM_CRASH_SEED={seed})");
        let mut child = copy_command(&dir, &url).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL; the copy may have finished already
        child.wait().unwrap();

        // Only whole segments are visible, each at most once, through the facade and through `rsm ls`.
        let whole = check_whole_segments(&url, &partition, &when);
        assert!(whole.values().all(|&n| n == 1), "{when}: {whole:?}");
        let ls = Command::new(env!("CARGO_BIN_EXE_rsm")).args(["ls", "--store", &url]).output().unwrap();
        assert!(ls.status.success(), "{when}: rsm ls: {}", String::from_utf8_lossy(&ls.stdout));
        let listed = String::from_utf8_lossy(&ls.stdout);
        assert!(listed.contains(&format!("total: {} segments", whole.len())), "{when}: {listed}");
        if !whole.is_empty() && whole.len() < closed.len() {
            mid_copy += 1;
        }

        // The rerun copies only what is missing, and says it skipped the rest.
        let rerun = copy_command(&dir, &url).output().unwrap();
        let said = String::from_utf8_lossy(&rerun.stdout);
        assert!(rerun.status.success(), "{when}: rerun: {}", String::from_utf8_lossy(&rerun.stderr));
        assert_eq!(said.matches("already in the store, skipped").count(), whole.len(), "{when}: {said}");
        assert!(said.contains(&format!("copied {} segments", closed.len() - whole.len())), "{when}: {said}");
        let after = check_whole_segments(&url, &partition, &format!("{when}, rerun"));
        assert_eq!(after.keys().copied().collect::<BTreeSet<_>>(), closed, "{when}: every closed segment once");
        assert!(after.values().all(|&n| n == 1), "{when}: {after:?}");

        // What the kill left: objects of a segment without a manifest, found by the sweep.
        let store = Store::open(&url, &BTreeMap::new()).unwrap();
        let committed: BTreeSet<String> = store
            .scan_segments(None)
            .unwrap()
            .iter()
            .map(|s| s.manifest_key.trim_end_matches(".manifest").to_string())
            .collect();
        let temps_before = files(&root).into_iter().filter(|p| is_tmp(p)).count();
        // `rsm sweep` without --yes lists the leftovers and changes nothing; with it, deletes them.
        let sweep = |yes: bool| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_rsm"));
            c.args(["sweep", "--store", &url, "--min-age", "0s"]);
            if yes {
                c.arg("--yes");
            }
            let out = c.output().unwrap();
            assert!(out.status.success(), "{when}: rsm sweep: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        let listed_before = files(&root);
        let plan = sweep(false);
        assert_eq!(files(&root), listed_before, "{when}: rsm sweep without --yes changed the store");
        let done = sweep(true);
        let keys = |text: &str, verb: &str| -> Vec<String> {
            text.lines()
                .filter_map(|l| l.strip_prefix(verb))
                .map(|l| l.split('\t').next().unwrap().to_string())
                .collect()
        };
        let swept = keys(&done, "DELETE\t");
        assert_eq!(keys(&plan, "WOULD DELETE\t"), swept, "{when}: the sweep deleted what it listed");
        let temps_swept = swept.iter().filter(|k| k.rsplit('/').next().is_some_and(|n| n.starts_with(".rsm-tmp-")));
        assert_eq!(temps_swept.count(), temps_before, "{when}: the sweep finds every temporary file the kill left");
        for key in &swept {
            let stem = key.rsplit_once('.').unwrap().0;
            assert!(!committed.contains(stem), "{when}: the sweep removed {key} of a whole segment");
        }
        orphans_swept += swept.len();
        // Now the store holds exactly three objects per closed segment, and nothing else.
        let (temps, objects): (Vec<PathBuf>, Vec<PathBuf>) = files(&root).into_iter().partition(|p| is_tmp(p));
        assert!(temps.is_empty(), "{when}: temporary files left after the sweep: {temps:?}");
        let expected: BTreeSet<String> =
            committed.iter().flat_map(|s| ["log", "indexes", "manifest"].map(|e| format!("{s}.{e}"))).collect();
        let present: BTreeSet<String> =
            objects.iter().map(|p| p.strip_prefix(&root).unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(present, expected, "{when}: exactly the expected objects after the rerun and the sweep");
        assert_eq!(committed.len(), closed.len());
        tmp_left += temps_before;
        std::fs::remove_dir_all(&root).unwrap();
    }
    eprintln!(
        "crash points: {kills} kills, {mid_copy} between segments, {orphans_swept} orphan objects swept, \
         {tmp_left} temporary files left by the kills, all swept"
    );
    assert!(mid_copy >= kills / 5, "only {mid_copy} of {kills} kills landed while segments were being copied");
}
