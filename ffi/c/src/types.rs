//! The C structs of Kafka's types, and their conversion to and from the SDK's model. Conversion only:
//! what the fields mean and how they are checked is the core's.

use crate::boundary::{slice_arg, str_arg};
use rsm_core::format::manifest::Manifest;
use rsm_core::format::partition::parse_leader_epochs;
use rsm_core::{
    CustomMetadata, Error, LogSegmentData, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, Result,
    TopicIdPartition, TopicPartition, Uuid,
};
use std::collections::BTreeMap;
use std::ffi::{CString, c_char};
use std::path::PathBuf;

/// Kafka's `Uuid`: its two 64-bit halves, as Java's `getMostSignificantBits()` and
/// `getLeastSignificantBits()` return them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rsm_uuid {
    /// The most significant 64 bits.
    pub most_significant_bits: i64,
    /// The least significant 64 bits.
    pub least_significant_bits: i64,
}

impl From<rsm_uuid> for Uuid {
    fn from(u: rsm_uuid) -> Self {
        Uuid::new(u.most_significant_bits, u.least_significant_bits)
    }
}

impl From<Uuid> for rsm_uuid {
    fn from(u: Uuid) -> Self {
        rsm_uuid {
            most_significant_bits: u.most_significant_bits(),
            least_significant_bits: u.least_significant_bits(),
        }
    }
}

/// Kafka's `TopicIdPartition`. `topic` is borrowed: a NUL-terminated UTF-8 string, not NULL.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rsm_topic_id_partition {
    /// The topic id.
    pub topic_id: rsm_uuid,
    /// The topic name, NUL-terminated UTF-8 (NULL or not UTF-8: `RSM_RESULT_INVALID_ARGUMENT`).
    pub topic: *const c_char,
    /// The partition number.
    pub partition: i32,
}

/// One entry of a segment's leader-epoch map: the epoch and the first offset of the segment it covers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rsm_leader_epoch {
    /// The leader epoch.
    pub epoch: i32,
    /// The first offset written in that epoch within the segment.
    pub start_offset: i64,
}

/// Kafka's `RemoteLogSegmentMetadata`, field for field. Every pointer in it is borrowed by the call it is
/// passed to, for that call only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rsm_segment_metadata {
    /// The topic partition.
    pub topic_id_partition: rsm_topic_id_partition,
    /// The segment's id (`RemoteLogSegmentId.id`).
    pub segment_id: rsm_uuid,
    /// First offset, inclusive (`rsm_copy` refuses a negative one).
    pub start_offset: i64,
    /// Last offset, inclusive (`rsm_copy` refuses one below `start_offset`).
    pub end_offset: i64,
    /// Largest record timestamp in the segment (ms).
    pub max_timestamp_ms: i64,
    /// The broker that made this metadata.
    pub broker_id: i32,
    /// When this metadata event was made (ms).
    pub event_timestamp_ms: i64,
    /// Size of the `.log` file in bytes: `rsm_copy` refuses any other value (`RSM_RESULT_INVALID_ARGUMENT`,
    /// naming the size and the file), as it refuses a negative one.
    pub segment_size_in_bytes: i32,
    /// The leader-epoch map: `leader_epochs_len` entries, in any order (Kafka's map is ordered by epoch;
    /// so is the one `rsm_list_segments` returns). An epoch given twice is `RSM_RESULT_INVALID_ARGUMENT`;
    /// `rsm_copy` needs at least one entry. NULL only when the length is 0.
    pub leader_epochs: *const rsm_leader_epoch,
    /// The number of entries of `leader_epochs` (not 0 for `rsm_copy`).
    pub leader_epochs_len: usize,
    /// The custom metadata a copy returned, or NULL when there is none (non-NULL with length 0: present
    /// and empty). NULL with a non-zero length is `RSM_RESULT_INVALID_ARGUMENT`.
    pub custom_metadata: *const u8,
    /// The length of `custom_metadata`.
    pub custom_metadata_len: usize,
    /// The state: an `rsm_segment_state` value (Kafka's `RemoteLogSegmentState` ids 0 to 3; any other is
    /// `RSM_RESULT_INVALID_ARGUMENT`).
    pub state: i32,
    /// Whether the segment's transaction index is empty.
    pub txn_idx_empty: bool,
}

/// Kafka's `RemoteLogSegmentState` ids, for `rsm_segment_metadata.state`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub enum rsm_segment_state {
    /// The copy started.
    CopySegmentStarted = 0,
    /// The copy finished.
    CopySegmentFinished = 1,
    /// The deletion started.
    DeleteSegmentStarted = 2,
    /// The deletion finished.
    DeleteSegmentFinished = 3,
}

/// Kafka's `LogSegmentData`: the local files of a closed segment (the library reads them during the copy)
/// and the leader-epoch checkpoint bytes. Every pointer is borrowed for the call only. The paths are
/// NUL-terminated UTF-8 and not NULL (`transaction_index` excepted): NULL or not UTF-8 is
/// `RSM_RESULT_INVALID_ARGUMENT`; a file that does not exist is `RSM_RESULT_NOT_FOUND`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rsm_segment_files {
    /// Path of the `.log` file.
    pub log: *const c_char,
    /// Path of the `.index` file.
    pub offset_index: *const c_char,
    /// Path of the `.timeindex` file.
    pub time_index: *const c_char,
    /// Path of the `.txnindex` file, or NULL when the segment has none.
    pub transaction_index: *const c_char,
    /// Path of the producer snapshot (`.snapshot`).
    pub producer_snapshot: *const c_char,
    /// The leader-epoch checkpoint file's bytes, in Kafka's text format: a line `0` (the version), a line
    /// with the number of entries, then exactly that many `epoch startOffset` lines. Empty (length 0, and
    /// then NULL is allowed) when there is none, as Kafka reads an empty file. Malformed bytes, or NULL with
    /// a non-zero length, are `RSM_RESULT_INVALID_ARGUMENT`. Stored as given: `rsm_fetch_index` with
    /// `RSM_INDEX_TYPE_LEADER_EPOCH` returns them.
    pub leader_epoch_checkpoint: *const u8,
    /// The length of `leader_epoch_checkpoint` in bytes.
    pub leader_epoch_checkpoint_len: usize,
}

/// Kafka's `RemoteStorageManager.IndexType`, by ordinal, for `rsm_fetch_index`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub enum rsm_index_type {
    /// The `.index` file.
    Offset = 0,
    /// The `.timeindex` file.
    Timestamp = 1,
    /// The producer snapshot.
    ProducerSnapshot = 2,
    /// The `.txnindex` file (absent when the segment had none: `RSM_RESULT_NOT_FOUND`).
    Transaction = 3,
    /// The leader-epoch checkpoint.
    LeaderEpoch = 4,
}

/// Reads a topic partition argument.
///
/// # Safety
/// `tp.topic` is NULL or a NUL-terminated string valid for the call.
pub(crate) unsafe fn topic_id_partition(tp: &rsm_topic_id_partition, what: &str) -> Result<TopicIdPartition> {
    // SAFETY: the caller's contract.
    let topic = unsafe { str_arg(tp.topic, &format!("{what}.topic")) }?;
    Ok(TopicIdPartition::new(tp.topic_id.into(), TopicPartition::new(topic, tp.partition)))
}

/// Reads a metadata argument.
///
/// # Safety
/// The pointers in `md` are NULL or valid for their lengths (strings: NUL-terminated) for the call.
pub(crate) unsafe fn metadata(md: &rsm_segment_metadata, what: &str) -> Result<RemoteLogSegmentMetadata> {
    // SAFETY: the caller's contract, for each pointer.
    let tp = unsafe { topic_id_partition(&md.topic_id_partition, &format!("{what}.topic_id_partition")) }?;
    let epochs = unsafe { slice_arg(md.leader_epochs, md.leader_epochs_len, &format!("{what}.leader_epochs")) }?;
    let mut segment_leader_epochs = BTreeMap::new();
    for e in epochs {
        if segment_leader_epochs.insert(e.epoch, e.start_offset).is_some() {
            return Err(Error::invalid(format!("`{what}.leader_epochs` has epoch {} twice", e.epoch)));
        }
    }
    let custom_metadata = if md.custom_metadata.is_null() {
        // NULL is "none" only with length 0: a length with a NULL pointer is a host's bug, not an absence.
        if md.custom_metadata_len != 0 {
            return Err(Error::invalid(format!(
                "`{what}.custom_metadata` is NULL but its length is {}",
                md.custom_metadata_len
            )));
        }
        None
    } else {
        let b = unsafe { slice_arg(md.custom_metadata, md.custom_metadata_len, &format!("{what}.custom_metadata")) }?;
        Some(CustomMetadata(b.to_vec()))
    };
    let state = i8::try_from(md.state)
        .map_err(|_| Error::invalid(format!("`{what}.state` {} is not a segment state", md.state)))
        .and_then(RemoteLogSegmentState::for_id)
        .map_err(|e| e.context(format!("`{what}.state`")))?;
    Ok(RemoteLogSegmentMetadata {
        remote_log_segment_id: RemoteLogSegmentId::new(tp, md.segment_id.into()),
        start_offset: md.start_offset,
        end_offset: md.end_offset,
        max_timestamp_ms: md.max_timestamp_ms,
        broker_id: md.broker_id,
        event_timestamp_ms: md.event_timestamp_ms,
        segment_size_in_bytes: md.segment_size_in_bytes,
        segment_leader_epochs,
        custom_metadata,
        state,
        txn_idx_empty: md.txn_idx_empty,
    })
}

/// Reads a segment files argument.
///
/// # Safety
/// The pointers in `f` are NULL or valid for their lengths (strings: NUL-terminated) for the call.
pub(crate) unsafe fn segment_files(f: &rsm_segment_files, what: &str) -> Result<LogSegmentData> {
    // SAFETY: the caller's contract, for each pointer.
    let path = |p: *const c_char, field: &str| unsafe { str_arg(p, &format!("{what}.{field}")) }.map(PathBuf::from);
    Ok(LogSegmentData {
        log_segment: path(f.log, "log")?,
        offset_index: path(f.offset_index, "offset_index")?,
        time_index: path(f.time_index, "time_index")?,
        transaction_index: if f.transaction_index.is_null() {
            None
        } else {
            Some(path(f.transaction_index, "transaction_index")?)
        },
        producer_snapshot_index: path(f.producer_snapshot, "producer_snapshot")?,
        leader_epoch_index: bytes::Bytes::copy_from_slice(leader_epoch_checkpoint(
            unsafe {
                slice_arg(
                    f.leader_epoch_checkpoint,
                    f.leader_epoch_checkpoint_len,
                    &format!("{what}.leader_epoch_checkpoint"),
                )
            }?,
            &format!("{what}.leader_epoch_checkpoint"),
        )?),
    })
}

/// Checks a leader-epoch checkpoint argument: empty (Kafka reads an empty file as no entries), or Kafka's
/// text format, parsed by the core's reader, with no line after the entries its count line announces
/// (Kafka's reader refuses those too).
fn leader_epoch_checkpoint<'a>(text: &'a [u8], what: &str) -> Result<&'a [u8]> {
    if text.is_empty() {
        return Ok(text);
    }
    let bad = |why: &str| {
        Error::invalid(format!(
            "`{what}` is not a leader-epoch checkpoint ({why}); Kafka's format is a line `0`, a line with the \
             number of entries, then one `epoch startOffset` line per entry"
        ))
    };
    let entries = parse_leader_epochs(text, what).map_err(|e| {
        let m = e.message();
        bad(m.strip_prefix(what).and_then(|m| m.strip_prefix(": ")).unwrap_or(m))
    })?;
    // The reader stops after the announced entries; a line past them is malformed all the same. (The text
    // is UTF-8: the reader checked.)
    let n = entries.len();
    if let Some(extra) = std::str::from_utf8(text).ok().and_then(|t| t.lines().nth(n + 2)) {
        return Err(bad(&format!("line {} `{extra}` follows the {n} entries its count line announces", n + 3)));
    }
    Ok(text)
}

/// `rsm_copy`'s rule for `segment_size_in_bytes`: the length of the `.log` file, as a broker passes it
/// (`LogSegment.size()` of a closed segment). A file that cannot be read is left to the copy, which reports
/// it as the core does (a missing file is `RSM_RESULT_NOT_FOUND`); a negative size to the core's checks.
pub(crate) fn check_segment_size(
    md: &RemoteLogSegmentMetadata,
    data: &LogSegmentData,
    md_what: &str,
    files_what: &str,
) -> Result<()> {
    let size = md.segment_size_in_bytes;
    let Some(file) = std::fs::metadata(&data.log_segment).ok().filter(|m| m.is_file()) else {
        return Ok(());
    };
    if size >= 0 && file.len() != size as u64 {
        return Err(Error::invalid(format!(
            "`{md_what}.segment_size_in_bytes` {size} is not the length of `{files_what}.log` {} ({} bytes)",
            data.log_segment.display(),
            file.len()
        )));
    }
    Ok(())
}

/// One listed segment, an entry of an `rsm_segment_list`: the C struct and the buffers its pointers point
/// into (heap buffers, which do not move when the entry does).
pub(crate) struct ListedMetadata {
    pub(crate) c: rsm_segment_metadata,
    _topic: CString,
    _epochs: Vec<rsm_leader_epoch>,
    _custom: Option<Vec<u8>>,
}

/// What a present but empty custom metadata points to: never read (its length is 0), but not NULL.
static EMPTY: [u8; 1] = [0];

impl ListedMetadata {
    pub(crate) fn of(m: &Manifest) -> Result<Self> {
        let md = &m.metadata;
        let tp = &md.remote_log_segment_id.topic_id_partition;
        let topic = CString::new(tp.topic_partition.topic.as_str())
            .map_err(|_| Error::corrupt(format!("segment {}: the topic name holds a NUL", md.remote_log_segment_id)))?;
        let epochs: Vec<rsm_leader_epoch> = md
            .segment_leader_epochs
            .iter()
            .map(|(&epoch, &start_offset)| rsm_leader_epoch { epoch, start_offset })
            .collect();
        let custom = md.custom_metadata.as_ref().map(|c| c.0.clone());
        let c = rsm_segment_metadata {
            topic_id_partition: rsm_topic_id_partition {
                topic_id: tp.topic_id.into(),
                topic: topic.as_ptr(),
                partition: tp.topic_partition.partition,
            },
            segment_id: md.remote_log_segment_id.id.into(),
            start_offset: md.start_offset,
            end_offset: md.end_offset,
            max_timestamp_ms: md.max_timestamp_ms,
            broker_id: md.broker_id,
            event_timestamp_ms: md.event_timestamp_ms,
            segment_size_in_bytes: md.segment_size_in_bytes,
            leader_epochs: if epochs.is_empty() { std::ptr::null() } else { epochs.as_ptr() },
            leader_epochs_len: epochs.len(),
            custom_metadata: match &custom {
                None => std::ptr::null(),
                Some(c) if c.is_empty() => EMPTY.as_ptr(),
                Some(c) => c.as_ptr(),
            },
            custom_metadata_len: custom.as_ref().map_or(0, Vec::len),
            state: md.state as i32,
            txn_idx_empty: md.txn_idx_empty,
        };
        Ok(ListedMetadata { c, _topic: topic, _epochs: epochs, _custom: custom })
    }
}
