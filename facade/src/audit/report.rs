//! What an audit is asked ([`AuditOptions`]) and what it finds ([`Report`]): the findings of each partition
//! by class, the objects left alone, the incomplete uploads, what was deleted or aborted, and how each
//! key-encryption key fared.

use rsm_core::RemoteLogSegmentState;
use rsm_core::backend::IncompleteUpload;
use std::collections::BTreeMap;
use std::time::Duration;

/// What to check and do.
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// Only this topic.
    pub topic: Option<String>,
    /// Check presence and manifests only, without reading the data.
    pub quick: bool,
    /// Objects younger than this are never orphans to delete, and segments in progress for less are not
    /// stuck.
    pub min_age: Duration,
    /// Delete the orphans (older than `min_age`), and abort the incomplete uploads to segments' keys last
    /// written at least `min_age` ago.
    pub delete_orphans: bool,
}

impl AuditOptions {
    /// Whether the topic `topic` is audited.
    pub(super) fn topic_in_scope(&self, topic: &str) -> bool {
        self.topic.as_deref().is_none_or(|t| t == topic)
    }

    /// Whether the partition `partition` (`topic-partition`, topic id) of an object's key is audited: its
    /// topic is what comes before the last `-`.
    pub(super) fn partition_in_scope(&self, partition: &(String, String)) -> bool {
        self.topic_in_scope(partition.0.rsplit_once('-').map_or("", |(t, _)| t))
    }
}

/// A segment the metadata says is copied whose objects are missing, whose manifest does not read, or whose
/// data fails verification: data loss.
#[derive(Debug, Clone)]
pub struct LostSegment {
    /// The segment id.
    pub segment_id: String,
    /// Its start offset.
    pub start_offset: i64,
    /// What is wrong.
    pub problem: String,
}

/// A copied segment that could not be checked for want of a setting or a key (a configuration error, not
/// data loss), or because the key of its key id does not open its data key (a wrong key, not data loss).
#[derive(Debug, Clone)]
pub struct UnverifiedSegment {
    /// The segment id.
    pub segment_id: String,
    /// Its start offset.
    pub start_offset: i64,
    /// What is wrong.
    pub problem: String,
    /// The key-encryption key id, when that key is what is wrong.
    pub key_id: Option<String>,
}

/// Offsets no copied segment holds between a partition's remote log start and end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// The first offset not held.
    pub first_offset: i64,
    /// The last offset not held.
    pub last_offset: i64,
}

/// An object no metadata references, or a temporary object of an interrupted upload: garbage.
#[derive(Debug, Clone)]
pub struct Orphan {
    /// Its key.
    pub key: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Last written at least the safety age ago, so old enough to delete.
    pub older_than_min_age: bool,
}

/// A whole segment (its manifest reads, as the segment its key names, and its objects are all there) that
/// no metadata references. Never deleted by the orphan sweep: a wrong or empty metadata log must not wipe
/// the store.
#[derive(Debug, Clone)]
pub struct UnreferencedSegment {
    /// The segment id.
    pub segment_id: String,
    /// Its start offset, as its manifest says.
    pub start_offset: i64,
    /// The bytes of its objects.
    pub bytes: u64,
}

/// A segment no finished copy references whose commit object (manifest, or one-object `.segment`) is in
/// the store, so it was committed (an upload cut short never writes its manifest), but that is not whole:
/// the manifest does not read, or an object is missing. Never deleted by the orphan sweep, whatever the
/// safety age.
#[derive(Debug, Clone)]
pub struct DamagedSegment {
    /// The segment id.
    pub segment_id: String,
    /// Its start offset, as its key names it (-1 when the key does not read).
    pub start_offset: i64,
    /// The bytes of its objects.
    pub bytes: u64,
    /// What is wrong.
    pub problem: String,
    /// Its object keys, sorted.
    pub keys: Vec<String>,
}

/// A segment in copy started or delete started for longer than the safety age.
#[derive(Debug, Clone)]
pub struct StuckSegment {
    /// The segment id.
    pub segment_id: String,
    /// The state it is stuck in.
    pub state: RemoteLogSegmentState,
    /// When it entered that state (ms since the epoch).
    pub since_ms: i64,
}

/// A copy started at least the safety age ago, never finished, whose offsets finished copies hold (a leader
/// died while copying, and the next one copied the offsets again). Its objects are orphans.
#[derive(Debug, Clone)]
pub struct AbandonedCopy {
    /// The segment id.
    pub segment_id: String,
    /// Its start offset.
    pub start_offset: i64,
    /// When the copy started (ms since the epoch).
    pub since_ms: i64,
}

/// One partition's findings, by class.
#[derive(Default, Debug)]
pub struct PartitionReport {
    /// Segments the metadata says are copied.
    pub copied: usize,
    /// Copied segments that are missing or damaged.
    pub lost: Vec<LostSegment>,
    /// Copied segments that could not be checked.
    pub unverified: Vec<UnverifiedSegment>,
    /// Offsets no copied segment holds between the remote log start and end, oldest first.
    pub gaps: Vec<Gap>,
    /// Objects no metadata references.
    pub orphans: Vec<Orphan>,
    /// Whole segments no metadata references (the UNREFERENCED class): kept.
    pub unreferenced: Vec<UnreferencedSegment>,
    /// Committed segments no finished copy references that are not whole: kept.
    pub damaged: Vec<DamagedSegment>,
    /// Segments stuck in copy started or delete started.
    pub stuck: Vec<StuckSegment>,
    /// Copies abandoned by a leader that died.
    pub abandoned: Vec<AbandonedCopy>,
}

/// An incomplete multipart upload under the store's prefix.
#[derive(Debug)]
pub struct UploadFinding {
    /// The upload, as the store lists it.
    pub upload: IncompleteUpload,
    /// The partition (`topic-partition`) of its key when named like a segment's object; `None`: someone
    /// else's upload, left alone.
    pub partition: Option<String>,
    /// Last written (started, or a part sent) at least the safety age ago.
    pub old: bool,
}

/// An object under the prefix that is not named like a segment's objects: counted, listed, never deleted.
#[derive(Debug, Clone)]
pub struct LeftAlone {
    /// Its key.
    pub key: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// An incomplete multipart upload that was aborted.
#[derive(Debug, Clone)]
pub struct AbortedUpload {
    /// The key it was uploading.
    pub key: String,
    /// The upload id.
    pub upload_id: String,
}

/// The audit of a whole store.
#[derive(Default, Debug)]
pub struct Report {
    /// By partition (`topic-partition` and topic id), sorted.
    pub partitions: BTreeMap<(String, String), PartitionReport>,
    /// Objects under the prefix that are not named like a segment's objects.
    pub left_alone: Vec<LeftAlone>,
    /// Keys of the orphans deleted.
    pub deleted: Vec<String>,
    /// Incomplete multipart uploads under the prefix, by key.
    pub uploads: Vec<UploadFinding>,
    /// Uploads aborted.
    pub aborted: Vec<AbortedUpload>,
    /// Per key-encryption key id, how the copied segments wrapped under it fared (checked without
    /// [`AuditOptions::quick`]).
    pub keys: BTreeMap<String, KeyTally>,
}

/// How the copied segments wrapped under one key-encryption key id fared.
#[derive(Default, Debug, Clone, Copy)]
pub struct KeyTally {
    /// Segments whose data key the configured key opened (they verified).
    pub opened: usize,
    /// Segments whose data key it did not open.
    pub refused: usize,
}

impl KeyTally {
    /// Whether the configured key is probably not the key of its id: it opened none of the segments wrapped
    /// under that id, and refused some.
    pub fn probably_wrong(&self) -> bool {
        self.opened == 0 && self.refused > 0
    }
}

impl Report {
    /// Copied segments missing or damaged, in all partitions.
    pub fn lost(&self) -> usize {
        self.count(|p| p.lost.len())
    }

    /// What `per_partition` counts in each partition, summed over all partitions.
    pub fn count(&self, per_partition: impl Fn(&PartitionReport) -> usize) -> usize {
        self.partitions.values().map(per_partition).sum()
    }

    /// Bytes of the orphans, in all partitions.
    pub fn orphan_bytes(&self) -> u64 {
        self.partitions.values().flat_map(|p| p.orphans.iter().map(|o| o.bytes)).sum()
    }

    /// Bytes of the damaged segments kept, in all partitions.
    pub fn damaged_bytes(&self) -> u64 {
        self.partitions.values().flat_map(|p| p.damaged.iter().map(|d| d.bytes)).sum()
    }

    /// Bytes of the incomplete uploads' parts (those the store told).
    pub fn upload_bytes(&self) -> u64 {
        self.uploads.iter().filter_map(|f| f.upload.bytes).sum()
    }
}
