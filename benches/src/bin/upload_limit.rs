//! `upload_limit`: copies under `upload.rate.limit.bytes.per.second` (issue 28's proof of the rate limit).
//!
//! Writes a partition of `--segments` closed segments of about `--segment-mib` each on the build disk, opens
//! one filesystem store through the facade (so the default layer stack, and the limit, as a broker's storage
//! manager has them), and copies every segment at once, twice: with no limit, then with `--limit-mib` MiB/s.
//! Prints the bytes sent (segment data, indexes and manifests, from the store's request counts), the wall
//! time, and against the time the limit allows for those bytes (bytes / limit: the floor, since the bucket
//! starts empty).
//!
//! ```sh
//! cargo run --release -p rsm-benches --bin upload_limit -- [--segments 2] [--segment-mib 256] [--limit-mib 64] [--dir PATH]
//! ```

use rsm_benches::write_partition_of;
use rsm_core::RemoteStorageManager;
use rsm_core::backend::Op;
use rsm_core::format::partition::LocalPartition;
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::time::Instant;

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const MIB: usize = 1 << 20;

fn main() -> BoxResult<()> {
    let (mut segments, mut segment_mib, mut limit_mib, mut dir) = (2usize, 256usize, 64u64, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--segments" => segments = value.parse()?,
            "--segment-mib" => segment_mib = value.parse()?,
            "--limit-mib" => limit_mib = value.parse()?,
            "--dir" => dir = Some(std::path::PathBuf::from(value)),
            _ => {
                return Err(format!(
                    "unknown option {flag} (--segments N, --segment-mib N, --limit-mib N, --dir PATH)"
                )
                .into());
            }
        }
    }
    if segments == 0 || segment_mib == 0 || limit_mib == 0 {
        return Err("--segments, --segment-mib and --limit-mib must be at least 1".into());
    }
    let base = dir.unwrap_or_else(|| std::env::current_exe().unwrap().parent().unwrap().to_path_buf());
    let tmp = tempfile::tempdir_in(base)?;
    let part = write_partition_of(&tmp.path().join("bench-0"), segment_mib * MIB, segments, Default::default())?;
    let partition = LocalPartition::open(&part)?;
    let segs: Vec<_> = partition.closed_segments().iter().take(segments).cloned().collect();
    let log_bytes: u64 = segs
        .iter()
        .map(|s| partition.segment_data(s).map(|d| std::fs::metadata(d.log_segment).map(|m| m.len())))
        .sum::<rsm_core::Result<std::io::Result<u64>>>()??;
    println!(
        "{} segments, {:.0} MiB of .log, copied at once through one storage manager",
        segs.len(),
        log_bytes as f64 / MIB as f64
    );
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    println!("{:<24} {:>12} {:>10} {:>14} {:>8}", "setting", "MiB sent", "seconds", "floor seconds", "ratio");
    for (round, limit) in [(0, None), (1, Some(limit_mib))] {
        let mut settings = BTreeMap::new();
        if let Some(l) = limit {
            settings.insert("upload.rate.limit.bytes.per.second".to_string(), (l * MIB as u64).to_string());
        }
        let url = format!("file://{}", tmp.path().join(format!("store-{round}")).display());
        settings.insert("fs.root.create".to_string(), "true".to_string());
        let store = Store::open(&url, &settings)?;
        let jobs: Vec<_> = segs
            .iter()
            .map(|s| Ok((partition.segment_metadata(s, 1, 0)?, partition.segment_data(s)?)))
            .collect::<rsm_core::Result<_>>()?;
        let t = Instant::now();
        rt.block_on(async {
            let copies = jobs.iter().map(|(md, data)| store.storage().copy_log_segment_data(md, data));
            futures::future::try_join_all(copies).await
        })?;
        let secs = t.elapsed().as_secs_f64();
        let sent = store.counts().get(Op::Put).bytes_sent;
        let name = limit.map_or("no limit".to_string(), |l| format!("limit {l} MiB/s"));
        match limit {
            None => println!("{name:<24} {:>12.1} {secs:>10.2} {:>14} {:>8}", sent as f64 / MIB as f64, "-", "-"),
            Some(l) => {
                let floor = sent as f64 / (l * MIB as u64) as f64;
                println!(
                    "{name:<24} {:>12.1} {secs:>10.2} {floor:>14.2} {:>8.3}",
                    sent as f64 / MIB as f64,
                    secs / floor
                );
            }
        }
    }
    Ok(())
}
