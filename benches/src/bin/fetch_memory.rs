//! Peak memory of `rsm fetch` (a whole segment) and `rsm verify`, compressed and encrypted, against the
//! bound the settings give: whatever the segment and its batches, at most 64 MiB above the configured
//! caches at `fetch.concurrency` 4, and at most (concurrency + 1) × `chunk.size` + 32 MiB at 16.
//!
//! ```text
//! cargo build --release --locked -p rsm-cli
//! cargo run --release -p rsm-benches --bin fetch_memory -- [--size-mib 500] [--batch-mib 40] [--dir PATH] [--rsm PATH]
//! ```
//!
//! It writes two partitions of JSON-like records (compressible about 6 to 1), each with one closed segment of
//! just under `--size-mib`: one of batches of about 16 KiB (a producer's default), one of batches of
//! `--batch-mib`. Each is copied with `rsm copy` into three stores: compressed, encrypted, both. Then
//! `rsm fetch` of the whole segment (to `/dev/null`) and `rsm verify` of the store run at
//! `fetch.concurrency` 4 and 16, each a child process of its own whose peak resident set (`ru_maxrss` from
//! `wait4`) is the figure: the whole process, the runtime and the allocator's keep included, as an operator's
//! `time -v` would show it. No chunk cache is configured (`fetch.cache.bytes` 0, the default), so the bound
//! at 4 is 64 MiB. A line per run, then a table.

use rsm_benches::{MIB, json_value};
use rsm_core::testkit::log_writer::{PartitionWriter, Record, Rng};
use rsm_core::{Uuid, model::RemoteLogSegmentMetadata};
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// `chunk.size`, the default: the bound at 16 is (16 + 1) × this + 32 MiB.
const CHUNK_SIZE: u64 = 4 << 20;

struct Args {
    size_mib: usize,
    batch_mib: usize,
    dir: PathBuf,
    rsm: PathBuf,
}

fn parse_args() -> BoxResult<Args> {
    let exe_dir = std::env::current_exe()?.parent().ok_or("no directory of the executable")?.to_path_buf();
    let mut a = Args { size_mib: 500, batch_mib: 40, dir: exe_dir.clone(), rsm: exe_dir.join("rsm") };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--size-mib" => a.size_mib = value()?.parse()?,
            "--batch-mib" => a.batch_mib = value()?.parse()?,
            "--dir" => a.dir = PathBuf::from(value()?),
            "--rsm" => a.rsm = PathBuf::from(value()?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !a.rsm.is_file() {
        return Err(
            format!("no rsm binary at {} (cargo build --release -p rsm-cli, or --rsm PATH)", a.rsm.display()).into()
        );
    }
    Ok(a)
}

/// Writes partition `orders-0` under `root` with one closed segment of just under `size` bytes in batches of
/// JSON-like records of about `batch` bytes each.
fn write_partition(root: &Path, size: usize, batch: usize) -> BoxResult<PathBuf> {
    let dir = root.join("orders-0");
    let mut w = PartitionWriter::create(&dir, Uuid::random(), size, 4096)?;
    let mut rng = Rng::new(7);
    // The first segment rolls when a batch no longer fits; one more batch after that ends the run.
    let mut written = 0usize;
    while written < size + 2 * batch {
        let base = w.next_offset();
        let mut records = Vec::new();
        let mut bytes = 0usize;
        while bytes < batch {
            let offset = base + records.len() as i64;
            let value = json_value(&mut rng, offset);
            bytes += value.len(); // less than the batch takes, so the segment surely rolls
            records.push(Record {
                key: Some(format!("user-{}", offset % 1000).into_bytes()),
                value: Some(value),
                headers: vec![],
                timestamp: 1_700_000_000_000 + offset,
            });
        }
        w.append(&records)?;
        written += bytes;
    }
    w.finish()?;
    Ok(dir)
}

/// Runs `cmd` to its end with its output discarded and returns its peak resident set in KiB, measured by a
/// fresh process of this binary (`--measure`) that starts it: Linux counts in a child's `ru_maxrss` the
/// resident set of the process it was started from (the memory it shared until its `exec`), and this one
/// holds the data it wrote.
fn peak_rss_kib(cmd: Command) -> BoxResult<u64> {
    let mut measure = Command::new(std::env::current_exe()?);
    measure.arg("--measure").arg(cmd.get_program()).args(cmd.get_args());
    let out = measure.stderr(Stdio::inherit()).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let kib = text.lines().find_map(|l| l.strip_prefix("PEAK_KIB ")).ok_or_else(|| format!("{cmd:?}: {text}"))?;
    Ok(kib.trim().parse()?)
}

/// `--measure PROGRAM ARGS...`: runs the program (its output discarded) and prints `PEAK_KIB n`.
fn measure(program: &str, args: &[String]) -> BoxResult<()> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    println!("PEAK_KIB {}", wait_peak_kib(cmd)?);
    Ok(())
}

/// Runs `cmd` to its end with its output discarded (stderr kept for an error) and returns its `ru_maxrss`.
fn wait_peak_kib(mut cmd: Command) -> BoxResult<u64> {
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.ok_or("no stderr")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).map(|_| s)
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for the child just spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child, status and usage point at live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let err = reader.join().map_err(|_| "stderr reader panicked")??;
    if waited != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()).into());
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("{cmd:?} failed (status {status}): {err}").into());
    }
    Ok(usage.ru_maxrss as u64)
}

fn rsm(args: &Args, verb: &str, store: &str, settings: &[(String, String)]) -> Command {
    let mut c = Command::new(&args.rsm);
    c.arg(verb).arg("--store").arg(store);
    for (k, v) in settings {
        c.arg("--set").arg(format!("{k}={v}"));
    }
    c
}

fn main() -> BoxResult<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, program, rest @ ..] = argv.as_slice()
        && flag == "--measure"
    {
        return measure(program, rest);
    }
    let args = parse_args()?;
    let dir = tempfile::Builder::new().prefix("fetch-memory-").tempdir_in(&args.dir)?;
    // KEEP=1 leaves the work directory (its stores, to run a command again by hand).
    let (work, _cleanup) = match std::env::var_os("KEEP") {
        Some(_) => (dir.keep(), None),
        None => (dir.path().to_path_buf(), Some(dir)),
    };
    let key = work.join("kek.hex");
    std::fs::write(&key, "42".repeat(32))?;
    let encryption = [("encryption.keys", "k1".to_string()), ("encryption.key.k1.file", key.display().to_string())];
    let transforms: [(&str, bool, bool); 3] =
        [("compressed", true, false), ("encrypted", false, true), ("compressed+encrypted", true, true)];
    let shapes = [("16 KiB batches", 16 << 10), ("large batches", args.batch_mib * MIB)];
    println!("rsm: {}", args.rsm.display());
    let mut rows = Vec::new();
    for (s, (shape, batch)) in shapes.iter().enumerate() {
        let partition = write_partition(&work.join(format!("data-{s}")), args.size_mib * MIB, *batch)?;
        for (transform, compress, encrypt) in transforms {
            let root = work.join(format!("store-{s}-{}", transform.replace('+', "-")));
            let url = format!("file://{}", root.display());
            // Reading needs the keys; writing needs them turned on.
            let mut read: Vec<(String, String)> = Vec::new();
            if encrypt {
                read.extend(encryption.iter().map(|(k, v)| (k.to_string(), v.clone())));
            }
            let mut write = read.clone();
            write.push(("compression.enabled".into(), compress.to_string()));
            if encrypt {
                write.push(("encryption.enabled".into(), "true".into()));
                write.push(("encryption.key.id".into(), "k1".into()));
            }
            let mut copy = rsm(&args, "copy", &url, &write);
            copy.arg("--dir").arg(&partition).arg("--create");
            let copy_kib = peak_rss_kib(copy)?;
            let settings: BTreeMap<String, String> = read.iter().cloned().collect();
            let segments = Store::open(&url, &settings)?.list_segments(None)?;
            let [m] = segments.as_slice() else { return Err(format!("{url}: {} segments", segments.len()).into()) };
            let md: &RemoteLogSegmentMetadata = &m.metadata;
            let biggest = m.chunks.iter().map(|c| c.data_length).max().unwrap_or(0);
            println!(
                "{shape}, {transform}: segment of {:.1} MiB in {} chunks (largest {:.1} MiB); copy peak {:.1} MiB",
                md.segment_size_in_bytes as f64 / MIB as f64,
                m.chunks.len(),
                biggest as f64 / MIB as f64,
                copy_kib as f64 / 1024.0
            );
            for concurrency in [4u64, 16] {
                let mut with = read.clone();
                with.push(("fetch.concurrency".into(), concurrency.to_string()));
                let mut fetch = rsm(&args, "fetch", &url, &with);
                fetch.arg("--segment").arg(md.remote_log_segment_id.id.to_string());
                let fetch_kib = peak_rss_kib(fetch)?;
                let verify_kib = peak_rss_kib(rsm(&args, "verify", &url, &with))?;
                let bound_mib = if concurrency == 4 { 64 } else { (concurrency + 1) * CHUNK_SIZE / MIB as u64 + 32 };
                for (op, kib) in [("fetch", fetch_kib), ("verify", verify_kib)] {
                    let mib = kib as f64 / 1024.0;
                    println!(
                        "RESULT {shape} | {transform} | {op} | {concurrency} | {mib:.1} MiB | bound {bound_mib} MiB"
                    );
                    rows.push((shape.to_string(), transform, op, concurrency, mib, bound_mib));
                }
            }
        }
    }
    println!("\n| batches | stored | command | fetch.concurrency | peak RSS | bound | within |");
    println!("|---|---|---|---|---|---|---|");
    for (shape, transform, op, concurrency, mib, bound) in rows {
        let within = if mib <= bound as f64 { "yes" } else { "no" };
        println!("| {shape} | {transform} | {op} | {concurrency} | {mib:.1} MiB | {bound} MiB | {within} |");
    }
    Ok(())
}
