//! Writes real Kafka data: v2 record batches with valid CRC-32C (uncompressed or compressed with any of
//! Kafka's codecs, idempotent or transactional, create or log-append time, and transaction markers), and
//! whole partition directories
//! (segments rolled by size, `.index` and `.timeindex` entries every `index.interval.bytes` as the broker
//! writes them, producer snapshots, the leader-epoch checkpoint and `partition.metadata`). Used by
//! `rsm demo`, the test kit, the benchmarks and the fuzz seeds (feature `log-writer`, which `testkit`
//! includes).

use crate::error::{Error, Result};
use crate::format::batch::{ATTRIBUTES_OFFSET, CRC_OFFSET, LOG_OVERHEAD, NO_TIMESTAMP, V2_HEADER_LEN};
use crate::format::index::{OffsetIndexWriter, TimeIndexWriter};
use crate::format::records::compression::{self, Codec};
use crate::format::records::{CONTROL_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT};
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

/// What the batch writer takes of a record: its timestamp, key, value and headers (its offset is its place
/// in the batch). [`Record`] is one; a decoded record ([`records::Record`](crate::format::records::Record))
/// is another, and the one to use for a header with a null value, which [`Record`] cannot hold.
pub trait WritableRecord {
    /// The timestamp (ms), create time.
    fn timestamp(&self) -> i64;
    /// The key, `None` for a null key.
    fn key(&self) -> Option<&[u8]>;
    /// The value, `None` for a null value (a tombstone).
    fn value(&self) -> Option<&[u8]>;
    /// The headers, in order: a key and a value (`None` for a null value).
    fn headers(&self) -> impl ExactSizeIterator<Item = (&str, Option<&[u8]>)>;
}

/// Implements [`WritableRecord`] for a record type with `timestamp`, `key`, `value` and `headers` fields,
/// `$v` being a header's value and `$value` it as an `Option<&[u8]>`.
macro_rules! writable_record {
    ($ty:ty, |$v:ident| $value:expr) => {
        impl WritableRecord for $ty {
            fn timestamp(&self) -> i64 {
                self.timestamp
            }
            fn key(&self) -> Option<&[u8]> {
                self.key.as_deref()
            }
            fn value(&self) -> Option<&[u8]> {
                self.value.as_deref()
            }
            fn headers(&self) -> impl ExactSizeIterator<Item = (&str, Option<&[u8]>)> {
                self.headers.iter().map(|(k, $v)| (k.as_str(), $value))
            }
        }
    };
}

writable_record!(Record, |v| Some(v.as_slice()));
writable_record!(crate::format::records::Record, |v| v.as_deref());

/// How [`encode_batch_with`] writes a batch: its codec, its producer and its timestamp type. The default is
/// what [`encode_batch`] writes: no compression, no producer (id, epoch and base sequence -1), not
/// transactional, create time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchOptions {
    /// The codec of the records section (attributes bits 0-2), `None` for none.
    pub compression: Option<Codec>,
    /// The producer id (-1: none).
    pub producer_id: i64,
    /// The producer epoch (-1: none).
    pub producer_epoch: i16,
    /// The sequence number of the first record (-1: none).
    pub base_sequence: i32,
    /// Whether the batch belongs to a transaction (attributes bit 4).
    pub transactional: bool,
    /// The broker's append time (ms): the batch's timestamp type is then log-append time (attributes bit 3)
    /// and its max timestamp this time, which every record of it reads as its timestamp.
    pub log_append_time: Option<i64>,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            compression: None,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            log_append_time: None,
        }
    }
}

/// Encodes one uncompressed v2 batch of `records` at `base_offset` (records get consecutive offsets), with no
/// producer and create time: [`encode_batch_with`] and [`BatchOptions::default`].
pub fn encode_batch(base_offset: i64, leader_epoch: i32, records: &[Record]) -> Vec<u8> {
    encode_batch_with(base_offset, leader_epoch, records, &BatchOptions::default())
}

/// Encodes one v2 batch of `records` at `base_offset` (records get consecutive offsets) as `options` say,
/// with its CRC-32C: its records section compressed with [`compression::compress`], as Kafka's producer
/// writes it. Its base timestamp is the first record's, its max timestamp the largest record's (or the
/// log-append time). An empty `records` gives a batch of no records (record count 0, last offset delta 0,
/// timestamps -1 unless log-append time), the shape of the empty batches compaction leaves.
pub fn encode_batch_with<R: WritableRecord>(
    base_offset: i64,
    leader_epoch: i32,
    records: &[R],
    options: &BatchOptions,
) -> Vec<u8> {
    encode_v2(base_offset, leader_epoch, records, options, false)
}

/// Encodes a transaction marker: a control batch (control and transactional bits, no compression) of one
/// control record at `base_offset`, whose key is version 0 and type 1 (commit) or 0 (abort) and whose value
/// is version 0 and the transaction coordinator's epoch, as Kafka's `EndTransactionMarker` writes it; its
/// base sequence is -1.
pub fn encode_control_batch(
    base_offset: i64,
    leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    timestamp: i64,
) -> Vec<u8> {
    let mut key = 0i16.to_be_bytes().to_vec();
    key.extend_from_slice(&i16::from(commit).to_be_bytes());
    let mut value = 0i16.to_be_bytes().to_vec();
    value.extend_from_slice(&coordinator_epoch.to_be_bytes());
    let marker = Record { key: Some(key), value: Some(value), headers: vec![], timestamp };
    let options = BatchOptions { producer_id, producer_epoch, transactional: true, ..BatchOptions::default() };
    encode_v2(base_offset, leader_epoch, &[marker], &options, true)
}

fn encode_v2<R: WritableRecord>(
    base_offset: i64,
    leader_epoch: i32,
    records: &[R],
    options: &BatchOptions,
    control: bool,
) -> Vec<u8> {
    let base_ts = records.first().map_or(NO_TIMESTAMP, R::timestamp);
    let max_ts =
        options.log_append_time.unwrap_or_else(|| records.iter().map(R::timestamp).max().unwrap_or(NO_TIMESTAMP));
    let mut body = Vec::with_capacity(64 + records.len() * 32);
    let mut rec = Vec::new();
    for (i, r) in records.iter().enumerate() {
        rec.clear();
        rec.push(0); // record attributes
        put_varint(&mut rec, r.timestamp().wrapping_sub(base_ts));
        put_varint(&mut rec, i as i64);
        put_bytes_field(&mut rec, r.key());
        put_bytes_field(&mut rec, r.value());
        let headers = r.headers();
        put_varint(&mut rec, headers.len() as i64);
        for (k, v) in headers {
            put_bytes_field(&mut rec, Some(k.as_bytes()));
            put_bytes_field(&mut rec, v);
        }
        put_varint(&mut body, rec.len() as i64);
        body.extend_from_slice(&rec);
    }
    if let Some(codec) = options.compression {
        body = compression::compress(codec, &body);
    }
    let mut attributes = i16::from(options.compression.map_or(0, Codec::id));
    if options.log_append_time.is_some() {
        attributes |= TIMESTAMP_TYPE_BIT;
    }
    if options.transactional {
        attributes |= TRANSACTIONAL_BIT;
    }
    if control {
        attributes |= CONTROL_BIT;
    }
    let mut out = Vec::with_capacity(V2_HEADER_LEN + body.len());
    out.extend_from_slice(&base_offset.to_be_bytes());
    out.extend_from_slice(&((V2_HEADER_LEN - LOG_OVERHEAD + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&leader_epoch.to_be_bytes());
    out.push(2); // magic
    out.extend_from_slice(&[0; 4]); // crc, filled below
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&(records.len().saturating_sub(1) as i32).to_be_bytes()); // last offset delta
    out.extend_from_slice(&base_ts.to_be_bytes());
    out.extend_from_slice(&max_ts.to_be_bytes());
    out.extend_from_slice(&options.producer_id.to_be_bytes());
    out.extend_from_slice(&options.producer_epoch.to_be_bytes());
    out.extend_from_slice(&options.base_sequence.to_be_bytes());
    out.extend_from_slice(&(records.len() as i32).to_be_bytes());
    out.extend_from_slice(&body);
    let crc = crate::checksum::crc32c(&out[ATTRIBUTES_OFFSET..]);
    out[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    out
}

/// An empty producer snapshot (version 1, CRC-32C, zero producers), as the broker writes on roll when no
/// idempotent producer wrote to the partition.
pub fn empty_producer_snapshot() -> Vec<u8> {
    let rest = 0i32.to_be_bytes();
    let mut out = Vec::with_capacity(10);
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&crate::checksum::crc32c(&rest).to_be_bytes());
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
    fn new(base_offset: i64, long_index: bool) -> Self {
        OpenSegment {
            base_offset,
            log: Vec::new(),
            index: if long_index { OffsetIndexWriter::long(base_offset) } else { OffsetIndexWriter::new(base_offset) },
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
    long_index: bool,
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
            current: OpenSegment::new(0, false),
            long_index: false,
        })
    }

    /// 12-byte offset index entries (KIP-1333, a broker after `IBP_4_4_IV1`), before the first append.
    pub fn long_index_entries(&mut self) {
        self.long_index = true;
        self.current.index = OffsetIndexWriter::long(self.current.base_offset);
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

    /// Appends one uncompressed batch of `records` (no producer, create time), rolling first if it would not
    /// fit: [`PartitionWriter::append_with`] and [`BatchOptions::default`].
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        self.append_with(records, &BatchOptions::default())
    }

    /// Appends one batch of `records` written as `options` say ([`encode_batch_with`]), rolling first if it
    /// would not fit. An empty `records` is refused: a producer never sends an empty batch.
    pub fn append_with<R: WritableRecord>(&mut self, records: &[R], options: &BatchOptions) -> Result<()> {
        let Some(create_max) = records.iter().map(R::timestamp).max() else {
            return Err(Error::invalid("a batch to append needs at least one record"));
        };
        let batch = encode_batch_with(self.next_offset, self.leader_epoch, records, options);
        if !self.current.log.is_empty() && self.current.log.len() + batch.len() > self.segment_bytes {
            self.roll()?;
        }
        let last_offset = self.next_offset + records.len() as i64 - 1;
        let seg = &mut self.current;
        let position = seg.log.len() as u64;
        if seg.bytes_since_entry > self.index_interval_bytes {
            seg.index.append(last_offset, position);
            seg.maybe_time_entry();
            seg.bytes_since_entry = 0;
        }
        // The batch's max timestamp, which the time index takes: the append time under log-append time.
        let batch_max = options.log_append_time.unwrap_or(create_max);
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
        let done = std::mem::replace(&mut self.current, OpenSegment::new(self.next_offset, self.long_index));
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
    /// The codec of every batch (`None`: uncompressed).
    pub compression: Option<Codec>,
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
        w.append_with(&records, &BatchOptions { compression: spec.compression, ..BatchOptions::default() })?;
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
    use crate::format::records::{ControlType, DecodeLimits, DecodedBatch, TimestampType, decode_batch};

    const CODECS: [Option<Codec>; 5] =
        [None, Some(Codec::Gzip), Some(Codec::Snappy), Some(Codec::Lz4), Some(Codec::Zstd)];

    /// The one batch of `bytes`, its CRC-32C checked, and what it decodes to.
    fn decode_one(bytes: &[u8]) -> (crate::format::batch::Batch<'_>, DecodedBatch) {
        let mut it = BatchIter::new(bytes, 0, true);
        let batch = it.next().expect("a batch").expect("a whole batch, its CRC right");
        assert!(it.next().is_none(), "one batch");
        let decoded = decode_batch(&batch, &DecodeLimits::default()).expect("decodes");
        (batch, decoded)
    }

    fn records(n: usize) -> Vec<Record> {
        (0..n)
            .map(|i| Record {
                key: (i % 3 != 0).then(|| format!("key-{i}").into_bytes()),
                value: (i % 5 != 4).then(|| format!("value {i} ").repeat(i % 9 + 1).into_bytes()),
                headers: (0..i % 3).map(|h| (format!("h{h}"), vec![h as u8; h])).collect(),
                // Out of order, and one before the first: the base is the first record's, the max the largest.
                timestamp: 5_000 + (i as i64 * 37) % 101 - 50,
            })
            .collect()
    }

    #[test]
    fn batches_of_every_codec_and_option_read_back_as_written() {
        let w = records(300);
        for codec in CODECS {
            for (transactional, log_append_time) in [(false, None), (true, None), (false, Some(9_999)), (true, Some(7))]
            {
                let options = BatchOptions {
                    compression: codec,
                    producer_id: 77,
                    producer_epoch: 4,
                    base_sequence: 1_000,
                    transactional,
                    log_append_time,
                };
                let at = format!("{options:?}");
                let bytes = encode_batch_with(592, 6, &w, &options);
                let (b, d) = decode_one(&bytes);
                assert_eq!(i16::from(b.compression()), i16::from(codec.map_or(0, Codec::id)), "{at}");
                assert_eq!((b.base_offset(), b.last_offset(), b.record_count()), (592, 891, 300), "{at}");
                assert_eq!((b.partition_leader_epoch(), b.base_timestamp()), (6, w[0].timestamp), "{at}");
                let create_max = w.iter().map(|r| r.timestamp).max().unwrap();
                assert_eq!(b.max_timestamp(), log_append_time.unwrap_or(create_max), "{at}");
                assert_eq!(&bytes[53..57], &1_000i32.to_be_bytes(), "{at}: base sequence");
                assert_eq!((d.producer_id, d.producer_epoch, d.transactional, d.control), (77, 4, transactional, None));
                assert_eq!(d.records.len(), w.len(), "{at}");
                for (i, (r, w)) in d.records.iter().zip(&w).enumerate() {
                    let (ts, ty) = match log_append_time {
                        Some(t) => (t, TimestampType::LogAppendTime),
                        None => (w.timestamp, TimestampType::CreateTime),
                    };
                    assert_eq!((r.offset, r.timestamp, r.timestamp_type), (592 + i as i64, ts, ty), "{at} record {i}");
                    assert_eq!((&r.key, &r.value), (&w.key, &w.value), "{at} record {i}");
                    let headers: Vec<_> = w.headers.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
                    assert_eq!(r.headers, headers, "{at} record {i}");
                }
            }
        }
    }

    #[test]
    fn the_defaults_are_encode_batch() {
        let w = records(20);
        assert_eq!(encode_batch_with(3, 1, &w, &BatchOptions::default()), encode_batch(3, 1, &w));
        let bytes = encode_batch(3, 1, &w);
        let (b, d) = decode_one(&bytes);
        assert_eq!((b.attributes(), d.producer_id, d.producer_epoch, d.transactional), (0, -1, -1, false));
        assert_eq!(&b.bytes()[53..57], &(-1i32).to_be_bytes(), "base sequence");
    }

    #[test]
    fn control_batches_are_kafkas_transaction_markers() {
        for commit in [false, true] {
            let bytes = encode_control_batch(40, 2, 9, 3, commit, 17, 123_456);
            let (b, d) = decode_one(&bytes);
            let want = if commit { ControlType::Commit } else { ControlType::Abort };
            assert_eq!((d.control, d.records.len()), (Some(want), 0));
            assert_eq!((d.producer_id, d.producer_epoch, d.transactional), (9, 3, true));
            assert_eq!(
                (b.attributes(), b.base_offset(), b.last_offset(), b.partition_leader_epoch()),
                (0x30, 40, 40, 2)
            );
            assert_eq!((b.base_timestamp(), b.max_timestamp()), (123_456, 123_456));
            assert!(crate::format::records::is_control(&b));
            assert_eq!(&bytes[53..57], &(-1i32).to_be_bytes(), "base sequence");
            // The one record: length 16 (zigzag 0x20), attributes, deltas, key of 4 bytes (version 0, type),
            // value of 6 (version 0, coordinator epoch), no headers.
            let kind = u8::from(commit);
            assert_eq!(&bytes[61..], &[0x20, 0, 0, 0, 8, 0, 0, 0, kind, 12, 0, 0, 0, 0, 0, 17, 0]);
        }
    }

    #[test]
    fn decoded_records_write_again_as_they_were_null_header_values_too() {
        use crate::format::records::Record as Decoded;
        let rec = |offset: i64, headers: Vec<(String, Option<Vec<u8>>)>| Decoded {
            offset,
            timestamp: 50 + offset,
            timestamp_type: TimestampType::CreateTime,
            key: None,
            value: Some(vec![]),
            headers,
        };
        let w = vec![rec(0, vec![("none".into(), None), (String::new(), Some(vec![]))]), rec(1, vec![])];
        for codec in CODECS {
            let options = BatchOptions { compression: codec, producer_id: 5, producer_epoch: 0, ..Default::default() };
            let bytes = encode_batch_with(0, 0, &w, &options);
            let (_, d) = decode_one(&bytes);
            assert_eq!(d.records, w, "{codec:?}");
            assert_eq!(encode_batch_with(0, 0, &d.records, &options), bytes, "{codec:?}: the same bytes again");
        }
    }

    #[test]
    fn an_empty_batch_is_kafkas_empty_batch_and_appending_none_is_refused() {
        for codec in CODECS {
            let options = BatchOptions { compression: codec, ..BatchOptions::default() };
            let bytes = encode_batch_with(10, 0, &[] as &[Record], &options);
            let (b, d) = decode_one(&bytes);
            assert_eq!((b.base_offset(), b.last_offset(), b.record_count()), (10, 10, 0));
            assert_eq!((b.base_timestamp(), b.max_timestamp(), d.records.len()), (-1, -1, 0));
        }
        let dir = tempfile::tempdir().unwrap();
        let mut w = PartitionWriter::create(&dir.path().join("t-0"), Uuid::new(1, 2), 1 << 20, 4096).unwrap();
        let e = w.append(&[]).unwrap_err();
        assert!(e.to_string().contains("at least one record"), "{e}");
        assert_eq!(w.next_offset(), 0);
    }

    #[test]
    fn a_generated_partition_of_compressed_batches_decodes_throughout() {
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            let dir = tempfile::tempdir().unwrap();
            let spec = PartitionSpec {
                topic_id: Uuid::new(3, 4),
                segment_bytes: 8 << 10,
                records: 600,
                records_per_batch: 25,
                value_bytes: 100,
                first_timestamp: 1_700_000_000_000,
                epoch_every_batches: 7,
                seed: 5,
                compression: Some(codec),
            };
            let p = generate_partition(&dir.path().join("c-0"), &spec).unwrap();
            let mut logs: Vec<_> = std::fs::read_dir(&p)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .collect();
            logs.sort();
            assert!(logs.len() > 2, "{codec:?}: {} segments", logs.len());
            let mut next = 0;
            for log in &logs {
                let bytes = std::fs::read(log).unwrap();
                for b in BatchIter::new(&bytes, 0, true) {
                    let b = b.unwrap();
                    assert_eq!(b.compression(), codec.id(), "{codec:?}");
                    let d = decode_batch(&b, &DecodeLimits::default()).unwrap();
                    for r in &d.records {
                        assert_eq!(r.offset, next, "{codec:?}");
                        assert_eq!(r.value.as_ref().map(Vec::len), Some(100));
                        next += 1;
                    }
                }
            }
            assert_eq!(next, 600, "{codec:?}");
            let plain =
                generate_partition(&dir.path().join("p-0"), &PartitionSpec { compression: None, ..spec }).unwrap();
            let size =
                |d: &Path| -> u64 { std::fs::read_dir(d).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum() };
            assert!(size(&p) < size(&plain), "{codec:?} compresses the generated values");
        }
    }

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
