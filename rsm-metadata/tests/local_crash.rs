//! Crash test of the local metadata log: a child process appends segment events (each acknowledged on
//! stdout only after the call returned) and is killed with SIGKILL at a random moment, 100 times over the
//! same directory. After each kill the log must open, every acknowledged event must be there, and no torn
//! record may be read. Snapshots every 7 records, so kills land in snapshots and log rolls too.
//!
//! No libtest harness: the binary is both the parent and (with `RSM_CRASH_CHILD` set) the child.

use rsm_core::model::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, TopicPartition, Uuid,
};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::{RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 100;

fn config(dir: &Path) -> LocalMetadataConfig {
    let mut c = LocalMetadataConfig::new(dir);
    c.partitions = 3;
    c.snapshot_every = 7;
    c
}

fn child(dir: &Path) {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let m = LocalMetadataManager::open(config(dir)).unwrap();
    let mut n = m.segment_count().unwrap() as i64;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    loop {
        let tp = TopicIdPartition::new(Uuid::new(5, 6), TopicPartition::new("crash", (n % 4) as i32));
        let id = RemoteLogSegmentId::new(tp, Uuid::random());
        let s = RemoteLogSegmentMetadata::new(id, n * 10, n * 10 + 9, 0, 1, 0, 10, [(0, n * 10)].into()).unwrap();
        rt.block_on(m.add_remote_log_segment_metadata(&s)).unwrap();
        writeln!(out, "started {}", s.remote_log_segment_id.id).unwrap();
        out.flush().unwrap();
        let done = RemoteLogSegmentMetadataUpdate::of(&s, RemoteLogSegmentState::CopySegmentFinished, 1, 1);
        rt.block_on(m.update_remote_log_segment_metadata(&done)).unwrap();
        writeln!(out, "finished {}", s.remote_log_segment_id.id).unwrap();
        out.flush().unwrap();
        n += 1;
    }
}

fn main() {
    if let Ok(dir) = std::env::var("RSM_CRASH_CHILD") {
        child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut rng = seed;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    println!("local metadata log crash test: {RUNS} kills, seed {seed}");
    let mut acked: HashMap<String, RemoteLogSegmentState> = HashMap::new();
    let started = Instant::now();
    for run in 0..RUNS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("RSM_CRASH_CHILD", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready", "run {run}: the child did not open the log");
        let reader = std::thread::spawn(move || lines.map_while(|l| l.ok()).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_micros(500 + next() % 40_000));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for line in reader.join().unwrap() {
            let (what, id) = line.split_once(' ').unwrap();
            let state = if what == "started" {
                RemoteLogSegmentState::CopySegmentStarted
            } else {
                RemoteLogSegmentState::CopySegmentFinished
            };
            acked.insert(id.to_string(), state);
        }
        // Every acknowledged event is there after the kill.
        let m = LocalMetadataManager::open(config(dir.path()))
            .unwrap_or_else(|e| panic!("run {run} (seed {seed}): the log does not open after a kill: {e}"));
        let have: HashMap<String, RemoteLogSegmentState> =
            m.all_segments().unwrap().into_iter().map(|s| (s.remote_log_segment_id.id.to_string(), s.state)).collect();
        for (id, state) in &acked {
            let got =
                have.get(id).unwrap_or_else(|| panic!("run {run} (seed {seed}): acknowledged segment {id} is gone"));
            if *state == RemoteLogSegmentState::CopySegmentFinished {
                assert_eq!(got, state, "run {run} (seed {seed}): segment {id} lost its copy finished");
            }
        }
        let extra = have.keys().filter(|id| !acked.contains_key(*id)).count();
        assert!(extra <= run + 1, "run {run}: {extra} segments never acknowledged (at most one a kill)");
    }
    let finished = acked.values().filter(|s| **s == RemoteLogSegmentState::CopySegmentFinished).count();
    println!(
        "{RUNS} kills in {:.1} s: {} segments acknowledged ({finished} copy finished), all present after every restart",
        started.elapsed().as_secs_f64(),
        acked.len()
    );
    assert!(finished >= RUNS / 2, "the children wrote too little to test anything ({finished} segments)");
    println!("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
}
