//! An append-only log of records in a directory: files `{first offset:020}.log`, each record framed as
//! `length u32 | CRC-32C u32 of the length and the value | value` (never empty, so zeros a crash left
//! are never read as records), offsets implicit (the first record of a file has the
//! offset its name says, each next one the next offset).
//!
//! An append returns once the records are fsynced. At open the last file is scanned: a torn tail (a
//! record cut short, or a last record whose CRC fails with nothing valid after it, what a crash in the
//! middle of a write leaves) is cut off and logged; a record that fails its CRC with valid records after
//! it is damage, not a crash, and opening fails naming the file and position.

use rsm_core::error::{Error, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const HEADER: usize = 8;
/// The largest record value accepted: far above any metadata record, small enough that a damaged length
/// never sizes a big allocation.
pub(crate) const MAX_RECORD: usize = 16 << 20;

pub(crate) struct RecordLog {
    dir: PathBuf,
    /// First offsets of the files, ascending; the last is the active file (none in a read-only log of a
    /// directory that does not exist).
    bases: Vec<i64>,
    /// The active file, open for appends; `None` when the log is open read-only.
    active: Option<File>,
    next_offset: i64,
    fsync: bool,
}

fn file_name(base: i64) -> String {
    format!("{base:020}.log")
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::storage(format!("{what} {}", path.display()), e)
}

impl RecordLog {
    /// Opens (creating if needed) the log in `dir`, recovering a torn tail; `start` is the offset of the
    /// first file when the log is new.
    pub(crate) fn open(dir: &Path, start: i64, fsync: bool) -> Result<RecordLog> {
        fs::create_dir_all(dir).map_err(|e| io_error("creating metadata log directory", dir, e))?;
        Self::open_in(dir, start, fsync, true)
    }

    /// Opens the log in `dir` to read it, changing nothing: a missing directory is an empty log, and a torn
    /// tail (or a record a writer is appending right now) is left as it is and not read. Appends are refused.
    pub(crate) fn open_read_only(dir: &Path, start: i64) -> Result<RecordLog> {
        if !dir.exists() {
            return Ok(RecordLog {
                dir: dir.to_path_buf(),
                bases: Vec::new(),
                active: None,
                next_offset: start,
                fsync: false,
            });
        }
        Self::open_in(dir, start, false, false)
    }

    fn open_in(dir: &Path, start: i64, fsync: bool, write: bool) -> Result<RecordLog> {
        let mut bases = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| io_error("listing", dir, e))? {
            let entry = entry.map_err(|e| io_error("listing", dir, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(stem) = name.strip_suffix(".log")
                && stem.len() == 20
                && let Ok(base) = stem.parse::<i64>()
            {
                bases.push(base);
            }
        }
        bases.sort_unstable();
        if bases.is_empty() {
            if !write {
                return Ok(RecordLog { dir: dir.to_path_buf(), bases, active: None, next_offset: start, fsync });
            }
            bases.push(start);
            let path = dir.join(file_name(start));
            File::create(&path).map_err(|e| io_error("creating", &path, e))?;
            sync_dir(dir, fsync)?;
        }
        let last = *bases.last().expect("one file at least");
        let path = dir.join(file_name(last));
        let (count, valid_len) = recover(&path)?;
        let next_offset = last + count as i64;
        if !write {
            return Ok(RecordLog { dir: dir.to_path_buf(), bases, active: None, next_offset, fsync });
        }
        let mut active =
            OpenOptions::new().read(true).write(true).open(&path).map_err(|e| io_error("opening", &path, e))?;
        let len = active.metadata().map_err(|e| io_error("reading size of", &path, e))?.len();
        if valid_len < len {
            tracing::warn!(file = %path.display(), cut = len - valid_len, at = valid_len, "cut the torn tail of a metadata log");
            active.set_len(valid_len).map_err(|e| io_error("cutting the torn tail of", &path, e))?;
            if fsync {
                active.sync_all().map_err(|e| io_error("syncing", &path, e))?;
            }
        }
        active.seek(SeekFrom::End(0)).map_err(|e| io_error("seeking", &path, e))?;
        Ok(RecordLog { dir: dir.to_path_buf(), bases, active: Some(active), next_offset, fsync })
    }

    fn writable(&mut self) -> Result<&mut File> {
        let dir = &self.dir;
        self.active.as_mut().ok_or_else(|| {
            Error::invalid(format!("metadata log {} is open read-only: nothing is written", dir.display()))
        })
    }

    /// The offset the next appended record gets.
    pub(crate) fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Appends records and fsyncs them; returns the offset of the first.
    pub(crate) fn append(&mut self, values: &[&[u8]]) -> Result<i64> {
        self.writable()?;
        let first = self.next_offset;
        let mut buf = Vec::with_capacity(values.iter().map(|v| v.len() + HEADER).sum());
        for v in values {
            if v.is_empty() || v.len() > MAX_RECORD {
                return Err(Error::invalid(format!("a metadata record of {} bytes (1 … {MAX_RECORD})", v.len())));
            }
            buf.extend_from_slice(&frame(v));
        }
        let path = self.active_path();
        let fsync = self.fsync;
        let active = self.writable()?;
        active.write_all(&buf).map_err(|e| io_error("appending to", &path, e))?;
        if fsync {
            active.sync_data().map_err(|e| io_error("syncing", &path, e))?;
        }
        self.next_offset += values.len() as i64;
        Ok(first)
    }

    fn active_path(&self) -> PathBuf {
        self.dir.join(file_name(*self.bases.last().expect("one file at least")))
    }

    /// Calls `f` with every record from `from` on, in order.
    pub(crate) fn read_from(&self, from: i64, mut f: impl FnMut(i64, &[u8]) -> Result<()>) -> Result<()> {
        for (i, &base) in self.bases.iter().enumerate() {
            let end = self.bases.get(i + 1).copied().unwrap_or(self.next_offset);
            if end <= from {
                continue;
            }
            let path = self.dir.join(file_name(base));
            let bytes = fs::read(&path).map_err(|e| io_error("reading", &path, e))?;
            let mut pos = 0;
            let mut offset = base;
            while offset < end {
                let (value, next) = frame_at(&bytes, pos).ok_or_else(|| {
                    Error::corrupt(format!("metadata log {}: record {offset} at byte {pos} is damaged", path.display()))
                })?;
                if offset >= from {
                    f(offset, value)?;
                }
                pos = next;
                offset += 1;
            }
        }
        Ok(())
    }

    /// Starts a new file at the next offset (after a snapshot), so older files can be removed.
    pub(crate) fn roll(&mut self) -> Result<()> {
        self.writable()?;
        let base = self.next_offset;
        if *self.bases.last().expect("one file") == base {
            return Ok(());
        }
        let path = self.dir.join(file_name(base));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_error("creating", &path, e))?;
        sync_dir(&self.dir, self.fsync)?;
        self.active = Some(file);
        self.bases.push(base);
        Ok(())
    }

    /// Removes the files whose every record is below `offset`.
    pub(crate) fn remove_before(&mut self, offset: i64) -> Result<()> {
        self.writable()?;
        while self.bases.len() > 1 && self.bases[1] <= offset {
            let path = self.dir.join(file_name(self.bases[0]));
            fs::remove_file(&path).map_err(|e| io_error("removing", &path, e))?;
            self.bases.remove(0);
        }
        Ok(())
    }
}

/// A record's frame: length, CRC-32C of the length and the value, value.
fn frame(value: &[u8]) -> Vec<u8> {
    let len = (value.len() as u32).to_be_bytes();
    let crc = rsm_core::checksum::crc32c_append(rsm_core::checksum::crc32c(&len), value);
    let mut out = Vec::with_capacity(HEADER + value.len());
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(value);
    out
}

/// The value of the record framed at `pos` and the position after it, if it is whole and its CRC holds.
fn frame_at(bytes: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let header = bytes.get(pos..pos.checked_add(HEADER)?)?;
    let len = u32::from_be_bytes(header[..4].try_into().ok()?) as usize;
    let crc = u32::from_be_bytes(header[4..].try_into().ok()?);
    if len == 0 || len > MAX_RECORD {
        return None;
    }
    let start = pos + HEADER;
    let value = bytes.get(start..start.checked_add(len)?)?;
    (rsm_core::checksum::crc32c_append(rsm_core::checksum::crc32c(&header[..4]), value) == crc)
        .then_some((value, start + len))
}

/// Scans a file: the number of whole records and the length they cover. A bad record followed by a good
/// one is damage (an error); a bad record at the end is a torn tail, left for the caller to cut.
fn recover(path: &Path) -> Result<(u64, u64)> {
    let mut bytes = Vec::new();
    File::open(path).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(|e| io_error("reading", path, e))?;
    let mut pos = 0;
    let mut count = 0u64;
    while pos < bytes.len() {
        match frame_at(&bytes, pos) {
            Some((_, next)) => {
                pos = next;
                count += 1;
            }
            None => {
                // Whole but failing its CRC, with a good record right after it: not a torn write.
                if let Some(header) = bytes.get(pos..pos + HEADER) {
                    let len = u32::from_be_bytes(header[..4].try_into().expect("4 bytes")) as usize;
                    let next = pos + HEADER + len;
                    if len <= MAX_RECORD && next < bytes.len() && frame_at(&bytes, next).is_some() {
                        return Err(Error::corrupt(format!(
                            "metadata log {}: the record at byte {pos} fails its CRC-32C and records follow it",
                            path.display()
                        )));
                    }
                }
                break;
            }
        }
    }
    Ok((count, pos as u64))
}

pub(crate) fn sync_dir(dir: &Path, fsync: bool) -> Result<()> {
    if fsync {
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_error("syncing directory", dir, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(log: &RecordLog, from: i64) -> Vec<(i64, Vec<u8>)> {
        let mut out = Vec::new();
        log.read_from(from, |o, v| {
            out.push((o, v.to_vec()));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn appends_survive_reopen_and_rolls() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = RecordLog::open(dir.path(), 0, true).unwrap();
        assert_eq!(log.append(&[b"a", b"bb"]).unwrap(), 0);
        log.roll().unwrap();
        assert_eq!(log.append(&[b"ccc"]).unwrap(), 2);
        drop(log);
        let mut log = RecordLog::open(dir.path(), 0, true).unwrap();
        assert_eq!(log.next_offset(), 3);
        assert_eq!(all(&log, 1), vec![(1, b"bb".to_vec()), (2, b"ccc".to_vec())]);
        log.remove_before(2).unwrap();
        assert_eq!(all(&log, 0), vec![(2, b"ccc".to_vec())]);
    }

    #[test]
    fn every_torn_tail_is_cut_and_nothing_before_it_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = RecordLog::open(dir.path(), 0, false).unwrap();
        log.append(&[b"first", b"second"]).unwrap();
        drop(log);
        let path = dir.path().join(file_name(0));
        let good = fs::read(&path).unwrap();
        let third = frame(b"third record");
        // Every prefix of the third record, and the whole record with its last byte wrong, is a torn tail.
        let mut tails: Vec<Vec<u8>> = (1..third.len()).map(|n| third[..n].to_vec()).collect();
        let mut flipped = third.clone();
        *flipped.last_mut().unwrap() ^= 1;
        tails.push(flipped);
        tails.push(vec![0; 100]);
        for tail in tails {
            let mut bytes = good.clone();
            bytes.extend_from_slice(&tail);
            fs::write(&path, &bytes).unwrap();
            let mut log = RecordLog::open(dir.path(), 0, false).unwrap();
            assert_eq!(log.next_offset(), 2, "tail of {} bytes", tail.len());
            assert_eq!(fs::metadata(&path).unwrap().len(), good.len() as u64);
            log.append(&[b"after"]).unwrap();
            assert_eq!(all(&log, 0).last().unwrap(), &(2, b"after".to_vec()));
            fs::write(&path, &good).unwrap();
        }
    }

    #[test]
    fn damage_in_the_middle_is_an_error_naming_the_file_and_position() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = RecordLog::open(dir.path(), 0, false).unwrap();
        log.append(&[b"first", b"second", b"third"]).unwrap();
        drop(log);
        let path = dir.path().join(file_name(0));
        let mut bytes = fs::read(&path).unwrap();
        bytes[HEADER + 5 + HEADER] ^= 0xff; // first byte of "second"
        fs::write(&path, &bytes).unwrap();
        let err = RecordLog::open(dir.path(), 0, false).err().expect("damage is an error");
        let msg = err.to_string();
        assert!(msg.contains("00000000000000000000.log") && msg.contains("byte 13"), "{msg}");
    }

    #[test]
    fn a_damaged_length_never_sizes_an_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let mut bytes = u32::MAX.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0; 4]);
        fs::write(&path, &bytes).unwrap();
        let log = RecordLog::open(dir.path(), 0, false).unwrap();
        assert_eq!(log.next_offset(), 0);
    }
}
