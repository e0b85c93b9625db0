//! The records inside the batches of a Kafka log, for tools that show what a segment holds: every record
//! of every batch format, v2 record batches (uncompressed, gzip, snappy, lz4, zstd; control batches) and
//! legacy magic 0 / 1 messages (plain, and compressed wrappers opened as Kafka opens them), bounded in
//! memory by [`DecodeLimits`].
//!
//! [`decode_batch`] takes a [`Batch`] from [`BatchIter`](crate::format::batch::BatchIter) and gives a
//! [`DecodedBatch`]. It does not check the batch's CRC: the iterator does when asked. Damaged bytes are
//! "corrupt" errors naming the batch's offset; nothing here panics on input.

pub mod compression;
pub mod isolation;
mod legacy;
#[cfg(test)]
mod tests;
mod v2;

use crate::error::{Error, Result};
use crate::format::batch::Batch;

pub(crate) use v2::TRANSACTIONAL_BIT;
pub use v2::is_control;
// The test kit's batch writer sets these too.
#[cfg(feature = "log-writer")]
pub(crate) use v2::{CONTROL_BIT, TIMESTAMP_TYPE_BIT};

/// Kafka's timestamp types, named as Kafka names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    /// Message format v0: no timestamp (the record's timestamp is -1).
    NoTimestampType,
    /// The producer's timestamp.
    CreateTime,
    /// The broker's, set when the batch was appended (every record of the batch has it).
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's name: "NoTimestampType", "CreateTime" or "LogAppendTime".
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::NoTimestampType => "NoTimestampType",
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

/// One record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its absolute offset.
    pub offset: i64,
    /// Its timestamp (ms; -1 for [`TimestampType::NoTimestampType`]).
    pub timestamp: i64,
    /// What its timestamp is.
    pub timestamp_type: TimestampType,
    /// Its key, `None` for a null key.
    pub key: Option<Vec<u8>>,
    /// Its value, `None` for a null value (a tombstone).
    pub value: Option<Vec<u8>>,
    /// Its headers, in order (none before message format v2); a header value may be null.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

impl Record {
    /// The memory the record holds: its own size, its key's, value's and headers' bytes. What
    /// [`DecodeLimits::max_batch_bytes`] bounds for a batch's decoded records.
    pub fn footprint(&self) -> usize {
        let header = std::mem::size_of::<(String, Option<Vec<u8>>)>();
        let headers: usize = self.headers.iter().map(|(k, v)| header + k.len() + v.as_ref().map_or(0, Vec::len)).sum();
        std::mem::size_of::<Record>()
            + self.key.as_ref().map_or(0, Vec::len)
            + self.value.as_ref().map_or(0, Vec::len)
            + headers
    }
}

/// The memory a batch's decoded records take so far, against [`DecodeLimits::max_batch_bytes`].
struct RecordBudget<'a> {
    used: usize,
    limit: usize,
    what: &'a str,
}

impl<'a> RecordBudget<'a> {
    fn new(limits: &DecodeLimits, what: &'a str) -> Self {
        RecordBudget { used: 0, limit: limits.max_batch_bytes, what }
    }

    /// How many records a vector may be made for at once: never more than the budget could hold.
    fn capacity(&self, wanted: usize) -> usize {
        wanted.min(self.limit / std::mem::size_of::<Record>())
    }

    /// Counts `r`; an error naming the batch once the records take more than the limit.
    fn charge(&mut self, r: &Record) -> Result<()> {
        self.used = self.used.saturating_add(r.footprint());
        if self.used > self.limit {
            return Err(Error::invalid(format!(
                "{}: its decoded records take more than {} bytes of memory, the most one batch may take; raise \
                 DecodeLimits::max_batch_bytes to decode it",
                self.what, self.limit
            )));
        }
        Ok(())
    }
}

/// A control batch's marker (the type in its control record's key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlType {
    /// 0: the transaction was aborted.
    Abort,
    /// 1: the transaction was committed.
    Commit,
    /// Any other type (KRaft's own markers, or one not known yet).
    Unknown(i16),
}

/// Kafka's `message.max.bytes` defaults to about 1 MiB (1048588), and a batch is at most that compressed;
/// 64 times as much leaves room for the compression ratios of real data (text and JSON compress 5-20x,
/// repetitive data more) while a compressed bomb stops at a size a tool can hold.
pub const DEFAULT_MAX_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// Decompression bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// The most bytes one batch may inflate to (its decompressed records section, or a legacy wrapper's
    /// message set), and separately the most memory its decoded records may take ([`Record::footprint`]:
    /// many tiny records take several times their bytes); past either, decoding the batch is an error that
    /// names it.
    pub max_batch_bytes: usize,
}

impl Default for DecodeLimits {
    /// [`DEFAULT_MAX_BATCH_BYTES`].
    fn default() -> Self {
        DecodeLimits { max_batch_bytes: DEFAULT_MAX_BATCH_BYTES }
    }
}

/// A decoded batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedBatch {
    /// Its first offset (a legacy wrapper's: its first inner record's).
    pub base_offset: i64,
    /// Its last offset (a legacy wrapper's: its own offset, as Kafka gives it).
    pub last_offset: i64,
    /// Its message format: 0, 1 or 2.
    pub magic: u8,
    /// The producer id (-1 for none, and for legacy messages).
    pub producer_id: i64,
    /// The producer epoch (-1 for none, and for legacy messages).
    pub producer_epoch: i16,
    /// Whether the batch belongs to a transaction (always false for legacy messages).
    pub transactional: bool,
    /// For a control batch, its marker (and then [`DecodedBatch::records`] is empty).
    pub control: Option<ControlType>,
    /// Its data records, in order.
    pub records: Vec<Record>,
}

/// Decodes a whole batch (from [`BatchIter`](crate::format::batch::BatchIter)), decompressing it within
/// `limits`. A control batch gives `control` (the type in its first control record's key: version i16,
/// type i16) and no records. A legacy message gives producer id and epoch -1, not transactional, no
/// control. Damaged bytes are corrupt; a batch that inflates past [`DecodeLimits::max_batch_bytes`] is an
/// error naming its offset, codec and the limit.
pub fn decode_batch(batch: &Batch<'_>, limits: &DecodeLimits) -> Result<DecodedBatch> {
    match batch.magic() {
        0 | 1 => legacy::decode(batch, limits),
        2 => v2::decode(batch, limits),
        m => Err(Error::corrupt(format!("batch at offset {}: unknown magic {m}", batch.base_offset()))),
    }
}
