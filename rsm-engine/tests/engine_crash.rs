//! Crash test of the engine: a child process runs the engine over real partition directories (copy, local
//! deletion, remote retention) and is killed with SIGKILL at a random moment, at least 50 times; each
//! restart goes on from where the last one was cut. After every kill:
//! - every segment the metadata has as copy finished reads back from the store byte for byte;
//! - every segment in the store is one the metadata has (nothing copied that the metadata does not know);
//! - no local segment is gone unless its copy was finishing (the child writes, fsynced, each copy finished it
//!   is about to record, before it records it);
//! - every segment retention keeps is either local or copied: none lost.
//!
//! Between some kills an operator runs an expiration (`rsm expire`) or deletes a copied segment that
//! retention keeps from the middle of a remote log while its local copy is still there (`rsm delete
//! --force`): its offsets must then stay local, through every later run and kill.
//!
//! When a round's work is all done, a new round starts on new partitions. No libtest harness: the binary is
//! the parent and, with `RSM_ENGINE_CRASH_CHILD` set, the child.

use async_trait::async_trait;
use rsm_core::backend::StorageBackend;
use rsm_core::format::partition::LocalPartition;
use rsm_core::model::{RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, Uuid};
use rsm_core::rsm::RemoteStorageManager;
use rsm_core::storage::TieredStorage;
use rsm_core::testkit::log_writer::{PartitionWriter, Record};
use rsm_core::{Result, TieredConfig};
use rsm_engine::{EngineConfig, RemoteLogManager, Role};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::{RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KILLS: usize = 60;
const PARTITIONS: i32 = 4;
const T0: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;
/// The child's clock: every closed segment is past local retention (1 ms); those whose records are older
/// all older than T0 + 12 h are past remote retention (24 h) too.
const NOW: i64 = T0 + 36 * HOUR;

/// The metadata manager, writing each copy finished it is about to record to an oracle file first, one line
/// `partition start-offset` each, in a single write so that a kill never leaves half a line.
struct Recording {
    inner: LocalMetadataManager,
    oracle: Mutex<std::fs::File>,
    /// Start offsets of the segments added by this process (a copy starts and finishes in one run).
    starts: Mutex<std::collections::HashMap<Uuid, i64>>,
}

#[async_trait]
impl RemoteLogMetadataManager for Recording {
    async fn add_remote_log_segment_metadata(&self, m: &RemoteLogSegmentMetadata) -> Result<()> {
        self.starts.lock().unwrap().insert(m.remote_log_segment_id.id, m.start_offset);
        self.inner.add_remote_log_segment_metadata(m).await
    }
    async fn update_remote_log_segment_metadata(&self, u: &RemoteLogSegmentMetadataUpdate) -> Result<()> {
        if u.state == RemoteLogSegmentState::CopySegmentFinished {
            let start = self.starts.lock().unwrap()[&u.remote_log_segment_id.id];
            // One write call per line: `writeln!` on a file writes each piece with a call of its own, and a
            // kill between them left a torn line that the next child's line was appended to.
            let line = format!("{} {start}\n", u.remote_log_segment_id.topic_id_partition.topic_partition.partition);
            let mut f = self.oracle.lock().unwrap();
            f.write_all(line.as_bytes()).unwrap();
            f.sync_data().unwrap();
        }
        self.inner.update_remote_log_segment_metadata(u).await
    }
    async fn put_remote_partition_delete_metadata(&self, m: &RemotePartitionDeleteMetadata) -> Result<()> {
        self.inner.put_remote_partition_delete_metadata(m).await
    }
    async fn list_remote_log_segments(&self, p: &TopicIdPartition) -> Result<Vec<RemoteLogSegmentMetadata>> {
        self.inner.list_remote_log_segments(p).await
    }
    async fn list_remote_log_segments_for_epoch(
        &self,
        p: &TopicIdPartition,
        e: i32,
    ) -> Result<Vec<RemoteLogSegmentMetadata>> {
        self.inner.list_remote_log_segments_for_epoch(p, e).await
    }
    async fn remote_log_segment_metadata(
        &self,
        p: &TopicIdPartition,
        e: i32,
        o: i64,
    ) -> Result<Option<RemoteLogSegmentMetadata>> {
        self.inner.remote_log_segment_metadata(p, e, o).await
    }
    async fn highest_offset_for_epoch(&self, p: &TopicIdPartition, e: i32) -> Result<Option<i64>> {
        self.inner.highest_offset_for_epoch(p, e).await
    }
    async fn remote_log_size(&self, p: &TopicIdPartition, e: i32) -> Result<u64> {
        self.inner.remote_log_size(p, e).await
    }
    async fn earliest_log_offset(&self, p: &TopicIdPartition) -> Result<Option<i64>> {
        self.inner.earliest_log_offset(p).await
    }
    async fn on_partition_leadership_changes(&self, l: &[TopicIdPartition], f: &[TopicIdPartition]) -> Result<()> {
        self.inner.on_partition_leadership_changes(l, f).await
    }
    async fn on_stop_partitions(&self, p: &[TopicIdPartition]) -> Result<()> {
        self.inner.on_stop_partitions(p).await
    }
    fn is_ready(&self) -> bool {
        self.inner.is_ready()
    }
    fn is_partition_ready(&self, partition: &TopicIdPartition) -> bool {
        self.inner.is_partition_ready(partition)
    }
    async fn close(&self) -> Result<()> {
        self.inner.close().await
    }
}

fn storage(root: &Path) -> Arc<TieredStorage> {
    let backend: Arc<dyn StorageBackend> = Arc::new(rsm_backend_fs::FsBackend::new(root, true).unwrap());
    Arc::new(TieredStorage::new(backend, TieredConfig::default()))
}

fn config() -> EngineConfig {
    let props: BTreeMap<String, String> = [
        ("remote.log.storage.system.enable", "true"),
        ("remote.log.storage.manager.class.name", "rsm"),
        ("remote.storage.enable", "true"),
        ("local.retention.ms", "1"),
        ("retention.ms", &(24 * HOUR).to_string()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    EngineConfig::from_props(&props).unwrap().with_clock(Arc::new(|| NOW))
}

fn child(round: &Path) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let meta = round.join("metadata");
        let oracle = std::fs::OpenOptions::new().create(true).append(true).open(round.join("oracle")).unwrap();
        let metadata = Recording {
            inner: LocalMetadataManager::open(LocalMetadataConfig::new(&meta)).unwrap(),
            oracle: Mutex::new(oracle),
            starts: Mutex::default(),
        };
        let failed =
            rsm_metadata::failed_deletions::LocalFailedDeletions::open(&meta.join("failed-deletions")).unwrap();
        let engine =
            RemoteLogManager::new(config(), storage(&round.join("store")), Arc::new(metadata), Arc::new(failed))
                .unwrap();
        for p in 0..PARTITIONS {
            engine
                .add_partition(&round.join("logs").join(format!("crash-{p}")), Role::Leader { epoch: 0 }, None)
                .await
                .unwrap();
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready").unwrap();
        out.flush().unwrap();
        loop {
            let mut busy = false;
            for (tp, r) in engine.run_all().await {
                let r = r.unwrap_or_else(|e| panic!("{tp}: {e}"));
                let e = &r.expiration;
                busy |= !r.copy.copied.is_empty()
                    || !e.expired.is_empty()
                    || !e.local_deleted.is_empty()
                    || !e.retried.is_empty()
                    || !e.abandoned_copies.is_empty();
            }
            if !busy {
                writeln!(out, "done").unwrap();
                out.flush().unwrap();
                std::thread::sleep(Duration::from_secs(60));
            }
        }
    });
}

/// A round: new partitions, their closed segments kept aside to compare with.
struct Round {
    dir: PathBuf,
    /// (partition, base offset) -> (original bytes, max timestamp)
    originals: BTreeMap<(i32, i64), (Vec<u8>, i64)>,
    /// Remote segments an operator deleted from the middle of the remote log between kills (`rsm delete
    /// --force`), while their local copy was still there: (partition, base offset).
    deleted: HashSet<(i32, i64)>,
}

fn new_round(root: &Path, n: usize) -> Round {
    let dir = root.join(format!("round-{n}"));
    std::fs::create_dir_all(dir.join("store")).unwrap();
    let mut originals = BTreeMap::new();
    const RECORDS: i64 = 2_400;
    for p in 0..PARTITIONS {
        // Record timestamps spread over a day from T0, so retention splits the segments.
        let pdir = dir.join("logs").join(format!("crash-{p}"));
        let mut w = PartitionWriter::create(&pdir, Uuid::random(), 16 * 1024, 4096).unwrap();
        for b in 0..RECORDS / 10 {
            let records: Vec<Record> = (0..10)
                .map(|i| {
                    let offset = b * 10 + i;
                    Record {
                        key: Some(format!("k{offset}").into_bytes()),
                        value: Some(vec![b'a' + (offset % 26) as u8; 60 + (n + p as usize) % 7]),
                        headers: Vec::new(),
                        timestamp: T0 + offset * 24 * HOUR / RECORDS,
                    }
                })
                .collect();
            w.append(&records).unwrap();
        }
        w.finish().unwrap();
        let lp = LocalPartition::open(&pdir).unwrap();
        for s in lp.closed_segments() {
            let md = lp.segment_metadata(s, 0, 0).unwrap();
            originals.insert((p, s.base_offset), (std::fs::read(&s.log).unwrap(), md.max_timestamp_ms));
        }
    }
    Round { dir, originals, deleted: HashSet::new() }
}

/// An engine of the operator's own over the round (the child is dead, so its locks are free).
fn operator_engine(round: &Round, rt: &tokio::runtime::Runtime) -> (RemoteLogManager, Vec<TopicIdPartition>) {
    rt.block_on(async {
        let engine = RemoteLogManager::with_local_metadata(
            config(),
            storage(&round.dir.join("store")),
            &round.dir.join("metadata"),
        )
        .unwrap();
        let mut tps = Vec::new();
        for p in 0..PARTITIONS {
            let dir = round.dir.join("logs").join(format!("crash-{p}"));
            tps.push(engine.add_partition(&dir, Role::Leader { epoch: 0 }, None).await.unwrap());
        }
        (engine, tps)
    })
}

/// `rsm expire` over every partition of the round.
fn operator_expires(round: &Round) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (engine, tps) = operator_engine(round, &rt);
    rt.block_on(async {
        for tp in &tps {
            engine.expire_partition(tp).await.unwrap();
        }
        engine.close().await.unwrap();
    });
}

/// `rsm delete --force` of a copied segment from the middle of a partition's remote log whose local copy is
/// still there, if there is one.
fn operator_deletes(round: &mut Round, pick: u64) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (engine, tps) = operator_engine(round, &rt);
    rt.block_on(async {
        // The first partition from `pick` on that has such a segment.
        for i in 0..PARTITIONS {
            let p = ((pick + i as u64) % PARTITIONS as u64) as i32;
            let tp = &tps[p as usize];
            let mut copied: Vec<_> = engine
                .metadata()
                .list_remote_log_segments(tp)
                .await
                .unwrap()
                .into_iter()
                .filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished)
                .collect();
            copied.sort_by_key(|m| m.start_offset);
            let dir = round.dir.join("logs").join(format!("crash-{p}"));
            let last = copied.len().saturating_sub(1);
            // One that retention keeps: its offsets must then survive, locally.
            let candidate = (1..last).map(|i| &copied[i]).find(|m| {
                m.max_timestamp_ms >= NOW - 24 * HOUR && dir.join(format!("{:020}.log", m.start_offset)).exists()
            });
            if let Some(m) = candidate {
                assert!(!engine.deletion_cut(tp, &m.remote_log_segment_id.id, None).await.unwrap().holes.is_empty());
                engine.delete_segment(tp, &m.remote_log_segment_id.id).await.unwrap();
                round.deleted.insert((p, m.start_offset));
                break;
            }
        }
        engine.close().await.unwrap();
    });
}

/// The checks after a kill (or at the end of a round, `finished`). Returns the copy-finished count.
fn check(round: &Round, run: usize, finished: bool) -> usize {
    let ctx = |what: String| format!("kill {run}, {}: {what}", round.dir.display());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let m = LocalMetadataManager::open_existing_read_only(&round.dir.join("metadata")).unwrap();
    let segments = m.all_segments().unwrap();
    let st = storage(&round.dir.join("store"));
    // (partition, start offset) of every copy finished the child was about to record.
    let oracle: HashSet<(i32, i64)> = std::fs::read_to_string(round.dir.join("oracle"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            l.split_once(' ')
                .and_then(|(p, o)| Some((p.parse().ok()?, o.parse().ok()?)))
                .unwrap_or_else(|| panic!("{}", ctx(format!("oracle line {l:?} is torn: the oracle lost a copy"))))
        })
        .collect();
    let known: HashSet<Uuid> = segments.iter().map(|s| s.remote_log_segment_id.id).collect();
    for manifest in rt.block_on(st.list_segments(None)).unwrap() {
        let id = manifest.metadata.remote_log_segment_id.id;
        assert!(known.contains(&id), "{}", ctx(format!("segment {id} is in the store, not in the metadata")));
    }
    let partition_of = |tp: &TopicIdPartition| tp.topic_partition.partition;
    let mut copied: BTreeMap<(i32, i64), &RemoteLogSegmentMetadata> = BTreeMap::new();
    for s in segments.iter().filter(|s| s.state == RemoteLogSegmentState::CopySegmentFinished) {
        let key = (partition_of(&s.remote_log_segment_id.topic_id_partition), s.start_offset);
        let (orig, _) =
            round.originals.get(&key).unwrap_or_else(|| panic!("{}", ctx(format!("no original at {key:?}"))));
        let bytes: Vec<u8> = rt
            .block_on(async {
                use futures::TryStreamExt;
                let chunks: Vec<bytes::Bytes> = st.fetch_log_segment(s, 0, None).await?.try_collect().await?;
                Ok::<_, rsm_core::Error>(chunks.concat())
            })
            .unwrap_or_else(|e| panic!("{}", ctx(format!("copied segment at {key:?} does not read: {e}"))));
        assert!(bytes == *orig, "{}", ctx(format!("copied segment at {key:?} differs from the original")));
        copied.insert(key, s);
    }
    let cut = NOW - 24 * HOUR;
    for (&(p, base), (_, ts)) in &round.originals {
        let local = round.dir.join("logs").join(format!("crash-{p}")).join(format!("{base:020}.log")).exists();
        if !local {
            assert!(
                oracle.contains(&(p, base)),
                "{}",
                ctx(format!("local segment {p}@{base} is gone, and no copy of it was finishing"))
            );
            // Segments retention removes are gone from the metadata too; those it keeps must be there.
            let expired = *ts < cut;
            if !expired {
                assert!(copied.contains_key(&(p, base)), "{}", ctx(format!("segment {p}@{base} is lost")));
            }
        }
        // From a gap an operator cut in the remote log on, local segments stay: that is how their offsets
        // survive.
        let gap_from = round
            .deleted
            .iter()
            .filter(|(dp, b)| *dp == p && round.originals[&(*dp, *b)].1 >= cut)
            .map(|(_, b)| *b)
            .min();
        if gap_from.is_some_and(|g| base >= g) {
            assert!(
                local || copied.contains_key(&(p, base)),
                "{}",
                ctx(format!("segment {p}@{base} past a gap is lost"))
            );
            if round.deleted.contains(&(p, base)) {
                assert!(local, "{}", ctx(format!("segment {p}@{base}, deleted remotely by hand, is gone locally too")));
            }
            continue;
        }
        if finished {
            assert!(!local, "{}", ctx(format!("segment {p}@{base} is still local at the end")));
            assert_eq!(
                copied.contains_key(&(p, base)),
                *ts >= cut,
                "{}",
                ctx(format!("segment {p}@{base} at the end"))
            );
        }
    }
    if finished {
        assert!(
            segments.iter().all(|s| s.state == RemoteLogSegmentState::CopySegmentFinished),
            "{}",
            ctx("unfinished metadata at the end".into())
        );
    }
    copied.len()
}

fn main() {
    if let Ok(dir) = std::env::var("RSM_ENGINE_CRASH_CHILD") {
        child(Path::new(&dir));
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut rng = rsm_core::testkit::log_writer::Rng::new(seed);
    let mut next = || rng.next_u64();
    println!("engine crash test: {KILLS} kills, seed {seed}");
    let started = Instant::now();
    let (mut rounds, mut kills, mut copied_seen) = (0, 0, 0);
    let (mut expires, mut deletes) = (0, 0);
    let mut round = new_round(root.path(), rounds);
    while kills < KILLS {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("RSM_ENGINE_CRASH_CHILD", &round.dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready", "kill {kills}: the child did not start");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in lines.map_while(|l| l.ok()) {
                if l == "done" {
                    let _ = tx.send(());
                }
            }
        });
        // Most kills come early in a child's life; one in eight lets it work longer, so rounds finish.
        let r = next();
        let wait = Duration::from_micros(if r % 8 == 0 { 100_000 + r % 900_000 } else { 1_000 + r % 80_000 });
        let done = rx.recv_timeout(wait).is_ok();
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if done {
            copied_seen += check(&round, kills, true);
            rounds += 1;
            round = new_round(root.path(), rounds);
        } else {
            kills += 1;
            check(&round, kills, false);
            // Between some kills an operator runs `rsm expire` or `rsm delete --force` of a middle segment.
            match next() % 4 {
                0 => {
                    operator_expires(&round);
                    expires += 1;
                }
                1 => {
                    let before = round.deleted.len();
                    operator_deletes(&mut round, next());
                    deletes += round.deleted.len() - before;
                }
                _ => continue,
            }
            check(&round, kills, false);
        }
    }
    println!(
        "{kills} kills over {} rounds in {:.1} s: metadata and store agreed after every kill, no segment lost, \
         no local segment deleted before its copy finished; {copied_seen} segments copied in the finished rounds; \
         between kills {expires} expire runs and {deletes} segments deleted from the middle of a remote log, every \
         offset kept locally or remotely",
        rounds + 1,
        started.elapsed().as_secs_f64()
    );
    assert!(deletes >= 1, "no segment was deleted from the middle of a remote log: the gap path was not tried");
    assert!(rounds >= 1, "no round finished: the kills came too early to test the whole life of a segment");
    println!("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
}
