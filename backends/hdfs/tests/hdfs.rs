//! HDFS-specific checks on a real MiniDFS cluster (`RSM_TEST_HDFS_URL`): a segment larger than 64 MiB
//! through `TieredStorage` with the requests it costs, reads of keys that vanished, no temporary file left
//! by a failed upload, directories pruned, and the Hadoop configuration directory.

mod common;

use bytes::Bytes;
use futures::StreamExt;
use rsm_backend_hdfs::{HdfsBackend, TMP_PREFIX, from_config, from_url};
use rsm_core::backend::{CountingLayer, Op, RequestCounts};
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::testkit::rsm_contract::{Fixture, collect};
use rsm_core::testkit::unique_prefix;
use rsm_core::{ErrorKind, IndexType, RemoteStorageManager, StorageBackend, TieredConfig, TieredStorage, Uuid};
use std::sync::Arc;
use std::time::Instant;

fn snapshot(c: &RequestCounts) -> [u64; 6] {
    let c = c.snapshot();
    let (put, get) = (c.get(Op::Put), c.get(Op::Get));
    [
        put.requests,
        get.requests,
        c.get(Op::Delete).requests,
        c.get(Op::List).requests,
        put.bytes_sent,
        get.bytes_received,
    ]
}

fn delta(now: [u64; 6], then: [u64; 6]) -> String {
    let d: Vec<u64> = now.iter().zip(then).map(|(a, b)| a - b).collect();
    format!("put={} get={} delete={} list={} (bytes put={} get={})", d[0], d[1], d[2], d[3], d[4], d[5])
}

/// Files (hidden ones too) in one HDFS directory, by name.
async fn raw_names(b: &HdfsBackend, dir: &str) -> Vec<String> {
    b.client()
        .list_status(dir, false)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.path.rsplit('/').next().unwrap().to_string())
        .collect()
}

/// A generated partition whose first closed segment is larger than 64 MiB goes through copy, whole and
/// ranged fetches and delete; prints the wall times and the requests each step cost, at the contract's
/// level and, when the servers' HTTP addresses are known, at the NameNode and DataNodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_over_64_mib_copy_fetch_delete() {
    let url = url_or_skip!();
    let tmp = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 70 << 20,
        records: 380_000,
        records_per_batch: 20,
        value_bytes: 200,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 400,
        seed: 7,
        compression: None,
    };
    let t = Instant::now();
    let dir = generate_partition(&tmp.path().join("big-0"), &spec).unwrap();
    let partition = LocalPartition::open(&dir).unwrap();
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 1_700_000_000_000).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let log = std::fs::read(&data.log_segment).unwrap();
    assert!(log.len() > 64 << 20, "segment of {} bytes", log.len());
    eprintln!("generated a {} byte segment in {:?}", log.len(), t.elapsed());

    let counting = Arc::new(CountingLayer::new(common::make(url.clone()).await));
    let p = props([("key.prefix", unique_prefix("big-segment"))]);
    let mut r = ConfigReader::new(&p);
    let config = TieredConfig::read(&mut r).unwrap();
    r.finish().unwrap();
    let rsm = TieredStorage::new(counting.clone(), config.clone());
    let fresh = || TieredStorage::new(counting.clone(), config.clone());
    let mut meter = Meter::new(&url, counting.counts()).await;
    println!(
        "HDFS (MiniDFS, {} DataNode(s), 16 MiB blocks): a segment of {} bytes, 4 MiB chunks",
        std::env::var("RSM_TEST_HDFS_DN_HTTP").map_or(0, |s| s.split(',').count()),
        log.len()
    );

    let t = Instant::now();
    rsm.copy_log_segment_data(&md, &data).await.unwrap();
    meter.step("copy", t.elapsed(), Some(log.len())).await;
    let chunks = rsm.manifest(&md).await.unwrap().chunks.len();
    assert!(chunks >= 16, "{chunks} chunks");
    meter.step("(manifest, cached)", Default::default(), None).await;

    let t = Instant::now();
    let got = collect(fresh().fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap();
    assert!(got == log, "the fetched segment differs");
    meter.step("fetch all, cold manifest", t.elapsed(), Some(log.len())).await;

    // 1 MiB: from the start of a chunk, and across a chunk boundary; with a cold, then a warm manifest.
    let boundary = rsm.manifest(&md).await.unwrap().chunks[8].original_position() as i64;
    for (what, start) in [("1 MiB at a chunk start", boundary), ("1 MiB across chunks", boundary - (1 << 19))] {
        let end = start + (1 << 20) - 1;
        let want = &log[start as usize..=end as usize];
        let cold = fresh();
        for cache in ["cold", "warm"] {
            let t = Instant::now();
            let got = collect(cold.fetch_log_segment(&md, start, Some(end)).await.unwrap()).await.unwrap();
            assert!(got[..] == *want, "{what}");
            meter.step(&format!("fetch {what}, {cache} manifest"), t.elapsed(), None).await;
        }
    }

    assert_eq!(
        rsm.fetch_index(&md, IndexType::Offset).await.unwrap().to_vec(),
        std::fs::read(&data.offset_index).unwrap()
    );
    meter.step("fetch offset index (warm)", Default::default(), None).await;
    let t = Instant::now();
    rsm.delete_log_segment_data(&md).await.unwrap();
    meter.step("delete", t.elapsed(), None).await;
    // A small object alone: its latency is the NameNode round trips plus, when the DataNode has not yet
    // reported the block, the client's wait before it asks again to complete the file.
    for i in 0..3 {
        let t = Instant::now();
        counting.put_bytes(&format!("{}small-{i}", config.key_prefix), Bytes::from(vec![1u8; 1024])).await.unwrap();
        meter.step(&format!("put a 1 KiB object (#{i})"), t.elapsed(), None).await;
    }
    let small: Vec<String> = (0..3).map(|i| format!("{}small-{i}", config.key_prefix)).collect();
    counting.delete_many(&small).await.unwrap();
    let e = fresh().fetch_log_segment(&md, 0, None).await.err().expect("deleted");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(counting.list(&config.key_prefix).await.unwrap().is_empty());
}

/// Prints what each step cost: wall time, calls at the contract's level, and the servers' own counts.
struct Meter {
    url: String,
    counts: Arc<RequestCounts>,
    trait_level: [u64; 6],
    server: Option<common::ServerCounts>,
}

impl Meter {
    async fn new(url: &str, counts: Arc<RequestCounts>) -> Self {
        common::settle_metrics().await;
        Meter { url: url.to_string(), trait_level: snapshot(&counts), counts, server: common::ServerCounts::read(url) }
    }

    async fn step(&mut self, what: &str, took: std::time::Duration, bytes: Option<usize>) {
        let now = snapshot(&self.counts);
        let rate = bytes
            .map_or(String::new(), |b| format!(" ({:.0} MiB/s)", b as f64 / (1 << 20) as f64 / took.as_secs_f64()));
        println!("  {what}: {took:.3?}{rate}");
        println!("    contract calls: {}", delta(now, self.trait_level));
        self.trait_level = now;
        if let Some(before) = &self.server {
            common::settle_metrics().await;
            let after = common::ServerCounts::read(&self.url).expect("server counts");
            println!("    server side:    {}", after.since(before));
            self.server = Some(after);
        }
    }
}

/// Reads of a key deleted after it was written (and after a reader cached the segment's manifest) are
/// "not found", naming the key; never a storage error, never stale bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranged_reads_of_vanished_keys_are_not_found() {
    let url = url_or_skip!();
    let b = common::make(url.clone()).await;
    let p = unique_prefix("vanished");
    let key = format!("{p}obj");
    let d = Bytes::from(vec![7u8; 3 << 20]);
    b.put_bytes(&key, d.clone()).await.unwrap();
    assert_eq!(b.get_range(&key, 100..200).await.unwrap(), d.slice(100..200));
    b.delete(&key).await.unwrap();
    for range in [0..1, 100..200, 0..u64::MAX, (3 << 20) - 1..3 << 20, 5 << 20..6 << 20] {
        let e = b.get_range(&key, range.clone()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{range:?}: {e}");
        assert!(e.to_string().contains(&key), "names the key: {e}");
    }

    // Through TieredStorage: the manifest is cached, then the log object disappears underneath.
    let f = Fixture::new(b.clone(), "vanished-rsm");
    let (_, md, data) = f.segment(0);
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let whole = collect(f.rsm.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap();
    assert_eq!(whole, std::fs::read(&data.log_segment).unwrap());
    let keys = f.rsm.keys(&md);
    b.delete(&keys.log).await.unwrap();
    for (s, e) in [(0, None), (70_000, Some(200_000)), (md.segment_size_in_bytes as i64 - 1, None)] {
        let r = match f.rsm.fetch_log_segment(&md, s, e).await {
            Ok(stream) => collect(stream).await.map(|_| ()),
            Err(e) => Err(e),
        };
        let err = r.expect_err("the log object is gone");
        assert_eq!(err.kind(), ErrorKind::NotFound, "{s}..={e:?}: {err}");
        assert!(err.to_string().contains(&keys.log), "names the object: {err}");
    }
    f.rsm.delete_log_segment_data(&md).await.unwrap();
}

/// A failed upload leaves no temporary file behind (listings hide them, so look at HDFS directly), a
/// temporary file of a crashed writer is not listed, and deleting the last object of a directory
/// removes the directories it leaves empty, up to the root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temp_files_and_directories() {
    let url = url_or_skip!();
    let b = common::backend(&url);
    let p = unique_prefix("tmp-files");
    let key = format!("{p}a/b/obj");
    let dir = b.path(&format!("{p}a/b/x")).unwrap();
    let dir = dir.trim_end_matches("/x").to_string();

    let failing = futures::stream::iter(vec![
        Ok(Bytes::from(vec![1u8; 1 << 20])),
        Err(rsm_core::Error::retriable("source failed", "test")),
    ])
    .boxed();
    assert!(b.put_stream(&key, failing).await.is_err());
    let names = raw_names(&b, &dir).await;
    assert!(!names.iter().any(|n| n.starts_with(TMP_PREFIX)), "{names:?}");

    // A short local file fails before anything is created.
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, b"short").unwrap();
    assert_eq!(b.put_file(&key, f.path(), 100).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(!raw_names(&b, &dir).await.iter().any(|n| n.starts_with(TMP_PREFIX)));

    // The leftover of a writer that died: present in HDFS, absent from listings.
    b.put_bytes(&key, Bytes::from_static(b"whole")).await.unwrap();
    let mut w = b
        .client()
        .create(&format!("{dir}/{TMP_PREFIX}obj.crashed"), hdfs_native::WriteOptions::default())
        .await
        .unwrap();
    w.write_bytes(Bytes::from_static(b"partial")).await.unwrap();
    w.close().await.unwrap();
    let listed: Vec<String> = b.list(&p).await.unwrap().into_iter().map(|o| o.key).collect();
    assert_eq!(listed, vec![key.clone()]);
    let meta = &b.list(&key).await.unwrap()[0];
    assert_eq!(meta.size, 5);
    let age = std::time::SystemTime::now()
        .duration_since(meta.last_modified.expect("HDFS reports mtime"))
        .unwrap_or_default();
    assert!(age.as_secs() < 600, "mtime is recent: {age:?}");
    // ... and listed, with the key it was for, by list_temporary; its key deletes it.
    let tmp = b.list_temporary(&p).await.unwrap();
    assert_eq!(tmp.len(), 1, "{tmp:?}");
    assert_eq!(tmp[0].target, key);
    assert_eq!(tmp[0].meta.key, format!("{p}a/b/{TMP_PREFIX}obj.crashed"));
    assert_eq!(tmp[0].meta.size, 7);
    assert!(b.list_temporary(&format!("{p}a/b/other")).await.unwrap().is_empty());
    b.delete(&tmp[0].meta.key).await.unwrap();
    assert!(b.list_temporary(&p).await.unwrap().is_empty());
    assert_eq!(&b.get_range(&key, 0..10).await.unwrap()[..], b"whole");

    // A key naming a directory (other keys extend it) is no object: not found, and deleting it is a
    // no-op that leaves the keys under it alone.
    let e = b.get_range(&format!("{p}a/b"), 0..1).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    b.delete(&format!("{p}a")).await.unwrap();
    b.delete_many(&[format!("{p}a/b")]).await.unwrap();
    assert_eq!(&b.get_range(&key, 0..10).await.unwrap()[..], b"whole");

    // Deleting the only object prunes a/b, a and the prefix directory, and keeps the root.
    b.delete(&key).await.unwrap();
    let top = b.path(&format!("{p}x")).unwrap();
    let top = top.trim_end_matches("/x");
    let gone = b.client().get_file_info(top).await;
    assert!(gone.is_err(), "{top} should be pruned: {gone:?}");
    assert!(b.client().get_file_info(b.root()).await.unwrap().isdir);
}

/// The name node can come from a Hadoop configuration directory (`fs.defaultFS`), from single site files,
/// or from the store URL, and settings are checked for typos either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hadoop_configuration_and_store_url() {
    let url = url_or_skip!();
    let conf = tempfile::tempdir().unwrap();
    std::fs::write(
        conf.path().join("core-site.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<configuration>\n  <property>\n    <name>fs.defaultFS</name>\n    \
             <value>{url}</value>\n  </property>\n</configuration>\n"
        ),
    )
    .unwrap();
    std::fs::write(
        conf.path().join("hdfs-site.xml"),
        "<configuration><property><name>dfs.client.socket-timeout</name><value>20000</value></property></configuration>",
    )
    .unwrap();
    let p = unique_prefix("conf");
    let conf_dir = conf.path().to_str().unwrap();
    let core = conf.path().join("core-site.xml");
    let settings = [
        props([("hdfs.conf.dir", conf_dir), ("hdfs.root", "/rsm-tests/conf-dir")]),
        props([("hdfs.core-site.path", core.to_str().unwrap()), ("hdfs.root", "/rsm-tests/site-file")]),
        props([("hdfs.conf.fs.defaultFS", url.as_str()), ("hdfs.root", "/rsm-tests/pass-through")]),
    ];
    for s in &settings {
        let mut r = ConfigReader::new(s);
        let b = from_config(&mut r).unwrap();
        r.finish().unwrap();
        b.put_bytes(&format!("{p}k"), Bytes::from_static(b"v")).await.unwrap();
        assert_eq!(&b.get_range(&format!("{p}k"), 0..10).await.unwrap()[..], b"v");
        b.delete(&format!("{p}k")).await.unwrap();
    }

    let s = props([("hdfs.user", "kafka")]);
    let mut r = ConfigReader::new(&s);
    let (b, prefix) = from_url(&format!("{url}/rsm-tests/from-url"), &mut r).unwrap();
    r.finish().unwrap();
    assert_eq!(prefix, "");
    b.put_bytes(&format!("{p}k"), Bytes::from_static(b"v")).await.unwrap();
    assert_eq!(b.list(&p).await.unwrap().len(), 1);
    b.delete(&format!("{p}k")).await.unwrap();

    let s = props([("hdfs.conf.dir", conf_dir), ("hdfs.roots", "/x")]);
    let mut r = ConfigReader::new(&s);
    from_config(&mut r).unwrap();
    let e = r.finish().unwrap_err();
    assert!(e.to_string().contains("`hdfs.roots`"), "{e}");
}

/// Leaves a temporary file of an upload to `key`, as a writer that died would, last written `age` ago.
async fn leave_tmp(b: &HdfsBackend, key: &str, age: std::time::Duration) -> String {
    let target = b.path(key).unwrap();
    let (dir, name) = target.rsplit_once('/').unwrap();
    let tmp = format!("{dir}/{TMP_PREFIX}{name}.{}", Uuid::random());
    let mut w = b.client().create(&tmp, hdfs_native::WriteOptions::default().create_parent(true)).await.unwrap();
    w.write_bytes(Bytes::from_static(b"half")).await.unwrap();
    w.close().await.unwrap();
    let mtime = (std::time::SystemTime::now() - age).duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    b.client().set_times(&tmp, mtime as u64, mtime as u64).await.unwrap();
    tmp
}

/// The orphan sweep removes a crashed upload's temporary files once older than its safety age, and keeps a
/// young one; deleting a segment removes its temporary files whatever their age.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_uploads_temporary_files_are_swept_and_deleted_with_their_segment() {
    let url = url_or_skip!();
    let b = Arc::new(common::backend(&url));
    let f = Fixture::new(b.clone(), "hdfs-tmp");
    let (_, md0, data0) = f.segment(0);
    let (_, md1, _) = f.segment(1);
    let (_, md2, _) = f.segment(2);
    f.rsm.copy_log_segment_data(&md0, &data0).await.unwrap();
    let tp = md0.remote_log_segment_id.topic_id_partition.clone();
    let old = std::time::Duration::from_secs(7200);
    let young = std::time::Duration::from_secs(60);
    let swept_tmp = leave_tmp(&b, &f.rsm.keys(&md1).log, old).await;
    let young_tmp = leave_tmp(&b, &f.rsm.keys(&md1).indexes, young).await;
    let other_tmp = leave_tmp(&b, &f.rsm.keys(&md2).log, young).await;

    let swept = f.rsm.sweep_orphans(Some(&tp), rsm_core::storage::ORPHAN_MIN_AGE).await.unwrap();
    assert_eq!(swept.len(), 1, "{swept:?}");
    assert!(swept_tmp.ends_with(&swept[0]), "{swept:?} is {swept_tmp}");
    assert!(b.client().get_file_info(&swept_tmp).await.is_err(), "{swept_tmp} removed");
    assert!(b.client().get_file_info(&young_tmp).await.is_ok(), "a young one may be an upload in flight");

    f.rsm.delete_log_segment_data(&md1).await.unwrap();
    assert!(b.client().get_file_info(&young_tmp).await.is_err(), "removed with its segment");
    assert!(b.client().get_file_info(&other_tmp).await.is_ok(), "another segment's stays");
    let got = collect(f.fresh_rsm().fetch_log_segment(&md0, 0, None).await.unwrap()).await.unwrap();
    assert!(got == std::fs::read(&data0.log_segment).unwrap());
    f.rsm.delete_log_segment_data(&md2).await.unwrap();
    f.rsm.delete_log_segment_data(&md0).await.unwrap();
    let prefix = rsm_core::storage::partition_prefix(&f.config.key_prefix, &tp);
    assert!(b.list_temporary(&prefix).await.unwrap().is_empty());
    assert!(b.list(&prefix).await.unwrap().is_empty());
}
