//! `rsm`: tier a Kafka partition directory to a store, list, read and verify what is there, and run the
//! demo. A thin face over `rsm-facade`.
//!
//! Output goes to stdout through [`Out`], so a reader that stops early (`rsm ls | head`) ends the command
//! quietly with success rather than a panic; errors go to stderr, one line, and exit 1.

mod audit;
mod rewrap;
mod tier;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use rsm_core::backend::Op;
use rsm_core::config::parse_properties;
use rsm_core::format::batch::BatchIter;
use rsm_core::format::manifest::Manifest;
use rsm_core::format::partition::{LocalPartition, LocalSegment};
use rsm_core::format::writer::{PartitionSpec, generate_partition};
use rsm_core::storage::ListedSegment;
use rsm_core::{Error, IndexType, RemoteLogSegmentMetadata, Result, TopicIdPartition, Uuid};
use rsm_engine::Totals;
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const STORE_SETTINGS_HELP: &str = "\
Store settings (--set KEY=VALUE or a --config properties file) are the keys a broker passes under \
rsm.config.; see the README's settings table. Connect timeouts, in ms: s3.connect.timeout, \
azure.connect.timeout, gcs.connect.timeout (default 5000 each) and hdfs.connect.timeout (default 20000; \
a name node host that does not resolve fails at once). A file:// store's directory must exist \
(rsm copy --create makes it).";

#[derive(Parser)]
#[command(
    name = "rsm",
    version,
    about = "Kafka tiered storage: copy, list, fetch and verify segments",
    after_help = STORE_SETTINGS_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct StoreArgs {
    /// Store URL: file:///path (an existing directory), s3://bucket/prefix, az://container/prefix,
    /// gs://bucket/prefix, hdfs://namenode:port/path.
    #[arg(long)]
    store: String,
    /// A Java properties file of settings (the broker's rsm.config.* keys without the prefix).
    #[arg(long)]
    config: Option<PathBuf>,
    /// One setting, key=value; repeatable; wins over --config. Connect timeouts: s3.connect.timeout,
    /// azure.connect.timeout, gcs.connect.timeout, hdfs.connect.timeout (ms).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl StoreArgs {
    fn open(&self) -> Result<Store> {
        // One properties file serves every command: the engine's keys (retention.ms, remote.log.*, …) are
        // for `tier` and its kin, and a store command leaves them alone.
        let mut settings = settings(self.config.as_ref(), &self.set)?;
        settings.retain(|k, _| !rsm_engine::config::is_engine_key(k));
        Store::open(&self.store, &settings)
    }
}

/// The text of a `--config` file: a missing file is not found, and one that is not text (not UTF-8) is an
/// invalid argument naming it, not a storage error.
pub(crate) fn read_config_file(p: &Path) -> Result<String> {
    let bytes = std::fs::read(p).map_err(|e| Error::from_io(p.display(), e))?;
    String::from_utf8(bytes).map_err(|e| {
        Error::invalid(format!(
            "--config {}: not a properties file (byte {} is not UTF-8 text)",
            p.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Settings from an optional properties file, then `key=value` flags on top.
fn settings(config: Option<&PathBuf>, set: &[String]) -> Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    if let Some(p) = config {
        let text = read_config_file(p)?;
        settings = parse_properties(&text).map_err(|e| e.context(p.display()))?;
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
    /// Copy the closed segments of a partition directory to a store; segments already whole in the store
    /// are skipped, so a rerun copies only what is missing.
    Copy {
        /// The partition directory (`topic-partition`).
        #[arg(long)]
        dir: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
        /// Broker id recorded in the segment metadata (0 or more, as Kafka's node.id).
        #[arg(long, default_value_t = 0, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(0..))]
        broker_id: i32,
        /// Create a file:// store's directory if it does not exist (`--set fs.root.create=true`).
        #[arg(long)]
        create: bool,
    },
    /// List the segments in a store: topic id, offsets, sizes, copy time, and totals.
    Ls {
        #[command(flatten)]
        store: StoreArgs,
        /// Only this topic's segments.
        #[arg(long)]
        topic: Option<String>,
        /// Only this partition's segments.
        #[arg(long, allow_hyphen_values = true)]
        partition: Option<i32>,
        /// One JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Write a segment's bytes (or one of its indexes) to stdout or a file.
    Fetch {
        #[command(flatten)]
        store: StoreArgs,
        /// The segment id as `rsm ls` shows it, or the full `topicId:topic-partition:id` an error names.
        #[arg(long, allow_hyphen_values = true)]
        segment: String,
        /// Start at the batch holding this offset.
        #[arg(long, conflicts_with_all = ["timestamp", "position"], allow_hyphen_values = true)]
        offset: Option<i64>,
        /// Start at the first batch with a timestamp at or after this one (ms).
        #[arg(long, conflicts_with = "position", allow_hyphen_values = true)]
        timestamp: Option<i64>,
        /// Start at this byte position.
        #[arg(long, allow_hyphen_values = true)]
        position: Option<i32>,
        /// At most this many bytes (at least 1).
        #[arg(long, allow_hyphen_values = true)]
        bytes: Option<i64>,
        /// Fetch this index instead of the log (OFFSET, TIMESTAMP, PRODUCER_SNAPSHOT, TRANSACTION,
        /// LEADER_EPOCH); the whole index, so not with --offset, --timestamp, --position or --bytes.
        #[arg(long, conflicts_with_all = ["offset", "timestamp", "position", "bytes"])]
        index: Option<String>,
        /// Output file (default stdout); written under a temporary name and renamed when complete, so a
        /// failed fetch leaves no file.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Compare a cluster's remote log metadata with its store: copied segments missing or damaged (data
    /// loss), objects no metadata references (orphans), segments stuck in copy or delete. Exits 1 on data
    /// loss.
    Audit {
        /// A Kafka broker to read the metadata topic from (HOST:PORT).
        #[arg(long, required_unless_present = "metadata_dir")]
        bootstrap_server: Option<String>,
        /// The metadata topic.
        #[arg(long, default_value = "__remote_log_metadata")]
        metadata_topic: String,
        /// A local metadata log (the embedded default) instead of a cluster.
        #[arg(long, conflicts_with = "bootstrap_server")]
        metadata_dir: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
        /// Only this topic.
        #[arg(long)]
        topic: Option<String>,
        /// Check that objects are there and manifests read, without reading the data.
        #[arg(long)]
        quick: bool,
        /// Safety age: younger objects are never deleted and younger copies or deletes are not stuck
        /// (0s, 90s, 10m, 1h, 7d).
        #[arg(long, default_value = "1h", value_parser = audit::parse_age)]
        min_age: std::time::Duration,
        /// Delete the orphans older than the safety age (needs --yes).
        #[arg(long)]
        delete_orphans: bool,
        /// Confirms --delete-orphans.
        #[arg(long, requires = "delete_orphans")]
        yes: bool,
        /// One JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run the tiering engine over partition directories: copy the segments that are due, apply remote
    /// and local retention, keep the partition index files. Once, or with --watch until stopped. Runs
    /// again copy nothing twice; a stop at any moment (kill -9 included) loses nothing.
    Tier {
        /// Partition directories (`topic-partition`).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[command(flatten)]
        engine: tier::EngineArgs,
        /// Keep running: each partition again every remote.log.manager.task.interval.ms (default 30 s),
        /// following new segments, until the process is stopped.
        #[arg(long)]
        watch: bool,
        /// Print, per partition, what a run would copy, delete remotely and delete locally (offsets, bytes
        /// and the setting that makes each due), and change nothing.
        #[arg(long, conflicts_with = "watch")]
        dry_run: bool,
        /// Run even when it would copy segments and delete them by retention in the same run (a first run
        /// over records older than retention.ms); without it, or retention.ms set explicitly, such a run
        /// prints its plan and stops.
        #[arg(long)]
        yes: bool,
    },
    /// Print each partition's offsets: Lx (local log start), Ly (last stable), Lz (local log end),
    /// Rx and Ry (remote log start and end, `-` when nothing is remote).
    Offsets {
        /// Partition directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[command(flatten)]
        engine: tier::EngineArgs,
    },
    /// Apply remote and local retention to partition directories now, without copying.
    Expire {
        /// Partition directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[command(flatten)]
        engine: tier::EngineArgs,
    },
    /// Print the records served from remote storage at an offset or from a timestamp (offset, timestamp,
    /// key, value, headers), through the engine's reader pool.
    Read {
        /// The partition directory (it names the partition; its segments may be gone locally).
        dir: PathBuf,
        #[command(flatten)]
        engine: tier::EngineArgs,
        /// The first offset.
        #[arg(long, allow_hyphen_values = true, required_unless_present = "timestamp", conflicts_with = "timestamp")]
        offset: Option<i64>,
        /// The first record at or after this timestamp (ms since the epoch).
        #[arg(long, allow_hyphen_values = true)]
        timestamp: Option<i64>,
        /// The most records to print.
        #[arg(long, default_value_t = 20)]
        max_records: usize,
        /// Bytes per read from the store (at least one whole batch is read).
        #[arg(long, default_value_t = 1 << 20)]
        max_bytes: u32,
        /// How long one read may take, retries included (ms).
        #[arg(long, default_value_t = 30_000)]
        timeout_ms: u64,
        /// One JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// The deletions that failed and wait for a retry (SR-35): list them, or retry them now.
    FailedDeletions {
        /// `list` or `retry`.
        #[arg(value_parser = ["list", "retry"])]
        action: String,
        #[command(flatten)]
        engine: tier::EngineArgs,
    },
    /// Delete one remote segment through the engine: its metadata to delete started, its objects, its
    /// metadata to delete finished.
    Delete {
        /// The segment id, as `ls` prints it.
        #[arg(long, allow_hyphen_values = true)]
        segment: String,
        /// Delete it even though it is not the first segment of the remote log: that cuts a gap out of the
        /// remote log (the local copy of its offsets, if any, is then kept: local deletion stops at a gap).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        engine: tier::EngineArgs,
    },
    /// Remove what interrupted uploads left in the store, without any metadata: the objects of segments
    /// that have no manifest (never committed) and temporary upload files, each last written at least the
    /// safety age ago. Without --yes it lists them and deletes nothing.
    Sweep {
        #[command(flatten)]
        store: StoreArgs,
        /// Objects written more recently are left alone (an upload may still be writing them): 30s, 10m, 1h, 2d.
        #[arg(long, default_value = "1h", value_parser = audit::parse_age)]
        min_age: std::time::Duration,
        /// Delete them.
        #[arg(long)]
        yes: bool,
    },
    /// Key rotation: wrap every encrypted segment's data key under another key-encryption key, rewriting
    /// manifests only (one read and one write per segment). Segments already under it are skipped, so a
    /// rerun resumes. Afterwards the old key can leave the keyring (encryption.keys).
    Rewrap {
        #[command(flatten)]
        store: StoreArgs,
        /// The new key-encryption key id (listed in encryption.keys, with its encryption.key.<id>.file).
        #[arg(long)]
        key: String,
        /// Only this topic's segments.
        #[arg(long)]
        topic: Option<String>,
    },
    /// Print every record of a cluster's remote log metadata topic, one line each, as Kafka decodes it.
    Metadata {
        /// A Kafka broker (HOST:PORT).
        #[arg(long)]
        bootstrap_server: String,
        /// The metadata topic.
        #[arg(long, default_value = "__remote_log_metadata")]
        metadata_topic: String,
    },
    /// Make a new local metadata log from the store's manifests (each whole segment as copied), after the
    /// metadata log was lost or damaged: the engine commands then read the data it describes again.
    RebuildMetadata {
        #[command(flatten)]
        store: StoreArgs,
        /// The new metadata directory (must not exist).
        #[arg(long)]
        metadata_dir: PathBuf,
    },
    /// Read and check every segment in a store; with --dir, also compare with the local files both ways.
    Verify {
        #[command(flatten)]
        store: StoreArgs,
        /// A partition directory whose segments were copied: each closed segment must be in the store,
        /// byte for byte.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// The context a closed stdout carries, so `main` can end quietly.
const STDOUT_CLOSED: &str = "stdout";

fn stdout_error(e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Error::invalid("stdout was closed").with_context(STDOUT_CLOSED, "closed")
    } else {
        Error::from_io("stdout", e)
    }
}

/// Stdout, locked; a closed pipe is an error `main` turns into a quiet exit.
struct Out(std::io::StdoutLock<'static>);

impl Out {
    fn new() -> Self {
        Out(std::io::stdout().lock())
    }

    fn line(&mut self, args: fmt::Arguments<'_>) -> Result<()> {
        writeln!(self.0, "{args}").map_err(stdout_error)
    }
}

/// `out!(o, "...", args)`: one line to [`Out`], returning from the function on a write error.
macro_rules! out {
    ($o:expr, $($t:tt)*) => {
        $o.line(format_args!($($t)*))?
    };
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// `1.5 MiB`: bytes in binary units, one decimal from KiB up.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// A time in ms since the epoch as UTC, `2026-05-01T12:00:00Z` (`-` when unknown).
fn utc(ms: i64) -> String {
    if ms < 0 {
        return "-".to_string();
    }
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
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

/// What a copy of a partition did.
struct Copied {
    /// Segments copied now.
    copied: Vec<RemoteLogSegmentMetadata>,
    /// Segments already whole in the store, left alone.
    skipped: Vec<Manifest>,
    /// Segments whose earlier copy in the store is incomplete or unreadable (copied again), with why.
    redone: Vec<String>,
}

/// The whole copy in the store of a local closed segment, if there is one: a readable manifest of the same
/// partition, start and end offsets and log size, with every object present.
fn whole_copy<'a>(
    existing: &'a [(Manifest, Vec<&'static str>)],
    seg: &LocalSegment,
    log_len: u64,
) -> Option<&'a Manifest> {
    let end = seg.next_offset? - 1;
    existing.iter().find_map(|(m, missing)| {
        let md = &m.metadata;
        (missing.is_empty() && md.start_offset == seg.base_offset && md.end_offset == end && m.log_length == log_len)
            .then_some(m)
    })
}

/// Copies the closed segments of `partition`, skipping (when `skip_whole`) those already whole in the store.
fn copy_partition(store: &Store, partition: &LocalPartition, broker_id: i32, skip_whole: bool) -> Result<Copied> {
    let closed = partition.closed_segments();
    let mut existing = Vec::new();
    let mut redone = Vec::new();
    if skip_whole {
        for s in store.scan_segments(Some(&partition.topic_id_partition))? {
            match s.manifest {
                Ok(m) => existing.push((m, s.missing)),
                Err(e) => redone.push(format!("{} is unreadable ({})", s.manifest_key, e.full_message())),
            }
        }
    }
    let len_of =
        |s: &LocalSegment| std::fs::metadata(&s.log).map(|m| m.len()).map_err(|e| Error::from_io(s.log.display(), e));
    let mut todo = Vec::new();
    let mut skipped = Vec::new();
    for seg in closed {
        let len = len_of(seg)?;
        match whole_copy(&existing, seg, len) {
            Some(m) => skipped.push(m.clone()),
            None => {
                if let Some((m, missing)) = existing
                    .iter()
                    .find(|(m, missing)| m.metadata.start_offset == seg.base_offset && !missing.is_empty())
                {
                    redone.push(format!(
                        "segment {} at offset {} lacks {} in the store",
                        m.metadata.remote_log_segment_id.id,
                        seg.base_offset,
                        missing.join(", ")
                    ));
                }
                todo.push((seg, len));
            }
        }
    }
    let pb = progress(todo.iter().map(|(_, l)| l).sum(), "copy");
    let mut copied = Vec::new();
    for (seg, _) in todo {
        let md = partition.segment_metadata(seg, broker_id, now_ms())?;
        let data = partition.segment_data(seg)?;
        store.copy(&md, &data)?;
        pb.inc(md.segment_size_in_bytes as u64);
        copied.push(md);
    }
    pb.finish_and_clear();
    Ok(Copied { copied, skipped, redone })
}

fn read_all(store: &Store, md: &RemoteLogSegmentMetadata, start: i32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    store.fetch(md, start, None)?.read_to_end(&mut out).map_err(|e| Error::from_io("fetch stream", e))?;
    Ok(out)
}

/// Whether the segment `md` in the store holds exactly the bytes of the file `path`: both streamed side by
/// side, a buffer each, whatever the segment's size.
fn same_as_file(store: &Store, md: &RemoteLogSegmentMetadata, path: &Path) -> Result<bool> {
    const BUF: usize = 1 << 20;
    let io = |e| Error::from_io(path.display(), e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut remote = store.fetch(md, 0, None)?;
    let (mut a, mut b) = (vec![0u8; BUF], vec![0u8; BUF]);
    loop {
        let n = read_full(&mut remote, &mut a).map_err(|e| Error::from_io("fetch stream", e))?;
        let m = read_full(&mut file, &mut b).map_err(io)?;
        if n != m || a[..n] != b[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the reader ends; returns how many bytes it holds.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn mismatch(what: String) -> Error {
    Error::corrupt(format!("demo check failed: {what}"))
}

fn demo(
    o: &mut Out,
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
    let url = match store_url {
        Some(u) => u,
        None => {
            // The demo's own store: made here, since a filesystem store never creates its root.
            let root = tmp.path().join("store");
            std::fs::create_dir(&root).map_err(|e| Error::from_io(root.display(), e))?;
            format!("file://{}", root.display())
        }
    };
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
    out!(
        o,
        "generated {} segments ({} closed) of real Kafka v2 batches in {:.1}s: {}",
        partition.segments.len(),
        partition.closed_segments().len(),
        t.elapsed().as_secs_f64(),
        dir.display()
    );
    let store = Store::open(&url, &settings)?;

    let t = Instant::now();
    let copied = copy_partition(&store, &partition, 0, false)?.copied;
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
            let off = (b.base_offset() + b.last_offset()) / 2;
            let pos = store.position_of_offset(md, off)?;
            if pos as u64 != b.position() {
                return Err(mismatch(format!("offset {off}: position {pos}, expected {}", b.position())));
            }
            let from = read_all(&store, md, pos as i32)?;
            if from != local[pos as usize..] {
                return Err(mismatch(format!("segment {} from offset {off}", md.start_offset)));
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
    out!(o, "");
    out!(o, "{:<24} {:>14}", "store", url);
    out!(o, "{:<24} {:>14}", "segments copied", copied.len());
    out!(o, "{:<24} {:>14.1}", "log MiB", mib(total_bytes));
    out!(o, "{:<24} {:>14}", "chunks", chunks);
    out!(o, "{:<24} {:>14}", "copy requests (PUT)", copy_counts.0);
    out!(o, "{:<24} {:>14.2}", "PUT per segment", copy_counts.0 as f64 / copied.len() as f64);
    out!(o, "{:<24} {:>14}", "GET requests", c.get(Op::Get).requests);
    out!(o, "{:<24} {:>14}", "all requests", c.total_requests());
    out!(o, "{:<24} {:>14.1}", "copy MiB/s", mib(total_bytes) / copy_secs);
    out!(o, "{:<24} {:>14.1}", "fetch MiB/s", mib(fetched_bytes) / fetch_secs);
    out!(o, "{:<24} {:>14}", "byte-identical", "yes");
    if keep {
        let kept = tmp.keep();
        out!(o, "kept: {}", kept.display());
    }
    Ok(())
}

fn partition_file(seg: &LocalSegment, ext: &str) -> PathBuf {
    seg.log.with_extension(ext)
}

/// A segment id as `rsm ls` prints it (`id`), or as errors and Kafka print it
/// (`topicId:topic-partition:id`); the second form is checked against the segment found.
fn find_segment(store: &Store, given: &str) -> Result<Manifest> {
    let given = given.trim();
    let (owner, id) = match given.rsplit_once(':') {
        Some((owner, id)) => (Some(owner), id),
        None => (None, given),
    };
    let m = store.find_segment(&id.parse()?)?;
    if let Some(owner) = owner {
        let tp = &m.metadata.remote_log_segment_id.topic_id_partition;
        if owner != tp.to_string() {
            return Err(Error::invalid(format!("segment {id} belongs to {tp}, not to `{owner}` as given")));
        }
    }
    Ok(m)
}

/// Topic, topic id and partition of a manifest key (`{prefix}{topic}-{topicId}/{partition}/…`), without
/// reading it, so damaged segments are filtered like the others.
fn key_owner(key: &str, prefix: &str) -> Option<(String, String, i32)> {
    let k = rsm_core::storage::parse_segment_key(prefix, key)?;
    let tp = k.topic_id_partition;
    Some((tp.topic_partition.topic, tp.topic_id.to_string(), tp.topic_partition.partition))
}

/// A listed segment's manifest, or a line on stdout saying what is wrong with it (and `None`).
fn usable(o: &mut Out, s: ListedSegment, problems: &mut usize) -> Result<Option<Manifest>> {
    Ok(match s.manifest {
        Ok(m) if s.missing.is_empty() => Some(m),
        Ok(m) => {
            *problems += 1;
            out!(o, "INCOMPLETE\t{}\tmissing {}", m.metadata.remote_log_segment_id.id, s.missing.join(", "));
            None
        }
        Err(e) => {
            *problems += 1;
            out!(o, "DAMAGED\t{}\t{}", s.manifest_key, e.full_message());
            None
        }
    })
}

fn json_segment(s: &ListedSegment, prefix: &str) -> serde_json::Value {
    let owner = key_owner(&s.manifest_key, prefix);
    let mut v = serde_json::json!({
        "manifest_key": s.manifest_key,
        "topic": owner.as_ref().map(|o| o.0.clone()),
        "topic_id": owner.as_ref().map(|o| o.1.clone()),
        "partition": owner.as_ref().map(|o| o.2),
    });
    let fields = v.as_object_mut().expect("an object");
    match &s.manifest {
        Ok(m) => {
            let md = &m.metadata;
            let status = if s.missing.is_empty() { "ok" } else { "incomplete" };
            fields.insert("status".into(), status.into());
            fields.insert("segment_id".into(), md.remote_log_segment_id.id.to_string().into());
            fields.insert("start_offset".into(), md.start_offset.into());
            fields.insert("end_offset".into(), md.end_offset.into());
            fields.insert("bytes".into(), m.log_length.into());
            fields.insert("chunks".into(), m.chunks.len().into());
            fields.insert("max_timestamp_ms".into(), md.max_timestamp_ms.into());
            fields.insert("copied_at_ms".into(), md.event_timestamp_ms.into());
            fields.insert("copied_at".into(), utc(md.event_timestamp_ms).into());
            fields.insert("broker_id".into(), md.broker_id.into());
            fields.insert("missing".into(), s.missing.clone().into());
        }
        Err(e) => {
            fields.insert("status".into(), "damaged".into());
            fields.insert("error".into(), e.full_message().into());
        }
    }
    v
}

fn ls(o: &mut Out, store: &Store, topic: Option<&str>, partition: Option<i32>, json: bool) -> Result<()> {
    let prefix = store.storage().config().key_prefix.clone();
    let listed: Vec<ListedSegment> = store
        .scan_segments(None)?
        .into_iter()
        .filter(|s| {
            let owner = key_owner(&s.manifest_key, &prefix);
            topic.is_none_or(|t| owner.as_ref().is_some_and(|o| o.0 == t))
                && partition.is_none_or(|p| owner.as_ref().is_some_and(|o| o.2 == p))
        })
        .collect();
    let (mut segments, mut bytes, mut problems) = (0usize, 0u64, 0usize);
    let mut partitions = std::collections::BTreeSet::new();
    for s in &listed {
        match &s.manifest {
            Ok(m) if s.missing.is_empty() => {
                segments += 1;
                bytes += m.log_length;
                partitions.insert(m.metadata.remote_log_segment_id.topic_id_partition.to_string());
            }
            _ => problems += 1,
        }
    }
    if json {
        let leftover = store.orphans(None, std::time::Duration::ZERO)?;
        let doc = serde_json::json!({
            "segments": listed.iter().map(|s| json_segment(s, &prefix)).collect::<Vec<_>>(),
            "totals": { "segments": segments, "bytes": bytes, "partitions": partitions.len(), "problems": problems },
            "leftovers": {
                "uncommitted": leftover.uncommitted.iter().map(|(k, b)| serde_json::json!({"key": k, "bytes": b})).collect::<Vec<_>>(),
                "temporary": leftover.temporary.iter().map(|(k, b)| serde_json::json!({"key": k, "bytes": b})).collect::<Vec<_>>(),
            },
        });
        out!(o, "{}", serde_json::to_string_pretty(&doc).map_err(|e| Error::storage("JSON output", e))?);
    } else {
        out!(o, "partition\ttopic id\tsegment id\toffsets\tsize\tchunks\tmax timestamp\tcopied at");
        let mut ignored = 0;
        for s in listed {
            let Some(m) = usable(o, s, &mut ignored)? else { continue };
            let md = &m.metadata;
            let tp = &md.remote_log_segment_id.topic_id_partition;
            out!(
                o,
                "{}\t{}\t{}\t{}..={}\t{}\t{}\t{}\t{}",
                tp.topic_partition,
                tp.topic_id,
                md.remote_log_segment_id.id,
                md.start_offset,
                md.end_offset,
                human(m.log_length),
                m.chunks.len(),
                md.max_timestamp_ms,
                utc(md.event_timestamp_ms)
            );
        }
        out!(
            o,
            "total: {segments} segments, {} ({bytes} bytes) in {} partitions{}",
            human(bytes),
            partitions.len(),
            if problems > 0 { format!("; {problems} damaged or incomplete") } else { String::new() }
        );
        leftovers(o, store)?;
    }
    if problems > 0 {
        return Err(Error::corrupt(format!("{problems} segments are damaged or incomplete (listed above)")));
    }
    Ok(())
}

/// A line on what interrupted uploads left in the store (of any age), when there is anything.
fn leftovers(o: &mut Out, store: &Store) -> Result<()> {
    let found = store.orphans(None, std::time::Duration::ZERO)?;
    if !found.is_empty() {
        out!(
            o,
            "leftovers of interrupted uploads: {} objects of uncommitted segments, {} temporary files ({}); `rsm sweep` \
             removes those older than an hour",
            found.uncommitted.len(),
            found.temporary.len(),
            human(found.bytes())
        );
    }
    Ok(())
}

/// Where a fetch writes: stdout, or a file made under a temporary name and renamed when complete.
enum Sink {
    Stdout(std::io::StdoutLock<'static>),
    File { file: std::io::BufWriter<std::fs::File>, tmp: PathBuf, path: PathBuf },
}

impl Sink {
    fn open(output: Option<&Path>) -> Result<Self> {
        let Some(path) = output else { return Ok(Sink::Stdout(std::io::stdout().lock())) };
        let name = path.file_name().ok_or_else(|| Error::invalid(format!("-o {}: not a file name", path.display())))?;
        let tmp = path.with_file_name(format!(".{}.rsm-part-{}", name.to_string_lossy(), Uuid::random()));
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::from_io(path.display(), e))?;
        Ok(Sink::File { file: std::io::BufWriter::new(file), tmp, path: path.to_path_buf() })
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        match self {
            Sink::Stdout(s) => s.write_all(b).map_err(stdout_error),
            Sink::File { file, path, .. } => file.write_all(b).map_err(|e| Error::from_io(path.display(), e)),
        }
    }

    /// Flushes and, for a file, renames it into place; on `Err` the temporary file is removed.
    fn finish(self, result: Result<()>) -> Result<()> {
        match self {
            Sink::Stdout(mut s) => result.and_then(|_| s.flush().map_err(stdout_error)),
            Sink::File { file, tmp, path } => {
                let done = result.and_then(|_| {
                    let f = file.into_inner().map_err(|e| Error::from_io(path.display(), e.into_error()))?;
                    f.sync_all().map_err(|e| Error::from_io(path.display(), e))?;
                    std::fs::rename(&tmp, &path).map_err(|e| Error::from_io(path.display(), e))
                });
                if done.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                done
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn fetch(
    store: &Store,
    segment: &str,
    offset: Option<i64>,
    timestamp: Option<i64>,
    position: Option<i32>,
    bytes: Option<i64>,
    index: Option<String>,
    output: Option<&Path>,
) -> Result<()> {
    let bytes = match bytes {
        Some(n) if n < 1 => return Err(Error::invalid(format!("--bytes {n}: must be at least 1"))),
        Some(n) => Some(i32::try_from(n).unwrap_or(i32::MAX)),
        None => None,
    };
    let index = index.map(|t| t.parse::<IndexType>()).transpose()?;
    let m = find_segment(store, segment)?;
    let md = &m.metadata;
    let mut sink = Sink::open(output)?;
    let result = (|| {
        if let Some(t) = index {
            return sink.write(&store.fetch_index(md, t)?);
        }
        let start = match (offset, timestamp, position) {
            (Some(o), _, _) => store.position_of_offset(md, o)? as i32,
            (_, Some(ts), _) => store
                .position_of_timestamp(md, ts)?
                .ok_or_else(|| Error::not_found(format!("a record at or after timestamp {ts} in segment {segment}")))?
                as i32,
            (_, _, Some(p)) => p,
            _ => 0,
        };
        let end = bytes.map(|n| start.saturating_add(n - 1));
        let mut reader = store.fetch(md, start, end)?;
        while let Some(b) = reader.next_bytes()? {
            sink.write(&b)?;
        }
        Ok(())
    })();
    sink.finish(result)
}

fn copy(o: &mut Out, dir: &Path, store: StoreArgs, broker_id: i32, create: bool) -> Result<()> {
    let mut settings = settings(store.config.as_ref(), &store.set)?;
    if create {
        if rsm_facade::scheme_of(store.store.trim()) != "file" {
            return Err(Error::invalid(format!("--create is for file:// stores, not `{}`", store.store)));
        }
        settings.insert("fs.root.create".into(), "true".into());
    }
    let partition =
        LocalPartition::open(dir).map_err(|e| e.context(format!("partition directory {}", dir.display())))?;
    // One copy of a directory at a time: two would each store every segment (under ids of their own).
    let _lock = rsm_core::dir_lock::DirLock::exclusive(dir, "partition directory")?;
    let store = Store::open(&store.store, &settings)?;
    if partition.closed_segments().is_empty() {
        let active = &partition.segments[partition.segments.len() - 1];
        out!(
            o,
            "copied 0 segments: {} holds only its active segment {}, which is never copied (the broker copies a \
             segment once it rolls to the next)",
            dir.display(),
            active.log.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        );
        return Ok(());
    }
    let t = Instant::now();
    let done = copy_partition(&store, &partition, broker_id, true)?;
    for why in &done.redone {
        out!(o, "note: {why}; copying it again");
    }
    for m in &done.skipped {
        let md = &m.metadata;
        out!(
            o,
            "{}\t{}..={}\t{} bytes\talready in the store, skipped",
            md.remote_log_segment_id.id,
            md.start_offset,
            md.end_offset,
            m.log_length
        );
    }
    let bytes: u64 = done.copied.iter().map(|m| m.segment_size_in_bytes as u64).sum();
    for m in &done.copied {
        out!(
            o,
            "{}\t{}..={}\t{} bytes",
            m.remote_log_segment_id.id,
            m.start_offset,
            m.end_offset,
            m.segment_size_in_bytes
        );
    }
    let c = store.counts();
    out!(
        o,
        "copied {} segments, {:.1} MiB in {:.2}s; {} already in the store; {} requests ({} PUT)",
        done.copied.len(),
        mib(bytes),
        t.elapsed().as_secs_f64(),
        done.skipped.len(),
        c.total_requests(),
        c.get(Op::Put).requests
    );
    Ok(())
}

/// Whether a store segment is a copy of the local partition's: same topic and partition, and the same topic
/// id when the directory names one (`partition.metadata`).
fn same_partition(local: &LocalPartition, tp: &TopicIdPartition) -> bool {
    let l = &local.topic_id_partition;
    l.topic_partition == tp.topic_partition
        && (!local.dir.join("partition.metadata").exists() || l.topic_id == tp.topic_id)
}

fn verify(o: &mut Out, store: &Store, dir: Option<&Path>) -> Result<()> {
    let local = dir
        .map(|d| LocalPartition::open(d).map_err(|e| e.context(format!("partition directory {}", d.display()))))
        .transpose()?;
    let listed = store.scan_segments(None)?;
    let (mut bytes, mut good, mut problems) = (0, 0, 0);
    let (mut missing, mut unverified) = (0, 0);
    // Base offsets of the local partition's segments with a whole copy in the store (checked below).
    let mut found = std::collections::BTreeSet::new();
    for s in listed {
        let Some(m) = usable(o, s, &mut problems)? else { continue };
        let id = m.metadata.remote_log_segment_id.id;
        let reads_before = store.counts().get(Op::Get).requests;
        let checked = store.verify(&m.metadata).and_then(|report| {
            let reads = store.counts().get(Op::Get).requests - reads_before;
            if let Some(p) = &local
                && same_partition(p, &m.metadata.remote_log_segment_id.topic_id_partition)
                && let Some(seg) = p.segments.iter().find(|s| s.base_offset == m.metadata.start_offset)
            {
                found.insert(seg.base_offset);
                if !same_as_file(store, &m.metadata, &seg.log)? {
                    return Err(Error::corrupt(format!("segment {id} differs from {}", seg.log.display())));
                }
            }
            Ok((report, reads))
        });
        match checked {
            Ok((report, reads)) => {
                bytes += report.bytes;
                good += 1;
                out!(
                    o,
                    "ok\t{id}\t{} chunks checked ({} in {reads} reads)\t{} indexes",
                    report.chunks,
                    human(report.bytes),
                    report.indexes
                );
            }
            // A key or a setting this run lacks: the segment cannot be checked, which says nothing of its data.
            Err(e) if e.kind() == rsm_core::ErrorKind::Config => {
                unverified += 1;
                out!(o, "UNVERIFIED\t{id}\tcannot be checked: {}", e.full_message());
            }
            Err(e) => {
                problems += 1;
                out!(o, "FAILED\t{id}\t{}", e.full_message());
            }
        }
    }
    if let Some(p) = &local {
        for seg in p.closed_segments().iter().filter(|s| !found.contains(&s.base_offset)) {
            missing += 1;
            out!(
                o,
                "MISSING\t{} offset {}\t{} has no whole copy in the store",
                p.topic_id_partition.topic_partition,
                seg.base_offset,
                seg.log.display()
            );
        }
    }
    out!(
        o,
        "verified {good} segments, {}; {problems} damaged or incomplete, {missing} missing, {unverified} cannot be \
         checked",
        human(bytes)
    );
    leftovers(o, store)?;
    if problems > 0 {
        return Err(Error::corrupt(format!("{problems} segments failed verification (listed above)")));
    }
    if missing > 0 {
        return Err(Error::not_found(format!(
            "{missing} closed local segments have no whole copy in the store (listed above)"
        )));
    }
    if unverified > 0 {
        return Err(Error::config(
            "encryption.keys",
            format!("{unverified} segments cannot be checked without a key or setting this run lacks (listed above)"),
        ));
    }
    Ok(())
}

fn audit_report(o: &mut Out, report: &audit::Report, json: bool) -> Result<()> {
    if json {
        out!(o, "{}", serde_json::to_string_pretty(&audit::to_json(report)).expect("JSON of plain values"));
        return audit::outcome(report);
    }
    out!(o, "PARTITION\tTOPIC ID\tCOPIED\tLOST\tORPHANS\tORPHAN BYTES\tSTUCK\tGAPS\tUNVERIFIED\tUNREFERENCED");
    for ((tp, topic_id), p) in &report.partitions {
        let bytes: u64 = p.orphans.iter().map(|x| x.1).sum();
        out!(
            o,
            "{tp}\t{topic_id}\t{}\t{}\t{}\t{bytes}\t{}\t{}\t{}\t{}",
            p.copied,
            p.lost.len(),
            p.orphans.len(),
            p.stuck.len(),
            p.gaps.len(),
            p.unverified.len(),
            p.unreferenced.len()
        );
    }
    for ((tp, _), p) in &report.partitions {
        for (id, start, why) in &p.lost {
            out!(o, "LOST\t{tp}\t{id}\toffset {start}\t{why}");
        }
        for (first, last) in &p.gaps {
            out!(o, "GAP\t{tp}\toffsets {first}..={last}\tno copied segment holds them");
        }
        for (id, start, why) in &p.unverified {
            out!(o, "UNVERIFIED\t{tp}\t{id}\toffset {start}\tcannot be checked: {why}");
        }
        for (id, start, bytes) in &p.unreferenced {
            out!(o, "UNREFERENCED\t{tp}\t{id}\toffset {start}\t{bytes} bytes\ta whole segment no metadata names: kept");
        }
        for (key, bytes, old) in &p.orphans {
            let young = if *old { "" } else { "\t(younger than the safety age: kept)" };
            out!(o, "ORPHAN\t{tp}\t{key}\t{bytes} bytes{young}");
        }
        for (id, state, since) in &p.stuck {
            out!(o, "STUCK\t{tp}\t{id}\t{state} since {}", utc(*since));
        }
    }
    for (key, bytes) in &report.left_alone {
        out!(o, "LEFT ALONE\t{key}\t{bytes} bytes\tnot named like a segment's object");
    }
    for key in &report.deleted {
        out!(o, "DELETED\t{key}");
    }
    let orphans: usize = report.partitions.values().map(|p| p.orphans.len()).sum();
    let stuck: usize = report.partitions.values().map(|p| p.stuck.len()).sum();
    out!(
        o,
        "audited {} partitions: {} lost, {orphans} orphans, {stuck} stuck, {} deleted, {} gaps, {} unverified, {} \
         unreferenced segments, {} objects left alone",
        report.partitions.len(),
        report.lost(),
        report.deleted.len(),
        report.partitions.values().map(|p| p.gaps.len()).sum::<usize>(),
        report.partitions.values().map(|p| p.unverified.len()).sum::<usize>(),
        report.partitions.values().map(|p| p.unreferenced.len()).sum::<usize>(),
        report.left_alone.len(),
    );
    audit::outcome(report)
}

fn run(cli: Cli) -> Result<()> {
    let mut o = Out::new();
    match cli.command {
        Command::Demo { store, config, set, segments, segment_mib, keep } => {
            demo(&mut o, store, settings(config.as_ref(), &set)?, segments, segment_mib, keep)
        }
        Command::Copy { dir, store, broker_id, create } => copy(&mut o, &dir, store, broker_id, create),
        Command::Ls { store, topic, partition, json } => ls(&mut o, &store.open()?, topic.as_deref(), partition, json),
        Command::Fetch { store, segment, offset, timestamp, position, bytes, index, output } => {
            drop(o);
            fetch(&store.open()?, &segment, offset, timestamp, position, bytes, index, output.as_deref())
        }
        Command::Verify { store, dir } => verify(&mut o, &store.open()?, dir.as_deref()),
        Command::Tier { dirs, engine, watch, dry_run, yes } => {
            if dry_run || !(yes || engine.retention_explicit()?) {
                let refused = tier_plan(&mut o, &dirs, &engine, dry_run)?;
                if dry_run {
                    return Ok(());
                }
                if refused > 0 {
                    return Err(Error::invalid(format!(
                        "this run would copy {refused} segments and then delete them by retention in the same run \
                         (retention.ms not set: Kafka's default keeps 7 days, and their records are older), so \
                         their data would exist nowhere afterwards (the plan is above). Set retention.ms \
                         explicitly (--set retention.ms=-1 keeps everything) or add --yes; nothing was changed"
                    )));
                }
            }
            tier_command(&mut o, &dirs, &engine, watch)
        }
        Command::Offsets { dirs, engine } => {
            let e = engine.open_read_only()?;
            let rt = rsm_facade::runtime();
            let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
            out!(o, "{:<40} {:>12} {:>12} {:>12} {:>12} {:>12}  gaps", "partition", "Lx", "Ly", "Lz", "Rx", "Ry");
            let mut gaps = 0;
            for tp in e.add(&dirs)? {
                let x = rt.block_on(e.manager.offsets(&tp))?;
                gaps += x.remote_gaps.len();
                out!(
                    o,
                    "{:<40} {:>12} {:>12} {:>12} {:>12} {:>12}  {}",
                    tp.topic_partition.to_string(),
                    x.local_log_start,
                    x.last_stable,
                    x.local_log_end,
                    opt(x.remote_log_start),
                    opt(x.remote_log_end),
                    tier::gaps_text(&x.remote_gaps)
                );
            }
            if gaps > 0 {
                out!(
                    o,
                    "{gaps} gaps in the remote log: no copied segment holds those offsets (local segments from the \
                     first gap on are kept)"
                );
            }
            e.close()
        }
        Command::Read { dir, engine, offset, timestamp, max_records, max_bytes, timeout_ms, json } => {
            let e = engine.open_read_only()?;
            let tp = e.add(std::slice::from_ref(&dir))?.remove(0);
            let timeout = std::time::Duration::from_millis(timeout_ms);
            let got = rsm_facade::runtime().block_on(tier::read(
                &e.manager,
                &tp,
                offset,
                timestamp,
                max_records,
                max_bytes,
                timeout,
            ));
            e.close()?;
            print_records(&mut o, &tp, &got?, json)
        }
        Command::Expire { dirs, engine } => {
            let e = engine.open(&dirs)?;
            let rt = rsm_facade::runtime();
            for (tp, dir) in e.add(&dirs)?.iter().zip(&dirs) {
                let x = rt.block_on(e.manager.expire_partition(tp))?;
                out!(
                    o,
                    "{tp} ({}): expired {} remote, deleted {} local, retried {} deletions, removed {} unfinished copies, {} failed deletions",
                    dir.display(),
                    x.expired.len(),
                    x.local_deleted.len(),
                    x.retried.len(),
                    x.abandoned_copies.len(),
                    x.failed
                );
            }
            e.close()
        }
        Command::FailedDeletions { action, engine } => {
            let e = if action == "list" { engine.open_read_only()? } else { engine.open(&[])? };
            let rt = rsm_facade::runtime();
            let mut failed = 0;
            if action == "list" {
                let list = rt.block_on(e.manager.failed_deletions().list())?;
                for md in &list {
                    out!(
                        o,
                        "{} {} offsets {}..={}",
                        md.remote_log_segment_id.topic_id_partition,
                        md.remote_log_segment_id.id,
                        md.start_offset,
                        md.end_offset
                    );
                }
                out!(o, "{} failed deletions", list.len());
            } else {
                let results = rt.block_on(e.manager.retry_failed_deletions())?;
                for (md, r) in &results {
                    match r {
                        Ok(()) => out!(
                            o,
                            "deleted {} {}",
                            md.remote_log_segment_id.topic_id_partition,
                            md.remote_log_segment_id.id
                        ),
                        Err(err) => {
                            failed += 1;
                            out!(
                                o,
                                "FAILED {} {}: {}",
                                md.remote_log_segment_id.topic_id_partition,
                                md.remote_log_segment_id.id,
                                err.full_message()
                            )
                        }
                    }
                }
                out!(o, "{} retried, {} deleted, {failed} failed again", results.len(), results.len() - failed);
            }
            e.close()?;
            match failed {
                0 => Ok(()),
                n => Err(Error::retriable(format!("{n} deletions failed again"), "see above")),
            }
        }
        Command::Delete { segment, force, engine } => {
            let id = tier::parse_segment_id(&segment)?;
            let e = engine.open(&[])?;
            let manifest = e.store().find_segment(&id)?;
            let tp = manifest.metadata.remote_log_segment_id.topic_id_partition.clone();
            let rt = rsm_facade::runtime();
            let cut = rt.block_on(e.manager.deletion_cut(&tp, &id))?;
            if let Some(gap) = cut.filter(|_| !force) {
                e.close()?;
                return Err(Error::invalid(format!(
                    "segment {id} (offsets {}..={}) is not the first segment of the remote log of {tp}: deleting it \
                     cuts offsets {}..={} out of the middle of the remote log, and consumers of them would find \
                     nothing (their local copy, if any, would be kept). Add --force to delete it anyway; nothing was \
                     deleted",
                    gap.start, gap.end, gap.start, gap.end
                )));
            }
            let md = rt.block_on(e.manager.delete_segment(&tp, &id))?;
            out!(o, "deleted segment {} of {tp} (offsets {}..={})", id, md.start_offset, md.end_offset);
            if cut.is_some() {
                out!(o, "the remote log of {tp} has a gap at offsets {}..={} now", md.start_offset, md.end_offset);
            }
            e.close()
        }
        Command::RebuildMetadata { store, metadata_dir } => {
            let store = store.open()?;
            let mut whole = Vec::new();
            for s in store.scan_segments(None)? {
                match s.manifest {
                    Ok(m) if s.missing.is_empty() => whole.push(m.metadata),
                    Ok(m) => {
                        out!(o, "SKIPPED\t{}\tmissing {}", m.metadata.remote_log_segment_id.id, s.missing.join(", "))
                    }
                    Err(e) => out!(o, "SKIPPED\t{}\t{}", s.manifest_key, e.full_message()),
                }
            }
            let n = rsm_facade::runtime()
                .block_on(rsm_metadata::local::LocalMetadataManager::rebuild(&metadata_dir, &whole))?;
            out!(o, "rebuilt {} with {n} segments from the store's manifests", metadata_dir.display());
            Ok(())
        }
        Command::Sweep { store, min_age, yes } => {
            let store = store.open()?;
            let found = store.orphans(None, min_age)?;
            let verb = if yes { "DELETE" } else { "WOULD DELETE" };
            for (key, bytes) in &found.uncommitted {
                out!(o, "{verb}\t{key}\t{bytes} bytes\tan object of a segment with no manifest (never committed)");
            }
            for (key, bytes) in &found.temporary {
                out!(o, "{verb}\t{key}\t{bytes} bytes\ta temporary file of an interrupted upload");
            }
            let n = found.uncommitted.len() + found.temporary.len();
            if !yes {
                out!(
                    o,
                    "{n} leftovers ({}) older than the safety age; add --yes to delete them (nothing was deleted)",
                    human(found.bytes())
                );
                return Ok(());
            }
            store.delete_objects(&found.keys())?;
            out!(o, "deleted {n} leftovers ({})", human(found.bytes()));
            Ok(())
        }
        Command::Rewrap { store, key, topic } => {
            let store = store.open()?;
            // Each segment's line as it is done (stdout is line-buffered), so an interrupted run shows how far
            // it got.
            let r = rewrap::rewrap(&store, &key, topic.as_deref(), |k, i, n| {
                o.line(format_args!("rewrapped {k} ({i}/{n} looked at)"))
            })?;
            for f in &r.failed {
                out!(o, "FAILED {f}");
            }
            out!(
                o,
                "rewrapped {} segments under {key}; {} were under it already, {} are not encrypted, {} failed{}",
                r.rewrapped,
                r.already,
                r.plain,
                r.failed.len(),
                match r.removed_temporary {
                    0 => String::new(),
                    n => format!("; removed {n} temporary manifests an interrupted rewrap left"),
                }
            );
            rewrap::failures(&r)
        }
        Command::Metadata { bootstrap_server, metadata_topic } => {
            let records = audit::kafka_records(&bootstrap_server, &metadata_topic)?;
            for r in &records {
                out!(o, "{}", audit::describe(r));
            }
            match records.iter().filter(|r| r.event.is_err()).count() {
                0 => Ok(()),
                n => Err(Error::corrupt(format!("{n} records of {metadata_topic} do not decode (listed above)"))),
            }
        }
        Command::Audit {
            bootstrap_server,
            metadata_topic,
            metadata_dir,
            store,
            topic,
            quick,
            min_age,
            delete_orphans,
            yes,
            json,
        } => {
            if delete_orphans && !yes {
                return Err(Error::invalid(
                    "--delete-orphans deletes objects from the store: add --yes to confirm (nothing was deleted)",
                ));
            }
            let segments = match (&metadata_dir, &bootstrap_server) {
                (Some(dir), _) => {
                    rsm_metadata::local::LocalMetadataManager::open_existing_read_only(dir)?.all_segments()?
                }
                (None, Some(bootstrap)) => audit::kafka_segments(bootstrap, &metadata_topic)?,
                (None, None) => unreachable!("clap requires one"),
            };
            let opts = audit::AuditOptions { topic, quick, min_age, delete_orphans };
            audit_report(&mut o, &audit::audit(&store.open()?, &segments, &opts)?, json)
        }
    }
}

/// Bytes as text for a table: UTF-8 with control characters escaped, cut at `max` characters.
fn shown(b: Option<&[u8]>, max: usize) -> String {
    let Some(b) = b else { return "null".to_string() };
    let text: String = String::from_utf8_lossy(b).chars().flat_map(char::escape_default).collect();
    if text.chars().count() > max { format!("{}…", text.chars().take(max).collect::<String>()) } else { text }
}

/// Bytes for JSON: a string when they are UTF-8, else `{"hex": "…"}`; null stays null.
fn json_bytes(b: Option<&[u8]>) -> serde_json::Value {
    match b {
        None => serde_json::Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => serde_json::Value::String(s.to_string()),
            Err(_) => serde_json::json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() }),
        },
    }
}

fn print_records(o: &mut Out, tp: &TopicIdPartition, got: &tier::ReadOut, json: bool) -> Result<()> {
    if json {
        let records: Vec<_> = got
            .records
            .iter()
            .map(|r| {
                serde_json::json!({
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": json_bytes(r.key.as_deref()),
                    "value": json_bytes(r.value.as_deref()),
                    "headers": r.headers.iter().map(|(k, v)| serde_json::json!({"key": k, "value": json_bytes(v.as_deref())})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let undecoded: Vec<_> =
            got.undecoded.iter().map(|(off, why)| serde_json::json!({"base_offset": off, "why": why})).collect();
        let doc =
            serde_json::json!({ "partition": tp.to_string(), "records": records, "undecoded_batches": undecoded });
        out!(o, "{doc}");
        return Ok(());
    }
    out!(o, "{:>12}  {:<24}  {:<24}  {:<40}  headers", "offset", "timestamp", "key", "value");
    for r in &got.records {
        let headers: Vec<String> = r.headers.iter().map(|(k, v)| format!("{k}={}", shown(v.as_deref(), 20))).collect();
        out!(
            o,
            "{:>12}  {:<24}  {:<24}  {:<40}  {}",
            r.offset,
            utc(r.timestamp),
            shown(r.key.as_deref(), 24),
            shown(r.value.as_deref(), 40),
            headers.join(",")
        );
    }
    for (off, why) in &got.undecoded {
        out!(o, "{off:>12}  ({why})");
    }
    out!(o, "{} records of {tp}", got.records.len());
    Ok(())
}

/// `rsm tier`: one run of every partition, or the scheduler until the process is stopped.
/// Prints what a run over `dirs` would do (all of it with `all`, else only for partitions where it would
/// copy segments and expire them in the same run); returns how many such segments there are. Changes
/// nothing.
fn tier_plan(o: &mut Out, dirs: &[PathBuf], args: &tier::EngineArgs, all: bool) -> Result<usize> {
    let e = args.open_plan()?;
    let rt = rsm_facade::runtime();
    let mut risky = 0;
    for (tp, dir) in e.add(dirs)?.iter().zip(dirs) {
        let plan = rt.block_on(e.manager.plan_partition(tp))?;
        let n = plan.copied_then_expired().len();
        risky += n;
        if all || n > 0 {
            for line in tier::plan_lines(tp, dir, &plan) {
                out!(o, "{line}");
            }
        }
    }
    e.close()?;
    Ok(risky)
}

fn tier_command(o: &mut Out, dirs: &[PathBuf], args: &tier::EngineArgs, watch: bool) -> Result<()> {
    let e = args.open(dirs)?;
    let tps = e.add(dirs)?;
    let rt = rsm_facade::runtime();
    out!(o, "tiering {} partitions to {} (metadata in {})", tps.len(), args.store, e.metadata_dir.display());
    if !watch {
        let mut failures = 0;
        let pb = ProgressBar::new_spinner();
        pb.set_style(ProgressStyle::with_template("{spinner} {msg} {bytes} {bytes_per_sec}").expect("valid template"));
        pb.set_message("copying");
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
        let bar = pb.clone();
        e.manager.on_segment_copied(Arc::new(move |_, md| bar.inc(md.segment_size_in_bytes.max(0) as u64)));
        let results = rt.block_on(e.manager.run_all());
        pb.finish_and_clear();
        let t = e.manager.totals();
        let mut permanent = 0;
        for (tp, r) in &results {
            let dir =
                e.manager.partitions().into_iter().find(|(t, _, _)| t == tp).map(|(_, d, _)| d).unwrap_or_default();
            match r {
                Ok(r) => out!(o, "{}", tier::summary(tp, &dir, r)),
                Err(err) => {
                    failures += 1;
                    if !err.is_transient() {
                        permanent += 1;
                    }
                    let copied = t.iter().find(|(p, _)| p == tp).map_or(0, |(_, t)| t.copied);
                    out!(
                        o,
                        "{tp} ({}): FAILED after copying {copied} segments (recorded; a rerun does not copy them again): {}",
                        dir.display(),
                        err.full_message()
                    );
                }
            }
        }
        out!(
            o,
            "total: copied {} segments ({}), deleted {} remote and {} local, {failures} partitions failed",
            t.iter().map(|(_, t)| t.copied).sum::<u64>(),
            human(t.iter().map(|(_, t)| t.copied_bytes).sum()),
            t.iter().map(|(_, t)| t.remote_deleted).sum::<u64>(),
            t.iter().map(|(_, t)| t.local_deleted).sum::<u64>(),
        );
        e.close()?;
        return match (failures, permanent) {
            (0, _) => Ok(()),
            (n, 0) => Err(Error::retriable(
                format!("{n} of {} partitions failed (a rerun retries them)", results.len()),
                "see above",
            )),
            // A damaged local segment, a refused setting: a rerun fails the same way until it is mended.
            (n, p) => Err(Error::invalid(format!(
                "{n} of {} partitions failed, {p} of them for a reason a rerun does not mend (listed above)",
                results.len()
            ))),
        };
    }
    e.manager.start(rt.handle())?;
    let mut last: Vec<(TopicIdPartition, Totals)> = Vec::new();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let now = e.manager.totals();
        for (tp, t) in &now {
            let before = last.iter().find(|(p, _)| p == tp).map(|(_, t)| t.clone()).unwrap_or_default();
            // A line when a run changed something (or failed), not for every quiet run.
            let quiet = Totals { runs: before.runs, failed_runs: before.failed_runs, ..t.clone() } == before;
            if t.runs != before.runs && !quiet {
                match &t.last_error {
                    Some(err) => out!(o, "{tp}: run {} FAILED: {err}", t.runs),
                    None => out!(
                        o,
                        "{tp}: run {}: copied {} segments in all ({}), deleted {} remote and {} local",
                        t.runs,
                        t.copied,
                        human(t.copied_bytes),
                        t.remote_deleted,
                        t.local_deleted
                    ),
                }
            }
        }
        last = now;
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped early (`rsm ls | head`): nothing more to say.
        Err(e) if e.context_value(STDOUT_CLOSED).is_some() => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "rsm: {}", e.full_message());
            match e.context_value(audit::EXIT_CODE).and_then(|c| c.parse::<u8>().ok()) {
                Some(code) => ExitCode::from(code),
                None => ExitCode::FAILURE,
            }
        }
    }
}
