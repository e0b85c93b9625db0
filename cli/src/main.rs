//! `rsm`: tier a Kafka partition directory to a store, list, read and verify what is there, and run the
//! demo. A thin face over `rsm-facade`.
//!
//! Output goes to stdout through [`output::Out`], so a reader that stops early (`rsm ls | head`) ends the
//! command quietly with success rather than a panic; errors go to stderr, one line, and exit 1.
//!
//! This file holds the list of commands and the dispatch; each command is a module of [`cmd`], with its
//! arguments.

mod cmd;
mod exit;
mod metrics;
mod output;
mod settings;

use clap::{Parser, Subcommand};
use cmd::{
    audit, copy, delete, demo, expire, failed_deletions, fetch, ls, metadata, migrate, offsets, read, rebuild_metadata,
    rewrap, sweep, tier, verify,
};
use exit::CmdResult;
use output::Out;
use settings::settings;
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
    Demo(demo::DemoArgs),
    /// Copy the closed segments of a partition directory to a store; segments already whole in the store
    /// are skipped, so a rerun copies only what is missing.
    Copy(copy::CopyArgs),
    /// List the segments in a store: topic id, offsets, sizes, copy time, and totals.
    Ls(ls::LsArgs),
    /// Write a segment's bytes (or one of its indexes) to stdout or a file.
    Fetch(fetch::FetchArgs),
    /// Compare a cluster's remote log metadata with its store: copied segments missing or damaged (data
    /// loss), objects no metadata references (orphans), incomplete multipart uploads (a crash mid-upload:
    /// invisible, billed), segments stuck in copy or delete. Exits 1 on data loss.
    Audit(audit::AuditArgs),
    /// Run the tiering engine over partition directories: copy the segments that are due, apply remote
    /// and local retention, keep the partition index files. Once, or with --watch until stopped. Runs
    /// again copy nothing twice; a stop at any moment (kill -9 included) loses nothing.
    Tier(tier::TierArgs),
    /// Print each partition's offsets: Lx (local log start), Ly (last stable), Lz (local log end),
    /// Rx and Ry (remote log start and end, `-` when nothing is remote).
    Offsets(offsets::OffsetsArgs),
    /// Apply remote and local retention to partition directories now, without copying.
    Expire(expire::ExpireArgs),
    /// Print the records served from remote storage at an offset or from a timestamp (offset, timestamp,
    /// key, value, headers), through the engine's reader pool.
    Read(read::ReadArgs),
    /// The deletions that failed and wait for a retry (SR-35): list them, or retry them now.
    FailedDeletions(failed_deletions::FailedDeletionsArgs),
    /// Delete one remote segment through the engine: its metadata to delete started, its objects, its
    /// metadata to delete finished.
    Delete(delete::DeleteArgs),
    /// Remove what interrupted uploads left in the store, without any metadata: the objects of segments
    /// that have no manifest (never committed) and temporary upload files are deleted, and incomplete
    /// multipart uploads to segments' keys (S3) aborted, each last written at least the safety age ago.
    /// Without --yes it lists them and changes nothing.
    Sweep(sweep::SweepArgs),
    /// Key rotation: wrap every encrypted segment's data key under another key-encryption key, rewriting
    /// manifests only (one read and one write per segment). Segments already under it are skipped, so a
    /// rerun resumes. Afterwards the old key can leave the keyring (encryption.keys).
    Rewrap(rewrap::RewrapArgs),
    /// Rewrite the segments Aiven's plugin stored in this format, one at a time: each is copied and
    /// committed as ours before its old objects are deleted, so a stop at any moment (kill -9 included)
    /// leaves it readable; a rerun goes on where a run stopped. Optional: the plugin reads them as they are
    /// (aiven.read.enabled).
    Migrate(migrate::MigrateArgs),
    /// Print every record of a cluster's remote log metadata topic, one line each, as Kafka decodes it.
    Metadata(metadata::MetadataArgs),
    /// Make a new local metadata log from the store's manifests (each whole segment as copied), after the
    /// metadata log was lost or damaged: the engine commands then read the data it describes again.
    RebuildMetadata(rebuild_metadata::RebuildMetadataArgs),
    /// Read and check every segment in a store; with --dir, also compare with the local files both ways.
    Verify(verify::VerifyArgs),
}

fn run(cli: Cli) -> CmdResult {
    let mut stdout = Out::new();
    let o = &mut stdout;
    match cli.command {
        Command::Demo(a) => {
            demo::run(o, a.store, settings(a.config.as_ref(), &a.set)?, a.segments, a.segment_mib, a.keep)
        }
        Command::Copy(a) => copy::run(o, &a.dir, a.store, a.broker_id, a.create),
        Command::Ls(a) => ls::run(o, &a.store.open()?, a.topic.as_deref(), a.partition, a.json),
        Command::Fetch(a) => {
            drop(stdout);
            let store = a.store.open()?;
            fetch::run(&store, &a.segment, a.offset, a.timestamp, a.position, a.bytes, a.index, a.output.as_deref())
        }
        Command::Verify(a) => verify::run(o, &a.store.open()?, a.dir.as_deref()),
        Command::Tier(a) => tier::run(o, &a.dirs, &a.engine, a.watch, a.dry_run, a.yes, a.metrics_addr.as_deref()),
        Command::Offsets(a) => offsets::run(o, &a.dirs, &a.engine),
        Command::Read(a) => read::run(o, &a.dir, &a.engine, &a.options()),
        Command::Expire(a) => expire::run(o, &a.dirs, &a.engine, a.yes),
        Command::FailedDeletions(a) => failed_deletions::run(o, &a.action, &a.engine),
        Command::Delete(a) => delete::run(o, &a.segment, a.force, a.dir.as_deref(), &a.engine),
        Command::RebuildMetadata(a) => rebuild_metadata::run(o, &a.store, &a.metadata_dir),
        Command::Sweep(a) => sweep::run(o, &a.store, a.min_age, a.yes, a.metadata_dir.as_deref()),
        Command::Rewrap(a) => rewrap::run(o, &a.store, &a.key, a.topic.as_deref()),
        Command::Migrate(a) => migrate::run(o, &a),
        Command::Metadata(a) => metadata::run(o, &a),
        Command::Audit(a) => audit::run(o, a),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(),
    }
}
