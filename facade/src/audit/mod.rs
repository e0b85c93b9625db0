//! The audit of a store against its remote log metadata: does the store hold what the metadata promises,
//! and what in the store is garbage? One call, [`audit`], returns a [`Report`] a face prints (`rsm audit`)
//! or a host reads.
//!
//! The metadata (every segment that has not finished deletion, in whatever state) is compared with one
//! listing of the store:
//! - a segment the metadata says is copied (`COPY_SEGMENT_FINISHED`) whose objects are missing, whose
//!   manifest does not read, or (unless [`AuditOptions::quick`]) whose data fails verification is **lost**
//!   (data loss); one whose data key the configured key of its id does not open is **unverified** (a wrong
//!   key is not data loss), and so is one a missing key or setting keeps from being checked;
//! - offsets no copied segment holds between a partition's remote log start and end are a **gap**;
//! - a segment no metadata references whose manifest (or one-object `.segment`) is in the store is
//!   committed (an upload cut short never writes its manifest): kept, as **unreferenced** when whole, as
//!   **damaged** (with its bytes) when its manifest does not read or an object is missing;
//! - any other object whose segment no metadata references (never known, or deletion finished), and a
//!   temporary object of an interrupted upload, is an **orphan**, with its bytes;
//! - a multipart upload never completed nor aborted (a crash mid-upload; S3) is an **incomplete upload**,
//!   with its parts' bytes and age: invisible in listings, billed until aborted;
//! - a segment in copy started or delete started for longer than the safety age is **stuck**, unless it
//!   is a copy started and never finished whose offsets finished copies hold: a copy **abandoned** by a
//!   leader that died (Kafka keeps its copy-started record until retention passes it, and never finishes
//!   it), whose objects, if it left any, are orphans.
//!
//! With [`AuditOptions::delete_orphans`] the audit deletes the orphans last written at least the safety age
//! ago and aborts the incomplete uploads to segments' keys last written (started, or a part sent) at least
//! the safety age ago, and nothing else; it refuses when every such orphan is in a partition the metadata
//! knows nothing of.
//!
//! The metadata is the caller's to read (a local metadata log, or a cluster's metadata topic through
//! `rsm_metadata::kafka`), so that this crate, which every face links, does not link a Kafka client.

mod cleanup;
mod keys;
mod promised;
mod report;
mod unreferenced;

pub use keys::{refusal, refused_key};
pub use report::{
    AbandonedCopy, AbortedUpload, AuditOptions, DamagedSegment, Gap, KeyTally, LeftAlone, LostSegment, Orphan,
    PartitionReport, Report, StuckSegment, UnreferencedSegment, UnverifiedSegment, UploadFinding,
};

use crate::Store;
use rsm_core::backend::{ObjectMeta, TemporaryObject};
use rsm_core::storage::parse_segment_key;
use rsm_core::{RemoteLogSegmentMetadata, Result, TopicIdPartition};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

/// Audits `store` against `segments` (every segment the metadata holds, in any state but delete finished)
/// as `opts` asks. Fails when the store cannot be listed, when `opts.delete_orphans` is refused (every old
/// orphan is in a partition the metadata does not know: nothing is deleted), or when a deletion or an abort
/// fails.
pub fn audit(store: &Store, segments: &[RemoteLogSegmentMetadata], opts: &AuditOptions) -> Result<Report> {
    let prefix = store.storage().config().key_prefix.clone();
    let aiven_prefix = store.storage().aiven_key_prefix().map(str::to_string);
    let (mut objects, temporary) = store.list_objects()?;
    // The segments Aiven's plugin stored, when they are read, under their own prefix too.
    if let Some(p) = aiven_prefix.as_deref().filter(|p| !p.starts_with(prefix.as_str())) {
        let known: HashSet<String> = objects.iter().map(|o| o.key.clone()).collect();
        let theirs = crate::runtime().block_on(store.storage().backend().list(p))?;
        objects.extend(theirs.into_iter().filter(|o| !known.contains(&o.key)));
    }
    let uploads = store.list_incomplete_uploads()?;
    let mut report = Report::default();
    let prefixes = Prefixes { ours: &prefix, aiven: aiven_prefix.as_deref() };
    let mut by_segment: HashMap<String, Vec<&ObjectMeta>> = HashMap::new();
    for o in &objects {
        match prefixes.owner(&o.key) {
            Some((_, id)) => by_segment.entry(id).or_default().push(o),
            None if o.key.starts_with(prefix.as_str()) => {
                report.left_alone.push(LeftAlone { key: o.key.clone(), bytes: o.size })
            }
            None => {}
        }
    }
    let listing = Listing { prefixes, objects: &objects, temporary: &temporary, by_segment, now: SystemTime::now() };

    let abandoned = promised::check_segments(store, segments, opts, &listing, &mut report);
    // A segment a copy abandoned is referenced by no finished copy: its objects are judged as the store's.
    let referenced: HashSet<String> =
        segments.iter().map(|m| m.remote_log_segment_id.id.to_string()).filter(|id| !abandoned.contains(id)).collect();
    let kept = unreferenced::check_committed(store, &referenced, opts, &listing, &mut report);
    unreferenced::collect_orphans(&referenced, &kept, opts, &listing, &mut report);
    unreferenced::check_uploads(uploads, opts, &listing, &mut report);

    if opts.delete_orphans {
        cleanup::delete_orphans(store, segments, &mut report)?;
    }
    Ok(report)
}

/// The key prefixes segments are stored under: ours, and Aiven's plugin's when its segments are read.
#[derive(Clone, Copy)]
struct Prefixes<'a> {
    ours: &'a str,
    aiven: Option<&'a str>,
}

impl Prefixes<'_> {
    /// What a segment object's key names, under either prefix.
    fn segment_key(&self, key: &str) -> Option<rsm_core::storage::SegmentKey> {
        parse_segment_key(self.ours, key).or_else(|| parse_segment_key(self.aiven?, key))
    }

    /// [`object_owner`] under either prefix.
    fn owner(&self, key: &str) -> Option<((String, String), String)> {
        object_owner(key, self.ours).or_else(|| object_owner(key, self.aiven?))
    }
}

/// One listing of the store, read once at the start of an audit.
struct Listing<'a> {
    /// The prefixes segments are stored under.
    prefixes: Prefixes<'a>,
    /// Every object under the prefixes.
    objects: &'a [ObjectMeta],
    /// The temporary objects of uploads.
    temporary: &'a [TemporaryObject],
    /// The objects named like a segment's, by segment id.
    by_segment: HashMap<String, Vec<&'a ObjectMeta>>,
    /// When the listing was read: the time ages are measured from.
    now: SystemTime,
}

impl Listing<'_> {
    /// Whether `meta` was last written at least `min_age` before the listing.
    fn old(&self, meta: &ObjectMeta, min_age: Duration) -> bool {
        meta.last_modified.is_some_and(|t| self.now.duration_since(t).unwrap_or_default() >= min_age)
    }
}

/// The partition (`topic-partition`, topic id) and segment id of a segment object's key
/// (`{prefix}{topic}-{topicId}/{partition}/{startOffset:020}-{segmentId}.{ext}`), as the layout reads it.
fn object_owner(key: &str, prefix: &str) -> Option<((String, String), String)> {
    let k = parse_segment_key(prefix, key)?;
    Some((partition_key(&k.topic_id_partition), k.segment_id.to_string()))
}

/// A partition as the report keys it: `topic-partition` and topic id.
fn partition_key(tp: &TopicIdPartition) -> (String, String) {
    (tp.topic_partition.to_string(), tp.topic_id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_name_their_partition_and_segment() {
        let key = "pre/orders-x-AAECAwQFBgcICQoLDA0ODw/3/00000000000000000100-_-_-_-_-_-_-_-_-_-_-_w.log";
        let ((tp, topic_id), id) = object_owner(key, "pre/").unwrap();
        assert_eq!(
            (tp.as_str(), topic_id.as_str(), id.as_str()),
            ("orders-x-3", "AAECAwQFBgcICQoLDA0ODw", "_-_-_-_-_-_-_-_-_-_-_w")
        );
        // An id that is not a Kafka Uuid (its last character carries more than 2 bits) names no segment.
        assert!(object_owner(&key.replace("_w.log", "_C.log"), "pre/").is_none());
        assert!(object_owner("pre/notes.txt", "pre/").is_none());
        assert!(object_owner("other/orders-AAAAAAAAAAAAAAAAAAAAAA/3/x.log", "pre/").is_none());
    }

    #[test]
    fn an_object_partition_is_in_scope_by_its_topic() {
        let opts = AuditOptions { topic: Some("orders-x".into()), ..AuditOptions::default() };
        assert!(opts.partition_in_scope(&("orders-x-3".into(), String::new())));
        assert!(!opts.partition_in_scope(&("orders-3".into(), String::new())));
        assert!(AuditOptions::default().partition_in_scope(&("anything-0".into(), String::new())));
    }
}
