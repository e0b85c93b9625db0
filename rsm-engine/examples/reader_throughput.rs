//! Reads per second through the reader pool: 1, 4 and 16 readers (each with as many concurrent callers)
//! doing 1 MiB reads at random offsets of real segments copied to a filesystem store, and to S3 when the
//! variables of `tools/servers/moto.sh` are set (`RSM_TEST_S3_ENDPOINT`, `_BUCKET`, `_REGION`,
//! `_ACCESS_KEY`, `_SECRET_KEY`), every byte checked.
//!
//! ```text
//! eval "$(tools/servers/moto.sh start)"   # optional: S3 too
//! cargo run --release -p rsm-engine --example reader_throughput -- [seconds per row, default 3] [segment MiB, default 32]
//! ```
//! The chunk cache is off (`fetch.cache.bytes` = 0), so every read goes to the store (the OS page cache
//! still holds the filesystem store's files). Prints one table row per store and reader count.

use rsm_backend_fs::FsBackend;
use rsm_backend_s3::{CloudStore, S3Config};
use rsm_core::backend::StorageBackend;
use rsm_core::config::{ConfigReader, props};
use rsm_core::storage::{TieredConfig, TieredStorage};
use rsm_core::testkit::fixture_partition;
use rsm_core::testkit::log_writer::Rng;
use rsm_core::{RemoteLogSegmentMetadata, RemoteLogSegmentState, RemoteStorageManager, Result, TopicIdPartition};
use rsm_engine::reader::{ReadRequest, ReaderPool, ReaderPoolConfig};
use rsm_metadata::local::{LocalMetadataConfig, LocalMetadataManager};
use rsm_metadata::{RemoteLogMetadataManager, RemoteLogSegmentMetadataUpdate};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

const MIB: u64 = 1 << 20;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let segment_mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| rsm_core::Error::storage("building the runtime", e))?;
    runtime.block_on(run(seconds, segment_mib))
}

async fn run(seconds: f64, segment_mib: usize) -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| rsm_core::Error::storage("temp dir", e))?;
    // About 230 bytes per record: four closed segments of `segment_mib` MiB.
    let records = (segment_mib as u64 * MIB * 9 / 2) / 230;
    eprintln!("writing a partition of {segment_mib} MiB segments ...");
    let partition = fixture_partition(&tmp.path().join("log"), segment_mib << 20, records);
    let dir = tmp.path().join("store");
    std::fs::create_dir_all(&dir).map_err(|e| rsm_core::Error::storage("store dir", e))?;
    let mut stores: Vec<(&str, Arc<dyn StorageBackend>)> = vec![("fs", Arc::new(FsBackend::new(&dir, false)?))];
    if let Some(s3) = s3_backend()? {
        stores.push(("s3 (moto)", s3));
    }
    println!("| store | readers | reads | seconds | reads/s | MiB/s |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, (name, backend)) in stores.into_iter().enumerate() {
        let prefix = format!("reader-throughput-{}/", rsm_core::Uuid::random());
        let p = props([("chunk.size", "4194304"), ("key.prefix", prefix.as_str())]);
        let mut r = ConfigReader::new(&p);
        let config = TieredConfig::read(&mut r)?;
        r.finish()?;
        let storage = Arc::new(TieredStorage::new(backend, config));
        let metadata = Arc::new(LocalMetadataManager::open(LocalMetadataConfig {
            fsync: false,
            ..LocalMetadataConfig::new(tmp.path().join(format!("meta-{i}")))
        })?);
        let tp = partition.topic_id_partition.clone();
        metadata.on_partition_leadership_changes(std::slice::from_ref(&tp), &[]).await?;
        let mut segments = Vec::new();
        for seg in partition.closed_segments() {
            let md = partition.segment_metadata(seg, 1, 1_700_000_000_000)?;
            metadata.add_remote_log_segment_metadata(&md).await?;
            storage.copy_log_segment_data(&md, &partition.segment_data(seg)?).await?;
            let done = RemoteLogSegmentMetadataUpdate::of(&md, RemoteLogSegmentState::CopySegmentFinished, 1, 1);
            metadata.update_remote_log_segment_metadata(&done).await?;
            segments.push(done.apply_to(&md));
        }
        eprintln!("copied {} segments to {name}", segments.len());
        let metadata: Arc<dyn RemoteLogMetadataManager> = metadata;
        for readers in [1, 4, 16] {
            let row = measure(name, readers, seconds, &tp, &segments, metadata.clone(), storage.clone()).await?;
            println!("{row}");
        }
        for md in &segments {
            storage.delete_log_segment_data(md).await?;
        }
    }
    Ok(())
}

/// The S3 store of `tools/servers/moto.sh` when its variables are set (secrets are read, never printed).
fn s3_backend() -> Result<Option<Arc<dyn StorageBackend>>> {
    let var = |n: &str| std::env::var(format!("RSM_TEST_S3_{n}")).ok().filter(|v| !v.trim().is_empty());
    let Some(endpoint) = var("ENDPOINT") else {
        eprintln!("RSM_TEST_S3_ENDPOINT not set: filesystem only (S3: eval \"$(tools/servers/moto.sh start)\")");
        return Ok(None);
    };
    let mut settings = vec![("s3.endpoint.url", endpoint)];
    for (key, name) in [
        ("s3.bucket.name", "BUCKET"),
        ("s3.region", "REGION"),
        ("aws.access.key.id", "ACCESS_KEY"),
        ("aws.secret.access.key", "SECRET_KEY"),
    ] {
        if let Some(v) = var(name) {
            settings.push((key, v));
        }
    }
    let p = props(settings.iter().map(|(k, v)| (*k, v.as_str())));
    let mut r = ConfigReader::new(&p);
    let config = S3Config::read(&mut r, None)?;
    r.finish()?;
    Ok(Some(Arc::new(config.build()?)))
}

/// Runs `readers` callers against a pool of `readers` readers for `seconds`, and returns the table row.
async fn measure(
    store: &str,
    readers: usize,
    seconds: f64,
    tp: &TopicIdPartition,
    segments: &[RemoteLogSegmentMetadata],
    metadata: Arc<dyn RemoteLogMetadataManager>,
    storage: Arc<TieredStorage>,
) -> Result<String> {
    let config = ReaderPoolConfig { readers, queue: readers * 2 };
    let pool = Arc::new(ReaderPool::start(config, &tokio::runtime::Handle::current(), metadata, storage)?);
    let reads = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let stop = started + Duration::from_secs_f64(seconds);
    let mut callers = Vec::new();
    for c in 0..readers {
        let (pool, reads, bytes, tp, segments) =
            (pool.clone(), reads.clone(), bytes.clone(), tp.clone(), segments.to_vec());
        callers.push(tokio::spawn(async move {
            let mut rng = Rng::new(7 + c as u64);
            while Instant::now() < stop {
                let s = &segments[rng.below(segments.len() as u64) as usize];
                let offset = s.start_offset + rng.below((s.end_offset - s.start_offset + 1) as u64) as i64;
                let request = ReadRequest {
                    partition: tp.clone(),
                    offset,
                    max_bytes: MIB as u32,
                    deadline: Instant::now() + Duration::from_secs(30),
                };
                let got = pool.read(request).await?;
                reads.fetch_add(1, Ordering::Relaxed);
                bytes.fetch_add(got.bytes.len() as u64, Ordering::Relaxed);
            }
            Ok::<_, rsm_core::Error>(())
        }));
    }
    for c in callers {
        c.await.map_err(|e| rsm_core::Error::storage("a caller failed", e))??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    pool.shutdown().await;
    let (n, b) = (reads.load(Ordering::Relaxed), bytes.load(Ordering::Relaxed));
    Ok(format!(
        "| {store} | {readers} | {n} | {elapsed:.2} | {:.0} | {:.0} |",
        n as f64 / elapsed,
        b as f64 / MIB as f64 / elapsed
    ))
}
