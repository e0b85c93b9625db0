//! The records of a v2 record batch (message format 2), after decompression, and its control marker.
//!
//! The records section follows the 61-byte header: `recordCount` records, each a varint length then
//! attributes i8, timestampDelta varlong, offsetDelta varint, key and value (varint length, -1 for null),
//! a varint header count and the headers (a key that is never null, a nullable value). Every length is
//! checked against the bytes that remain before anything is taken, and nothing is allocated by the
//! untrusted record count beyond what the bytes can hold.

use super::compression::{Codec, decompress};
use super::{ControlType, DecodeLimits, DecodedBatch, Record, RecordBudget, TimestampType};
use crate::error::{Error, Result};
use crate::format::batch::{Batch, V2_HEADER_LEN};
use crate::format::codec::Reader;
use std::borrow::Cow;

/// The attributes' codec bits.
const CODEC_MASK: i16 = 0x07;
/// The attributes' timestamp-type bit: 1 is LogAppendTime.
pub(crate) const TIMESTAMP_TYPE_BIT: i16 = 0x08;
/// The attributes' transactional bit.
pub(crate) const TRANSACTIONAL_BIT: i16 = 0x10;
/// The attributes' control bit: a transaction marker, not data.
pub(crate) const CONTROL_BIT: i16 = 0x20;
/// The fewest bytes a record takes: its length, attributes, both deltas, null key and value, no headers.
const MIN_RECORD_BYTES: usize = 7;

/// Whether the batch is a control batch (a transaction marker): a v2 batch with the control bit.
pub fn is_control(batch: &Batch<'_>) -> bool {
    batch.magic() >= 2 && batch.attributes() & CONTROL_BIT != 0
}

/// The header fields of a v2 batch that the records need.
struct Header {
    base_offset: i64,
    attributes: i16,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    count: i32,
}

fn header(r: &mut Reader<'_>) -> Result<Header> {
    let base_offset = r.i64()?;
    r.bytes(9)?; // length, partition leader epoch, magic
    r.u32()?; // crc
    let attributes = r.i16()?;
    r.i32()?; // last offset delta
    let base_timestamp = r.i64()?;
    let max_timestamp = r.i64()?;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    r.i32()?; // base sequence
    let count = r.i32()?;
    Ok(Header { base_offset, attributes, base_timestamp, max_timestamp, producer_id, producer_epoch, count })
}

/// Decodes a v2 batch: decompresses its records section (within `limits`) and parses every record.
pub(super) fn decode(batch: &Batch<'_>, limits: &DecodeLimits) -> Result<DecodedBatch> {
    let what = format!("batch at offset {}", batch.base_offset());
    let mut r = Reader::new(batch.bytes(), &what);
    let h = header(&mut r)?;
    debug_assert_eq!(r.position(), V2_HEADER_LEN);
    let section = r.bytes(r.remaining())?;
    let codec_id = (h.attributes & CODEC_MASK) as u8;
    let section: Cow<'_, [u8]> = if codec_id == 0 {
        Cow::Borrowed(section)
    } else {
        let codec = Codec::from_id(codec_id)
            .ok_or_else(|| Error::corrupt(format!("{what}: unknown compression codec {codec_id}")))?;
        Cow::Owned(decompress(codec, section, limits.max_batch_bytes, &what)?)
    };
    let records = records(&h, &section, &what, limits)?;
    let control = if h.attributes & CONTROL_BIT != 0 {
        let first =
            records.first().ok_or_else(|| Error::corrupt(format!("{what}: a control batch without a record")))?;
        Some(control_type(first.key.as_deref(), &what)?)
    } else {
        None
    };
    Ok(DecodedBatch {
        base_offset: h.base_offset,
        last_offset: batch.last_offset(),
        magic: 2,
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        transactional: h.attributes & TRANSACTIONAL_BIT != 0,
        records: if control.is_some() { Vec::new() } else { records },
        control,
    })
}

/// A control record's key (version i16, type i16), as Kafka's `ControlRecordType.parse` reads it: a newer
/// version is read as version 0, a negative one is corrupt.
fn control_type(key: Option<&[u8]>, what: &str) -> Result<ControlType> {
    let key = key.unwrap_or_default();
    let (Some(version), Some(kind)) = (key.get(0..2), key.get(2..4)) else {
        return Err(Error::corrupt(format!("{what}: control record key of {} bytes, fewer than 4", key.len())));
    };
    let version = i16::from_be_bytes([version[0], version[1]]);
    if version < 0 {
        return Err(Error::corrupt(format!("{what}: control record key version {version}")));
    }
    Ok(match i16::from_be_bytes([kind[0], kind[1]]) {
        0 => ControlType::Abort,
        1 => ControlType::Commit,
        other => ControlType::Unknown(other),
    })
}

/// A nullable bytes field: a varint length (negative for null) then the bytes.
fn bytes_field(r: &mut Reader<'_>, name: &str) -> Result<Option<Vec<u8>>> {
    let len = r.varint()?;
    if len < 0 {
        return Ok(None);
    }
    let n = len as usize;
    if n > r.remaining() {
        return Err(r.error(format_args!("{name} length {len} is beyond the {} bytes that remain", r.remaining())));
    }
    Ok(Some(r.bytes(n)?.to_vec()))
}

/// The `h.count` records of `section`, which must hold exactly them.
fn records(h: &Header, section: &[u8], what: &str, limits: &DecodeLimits) -> Result<Vec<Record>> {
    let mut budget = RecordBudget::new(limits, what);
    let mut r = Reader::new(section, what);
    if h.count < 0 {
        return Err(r.error(format_args!("record count {}", h.count)));
    }
    let count = h.count as usize;
    let log_append_time = h.attributes & TIMESTAMP_TYPE_BIT != 0;
    let timestamp_type = if log_append_time { TimestampType::LogAppendTime } else { TimestampType::CreateTime };
    // Never allocate by a count the bytes cannot hold.
    let mut out = Vec::with_capacity(budget.capacity(count.min(section.len() / MIN_RECORD_BYTES)));
    for i in 0..count {
        let len = r.varint()?;
        if len < 0 || len as usize > r.remaining() {
            return Err(r.error(format_args!("record {i} has length {len} with {} bytes left", r.remaining())));
        }
        let mut b = Reader::new(r.bytes(len as usize)?, what);
        let _attributes = b.u8()?;
        let timestamp_delta = b.varlong()?;
        let offset_delta = b.varint()?;
        let offset = h.base_offset.checked_add(i64::from(offset_delta)).ok_or_else(|| {
            b.error(format_args!("record {i}: offset delta {offset_delta} overflows the base offset"))
        })?;
        let timestamp = if log_append_time { h.max_timestamp } else { h.base_timestamp.wrapping_add(timestamp_delta) };
        let key = bytes_field(&mut b, "key")?;
        let value = bytes_field(&mut b, "value")?;
        let n = b.varint()?;
        // Every header takes at least 2 bytes (its key and value lengths).
        if n < 0 || n as usize > b.remaining() / 2 {
            return Err(b.error(format_args!("header count {n} with {} bytes left", b.remaining())));
        }
        let mut headers = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let k = bytes_field(&mut b, "header key")?.ok_or_else(|| b.error("a header key is null"))?;
            // Kafka reads header keys as UTF-8 with replacement, never failing.
            headers.push((String::from_utf8_lossy(&k).into_owned(), bytes_field(&mut b, "header value")?));
        }
        if b.remaining() != 0 {
            return Err(b.error(format_args!("record {i} has {} bytes after its last header", b.remaining())));
        }
        let record = Record { offset, timestamp, timestamp_type, key, value, headers };
        budget.charge(&record)?;
        out.push(record);
    }
    if r.remaining() != 0 {
        return Err(r.error(format_args!("{} bytes after its {count} records", r.remaining())));
    }
    Ok(out)
}
