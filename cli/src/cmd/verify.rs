//! `rsm verify`: every segment in a store read and checked; with `--dir`, compared with the local files both
//! ways.

use super::listing::{Problems, leftovers, report_without_manifest, usable, without_manifest};
use crate::exit::CmdResult;
use crate::output::{Out, human, out};
use crate::settings::StoreArgs;
use clap::Args;
use rsm_core::backend::Op;
use rsm_core::format::partition::LocalPartition;
use rsm_core::{Error, RemoteLogSegmentMetadata, Result, TopicIdPartition};
use rsm_facade::Store;
use rsm_facade::audit::{refusal, refused_key};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The arguments of `rsm verify`.
#[derive(Args)]
pub struct VerifyArgs {
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// A partition directory whose segments were copied: each closed segment must be in the store,
    /// byte for byte.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Whether a store segment is a copy of the local partition's: same topic and partition, and the same topic
/// id when the directory names one (`partition.metadata`).
fn same_partition(local: &LocalPartition, tp: &TopicIdPartition) -> bool {
    let l = &local.topic_id_partition;
    l.topic_partition == tp.topic_partition
        && (!local.dir.join("partition.metadata").exists() || l.topic_id == tp.topic_id)
}

/// Reads and checks every segment of `store`, a line each; with `dir`, also checks that each closed segment
/// of that partition directory is in the store, byte for byte. Fails on damage, on a segment whose `.log`
/// and `.indexes` have had no manifest for longer than the safety age (a younger one may be an upload still
/// running: reported, not a failure), on a missing segment, or (a configuration error) when some segment
/// cannot be checked or was written under another key prefix than the store's `key.prefix`.
pub fn run(o: &mut Out, store: &Store, dir: Option<&Path>) -> CmdResult {
    let local = dir
        .map(|d| LocalPartition::open(d).map_err(|e| e.context(format!("partition directory {}", d.display()))))
        .transpose()?;
    let listed = store.scan_segments(None)?;
    let (mut bytes, mut good, mut problems) = (0, 0, Problems::default());
    let (mut missing, mut unverified) = (0, 0);
    // Base offsets of the local partition's segments with a whole copy in the store (checked below).
    let mut found = std::collections::BTreeSet::new();
    // Ours, then those Aiven's plugin stored (`aiven.read.enabled`).
    let mut segments: Vec<RemoteLogSegmentMetadata> = Vec::new();
    for s in listed {
        if let Some(m) = usable(o, store, s, &mut problems)? {
            segments.push(m.metadata.clone());
        }
    }
    for s in store.scan_aiven_segments(None)? {
        match s.segment {
            Ok((_, md)) => segments.push(md),
            Err(e) => {
                problems.damaged += 1;
                out!(o, "FAILED\t{}\t{}", s.manifest_key, e.full_message());
            }
        }
    }
    for md in &segments {
        let id = md.remote_log_segment_id.id;
        let reads_before = store.counts().get(Op::Get).requests;
        let checked = store.verify(md).and_then(|report| {
            let reads = store.counts().get(Op::Get).requests - reads_before;
            if let Some(p) = &local
                && same_partition(p, &md.remote_log_segment_id.topic_id_partition)
                && let Some(seg) = p.segments.iter().find(|s| s.base_offset == md.start_offset)
            {
                found.insert(seg.base_offset);
                if !same_as_file(store, md, &seg.log)? {
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
                    "ok\t{id}\t{} chunks checked ({} in {reads} reads)\t{} indexes{}",
                    report.chunks,
                    human(report.bytes),
                    report.indexes,
                    match report.checked_by {
                        "" => String::new(),
                        how => format!("\t{how}"),
                    }
                );
            }
            // A key or a setting this run lacks: the segment cannot be checked, which says nothing of its data.
            Err(e) if e.kind() == rsm_core::ErrorKind::Config => {
                unverified += 1;
                out!(o, "UNVERIFIED\t{id}\tcannot be checked: {}", e.full_message());
            }
            // A key that does not open the data key: the key is wrong (or this manifest holds another
            // segment's key), which says nothing of the data either.
            Err(e)
                if e.kind() == rsm_core::ErrorKind::Corrupt
                    && let Some(kek) = refused_key(store, md) =>
            {
                unverified += 1;
                out!(o, "UNVERIFIED\t{id}\tcannot be checked: {}", refusal(&kek));
            }
            Err(e) => {
                problems.damaged += 1;
                out!(o, "FAILED\t{id}\t{}", e.full_message());
            }
        }
    }
    let without = without_manifest(store)?;
    report_without_manifest(o, &without, &mut problems)?;
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
    let mut also = String::new();
    if problems.without_manifest > 0 {
        also.push_str(&format!(", {} without a manifest", problems.without_manifest));
    }
    if problems.elsewhere() > 0 {
        also.push_str(&format!(", {} under another key prefix", problems.elsewhere()));
    }
    out!(
        o,
        "verified {good} segments, {}; {} damaged or incomplete, {missing} missing, {unverified} cannot be \
         checked{also}",
        human(bytes),
        problems.damaged
    );
    leftovers(o, store, &without)?;
    if problems.failing() > 0 {
        return Err(Error::corrupt(format!(
            "{} segments failed verification: damaged, incomplete or without a manifest (listed above)",
            problems.failing()
        ))
        .into());
    }
    if missing > 0 {
        return Err(Error::not_found(format!(
            "{missing} closed local segments have no whole copy in the store (listed above)"
        ))
        .into());
    }
    if let Some(e) = problems.elsewhere_error(store) {
        return Err(e.into());
    }
    if unverified > 0 {
        return Err(Error::config(
            "encryption.keys",
            format!(
                "{unverified} segments cannot be checked without a key or setting this run lacks, or with a key that \
                 does not open them (listed above)"
            ),
        )
        .into());
    }
    Ok(())
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
