//! `side_by_side`: rsm's filesystem path measured against the plain tools doing the same work.
//!
//! - **copy**: one segment of `--size-mib` (default 1024) copied by `TieredStorage` over `FsBackend`
//!   (fsync on and off) into a fresh store, against `cp` of the segment's files into a fresh directory,
//!   and `cp` followed by an fsync of every copied file and the directory (the durable baseline);
//! - **fetch**: 1 MiB fetches (`fetch_log_segment`, the stream collected) at random batch boundaries of
//!   the copied segment, against `pread` of the same bytes into a new buffer from an open file;
//! - **peak memory**: the growth of peak RSS while one child process copies the segment, and while another
//!   fetches all of it (streamed and discarded).
//!
//! Run: `cargo run --release -p rsm-benches --bin side_by_side -- [--size-mib 1024] [--runs 5]
//! [--fetches 500] [--dir PATH]`. Data lives in a temporary directory under `--dir` (default: the
//! directory of this executable, on the build disk, never tmpfs), removed at the end; generating the
//! data is not measured, every measurement runs with the page cache warm.

use futures::StreamExt;
use rsm_backend_fs::FsBackend;
use rsm_benches::{
    DataShape, MIB, batch_positions, fs_type, mappings_under, probe_copy_paths, proc_status_kib, quantile,
    reset_peak_rss, write_partition,
};
use rsm_core::format::batch::BatchIter;
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::Rng;
use rsm_core::{
    LogSegmentData, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteStorageManager, StorageBackend, TieredConfig,
    TieredStorage,
};
use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::runtime::Runtime;

mod copy;

use copy::{CopyKind, CopySetup, bench_copy};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const USAGE: &str = "usage: side_by_side [--size-mib N (1024)] [--runs N (5)] [--fetches N (500)] \
                     [--dir PATH] [--keep (leave the data directory, to profile a --phase child)]";

/// Command-line options (the `--phase` ones are how the harness runs its memory children).
#[derive(Debug)]
struct Args {
    size_mib: usize,
    runs: usize,
    fetches: usize,
    dir: Option<PathBuf>,
    phase: Option<String>,
    store: Option<PathBuf>,
    data: Option<PathBuf>,
    out: Option<PathBuf>,
    keep: bool,
}

fn parse_args() -> BoxResult<Args> {
    let mut a = Args {
        size_mib: 1024,
        runs: 5,
        fetches: 500,
        dir: None,
        phase: None,
        store: None,
        data: None,
        out: None,
        keep: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        if flag == "--keep" {
            a.keep = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--size-mib" => a.size_mib = value.parse()?,
            "--runs" => a.runs = value.parse()?,
            "--fetches" => a.fetches = value.parse()?,
            "--dir" => a.dir = Some(value.into()),
            "--phase" => a.phase = Some(value),
            "--store" => a.store = Some(value.into()),
            "--data" => a.data = Some(value.into()),
            "--out" => a.out = Some(value.into()),
            _ => return Err(format!("unknown option {flag}\n{USAGE}").into()),
        }
    }
    if a.size_mib == 0 || a.size_mib >= 2048 || a.runs == 0 || a.fetches == 0 {
        return Err(format!("--size-mib must be 1 to 2047, --runs and --fetches at least 1\n{USAGE}").into());
    }
    Ok(a)
}

fn main() {
    let result = parse_args().and_then(|a| match a.phase.as_deref() {
        Some(phase) => run_phase(phase, &a),
        None => run_parent(&a),
    });
    if let Err(e) = result {
        eprintln!("side_by_side: {e}");
        std::process::exit(1);
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Flushes every dirty page of the system, so no run pays for an earlier one's writeback.
fn sync_all() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() }
}

fn runtime() -> BoxResult<Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

fn store(root: &Path, fsync: bool) -> BoxResult<TieredStorage> {
    Ok(TieredStorage::new(Arc::new(FsBackend::create(root, fsync)?), TieredConfig::default()))
}

/// `md` with a new segment id, as the broker makes for every copy attempt.
fn fresh_id(md: &RemoteLogSegmentMetadata) -> RemoteLogSegmentMetadata {
    let mut md = md.clone();
    md.remote_log_segment_id = RemoteLogSegmentId::generate_new(md.remote_log_segment_id.topic_id_partition.clone());
    md
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn gib_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / (1u64 << 30) as f64 / d.as_secs_f64()
}

fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    quantile(&s, 0.5)
}

// ---------------------------------------------------------------------------------------------------
// The parent: data, copy and fetch measurements, memory children, the table.

/// One 1 MiB fetch at `pos` through `TieredStorage`, the stream collected; the time covers the fetch call
/// and the collection only. With `expect`, the bytes are compared (outside the timing).
async fn fetch_1mib(
    tiered: &TieredStorage,
    md: &RemoteLogSegmentMetadata,
    pos: u64,
    expect: Option<&[u8]>,
) -> BoxResult<Duration> {
    let t = Instant::now();
    let mut stream = tiered.fetch_log_segment(md, pos as i64, Some((pos + MIB as u64 - 1) as i64)).await?;
    let mut parts = Vec::new();
    while let Some(b) = stream.next().await {
        parts.push(b?);
    }
    let elapsed = t.elapsed();
    let len: usize = parts.iter().map(|b| b.len()).sum();
    if len != MIB {
        return Err(format!("fetch at {pos} returned {len} bytes").into());
    }
    if let Some(expect) = expect {
        let got: Vec<u8> = parts.iter().flat_map(|b| b.iter().copied()).collect();
        if got != expect {
            return Err(format!("fetch at {pos} returned other bytes than pread").into());
        }
    }
    Ok(elapsed)
}

/// One 1 MiB `pread` at `pos` into a freshly allocated buffer.
fn pread_1mib(file: &File, pos: u64) -> BoxResult<(Duration, Vec<u8>)> {
    let t = Instant::now();
    let mut buf = vec![0u8; MIB];
    file.read_exact_at(&mut buf, pos)?;
    Ok((t.elapsed(), buf))
}

/// One 1 MiB `FsBackend::get_range` at `pos` of `key` (the backend call a fetch makes per chunk piece).
async fn get_range_1mib(backend: &FsBackend, key: &str, pos: u64) -> BoxResult<Duration> {
    let t = Instant::now();
    let bytes = backend.get_range(key, pos..pos + MIB as u64).await?;
    let elapsed = t.elapsed();
    if bytes.len() != MIB {
        return Err(format!("get_range at {pos} returned {} bytes", bytes.len()).into());
    }
    Ok(elapsed)
}

struct FetchResult {
    ours: Vec<Duration>,
    pread: Vec<Duration>,
    get_range: Vec<Duration>,
    chunk_crossing: usize,
}

fn bench_fetch(rt: &Runtime, store_root: &Path, md: &RemoteLogSegmentMetadata, n: usize) -> BoxResult<FetchResult> {
    let tiered = store(store_root, true)?;
    let backend = FsBackend::create(store_root, true)?;
    let key = tiered.keys(md).log;
    let object = store_root.join(&key);
    let file = File::open(&object)?;
    let log_len = file.metadata()?.len();
    let mut candidates: Vec<u64> =
        batch_positions(&object)?.into_iter().filter(|&p| p + MIB as u64 <= log_len).collect();
    if candidates.is_empty() {
        return Err(format!("the segment ({log_len} bytes) is too small for 1 MiB fetches").into());
    }
    // Distinct random batch boundaries (a partial Fisher-Yates shuffle), repeated if there are too few.
    let mut rng = Rng::new(1234);
    let take = n.min(candidates.len());
    for i in 0..take {
        let j = i + rng.below((candidates.len() - i) as u64) as usize;
        candidates.swap(i, j);
    }
    let positions: Vec<u64> = candidates[..take].iter().copied().cycle().take(n).collect();
    let chunk = TieredConfig::default().chunk_size as u64;
    let chunk_crossing = positions.iter().filter(|&&p| p / chunk != (p + MIB as u64 - 1) / chunk).count();
    // An untimed pass warms everything (cache, manifest, allocator, threads) and checks the bytes.
    for &pos in &positions {
        let (_, expect) = pread_1mib(&file, pos)?;
        rt.block_on(fetch_1mib(&tiered, md, pos, Some(&expect)))?;
    }
    let (mut ours, mut pread, mut get_range) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for (i, &pos) in positions.iter().enumerate() {
        // Rotate which goes first, so none always runs right after another.
        for k in 0..3 {
            match (i + k) % 3 {
                0 => ours.push(rt.block_on(fetch_1mib(&tiered, md, pos, None))?),
                1 => pread.push(pread_1mib(&file, pos)?.0),
                _ => get_range.push(rt.block_on(get_range_1mib(&backend, &key, pos))?),
            }
        }
    }
    Ok(FetchResult { ours, pread, get_range, chunk_crossing })
}

/// What a memory child reported.
#[derive(Debug)]
struct PhaseReport {
    fields: HashMap<String, String>,
}

impl PhaseReport {
    fn kib(&self, k: &str) -> BoxResult<u64> {
        Ok(self.fields.get(k).ok_or_else(|| format!("child did not report {k}"))?.parse()?)
    }
    fn mib(&self, k: &str) -> BoxResult<f64> {
        Ok(self.kib(k)? as f64 / 1024.0)
    }
}

/// Runs this binary as a memory child for `phase`, with `env` added to its environment.
fn child_phase(phase: &str, store: &Path, data: &Path, out: &Path, env: &[(&str, &str)]) -> BoxResult<PhaseReport> {
    let exe = std::env::current_exe()?;
    let output = Command::new(exe)
        .envs(env.iter().copied())
        .arg("--phase")
        .arg(phase)
        .arg("--store")
        .arg(store)
        .arg("--data")
        .arg(data)
        .arg("--out")
        .arg(out)
        .output()?;
    if !output.status.success() {
        return Err(
            format!("{phase} child failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr)).into()
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("PHASE "))
        .ok_or_else(|| format!("{phase} child printed no PHASE line: {stdout}"))?;
    let fields = line
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Ok(PhaseReport { fields })
}

fn default_base() -> PathBuf {
    // The build directory is on the disk the project builds on; /tmp may be tmpfs (RAM).
    std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)).unwrap_or_else(std::env::temp_dir)
}

fn run_parent(args: &Args) -> BoxResult<()> {
    let base = args.dir.clone().unwrap_or_else(default_base);
    let tmp = tempfile::Builder::new().prefix("rsm-side-by-side-").tempdir_in(&base)?;
    let root = tmp.path().to_path_buf();
    let fs_name = fs_type(&root)?;
    let (reflink, copy_file_range) = probe_copy_paths(&root)?;
    println!(
        "data dir: {} ({fs_name}); reflink (FICLONE): {}; copy_file_range: {}",
        root.display(),
        if reflink { "works" } else { "not supported" },
        if copy_file_range { "works" } else { "fails" }
    );
    if fs_name == "tmpfs" {
        println!("warning: tmpfs is memory, not a disk; pass --dir on a real filesystem");
    }

    let t = Instant::now();
    let part_dir = write_partition(&root.join("bench-0"), args.size_mib * MIB, DataShape::default())?;
    sync_all();
    let p = LocalPartition::open(&part_dir)?;
    let seg = p.closed_segments().first().ok_or("the generated partition has no closed segment")?.clone();
    let data = p.segment_data(&seg)?;
    let md = p.segment_metadata(&seg, 0, now_ms())?;
    let mut files = vec![data.log_segment.clone(), data.offset_index.clone(), data.time_index.clone()];
    files.push(data.producer_snapshot_index.clone());
    files.extend(data.transaction_index.clone());
    let total: u64 = files.iter().map(|f| fs::metadata(f).map(|m| m.len())).sum::<std::io::Result<u64>>()?;
    let batches = batch_positions(&seg.log)?.len();
    println!(
        "segment: {} bytes of .log ({batches} batches of 16 x 1 KiB records, offsets {}..={}), {total} bytes \
         with .index/.timeindex/.snapshot; generated in {:.1} s (not measured)",
        md.segment_size_in_bytes,
        md.start_offset,
        md.end_offset,
        secs(t.elapsed())
    );

    let rt = runtime()?;
    eprintln!(
        "copy: {} runs of each of four copies and three diagnostic parts (sync before each, warm page cache)",
        args.runs
    );
    let setup = CopySetup { rt: &rt, root: &root, files, data: &data, md: &md };
    let copy = bench_copy(&setup, args.runs)?;
    eprintln!("fetch: {} x 1 MiB at batch boundaries, one untimed pass first", args.fetches);
    let fetch = bench_fetch(&rt, &copy.kept_store, &copy.kept_md, args.fetches)?;
    eprintln!("memory: one child process per phase");
    let mem_copy = child_phase("copy", &copy.kept_store, &part_dir, &root.join("store-mem"), &[])?;
    let mem_fetch = child_phase("fetch", &copy.kept_store, &part_dir, &root.join("unused"), &[])?;
    // Diagnostic: glibc's malloc with its dynamic mmap threshold off (buffers of 1 MiB and more are mapped
    // and unmapped on free): what the fetch holds, without what the allocator keeps in its arenas.
    let mmap_env = [("MALLOC_MMAP_THRESHOLD_", "1048576")];
    let mem_fetch_mmap = child_phase("fetch", &copy.kept_store, &part_dir, &root.join("unused"), &mmap_env)?;

    // The table.
    println!();
    println!("COPY of {total} bytes, median of {} runs (warm page cache)", args.runs);
    println!("  {:<40} {:>10} {:>11}   runs (s)", "", "median s", "GiB/s");
    let med = |k: CopyKind| median(&copy.times[k.label()]);
    let row = |k: CopyKind| {
        let runs: Vec<String> = copy.times[k.label()].iter().map(|d| format!("{:.3}", secs(*d))).collect();
        println!("  {:<40} {:>10.3} {:>11.2}   {}", k.label(), secs(med(k)), gib_per_s(total, med(k)), runs.join(" "));
    };
    CopyKind::MAIN.into_iter().for_each(row);
    println!("  diagnostics (the parts of ours alone):");
    CopyKind::DIAGNOSTIC.into_iter().for_each(row);
    let ratio = |ours: CopyKind, cp: CopyKind| secs(med(cp)) / secs(med(ours));
    println!("  speed ratio ours/cp (target >= 0.90x):");
    for (ours, cp) in [
        (CopyKind::OursNoFsync, CopyKind::Cp),
        (CopyKind::OursFsync, CopyKind::CpFsync),
        (CopyKind::OursFsync, CopyKind::Cp),
    ] {
        println!("    {:<34} / {:<26} {:>6.2}x", ours.label(), cp.label(), ratio(ours, cp));
    }

    let (mut ours, mut pread, mut get_range) = (fetch.ours.clone(), fetch.pread.clone(), fetch.get_range.clone());
    ours.sort();
    pread.sort();
    get_range.sort();
    println!();
    println!(
        "FETCH 1 MiB at {} random batch boundaries ({} cross a 4 MiB chunk boundary), warm, after one untimed pass",
        ours.len(),
        fetch.chunk_crossing
    );
    println!("  {:<40} {:>10} {:>10} {:>10} {:>10}", "", "median ms", "p90 ms", "min ms", "max ms");
    for (label, v) in [
        ("pread into a new 1 MiB Vec", &pread),
        ("TieredStorage fetch_log_segment", &ours),
        ("diagnostic: FsBackend::get_range 1 MiB", &get_range),
    ] {
        println!(
            "  {:<40} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
            label,
            ms(quantile(v, 0.5)),
            ms(quantile(v, 0.9)),
            ms(v[0]),
            ms(v[v.len() - 1])
        );
    }
    println!(
        "  median ratio ours/pread (target <= 1.5x): {:.2}x; p90 ratio: {:.2}x",
        secs(quantile(&ours, 0.5)) / secs(quantile(&pread, 0.5)),
        secs(quantile(&ours, 0.9)) / secs(quantile(&pread, 0.9))
    );

    println!();
    println!("PEAK MEMORY growth (VmHWM after the phase minus VmRSS before it, in a child process; target <= 64 MiB)");
    for (label, r) in [
        ("copy of the segment (fsync=on)", &mem_copy),
        ("fetch of the whole segment", &mem_fetch),
        ("diag: fetch, MALLOC_MMAP_THRESHOLD_=1MiB", &mem_fetch_mmap),
    ] {
        let growth = r.kib("hwm_kib")?.saturating_sub(r.kib("base_rss_kib")?);
        println!(
            "  {:<40} {:>8.1} MiB   (RSS before {:.1} MiB, peak {:.1} MiB; anon at end {:+.1} MiB, file-backed at \
             end {:+.1} MiB; peak reset by clear_refs: {}; mappings of data files: {})",
            label,
            growth as f64 / 1024.0,
            r.mib("base_rss_kib")?,
            r.mib("hwm_kib")?,
            r.mib("end_anon_kib")? - r.mib("base_anon_kib")?,
            r.mib("end_file_kib")? - r.mib("base_file_kib")?,
            r.fields.get("reset").map_or("?", String::as_str),
            r.fields.get("data_mappings").map_or("?", String::as_str),
        );
    }

    drop(rt);
    if args.keep {
        let kept = tmp.keep();
        println!();
        println!(
            "kept {} (a memory child again: side_by_side --phase copy|fetch --store {} --data {} --out DIR)",
            kept.display(),
            copy.kept_store.display(),
            part_dir.display()
        );
    } else {
        tmp.close()?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// A memory child: `--phase copy` copies the partition's first segment into a fresh store at `--out`;
// `--phase fetch` fetches the whole segment stored at `--store`. Setup happens before the baseline.

fn run_phase(phase: &str, args: &Args) -> BoxResult<()> {
    let (store_root, data_dir) = match (&args.store, &args.data) {
        (Some(s), Some(d)) => (s.clone(), d.clone()),
        _ => return Err("--phase needs --store and --data".into()),
    };
    let out_root = args.out.clone().ok_or("--phase needs --out")?;
    let rt = runtime()?;
    let reader = store(&store_root, true)?;
    let stored = rt.block_on(reader.list_segments(None))?;
    let md = stored.first().ok_or("no segment in --store")?.metadata.clone();
    let log_len = md.segment_size_in_bytes as u64;

    let kib = |f: &str| proc_status_kib(f).ok_or_else(|| format!("/proc/self/status has no {f}"));
    let run = || -> BoxResult<()> {
        match phase {
            "copy" => {
                let p = LocalPartition::open(&data_dir)?;
                let seg = p.closed_segments().first().ok_or("no closed segment")?.clone();
                let data = p.segment_data(&seg)?;
                let writer = store(&out_root, true)?;
                rt.block_on(writer.copy_log_segment_data(&fresh_id(&md), &data))?;
            }
            "fetch" => {
                let n = rt.block_on(async {
                    let mut s = reader.fetch_log_segment(&md, 0, None).await?;
                    let mut n = 0u64;
                    while let Some(b) = s.next().await {
                        n += b?.len() as u64;
                    }
                    Ok::<_, rsm_core::Error>(n)
                })?;
                if n != log_len {
                    return Err(format!("fetched {n} of {log_len} bytes").into());
                }
            }
            other => return Err(format!("unknown phase {other}").into()),
        }
        Ok(())
    };

    let reset = reset_peak_rss();
    let (base_rss, base_anon, base_file) = (kib("VmRSS")?, kib("RssAnon")?, kib("RssFile")?);
    run()?;
    let (hwm, end_anon, end_file) = (kib("VmHWM")?, kib("RssAnon")?, kib("RssFile")?);
    let mappings = mappings_under(&store_root) + mappings_under(&data_dir) + mappings_under(&out_root);
    println!(
        "PHASE {phase} reset={reset} base_rss_kib={base_rss} base_anon_kib={base_anon} base_file_kib={base_file} \
         hwm_kib={hwm} end_anon_kib={end_anon} end_file_kib={end_file} data_mappings={mappings}"
    );
    Ok(())
}
