//! A zero-copy iterator over the batches of a Kafka log: record batches (message format v2) and the legacy
//! message sets (magic 0 and 1) that a cluster upgraded from before Kafka 0.11 still holds, mixed in one
//! segment as an upgrade leaves them. Every length read from the bytes is checked against what the buffer
//! holds before it is used.
//!
//! Both start with the same 17 bytes (big-endian): offset i64, length i32 (bytes after this field), then a
//! field of 4 bytes and the magic i8. After that:
//! - **v2** (the 4 bytes are partitionLeaderEpoch i32): magic, crc u32 (CRC-32C of everything from
//!   attributes to the end), attributes i16, lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64,
//!   producerId i64, producerEpoch i16, baseSequence i32, recordCount i32, then the records;
//! - **v0 / v1** (a message; the 4 bytes are its crc u32, CRC-32 (IEEE) of everything from the magic to the
//!   end): magic, attributes i8, (v1 only) timestamp i64, key (i32 length, -1 for none, then bytes), value
//!   (the same). A message whose attributes name a codec is a *wrapper*: its value is a compressed message
//!   set, its offset is the offset of the last message inside, and (v1) its timestamp the largest inside
//!   (or the log-append time). Wrappers are the unit here, as Kafka serves them: never opened.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// Bytes before `length` counts: the offset and the length itself.
pub const LOG_OVERHEAD: usize = 12;
/// The v2 batch header size.
pub const V2_HEADER_LEN: usize = 61;
/// Offset of the magic byte, the same in every format.
pub const MAGIC_OFFSET: usize = 16;
/// Offset of the CRC field (v2).
pub const CRC_OFFSET: usize = 17;
/// Offset of the attributes field, where the CRC's coverage starts (v2).
pub const ATTRIBUTES_OFFSET: usize = 21;
/// Offset of a legacy message's CRC field.
const LEGACY_CRC_OFFSET: usize = 12;
/// Offset of a legacy message's attributes byte.
const LEGACY_ATTRIBUTES_OFFSET: usize = 17;
/// Offset of a v1 message's timestamp.
const V1_TIMESTAMP_OFFSET: usize = 18;
/// The smallest legacy message of each magic: its header, then the key and value lengths.
const fn legacy_header_len(magic: u8) -> usize {
    if magic == 0 { 26 } else { 34 }
}
/// Kafka's "no timestamp" (message format v0).
pub const NO_TIMESTAMP: i64 = -1;
/// Kafka's "no partition leader epoch" (message formats v0 and v1).
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;

/// A view of one whole batch: a v2 record batch, or a v0 / v1 message (a compressed wrapper counts as one).
/// Only [`BatchIter`] makes one, after checking its lengths, so every accessor reads inside the bytes.
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
    /// The message format: 2 for a record batch, 0 or 1 for a legacy message.
    pub fn magic(&self) -> u8 {
        self.bytes[MAGIC_OFFSET]
    }
    fn legacy(&self) -> bool {
        self.magic() < 2
    }
    /// The compression codec (the attributes' low 3 bits): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd (v2).
    pub fn compression(&self) -> u8 {
        (self.attributes() & 0x07) as u8
    }
    /// A legacy message whose value is a compressed message set: its own offset is its last message's, and
    /// its first offset is known only inside the compressed bytes.
    pub fn is_legacy_wrapper(&self) -> bool {
        self.legacy() && self.compression() != 0
    }
    /// The first offset; for a legacy wrapper ([`Batch::is_legacy_wrapper`]), its own offset, which is its
    /// last message's.
    pub fn base_offset(&self) -> i64 {
        be_i64(self.bytes, 0)
    }
    /// The last offset: base offset + lastOffsetDelta (v2; checked not to overflow when the batch was read),
    /// or the message's own offset (legacy).
    pub fn last_offset(&self) -> i64 {
        if self.legacy() { self.base_offset() } else { self.base_offset().wrapping_add(be_i32(self.bytes, 23) as i64) }
    }
    /// The partition leader epoch that wrote it; [`NO_PARTITION_LEADER_EPOCH`] for a legacy message.
    pub fn partition_leader_epoch(&self) -> i32 {
        if self.legacy() { NO_PARTITION_LEADER_EPOCH } else { be_i32(self.bytes, 12) }
    }
    /// The stored CRC (CRC-32C for v2, CRC-32 for a legacy message).
    pub fn stored_crc(&self) -> u32 {
        let at = if self.legacy() { LEGACY_CRC_OFFSET } else { CRC_OFFSET };
        u32::from_be_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes"))
    }
    /// The attributes (compression in the low 3 bits; v2: timestamp type, transactional, control; legacy:
    /// bit 3 is the timestamp type).
    pub fn attributes(&self) -> i16 {
        if self.legacy() {
            self.bytes[LEGACY_ATTRIBUTES_OFFSET] as i8 as i16
        } else {
            i16::from_be_bytes(self.bytes[21..23].try_into().expect("2 bytes"))
        }
    }
    /// The first record's timestamp (v2), the message's (v1), [`NO_TIMESTAMP`] (v0).
    pub fn base_timestamp(&self) -> i64 {
        match self.magic() {
            0 => NO_TIMESTAMP,
            1 => be_i64(self.bytes, V1_TIMESTAMP_OFFSET),
            _ => be_i64(self.bytes, 27),
        }
    }
    /// The largest record timestamp (v2), the message's (v1: a wrapper's is its largest), [`NO_TIMESTAMP`]
    /// (v0).
    pub fn max_timestamp(&self) -> i64 {
        match self.magic() {
            0 => NO_TIMESTAMP,
            1 => be_i64(self.bytes, V1_TIMESTAMP_OFFSET),
            _ => be_i64(self.bytes, 35),
        }
    }
    /// The producer id (v2), -1 (no producer) for a legacy message.
    pub fn producer_id(&self) -> i64 {
        if self.legacy() { -1 } else { be_i64(self.bytes, 43) }
    }
    /// The number of records: the v2 field, 1 for a plain legacy message, -1 for a legacy wrapper (its count
    /// is inside the compressed bytes).
    pub fn record_count(&self) -> i32 {
        match (self.legacy(), self.is_legacy_wrapper()) {
            (false, _) => be_i32(self.bytes, 57),
            (true, false) => 1,
            (true, true) => -1,
        }
    }
    /// The CRC computed over the covered bytes: CRC-32C from the attributes (v2), CRC-32 from the magic
    /// (legacy).
    pub fn computed_crc(&self) -> u32 {
        if self.legacy() {
            crc32fast::hash(&self.bytes[MAGIC_OFFSET..])
        } else {
            crate::checksum::crc32c(&self.bytes[ATTRIBUTES_OFFSET..])
        }
    }
    /// Fails with "corrupt", naming the offset and position, when the stored CRC does not match.
    pub fn verify_crc(&self) -> Result<u32> {
        let computed = self.computed_crc();
        if computed != self.stored_crc() {
            let (what, crc) = if self.legacy() {
                (format!("message (magic {})", self.magic()), "CRC-32")
            } else {
                ("record batch".to_string(), "CRC-32C")
            };
            return Err(Error::corrupt(format!(
                "{what} at offset {} (position {}) has {crc} {:#010x}, computed {:#010x}",
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
/// the bytes cannot be a batch of any format. `Ok(None)` means `buf` is too short to tell.
pub fn batch_size_at(buf: &[u8], position: u64) -> Result<Option<usize>> {
    if buf.len() < MAGIC_OFFSET + 1 {
        return Ok(None);
    }
    let base_offset = be_i64(buf, 0);
    let length = be_i32(buf, 8);
    let magic = buf[MAGIC_OFFSET];
    let (min, what) = match magic {
        0 | 1 => (legacy_header_len(magic), format!("message (magic {magic})")),
        2 => (V2_HEADER_LEN, "record batch".to_string()),
        m => {
            return Err(Error::corrupt(format!(
                "unknown magic {} at position {position} (offset field {base_offset})",
                m as i8
            )));
        }
    };
    if (length as i64) < (min - LOG_OVERHEAD) as i64 {
        return Err(Error::corrupt(format!(
            "{what} at offset {base_offset} (position {position}) has length {length}, below its header size \
             {}",
            min - LOG_OVERHEAD
        )));
    }
    Ok(Some(LOG_OVERHEAD + length as usize))
}

/// Checks what a whole batch's header says beyond its length: a v2 batch's last offset must not overflow,
/// a legacy message's key and value must fit inside it (and a wrapper must have a value).
fn check_structure(b: &[u8], position: u64) -> Result<()> {
    let magic = b[MAGIC_OFFSET];
    let base_offset = be_i64(b, 0);
    if magic == 2 {
        let delta = be_i32(b, 23);
        if delta < 0 || base_offset.checked_add(delta as i64).is_none() {
            return Err(Error::corrupt(format!(
                "record batch at offset {base_offset} (position {position}) has last offset delta {delta}, \
                 which gives no valid last offset"
            )));
        }
        return Ok(());
    }
    let field = |at: usize, name: &str| -> Result<(i32, usize)> {
        if at + 4 > b.len() {
            return Err(Error::corrupt(format!(
                "message (magic {magic}) at offset {base_offset} (position {position}): no room for its {name} length"
            )));
        }
        let len = be_i32(b, at);
        let end = at as u64 + 4 + len.max(0) as u64;
        if len < -1 || end > b.len() as u64 {
            return Err(Error::corrupt(format!(
                "message (magic {magic}) at offset {base_offset} (position {position}): its {name} length {len} \
                 does not fit its {} bytes",
                b.len()
            )));
        }
        Ok((len, end as usize))
    };
    let (_, at) = field(legacy_header_len(magic) - 8, "key")?;
    let (value, _) = field(at, "value")?;
    if value < 0 && b[LEGACY_ATTRIBUTES_OFFSET] & 0x07 != 0 {
        return Err(Error::corrupt(format!(
            "message (magic {magic}) at offset {base_offset} (position {position}) is compressed but has no value"
        )));
    }
    Ok(())
}

/// Reads the first `len` bytes of the log file at `path` in blocks and calls `f` with every batch, in
/// order, after checking it (its CRC too when `verify`); the file must hold exactly whole batches there.
/// Memory: one 1 MiB block, or one batch when a batch is larger (never more than the file holds).
pub fn scan_file(path: &Path, len: u64, verify: bool, mut f: impl FnMut(&Batch<'_>)) -> Result<()> {
    let io_err = |e: std::io::Error| Error::from_io(path.display(), e);
    const BLOCK: usize = 1 << 20;
    let mut file = std::fs::File::open(path).map_err(io_err)?.take(len);
    let mut buf = vec![0u8; BLOCK];
    let (mut filled, mut file_pos, mut read_total) = (0usize, 0u64, 0u64);
    loop {
        while filled < buf.len() && read_total < len {
            let n = file.read(&mut buf[filled..]).map_err(io_err)?;
            if n == 0 {
                return Err(Error::invalid(format!(
                    "{}: ended after {read_total} bytes, expected {len}",
                    path.display()
                )));
            }
            filled += n;
            read_total += n as u64;
        }
        let mut it = BatchIter::new(&buf[..filled], file_pos, verify);
        while let Some(b) = it.next_complete()? {
            f(&b);
        }
        let consumed = it.consumed();
        if consumed == 0 && filled == buf.len() {
            // One batch larger than the buffer: grow to hold it, once the file is known to hold that much.
            let need = batch_size_at(&buf[..filled], file_pos)?.expect("a full buffer holds a header");
            let left = len - file_pos;
            if need as u64 > left {
                return Err(Error::corrupt(format!(
                    "the batch at position {file_pos} declares {need} bytes, past the end: {left} bytes remain"
                )));
            }
            buf.resize(need, 0);
            continue;
        }
        buf.copy_within(consumed..filled, 0);
        filled -= consumed;
        file_pos += consumed as u64;
        if read_total == len {
            if filled > 0 {
                // What the iterator says of the partial batch at the end (it names its declared size).
                return match BatchIter::new(&buf[..filled], file_pos, false).next() {
                    Some(Err(e)) => Err(e),
                    _ => Err(Error::corrupt(format!("truncated batch at position {file_pos}"))),
                };
            }
            return Ok(());
        }
    }
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
        let position = self.base_position.saturating_add(self.pos as u64);
        let Some(size) = batch_size_at(rest, position)? else {
            return Ok(None);
        };
        if rest.len() < size {
            return Ok(None);
        }
        let bytes = &rest[..size];
        check_structure(bytes, position)?;
        let batch = Batch { bytes, position };
        if self.verify {
            batch.verify_crc()?;
        }
        self.pos += size;
        Ok(Some(batch))
    }

    /// The error for the partial batch at the front of what is left.
    fn partial(&self) -> Error {
        let rest = &self.buf[self.pos..];
        let position = self.base_position.saturating_add(self.pos as u64);
        match batch_size_at(rest, position) {
            Ok(Some(size)) => Error::corrupt(format!(
                "the batch at position {position} declares {size} bytes, past the end: {} bytes remain",
                rest.len()
            )),
            Ok(None) => Error::corrupt(format!(
                "truncated batch at position {position}: {} bytes, fewer than a batch header",
                rest.len()
            )),
            Err(e) => e,
        }
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
                let e = self.partial();
                self.pos = self.buf.len();
                Some(Err(e))
            }
            Err(e) => {
                self.pos = self.buf.len();
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A legacy message as Kafka lays it out, with a valid CRC-32.
    fn message(magic: u8, offset: i64, attributes: u8, timestamp: i64, key: Option<&[u8]>, value: &[u8]) -> Vec<u8> {
        let mut body = vec![magic, attributes];
        if magic == 1 {
            body.extend_from_slice(&timestamp.to_be_bytes());
        }
        match key {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(k) => {
                body.extend_from_slice(&(k.len() as i32).to_be_bytes());
                body.extend_from_slice(k);
            }
        }
        body.extend_from_slice(&(value.len() as i32).to_be_bytes());
        body.extend_from_slice(value);
        let mut out = offset.to_be_bytes().to_vec();
        out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn legacy_messages_give_their_offsets_timestamps_and_crc() {
        let mut log = message(0, 5, 0, 0, Some(b"k"), b"v0");
        log.extend(message(1, 6, 0, 1_000, None, b"v1"));
        log.extend(message(1, 9, 1, 2_000, None, b"not really gzip"));
        let got: Vec<_> = BatchIter::new(&log, 100, true).map(|b| b.unwrap()).collect();
        let seen: Vec<_> = got
            .iter()
            .map(|b| (b.magic(), b.base_offset(), b.last_offset(), b.max_timestamp(), b.is_legacy_wrapper()))
            .collect();
        assert_eq!(seen, [(0, 5, 5, -1, false), (1, 6, 6, 1_000, false), (1, 9, 9, 2_000, true)]);
        assert_eq!(got[0].partition_leader_epoch(), NO_PARTITION_LEADER_EPOCH);
        assert_eq!((got[0].record_count(), got[2].record_count()), (1, -1));
        assert_eq!(got[1].position(), 100 + got[0].size() as u64);
    }

    #[test]
    fn a_damaged_legacy_message_fails_its_crc32() {
        let mut log = message(1, 6, 0, 1_000, None, b"value");
        let last = log.len() - 1;
        log[last] ^= 1;
        let e = BatchIter::new(&log, 0, true).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("CRC-32 "), "{e}");
        assert!(BatchIter::new(&log, 0, false).next().unwrap().is_ok(), "unchecked, the structure is fine");
    }

    #[test]
    fn lengths_that_point_past_their_message_or_file_are_named() {
        // A key length past the message's end.
        let mut log = message(0, 1, 0, 0, Some(b"key"), b"v");
        log[18..22].copy_from_slice(&1000i32.to_be_bytes());
        let e = BatchIter::new(&log, 0, false).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("key length 1000"), "{e}");
        // A length field pointing past the end of the buffer.
        let mut log = message(0, 1, 0, 0, None, b"v");
        log[8..12].copy_from_slice(&(1i32 << 30).to_be_bytes());
        let e = BatchIter::new(&log, 7, false).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("position 7 declares 1073741836 bytes, past the end"), "{e}");
        // Too few bytes for a header.
        let e = BatchIter::new(&log[..10], 7, false).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("fewer than a batch header"), "{e}");
    }

    #[test]
    fn a_v2_last_offset_that_overflows_is_corrupt() {
        let mut b = crate::testkit::log_writer::encode_batch(
            i64::MAX - 1,
            0,
            &[crate::testkit::log_writer::Record { key: None, value: None, headers: vec![], timestamp: 0 }],
        );
        b[23..27].copy_from_slice(&5i32.to_be_bytes());
        let e = BatchIter::new(&b, 0, false).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("last offset delta 5"), "{e}");
    }
}
