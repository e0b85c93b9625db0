//! Deadlines of the facade's calls (what the broker plugin and the C ABI call), over a store whose calls on
//! some objects hang (a fault layer of the host's, over a filesystem store storing compressed chunks, so that
//! reads go through the stack as a cloud store's do):
//! - `fetch.timeout.ms`: a fetch waits on the store at most that long at a time (the open, that is its
//!   manifest; each piece of the log's bytes; an index), then fails as retriable naming the segment's key and
//!   the setting, instead of holding the caller's thread until the store's own timeouts (minutes);
//! - `copy.timeout.ms`: a copy that outlives it fails as retriable, and what it wrote is deleted.

use rsm_core::backend::layers::{Fault, FaultLayer, FaultRule, Layer};
use rsm_core::backend::{Op, StorageBackend};
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::{ErrorKind, IndexType, Uuid};
use rsm_facade::StoreBuilder;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The host's fault layer, kept where the test can add rules once the segment is copied.
#[derive(Clone, Debug, Default)]
struct Faults(Arc<Mutex<Option<Arc<FaultLayer>>>>);

impl Layer for Faults {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        let f = Arc::new(FaultLayer::new(inner));
        *self.0.lock().unwrap() = Some(f.clone());
        f
    }
}

impl Faults {
    fn hang(&self, key: &str) {
        self.hang_op(Op::Get, key);
    }

    fn hang_op(&self, op: Op, key: &str) {
        let f = self.0.lock().unwrap().clone().unwrap();
        f.clear();
        f.add_rule(FaultRule { op: Some(op), key: key.into(), fault: Fault::Hang, times: None });
    }

    fn clear(&self) {
        self.0.lock().unwrap().clone().unwrap().clear();
    }
}

/// A partition of 100 KiB segments (`records` records, generator seed `seed`) under `tmp`, and an empty store
/// directory beside it.
fn partition_and_store(tmp: &std::path::Path, records: u64, seed: u64) -> (LocalPartition, std::path::PathBuf) {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 100 << 10,
        records,
        records_per_batch: 8,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed,
        compression: None,
    };
    let partition = LocalPartition::open(&generate_partition(&tmp.join("t-0"), &spec).unwrap()).unwrap();
    let root = tmp.join("store");
    std::fs::create_dir(&root).unwrap();
    (partition, root)
}

#[test]
fn a_fetch_gives_up_on_a_store_that_does_not_answer_within_fetch_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let (partition, root) = partition_and_store(tmp.path(), 4000, 7);
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let settings = BTreeMap::from([
        ("fetch.timeout.ms".to_string(), "300".to_string()),
        ("chunk.size".to_string(), "65536".to_string()),
        // Compressed chunks: a filesystem store then reads through the stack, as a cloud store does.
        ("compression.enabled".to_string(), "true".to_string()),
    ]);
    let url = format!("file://{}", root.display());
    let faults = Faults::default();
    let store = StoreBuilder::new(&url, &settings).layer(faults.clone()).open().unwrap();
    store.copy(&md, &data).unwrap();
    let other_seg = partition.closed_segments()[1].clone();
    let other = partition.segment_metadata(&other_seg, 1, 0).unwrap();
    store.copy(&other, &partition.segment_data(&other_seg).unwrap()).unwrap();
    let log = std::fs::read(&data.log_segment).unwrap();
    let mut whole = Vec::new();
    store.fetch(&md, 0, None).unwrap().read_to_end(&mut whole).unwrap();
    assert!(whole == log, "a store that answers serves the segment");

    let check = |what: &str, e: rsm_core::Error, key_part: &str, t: Instant| {
        assert_eq!(e.kind(), ErrorKind::Storage, "{what}: {e}");
        assert!(e.is_transient(), "{what}: a timeout is retriable: {e}");
        let msg = e.to_string();
        assert!(msg.contains("fetch.timeout.ms (300 ms)") && msg.contains(key_part), "{what}: {msg}");
        // Far below the store's own timeouts (minutes); a liveness bound, not a speed figure.
        assert!(t.elapsed() < Duration::from_secs(30), "{what}: waited {:?}", t.elapsed());
    };
    let id = md.remote_log_segment_id.id.to_string();
    let timeouts = |s: &rsm_facade::Store| {
        s.cache_metrics()[rsm_facade::CACHE_METRICS.iter().position(|n| *n == "store-timeouts").unwrap()]
    };
    assert_eq!(timeouts(&store), 0);

    // The bytes of the log: the stream opens (its manifest reads), its first piece never comes.
    faults.hang("*.log");
    let t = Instant::now();
    let mut r = store.fetch(&md, 0, None).unwrap();
    let mut buf = vec![0u8; 4096];
    let e = r.read_into(&mut buf).unwrap_err();
    check("log bytes", e, &id, t);
    assert_eq!(r.read_into(&mut buf).unwrap(), 0, "the failed reader has ended");

    // The open: a store opened since (its manifest cache empty) whose manifest read never comes.
    let cold_faults = Faults::default();
    let cold = StoreBuilder::new(&url, &settings).layer(cold_faults.clone()).open().unwrap();
    cold_faults.hang("*.manifest");
    let t = Instant::now();
    let e = cold.fetch(&other, 0, None).unwrap_err();
    check("open", e, &other.remote_log_segment_id.id.to_string(), t);

    // An index.
    faults.hang("*.indexes");
    let t = Instant::now();
    let e = store.fetch_index(&md, IndexType::Offset).unwrap_err();
    check("index", e, &id, t);
    // Each wait that passed is counted apart (`store-timeouts`): the log's piece and the index here, the
    // open in the other store.
    assert_eq!((timeouts(&store), timeouts(&cold)), (2, 1));
}

#[test]
fn a_copy_that_outlives_copy_timeout_fails_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (partition, root) = partition_and_store(tmp.path(), 2000, 8);
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let settings = BTreeMap::from([("copy.timeout.ms".to_string(), "300".to_string())]);
    let faults = Faults::default();
    let store =
        StoreBuilder::new(&format!("file://{}", root.display()), &settings).layer(faults.clone()).open().unwrap();
    // The log and indexes go up; the manifest, the commit point, never lands.
    faults.hang_op(Op::Put, "*.manifest");
    let t = Instant::now();
    let e = store.copy(&md, &data).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(30), "waited {:?}", t.elapsed());
    assert!(e.is_transient(), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("copy.timeout.ms (300 ms)") && msg.contains("what it wrote was deleted"), "{msg}");
    assert_eq!(rsm_core::testkit::files_under(&root), Vec::<std::path::PathBuf>::new(), "the attempt left objects");
    let i = rsm_facade::CACHE_METRICS.iter().position(|n| *n == "store-timeouts").unwrap();
    assert_eq!(store.cache_metrics()[i], 1, "the copy's timeout is counted");
    // The store answering again, the same segment copies and reads back.
    faults.clear();
    store.copy(&md, &data).unwrap();
    let mut got = Vec::new();
    store.fetch(&md, 0, None).unwrap().read_to_end(&mut got).unwrap();
    assert!(got == std::fs::read(&data.log_segment).unwrap());
}

/// A fetch the circuit breaker refuses is held until `fetch.timeout.ms`, not failed at once (Kafka retries a
/// failed remote fetch at once and logs each failure with its stack trace: failing in microseconds made a
/// consumer spin and the broker log thousands of lines a second), and sends nothing; a fetch made while the
/// breaker is open succeeds if the breaker lets a call through (its probe) within the fetch's wait and the
/// store answers again, leaving it at least half its wait (a probe with less would time out and keep the
/// breaker open twice as long). Here two hung index fetches (400 ms each) open the breaker for 500 ms.
#[test]
fn a_refused_fetch_is_held_until_its_deadline_and_probes_when_the_breaker_allows() {
    let tmp = tempfile::tempdir().unwrap();
    let (partition, root) = partition_and_store(tmp.path(), 2000, 9);
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0).unwrap();
    let settings = BTreeMap::from([
        ("fetch.timeout.ms".to_string(), "400".to_string()),
        ("store.breaker.failures".to_string(), "2".to_string()),
        ("store.breaker.open.ms".to_string(), "500".to_string()),
    ]);
    let faults = Faults::default();
    let url = format!("file://{}", root.display());
    let store = StoreBuilder::new(&url, &settings).layer(faults.clone()).open().unwrap();
    store.copy(&md, &partition.segment_data(&seg).unwrap()).unwrap();
    let want = std::fs::read(partition.segment_data(&seg).unwrap().offset_index).unwrap();

    faults.hang("*.indexes");
    for _ in 0..2 {
        let e = store.fetch_index(&md, IndexType::Offset).unwrap_err();
        assert!(e.to_string().contains("fetch.timeout.ms (400 ms)"), "{e}");
    }
    faults.clear();
    let gets = || store.counts().get(Op::Get).requests;
    // Open for ~500 ms more, past this fetch's 400: refused, at its deadline, sending nothing.
    let (before, t) = (gets(), Instant::now());
    let e = store.fetch_index(&md, IndexType::Offset).unwrap_err();
    let held = t.elapsed();
    assert!(e.is_transient() && e.to_string().contains("is failing"), "{e}");
    assert!(held >= Duration::from_millis(350), "held until the deadline, not failed at once: {held:?}");
    assert_eq!(gets(), before, "a refused fetch sends nothing");
    // Open for ~100 ms more, leaving ~300 of this fetch's 400: it waits, probes, and the store answers.
    let t = Instant::now();
    let got = store.fetch_index(&md, IndexType::Offset).unwrap();
    assert_eq!(got.as_ref(), want, "the probe's answer");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    println!("a refused fetch held {held:?}; the next one waited for the probe and succeeded in {:?}", t.elapsed());
}
