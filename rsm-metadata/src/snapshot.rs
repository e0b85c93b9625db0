//! Snapshots of a metadata partition's state with the position it was read to (SR-31: a restart reads
//! only what came after).
//!
//! A snapshot file is `RSMSNAP1 | version u16 | next offset i64 | count u32 | count x (length u32 |
//! record value) | CRC-32C u32` of everything before it. Each record value is Kafka's own
//! `RemoteLogSegmentMetadataRecord` (with the segment's current state) or
//! `RemotePartitionDeleteMetadataRecord`, as [`crate::records`] encodes them.

use crate::cache::MetadataStore;
use crate::events::MetadataEvent;
use crate::log_file::{MAX_RECORD, sync_dir};
use crate::records;
use rsm_core::error::{Error, Result};
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"RSMSNAP1";
const VERSION: u16 = 1;

/// A metadata partition's state as a snapshot holds it.
#[derive(Debug)]
pub struct PartitionSnapshot {
    /// The position of the next event to read after this state.
    pub next_offset: i64,
    /// The state of the user partitions of the metadata partition.
    pub store: MetadataStore,
}

/// Writes `store` and `next_offset` to `path`, atomically (temporary file, fsync, rename, fsync of the
/// directory): after a crash `path` holds the old snapshot or the new one, whole.
pub fn save(path: &Path, next_offset: i64, store: &MetadataStore) -> Result<()> {
    let mut values = Vec::new();
    for (_, partition) in store.partitions() {
        for m in partition.segments() {
            values.push(records::encode(&MetadataEvent::Segment(m)));
        }
        if let Some(d) = partition.delete_state() {
            values.push(records::encode(&MetadataEvent::PartitionDelete(d.clone())));
        }
    }
    let mut out = Vec::with_capacity(32 + values.iter().map(|v| v.len() + 4).sum::<usize>());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&next_offset.to_be_bytes());
    out.extend_from_slice(&(values.len() as u32).to_be_bytes());
    for v in &values {
        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
        out.extend_from_slice(v);
    }
    let crc = rsm_core::checksum::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());

    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("snapshot.tmp");
    let io = |what: &str, e: std::io::Error| Error::storage(format!("{what} {}", tmp.display()), e);
    let mut file = File::create(&tmp).map_err(|e| io("creating", e))?;
    file.write_all(&out).map_err(|e| io("writing", e))?;
    file.sync_all().map_err(|e| io("syncing", e))?;
    drop(file);
    fs::rename(&tmp, path).map_err(|e| Error::storage(format!("renaming to {}", path.display()), e))?;
    sync_dir(dir, true)
}

/// Reads the snapshot at `path`: `None` when there is none; a damaged one is a corrupt error naming it.
pub fn load(path: &Path) -> Result<Option<PartitionSnapshot>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::storage(format!("reading snapshot {}", path.display()), e)),
    };
    let bad = |what: String| Error::corrupt(format!("metadata snapshot {}: {what}", path.display()));
    if bytes.len() < 26 || &bytes[..8] != MAGIC {
        return Err(bad("not a snapshot (no RSMSNAP1 header)".into()));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if rsm_core::checksum::crc32c(body) != u32::from_be_bytes(crc.try_into().expect("4 bytes")) {
        return Err(bad("its CRC-32C does not match".into()));
    }
    let version = u16::from_be_bytes([body[8], body[9]]);
    if version != VERSION {
        return Err(bad(format!("unknown version {version}")));
    }
    let next_offset = i64::from_be_bytes(body[10..18].try_into().expect("8 bytes"));
    let count = u32::from_be_bytes(body[18..22].try_into().expect("4 bytes"));
    let mut pos = 22;
    let mut store = MetadataStore::new();
    for i in 0..count {
        let len = body
            .get(pos..pos + 4)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
            .ok_or_else(|| bad(format!("record {i} of {count} is missing")))?;
        let value = body
            .get(pos + 4..)
            .filter(|rest| len <= MAX_RECORD && len <= rest.len())
            .map(|rest| &rest[..len])
            .ok_or_else(|| bad(format!("record {i} claims {len} bytes past the end")))?;
        match records::decode(value).map_err(|e| bad(format!("record {i}: {e}")))? {
            MetadataEvent::Segment(m) => store.restore(m),
            MetadataEvent::PartitionDelete(d) => store.restore_partition_delete(d),
            other => return Err(bad(format!("record {i} is not a segment or a partition delete: {other:?}"))),
        }
        pos += 4 + len;
    }
    if pos != body.len() {
        return Err(bad(format!("{} bytes after the last record", body.len() - pos)));
    }
    Ok(Some(PartitionSnapshot { next_offset, store }))
}
