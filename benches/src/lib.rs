//! Shared fixtures of the rsm benchmarks: realistic Kafka data generated quickly (in memory or as a
//! partition directory), the manifest of a large segment, and the few Linux helpers the side-by-side
//! harness needs (batch positions of a `.log` file, filesystem type, reflink and `copy_file_range`
//! probes, and the process memory counters of `/proc/self/status`).

#![warn(missing_docs)]

use rsm_core::format::batch::batch_size_at;
use rsm_core::format::chunk::{ChunkEntry, Rdi, RdiObject, Transform};
use rsm_core::format::manifest::{IndexLocation, Manifest};
use rsm_core::model::{RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition, Uuid};
use rsm_core::testkit::log_writer::{PartitionWriter, Record, Rng, encode_batch};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One mebibyte.
pub const MIB: usize = 1 << 20;

/// Fills `buf` with pseudo-random bytes, eight per generator step (fast enough to write a gigabyte in
/// well under a second).
pub fn fill_random(rng: &mut Rng, buf: &mut [u8]) {
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let rest = words.into_remainder();
    if !rest.is_empty() {
        let v = rng.next_u64().to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&v[..n]);
    }
}

/// The shape of generated records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataShape {
    /// Records in each batch.
    pub records_per_batch: usize,
    /// Bytes of each record's value.
    pub value_bytes: usize,
    /// Seed of the content.
    pub seed: u64,
}

impl Default for DataShape {
    /// 16 records of 1 KiB per batch: about 16.5 KiB batches, the size a producer with the default
    /// `batch.size` (16 KiB) sends.
    fn default() -> Self {
        DataShape { records_per_batch: 16, value_bytes: 1024, seed: 42 }
    }
}

/// Records as a producer sends them: short keys, pseudo-random values, one header, timestamps 1 to 10 ms
/// apart.
#[derive(Debug, Clone)]
pub struct RecordSource {
    rng: Rng,
    shape: DataShape,
    timestamp: i64,
}

impl RecordSource {
    /// A source of records of `shape`.
    pub fn new(shape: DataShape) -> Self {
        RecordSource { rng: Rng::new(shape.seed), shape, timestamp: 1_700_000_000_000 }
    }

    /// The records of the next batch, whose first record gets offset `base_offset`.
    pub fn next_batch(&mut self, base_offset: i64) -> Vec<Record> {
        (0..self.shape.records_per_batch)
            .map(|i| {
                self.timestamp += 1 + self.rng.below(10) as i64;
                let offset = base_offset + i as i64;
                let mut value = vec![0u8; self.shape.value_bytes];
                fill_random(&mut self.rng, &mut value);
                Record {
                    key: Some(format!("key-{}", offset % 1000).into_bytes()),
                    value: Some(value),
                    headers: vec![("h".to_string(), offset.to_string().into_bytes())],
                    timestamp: self.timestamp,
                }
            })
            .collect()
    }
}

/// Whole v2 record batches (valid CRC-32C, consecutive offsets from 0) back to back, at least
/// `target_bytes` of them.
pub fn batch_buffer(target_bytes: usize, shape: DataShape) -> Vec<u8> {
    let mut src = RecordSource::new(shape);
    let mut out = Vec::with_capacity(target_bytes + 64 * 1024);
    let mut offset = 0i64;
    while out.len() < target_bytes {
        let records = src.next_batch(offset);
        out.extend_from_slice(&encode_batch(offset, 0, &records));
        offset += records.len() as i64;
    }
    out
}

const EVENTS: [&str; 8] = ["page_view", "add_to_cart", "checkout", "login", "logout", "search", "click", "purchase"];
const COUNTRIES: [&str; 10] = ["FI", "DE", "FR", "US", "GB", "SE", "JP", "BR", "IN", "ES"];
const PLANS: [&str; 4] = ["free", "basic", "pro", "enterprise"];
const PAGES: [&str; 7] = ["products", "cart", "search", "account", "help", "blog", "home"];
const AGENTS: [&str; 4] = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
];

/// A JSON-like event of about 400 bytes for offset `offset`, the shape `TransformsBench` (Java) writes:
/// compressible about 6 to 1 by zstd.
pub fn json_value(r: &mut Rng, offset: i64) -> Vec<u8> {
    let mut pick = |a: &[&'static str]| a[r.below(a.len() as u64) as usize];
    let (event, country, plan, page) = (pick(&EVENTS), pick(&COUNTRIES), pick(&PLANS), pick(&PAGES));
    let (referrer, agent, tag_plan, tag_event) = (pick(&PAGES), pick(&AGENTS), pick(&PLANS), pick(&EVENTS));
    format!(
        r#"{{"event_id":{offset},"ts":{},"type":"{event}","user":{{"id":"user-{}","country":"{country}","plan":"{plan}"}},"session":"{:x}","page":"/{page}/{}","referrer":"https://www.example.com/{referrer}","ua":"{agent}","amount":{}.{},"items":{},"tags":["{tag_plan}","{tag_event}"],"ok":{}}}"#,
        1_700_000_000_000 + offset * 7 + r.below(7) as i64,
        10_000 + r.below(90_000),
        r.next_u64(),
        r.below(5000),
        r.below(500),
        10 + r.below(90),
        r.below(10),
        r.below(2) == 1
    )
    .into_bytes()
}

/// The records of a batch of 40 JSON-like events ([`json_value`], about 16 KiB) from `base`, keyed by user.
pub fn json_records(r: &mut Rng, base: i64) -> Vec<Record> {
    (0..40)
        .map(|i| Record {
            key: Some(format!("user-{}", (base + i) % 1000).into_bytes()),
            value: Some(json_value(r, base + i)),
            headers: vec![],
            timestamp: 1_700_000_000_000 + base + i,
        })
        .collect()
}

/// Whole v2 batches of JSON-like events ([`json_records`]) back to back, at least `target_bytes` of them.
pub fn json_batch_buffer(target_bytes: usize) -> Vec<u8> {
    let mut rng = Rng::new(42);
    let mut out = Vec::with_capacity(target_bytes + 64 * 1024);
    let mut offset = 0i64;
    while out.len() < target_bytes {
        out.extend_from_slice(&encode_batch(offset, 0, &json_records(&mut rng, offset)));
        offset += 40;
    }
    out
}

/// Writes the Kafka partition directory `dir` (named `topic-partition`) with a first, closed segment of
/// just under `segment_bytes` (the next batch would not have fitted) and a small active one after it,
/// with its `.index`, `.timeindex`, producer snapshot and leader-epoch checkpoint.
pub fn write_partition(dir: &Path, segment_bytes: usize, shape: DataShape) -> rsm_core::Result<PathBuf> {
    write_partition_of(dir, segment_bytes, 1, shape)
}

/// [`write_partition`] with `segments` closed segments of about `segment_bytes` each.
pub fn write_partition_of(
    dir: &Path,
    segment_bytes: usize,
    segments: usize,
    shape: DataShape,
) -> rsm_core::Result<PathBuf> {
    let mut w = PartitionWriter::create(dir, Uuid::random(), segment_bytes, 4096)?;
    let mut src = RecordSource::new(shape);
    // Batches only grow (longer keys and header values), so the first one's size underestimates the
    // rest: writing this many more bytes than the segments hold always rolls the last one.
    let mut first_len = None;
    let mut appended = 0usize;
    while appended < segment_bytes * segments + 4 * segments * first_len.unwrap_or(0) {
        let records = src.next_batch(w.next_offset());
        let len = *first_len.get_or_insert_with(|| encode_batch(0, 0, &records).len());
        w.append(&records)?;
        appended += len;
    }
    w.finish()
}

/// The manifest a copy of a `log_length`-byte segment cut in `chunk_size` chunks writes: a segment of
/// about 1 KiB records, the four indexes a segment without transactions has, and a full chunk table.
pub fn synthetic_manifest(log_length: u64, chunk_size: u32) -> Manifest {
    let tp = TopicIdPartition::new(Uuid::random(), TopicPartition::new("orders", 7));
    let id = RemoteLogSegmentId::generate_new(tp);
    let seg_id = id.id;
    let start_offset = 1_000_000i64;
    let records_per_chunk = (chunk_size as i64 / 1_050).max(1);
    let n_chunks = log_length.div_ceil(chunk_size as u64);
    let end_offset = start_offset + records_per_chunk * n_chunks as i64 - 1;
    let first_ts = 1_700_000_000_000i64;
    let mut chunks = Vec::with_capacity(n_chunks as usize);
    for i in 0..n_chunks {
        let position = i * chunk_size as u64;
        let data_length = (log_length - position).min(chunk_size as u64) as u32;
        let first_offset = start_offset + i as i64 * records_per_chunk;
        chunks.push(ChunkEntry {
            first_offset,
            last_offset: first_offset + records_per_chunk - 1,
            first_timestamp: first_ts + (first_offset - start_offset) * 5,
            last_timestamp: first_ts + (first_offset + records_per_chunk - 1 - start_offset) * 5,
            data_length,
            rdi: Rdi {
                object: RdiObject::Log,
                transform: Transform::None,
                segment_start_offset: start_offset,
                segment_id: seg_id,
                stored_position: position,
                stored_length: data_length,
                crc32c: (i as u32).wrapping_mul(0x9E37_79B9),
                original_position: position,
                stored_crc32c: (i as u32).wrapping_mul(0x9E37_79B9),
            },
        });
    }
    let max_ts = chunks.last().map_or(first_ts, |c| c.last_timestamp);
    let epochs = BTreeMap::from([(3, start_offset), (4, start_offset + 100_000)]);
    let size = i32::try_from(log_length).expect("a Kafka segment is below 2 GiB");
    let metadata =
        RemoteLogSegmentMetadata::new(id, start_offset, end_offset, max_ts, 1, first_ts, size, epochs).expect("valid");
    // Kafka's index sizes for such a segment: an entry every 4 KiB (8 bytes in `.index`, 12 in
    // `.timeindex`), a 10-byte producer snapshot, a short leader-epoch checkpoint.
    let entries = log_length / 4096;
    let lens = [Some(entries * 8), Some(entries * 12), Some(10), None, Some(20)];
    let mut indexes = [None; 5];
    let mut position = 0;
    for (slot, len) in indexes.iter_mut().zip(lens) {
        if let Some(length) = len {
            *slot = Some(IndexLocation { position, length, crc32c: length as u32 });
            position += length;
        }
    }
    let block_size = rsm_core::format::chunk::DEFAULT_BLOCK_SIZE;
    let blocks: usize = chunks.iter().map(|c| (c.data_length as usize).div_ceil(block_size as usize)).sum();
    let block_crcs = (0..blocks as u32).map(|i| i.wrapping_mul(0x85EB_CA6B)).collect();
    Manifest {
        metadata,
        log_length,
        chunk_target: chunk_size,
        indexes,
        chunks,
        block_size,
        block_crcs,
        encryption: None,
        frames: None,
        stored_as: Default::default(),
    }
}

/// Byte positions of every batch of the `.log` file at `path`, read header by header (the file is never
/// held in memory).
pub fn batch_positions(path: &Path) -> io::Result<Vec<u64>> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut header = [0u8; 17];
    let mut out = Vec::new();
    let mut pos = 0u64;
    while pos < len {
        file.read_exact_at(&mut header, pos)?;
        let size = batch_size_at(&header, pos).map_err(io::Error::other)?.expect("a 17-byte header tells the size");
        out.push(pos);
        pos += size as u64;
    }
    if pos != len {
        return Err(io::Error::other(format!("{}: last batch runs past the end", path.display())));
    }
    Ok(out)
}

/// The filesystem type of `path` (from `statfs`): a name for the common ones, else the magic in hex.
pub fn fs_type(path: &Path) -> io::Result<String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized, writable statfs.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let t = st.f_type;
    Ok(match t {
        libc::EXT4_SUPER_MAGIC => "ext2/3/4".to_string(),
        libc::XFS_SUPER_MAGIC => "xfs".to_string(),
        libc::BTRFS_SUPER_MAGIC => "btrfs".to_string(),
        libc::TMPFS_MAGIC => "tmpfs".to_string(),
        libc::OVERLAYFS_SUPER_MAGIC => "overlayfs".to_string(),
        libc::NFS_SUPER_MAGIC => "nfs".to_string(),
        other => format!("{other:#x}"),
    })
}

/// Whether `FICLONE` (reflink) and `copy_file_range` work between two files created in `dir`.
pub fn probe_copy_paths(dir: &Path) -> io::Result<(bool, bool)> {
    use std::os::fd::AsRawFd;
    const FICLONE: libc::c_ulong = 0x4004_9409;
    let src_path = dir.join(".probe-src");
    let dst_path = dir.join(".probe-dst");
    fs::write(&src_path, vec![7u8; 64 * 1024])?;
    let src = File::open(&src_path)?;
    let result = (|| {
        let dst = File::create(&dst_path)?;
        // SAFETY: both descriptors stay open for the duration of the calls.
        let reflink = unsafe { libc::ioctl(dst.as_raw_fd(), FICLONE as _, src.as_raw_fd()) } == 0;
        let dst = File::create(&dst_path)?;
        // SAFETY: as above; null offsets use (and advance) the files' own offsets.
        let n = unsafe {
            libc::copy_file_range(
                src.as_raw_fd(),
                std::ptr::null_mut(),
                dst.as_raw_fd(),
                std::ptr::null_mut(),
                64 * 1024,
                0,
            )
        };
        Ok((reflink, n > 0))
    })();
    let _ = fs::remove_file(&src_path);
    let _ = fs::remove_file(&dst_path);
    result
}

/// A `/proc/self/status` counter in KiB (`VmRSS`, `VmHWM`, `RssAnon`, `RssFile`, …).
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// Resets `VmHWM` to the current RSS (`echo 5 > /proc/self/clear_refs`, Linux 4.0+); false if refused.
pub fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Mappings of this process whose backing file lies under `dir` (the benchmarks expect none: no data
/// file is ever mmapped, so RSS is the process's own memory).
pub fn mappings_under(dir: &Path) -> usize {
    let dir = dir.to_string_lossy();
    fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().filter(|l| l.contains(dir.as_ref())).count())
}

/// The value at quantile `q` (0 to 1, nearest rank) of sorted `v`.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> T {
    assert!(!sorted.is_empty(), "quantile of nothing");
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::format::batch::BatchIter;

    #[test]
    fn generated_batches_and_manifest_are_valid() {
        let buf = batch_buffer(MIB, DataShape::default());
        let n = BatchIter::new(&buf, 0, true).map(|b| b.unwrap().record_count() as usize).sum::<usize>();
        assert!(buf.len() >= MIB && n * 1024 > MIB * 9 / 10, "{n} records");
        let m = synthetic_manifest(1 << 30, 4 << 20);
        assert_eq!(m.chunks.len(), 256);
        let bytes = m.encode();
        assert_eq!(Manifest::decode(&bytes, "k").unwrap(), m);
        assert_eq!(quantile(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5), 5);
        assert_eq!(quantile(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9), 9);
    }

    #[test]
    fn partition_has_one_closed_segment_near_the_roll_size() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = write_partition(&tmp.path().join("t-0"), 256 * 1024, DataShape::default()).unwrap();
        let p = rsm_core::format::partition::LocalPartition::open(&dir).unwrap();
        let seg = &p.closed_segments()[0];
        let len = fs::metadata(&seg.log).unwrap().len();
        assert!(len <= 256 * 1024 && len > 256 * 1024 - 20 * 1024, "{len}");
        let positions = batch_positions(&seg.log).unwrap();
        assert_eq!(positions[0], 0);
        assert!(p.segment_data(seg).is_ok());
    }
}
