//! `rsm`: tier a Kafka partition directory to a store, list, read and verify what is there, and run the
//! demo. A thin face over `rsm-facade`.

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use rsm_core::backend::Op;
use rsm_core::config::parse_properties;
use rsm_core::format::batch::BatchIter;
use rsm_core::format::manifest::Manifest;
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::writer::{PartitionSpec, generate_partition};
use rsm_core::{Error, IndexType, Result, Uuid};
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Parser)]
#[command(name = "rsm", version, about = "Kafka tiered storage: copy, list, fetch and verify segments")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct StoreArgs {
    /// Store URL: file:///path, s3://bucket/prefix, az://container/prefix, gs://bucket/prefix, hdfs://namenode:port/path.
    #[arg(long)]
    store: String,
    /// A properties file of settings (the broker's rsm.config.* keys without the prefix).
    #[arg(long)]
    config: Option<PathBuf>,
    /// One setting, key=value; repeatable; wins over --config.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl StoreArgs {
    fn open(&self) -> Result<Store> {
        Store::open(&self.store, &settings(self.config.as_ref(), &self.set)?)
    }
}

/// Settings from an optional properties file, then `key=value` flags on top.
fn settings(config: Option<&PathBuf>, set: &[String]) -> Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    if let Some(p) = config {
        let text = std::fs::read_to_string(p).map_err(|e| Error::from_io(p.display(), e))?;
        settings = parse_properties(&text)?;
    }
    for kv in set {
        let (k, v) = kv.split_once('=').ok_or_else(|| Error::invalid(format!("--set `{kv}`: expected key=value")))?;
        settings.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(settings)
}

#[derive(Subcommand)]
enum Command {
    /// Generate a real Kafka partition, tier it to a store, read every segment back and check every byte.
    Demo {
        /// Store URL (default: a filesystem store in a temp dir).
        #[arg(long)]
        store: Option<String>,
        /// A properties file of the store's settings.
        #[arg(long)]
        config: Option<PathBuf>,
        /// One store setting, key=value; repeatable; wins over --config.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Closed segments to generate.
        #[arg(long, default_value_t = 6)]
        segments: u64,
        /// Segment size in MiB.
        #[arg(long, default_value_t = 8)]
        segment_mib: u64,
        /// Keep the generated partition and store, and print where.
        #[arg(long)]
        keep: bool,
    },
    /// Copy the closed segments of a partition directory to a store.
    Copy {
        /// The partition directory (`topic-partition`).
        #[arg(long)]
        dir: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
        /// Broker id recorded in the segment metadata.
        #[arg(long, default_value_t = 0)]
        broker_id: i32,
    },
    /// List the segments in a store.
    Ls {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Write a segment's bytes (or one of its indexes) to stdout or a file.
    Fetch {
        #[command(flatten)]
        store: StoreArgs,
        /// The segment id (as `rsm ls` shows it).
        #[arg(long)]
        segment: String,
        /// Start at the batch holding this offset.
        #[arg(long, conflicts_with_all = ["timestamp", "position"])]
        offset: Option<i64>,
        /// Start at the first batch with a timestamp at or after this one (ms).
        #[arg(long, conflicts_with = "position")]
        timestamp: Option<i64>,
        /// Start at this byte position.
        #[arg(long)]
        position: Option<i32>,
        /// At most this many bytes.
        #[arg(long)]
        bytes: Option<i32>,
        /// Fetch this index instead of the log (OFFSET, TIMESTAMP, PRODUCER_SNAPSHOT, TRANSACTION, LEADER_EPOCH).
        #[arg(long)]
        index: Option<String>,
        /// Output file (default stdout).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Read and check every segment in a store; with --dir, also compare with the local files.
    Verify {
        #[command(flatten)]
        store: StoreArgs,
        /// A partition directory whose segments were copied.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn progress(total: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// Copies the closed segments of `partition`; returns (segments, bytes).
fn copy_partition(
    store: &Store,
    partition: &LocalPartition,
    broker_id: i32,
) -> Result<Vec<rsm_core::RemoteLogSegmentMetadata>> {
    let closed = partition.closed_segments();
    let total: u64 = closed.iter().map(|s| std::fs::metadata(&s.log).map(|m| m.len()).unwrap_or(0)).sum();
    let pb = progress(total, "copy");
    let mut done = Vec::new();
    for seg in closed {
        let md = partition.segment_metadata(seg, broker_id, now_ms())?;
        let data = partition.segment_data(seg)?;
        store.copy(&md, &data)?;
        pb.inc(md.segment_size_in_bytes as u64);
        done.push(md);
    }
    pb.finish_and_clear();
    Ok(done)
}

fn read_all(store: &Store, md: &rsm_core::RemoteLogSegmentMetadata, start: i32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    store.fetch(md, start, None)?.read_to_end(&mut out).map_err(|e| Error::from_io("fetch stream", e))?;
    Ok(out)
}

fn mismatch(what: String) -> Error {
    Error::corrupt(format!("demo check failed: {what}"))
}

fn demo(
    store_url: Option<String>,
    settings: BTreeMap<String, String>,
    segments: u64,
    segment_mib: u64,
    keep: bool,
) -> Result<()> {
    if segments == 0 || segment_mib == 0 {
        return Err(Error::invalid("--segments and --segment-mib must be at least 1"));
    }
    let tmp = tempfile::Builder::new().prefix("rsm-demo-").tempdir().map_err(|e| Error::from_io("temp dir", e))?;
    let url = store_url.unwrap_or_else(|| format!("file://{}", tmp.path().join("store").display()));
    let segment_bytes = (segment_mib << 20) as usize;
    let value_bytes = 512;
    // Enough records for the requested closed segments plus an active one.
    let per_record = value_bytes as u64 + 40;
    let records = (segments + 1) * segment_bytes as u64 / per_record;
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes,
        records,
        records_per_batch: 32,
        value_bytes,
        first_timestamp: now_ms() - 3_600_000,
        epoch_every_batches: 500,
        seed: 2026,
    };
    let t = Instant::now();
    let dir = generate_partition(&tmp.path().join("demo-orders-0"), &spec)?;
    let partition = LocalPartition::open(&dir)?;
    println!(
        "generated {} segments ({} closed) of real Kafka v2 batches in {:.1}s: {}",
        partition.segments.len(),
        partition.closed_segments().len(),
        t.elapsed().as_secs_f64(),
        dir.display()
    );
    let store = Store::open(&url, &settings)?;

    let t = Instant::now();
    let copied = copy_partition(&store, &partition, 0)?;
    let copy_secs = t.elapsed().as_secs_f64();
    let copy_counts = (store.counts().get(Op::Put).requests, store.counts().total_requests());

    let t = Instant::now();
    let mut fetched_bytes = 0u64;
    let mut chunks = 0usize;
    for (seg, md) in partition.closed_segments().iter().zip(&copied) {
        let local = std::fs::read(&seg.log).map_err(|e| Error::from_io(seg.log.display(), e))?;
        let manifest = store.manifest(md)?;
        chunks += manifest.chunks.len();
        // By position: the whole segment, and the tail from the middle.
        let whole = read_all(&store, md, 0)?;
        if whole != local {
            return Err(mismatch(format!("segment {} by position 0", md.start_offset)));
        }
        let mid = (local.len() / 2) as i32;
        if read_all(&store, md, mid)? != local[mid as usize..] {
            return Err(mismatch(format!("segment {} from position {mid}", md.start_offset)));
        }
        fetched_bytes += (whole.len() + local.len() - mid as usize) as u64;
        // By offset and by timestamp, checked against an independent walk of the local file.
        let batches: Vec<_> = BatchIter::new(&local, 0, true).collect::<Result<Vec<_>>>()?;
        for b in [batches[0], batches[batches.len() / 3], batches[batches.len() - 1]] {
            let o = (b.base_offset() + b.last_offset()) / 2;
            let pos = store.position_of_offset(md, o)?;
            if pos as u64 != b.position() {
                return Err(mismatch(format!("offset {o}: position {pos}, expected {}", b.position())));
            }
            let from = read_all(&store, md, pos as i32)?;
            if from != local[pos as usize..] {
                return Err(mismatch(format!("segment {} from offset {o}", md.start_offset)));
            }
            fetched_bytes += from.len() as u64;
            let ts = b.max_timestamp();
            let want = batches.iter().find(|x| x.max_timestamp() >= ts).map(|x| x.position() as u32);
            let got = store.position_of_timestamp(md, ts)?;
            if got != want {
                return Err(mismatch(format!("timestamp {ts}: position {got:?}, expected {want:?}")));
            }
        }
        for (t, path) in [
            (IndexType::Offset, partition_file(seg, "index")),
            (IndexType::Timestamp, partition_file(seg, "timeindex")),
        ] {
            let want = std::fs::read(&path).map_err(|e| Error::from_io(path.display(), e))?;
            if store.fetch_index(md, t)? != want {
                return Err(mismatch(format!("{t} index of segment {}", md.start_offset)));
            }
        }
    }
    let fetch_secs = t.elapsed().as_secs_f64();
    let c = store.counts();
    let total_bytes: u64 = copied.iter().map(|m| m.segment_size_in_bytes as u64).sum();
    println!();
    println!("{:<24} {:>14}", "store", url);
    println!("{:<24} {:>14}", "segments copied", copied.len());
    println!("{:<24} {:>14.1}", "log MiB", mib(total_bytes));
    println!("{:<24} {:>14}", "chunks", chunks);
    println!("{:<24} {:>14}", "copy requests (PUT)", copy_counts.0);
    println!("{:<24} {:>14.2}", "PUT per segment", copy_counts.0 as f64 / copied.len() as f64);
    println!("{:<24} {:>14}", "GET requests", c.get(Op::Get).requests);
    println!("{:<24} {:>14}", "all requests", c.total_requests());
    println!("{:<24} {:>14.1}", "copy MiB/s", mib(total_bytes) / copy_secs);
    println!("{:<24} {:>14.1}", "fetch MiB/s", mib(fetched_bytes) / fetch_secs);
    println!("{:<24} {:>14}", "byte-identical", "yes");
    if keep {
        let kept = tmp.keep();
        println!("kept: {}", kept.display());
    }
    Ok(())
}

fn partition_file(seg: &rsm_core::format::partition::LocalSegment, ext: &str) -> PathBuf {
    seg.log.with_extension(ext)
}

fn find_segment(store: &Store, id: &str) -> Result<Manifest> {
    store.find_segment(&id.parse()?)
}

/// A listed segment's manifest, or a line on stdout saying what is wrong with it (and `None`).
fn usable(s: rsm_core::storage::ListedSegment, problems: &mut usize) -> Option<Manifest> {
    match s.manifest {
        Ok(m) if s.missing.is_empty() => Some(m),
        Ok(m) => {
            *problems += 1;
            println!("INCOMPLETE	{}	missing {}", m.metadata.remote_log_segment_id.id, s.missing.join(", "));
            None
        }
        Err(e) => {
            *problems += 1;
            println!("DAMAGED	{}	{}", s.manifest_key, e.full_message());
            None
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Demo { store, config, set, segments, segment_mib, keep } => {
            demo(store, settings(config.as_ref(), &set)?, segments, segment_mib, keep)
        }
        Command::Copy { dir, store, broker_id } => {
            let store = store.open()?;
            let partition = LocalPartition::open(&dir)?;
            let t = Instant::now();
            let done = copy_partition(&store, &partition, broker_id)?;
            let bytes: u64 = done.iter().map(|m| m.segment_size_in_bytes as u64).sum();
            for m in &done {
                println!(
                    "{}\t{}..={}\t{} bytes",
                    m.remote_log_segment_id.id, m.start_offset, m.end_offset, m.segment_size_in_bytes
                );
            }
            let c = store.counts();
            println!(
                "copied {} segments, {:.1} MiB in {:.2}s; {} requests ({} PUT)",
                done.len(),
                mib(bytes),
                t.elapsed().as_secs_f64(),
                c.total_requests(),
                c.get(Op::Put).requests
            );
            Ok(())
        }
        Command::Ls { store } => {
            let store = store.open()?;
            println!("partition\tsegment id\toffsets\tbytes\tchunks\tmax timestamp");
            let mut problems = 0;
            for listed in store.scan_segments(None)? {
                let Some(m) = usable(listed, &mut problems) else { continue };
                let md = &m.metadata;
                println!(
                    "{}\t{}\t{}..={}\t{}\t{}\t{}",
                    md.remote_log_segment_id.topic_id_partition.topic_partition,
                    md.remote_log_segment_id.id,
                    md.start_offset,
                    md.end_offset,
                    m.log_length,
                    m.chunks.len(),
                    md.max_timestamp_ms
                );
            }
            if problems > 0 {
                return Err(Error::corrupt(format!("{problems} segments are damaged or incomplete (listed above)")));
            }
            Ok(())
        }
        Command::Fetch { store, segment, offset, timestamp, position, bytes, index, output } => {
            let store = store.open()?;
            let m = find_segment(&store, &segment)?;
            let md = &m.metadata;
            let mut out: Box<dyn Write> = match &output {
                Some(p) => Box::new(std::fs::File::create(p).map_err(|e| Error::from_io(p.display(), e))?),
                None => Box::new(std::io::stdout().lock()),
            };
            let werr = |e| Error::from_io("output", e);
            if let Some(t) = index {
                let b = store.fetch_index(md, t.parse()?)?;
                return out.write_all(&b).map_err(werr);
            }
            let start = match (offset, timestamp, position) {
                (Some(o), _, _) => store.position_of_offset(md, o)? as i32,
                (_, Some(ts), _) => store.position_of_timestamp(md, ts)?.ok_or_else(|| {
                    Error::not_found(format!("a record at or after timestamp {ts} in segment {segment}"))
                })? as i32,
                (_, _, Some(p)) => p,
                _ => 0,
            };
            let end = bytes.map(|n| start.saturating_add(n.max(1)) - 1);
            let mut reader = store.fetch(md, start, end)?;
            while let Some(b) = reader.next_bytes()? {
                out.write_all(&b).map_err(werr)?;
            }
            out.flush().map_err(werr)
        }
        Command::Verify { store, dir } => {
            let store = store.open()?;
            let listed = store.scan_segments(None)?;
            let local = dir.map(|d| LocalPartition::open(&d)).transpose()?;
            let (mut bytes, mut good, mut problems) = (0, 0, 0);
            for s in listed {
                let Some(m) = usable(s, &mut problems) else { continue };
                let id = m.metadata.remote_log_segment_id.id;
                let checked = store.verify(&m.metadata).and_then(|report| {
                    if let Some(p) = &local
                        && let Some(seg) = p.segments.iter().find(|s| s.base_offset == m.metadata.start_offset)
                    {
                        let want = std::fs::read(&seg.log).map_err(|e| Error::from_io(seg.log.display(), e))?;
                        if read_all(&store, &m.metadata, 0)? != want {
                            return Err(Error::corrupt(format!("segment {id} differs from {}", seg.log.display())));
                        }
                    }
                    Ok(report)
                });
                match checked {
                    Ok(report) => {
                        bytes += report.bytes;
                        good += 1;
                        println!("ok\t{id}\t{} chunks\t{} indexes", report.chunks, report.indexes);
                    }
                    Err(e) => {
                        problems += 1;
                        println!("FAILED\t{id}\t{}", e.full_message());
                    }
                }
            }
            println!("verified {good} segments, {:.1} MiB; {problems} damaged or incomplete", mib(bytes));
            if problems > 0 {
                return Err(Error::corrupt(format!("{problems} segments failed verification (listed above)")));
            }
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsm: {}", e.full_message());
            ExitCode::FAILURE
        }
    }
}
