//! SR-32's partition-wide remote index files, kept in a local directory by the leader (SR-33) and rebuilt
//! by followers from the manifests' chunk tables:
//! - `{base_offset:020}.remoteLogIndex`: remoteLogIndex entries ([`ChunkEntry`]) back to back;
//! - `{base_offset:020}.remoteOffsetIndex`: 8-byte entries, offset relative to the file's base offset
//!   (u32) and the byte position of the matching remoteLogIndex entry (u32), one per entry;
//! - `{base_offset:020}.remoteTimeIndex`: 12-byte entries, timestamp (i64) and position (u32), appended
//!   when an entry's last timestamp is larger than every earlier one.
//!
//! A set of three files is named by the base offset of the first segment it indexes, and a new set starts
//! when the remoteLogIndex file would pass the configured size (or relative offsets would pass u32).

use crate::error::{Error, Result};
use crate::format::chunk::ChunkEntry;
use crate::format::codec::Reader;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

const LOG_EXT: &str = "remoteLogIndex";
const OFFSET_EXT: &str = "remoteOffsetIndex";
const TIME_EXT: &str = "remoteTimeIndex";

/// The remote index files of one partition in a local directory.
#[derive(Debug)]
pub struct RemoteIndexFiles {
    dir: PathBuf,
    max_log_index_bytes: u64,
    /// Base offsets of the file sets, ascending.
    bases: Vec<i64>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::from_io(path.display(), e)
}

impl RemoteIndexFiles {
    /// Opens (creating) `dir`; a new file set starts when a remoteLogIndex file would pass
    /// `max_log_index_bytes`.
    pub fn open(dir: &Path, max_log_index_bytes: u64) -> Result<Self> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        let mut bases = Vec::new();
        for e in fs::read_dir(dir).map_err(io(dir))? {
            let name = e.map_err(io(dir))?.file_name();
            let name = name.to_string_lossy();
            if let Some(base) = name.strip_suffix(&format!(".{LOG_EXT}")) {
                let b = base.parse::<i64>().map_err(|_| {
                    Error::corrupt(format!("remote index file {name} in {} has no base offset", dir.display()))
                })?;
                bases.push(b);
            }
        }
        bases.sort_unstable();
        Ok(RemoteIndexFiles { dir: dir.to_path_buf(), max_log_index_bytes, bases })
    }

    fn path(&self, base: i64, ext: &str) -> PathBuf {
        self.dir.join(format!("{base:020}.{ext}"))
    }

    /// Names of the file sets' base offsets, ascending.
    pub fn bases(&self) -> &[i64] {
        &self.bases
    }

    /// Appends the entries of the segment starting at `segment_base_offset` (SR-33).
    pub fn append_segment(&mut self, segment_base_offset: i64, entries: &[ChunkEntry]) -> Result<()> {
        let Some(last) = entries.last() else {
            return Ok(());
        };
        let mut encoded = Vec::with_capacity(entries.iter().map(|e| e.encoded_len()).sum());
        for e in entries {
            e.encode(&mut encoded);
        }
        let rotate = match self.bases.last() {
            None => true,
            Some(&base) => {
                let size = fs::metadata(self.path(base, LOG_EXT)).map(|m| m.len()).unwrap_or(0);
                size > 0 && size + encoded.len() as u64 > self.max_log_index_bytes
                    || last.last_offset - base > u32::MAX as i64
                    || segment_base_offset < base
            }
        };
        if rotate {
            if self.bases.last().is_some_and(|&b| b >= segment_base_offset) {
                return Err(Error::invalid(format!(
                    "remote index: segment {segment_base_offset} is not after the last indexed segment"
                )));
            }
            self.bases.push(segment_base_offset);
        }
        let base = *self.bases.last().expect("a file set");
        let log_path = self.path(base, LOG_EXT);
        let mut log = OpenOptions::new().create(true).append(true).open(&log_path).map_err(io(&log_path))?;
        let mut position = log.metadata().map_err(io(&log_path))?.len();
        let time_path = self.path(base, TIME_EXT);
        let mut max_ts = self.last_time_entry(base)?.unwrap_or(i64::MIN);
        let mut offsets = Vec::with_capacity(entries.len() * 8);
        let mut times = Vec::new();
        for e in entries {
            if position > u32::MAX as u64 {
                return Err(Error::invalid(format!("remote index {}: file too large", log_path.display())));
            }
            offsets.extend_from_slice(&((e.first_offset - base) as u32).to_be_bytes());
            offsets.extend_from_slice(&(position as u32).to_be_bytes());
            if e.last_timestamp > max_ts {
                max_ts = e.last_timestamp;
                times.extend_from_slice(&e.last_timestamp.to_be_bytes());
                times.extend_from_slice(&(position as u32).to_be_bytes());
            }
            position += e.encoded_len() as u64;
        }
        // The log index first: an offset or time entry never points at bytes that are not there.
        log.write_all(&encoded).map_err(io(&log_path))?;
        log.sync_data().map_err(io(&log_path))?;
        let off_path = self.path(base, OFFSET_EXT);
        let mut f = OpenOptions::new().create(true).append(true).open(&off_path).map_err(io(&off_path))?;
        f.write_all(&offsets).map_err(io(&off_path))?;
        let mut f = OpenOptions::new().create(true).append(true).open(&time_path).map_err(io(&time_path))?;
        f.write_all(&times).map_err(io(&time_path))?;
        Ok(())
    }

    fn last_time_entry(&self, base: i64) -> Result<Option<i64>> {
        let p = self.path(base, TIME_EXT);
        match fs::read(&p) {
            Ok(b) if b.len() >= 12 => {
                let e = &b[b.len() - 12 - (b.len() % 12)..];
                Ok(Some(i64::from_be_bytes(e[..8].try_into().expect("8 bytes"))))
            }
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::from_io(p.display(), e)),
        }
    }

    fn entry_at(&self, base: i64, log: &[u8], position: u32) -> Result<ChunkEntry> {
        let name = self.path(base, LOG_EXT).display().to_string();
        let bytes = log.get(position as usize..).ok_or_else(|| {
            Error::corrupt(format!("remote index {name}: position {position} beyond its {} bytes", log.len()))
        })?;
        ChunkEntry::decode(&mut Reader::new(bytes, &name)).map_err(|e| e.context(format!("remote index {name}")))
    }

    fn read(&self, base: i64, ext: &str, entry: usize) -> Result<Vec<u8>> {
        let p = self.path(base, ext);
        let b = fs::read(&p).map_err(io(&p))?;
        if !b.len().is_multiple_of(entry) {
            return Err(Error::corrupt(format!(
                "remote index {}: length {} is not a multiple of {entry}",
                p.display(),
                b.len()
            )));
        }
        Ok(b)
    }

    /// The entry of the last chunk indexed, `None` when nothing is. It also checks that the last file
    /// set's three files agree at their ends (an append a crash interrupted leaves them apart): the
    /// remoteLogIndex ends with the entry the last remoteOffsetIndex entry points at, and the
    /// remoteTimeIndex has reached that entry's last timestamp. A disagreement is corrupt: the files are
    /// derived data, to be rebuilt from the manifests.
    pub fn last_entry(&self) -> Result<Option<ChunkEntry>> {
        let Some(&base) = self.bases.last() else {
            return Ok(None);
        };
        let log = self.read(base, LOG_EXT, 1)?;
        let name = self.path(base, OFFSET_EXT).display().to_string();
        let idx = match self.read(base, OFFSET_EXT, 8) {
            Ok(b) => b,
            Err(e) if e.kind() == crate::error::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let Some(at) = idx.len().checked_sub(8) else {
            if log.is_empty() {
                return Ok(None);
            }
            return Err(Error::corrupt(format!("remote index {name}: empty beside {} indexed bytes", log.len())));
        };
        let position = u32::from_be_bytes(idx[at + 4..at + 8].try_into().expect("4 bytes"));
        let entry = self.entry_at(base, &log, position)?;
        let end = position as usize + entry.encoded_len();
        if end != log.len() {
            return Err(Error::corrupt(format!(
                "remote index {name}: its last entry points at byte {position}, but the remoteLogIndex has {} bytes \
                 after that entry",
                log.len().saturating_sub(end)
            )));
        }
        let time = self.last_time_entry(base)?;
        if time.is_none_or(|ts| ts < entry.last_timestamp) {
            return Err(Error::corrupt(format!(
                "remote index {}: behind its remoteLogIndex (last timestamp {} not indexed)",
                self.path(base, TIME_EXT).display(),
                entry.last_timestamp
            )));
        }
        Ok(Some(entry))
    }

    /// The entry of the first chunk holding `offset` or a later one.
    pub fn lookup_offset(&self, offset: i64) -> Result<Option<ChunkEntry>> {
        let start = self.bases.partition_point(|&b| b <= offset).saturating_sub(1);
        for &base in &self.bases[start..] {
            let log = self.read(base, LOG_EXT, 1)?;
            let idx = self.read(base, OFFSET_EXT, 8)?;
            let n = idx.len() / 8;
            // Saturating: a file named near the largest offset cannot wrap around to a small one.
            let first_of =
                |i: usize| base.saturating_add(u32::from_be_bytes(idx[i * 8..i * 8 + 4].try_into().expect("4")) as i64);
            let pos_of = |i: usize| u32::from_be_bytes(idx[i * 8 + 4..i * 8 + 8].try_into().expect("4"));
            // Last entry whose first offset is <= offset, then walk forward to one that reaches it.
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if first_of(mid) <= offset {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let mut i = lo.saturating_sub(1);
            while i < n {
                let e = self.entry_at(base, &log, pos_of(i))?;
                if e.last_offset >= offset {
                    return Ok(Some(e));
                }
                i += 1;
            }
        }
        Ok(None)
    }

    /// The entry of the first chunk with a timestamp at or after `timestamp`.
    pub fn lookup_timestamp(&self, timestamp: i64) -> Result<Option<ChunkEntry>> {
        for &base in &self.bases {
            let idx = self.read(base, TIME_EXT, 12)?;
            for e in idx.chunks_exact(12) {
                let ts = i64::from_be_bytes(e[..8].try_into().expect("8"));
                if ts >= timestamp {
                    let log = self.read(base, LOG_EXT, 1)?;
                    let pos = u32::from_be_bytes(e[8..].try_into().expect("4"));
                    return self.entry_at(base, &log, pos).map(Some);
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::chunk::{Rdi, RdiObject, Transform};
    use crate::model::Uuid;

    fn entries(seg_base: i64, n: usize, per: i64) -> Vec<ChunkEntry> {
        (0..n)
            .map(|i| {
                let first = seg_base + i as i64 * per;
                ChunkEntry {
                    first_offset: first,
                    last_offset: first + per - 1,
                    first_timestamp: first * 10,
                    last_timestamp: (first + per - 1) * 10,
                    data_length: 100,
                    rdi: Rdi {
                        object: RdiObject::Log,
                        transform: Transform::None,
                        segment_start_offset: seg_base,
                        segment_id: Uuid::new(seg_base, 0),
                        stored_position: i as u64 * 100,
                        stored_length: 100,
                        crc32c: 0,
                        original_position: i as u64 * 100,
                        stored_crc32c: 0,
                    },
                }
            })
            .collect()
    }

    #[test]
    fn last_entry_is_the_end_and_an_interrupted_append_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = RemoteIndexFiles::open(dir.path(), 1 << 20).unwrap();
        assert!(f.last_entry().unwrap().is_none());
        f.append_segment(0, &entries(0, 3, 10)).unwrap();
        f.append_segment(30, &entries(30, 2, 10)).unwrap();
        assert_eq!(f.last_entry().unwrap().map(|e| e.last_offset), Some(49));
        let set = |ext: &str| dir.path().join(format!("{:020}.{ext}", 0));

        // A crash after the remoteLogIndex was written but before the offsets were.
        let offsets = fs::read(set(OFFSET_EXT)).unwrap();
        fs::write(set(OFFSET_EXT), &offsets[..offsets.len() - 8]).unwrap();
        let e = RemoteIndexFiles::open(dir.path(), 1 << 20).unwrap().last_entry().unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{e}");
        fs::write(set(OFFSET_EXT), &offsets).unwrap();

        // A crash before the time entry was written.
        let times = fs::read(set(TIME_EXT)).unwrap();
        fs::write(set(TIME_EXT), &times[..times.len() - 12]).unwrap();
        let e = RemoteIndexFiles::open(dir.path(), 1 << 20).unwrap().last_entry().unwrap_err();
        assert!(e.to_string().contains("behind its remoteLogIndex"), "{e}");
    }

    #[test]
    fn append_rotate_and_look_up() {
        let dir = tempfile::tempdir().unwrap();
        // Each entry is 90 bytes: a 500-byte limit holds five.
        let mut f = RemoteIndexFiles::open(dir.path(), 500).unwrap();
        f.append_segment(0, &entries(0, 4, 10)).unwrap(); // offsets 0..=39
        f.append_segment(40, &entries(40, 4, 10)).unwrap(); // 40..=79, rotates
        f.append_segment(80, &entries(80, 1, 10)).unwrap(); // 80..=89, same set as 40
        assert_eq!(f.bases(), &[0, 40]);
        assert!(dir.path().join("00000000000000000040.remoteOffsetIndex").exists());
        assert_eq!(fs::metadata(dir.path().join("00000000000000000040.remoteOffsetIndex")).unwrap().len(), 5 * 8);

        let reopened = RemoteIndexFiles::open(dir.path(), 500).unwrap();
        struct Case {
            offset: i64,
            want_first: Option<i64>,
            want_segment: i64,
        }
        for c in [
            Case { offset: 0, want_first: Some(0), want_segment: 0 },
            Case { offset: 15, want_first: Some(10), want_segment: 0 },
            Case { offset: 39, want_first: Some(30), want_segment: 0 },
            Case { offset: 40, want_first: Some(40), want_segment: 40 },
            Case { offset: 85, want_first: Some(80), want_segment: 80 },
            Case { offset: 90, want_first: None, want_segment: 0 },
        ] {
            let e = reopened.lookup_offset(c.offset).unwrap();
            assert_eq!(e.map(|e| e.first_offset), c.want_first, "offset {}", c.offset);
            if let Some(e) = e {
                assert_eq!(e.rdi.segment_start_offset, c.want_segment, "offset {}", c.offset);
            }
        }
        for (ts, want) in [(0, Some(0)), (90, Some(0)), (95, Some(10)), (790, Some(70)), (795, Some(80)), (2_000, None)]
        {
            assert_eq!(reopened.lookup_timestamp(ts).unwrap().map(|e| e.first_offset), want, "timestamp {ts}");
        }
    }

    #[test]
    fn corrupt_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = RemoteIndexFiles::open(dir.path(), 10_000).unwrap();
        f.append_segment(0, &entries(0, 2, 10)).unwrap();
        let p = dir.path().join("00000000000000000000.remoteLogIndex");
        let mut b = fs::read(&p).unwrap();
        b[30] ^= 1;
        fs::write(&p, b).unwrap();
        let e = f.lookup_offset(5).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt);
        assert!(e.to_string().contains("remoteLogIndex"), "{e}");
        fs::write(dir.path().join("00000000000000000000.remoteOffsetIndex"), [0u8; 5]).unwrap();
        assert!(f.lookup_offset(5).unwrap_err().to_string().contains("multiple of 8"));
    }
}
