//! `catch_up`: a consumer catching up over a slow store, with the broker's read pattern (each fetch opens at
//! the next position, reads 1 MiB and closes), with and without the chunk cache and read-ahead.
//!
//! The store is the filesystem backend under the fault layer, which adds `--latency-ms` to every ranged
//! read (a cloud store's first-byte latency). Prints, for each setting, the wall time, MB/s and the ranged
//! reads made, against the chunk count (each chunk read exactly once is the floor).
//!
//! ```sh
//! cargo run --release -p rsm-benches --bin catch_up -- [--size-mib 1024] [--latency-ms 30] [--dir PATH]
//! ```

use futures::StreamExt;
use rsm_backend_fs::FsBackend;
use rsm_benches::write_partition;
use rsm_core::backend::layers::{Fault, FaultLayer, FaultRule};
use rsm_core::backend::{CountingLayer, Op, StorageBackend};
use rsm_core::format::partition::LocalPartition;
use rsm_core::{RemoteLogSegmentMetadata, RemoteStorageManager, TieredConfig, TieredStorage};
use std::sync::Arc;
use std::time::{Duration, Instant};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const MIB: usize = 1 << 20;

struct Args {
    size_mib: usize,
    latency_ms: u64,
    dir: Option<std::path::PathBuf>,
}

fn parse_args() -> BoxResult<Args> {
    let mut a = Args { size_mib: 1024, latency_ms: 30, dir: None };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--size-mib" => a.size_mib = value.parse()?,
            "--latency-ms" => a.latency_ms = value.parse()?,
            "--dir" => a.dir = Some(value.into()),
            _ => return Err(format!("unknown option {flag} (--size-mib N, --latency-ms N, --dir PATH)").into()),
        }
    }
    if a.size_mib == 0 || a.size_mib >= 2048 {
        return Err("--size-mib must be 1 to 2047".into());
    }
    Ok(a)
}

/// Reads the whole segment as a catching-up broker does; returns the bytes read.
async fn catch_up(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, log_len: u64) -> BoxResult<u64> {
    let mut pos = 0u64;
    while pos < log_len {
        let mut s = rsm.fetch_log_segment(md, pos as i32, None).await?;
        let mut got = 0u64;
        while got < MIB as u64 {
            match s.next().await {
                Some(b) => got += b?.len() as u64,
                None => break,
            }
        }
        pos += got.min(MIB as u64);
    }
    Ok(pos)
}

fn main() {
    if let Err(e) = run(parse_args().unwrap_or_else(|e| {
        eprintln!("catch_up: {e}");
        std::process::exit(2)
    })) {
        eprintln!("catch_up: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> BoxResult<()> {
    let base = a.dir.clone().unwrap_or_else(|| std::env::current_exe().unwrap().parent().unwrap().to_path_buf());
    let tmp = tempfile::tempdir_in(base)?;
    let part = write_partition(&tmp.path().join("bench-0"), a.size_mib * MIB, rsm_benches::DataShape::default())?;
    let partition = LocalPartition::open(&part)?;
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0)?;
    let data = partition.segment_data(&seg)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let fs: Arc<dyn StorageBackend> = Arc::new(FsBackend::new(tmp.path().join("store"), false)?);
    let setup = TieredStorage::new(fs.clone(), TieredConfig::default());
    rt.block_on(setup.copy_log_segment_data(&md, &data))?;
    let m = rt.block_on(setup.manifest(&md))?;
    let log_len = m.log_length;
    println!(
        "catch-up read of a {:.0} MiB segment ({} chunks of 4 MiB), 1 MiB broker fetches, {} ms per ranged read",
        log_len as f64 / MIB as f64,
        m.chunks.len(),
        a.latency_ms
    );
    println!("{:<34} {:>9} {:>9} {:>12} {:>12}", "setting", "seconds", "MB/s", "ranged reads", "x chunks");
    let mut first = None;
    for (name, cache_bytes, prefetch) in [
        ("no cache", 0u64, 0usize),
        ("cache 256 MiB, no read-ahead", 256 << 20, 0),
        ("cache 256 MiB, read-ahead 4", 256 << 20, 4),
    ] {
        let counting = Arc::new(CountingLayer::new(fs.clone()));
        let counts = counting.counts();
        let delay = FaultRule {
            op: Some(Op::Get),
            key: "*.log".into(),
            fault: Fault::Delay(Duration::from_millis(a.latency_ms)),
            times: None,
        };
        let slow = Arc::new(FaultLayer::new(counting).with_rule(delay));
        let config =
            TieredConfig { fetch_cache_bytes: cache_bytes, fetch_prefetch_chunks: prefetch, ..TieredConfig::default() };
        let rsm = TieredStorage::new(slow, config);
        rt.block_on(rsm.manifest(&md))?;
        let before = counts.snapshot().get(Op::Get).requests;
        let t = Instant::now();
        let read = rt.block_on(catch_up(&rsm, &md, log_len))?;
        let secs = t.elapsed().as_secs_f64();
        let reads = counts.snapshot().get(Op::Get).requests - before;
        let mbs = read as f64 / 1e6 / secs;
        let speedup = first.map(|f: f64| format!("  {:.1}x the MB/s of no cache", mbs / f)).unwrap_or_default();
        first.get_or_insert(mbs);
        println!(
            "{name:<34} {secs:>9.2} {mbs:>9.1} {reads:>12} {:>12.2}{speedup}",
            reads as f64 / m.chunks.len() as f64
        );
    }
    Ok(())
}
