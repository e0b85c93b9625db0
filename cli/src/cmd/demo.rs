//! `rsm demo`: a real Kafka partition generated, tiered to a store, read back and checked byte for byte.

use super::copy::copy_partition;
use crate::exit::CmdResult;
use crate::output::{Out, mib, now_ms, out};
use clap::Args;
use rsm_core::backend::Op;
use rsm_core::format::batch::BatchIter;
use rsm_core::format::partition::{LocalPartition, LocalSegment};
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::{Error, IndexType, RemoteLogSegmentMetadata, Result, Uuid};
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

/// The arguments of `rsm demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Store URL (default: a filesystem store in a temp dir).
    #[arg(long)]
    pub store: Option<String>,
    /// A properties file of the store's settings.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// One store setting, key=value; repeatable; wins over --config.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Closed segments to generate.
    #[arg(long, default_value_t = 6)]
    pub segments: u64,
    /// Segment size in MiB.
    #[arg(long, default_value_t = 8)]
    pub segment_mib: u64,
    /// Keep the generated partition and store, and print where.
    #[arg(long)]
    pub keep: bool,
}

fn mismatch(what: String) -> Error {
    Error::corrupt(format!("demo check failed: {what}"))
}

/// Generates a partition of `segments` closed segments of `segment_mib` MiB, copies it to the store
/// `store_url` names (a filesystem store in a temporary directory by default), reads every segment back by
/// position, offset and timestamp, checks every byte and index, and prints the numbers; `keep` keeps the
/// temporary directory.
pub fn run(
    o: &mut Out,
    store_url: Option<String>,
    settings: BTreeMap<String, String>,
    segments: u64,
    segment_mib: u64,
    keep: bool,
) -> CmdResult {
    if segments == 0 || segment_mib == 0 {
        return Err(Error::invalid("--segments and --segment-mib must be at least 1").into());
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
        compression: None,
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
            return Err(mismatch(format!("segment {} by position 0", md.start_offset)).into());
        }
        let mid = (local.len() / 2) as i64;
        if read_all(&store, md, mid)? != local[mid as usize..] {
            return Err(mismatch(format!("segment {} from position {mid}", md.start_offset)).into());
        }
        fetched_bytes += (whole.len() + local.len() - mid as usize) as u64;
        // By offset and by timestamp, checked against an independent walk of the local file.
        let batches: Vec<_> = BatchIter::new(&local, 0, true).collect::<Result<Vec<_>>>()?;
        for b in [batches[0], batches[batches.len() / 3], batches[batches.len() - 1]] {
            let off = (b.base_offset() + b.last_offset()) / 2;
            let pos = store.position_of_offset(md, off)?;
            if pos as u64 != b.position() {
                return Err(mismatch(format!("offset {off}: position {pos}, expected {}", b.position())).into());
            }
            let from = read_all(&store, md, pos)?;
            if from != local[pos as usize..] {
                return Err(mismatch(format!("segment {} from offset {off}", md.start_offset)).into());
            }
            fetched_bytes += from.len() as u64;
            let ts = b.max_timestamp();
            let want = batches.iter().find(|x| x.max_timestamp() >= ts).map(|x| x.position() as i64);
            let got = store.position_of_timestamp(md, ts)?;
            if got != want {
                return Err(mismatch(format!("timestamp {ts}: position {got:?}, expected {want:?}")).into());
            }
        }
        for (t, path) in [
            (IndexType::Offset, partition_file(seg, "index")),
            (IndexType::Timestamp, partition_file(seg, "timeindex")),
        ] {
            let want = std::fs::read(&path).map_err(|e| Error::from_io(path.display(), e))?;
            if store.fetch_index(md, t)? != want {
                return Err(mismatch(format!("{t} index of segment {}", md.start_offset)).into());
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

fn read_all(store: &Store, md: &RemoteLogSegmentMetadata, start: i64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    store.fetch(md, start, None)?.read_to_end(&mut out).map_err(|e| Error::from_io("fetch stream", e))?;
    Ok(out)
}
