//! `catch_up`: a consumer catching up over a slow store, with the broker's read pattern (each fetch opens at
//! the next position, reads 1 MiB and closes), with and without the chunk cache, read-ahead and the disk
//! tier; then random 1 MiB reads over a replayed pattern, with and without the cache, and from a warm disk tier.
//!
//! The store is the filesystem backend (or any store URL, `--store`, with its settings as `--set k=v`: moto
//! for S3) under the fault layer, which adds `--latency-ms` to every ranged read of a `.log` (a cloud
//! store's first-byte latency), and with `--throughput-mibps N` makes each ranged read then take as long as
//! its bytes take at N MiB/s (one connection's throughput); `--part-size N` stacks the facade's parallel
//! reads over it (reads of at least 2N bytes in up to 4 parts at once, as `fetch.part.size` does over a
//! cloud store); with neither latency nor a throughput bound there is no fault layer, so the filesystem store
//! reads its files as it does on a broker. `--compression true` copies the segment with every chunk compressed.
//! Prints, for each setting, the wall time, MB/s, the ranged reads made against
//! the chunk count (each chunk read exactly once is the floor) and the peak memory growth; for the random
//! reads the hit ratio and the median and p90 latency.
//!
//! With `--segments N` the partition has N segments (of `--size-mib`/N each), read one after the other as a
//! consumer catching up across segment boundaries does; each line then also says how many segments after the
//! first had their first fetch wait for a ranged read (a cold start at the boundary).
//!
//! ```sh
//! cargo run --release -p rsm-benches --bin catch_up -- [--size-mib 1024] [--segments 1] [--latency-ms 30] \
//!     [--throughput-mibps 0] [--part-size 0] [--compression false] [--dir PATH] [--store URL --set KEY=VALUE ...] \
//!     [--random-reads 300]
//! ```

use futures::StreamExt;
use rsm_backend_fs::FsBackend;
use rsm_benches::{proc_status_kib, quantile, reset_peak_rss, write_partition_of};
use rsm_core::backend::layers::{Fault, FaultLayer, FaultRule, Layer, ParallelReads};
use rsm_core::backend::{CountingLayer, Op, StorageBackend};
use rsm_core::config::ConfigReader;
use rsm_core::format::partition::LocalPartition;
use rsm_core::storage::DiskCacheConfig;
use rsm_core::testkit::log_writer::Rng;
use rsm_core::{RemoteLogSegmentMetadata, RemoteStorageManager, TieredConfig, TieredStorage};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const MIB: usize = 1 << 20;

struct Args {
    size_mib: usize,
    latency_ms: u64,
    dir: Option<std::path::PathBuf>,
    store: Option<String>,
    settings: BTreeMap<String, String>,
    random_reads: usize,
    segments: usize,
    throughput_mibps: u64,
    part_size: u64,
    compression: bool,
}

fn parse_args() -> BoxResult<Args> {
    let mut a = Args {
        size_mib: 1024,
        latency_ms: 30,
        dir: None,
        store: None,
        settings: BTreeMap::new(),
        random_reads: 300,
        compression: false,
        segments: 1,
        throughput_mibps: 0,
        part_size: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--size-mib" => a.size_mib = value.parse()?,
            "--latency-ms" => a.latency_ms = value.parse()?,
            "--dir" => a.dir = Some(value.into()),
            "--store" => a.store = Some(value),
            "--random-reads" => a.random_reads = value.parse()?,
            "--segments" => a.segments = value.parse()?,
            "--throughput-mibps" => a.throughput_mibps = value.parse()?,
            "--part-size" => a.part_size = value.parse()?,
            "--compression" => a.compression = value.parse()?,
            "--set" => {
                let (k, v) = value.split_once('=').ok_or_else(|| format!("--set {value}: not KEY=VALUE"))?;
                a.settings.insert(k.to_string(), v.to_string());
            }
            _ => {
                return Err(format!(
                    "unknown option {flag} (--size-mib N, --segments N, --latency-ms N, --throughput-mibps N, --part-size N, --compression true|false, --dir PATH, --store URL, --set K=V, --random-reads N)"
                )
                .into());
            }
        }
    }
    if a.size_mib == 0 || a.size_mib >= 2048 {
        return Err("--size-mib must be 1 to 2047".into());
    }
    if a.segments == 0 || a.segments > 64 || a.size_mib / a.segments == 0 {
        return Err("--segments must be 1 to 64, and at most --size-mib".into());
    }
    Ok(a)
}

/// Reads the segments whole, one after the other, as a catching-up broker does; returns the bytes read and
/// how many segments after the first had their first fetch wait for a ranged read of the store (took at
/// least `latency`, which only a ranged read of the store adds).
async fn catch_up(
    rsm: &TieredStorage,
    segments: &[(RemoteLogSegmentMetadata, u64)],
    latency: Duration,
) -> BoxResult<(u64, usize)> {
    let (mut read, mut cold) = (0u64, 0usize);
    for (i, (md, log_len)) in segments.iter().enumerate() {
        let mut pos = 0u64;
        while pos < *log_len {
            let t = Instant::now();
            pos += broker_fetch(rsm, md, pos).await?.min(MIB as u64);
            if i > 0 && pos <= MIB as u64 && !latency.is_zero() && t.elapsed() >= latency {
                cold += 1;
            }
        }
        read += pos;
    }
    Ok((read, cold))
}

/// One broker fetch: open at `pos`, read about a mebibyte, close; returns the bytes read.
async fn broker_fetch(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, pos: u64) -> BoxResult<u64> {
    let mut s = rsm.fetch_log_segment(md, pos as i64, None).await?;
    let mut got = 0u64;
    while got < MIB as u64 {
        match s.next().await {
            Some(b) => got += b?.len() as u64,
            None => break,
        }
    }
    Ok(got)
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

/// One setting of the cache: memory bytes, read-ahead chunks, whether the disk tier is on.
struct Setting {
    name: &'static str,
    memory: u64,
    prefetch: usize,
    disk: bool,
}

fn run(a: Args) -> BoxResult<()> {
    let base = a.dir.clone().unwrap_or_else(|| std::env::current_exe().unwrap().parent().unwrap().to_path_buf());
    let tmp = tempfile::tempdir_in(base)?;
    let part = write_partition_of(
        &tmp.path().join("bench-0"),
        a.size_mib * MIB / a.segments,
        a.segments,
        rsm_benches::DataShape::default(),
    )?;
    let partition = LocalPartition::open(&part)?;
    let segs: Vec<_> = partition.closed_segments().iter().take(a.segments).cloned().collect();
    let seg = segs[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0)?;
    let data = partition.segment_data(&seg)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let (store, key_prefix, what): (Arc<dyn StorageBackend>, String, String) = match &a.store {
        None => (Arc::new(FsBackend::create(tmp.path().join("store"), false)?), String::new(), "the filesystem".into()),
        Some(url) => {
            let mut r = ConfigReader::new(&a.settings);
            let (b, _, prefix) = rsm_facade::open_backend(&rsm_facade::Registry::builtin(), url, &mut r)?;
            r.finish()?;
            (b, prefix, rsm_facade::scheme_of(url).to_string())
        }
    };
    let config = |memory: u64, prefetch: usize, disk: bool| TieredConfig {
        key_prefix: key_prefix.clone(),
        fetch_cache_bytes: memory,
        fetch_prefetch_chunks: prefetch,
        fetch_cache_disk: disk
            .then(|| DiskCacheConfig { path: tmp.path().join("disk-cache"), capacity_bytes: 4 << 30 }),
        // Every chunk compressed (the heuristic off), as zstd frames.
        compression: a
            .compression
            .then(|| rsm_core::format::transform::CompressionConfig { heuristic: false, ..Default::default() }),
        ..TieredConfig::default()
    };
    let setup = TieredStorage::new(store.clone(), config(0, 0, false));
    let mut all = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let md = if i == 0 { md.clone() } else { partition.segment_metadata(s, 1, 0)? };
        rt.block_on(setup.copy_log_segment_data(&md, &partition.segment_data(s)?))?;
        let len = rt.block_on(setup.manifest(&md))?.log_length;
        all.push((md, len));
    }
    let log_len = all[0].1;
    let chunks: usize = all
        .iter()
        .map(|(md, _)| rt.block_on(setup.manifest(md)).map(|m| m.chunks.len()))
        .sum::<rsm_core::Result<usize>>()?;
    let slow = |latency: Duration| {
        let counting = Arc::new(CountingLayer::new(store.clone()));
        let counts = counting.counts();
        let fault = match a.throughput_mibps {
            0 => Fault::Delay(latency),
            mibps => Fault::Network { latency, bytes_per_second: mibps * MIB as u64 },
        };
        let delay = FaultRule { op: Some(Op::Get), key: "*.log".into(), fault, times: None };
        // Without latency nor a throughput bound, no fault layer: a delay of zero would still wait for the
        // timer's next tick (about a millisecond) on every read, and the layer hides the store's local reads.
        let slow: Arc<dyn StorageBackend> = if latency.is_zero() && a.throughput_mibps == 0 {
            counting
        } else {
            Arc::new(FaultLayer::new(counting).with_rule(delay))
        };
        // Over the network as the facade stacks it over a cloud store: long reads in parts at once.
        let parts = ParallelReads { part_size: a.part_size, concurrency: 4 };
        (if a.part_size > 0 { parts.layer(slow) } else { slow }, counts)
    };
    let latency = Duration::from_millis(a.latency_ms);
    println!(
        "catch-up read of {} segment(s), {:.0} MiB ({} chunks of 4 MiB) on {what}, 1 MiB broker fetches, +{} ms per ranged read",
        all.len(),
        all.iter().map(|(_, l)| *l).sum::<u64>() as f64 / MIB as f64,
        chunks,
        a.latency_ms
    );
    if a.throughput_mibps > 0 || a.part_size > 0 {
        println!(
            "each ranged read at {} MiB/s (0: no limit); reads of at least twice {} bytes in up to 4 parts at once (0: whole)",
            a.throughput_mibps, a.part_size
        );
    }
    println!(
        "{:<44} {:>8} {:>8} {:>12} {:>9} {:>10} {:>11}",
        "setting", "seconds", "MB/s", "ranged reads", "x chunks", "peak MiB", "cold starts"
    );
    let mut first = None;
    let settings = [
        Setting { name: "no cache", memory: 0, prefetch: 0, disk: false },
        Setting { name: "cache 256 MiB, no read-ahead", memory: 256 << 20, prefetch: 0, disk: false },
        Setting { name: "cache 256 MiB, read-ahead 4", memory: 256 << 20, prefetch: 4, disk: false },
        Setting { name: "cache 64 MiB + disk 4 GiB, read-ahead 4", memory: 64 << 20, prefetch: 4, disk: true },
        Setting { name: "the same after a restart (disk tier warm)", memory: 64 << 20, prefetch: 4, disk: true },
    ];
    for s in &settings {
        let (slow, counts) = slow(latency);
        // Each setting a storage manager and a cache of its own (the last one opens the disk tier the one
        // before it filled, as a restarted broker would).
        let store_name = if s.disk { "bench:disk".to_string() } else { format!("bench:{}", s.name) };
        let rsm = TieredStorage::open(slow, config(s.memory, s.prefetch, s.disk), &store_name)?;
        rt.block_on(rsm.manifest(&md))?;
        let before = counts.snapshot().get(Op::Get).requests;
        let rss = proc_status_kib("VmRSS").unwrap_or(0);
        let reset = reset_peak_rss();
        let t = Instant::now();
        let (read, cold) = rt.block_on(catch_up(&rsm, &all, latency))?;
        let secs = t.elapsed().as_secs_f64();
        let peak =
            if reset { (proc_status_kib("VmHWM").unwrap_or(0).saturating_sub(rss)) as f64 / 1024.0 } else { f64::NAN };
        let reads = counts.snapshot().get(Op::Get).requests - before;
        let mbs = read as f64 / 1e6 / secs;
        let speedup = first.map(|f: f64| format!("  {:.1}x", mbs / f)).unwrap_or_default();
        first.get_or_insert(mbs);
        println!(
            "{:<44} {secs:>8.2} {mbs:>8.1} {reads:>12} {:>9.2} {peak:>10.1} {:>11}{speedup}",
            s.name,
            reads as f64 / chunks as f64,
            format!("{cold} of {}", all.len() - 1)
        );
        if let Some(c) = rsm.chunk_cache() {
            rt.block_on(c.flush());
        }
    }

    if a.random_reads == 0 {
        return Ok(());
    }
    // Random reads of the first segment: a replayed pattern, four in five of them at one of 32 hot
    // positions; then as many uniformly random ones (each chunk touched about once).
    let mut rng = Rng::new(7);
    let hot: Vec<u64> = (0..32).map(|_| rng.below(log_len - MIB as u64)).collect();
    let hot_pattern: Vec<u64> = (0..a.random_reads)
        .map(|_| if rng.below(5) < 4 { hot[rng.below(32) as usize] } else { rng.below(log_len - MIB as u64) })
        .collect();
    let uniform: Vec<u64> = (0..a.random_reads).map(|_| rng.below(log_len - MIB as u64)).collect();
    // Each at the batch that holds it, as the broker starts from an offset-index entry.
    let batches = rsm_benches::batch_positions(&data.log_segment)?;
    let at_batch = |p: &u64| batches[batches.partition_point(|&b| b <= *p).saturating_sub(1)];
    for (label, pattern) in [("4 in 5 at one of 32 hot positions", &hot_pattern), ("uniformly random", &uniform)] {
        let positions: Vec<u64> = pattern.iter().map(at_batch).collect();
        println!();
        println!("random 1 MiB reads: {} of them, {label}, +{} ms per ranged read", positions.len(), a.latency_ms);
        println!("{:<44} {:>9} {:>12} {:>12} {:>12}", "setting", "hit ratio", "median ms", "p90 ms", "ranged reads");
        // The disk tier alone: a memory tier of one chunk over a disk tier filled first (untimed, every MiB
        // of the segment read from its end back), so nearly every read is a disk-tier hit.
        let settings =
            [("no cache", 0u64, false), ("cache 256 MiB", 256 << 20, false), ("disk tier, warm", 4 << 20, true)];
        for (name, memory, disk) in settings {
            let (slow, counts) = slow(latency);
            let rsm = TieredStorage::open(slow, config(memory, 4, disk), &format!("bench-random:{label}:{name}"))?;
            rt.block_on(rsm.manifest(&md))?;
            if disk {
                // Every MiB from the end back to the start: no read continues the one before, so each chunk
                // is filled as a random reader's chunk is (on its second miss), over any store; each read's
                // load is waited for, so that none is refused for another in flight.
                let c = rsm.chunk_cache().ok_or("the disk-tier setting has a chunk cache")?;
                let starts: Vec<u64> = (0..log_len).step_by(MIB).collect();
                for &pos in starts.iter().rev() {
                    rt.block_on(broker_fetch(&rsm, &md, pos))?;
                    rt.block_on(c.flush());
                }
            }
            let before = counts.snapshot().get(Op::Get).requests;
            let tiers = |rsm: &TieredStorage| {
                rsm.chunk_cache_stats()
                    .map_or((0, 0), |c| (c.memory.hits + c.disk.hits, c.memory.hits + c.memory.misses))
            };
            let (hits_before, lookups_before) = tiers(&rsm);
            let mut times = Vec::with_capacity(positions.len());
            for &p in &positions {
                let t = Instant::now();
                rt.block_on(broker_fetch(&rsm, &md, p))?;
                times.push(t.elapsed());
            }
            times.sort();
            // Hits of either tier (a memory miss goes on to the disk tier) over the timed reads' lookups.
            let (hits, lookups) = tiers(&rsm);
            let hit = (hits - hits_before) as f64 / (lookups - lookups_before).max(1) as f64;
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            println!(
                "{name:<44} {hit:>9.2} {:>12.2} {:>12.2} {:>12}",
                ms(quantile(&times, 0.5)),
                ms(quantile(&times, 0.9)),
                counts.snapshot().get(Op::Get).requests - before
            );
            if std::env::var_os("CATCH_UP_STATS").is_some() {
                eprintln!("{:?}", rsm.chunk_cache_stats());
            }
        }
    }
    for (md, _) in &all {
        rt.block_on(store.delete_many(&[setup.keys(md).log, setup.keys(md).indexes, setup.keys(md).manifest]))?;
    }
    Ok(())
}
