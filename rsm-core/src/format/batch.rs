//! A zero-copy iterator over Kafka record batches (message format v2), verifying CRC-32C.
//!
//! Layout (all big-endian): baseOffset i64, batchLength i32 (bytes after this field), partitionLeaderEpoch
//! i32, magic i8, crc u32 (CRC-32C of everything from attributes to the end), attributes i16,
//! lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64, producerId i64, producerEpoch i16,
//! baseSequence i32, recordCount i32, then the records. Magic 0 and 1 message sets are refused with an
//! error that says so.

use crate::error::{Error, Result};

/// Bytes before `batchLength` counts: the base offset and the length itself.
pub const LOG_OVERHEAD: usize = 12;
/// The v2 batch header size.
pub const V2_HEADER_LEN: usize = 61;
/// Offset of the magic byte.
pub const MAGIC_OFFSET: usize = 16;
/// Offset of the CRC field.
pub const CRC_OFFSET: usize = 17;
/// Offset of the attributes field, where the CRC's coverage starts.
pub const ATTRIBUTES_OFFSET: usize = 21;

/// A view of one whole record batch.
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    bytes: &'a [u8],
    position: u64,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

impl<'a> Batch<'a> {
    /// The whole batch, header included.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// Byte position of the batch in its segment.
    pub fn position(&self) -> u64 {
        self.position
    }
    /// Total size in bytes.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }
    /// First offset.
    pub fn base_offset(&self) -> i64 {
        be_i64(self.bytes, 0)
    }
    /// Last offset (base offset + lastOffsetDelta).
    pub fn last_offset(&self) -> i64 {
        self.base_offset() + be_i32(self.bytes, 23) as i64
    }
    /// The partition leader epoch that wrote it.
    pub fn partition_leader_epoch(&self) -> i32 {
        be_i32(self.bytes, 12)
    }
    /// The stored CRC.
    pub fn stored_crc(&self) -> u32 {
        u32::from_be_bytes(self.bytes[CRC_OFFSET..ATTRIBUTES_OFFSET].try_into().expect("4 bytes"))
    }
    /// The attributes (compression in the low 3 bits, timestamp type, transactional, control).
    pub fn attributes(&self) -> i16 {
        i16::from_be_bytes(self.bytes[21..23].try_into().expect("2 bytes"))
    }
    /// The first record's timestamp.
    pub fn base_timestamp(&self) -> i64 {
        be_i64(self.bytes, 27)
    }
    /// The largest record timestamp.
    pub fn max_timestamp(&self) -> i64 {
        be_i64(self.bytes, 35)
    }
    /// The number of records.
    pub fn record_count(&self) -> i32 {
        be_i32(self.bytes, 57)
    }
    /// The CRC-32C computed over the covered bytes.
    pub fn computed_crc(&self) -> u32 {
        crc32c::crc32c(&self.bytes[ATTRIBUTES_OFFSET..])
    }
    /// Fails with "corrupt", naming the offset and position, when the stored CRC does not match.
    pub fn verify_crc(&self) -> Result<u32> {
        let computed = self.computed_crc();
        if computed != self.stored_crc() {
            return Err(Error::corrupt(format!(
                "record batch at offset {} (position {}) has CRC {:#010x}, computed {:#010x}",
                self.base_offset(),
                self.position,
                self.stored_crc(),
                computed
            )));
        }
        Ok(computed)
    }
}

/// What the header says about the batch starting at the front of `buf`: its total size, or an error when
/// the bytes cannot be a v2 batch. `Ok(None)` means `buf` is too short to tell.
pub fn batch_size_at(buf: &[u8], position: u64) -> Result<Option<usize>> {
    if buf.len() < MAGIC_OFFSET + 1 {
        return Ok(None);
    }
    let base_offset = be_i64(buf, 0);
    let length = be_i32(buf, 8);
    let magic = buf[MAGIC_OFFSET] as i8;
    if magic != 2 {
        return Err(if magic == 0 || magic == 1 {
            Error::invalid(format!(
                "message format v{magic} (magic {magic}) at offset {base_offset}, position {position}: \
                 only record batches of magic 2 (Kafka 0.11+) are supported; convert old segments first"
            ))
        } else {
            Error::corrupt(format!("unknown magic {magic} at position {position} (offset field {base_offset})"))
        });
    }
    if (length as i64) < (V2_HEADER_LEN - LOG_OVERHEAD) as i64 {
        return Err(Error::corrupt(format!(
            "record batch at offset {base_offset} (position {position}) has length {length}, below the v2 header size"
        )));
    }
    Ok(Some(LOG_OVERHEAD + length as usize))
}

/// Iterates the batches of a byte slice that starts on a batch boundary.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    buf: &'a [u8],
    pos: usize,
    base_position: u64,
    verify: bool,
}

impl<'a> BatchIter<'a> {
    /// Iterates `buf`, whose first byte is at `base_position` in the segment; `verify` checks each CRC.
    pub fn new(buf: &'a [u8], base_position: u64, verify: bool) -> Self {
        BatchIter { buf, pos: 0, base_position, verify }
    }

    /// Bytes of `buf` consumed by whole batches so far.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    /// The next whole batch, `Ok(None)` at a clean end, or `Ok(None)` with [`BatchIter::consumed`] short of
    /// the end when the rest is a partial batch (see [`BatchIter::next_complete`]).
    pub fn next_complete(&mut self) -> Result<Option<Batch<'a>>> {
        let rest = &self.buf[self.pos..];
        if rest.is_empty() {
            return Ok(None);
        }
        let position = self.base_position + self.pos as u64;
        let Some(size) = batch_size_at(rest, position)? else {
            return Ok(None);
        };
        if rest.len() < size.max(V2_HEADER_LEN) {
            return Ok(None);
        }
        let batch = Batch { bytes: &rest[..size], position };
        if self.verify {
            batch.verify_crc()?;
        }
        self.pos += size;
        Ok(Some(batch))
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<Batch<'a>>;

    /// Whole batches; a trailing partial batch is a "corrupt" error naming its position.
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_complete() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) if self.pos == self.buf.len() => None,
            Ok(None) => {
                let position = self.base_position + self.pos as u64;
                self.pos = self.buf.len();
                Some(Err(Error::corrupt(format!("truncated record batch at position {position}"))))
            }
            Err(e) => {
                self.pos = self.buf.len();
                Some(Err(e))
            }
        }
    }
}
