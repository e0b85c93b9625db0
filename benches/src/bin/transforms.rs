//! `transforms`: the copy and the broker's 1 MiB fetch of a JSON-like segment with chunk compression and
//! encryption, in process (no JVM), on the filesystem store (`fs.fsync` off: the transforms' cost, not the
//! disk's), for each setting: none, compression, compression and encryption. `--set KEY=VALUE` adds a
//! setting to every case (e.g. `compression.frame.size=0`, one zstd frame per chunk).
//!
//! Prints per setting: the stored bytes of one copy (chunks, indexes and manifest) against the `.log`, the
//! median copy time of `--rounds` copies under fresh segment ids, and the median and p90 of `--fetches` 1 MiB
//! fetches at random batch boundaries (open at the position, read 1 MiB, close, as the broker does).
//!
//! ```sh
//! cargo run --release -p rsm-benches --bin transforms -- [--size-mib 64] [--rounds 5] [--fetches 300] \
//!     [--dir PATH] [--set KEY=VALUE ...]
//! ```

use futures::StreamExt;
use rsm_backend_fs::FsBackend;
use rsm_benches::{batch_positions, json_records, quantile};
use rsm_core::backend::StorageBackend;
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionWriter, Rng};
use rsm_core::{RemoteLogSegmentMetadata, RemoteStorageManager, TieredConfig, TieredStorage, Uuid};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const MIB: usize = 1 << 20;

struct Args {
    size_mib: usize,
    rounds: usize,
    fetches: usize,
    dir: Option<std::path::PathBuf>,
    settings: BTreeMap<String, String>,
}

fn parse_args() -> BoxResult<Args> {
    let mut a = Args { size_mib: 64, rounds: 5, fetches: 300, dir: None, settings: BTreeMap::new() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--size-mib" => a.size_mib = value.parse()?,
            "--rounds" => a.rounds = value.parse()?,
            "--fetches" => a.fetches = value.parse()?,
            "--dir" => a.dir = Some(value.into()),
            "--set" => {
                let (k, v) = value.split_once('=').ok_or_else(|| format!("--set {value}: not KEY=VALUE"))?;
                a.settings.insert(k.to_string(), v.to_string());
            }
            _ => {
                return Err(format!(
                    "unknown option {flag} (--size-mib N, --rounds N, --fetches N, --dir PATH, --set K=V)"
                )
                .into());
            }
        }
    }
    if a.size_mib < 8 || a.size_mib >= 2048 || a.rounds == 0 || a.fetches == 0 {
        return Err("--size-mib must be 8 to 2047, --rounds and --fetches at least 1".into());
    }
    Ok(a)
}

/// A partition directory whose first segment (closed) holds about `bytes` of JSON-like records in
/// uncompressed batches of 40 records (about 16 KiB).
fn write_json_partition(dir: &std::path::Path, bytes: usize) -> rsm_core::Result<std::path::PathBuf> {
    let mut w = PartitionWriter::create(dir, Uuid::random(), bytes, 4096)?;
    let mut rng = Rng::new(42);
    let mut appended = 0;
    while appended < bytes + (1 << 20) {
        let records = json_records(&mut rng, w.next_offset());
        appended += records.iter().map(|r| r.value.as_ref().map_or(0, Vec::len) + 20).sum::<usize>();
        w.append(&records)?;
    }
    w.finish()
}

/// One broker fetch: open at `pos`, read about a mebibyte, close; returns the bytes read.
async fn broker_fetch(rsm: &TieredStorage, md: &RemoteLogSegmentMetadata, pos: u64) -> BoxResult<Vec<u8>> {
    let mut s = rsm.fetch_log_segment(md, pos as i64, None).await?;
    let mut got = Vec::with_capacity(MIB + (64 << 10));
    while got.len() < MIB {
        match s.next().await {
            Some(b) => got.extend_from_slice(&b?),
            None => break,
        }
    }
    Ok(got)
}

fn main() {
    if let Err(e) = run(parse_args().unwrap_or_else(|e| {
        eprintln!("transforms: {e}");
        std::process::exit(2)
    })) {
        eprintln!("transforms: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> BoxResult<()> {
    let base = a.dir.clone().unwrap_or_else(|| std::env::current_exe().unwrap().parent().unwrap().to_path_buf());
    let tmp = tempfile::tempdir_in(base)?;
    let part = write_json_partition(&tmp.path().join("json-0"), a.size_mib * MIB)?;
    let partition = LocalPartition::open(&part)?;
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0)?;
    let data = partition.segment_data(&seg)?;
    let log = std::fs::read(&data.log_segment)?;
    let key_file = tmp.path().join("kek");
    std::fs::write(&key_file, "5c".repeat(32))?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let store: Arc<dyn StorageBackend> = Arc::new(FsBackend::create(tmp.path().join("store"), false)?);
    let config = |compression: bool, encryption: bool| -> BoxResult<TieredConfig> {
        let mut pairs = a.settings.clone();
        pairs.insert("compression.enabled".into(), compression.to_string());
        pairs.insert("encryption.keys".into(), "kek".into());
        pairs.insert("encryption.key.kek.file".into(), key_file.display().to_string());
        if encryption {
            pairs.insert("encryption.enabled".into(), "true".into());
            pairs.insert("encryption.key.id".into(), "kek".into());
        }
        let p = props(pairs);
        let mut r = ConfigReader::new(&p);
        let c = TieredConfig::read(&mut r)?;
        r.finish()?;
        Ok(c)
    };
    let batches = batch_positions(&data.log_segment)?;
    let mut rng = Rng::new(7);
    let positions: Vec<u64> = (0..a.fetches)
        .map(|_| {
            let p = rng.below(log.len() as u64 - MIB as u64);
            batches[batches.partition_point(|&b| b <= p).saturating_sub(1)]
        })
        .collect();
    println!(
        "{:.1} MiB JSON-like segment, {} copies and {} 1 MiB fetches per setting, extra settings {:?}",
        log.len() as f64 / MIB as f64,
        a.rounds,
        a.fetches,
        a.settings
    );
    println!(
        "{:<26} {:>13} {:>7} {:>10} {:>8} {:>13} {:>10}",
        "setting", "stored bytes", "ratio", "copy ms", "MiB/s", "fetch med us", "p90 us"
    );
    for (name, compression, encryption) in
        [("none", false, false), ("compression", true, false), ("compression+encryption", true, true)]
    {
        let rsm = TieredStorage::new(store.clone(), config(compression, encryption)?);
        // The copy read back first: what the fetches read.
        rt.block_on(rsm.copy_log_segment_data(&md, &data))?;
        let keys = rsm.keys(&md);
        let stored: u64 = [&keys.log, &keys.indexes, &keys.manifest]
            .iter()
            .map(|k| rt.block_on(store.get_range(k, 0..u64::MAX)).map(|b| b.len() as u64))
            .sum::<rsm_core::Result<u64>>()?;
        let mut copies = Vec::with_capacity(a.rounds);
        for _ in 0..a.rounds {
            let mut fresh = md.clone();
            fresh.remote_log_segment_id.id = Uuid::random();
            let t = Instant::now();
            rt.block_on(rsm.copy_log_segment_data(&fresh, &data))?;
            copies.push(t.elapsed());
            rt.block_on(rsm.delete_log_segment_data(&fresh))?;
        }
        copies.sort();
        // One untimed pass checks the bytes; the timed pass follows.
        for &p in positions.iter().take(20) {
            let got = rt.block_on(broker_fetch(&rsm, &md, p))?;
            if got[..] != log[p as usize..p as usize + got.len()] {
                return Err(format!("{name}: the fetch at {p} differs from the file").into());
            }
        }
        let mut fetches = Vec::with_capacity(positions.len());
        for &p in &positions {
            let t = Instant::now();
            rt.block_on(broker_fetch(&rsm, &md, p))?;
            fetches.push(t.elapsed());
        }
        fetches.sort();
        let copy = quantile(&copies, 0.5);
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "{name:<26} {stored:>13} {:>7.3} {:>10.1} {:>8.0} {:>13.0} {:>10.0}",
            stored as f64 / log.len() as f64,
            copy.as_secs_f64() * 1e3,
            log.len() as f64 / MIB as f64 / copy.as_secs_f64(),
            us(quantile(&fetches, 0.5)),
            us(quantile(&fetches, 0.9)),
        );
        rt.block_on(rsm.delete_log_segment_data(&md))?;
    }
    Ok(())
}
