//! Kafka's `.index` (offset) and `.timeindex` (time) files: readers that validate, and writers.
//!
//! `.index` entries are 8 bytes as every broker up to 4.4 writes them: offset relative to the segment's base
//! offset (u32) and physical position (u32); after metadata version `IBP_4_4_IV1` (KIP-1333, segments over
//! 2 GiB) a broker writes 12-byte entries: the relative offset (u32) and the position (i64). A file does not say
//! which: [`read_offset_index`] tells them apart as KIP-1333 describes Kafka's reader doing it, by the length
//! (a multiple of 8 only, or of 12 only) and, for a length that is a multiple of both, by which reading gives
//! a valid index. `.timeindex` entries are 12 bytes: timestamp (i64) and relative offset (u32). Both are sorted.

use crate::error::{Error, Result};

/// Size of one `.index` entry as brokers up to 4.4 write it.
pub const OFFSET_ENTRY_SIZE: usize = 8;
/// Size of one `.index` entry as brokers write it after metadata version `IBP_4_4_IV1` (KIP-1333).
pub const LONG_OFFSET_ENTRY_SIZE: usize = 12;
/// Size of one `.timeindex` entry.
pub const TIME_ENTRY_SIZE: usize = 12;

/// One `.index` entry, with the absolute offset.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OffsetEntry {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the `.log` file.
    pub position: u64,
}

/// One `.timeindex` entry, with the absolute offset.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TimeEntry {
    /// Timestamp.
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// `base_offset` plus an entry's relative offset, or "corrupt" when that is past the largest offset.
fn absolute(kind: &str, name: &str, i: usize, base_offset: i64, relative: u32) -> Result<i64> {
    base_offset.checked_add(relative as i64).ok_or_else(|| {
        Error::corrupt(format!(
            "{kind} index {name}: entry {i} has relative offset {relative}, past the largest offset from base \
             {base_offset}"
        ))
    })
}

/// Parses and checks an offset index of the segment at `base_offset`, of 8- or 12-byte entries (see the
/// module's documentation): whole entries, offsets strictly increasing, positions increasing and inside a log
/// of `log_size` bytes. `name` appears in errors.
pub fn read_offset_index(name: &str, base_offset: i64, bytes: &[u8], log_size: u64) -> Result<Vec<OffsetEntry>> {
    let len = bytes.len();
    match (len.is_multiple_of(OFFSET_ENTRY_SIZE), len.is_multiple_of(LONG_OFFSET_ENTRY_SIZE)) {
        (true, false) => read_entries(name, base_offset, bytes, log_size, OFFSET_ENTRY_SIZE),
        (false, true) => read_entries(name, base_offset, bytes, log_size, LONG_OFFSET_ENTRY_SIZE),
        (false, false) => Err(Error::corrupt(format!(
            "offset index {name}: length {len} is a multiple of neither {OFFSET_ENTRY_SIZE} nor \
             {LONG_OFFSET_ENTRY_SIZE} (the entry sizes before and after KIP-1333)"
        ))),
        (true, true) => {
            let short = read_entries(name, base_offset, bytes, log_size, OFFSET_ENTRY_SIZE);
            let long = read_entries(name, base_offset, bytes, log_size, LONG_OFFSET_ENTRY_SIZE);
            match (short, long) {
                (Ok(s), Err(_)) => Ok(s),
                (Err(_), Ok(l)) => Ok(l),
                // Both valid (an empty index; otherwise rare, as a misread entry breaks the order or lands
                // past the log): what a log of this size has, 8-byte entries up to Kafka's 2 GiB limit.
                (Ok(s), Ok(l)) => Ok(if log_size > i32::MAX as u64 { l } else { s }),
                (Err(s), Err(l)) => Err(Error::corrupt(format!(
                    "offset index {name}: neither entry size gives a valid index: as {OFFSET_ENTRY_SIZE}-byte \
                     entries, {}; as {LONG_OFFSET_ENTRY_SIZE}-byte entries, {}",
                    s.message(),
                    l.message()
                ))),
            }
        }
    }
}

/// [`read_offset_index`] with entries of `size` bytes (`len` a multiple of it).
fn read_entries(name: &str, base_offset: i64, bytes: &[u8], log_size: u64, size: usize) -> Result<Vec<OffsetEntry>> {
    let mut out: Vec<OffsetEntry> = Vec::with_capacity(bytes.len() / size);
    for (i, e) in bytes.chunks_exact(size).enumerate() {
        let position = match size {
            OFFSET_ENTRY_SIZE => u32_at(e, 4) as u64,
            // Kafka writes a Java long: a negative one is no position.
            _ => {
                let p = i64::from_be_bytes(e[4..12].try_into().expect("8 bytes"));
                u64::try_from(p).map_err(|_| {
                    Error::corrupt(format!("offset index {name}: entry {i} has the negative position {p}"))
                })?
            }
        };
        let entry = OffsetEntry { offset: absolute("offset", name, i, base_offset, u32_at(e, 0))?, position };
        if let Some(prev) = out.last()
            && (entry.offset <= prev.offset || entry.position <= prev.position)
        {
            return Err(Error::corrupt(format!(
                "offset index {name}: entry {i} (offset {}, position {}) does not follow (offset {}, position {})",
                entry.offset, entry.position, prev.offset, prev.position
            )));
        }
        if entry.position >= log_size.max(1) {
            return Err(Error::corrupt(format!(
                "offset index {name}: entry {i} points at position {} beyond the log's {log_size} bytes",
                entry.position
            )));
        }
        out.push(entry);
    }
    Ok(out)
}

/// Parses and checks a time index of the segment at `base_offset`: whole entries, timestamps and offsets
/// not decreasing. `name` appears in errors.
pub fn read_time_index(name: &str, base_offset: i64, bytes: &[u8]) -> Result<Vec<TimeEntry>> {
    if !bytes.len().is_multiple_of(TIME_ENTRY_SIZE) {
        return Err(Error::corrupt(format!(
            "time index {name}: length {} is not a multiple of {TIME_ENTRY_SIZE}",
            bytes.len()
        )));
    }
    let mut out: Vec<TimeEntry> = Vec::with_capacity(bytes.len() / TIME_ENTRY_SIZE);
    for (i, e) in bytes.chunks_exact(TIME_ENTRY_SIZE).enumerate() {
        let entry = TimeEntry {
            timestamp: i64::from_be_bytes(e[..8].try_into().expect("8 bytes")),
            offset: absolute("time", name, i, base_offset, u32_at(e, 8))?,
        };
        if let Some(prev) = out.last()
            && (entry.timestamp < prev.timestamp || entry.offset < prev.offset)
        {
            return Err(Error::corrupt(format!(
                "time index {name}: entry {i} (timestamp {}, offset {}) goes backwards from (timestamp {}, offset {})",
                entry.timestamp, entry.offset, prev.timestamp, prev.offset
            )));
        }
        out.push(entry);
    }
    Ok(out)
}

/// Appends `.index` entries in Kafka's layout: 8-byte entries, or 12-byte ones ([`OffsetIndexWriter::long`]).
#[derive(Debug, Default, Clone)]
pub struct OffsetIndexWriter {
    base_offset: i64,
    long: bool,
    buf: Vec<u8>,
}

impl OffsetIndexWriter {
    /// An empty index of 8-byte entries for the segment at `base_offset`, as brokers up to 4.4 write it.
    pub fn new(base_offset: i64) -> Self {
        OffsetIndexWriter { base_offset, long: false, buf: Vec::new() }
    }
    /// An empty index of 12-byte entries for the segment at `base_offset`, as brokers write it after
    /// metadata version `IBP_4_4_IV1`.
    pub fn long(base_offset: i64) -> Self {
        OffsetIndexWriter { base_offset, long: true, buf: Vec::new() }
    }
    /// Appends an entry; `offset` must be within u32 of the base offset, and `position` within u32 for
    /// 8-byte entries, within i64 for 12-byte ones.
    pub fn append(&mut self, offset: i64, position: u64) {
        let rel = u32::try_from(offset - self.base_offset).expect("relative offset fits in u32");
        self.buf.extend_from_slice(&rel.to_be_bytes());
        if self.long {
            let p = i64::try_from(position).expect("position fits in i64");
            self.buf.extend_from_slice(&p.to_be_bytes());
        } else {
            let p = u32::try_from(position).expect("position fits in u32: 8-byte entries");
            self.buf.extend_from_slice(&p.to_be_bytes());
        }
    }
    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Appends `.timeindex` entries in Kafka's layout.
#[derive(Debug, Default, Clone)]
pub struct TimeIndexWriter {
    base_offset: i64,
    buf: Vec<u8>,
}

impl TimeIndexWriter {
    /// An empty index for the segment at `base_offset`.
    pub fn new(base_offset: i64) -> Self {
        TimeIndexWriter { base_offset, buf: Vec::new() }
    }
    /// Appends an entry; `offset` must be within u32 of the base offset.
    pub fn append(&mut self, timestamp: i64, offset: i64) {
        let rel = u32::try_from(offset - self.base_offset).expect("relative offset fits in u32");
        self.buf.extend_from_slice(&timestamp.to_be_bytes());
        self.buf.extend_from_slice(&rel.to_be_bytes());
    }
    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Checks a producer snapshot file as Kafka reads one (`ProducerStateManager`): version 1, then a CRC-32C of
/// every byte after it. `name` appears in errors. A snapshot of no bytes is not checked (none was kept).
pub fn check_producer_snapshot(name: &str, bytes: &[u8]) -> Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let Some((head, rest)) = bytes.split_at_checked(6) else {
        return Err(Error::corrupt(format!("{name}: {} bytes, shorter than its 6-byte header", bytes.len())));
    };
    let version = i16::from_be_bytes([head[0], head[1]]);
    if version != 1 {
        return Err(Error::corrupt(format!("{name}: version {version}, Kafka writes 1")));
    }
    let (stored, computed) = (u32_at(head, 2), crate::checksum::crc32c(rest));
    if stored != computed {
        return Err(Error::corrupt(format!(
            "{name}: its CRC-32C says {stored:#010x}, its {} bytes give {computed:#010x}",
            rest.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producer_snapshots_are_checked_by_their_crc() {
        // Version 1, the CRC-32C of four zero bytes (0x48674bc7, a known value), no producers: what a broker
        // writes on roll when no idempotent producer wrote.
        let empty = [0, 1, 0x48, 0x67, 0x4b, 0xc7, 0, 0, 0, 0];
        assert_eq!(&empty[..], &crate::testkit::log_writer::empty_producer_snapshot()[..]);
        check_producer_snapshot("s", &empty).unwrap();
        check_producer_snapshot("s", &[]).unwrap();
        // (case, bytes, what the error says)
        let cases: [(&str, Vec<u8>, &str); 3] = [
            (
                "a flipped byte",
                {
                    let mut b = empty.to_vec();
                    b[9] ^= 1;
                    b
                },
                "CRC-32C says 0x48674bc7",
            ),
            (
                "another version",
                {
                    let mut b = empty.to_vec();
                    b[1] = 2;
                    b
                },
                "version 2",
            ),
            ("cut short", empty[..5].to_vec(), "shorter than its 6-byte header"),
        ];
        for (case, bytes, says) in cases {
            let e = check_producer_snapshot("snapshot of s", &bytes).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("snapshot of s"), "{case}: {e}");
        }
    }

    #[test]
    fn offset_index_round_trip_and_errors() {
        let mut w = OffsetIndexWriter::new(100);
        w.append(100, 0);
        w.append(150, 4096);
        w.append(210, 9000);
        // Hand-computed layout of the second entry: relative offset 50, position 4096.
        assert_eq!(&w.bytes()[8..16], &[0, 0, 0, 50, 0, 0, 0x10, 0]);
        let e = read_offset_index("x.index", 100, w.bytes(), 10_000).unwrap();
        assert_eq!(e[1], OffsetEntry { offset: 150, position: 4096 });

        let cases: [(&str, Vec<u8>, u64, &str); 3] = [
            ("truncated", w.bytes()[..13].to_vec(), 10_000, "length 13 is a multiple of neither 8 nor 12"),
            ("beyond log", w.bytes().to_vec(), 5_000, "beyond the log's 5000 bytes"),
            ("backwards", [&w.bytes()[8..16], &w.bytes()[..8]].concat(), 10_000, "does not follow"),
        ];
        for (name, bytes, size, msg) in cases {
            let err = read_offset_index("x.index", 100, &bytes, size).unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{name}");
            assert!(err.to_string().contains(msg), "{name}: {err}");
            assert!(err.to_string().contains("x.index"), "{name}: {err}");
        }
    }

    /// Indexes as brokers after `IBP_4_4_IV1` write them (KIP-1333: 4-byte relative offset, 8-byte position)
    /// and as brokers before do, told apart by length and, for lengths both sizes divide, by validity.
    #[test]
    fn offset_index_entry_sizes_are_told_apart() {
        const GIB: u64 = 1 << 30;
        // By hand: relative offset 50 at position 5 GiB (0x1_4000_0000), in 12 bytes.
        let at_5_gib = [0, 0, 0, 50, 0, 0, 0, 1, 0x40, 0, 0, 0];
        let mut long = OffsetIndexWriter::long(100);
        long.append(150, 5 * GIB);
        assert_eq!(long.bytes(), at_5_gib);
        let entries = |n: usize, long: bool| {
            let mut w = if long { OffsetIndexWriter::long(100) } else { OffsetIndexWriter::new(100) };
            for i in 0..n as u64 {
                w.append(100 + 40 * (i as i64 + 1), 4096 * (i + 1));
            }
            w.bytes().to_vec()
        };
        let e = |offset, position| OffsetEntry { offset, position };
        type Case = (&'static str, Vec<u8>, u64, Vec<OffsetEntry>);
        let cases: Vec<Case> = vec![
            ("12-byte, 1 entry (12 bytes: 12 only)", entries(1, true), 10_000, vec![e(140, 4096)]),
            ("12-byte, 2 entries (24 bytes: both)", entries(2, true), 10_000, vec![e(140, 4096), e(180, 8192)]),
            (
                "12-byte, 4 entries (48 bytes: both)",
                entries(4, true),
                20_000,
                (1..=4).map(|i| e(100 + 40 * i, 4096 * i as u64)).collect(),
            ),
            (
                "8-byte, 3 entries (24 bytes: both)",
                entries(3, false),
                20_000,
                (1..=3).map(|i| e(100 + 40 * i, 4096 * i as u64)).collect(),
            ),
            ("8-byte, 2 entries (16 bytes: 8 only)", entries(2, false), 10_000, vec![e(140, 4096), e(180, 8192)]),
            ("12-byte past 4 GiB in a 6 GiB log", at_5_gib.to_vec(), 6 * GIB, vec![e(150, 5 * GIB)]),
            ("empty", vec![], 10_000, vec![]),
        ];
        for (name, bytes, log_size, want) in cases {
            let got = read_offset_index("x.index", 100, &bytes, log_size).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(got, want, "{name}");
        }

        let bad: [(&str, Vec<u8>, u64, &str); 4] = [
            ("past a 4 GiB log", at_5_gib.to_vec(), 4 * GIB, "beyond the log's"),
            (
                "a negative long",
                [&[0, 0, 0, 50][..], &(-1i64).to_be_bytes()].concat(),
                u64::MAX,
                "negative position -1",
            ),
            ("20 bytes", entries(2, true)[..20].to_vec(), 10_000, "multiple of neither 8 nor 12"),
            (
                "24 bytes valid neither way",
                [entries(2, true)[12..].to_vec(), entries(1, true)].concat(),
                10_000,
                "neither entry size gives a valid index",
            ),
        ];
        for (name, bytes, log_size, msg) in bad {
            let err = read_offset_index("x.index", 100, &bytes, log_size).unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{name}");
            assert!(err.to_string().contains(msg) && err.to_string().contains("x.index"), "{name}: {err}");
        }
    }

    #[test]
    fn time_index_round_trip_and_errors() {
        let mut w = TimeIndexWriter::new(0);
        w.append(1_000, 0);
        w.append(2_000, 40);
        assert_eq!(&w.bytes()[12..20], &2_000i64.to_be_bytes());
        let e = read_time_index("x.timeindex", 0, w.bytes()).unwrap();
        assert_eq!(e, vec![TimeEntry { timestamp: 1_000, offset: 0 }, TimeEntry { timestamp: 2_000, offset: 40 }]);
        assert!(read_time_index("t", 0, &w.bytes()[..20]).unwrap_err().to_string().contains("multiple of 12"));
        let back = [&w.bytes()[12..], &w.bytes()[..12]].concat();
        assert!(read_time_index("t", 0, &back).unwrap_err().to_string().contains("goes backwards"));
    }
}
