//! The remote layout: where each object of a segment lives.
//!
//! Three objects per segment, so a copy costs three uploads:
//! `{prefix}{topic}-{topicId}/{partition}/{startOffset:020}-{segmentId}.log` (the `.log` file as is),
//! `….indexes` (the five indexes back to back) and `….manifest` (written last: the commit point).

use crate::model::{RemoteLogSegmentMetadata, TopicIdPartition};

/// The object keys of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentKeys {
    /// The `.log` data.
    pub log: String,
    /// The index bundle.
    pub indexes: String,
    /// The manifest.
    pub manifest: String,
}

/// The key prefix of a partition: `{prefix}{topic}-{topicId}/{partition}/`.
pub fn partition_prefix(key_prefix: &str, tp: &TopicIdPartition) -> String {
    format!("{key_prefix}{}-{}/{}/", tp.topic_partition.topic, tp.topic_id, tp.topic_partition.partition)
}

/// The keys of the segment `metadata` describes.
pub fn segment_keys(key_prefix: &str, metadata: &RemoteLogSegmentMetadata) -> SegmentKeys {
    let id = &metadata.remote_log_segment_id;
    let base =
        format!("{}{:020}-{}", partition_prefix(key_prefix, &id.topic_id_partition), metadata.start_offset, id.id);
    SegmentKeys { log: format!("{base}.log"), indexes: format!("{base}.indexes"), manifest: format!("{base}.manifest") }
}

/// The key prefix of one partition, or of the whole store when `tp` is `None`.
pub fn scope_prefix(key_prefix: &str, tp: Option<&TopicIdPartition>) -> String {
    match tp {
        Some(tp) => partition_prefix(key_prefix, tp),
        None => key_prefix.to_string(),
    }
}
