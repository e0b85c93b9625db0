//! `rsm audit`: does the store hold what the metadata promises, and what in the store is garbage?
//!
//! The metadata (every segment that has not finished deletion, in whatever state) is compared with one
//! listing of the store:
//! - a segment the metadata says is copied (`COPY_SEGMENT_FINISHED`) whose objects are missing, whose
//!   manifest does not read, or (unless `--quick`) whose data fails verification is **data loss**; one whose
//!   data key the configured key of its id does not open is **unverified** (a wrong key is not data loss);
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
//! `--delete-orphans --yes` deletes the orphans last written at least the safety age ago and aborts the
//! incomplete uploads to segments' keys last written (started, or a part sent) at least the safety age
//! ago, and nothing else; without `--yes` nothing is deleted or aborted.

use crate::exit::{CmdResult, Failure};
use crate::output::{Out, epoch_ms, out, upload_fields, utc};
use crate::settings::StoreArgs;
use rsm_core::backend::{IncompleteUpload, ObjectMeta};
use rsm_core::storage::{Suffix, parse_segment_key};
use rsm_core::{Error, ErrorKind, RemoteLogSegmentMetadata, RemoteLogSegmentState, Result, TopicIdPartition};
use rsm_facade::Store;
use rsm_metadata::MetadataEvent;
use rsm_metadata::cache::MetadataStore;
use rsm_metadata::events::segment_state_name;
use rsm_metadata::kafka::{KafkaMetadataConfig, TopicRecord, read_topic};
use rsm_metadata::records::MetadataRecord;
use rsm_tiering::{OffsetRange, remote_coverage};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// What to check and do.
pub struct AuditOptions {
    /// Only this topic.
    pub topic: Option<String>,
    /// Check presence and manifests only, without reading the data.
    pub quick: bool,
    /// Objects younger than this are never orphans to delete, and segments in progress for less are not
    /// stuck.
    pub min_age: Duration,
    /// Delete the orphans (older than `min_age`).
    pub delete_orphans: bool,
}

/// One partition's findings.
#[derive(Default, Debug)]
pub struct PartitionReport {
    /// Segments the metadata says are copied.
    pub copied: usize,
    /// Copied segments that are missing or damaged: (segment id, start offset, what is wrong).
    pub lost: Vec<(String, i64, String)>,
    /// Copied segments that could not be checked for want of a setting or a key (a configuration error,
    /// not data loss), or because the key of their key id does not open their data key (a wrong key, not
    /// data loss): (segment id, start offset, what is wrong, that key id when it is the key).
    pub unverified: Vec<(String, i64, String, Option<String>)>,
    /// Offsets no copied segment holds between the remote log start and end: (first, last).
    pub gaps: Vec<(i64, i64)>,
    /// Objects no metadata references: (key, bytes, old enough to delete).
    pub orphans: Vec<(String, u64, bool)>,
    /// Whole segments (their manifest reads, as the segment its key names) that no metadata references:
    /// (segment id, start offset, bytes of their objects). Never deleted by the orphan sweep: a wrong or
    /// empty metadata log must not wipe the store.
    pub unreferenced: Vec<(String, i64, u64)>,
    /// Segments no finished copy references whose commit object (manifest, or one-object `.segment`) is in
    /// the store, so they were committed (an upload cut short never writes its manifest), but that are not
    /// whole: the manifest does not read, or an object is missing. (segment id, start offset as its key
    /// names it, bytes of their objects, what is wrong, their object keys). Never deleted by the orphan
    /// sweep, whatever the safety age.
    pub damaged: Vec<(String, i64, u64, String, Vec<String>)>,
    /// Segments stuck in copy started or delete started: (segment id, state, since ms).
    pub stuck: Vec<(String, &'static str, i64)>,
    /// Copies started at least the safety age ago, never finished, whose offsets finished copies hold (a
    /// leader died while copying, and the next one copied the offsets again): (segment id, start offset,
    /// started ms). Their objects are orphans.
    pub abandoned: Vec<(String, i64, i64)>,
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

/// The audit of a whole store.
#[derive(Default, Debug)]
pub struct Report {
    /// By partition (`topic-partition` and topic id), sorted.
    pub partitions: BTreeMap<(String, String), PartitionReport>,
    /// Objects under the prefix that are not named like a segment's objects: counted, listed, never deleted.
    pub left_alone: Vec<(String, u64)>,
    /// Orphans deleted.
    pub deleted: Vec<String>,
    /// Incomplete multipart uploads under the prefix, by key.
    pub uploads: Vec<UploadFinding>,
    /// Uploads aborted: (key, upload id).
    pub aborted: Vec<(String, String)>,
    /// Per key-encryption key id, how the copied segments wrapped under it fared (checked without
    /// `--quick`).
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

/// When the segment `md` is encrypted and the keyring's key of its key id (present: a missing one is a
/// config error of its own) does not open its data key: that key id. One manifest read (cached) and one
/// unwrap, which on a KMS key is one request.
pub fn refused_key(store: &Store, md: &RemoteLogSegmentMetadata) -> Option<String> {
    let manifest = store.manifest(md).ok()?;
    let envelope = manifest.encryption.as_ref()?;
    let keyring = &store.storage().config().encryption.as_ref()?.keyring;
    let unwrapped = rsm_facade::runtime().block_on(envelope.unwrap(
        keyring,
        manifest.metadata.remote_log_segment_id.id,
        manifest.metadata.start_offset,
    ));
    match unwrapped {
        Err(e) if e.kind() == ErrorKind::Corrupt => Some(envelope.kek_id.clone()),
        _ => None,
    }
}

/// What [`refused_key`] found, as a finding says it: names the key id, never its bytes.
pub fn refusal(kek: &str) -> String {
    format!(
        "key encryption key `{kek}` is configured but does not open this segment's data key (the key configured \
         as `{kek}` is not the key it was wrapped with, or the manifest holds another segment's data key)"
    )
}

/// The key-encryption key id the segment `md` is wrapped under, when it is encrypted (its manifest cached).
fn key_id(store: &Store, md: &RemoteLogSegmentMetadata) -> Option<String> {
    store.manifest(md).ok()?.encryption.as_ref().map(|e| e.kek_id.clone())
}

impl Report {
    /// Copied segments missing or damaged, in all partitions.
    pub fn lost(&self) -> usize {
        self.partitions.values().map(|p| p.lost.len()).sum()
    }

    fn count(&self, f: impl Fn(&PartitionReport) -> usize) -> usize {
        self.partitions.values().map(f).sum()
    }
}

/// The partition (`topic-partition`, topic id) and segment id of a segment object's key
/// (`{prefix}{topic}-{topicId}/{partition}/{startOffset:020}-{segmentId}.{ext}`), as the layout reads it.
fn object_owner(key: &str, prefix: &str) -> Option<((String, String), String)> {
    let k = parse_segment_key(prefix, key)?;
    Some((partition_key(&k.topic_id_partition), k.segment_id.to_string()))
}

fn partition_key(tp: &TopicIdPartition) -> (String, String) {
    (tp.topic_partition.to_string(), tp.topic_id.to_string())
}

fn old(meta: &ObjectMeta, min_age: Duration, now: SystemTime) -> bool {
    meta.last_modified.is_some_and(|t| now.duration_since(t).unwrap_or_default() >= min_age)
}

/// Audits `store` against `segments` (every segment the metadata holds, in any state but delete finished).
pub fn audit(store: &Store, segments: &[RemoteLogSegmentMetadata], opts: &AuditOptions) -> Result<Report> {
    let prefix = store.storage().config().key_prefix.clone();
    let in_scope = |topic: &str| opts.topic.as_deref().is_none_or(|t| t == topic);
    // An object's partition key is `topic-partition`: its topic is what comes before the last `-`.
    let object_in_scope = |partition: &(String, String)| in_scope(partition.0.rsplit_once('-').map_or("", |(t, _)| t));
    let (objects, temporary) = store.list_objects()?;
    let uploads = store.list_incomplete_uploads()?;
    let now = SystemTime::now();
    let now_ms = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
    let mut report = Report::default();

    // Objects by segment id.
    let mut by_segment: HashMap<String, Vec<&ObjectMeta>> = HashMap::new();
    for o in &objects {
        match object_owner(&o.key, &prefix) {
            Some((_, id)) => by_segment.entry(id).or_default().push(o),
            None => report.left_alone.push((o.key.clone(), o.size)),
        }
    }
    let known: HashMap<String, &RemoteLogSegmentMetadata> =
        segments.iter().map(|m| (m.remote_log_segment_id.id.to_string(), m)).collect();
    let known_partitions: HashSet<(String, String)> =
        segments.iter().map(|m| partition_key(&m.remote_log_segment_id.topic_id_partition)).collect();

    let mut copied_ranges: HashMap<(String, String), Vec<OffsetRange>> = HashMap::new();
    let scoped =
        || segments.iter().filter(|m| in_scope(&m.remote_log_segment_id.topic_id_partition.topic_partition.topic));
    for m in scoped().filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished) {
        copied_ranges
            .entry(partition_key(&m.remote_log_segment_id.topic_id_partition))
            .or_default()
            .push(OffsetRange { start: m.start_offset, end: m.end_offset });
    }
    let mut abandoned: HashSet<String> = HashSet::new();
    for m in scoped() {
        let tp = &m.remote_log_segment_id.topic_id_partition;
        let part = report.partitions.entry(partition_key(tp)).or_default();
        let id = m.remote_log_segment_id.id.to_string();
        match m.state {
            RemoteLogSegmentState::CopySegmentFinished => {
                part.copied += 1;
                let have = by_segment.get(&id).map(Vec::as_slice).unwrap_or_default();
                // A one-object segment needs its `.segment` object alone; a split one its three objects.
                let needed: &[Suffix] = if have.iter().any(|o| Suffix::of(&o.key) == Some(Suffix::Segment)) {
                    &[Suffix::Segment]
                } else {
                    &Suffix::ALL
                };
                let missing: Vec<&str> = needed
                    .iter()
                    .filter(|s| !have.iter().any(|o| Suffix::of(&o.key) == Some(**s)))
                    .map(|s| s.extension())
                    .collect();
                let problem = if !missing.is_empty() {
                    Some(Error::not_found(format!("missing .{}", missing.join(", ."))))
                } else if opts.quick {
                    store.manifest(m).err()
                } else {
                    store.verify(m).err()
                };
                match problem {
                    // A key or a setting this run lacks: the segment cannot be checked, which is not loss.
                    Some(e) if e.kind() == ErrorKind::Config => {
                        part.unverified.push((id, m.start_offset, e.full_message(), None))
                    }
                    // A key that does not open the data key: the key is wrong (or this manifest holds
                    // another segment's key), which is not loss either.
                    Some(e)
                        if e.kind() == ErrorKind::Corrupt
                            && let Some(kek) = refused_key(store, m) =>
                    {
                        report.keys.entry(kek.clone()).or_default().refused += 1;
                        part.unverified.push((id, m.start_offset, refusal(&kek), Some(kek)));
                    }
                    Some(e) => part.lost.push((id, m.start_offset, e.full_message())),
                    None if !opts.quick => {
                        if let Some(kek) = key_id(store, m) {
                            report.keys.entry(kek).or_default().opened += 1;
                        }
                    }
                    None => {}
                }
            }
            RemoteLogSegmentState::CopySegmentStarted | RemoteLogSegmentState::DeleteSegmentStarted => {
                if now_ms.saturating_sub(m.event_timestamp_ms) < opts.min_age.as_millis() as i64 {
                    continue;
                }
                let held = copied_ranges
                    .get(&partition_key(tp))
                    .is_some_and(|r| holds(r, OffsetRange { start: m.start_offset, end: m.end_offset }));
                if m.state == RemoteLogSegmentState::CopySegmentStarted && held {
                    part.abandoned.push((id.clone(), m.start_offset, m.event_timestamp_ms));
                    abandoned.insert(id);
                } else {
                    part.stuck.push((id, segment_state_name(m.state), m.event_timestamp_ms));
                }
            }
            RemoteLogSegmentState::DeleteSegmentFinished => {}
        }
    }
    for (key, ranges) in &copied_ranges {
        let part = report.partitions.entry(key.clone()).or_default();
        part.gaps = remote_coverage(ranges).gaps.into_iter().map(|g| (g.start, g.end)).collect();
    }

    // Objects of segments no finished copy references (never known, deletion finished, or a copy
    // abandoned): a segment whose commit object is there was committed (an upload cut short never writes its
    // manifest), so it is kept, as unreferenced when whole (its manifest reads as the segment its key names,
    // its objects all there) and as damaged otherwise; the objects of the others are garbage.
    let mut kept: HashSet<String> = HashSet::new();
    for (id, objs) in &by_segment {
        if known.contains_key(id) && !abandoned.contains(id) {
            continue;
        }
        // A split segment's manifest, or a one-object segment's object (its own manifest).
        let Some(manifest) = objs.iter().find(|o| Suffix::of(&o.key).is_some_and(Suffix::commits)) else { continue };
        let Some((partition, _)) = object_owner(&manifest.key, &prefix) else { continue };
        if !object_in_scope(&partition) {
            continue;
        }
        let missing: Vec<&str> = match Suffix::of(&manifest.key) {
            Some(Suffix::Segment) => Vec::new(),
            _ => [Suffix::Log, Suffix::Indexes]
                .into_iter()
                .filter(|s| !objs.iter().any(|o| Suffix::of(&o.key) == Some(*s)))
                .map(Suffix::dotted)
                .collect(),
        };
        let bytes = objs.iter().map(|o| o.size).sum();
        let part = report.partitions.entry(partition).or_default();
        match store.read_manifest(&manifest.key) {
            Ok(m) if missing.is_empty() => part.unreferenced.push((id.clone(), m.metadata.start_offset, bytes)),
            read => {
                let mut why: Vec<String> = read.err().map(|e| e.full_message()).into_iter().collect();
                if !missing.is_empty() {
                    why.push(format!("missing {}", missing.join(", ")));
                }
                let start = parse_segment_key(&prefix, &manifest.key).map_or(-1, |k| k.start_offset);
                let mut keys: Vec<String> = objs.iter().map(|o| o.key.clone()).collect();
                keys.sort();
                part.damaged.push((id.clone(), start, bytes, why.join("; "), keys));
            }
        }
        kept.insert(id.clone());
    }
    for o in &objects {
        let Some((partition, id)) = object_owner(&o.key, &prefix) else { continue };
        let referenced = known.contains_key(&id) && !abandoned.contains(&id);
        if !object_in_scope(&partition) || referenced || kept.contains(&id) {
            continue;
        }
        let part = report.partitions.entry(partition).or_default();
        part.orphans.push((o.key.clone(), o.size, old(o, opts.min_age, now)));
    }
    for t in &temporary {
        let Some((partition, _)) = object_owner(&t.target, &prefix) else { continue };
        if !object_in_scope(&partition) {
            continue;
        }
        let part = report.partitions.entry(partition).or_default();
        part.orphans.push((t.meta.key.clone(), t.meta.size, old(&t.meta, opts.min_age, now)));
    }

    for upload in uploads {
        let partition = object_owner(&upload.key, &prefix).map(|(p, _)| p);
        let in_scope = match &partition {
            Some(p) => object_in_scope(p),
            None => opts.topic.is_none(),
        };
        if !in_scope {
            continue;
        }
        let old = upload.last_written().is_some_and(|t| now.duration_since(t).unwrap_or_default() >= opts.min_age);
        report.uploads.push(UploadFinding { upload, partition: partition.map(|p| p.0), old });
    }

    if opts.delete_orphans {
        let old_orphans = |known: bool| -> Vec<String> {
            report
                .partitions
                .iter()
                .filter(|(k, _)| known_partitions.contains(*k) == known)
                .flat_map(|(_, p)| p.orphans.iter().filter(|o| o.2).map(|o| o.0.clone()))
                .collect()
        };
        let (doomed, strangers) = (old_orphans(true), old_orphans(false));
        if doomed.is_empty() && !strangers.is_empty() {
            return Err(Error::invalid(format!(
                "--delete-orphans refused: the {} orphans are all in partitions the metadata knows nothing of \
                 (is it the metadata of this store? an empty or wrong --metadata-dir makes everything look \
                 orphaned); nothing was deleted",
                strangers.len()
            )));
        }
        if !strangers.is_empty() {
            tracing::warn!(kept = strangers.len(), "orphans in partitions the metadata does not know are kept");
        }
        // An incomplete upload is never data anyone can read, whatever the metadata says: those to segments'
        // keys past the safety age are aborted.
        let doomed_uploads: Vec<IncompleteUpload> =
            report.uploads.iter().filter(|f| f.old && f.partition.is_some()).map(|f| f.upload.clone()).collect();
        if !doomed_uploads.is_empty() {
            store.abort_uploads(&doomed_uploads)?;
        }
        report.aborted = doomed_uploads.into_iter().map(|u| (u.key, u.upload_id)).collect();
        if !doomed.is_empty() {
            store.delete_objects(&doomed)?;
        }
        report.deleted = doomed;
    }
    Ok(report)
}

/// Whether the copied ranges `copied` hold every offset of `range` between them.
fn holds(copied: &[OffsetRange], range: OffsetRange) -> bool {
    let mut sorted: Vec<&OffsetRange> = copied.iter().collect();
    sorted.sort_by_key(|r| r.start);
    let mut next = range.start;
    for r in sorted {
        if r.start > next {
            break;
        }
        next = next.max(r.end.saturating_add(1));
        if next > range.end {
            return true;
        }
    }
    false
}

/// Every record of a cluster's metadata topic (all its partitions, from their start).
pub fn kafka_records(bootstrap: &str, topic: &str) -> Result<Vec<TopicRecord>> {
    let config = KafkaMetadataConfig::new(bootstrap, std::env::temp_dir()).with_topic(topic);
    rsm_facade::runtime().block_on(read_topic(&config))
}

/// Every segment a cluster's metadata topic holds, in any state but delete finished: its records applied
/// in order per metadata partition, as a broker's cache applies them (a record that does not decode or
/// that Kafka's rules refuse is skipped, with a warning).
pub fn kafka_segments(bootstrap: &str, topic: &str) -> Result<Vec<RemoteLogSegmentMetadata>> {
    let mut stores: BTreeMap<i32, MetadataStore> = BTreeMap::new();
    for r in kafka_records(bootstrap, topic)? {
        let (partition, offset) = (r.partition, r.offset);
        // An event is applied, a KIP-1266 tombstone forgets the segment its key names.
        if let Err(e) = r.apply_to(stores.entry(partition).or_default()) {
            tracing::warn!(partition, offset, error = %e.full_message(), "skipped a metadata record");
        }
    }
    Ok(stores.values().flat_map(|s| s.partitions().flat_map(|(_, p)| p.segments())).collect())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A record as one line, the way `MetadataDump` (the Java test) prints Kafka's own decoding of it.
pub fn describe(r: &TopicRecord) -> String {
    let at = format!("p{}@{}", r.partition, r.offset);
    let custom = |c: &Option<rsm_core::CustomMetadata>| c.as_ref().map_or("none".to_string(), |c| hex(&c.0));
    let event = match &r.record {
        Ok(MetadataRecord::Event(e, _)) => Ok(e),
        Ok(MetadataRecord::Tombstone(t)) => return format!("{at} {t}"),
        Err(e) => Err(e),
    };
    match event {
        Ok(MetadataEvent::Segment(m)) => {
            let epochs: Vec<String> = m.segment_leader_epochs.iter().map(|(e, o)| format!("{e}={o}")).collect();
            format!(
                "{at} segment {} {} state={} start={} end={} maxTs={} broker={} eventTs={} size={} epochs={{{}}} custom={}",
                m.remote_log_segment_id.topic_id_partition,
                m.remote_log_segment_id.id,
                segment_state_name(m.state),
                m.start_offset,
                m.end_offset,
                m.max_timestamp_ms,
                m.broker_id,
                m.event_timestamp_ms,
                m.segment_size_in_bytes,
                epochs.join(","),
                custom(&m.custom_metadata)
            )
        }
        Ok(MetadataEvent::SegmentUpdate(u)) => format!(
            "{at} update {} {} state={} eventTs={} broker={} custom={}",
            u.remote_log_segment_id.topic_id_partition,
            u.remote_log_segment_id.id,
            segment_state_name(u.state),
            u.event_timestamp_ms,
            u.broker_id,
            custom(&u.custom_metadata)
        ),
        Ok(MetadataEvent::PartitionDelete(d)) => format!(
            "{at} partitionDelete {} state={} eventTs={} broker={}",
            d.topic_id_partition, d.state, d.event_timestamp_ms, d.broker_id
        ),
        Ok(MetadataEvent::Snapshot(s)) => format!("{at} snapshot {}", s.segment_id),
        Err(e) => format!("{at} undecodable: {}", e.full_message()),
    }
}

/// Parses an age: a number with `s`, `m`, `h` or `d` (`0s`, `90s`, `10m`, `1h`, `7d`).
pub fn parse_age(s: &str) -> std::result::Result<Duration, String> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n.parse().map_err(|_| format!("`{s}` is not an age such as 0s, 90s, 10m, 1h or 7d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("`{s}`: the unit must be s, m, h or d")),
    };
    n.checked_mul(secs).map(Duration::from_secs).ok_or_else(|| format!("`{s}` is too long"))
}

/// The report as one JSON document.
pub fn to_json(report: &Report) -> serde_json::Value {
    let partitions: Vec<_> = report
        .partitions
        .iter()
        .map(|((tp, topic_id), p)| {
            serde_json::json!({
                "partition": tp,
                "topic_id": topic_id,
                "copied": p.copied,
                "lost": p.lost.iter().map(|(id, start, why)| serde_json::json!({
                    "segment_id": id, "start_offset": start, "problem": why})).collect::<Vec<_>>(),
                "unverified": p.unverified.iter().map(|(id, start, why, key)| serde_json::json!({
                    "segment_id": id, "start_offset": start, "problem": why, "key_id": key})).collect::<Vec<_>>(),
                "gaps": p.gaps.iter().map(|(a, b)| serde_json::json!({"first_offset": a, "last_offset": b}))
                    .collect::<Vec<_>>(),
                "unreferenced": p.unreferenced.iter().map(|(id, start, bytes)| serde_json::json!({
                    "segment_id": id, "start_offset": start, "bytes": bytes})).collect::<Vec<_>>(),
                "damaged": p.damaged.iter().map(|(id, start, bytes, why, keys)| serde_json::json!({
                    "segment_id": id, "start_offset": start, "bytes": bytes, "problem": why, "keys": keys}))
                    .collect::<Vec<_>>(),
                "orphans": p.orphans.iter().map(|(key, bytes, old)| serde_json::json!({
                    "key": key, "bytes": bytes, "older_than_min_age": old})).collect::<Vec<_>>(),
                "stuck": p.stuck.iter().map(|(id, state, since)| serde_json::json!({
                    "segment_id": id, "state": state, "since_ms": since})).collect::<Vec<_>>(),
                "abandoned": p.abandoned.iter().map(|(id, start, since)| serde_json::json!({
                    "segment_id": id, "start_offset": start, "since_ms": since})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let orphan_bytes: u64 = report.partitions.values().flat_map(|p| p.orphans.iter().map(|o| o.1)).sum();
    let now = SystemTime::now();
    let uploads: Vec<_> = report
        .uploads
        .iter()
        .map(|f| {
            let u = &f.upload;
            serde_json::json!({
                "key": u.key,
                "upload_id": u.upload_id,
                "partition": f.partition,
                "bytes": u.bytes,
                "parts": u.parts,
                "initiated_ms": (u.initiated.is_some()).then(|| epoch_ms(u.initiated)),
                "last_written_ms": (u.last_written().is_some()).then(|| epoch_ms(u.last_written())),
                "age_s": u.last_written().map(|t| now.duration_since(t).unwrap_or_default().as_secs()),
                "older_than_min_age": f.old,
            })
        })
        .collect();
    serde_json::json!({
        "partitions": partitions,
        "totals": {
            "copied": report.partitions.values().map(|p| p.copied).sum::<usize>(),
            "lost": report.lost(),
            "orphans": report.partitions.values().map(|p| p.orphans.len()).sum::<usize>(),
            "orphan_bytes": orphan_bytes,
            "stuck": report.partitions.values().map(|p| p.stuck.len()).sum::<usize>(),
            "abandoned": report.count(|p| p.abandoned.len()),
            "unverified": report.count(|p| p.unverified.len()),
            "gaps": report.count(|p| p.gaps.len()),
            "unreferenced": report.count(|p| p.unreferenced.len()),
            "damaged": report.count(|p| p.damaged.len()),
            "damaged_bytes": report.partitions.values().flat_map(|p| p.damaged.iter().map(|d| d.2)).sum::<u64>(),
            "left_alone": report.left_alone.len(),
            "incomplete_uploads": report.uploads.len(),
            "incomplete_upload_bytes": upload_bytes(report),
        },
        "left_alone": report.left_alone.iter().map(|(k, b)| serde_json::json!({"key": k, "bytes": b}))
            .collect::<Vec<_>>(),
        "deleted": report.deleted,
        "keys": report.keys.iter().map(|(id, t)| serde_json::json!({
            "key_id": id, "opened": t.opened, "refused": t.refused, "probably_wrong": t.probably_wrong()}))
            .collect::<Vec<_>>(),
        "incomplete_uploads": uploads,
        "aborted_uploads": report.aborted.iter().map(|(k, id)| serde_json::json!({"key": k, "upload_id": id}))
            .collect::<Vec<_>>(),
    })
}

/// Bytes of the incomplete uploads' parts (those the store told).
fn upload_bytes(report: &Report) -> u64 {
    report.uploads.iter().filter_map(|f| f.upload.bytes).sum()
}

/// The exit status `rsm audit` gives a run that found no loss but segments it could not check (a missing
/// key or setting): apart from 1, data lost or a gap.
pub const EXIT_UNVERIFIED: u8 = 3;

/// Errors for a run that found data loss, a gap or a damaged segment no finished copy references (exit 1),
/// or segments it could not check (exit [`EXIT_UNVERIFIED`]).
pub fn outcome(report: &Report) -> CmdResult {
    let (lost, gaps, unverified) =
        (report.lost(), report.count(|p| p.gaps.len()), report.count(|p| p.unverified.len()));
    let damaged = report.count(|p| p.damaged.len());
    if lost > 0 || gaps > 0 {
        let also = match damaged {
            0 => String::new(),
            n => format!("; {n} committed segments no metadata references are damaged, kept"),
        };
        return Err(Error::corrupt(format!(
            "{lost} copied segments are missing or damaged in the store, and {gaps} gaps in remote logs{also} (listed \
             above)"
        ))
        .into());
    }
    if damaged > 0 {
        return Err(Error::corrupt(format!(
            "{damaged} committed segments no metadata references are damaged (their manifest is in the store, so \
             they were committed; listed above): kept, never deleted as orphans"
        ))
        .into());
    }
    match unverified {
        0 => Ok(()),
        // The message says the status too (`(exit code 3)`), as it always has.
        n => Err(Failure::with_status(
            Error::config(
                "encryption.keys",
                format!(
                    "{n} copied segments could not be checked for want of a key or setting, or with a key that does \
                     not open them (listed above): not data loss"
                ),
            )
            .with_field("exit code", EXIT_UNVERIFIED),
            EXIT_UNVERIFIED,
        )),
    }
}

/// `rsm audit`: the metadata read from the local log `metadata_dir` or the cluster `bootstrap_server`,
/// compared with the store; prints the report.
#[allow(clippy::too_many_arguments)]
pub fn run(
    o: &mut Out,
    bootstrap_server: Option<&str>,
    metadata_topic: &str,
    metadata_dir: Option<&Path>,
    store: &StoreArgs,
    opts: AuditOptions,
    yes: bool,
    json: bool,
) -> CmdResult {
    if opts.delete_orphans && !yes {
        return Err(Error::invalid(
            "--delete-orphans deletes objects from the store: add --yes to confirm (nothing was deleted)",
        )
        .into());
    }
    let segments = match (metadata_dir, bootstrap_server) {
        (Some(dir), _) => rsm_metadata::local::LocalMetadataManager::open_existing_read_only(dir)?.all_segments()?,
        (None, Some(bootstrap)) => kafka_segments(bootstrap, metadata_topic)?,
        (None, None) => unreachable!("clap requires one"),
    };
    print_report(o, &audit(&store.open()?, &segments, &opts)?, json)
}

/// Prints `report` as a table and lines per finding, or (`json`) one JSON document, and ends as
/// [`outcome`] says.
fn print_report(o: &mut Out, report: &Report, json: bool) -> CmdResult {
    if json {
        out!(o, "{}", serde_json::to_string_pretty(&to_json(report)).expect("JSON of plain values"));
        return outcome(report);
    }
    out!(o, "PARTITION\tTOPIC ID\tCOPIED\tLOST\tORPHANS\tORPHAN BYTES\tSTUCK\tGAPS\tUNVERIFIED\tUNREFERENCED\tDAMAGED");
    for ((tp, topic_id), p) in &report.partitions {
        let bytes: u64 = p.orphans.iter().map(|x| x.1).sum();
        out!(
            o,
            "{tp}\t{topic_id}\t{}\t{}\t{}\t{bytes}\t{}\t{}\t{}\t{}\t{}",
            p.copied,
            p.lost.len(),
            p.orphans.len(),
            p.stuck.len(),
            p.gaps.len(),
            p.unverified.len(),
            p.unreferenced.len(),
            p.damaged.len()
        );
    }
    for ((tp, _), p) in &report.partitions {
        for (id, start, why) in &p.lost {
            out!(o, "LOST\t{tp}\t{id}\toffset {start}\t{why}");
        }
        for (first, last) in &p.gaps {
            out!(o, "GAP\t{tp}\toffsets {first}..={last}\tno copied segment holds them");
        }
        for (id, start, why, _) in &p.unverified {
            out!(o, "UNVERIFIED\t{tp}\t{id}\toffset {start}\tcannot be checked: {why}");
        }
        for (id, start, bytes) in &p.unreferenced {
            out!(o, "UNREFERENCED\t{tp}\t{id}\toffset {start}\t{bytes} bytes\ta whole segment no metadata names: kept");
        }
        for (id, start, bytes, why, _) in &p.damaged {
            out!(
                o,
                "DAMAGED\t{tp}\t{id}\toffset {start}\t{bytes} bytes\t{why}; no metadata references it, but its \
                 manifest is in the store, so it was committed: kept, never deleted as an orphan (`--json` lists its \
                 objects)"
            );
        }
        for (key, bytes, old) in &p.orphans {
            let young = if *old { "" } else { "\t(younger than the safety age: kept)" };
            out!(o, "ORPHAN\t{tp}\t{key}\t{bytes} bytes{young}");
        }
        for (id, state, since) in &p.stuck {
            out!(o, "STUCK\t{tp}\t{id}\t{state} since {}", utc(*since));
        }
        for (id, start, since) in &p.abandoned {
            out!(
                o,
                "ABANDONED\t{tp}\t{id}\toffset {start}\tcopy started {}, never finished; finished copies hold its \
                 offsets (its objects, if any, are orphans)",
                utc(*since)
            );
        }
    }
    for (kek, t) in report.keys.iter().filter(|(_, t)| t.refused > 0) {
        if t.probably_wrong() {
            out!(
                o,
                "KEY\t{kek}\topens none of the {} segments wrapped under it: the key configured as `{kek}` \
                 (encryption.key.{kek}.file or encryption.key.{kek}.kms.key.id) is probably the wrong key; not data \
                 loss",
                t.refused
            );
        } else {
            out!(
                o,
                "KEY\t{kek}\topens {} of the {} segments wrapped under it: the other {} were wrapped with other key \
                 bytes under the id `{kek}`, or their manifests hold another segment's data key",
                t.opened,
                t.opened + t.refused,
                t.refused
            );
        }
    }
    for (key, bytes) in &report.left_alone {
        out!(o, "LEFT ALONE\t{key}\t{bytes} bytes\tnot named like a segment's object");
    }
    let now = SystemTime::now();
    for f in &report.uploads {
        let fields = upload_fields(&f.upload, now);
        match &f.partition {
            None => out!(
                o,
                "UPLOAD\t-\t{fields}\tan incomplete multipart upload not named like a segment's object: left alone"
            ),
            Some(tp) if f.old => out!(o, "UPLOAD\t{tp}\t{fields}\tan incomplete multipart upload (never completed)"),
            Some(tp) => out!(
                o,
                "UPLOAD\t{tp}\t{fields}\tan incomplete multipart upload (never completed)\t(younger than the safety age: kept)"
            ),
        }
    }
    for key in &report.deleted {
        out!(o, "DELETED\t{key}");
    }
    for (key, id) in &report.aborted {
        out!(o, "ABORTED\t{key}\tupload {id}");
    }
    let orphans: usize = report.partitions.values().map(|p| p.orphans.len()).sum();
    let stuck: usize = report.partitions.values().map(|p| p.stuck.len()).sum();
    out!(
        o,
        "audited {} partitions: {} lost, {orphans} orphans, {stuck} stuck, {} abandoned copies, {} deleted, {} gaps, \
         {} unverified, {} unreferenced segments, {} damaged segments kept, {} objects left alone, {} incomplete \
         uploads ({} bytes), {} aborted",
        report.partitions.len(),
        report.lost(),
        report.count(|p| p.abandoned.len()),
        report.deleted.len(),
        report.partitions.values().map(|p| p.gaps.len()).sum::<usize>(),
        report.partitions.values().map(|p| p.unverified.len()).sum::<usize>(),
        report.partitions.values().map(|p| p.unreferenced.len()).sum::<usize>(),
        report.count(|p| p.damaged.len()),
        report.left_alone.len(),
        report.uploads.len(),
        upload_bytes(report),
        report.aborted.len(),
    );
    outcome(report)
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
    fn ages_parse_with_units() {
        assert_eq!(parse_age("0s").unwrap(), Duration::ZERO);
        assert_eq!(parse_age("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_age("2d").unwrap(), Duration::from_secs(172_800));
        assert!(parse_age("10").unwrap_err().contains("unit"));
        assert!(parse_age("h").is_err());
    }
}
