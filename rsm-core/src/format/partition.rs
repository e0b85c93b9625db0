//! Reads a Kafka partition directory (`topic-partition/` with `{offset:020}.log` segments): its segments,
//! topic id, leader epochs, and the metadata and [`LogSegmentData`] a broker would pass for each closed one.

use crate::error::{Error, Result};
use crate::format::batch::scan_file;
use crate::model::{
    LogSegmentData, RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition, Uuid,
};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One segment's files in a partition directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalSegment {
    /// Base offset (from the file name).
    pub base_offset: i64,
    /// Base offset of the next segment, `None` for the active one.
    pub next_offset: Option<i64>,
    /// The `.log` file.
    pub log: PathBuf,
}

/// A partition directory.
#[derive(Clone, Debug)]
pub struct LocalPartition {
    /// The directory.
    pub dir: PathBuf,
    /// Topic and partition, from the directory name.
    pub topic_id_partition: TopicIdPartition,
    /// Segments, oldest first; the last is active.
    pub segments: Vec<LocalSegment>,
    /// The leader-epoch checkpoint's bytes (empty when absent).
    pub leader_epoch_checkpoint: Bytes,
}

/// Parses a leader-epoch checkpoint (version line, count line, `epoch startOffset` lines).
pub fn parse_leader_epochs(text: &[u8], name: &str) -> Result<Vec<(i32, i64)>> {
    let text = std::str::from_utf8(text).map_err(|_| Error::corrupt(format!("{name}: not UTF-8")))?;
    let mut lines = text.lines();
    let bad = |what: &str| Error::corrupt(format!("{name}: {what}"));
    match lines.next() {
        Some("0") => {}
        other => return Err(bad(&format!("unsupported version line {other:?}"))),
    }
    let count: usize = lines.next().and_then(|l| l.trim().parse().ok()).ok_or_else(|| bad("bad count line"))?;
    // The count is the file's word: never allocate by it beyond what the text can hold.
    let mut out = Vec::with_capacity(count.min(text.len() / 4));
    for line in lines.by_ref().take(count) {
        let mut it = line.split_whitespace();
        let e = it.next().and_then(|v| v.parse().ok());
        let o = it.next().and_then(|v| v.parse().ok());
        match (e, o) {
            (Some(e), Some(o)) => out.push((e, o)),
            _ => return Err(bad(&format!("bad entry line `{line}`"))),
        }
    }
    if out.len() != count {
        return Err(bad(&format!("{} entries, count line says {count}", out.len())));
    }
    Ok(out)
}

impl LocalPartition {
    /// The partition `dir` names, changing nothing: topic and partition from its name (`topic-partition`),
    /// the topic id from `partition.metadata`, or without one derived from the topic name
    /// ([`Uuid::for_topic_name`]), the same on every run. The directory needs no segments.
    pub fn identify(dir: &Path) -> Result<TopicIdPartition> {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::invalid(format!("{} is not a partition directory", dir.display())))?;
        let (topic, partition) = name
            .rsplit_once('-')
            .and_then(|(t, p)| Some((t, p.parse::<i32>().ok()?)))
            .ok_or_else(|| Error::invalid(format!("{}: name is not `topic-partition`", dir.display())))?;
        let topic_id = match fs::read_to_string(dir.join("partition.metadata")) {
            Ok(text) => {
                let id = text
                    .lines()
                    .find_map(|l| l.strip_prefix("topic_id:"))
                    .ok_or_else(|| Error::corrupt(format!("{}/partition.metadata has no topic_id", dir.display())))?;
                id.trim().parse().map_err(|e: Error| e.context(dir.join("partition.metadata").display()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !dir.is_dir() {
                    return Err(Error::not_found(format!("{}: no such partition directory", dir.display())));
                }
                Uuid::for_topic_name(topic)
            }
            Err(e) => return Err(Error::from_io(dir.join("partition.metadata").display(), e)),
        };
        Ok(TopicIdPartition::new(topic_id, TopicPartition::new(topic, partition)))
    }

    /// Reads `dir`, changing nothing: the partition it names ([`LocalPartition::identify`]) and its
    /// segments (at least one).
    pub fn open(dir: &Path) -> Result<Self> {
        let topic_id_partition = Self::identify(dir)?;
        let mut bases = Vec::new();
        for e in fs::read_dir(dir).map_err(|e| Error::from_io(dir.display(), e))? {
            let e = e.map_err(|e| Error::from_io(dir.display(), e))?;
            let n = e.file_name();
            let n = n.to_string_lossy();
            if let Some(b) = n.strip_suffix(".log").and_then(|b| b.parse::<i64>().ok()) {
                bases.push(b);
            }
        }
        bases.sort_unstable();
        if bases.is_empty() {
            return Err(Error::invalid(format!("{}: no .log segments", dir.display())));
        }
        let segments = bases
            .iter()
            .enumerate()
            .map(|(i, &b)| LocalSegment {
                base_offset: b,
                next_offset: bases.get(i + 1).copied(),
                log: dir.join(format!("{b:020}.log")),
            })
            .collect();
        let checkpoint = match fs::read(dir.join("leader-epoch-checkpoint")) {
            Ok(b) => Bytes::from(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Bytes::new(),
            Err(e) => {
                return Err(Error::from_io(dir.join("leader-epoch-checkpoint").display(), e));
            }
        };
        Ok(LocalPartition { dir: dir.to_path_buf(), topic_id_partition, segments, leader_epoch_checkpoint: checkpoint })
    }

    /// The closed segments (all but the active one), oldest first.
    pub fn closed_segments(&self) -> &[LocalSegment] {
        &self.segments[..self.segments.len() - 1]
    }

    fn next_offset_of_closed(&self, seg: &LocalSegment) -> Result<i64> {
        seg.next_offset
            .ok_or_else(|| Error::invalid(format!("segment {} of {} is active", seg.base_offset, self.dir.display())))
    }

    /// The files the broker would pass to a copy of `seg`; the producer snapshot is the one at the next
    /// segment's base offset.
    pub fn segment_data(&self, seg: &LocalSegment) -> Result<LogSegmentData> {
        let next = self.next_offset_of_closed(seg)?;
        let p = |o: i64, ext: &str| self.dir.join(format!("{o:020}.{ext}"));
        let txn = p(seg.base_offset, "txnindex");
        let snapshot = p(next, "snapshot");
        if !snapshot.exists() {
            return Err(Error::not_found(format!(
                "producer snapshot {} (Kafka writes it when it rolls segment {} to the next, {}: a segment without one \
                 was not rolled by Kafka, or that next .log is a stray file)",
                snapshot.display(),
                seg.base_offset,
                self.dir.join(format!("{next:020}.log")).display()
            )));
        }
        Ok(LogSegmentData {
            log_segment: seg.log.clone(),
            offset_index: p(seg.base_offset, "index"),
            time_index: p(seg.base_offset, "timeindex"),
            transaction_index: txn.exists().then_some(txn),
            producer_snapshot_index: snapshot,
            leader_epoch_index: self.leader_epoch_checkpoint.clone(),
        })
    }

    /// The metadata a broker would make for copying `seg`: offsets from the file names, the size and the
    /// largest timestamp from the log, and the leader epochs from the checkpoint (falling back to the
    /// batches' own epochs when the checkpoint is empty).
    pub fn segment_metadata(
        &self,
        seg: &LocalSegment,
        broker_id: i32,
        now_ms: i64,
    ) -> Result<RemoteLogSegmentMetadata> {
        let next = self.next_offset_of_closed(seg)?;
        // Streamed: one block (or one batch) in memory, whatever the segment's size.
        let len = fs::metadata(&seg.log).map_err(|e| Error::from_io(seg.log.display(), e))?.len();
        let size =
            i32::try_from(len).map_err(|_| Error::invalid(format!("{}: larger than 2 GiB", seg.log.display())))?;
        let mut max_ts = -1;
        let mut last_offset = None;
        let mut batch_epochs = BTreeMap::new();
        scan_file(&seg.log, len, false, |b| {
            last_offset = Some(b.last_offset());
            max_ts = max_ts.max(b.max_timestamp());
            if b.partition_leader_epoch() != crate::format::batch::NO_PARTITION_LEADER_EPOCH {
                batch_epochs.entry(b.partition_leader_epoch()).or_insert(b.base_offset());
            }
        })
        .map_err(|e| e.context(seg.log.display()))?;
        // The segment ends at its own last batch's last offset: when the next segment begins further on (a
        // segment between them removed by hand), the offsets between are in neither, and a copy that claimed
        // them would make them look held. A segment without batches ends where the next begins (Kafka's rule).
        if let Some(last) = last_offset.filter(|&l| l >= next) {
            return Err(Error::invalid(format!(
                "{} holds offsets up to {last}, past {next}, where the next segment {} begins: is {} a stray or \
                 misnamed file?",
                seg.log.display(),
                self.dir.join(format!("{next:020}.log")).display(),
                self.dir.join(format!("{next:020}.log")).display(),
            )));
        }
        let end = last_offset.unwrap_or(next - 1);
        let name = self.dir.join("leader-epoch-checkpoint").display().to_string();
        let mut epochs = BTreeMap::new();
        if !self.leader_epoch_checkpoint.is_empty() {
            for (e, start) in parse_leader_epochs(&self.leader_epoch_checkpoint, &name)? {
                if start <= seg.base_offset {
                    epochs.clear();
                    epochs.insert(e, seg.base_offset);
                } else if start <= end {
                    epochs.insert(e, start);
                }
            }
        }
        if epochs.is_empty() {
            epochs = batch_epochs;
        }
        if epochs.is_empty() {
            epochs.insert(0, seg.base_offset);
        }
        let id = RemoteLogSegmentId::generate_new(self.topic_id_partition.clone());
        RemoteLogSegmentMetadata::new(id, seg.base_offset, end, max_ts, broker_id, now_ms, size, epochs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::log_writer::{PartitionSpec, generate_partition};

    #[test]
    fn a_bad_topic_id_names_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("orders-0");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("partition.metadata"), "version: 0\ntopic_id: not-an-id\n").unwrap();
        let e = LocalPartition::open(&dir).unwrap_err().to_string();
        assert!(e.contains(&format!("{}", dir.join("partition.metadata").display())), "{e}");
    }

    #[test]
    fn generated_partition_reads_back_as_a_broker_would_pass_it() {
        let tmp = tempfile::tempdir().unwrap();
        let topic_id = Uuid::random();
        let spec = PartitionSpec {
            topic_id,
            segment_bytes: 64 * 1024,
            records: 3_000,
            records_per_batch: 10,
            value_bytes: 100,
            first_timestamp: 1_700_000_000_000,
            epoch_every_batches: 120,
            seed: 7,
            compression: None,
        };
        let dir = generate_partition(&tmp.path().join("orders-2"), &spec).unwrap();
        let p = LocalPartition::open(&dir).unwrap();
        assert_eq!(p.topic_id_partition.topic_id, topic_id);
        assert_eq!(p.topic_id_partition.topic_partition, TopicPartition::new("orders", 2));
        assert!(p.segments.len() >= 4, "{}", p.segments.len());
        let epochs = parse_leader_epochs(&p.leader_epoch_checkpoint, "c").unwrap();
        assert_eq!(epochs[0], (0, 0));
        assert_eq!(epochs[1], (1, 1200));
        for seg in p.closed_segments() {
            let md = p.segment_metadata(seg, 1, 0).unwrap();
            let data = p.segment_data(seg).unwrap();
            assert_eq!(md.start_offset, seg.base_offset);
            assert_eq!(md.end_offset, seg.next_offset.unwrap() - 1);
            assert_eq!(md.segment_size_in_bytes as u64, fs::metadata(&data.log_segment).unwrap().len());
            assert!(md.segment_size_in_bytes <= 64 * 1024);
            // The epoch in force at the segment start maps to the segment start.
            assert!(md.segment_leader_epochs.values().all(|&o| o >= seg.base_offset && o <= md.end_offset));
            assert!(data.producer_snapshot_index.exists());
            assert!(data.transaction_index.is_none());
        }
        let active = p.segments.last().unwrap();
        assert!(p.segment_data(active).is_err());
        assert_eq!(parse_leader_epochs(b"0\n2\n0 0\n", "c").unwrap_err().kind(), crate::error::ErrorKind::Corrupt);
    }
}
