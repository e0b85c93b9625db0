//! Copying a local partition directory to a store: [`Store::copy_partition`] copies its closed segments,
//! leaving alone those already whole in the store, so a rerun copies only what is missing. This is the rule
//! `rsm copy` follows; being here, every face (the CLI, the C ABI, JNI) can follow it the same way.

use crate::store::Store;
use rsm_core::dir_lock::DirLock;
use rsm_core::format::manifest::Manifest;
use rsm_core::format::partition::{LocalPartition, LocalSegment};
use rsm_core::{Error, RemoteLogSegmentMetadata, Result};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a [`Store::copy_partition`] did.
#[derive(Debug, Default)]
pub struct PartitionCopy {
    /// Segments copied now, in offset order.
    pub copied: Vec<RemoteLogSegmentMetadata>,
    /// Segments already whole in the store, left alone: their manifests.
    pub skipped: Vec<Manifest>,
    /// Segments whose earlier copy in the store is incomplete or unreadable (so copied again), each with why.
    pub redone: Vec<String>,
}

/// How far a [`Store::copy_partition`] got, told to its `progress` callback as it goes.
#[derive(Debug, Clone, Copy)]
pub enum CopyProgress<'a> {
    /// The segments to copy are known (after the store was looked at): their log bytes in all. Told once,
    /// before the first copy.
    Start {
        /// Bytes of the log files of the segments to copy.
        bytes: u64,
    },
    /// One segment was copied.
    Copied(&'a RemoteLogSegmentMetadata),
}

/// Opens the partition directory `dir` for a [`Store::copy_partition`] and takes its lock, so one copy of
/// a directory runs at a time (two would each store every segment, under ids of their own): an error names
/// the directory when it is not a partition directory, or when another copy holds it. The copy keeps the
/// lock while it runs.
pub fn open_partition_for_copy(dir: &Path) -> Result<(LocalPartition, DirLock)> {
    let partition =
        LocalPartition::open(dir).map_err(|e| e.context(format!("partition directory {}", dir.display())))?;
    let lock = DirLock::exclusive(dir, "partition directory")?;
    Ok((partition, lock))
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

/// Now, in ms since the epoch: the event time of a segment's metadata.
fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl Store {
    /// Copies the closed segments of `partition` (the active segment never: the broker copies a segment
    /// once it rolls) to this store, recording `broker_id` in their metadata, and tells `progress` how far
    /// it got.
    ///
    /// With `skip_whole`, the store's segments of the partition are listed first, and a local segment with
    /// a whole copy there (a readable manifest of the same start and end offsets and log size, every object
    /// present) is skipped; one whose copy lacks objects or whose manifest does not read is copied again,
    /// and [`PartitionCopy::redone`] says why. Without it, every closed segment is copied (under a new
    /// segment id).
    pub fn copy_partition(
        &self,
        partition: &LocalPartition,
        broker_id: i32,
        skip_whole: bool,
        mut progress: impl FnMut(CopyProgress<'_>),
    ) -> Result<PartitionCopy> {
        let closed = partition.closed_segments();
        let mut existing = Vec::new();
        let mut redone = Vec::new();
        if skip_whole {
            for s in self.scan_segments(Some(&partition.topic_id_partition))? {
                match s.manifest {
                    Ok(m) => existing.push((m, s.missing)),
                    Err(e) => redone.push(format!("{} is unreadable ({})", s.manifest_key, e.full_message())),
                }
            }
        }
        let len_of = |s: &LocalSegment| {
            std::fs::metadata(&s.log).map(|m| m.len()).map_err(|e| Error::from_io(s.log.display(), e))
        };
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
        progress(CopyProgress::Start { bytes: todo.iter().map(|(_, l)| l).sum() });
        let mut copied = Vec::new();
        for (seg, _) in todo {
            let md = partition.segment_metadata(seg, broker_id, now_ms())?;
            let data = partition.segment_data(seg)?;
            self.copy(&md, &data)?;
            progress(CopyProgress::Copied(&md));
            copied.push(md);
        }
        Ok(PartitionCopy { copied, skipped, redone })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::Uuid;
    use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
    use std::collections::BTreeMap;

    #[test]
    fn a_rerun_skips_the_segments_already_whole_in_the_store() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = PartitionSpec {
            topic_id: Uuid::random(),
            segment_bytes: 64 << 10,
            records: 400,
            records_per_batch: 8,
            value_bytes: 512,
            first_timestamp: 1_700_000_000_000,
            epoch_every_batches: 10,
            seed: 7,
            compression: None,
        };
        let dir = generate_partition(&tmp.path().join("orders-0"), &spec).unwrap();
        let partition = LocalPartition::open(&dir).unwrap();
        let closed = partition.closed_segments().len();
        assert!(closed >= 2, "{closed} closed segments");
        let store = Store::open("memory:", &BTreeMap::new()).unwrap();

        let mut told = Vec::new();
        let first = store
            .copy_partition(&partition, 3, true, |p| {
                told.push(match p {
                    CopyProgress::Start { bytes } => bytes as i64,
                    CopyProgress::Copied(md) => -md.start_offset - 1,
                })
            })
            .unwrap();
        assert_eq!((first.copied.len(), first.skipped.len(), first.redone.len()), (closed, 0, 0));
        assert!(first.copied.iter().all(|md| md.broker_id == 3));
        let bytes: i64 = first.copied.iter().map(|md| i64::from(md.segment_size_in_bytes)).sum();
        assert_eq!(told[0], bytes, "Start comes first, with the bytes to copy");
        assert_eq!(told.len(), closed + 1);

        let again = store.copy_partition(&partition, 3, true, |_| {}).unwrap();
        assert_eq!((again.copied.len(), again.skipped.len(), again.redone.len()), (0, closed, 0));
        let ids: Vec<_> = again.skipped.iter().map(|m| m.metadata.remote_log_segment_id.id).collect();
        assert_eq!(ids, first.copied.iter().map(|md| md.remote_log_segment_id.id).collect::<Vec<_>>());

        let all = store.copy_partition(&partition, 3, false, |_| {}).unwrap();
        assert_eq!((all.copied.len(), all.skipped.len()), (closed, 0), "without skip_whole every segment is copied");
    }
}
