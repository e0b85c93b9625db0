//! Writes real Kafka data: v2 record batches with valid CRC-32C, and whole partition directories
//! (segments rolled by size, `.index` and `.timeindex` entries every `index.interval.bytes` as the broker
//! writes them, producer snapshots, the leader-epoch checkpoint and `partition.metadata`). Used by
//! `rsm demo`, the test kit and the benchmarks.

use crate::error::{Error, Result};
use crate::format::batch::{ATTRIBUTES_OFFSET, CRC_OFFSET};
use crate::format::index::{OffsetIndexWriter, TimeIndexWriter};
use crate::model::Uuid;
use std::fs;
use std::path::{Path, PathBuf};

/// One record to write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// The key, or `None` for a null key.
    pub key: Option<Vec<u8>>,
    /// The value, or `None` for a null value (a tombstone).
    pub value: Option<Vec<u8>>,
    /// Headers, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The record timestamp (ms).
    pub timestamp: i64,
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn put_bytes_field(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Encodes one uncompressed v2 batch of `records` at `base_offset` (records get consecutive offsets).
/// Panics on an empty record list: Kafka never writes an empty data batch.
pub fn encode_batch(base_offset: i64, leader_epoch: i32, records: &[Record]) -> Vec<u8> {
    assert!(!records.is_empty(), "a batch needs at least one record");
    let base_ts = records[0].timestamp;
    let max_ts = records.iter().map(|r| r.timestamp).max().expect("non-empty");
    let mut body = Vec::with_capacity(64 + records.len() * 32);
    let mut rec = Vec::new();
    for (i, r) in records.iter().enumerate() {
        rec.clear();
        rec.push(0); // record attributes
        put_varint(&mut rec, r.timestamp - base_ts);
        put_varint(&mut rec, i as i64);
        put_bytes_field(&mut rec, r.key.as_deref());
        put_bytes_field(&mut rec, r.value.as_deref());
        put_varint(&mut rec, r.headers.len() as i64);
        for (k, v) in &r.headers {
            put_bytes_field(&mut rec, Some(k.as_bytes()));
            put_bytes_field(&mut rec, Some(v));
        }
        put_varint(&mut body, rec.len() as i64);
        body.extend_from_slice(&rec);
    }
    let mut out = Vec::with_capacity(61 + body.len());
    out.extend_from_slice(&base_offset.to_be_bytes());
    out.extend_from_slice(&((49 + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&leader_epoch.to_be_bytes());
    out.push(2); // magic
    out.extend_from_slice(&[0; 4]); // crc, filled below
    out.extend_from_slice(&0i16.to_be_bytes()); // attributes: no compression, create time
    out.extend_from_slice(&((records.len() - 1) as i32).to_be_bytes());
    out.extend_from_slice(&base_ts.to_be_bytes());
    out.extend_from_slice(&max_ts.to_be_bytes());
    out.extend_from_slice(&(-1i64).to_be_bytes()); // producer id
    out.extend_from_slice(&(-1i16).to_be_bytes()); // producer epoch
    out.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    out.extend_from_slice(&(records.len() as i32).to_be_bytes());
    out.extend_from_slice(&body);
    let crc = crc32c::crc32c(&out[ATTRIBUTES_OFFSET..]);
    out[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    out
}

/// An empty producer snapshot (version 1, CRC-32C, zero producers), as the broker writes on roll when no
/// idempotent producer wrote to the partition.
pub fn empty_producer_snapshot() -> Vec<u8> {
    let rest = 0i32.to_be_bytes();
    let mut out = Vec::with_capacity(10);
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&rest).to_be_bytes());
    out.extend_from_slice(&rest);
    out
}

/// The leader-epoch checkpoint text for `(epoch, start offset)` entries.
pub fn leader_epoch_checkpoint(entries: &[(i32, i64)]) -> String {
    let mut s = format!("0\n{}\n", entries.len());
    for (e, o) in entries {
        s.push_str(&format!("{e} {o}\n"));
    }
    s
}

/// The file name Kafka gives a segment file: the base offset in 20 digits and the extension.
pub fn segment_file_name(base_offset: i64, ext: &str) -> String {
    format!("{base_offset:020}.{ext}")
}

struct OpenSegment {
    base_offset: i64,
    log: Vec<u8>,
    index: OffsetIndexWriter,
    time: TimeIndexWriter,
    bytes_since_entry: usize,
    max_ts: i64,
    offset_of_max_ts: i64,
    last_time_entry_ts: i64,
}

impl OpenSegment {
    fn new(base_offset: i64) -> Self {
        OpenSegment {
            base_offset,
            log: Vec::new(),
            index: OffsetIndexWriter::new(base_offset),
            time: TimeIndexWriter::new(base_offset),
            bytes_since_entry: 0,
            max_ts: -1,
            offset_of_max_ts: base_offset,
            last_time_entry_ts: i64::MIN,
        }
    }

    fn maybe_time_entry(&mut self) {
        if self.max_ts > self.last_time_entry_ts {
            self.time.append(self.max_ts, self.offset_of_max_ts);
            self.last_time_entry_ts = self.max_ts;
        }
    }
}

/// Writes a Kafka partition directory the way a broker does, segment by segment.
pub struct PartitionWriter {
    dir: PathBuf,
    segment_bytes: usize,
    index_interval_bytes: usize,
    leader_epoch: i32,
    epochs: Vec<(i32, i64)>,
    next_offset: i64,
    current: OpenSegment,
}

impl PartitionWriter {
    /// Creates `dir` (named `topic-partition`) with `partition.metadata` for `topic_id`. Segments roll when
    /// the next batch would pass `segment_bytes`; index entries follow `index_interval_bytes` (Kafka: 4096).
    pub fn create(dir: &Path, topic_id: Uuid, segment_bytes: usize, index_interval_bytes: usize) -> Result<Self> {
        fs::create_dir_all(dir).map_err(|e| Error::from_io(dir.display(), e))?;
        let meta = format!("version: 0\ntopic_id: {topic_id}\n");
        let p = dir.join("partition.metadata");
        fs::write(&p, meta).map_err(|e| Error::from_io(p.display(), e))?;
        Ok(PartitionWriter {
            dir: dir.to_path_buf(),
            segment_bytes,
            index_interval_bytes,
            leader_epoch: 0,
            epochs: vec![(0, 0)],
            next_offset: 0,
            current: OpenSegment::new(0),
        })
    }

    /// Starts a new leader epoch at the next offset.
    pub fn bump_leader_epoch(&mut self) {
        self.leader_epoch += 1;
        self.epochs.push((self.leader_epoch, self.next_offset));
    }

    /// The offset the next record gets.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Appends one batch of `records`, rolling first if it would not fit.
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        let batch = encode_batch(self.next_offset, self.leader_epoch, records);
        if !self.current.log.is_empty() && self.current.log.len() + batch.len() > self.segment_bytes {
            self.roll()?;
        }
        let last_offset = self.next_offset + records.len() as i64 - 1;
        let seg = &mut self.current;
        let position = seg.log.len() as u32;
        if seg.bytes_since_entry > self.index_interval_bytes {
            seg.index.append(last_offset, position);
            seg.maybe_time_entry();
            seg.bytes_since_entry = 0;
        }
        let batch_max = records.iter().map(|r| r.timestamp).max().expect("non-empty");
        if batch_max > seg.max_ts {
            seg.max_ts = batch_max;
            seg.offset_of_max_ts = last_offset;
        }
        seg.bytes_since_entry += batch.len();
        seg.log.extend_from_slice(&batch);
        self.next_offset = last_offset + 1;
        Ok(())
    }

    fn write_segment(&self, seg: &OpenSegment) -> Result<()> {
        let files = [("log", seg.log.as_slice()), ("index", seg.index.bytes()), ("timeindex", seg.time.bytes())];
        for (ext, bytes) in files {
            let p = self.dir.join(segment_file_name(seg.base_offset, ext));
            fs::write(&p, bytes).map_err(|e| Error::from_io(p.display(), e))?;
        }
        Ok(())
    }

    /// Closes the active segment and opens a new one at the next offset, writing a producer snapshot for it.
    pub fn roll(&mut self) -> Result<()> {
        self.current.maybe_time_entry();
        let done = std::mem::replace(&mut self.current, OpenSegment::new(self.next_offset));
        self.write_segment(&done)?;
        let p = self.dir.join(segment_file_name(self.next_offset, "snapshot"));
        fs::write(&p, empty_producer_snapshot()).map_err(|e| Error::from_io(p.display(), e))
    }

    /// Writes the active segment (which stays active) and the leader-epoch checkpoint.
    pub fn finish(self) -> Result<PathBuf> {
        self.write_segment(&self.current)?;
        let p = self.dir.join("leader-epoch-checkpoint");
        fs::write(&p, leader_epoch_checkpoint(&self.epochs)).map_err(|e| Error::from_io(p.display(), e))?;
        Ok(self.dir)
    }
}

/// A small deterministic generator (xorshift64*), so generated data is the same on every run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator; a zero seed is replaced.
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// What [`generate_partition`] writes.
#[derive(Debug, Clone)]
pub struct PartitionSpec {
    /// Topic id for `partition.metadata`.
    pub topic_id: Uuid,
    /// Roll size of segments.
    pub segment_bytes: usize,
    /// Total records.
    pub records: u64,
    /// Records per batch (at most).
    pub records_per_batch: usize,
    /// Value size in bytes (keys are short).
    pub value_bytes: usize,
    /// Timestamp of the first record; each later record is 1-10 ms later.
    pub first_timestamp: i64,
    /// Leader epoch bumps after this many batches (0: never).
    pub epoch_every_batches: usize,
    /// Seed of the content.
    pub seed: u64,
}

/// Writes a partition directory `dir` per `spec`; the last segment stays active.
pub fn generate_partition(dir: &Path, spec: &PartitionSpec) -> Result<PathBuf> {
    let mut w = PartitionWriter::create(dir, spec.topic_id, spec.segment_bytes, 4096)?;
    let mut rng = Rng::new(spec.seed);
    let mut ts = spec.first_timestamp;
    let mut written = 0u64;
    let mut batches = 0usize;
    while written < spec.records {
        let n = (spec.records - written).min(spec.records_per_batch as u64) as usize;
        let records: Vec<Record> = (0..n)
            .map(|i| {
                ts += 1 + rng.below(10) as i64;
                let mut value = vec![0u8; spec.value_bytes];
                for b in value.iter_mut() {
                    *b = b'a' + rng.below(26) as u8;
                }
                let offset = w.next_offset() + i as i64;
                Record {
                    key: Some(format!("key-{}", offset % 1000).into_bytes()),
                    value: Some(value),
                    headers: vec![("h".to_string(), offset.to_string().into_bytes())],
                    timestamp: ts,
                }
            })
            .collect();
        w.append(&records)?;
        written += n as u64;
        batches += 1;
        if spec.epoch_every_batches > 0 && batches.is_multiple_of(spec.epoch_every_batches) {
            w.bump_leader_epoch();
        }
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::batch::BatchIter;

    #[test]
    fn varints_are_zigzag() {
        // Known answers from Kafka's ByteUtils: 0 -> 00, -1 -> 01, 1 -> 02, 63 -> 7e, -65 -> 81 01, 300 -> d8 04.
        for (v, want) in [
            (0i64, vec![0u8]),
            (-1, vec![1]),
            (1, vec![2]),
            (63, vec![0x7e]),
            (-65, vec![0x81, 1]),
            (300, vec![0xd8, 4]),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, want, "varint {v}");
        }
    }

    #[test]
    fn encoded_batch_has_kafka_header_fields() {
        let recs = vec![
            Record { key: None, value: Some(b"v".to_vec()), headers: vec![], timestamp: 1000 },
            Record {
                key: Some(b"k".to_vec()),
                value: None,
                headers: vec![("a".into(), b"b".to_vec())],
                timestamp: 900,
            },
        ];
        let b = encode_batch(42, 7, &recs);
        let batch = BatchIter::new(&b, 0, true).next().unwrap().unwrap();
        assert_eq!(batch.base_offset(), 42);
        assert_eq!(batch.last_offset(), 43);
        assert_eq!(batch.partition_leader_epoch(), 7);
        assert_eq!(batch.base_timestamp(), 1000);
        assert_eq!(batch.max_timestamp(), 1000);
        assert_eq!(batch.record_count(), 2);
        assert_eq!(batch.size(), b.len());
        // Record 0 by hand: attrs 0, tsDelta 0, offDelta 0, key -1 (01), value len 1 (02) 'v', 0 headers;
        // its length is 7 (zigzag 0e).
        assert_eq!(&b[61..69], &[0x0e, 0, 0, 0, 0x01, 0x02, b'v', 0]);
    }
}
