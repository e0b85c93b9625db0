//! One partition directory as the engine works on it: a stable topic id, the segment summaries the
//! rules take, and the safe deletion of a local segment.

use rsm_core::error::{Error, Result};
use rsm_core::format::partition::{LocalPartition, LocalSegment};
use rsm_core::model::Uuid;
use rsm_tiering::LocalSegmentSummary;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The suffix a segment's `.log` gets while it is being deleted (Kafka's own): a segment so renamed is no
/// longer part of the log, and what is left of it is removed at the next open.
const DELETED_SUFFIX: &str = ".deleted";

/// A partition directory opened by the engine.
#[derive(Debug, Clone)]
pub struct LocalLog {
    partition: LocalPartition,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::from_io(path.display(), e)
}

impl LocalLog {
    /// Opens `dir` to work on it. A directory without `partition.metadata` gets one (Kafka's format, the
    /// topic id derived from the topic name, [`Uuid::for_topic_name`], written atomically), so that every
    /// later run, and the directory after a move to another log directory, names the same partition.
    /// Leftovers of an interrupted segment deletion are removed.
    pub fn open(dir: &Path) -> Result<Self> {
        refuse_if_broker_holds(dir)?;
        // Checks the directory's name and segments before anything is written into it.
        let partition = LocalPartition::open(dir)?;
        sweep_deleted(dir)?;
        if !dir.join("partition.metadata").exists() {
            write_partition_metadata(dir, &partition.topic_id_partition.topic_id)?;
            tracing::info!(dir = %dir.display(), topic_id = %partition.topic_id_partition.topic_id,
                "wrote partition.metadata with the topic id derived from the topic name");
        }
        Ok(LocalLog { partition: LocalPartition::open(dir)? })
    }

    /// Opens `dir` to read it, changing nothing: without `partition.metadata` the topic id is the one
    /// [`LocalLog::open`] would write; a segment whose deletion was interrupted is not part of the log.
    pub fn open_read_only(dir: &Path) -> Result<Self> {
        Ok(LocalLog { partition: LocalPartition::open(dir)? })
    }

    /// The directory as read.
    pub fn partition(&self) -> &LocalPartition {
        &self.partition
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.partition.dir
    }

    /// The summaries the copy and retention rules take, oldest first (the active segment last). The
    /// largest timestamp is the last entry of the segment's `.timeindex`, as Kafka reads it when it loads a
    /// segment; without one, the `.log` file's last-modified time, as Kafka does.
    pub fn summaries(&self) -> Result<Vec<LocalSegmentSummary>> {
        self.partition.segments.iter().map(summary).collect()
    }

    /// The log end offset the rules may assume: the active segment's base offset. Every closed segment
    /// lies below it, so they are all stable; the active segment is never copied.
    pub fn log_end_offset(&self) -> i64 {
        self.partition.segments.last().map_or(0, |s| s.base_offset)
    }

    /// The true local log end offset: the offset after the last batch of the active segment (its base
    /// offset when it is empty). Reads the active segment's batch headers, streaming.
    pub fn true_log_end_offset(&self) -> Result<i64> {
        let Some(active) = self.partition.segments.last() else {
            return Ok(0);
        };
        let len = fs::metadata(&active.log).map_err(io(&active.log))?.len();
        let mut end = active.base_offset;
        rsm_core::format::batch::scan_file(&active.log, len, false, |b| end = end.max(b.last_offset() + 1))
            .map_err(|e| e.context(active.log.display()))?;
        Ok(end)
    }

    /// Where the earliest transaction the segments from `from_base` on leave open begins (a transactional
    /// batch whose producer wrote no marker after it): the last stable offset (Kafka's LSO) when there is
    /// one. A transaction opened below `from_base` is not seen: the segments below it were stable when
    /// copied. Reads the batch headers of those segments, streaming.
    pub fn first_open_transaction(&self, from_base: i64) -> Result<Option<i64>> {
        let mut open = rsm_core::format::records::isolation::OpenTransactions::default();
        for seg in self.partition.segments.iter().filter(|s| s.next_offset.is_none_or(|n| n > from_base)) {
            let len = fs::metadata(&seg.log).map_err(io(&seg.log))?.len();
            rsm_core::format::batch::scan_file(&seg.log, len, false, |b| open.observe(b))
                .map_err(|e| e.context(seg.log.display()))?;
        }
        Ok(open.first_open_offset())
    }

    /// The offsets each segment holds, read from its batch headers (streaming): from its base offset to its
    /// last batch's last offset (the active segment: to the log end, and at least its base offset, where the
    /// log goes on). A segment with no batch holds nothing. What `rsm offsets` finds holes of the local log by
    /// (a segment removed by hand from the middle), without trusting the file names.
    pub fn held_ranges(&self) -> Result<Vec<rsm_tiering::OffsetRange>> {
        let mut out = Vec::with_capacity(self.partition.segments.len());
        for seg in &self.partition.segments {
            let len = fs::metadata(&seg.log).map_err(io(&seg.log))?.len();
            let mut last = None;
            rsm_core::format::batch::scan_file(&seg.log, len, false, |b| last = Some(b.last_offset()))
                .map_err(|e| e.context(seg.log.display()))?;
            let end = match (last, seg.next_offset) {
                (Some(l), _) => Some(l),
                (None, None) => Some(seg.base_offset),
                (None, Some(_)) => None,
            };
            if let Some(end) = end.filter(|&e| e >= seg.base_offset) {
                out.push(rsm_tiering::OffsetRange { start: seg.base_offset, end });
            }
        }
        Ok(out)
    }

    /// The segment starting at `base_offset`.
    pub fn segment(&self, base_offset: i64) -> Result<&LocalSegment> {
        self.partition
            .segments
            .iter()
            .find(|s| s.base_offset == base_offset)
            .ok_or_else(|| Error::not_found(format!("segment {base_offset} of {}", self.partition.dir.display())))
    }

    /// Deletes the closed segment at `base_offset`: its `.log` is renamed first (so a crash leaves either
    /// the whole segment or none of it in the log), then its indexes and the producer snapshot at its base
    /// offset, then the renamed file. The active segment is refused.
    pub fn delete_segment(&self, base_offset: i64) -> Result<()> {
        let seg = self.segment(base_offset)?;
        if seg.next_offset.is_none() {
            return Err(Error::invalid(format!(
                "segment {base_offset} of {} is the active segment and is never deleted",
                self.partition.dir.display()
            )));
        }
        let dir = &self.partition.dir;
        let deleted = dir.join(format!("{base_offset:020}.log{DELETED_SUFFIX}"));
        fs::rename(&seg.log, &deleted).map_err(io(&seg.log))?;
        fsync_dir(dir)?;
        remove_companions(dir, base_offset)?;
        fs::remove_file(&deleted).map_err(io(&deleted))?;
        Ok(())
    }
}

/// Refuses a partition directory whose log directory a running Kafka broker holds: a broker takes a POSIX
/// record lock on `.lock` in each of its log directories (`FileChannel.tryLock`), and the engine must never
/// copy from, or delete segments of, a log a broker is writing.
pub fn refuse_if_broker_holds(dir: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let Some(log_dir) = dir.parent() else { return Ok(()) };
    let lock = log_dir.join(".lock");
    let f = match fs::OpenOptions::new().read(true).write(true).open(&lock) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::from_io(lock.display(), e)),
    };
    // SAFETY: `flock` is plain data; zeroed is a valid value, then filled in.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: a valid open descriptor and a valid `flock`; F_GETLK only asks, it takes no lock.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut fl) } != 0 {
        return Err(Error::from_io(lock.display(), std::io::Error::last_os_error()));
    }
    if fl.l_type != libc::F_UNLCK as libc::c_short {
        return Err(Error::invalid(format!(
            "{}: its log directory is locked by process {} ({}), a running Kafka broker: the engine does not work \
             on a log a broker is writing",
            dir.display(),
            fl.l_pid,
            lock.display()
        )));
    }
    Ok(())
}

fn summary(seg: &LocalSegment) -> Result<LocalSegmentSummary> {
    let meta = fs::metadata(&seg.log).map_err(io(&seg.log))?;
    let timeindex = seg.log.with_extension("timeindex");
    let ts = match fs::read(&timeindex) {
        Ok(b) => last_time_entry(&b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::from_io(timeindex.display(), e)),
    };
    let largest_timestamp_ms = match ts {
        Some(ts) if ts >= 0 => ts,
        _ => meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64),
    };
    Ok(LocalSegmentSummary { base_offset: seg.base_offset, size_bytes: meta.len(), largest_timestamp_ms })
}

/// The timestamp of the last non-empty 12-byte entry (timestamp i64, relative offset i32) of a
/// `.timeindex`; an active segment's index is preallocated with zeros.
fn last_time_entry(bytes: &[u8]) -> Option<i64> {
    bytes
        .chunks_exact(12)
        .rev()
        .find(|e| e.iter().any(|&b| b != 0))
        .map(|e| i64::from_be_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]]))
}

fn remove_companions(dir: &Path, base_offset: i64) -> Result<()> {
    for ext in ["index", "timeindex", "txnindex", "snapshot"] {
        let p = dir.join(format!("{base_offset:020}.{ext}"));
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::from_io(p.display(), e)),
        }
    }
    Ok(())
}

/// Finishes deletions a crash interrupted: every `{base}.log.deleted` and its companions go.
fn sweep_deleted(dir: &Path) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(io(dir))?;
    let mut found: Vec<(i64, PathBuf)> = Vec::new();
    for e in entries {
        let e = e.map_err(io(dir))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if let Some(base) = name.strip_suffix(".log.deleted").and_then(|b| b.parse::<i64>().ok()) {
            found.push((base, e.path()));
        }
    }
    for (base, path) in found {
        remove_companions(dir, base)?;
        fs::remove_file(&path).map_err(io(&path))?;
        tracing::info!(file = %path.display(), "removed a segment whose deletion was interrupted");
    }
    Ok(())
}

fn fsync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Writes `partition.metadata` as Kafka does (`version: 0`, `topic_id: <id>`), under a temporary name
/// renamed into place.
fn write_partition_metadata(dir: &Path, topic_id: &Uuid) -> Result<()> {
    let tmp = dir.join("partition.metadata.tmp");
    let path = dir.join("partition.metadata");
    let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
    write!(f, "version: 0\ntopic_id: {topic_id}\n").map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    fs::rename(&tmp, &path).map_err(io(&path))?;
    fsync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_time_entry_skips_preallocated_zeros() {
        let mut b = Vec::new();
        b.extend_from_slice(&5i64.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&9i64.to_be_bytes());
        b.extend_from_slice(&2i32.to_be_bytes());
        b.extend_from_slice(&[0; 24]);
        assert_eq!(last_time_entry(&b), Some(9));
        assert_eq!(last_time_entry(&[0; 36]), None);
        assert_eq!(last_time_entry(&[]), None);
    }

    #[test]
    fn a_directory_without_partition_metadata_keeps_the_id_it_is_given() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("orders-3");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join(format!("{:020}.log", 0)), b"").unwrap();
        let first = LocalLog::open(&dir).unwrap().partition().topic_id_partition.clone();
        let second = LocalLog::open(&dir).unwrap().partition().topic_id_partition.clone();
        assert_eq!(first, second);
        assert_eq!(first.topic_partition.partition, 3);
        let text = fs::read_to_string(dir.join("partition.metadata")).unwrap();
        assert!(text.starts_with("version: 0\ntopic_id: "), "{text}");
    }

    #[test]
    fn a_log_directory_a_broker_holds_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("held-0");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join(format!("{:020}.log", 0)), b"").unwrap();
        let lock = t.path().join(".lock");
        fs::write(&lock, b"").unwrap();
        LocalLog::open(&dir).expect("an unlocked .lock is a stopped broker's");
        // Another process holds the lock as a broker does (a POSIX record lock, as Java's tryLock takes).
        let mut holder = std::process::Command::new("python3")
            .arg("-c")
            .arg("import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)")
            .arg(&lock)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "held");
        let e = LocalLog::open(&dir).unwrap_err();
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(e.to_string().contains("locked by process"), "{e}");
        assert!(e.to_string().contains(&lock.display().to_string()), "{e}");
    }

    #[test]
    fn an_interrupted_deletion_is_finished_at_open() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("t-0");
        fs::create_dir(&dir).unwrap();
        for name in [format!("{:020}.log.deleted", 0), format!("{:020}.index", 0), format!("{:020}.log", 10)] {
            fs::write(dir.join(name), b"").unwrap();
        }
        LocalLog::open(&dir).unwrap();
        let mut left: Vec<_> =
            fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, vec![format!("{:020}.log", 10), "partition.metadata".to_string()]);
    }
}
