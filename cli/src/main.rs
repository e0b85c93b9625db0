//! `rsm`: tier a Kafka partition directory to a store, list, read and verify what is there, and run the
//! demo. A thin face over `rsm-facade`.
//!
//! Output goes to stdout through [`output::Out`], so a reader that stops early (`rsm ls | head`) ends the
//! command quietly with success rather than a panic; errors go to stderr, one line, and exit 1.
//!
//! This file holds the arguments and the dispatch; each command is a module of [`cmd`].

mod cmd;
mod exit;
mod metrics;
mod output;
mod settings;

use clap::{Parser, Subcommand};
use cmd::audit;
use cmd::engine::EngineArgs;
use exit::CmdResult;
use output::Out;
use settings::{StoreArgs, settings};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// loss), objects no metadata references (orphans), incomplete multipart uploads (a crash mid-upload:
    /// invisible, billed), segments stuck in copy or delete. Exits 1 on data loss.
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
        /// Safety age: younger objects are never deleted, younger uploads never aborted, and younger copies
        /// or deletes are not stuck (0s, 90s, 10m, 1h, 7d).
        #[arg(long, default_value = "1h", value_parser = audit::parse_age)]
        min_age: std::time::Duration,
        /// Delete the orphans older than the safety age, and abort the incomplete multipart uploads to
        /// segments' keys last written before it (needs --yes).
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
        engine: EngineArgs,
        /// Keep running: each partition again every remote.log.manager.task.interval.ms (default 30 s),
        /// following new segments, until the process is stopped.
        #[arg(long)]
        watch: bool,
        /// Print, per partition, what a run would copy, delete remotely and delete locally (offsets, bytes
        /// and the setting that makes each due), and change nothing.
        #[arg(long, conflicts_with = "watch")]
        dry_run: bool,
        /// With --watch: serve the requests and bytes of each topic (and with the cost.* prices set, what
        /// the requests cost) in Prometheus's text format on GET /metrics at HOST:PORT (port 0: a free
        /// one, printed at the start).
        #[arg(long, value_name = "HOST:PORT", requires = "watch")]
        metrics_addr: Option<String>,
        /// Run even when it would delete data by Kafka's default retention time of 7 days (retention.ms
        /// not set): copy segments and delete them in the same run (a first run over old records), or
        /// delete remote or local segments older than the default. Without it, or retention.ms set
        /// explicitly, such a run prints its plan and stops, changing nothing.
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
        engine: EngineArgs,
    },
    /// Apply remote and local retention to partition directories now, without copying.
    Expire {
        /// Partition directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[command(flatten)]
        engine: EngineArgs,
        /// Run even when it would delete remote or local segments by Kafka's default retention time of
        /// 7 days (retention.ms not set); without it, or retention.ms set explicitly, such a run prints its
        /// plan and stops, changing nothing.
        #[arg(long)]
        yes: bool,
    },
    /// Print the records served from remote storage at an offset or from a timestamp (offset, timestamp,
    /// key, value, headers), through the engine's reader pool.
    Read {
        /// The partition directory (it names the partition; its segments may be gone locally).
        dir: PathBuf,
        #[command(flatten)]
        engine: EngineArgs,
        /// The first offset.
        #[arg(long, allow_hyphen_values = true, required_unless_present = "timestamp", conflicts_with = "timestamp")]
        offset: Option<i64>,
        /// The first record at or after this timestamp (ms since the epoch).
        #[arg(long, allow_hyphen_values = true)]
        timestamp: Option<i64>,
        /// read_uncommitted (every record, the consumer's default) or read_committed (records of aborted
        /// transactions dropped).
        #[arg(long, default_value = "read_uncommitted")]
        isolation: rsm_core::format::records::isolation::IsolationLevel,
        /// The most records to print, all reads together [default: 20, or no bound with --follow].
        #[arg(long)]
        max_records: Option<usize>,
        /// Batch bytes per read from the store (at least one whole batch is read).
        #[arg(long, default_value_t = 1 << 20)]
        max_bytes: u32,
        /// The most bytes one batch may decompress to; a larger batch is an error naming it.
        #[arg(long, default_value_t = rsm_core::format::records::DEFAULT_MAX_BATCH_BYTES)]
        max_batch_bytes: usize,
        /// How long one read may take, retries included (ms).
        #[arg(long, default_value_t = 30_000)]
        timeout_ms: u64,
        /// One JSON object a line (offset, timestamp, timestamp_type, key, value, headers; bytes that are
        /// not UTF-8 in base64, with a `_base64` flag saying so) instead of the table.
        #[arg(long)]
        json: bool,
        /// Keep reading: after the end of the remote log, wait --follow-interval-ms and print what was
        /// tiered since, until stopped (or --max-records).
        #[arg(long)]
        follow: bool,
        /// How long --follow waits between looks (ms).
        #[arg(long, default_value_t = 1_000, requires = "follow")]
        follow_interval_ms: u64,
    },
    /// The deletions that failed and wait for a retry (SR-35): list them, or retry them now.
    FailedDeletions {
        /// `list` or `retry`.
        #[arg(value_parser = ["list", "retry"])]
        action: String,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Delete one remote segment through the engine: its metadata to delete started, its objects, its
    /// metadata to delete finished.
    Delete {
        /// The segment id, as `ls` prints it.
        #[arg(long, allow_hyphen_values = true)]
        segment: String,
        /// Delete it even though some of its offsets would then be held nowhere (no other copied segment
        /// nor the local log holds them, and offsets below them stay): that cuts a gap in the log (the
        /// local copy of offsets above it, if any, is then kept: local deletion stops at a gap).
        #[arg(long)]
        force: bool,
        /// The partition's directory, so that offsets its local log still holds count as held (without it,
        /// deleting the remote log's last segment needs --force).
        #[arg(long)]
        dir: Option<PathBuf>,
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// Remove what interrupted uploads left in the store, without any metadata: the objects of segments
    /// that have no manifest (never committed) and temporary upload files are deleted, and incomplete
    /// multipart uploads to segments' keys (S3) aborted, each last written at least the safety age ago.
    /// Without --yes it lists them and changes nothing.
    Sweep {
        #[command(flatten)]
        store: StoreArgs,
        /// Objects and uploads written more recently are left alone (an upload may still be writing them):
        /// 30s, 10m, 1h, 2d.
        #[arg(long, default_value = "1h", value_parser = audit::parse_age)]
        min_age: std::time::Duration,
        /// Delete them (and abort the uploads).
        #[arg(long)]
        yes: bool,
        /// A metadata log (`rsm tier`'s): also list the whole segments it does not name (a copy that gave up
        /// after its manifest landed, or metadata that lost them). They are kept: a sweep never deletes a
        /// committed segment.
        #[arg(long)]
        metadata_dir: Option<std::path::PathBuf>,
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

fn run(cli: Cli) -> CmdResult {
    let mut stdout = Out::new();
    let o = &mut stdout;
    match cli.command {
        Command::Demo { store, config, set, segments, segment_mib, keep } => {
            cmd::demo::run(o, store, settings(config.as_ref(), &set)?, segments, segment_mib, keep)
        }
        Command::Copy { dir, store, broker_id, create } => cmd::copy::run(o, &dir, store, broker_id, create),
        Command::Ls { store, topic, partition, json } => {
            cmd::ls::run(o, &store.open()?, topic.as_deref(), partition, json)
        }
        Command::Fetch { store, segment, offset, timestamp, position, bytes, index, output } => {
            drop(stdout);
            cmd::fetch::run(&store.open()?, &segment, offset, timestamp, position, bytes, index, output.as_deref())
        }
        Command::Verify { store, dir } => cmd::verify::run(o, &store.open()?, dir.as_deref()),
        Command::Tier { dirs, engine, watch, dry_run, yes, metrics_addr } => {
            cmd::tier::run(o, &dirs, &engine, watch, dry_run, yes, metrics_addr.as_deref())
        }
        Command::Offsets { dirs, engine } => cmd::offsets::run(o, &dirs, &engine),
        Command::Read {
            dir,
            engine,
            offset,
            timestamp,
            isolation,
            max_records,
            max_bytes,
            max_batch_bytes,
            timeout_ms,
            json,
            follow,
            follow_interval_ms,
        } => {
            let args = cmd::read::ReadArgs {
                offset,
                timestamp,
                isolation,
                max_records: max_records.or((!follow).then_some(20)),
                max_bytes,
                limits: rsm_core::format::records::DecodeLimits { max_batch_bytes },
                timeout: std::time::Duration::from_millis(timeout_ms),
                json,
                follow: follow.then(|| std::time::Duration::from_millis(follow_interval_ms)),
            };
            cmd::read::run(o, &dir, &engine, &args)
        }
        Command::Expire { dirs, engine, yes } => cmd::expire::run(o, &dirs, &engine, yes),
        Command::FailedDeletions { action, engine } => cmd::failed_deletions::run(o, &action, &engine),
        Command::Delete { segment, force, dir, engine } => {
            cmd::delete::run(o, &segment, force, dir.as_deref(), &engine)
        }
        Command::RebuildMetadata { store, metadata_dir } => cmd::rebuild_metadata::run(o, &store, &metadata_dir),
        Command::Sweep { store, min_age, yes, metadata_dir } => {
            cmd::sweep::run(o, &store, min_age, yes, metadata_dir.as_deref())
        }
        Command::Rewrap { store, key, topic } => cmd::rewrap::run(o, &store, &key, topic.as_deref()),
        Command::Metadata { bootstrap_server, metadata_topic } => {
            cmd::metadata::run(o, &cmd::metadata::MetadataArgs { bootstrap_server, metadata_topic })
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
            let args = audit::AuditArgs {
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
            };
            audit::run(o, args)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(),
    }
}
