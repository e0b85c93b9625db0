//! The records of legacy messages (magic 0 and 1). A plain message is one record. A compressed *wrapper*
//! is opened and its inner messages are given with absolute offsets and timestamps, exactly as Kafka's
//! `AbstractLegacyRecordBatch.DeepRecordsIterator` gives them:
//!
//! - offsets: a magic-1 wrapper's inner offsets are relative (0, 1, ...), and the wrapper's own offset is
//!   the last one's absolute offset, so absolute = wrapper offset - last inner offset + inner offset (a
//!   wrapper offset of 0, as some librdkafka versions produced, gives base 0); a magic-0 wrapper's inner
//!   offsets are absolute already;
//! - timestamps: a v0 message has none (-1, `NoTimestampType`); an inner v1 message takes the wrapper's
//!   timestamp type, and with log-append time (attribute bit 3) the wrapper's timestamp too;
//! - an inner message that is itself compressed is an error (Kafka: "Inner messages must not be
//!   compressed"), and so is a wrapper with no inner message or a zstd wrapper (zstd is v2 only);
//! - a partial message at the end of the decompressed set ends it, as Kafka's `DataLogInputStream` does.
//!
//! Each inner message's CRC-32 is checked, as a consumer does with `check.crcs` (its default).

use super::compression::{Codec, decompress, lz4_magic0};
use super::{DecodeLimits, DecodedBatch, Record, RecordBudget, TimestampType};
use crate::error::{Error, Result};
use crate::format::batch::{Batch, LOG_OVERHEAD, NO_TIMESTAMP};
use crate::format::codec::Reader;

/// The attributes' codec bits.
const CODEC_MASK: u8 = 0x07;
/// The attributes' timestamp-type bit (magic 1): 1 is LogAppendTime.
const TIMESTAMP_TYPE_BIT: u8 = 0x08;
/// Kafka's smallest message after its offset and size: crc, magic, attributes, key and value lengths.
const MIN_MESSAGE_SIZE: i32 = 14;

/// One legacy message, borrowed from its bytes.
struct Message<'a> {
    offset: i64,
    magic: u8,
    attributes: u8,
    /// Its own timestamp field ([`NO_TIMESTAMP`] for magic 0).
    timestamp: i64,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
}

impl Message<'_> {
    /// Its timestamp type as a shallow (outer) message: none for v0, else its attribute bit.
    fn own_timestamp_type(&self) -> TimestampType {
        match (self.magic, self.attributes & TIMESTAMP_TYPE_BIT != 0) {
            (0, _) => TimestampType::NoTimestampType,
            (_, true) => TimestampType::LogAppendTime,
            (_, false) => TimestampType::CreateTime,
        }
    }

    fn record(&self, offset: i64, timestamp: i64, timestamp_type: TimestampType) -> Record {
        Record {
            offset,
            timestamp,
            timestamp_type,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            headers: Vec::new(),
        }
    }
}

fn nullable<'a>(r: &mut Reader<'a>, name: &str) -> Result<Option<&'a [u8]>> {
    let len = r.i32()?;
    if len < 0 {
        return Ok(None);
    }
    if len as usize > r.remaining() {
        return Err(r.error(format_args!("{name} length {len} is beyond the {} bytes that remain", r.remaining())));
    }
    r.bytes(len as usize).map(Some)
}

/// Parses one whole message (offset, size, crc, magic, attributes, [timestamp], key, value); `check_crc`
/// checks its CRC-32 (from the magic to the end).
fn message<'a>(bytes: &'a [u8], what: &'a str, check_crc: bool) -> Result<Message<'a>> {
    let mut r = Reader::new(bytes, what);
    let offset = r.i64()?;
    r.i32()?; // size: the caller cut `bytes` by it
    let crc = r.u32()?;
    if check_crc {
        let computed = crc32fast::hash(bytes.get(LOG_OVERHEAD + 4..).unwrap_or_default());
        if computed != crc {
            return Err(
                r.error(format_args!("message at offset {offset} has CRC-32 {crc:#010x}, computed {computed:#010x}"))
            );
        }
    }
    let magic = r.u8()?;
    if magic > 1 {
        return Err(r.error(format_args!("message at offset {offset} has magic {magic} inside a message set")));
    }
    let attributes = r.u8()?;
    let timestamp = if magic == 1 { r.i64()? } else { NO_TIMESTAMP };
    let key = nullable(&mut r, "key")?;
    let value = nullable(&mut r, "value")?;
    Ok(Message { offset, magic, attributes, timestamp, key, value })
}

/// Decodes a legacy message: a plain message as its one record, a wrapper as its inner messages.
pub(super) fn decode(batch: &Batch<'_>, limits: &DecodeLimits) -> Result<DecodedBatch> {
    let what = format!("batch at offset {}", batch.base_offset());
    let outer = message(batch.bytes(), &what, false)?;
    let mut decoded = DecodedBatch {
        base_offset: outer.offset,
        last_offset: outer.offset,
        magic: outer.magic,
        producer_id: -1,
        producer_epoch: -1,
        transactional: false,
        control: None,
        records: Vec::new(),
    };
    let codec_id = outer.attributes & CODEC_MASK;
    if codec_id == 0 {
        decoded.records.push(outer.record(outer.offset, outer.timestamp, outer.own_timestamp_type()));
        return Ok(decoded);
    }
    let codec = match Codec::from_id(codec_id) {
        Some(Codec::Zstd) | None => {
            return Err(Error::corrupt(format!(
                "{what}: a message (magic {}) with compression codec {codec_id}, which Kafka refuses",
                outer.magic
            )));
        }
        Some(c) => c,
    };
    let value = outer.value.ok_or_else(|| Error::corrupt(format!("{what}: a compressed message without a value")))?;
    let inner = if codec == Codec::Lz4 && outer.magic == 0 {
        lz4_magic0(value, limits.max_batch_bytes, &what)?
    } else {
        decompress(codec, value, limits.max_batch_bytes, &what)?
    };
    let messages = inner_messages(&inner, &what)?;
    let Some(last) = messages.last() else {
        return Err(Error::corrupt(format!("{what}: a compressed message set with no inner message")));
    };
    // Kafka's absoluteBaseOffset: inner offsets of a magic-1 wrapper are relative to it.
    let base =
        match (outer.magic, outer.offset) {
            (0, _) => None,
            (_, 0) => Some(0),
            (_, wrapper) => {
                if wrapper < last.offset {
                    return Err(Error::corrupt(format!(
                        "{what}: wrapper offset {wrapper} is below its last inner offset {}",
                        last.offset
                    )));
                }
                Some(wrapper.checked_sub(last.offset).ok_or_else(|| {
                    Error::corrupt(format!("{what}: inner offset {} gives no base offset", last.offset))
                })?)
            }
        };
    let wrapper_type = outer.own_timestamp_type();
    let mut budget = RecordBudget::new(limits, &what);
    decoded.records.reserve_exact(budget.capacity(messages.len()));
    for m in &messages {
        if m.attributes & CODEC_MASK != 0 {
            return Err(Error::corrupt(format!(
                "{what}: inner message at offset {} is compressed too (Kafka refuses nested wrappers)",
                m.offset
            )));
        }
        let offset = match base {
            None => m.offset,
            Some(b) => b
                .checked_add(m.offset)
                .ok_or_else(|| Error::corrupt(format!("{what}: inner offset {} overflows base {b}", m.offset)))?,
        };
        let (timestamp, timestamp_type) = match (m.magic, wrapper_type) {
            (0, _) => (NO_TIMESTAMP, TimestampType::NoTimestampType),
            (_, TimestampType::LogAppendTime) => (outer.timestamp, TimestampType::LogAppendTime),
            (_, t) => (m.timestamp, t),
        };
        let record = m.record(offset, timestamp, timestamp_type);
        budget.charge(&record)?;
        decoded.records.push(record);
    }
    decoded.base_offset = decoded.records.first().map_or(outer.offset, |r| r.offset);
    Ok(decoded)
}

/// The messages of a decompressed message set, as Kafka's `DataLogInputStream` reads them.
fn inner_messages<'a>(set: &'a [u8], what: &'a str) -> Result<Vec<Message<'a>>> {
    let mut out = Vec::new();
    let mut rest = set;
    while rest.len() >= LOG_OVERHEAD {
        let offset = i64::from_be_bytes(rest[..8].try_into().expect("8 bytes"));
        let size = i32::from_be_bytes(rest[8..12].try_into().expect("4 bytes"));
        if size < MIN_MESSAGE_SIZE {
            return Err(Error::corrupt(format!(
                "{what}: inner message at offset {offset} has size {size}, below the minimum {MIN_MESSAGE_SIZE}"
            )));
        }
        let end = LOG_OVERHEAD + size as usize;
        let Some(bytes) = rest.get(..end) else { break };
        out.push(message(bytes, what, true)?);
        rest = &rest[end..];
    }
    Ok(out)
}
