//! Kafka's `.index` (offset) and `.timeindex` (time) files: readers that validate, and writers.
//!
//! `.index` entries are 8 bytes: offset relative to the segment's base offset (u32) and physical position
//! (u32). `.timeindex` entries are 12 bytes: timestamp (i64) and relative offset (u32). Both are sorted.

use crate::error::{Error, Result};

/// Size of one `.index` entry.
pub const OFFSET_ENTRY_SIZE: usize = 8;
/// Size of one `.timeindex` entry.
pub const TIME_ENTRY_SIZE: usize = 12;

/// One `.index` entry, with the absolute offset.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OffsetEntry {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the `.log` file.
    pub position: u32,
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

/// Parses and checks an offset index of the segment at `base_offset`: whole entries, offsets strictly
/// increasing, positions increasing and inside a log of `log_size` bytes. `name` appears in errors.
pub fn read_offset_index(name: &str, base_offset: i64, bytes: &[u8], log_size: u64) -> Result<Vec<OffsetEntry>> {
    if !bytes.len().is_multiple_of(OFFSET_ENTRY_SIZE) {
        return Err(Error::corrupt(format!(
            "offset index {name}: length {} is not a multiple of {OFFSET_ENTRY_SIZE}",
            bytes.len()
        )));
    }
    let mut out = Vec::with_capacity(bytes.len() / OFFSET_ENTRY_SIZE);
    for (i, e) in bytes.chunks_exact(OFFSET_ENTRY_SIZE).enumerate() {
        let entry =
            OffsetEntry { offset: absolute("offset", name, i, base_offset, u32_at(e, 0))?, position: u32_at(e, 4) };
        if let Some(prev) = out.last() {
            let prev: &OffsetEntry = prev;
            if entry.offset <= prev.offset || entry.position <= prev.position {
                return Err(Error::corrupt(format!(
                    "offset index {name}: entry {i} (offset {}, position {}) does not follow (offset {}, position {})",
                    entry.offset, entry.position, prev.offset, prev.position
                )));
            }
        }
        if entry.position as u64 >= log_size.max(1) {
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

/// Appends `.index` entries in Kafka's layout.
#[derive(Debug, Default, Clone)]
pub struct OffsetIndexWriter {
    base_offset: i64,
    buf: Vec<u8>,
}

impl OffsetIndexWriter {
    /// An empty index for the segment at `base_offset`.
    pub fn new(base_offset: i64) -> Self {
        OffsetIndexWriter { base_offset, buf: Vec::new() }
    }
    /// Appends an entry; `offset` must be within u32 of the base offset.
    pub fn append(&mut self, offset: i64, position: u32) {
        let rel = u32::try_from(offset - self.base_offset).expect("relative offset fits in u32");
        self.buf.extend_from_slice(&rel.to_be_bytes());
        self.buf.extend_from_slice(&position.to_be_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;

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
            ("truncated", w.bytes()[..13].to_vec(), 10_000, "length 13 is not a multiple of 8"),
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
