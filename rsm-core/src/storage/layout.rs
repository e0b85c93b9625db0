//! The remote layout: where each object of a segment lives, and what a key names.
//!
//! Two layouts ([`SegmentLayout`], `segment.layout`). Split (the default): three objects per segment, so a
//! copy costs three uploads:
//! `{prefix}{topic}-{topicId}/{partition}/{startOffset:020}-{segmentId}.log` (the `.log` file as is),
//! `….indexes` (the five indexes back to back) and `….manifest` (written last: the commit point). Single: one
//! object `….segment` holding the three back to back and a trailer that locates them
//! ([`super::single`]), written by one upload: its own commit point. A manifest read tells which layout
//! its segment has, and [`placement`] where its log and indexes lie.
//! [`segment_keys`] makes the keys and [`parse_segment_key`] reads them back: the one place that knows the
//! layout both ways. The smaller helpers ([`Suffix::of`], [`split_object_key`], [`object_key`],
//! [`start_offset_prefix`], [`manifest_key_tail`]) are for code that lists keys and has to tell them apart
//! without a full parse.

use crate::format::manifest::{Manifest, StoredAs};
use crate::model::{RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition, Uuid};

/// How a copy stores a segment (`segment.layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SegmentLayout {
    /// Three objects: `.log`, `.indexes`, and `.manifest` written last as the commit point.
    #[default]
    Split,
    /// One `.segment` object: the stored log, the index bundle, the manifest and a trailer, in one upload.
    Single,
}

/// The object keys of one segment, of both layouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentKeys {
    /// The `.log` data (split layout).
    pub log: String,
    /// The index bundle (split layout).
    pub indexes: String,
    /// The manifest (split layout).
    pub manifest: String,
    /// The one object of the single layout.
    pub segment: String,
}

/// Where a segment's data lies, as its manifest was found: the object holding its stored log (from byte 0)
/// and the object holding its index bundle, from `indexes_base` (the manifest's index positions are
/// relative to the bundle). Every read of a segment's chunks and indexes goes through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The object of the stored log: `.log` (split) or `.segment` (single).
    pub log: String,
    /// The object of the index bundle: `.indexes` (split) or `.segment` (single).
    pub indexes: String,
    /// Where the index bundle starts in `indexes`: 0 (split) or after the stored log (single).
    pub indexes_base: u64,
}

/// Where the data of the segment `manifest` describes lies ([`Manifest::stored_as`], set by the read that
/// found it).
pub fn placement(key_prefix: &str, manifest: &Manifest) -> Placement {
    let keys = segment_keys(key_prefix, &manifest.metadata);
    match manifest.stored_as {
        StoredAs::Split => Placement { log: keys.log, indexes: keys.indexes, indexes_base: 0 },
        StoredAs::Single { indexes_position, .. } => {
            Placement { log: keys.segment.clone(), indexes: keys.segment, indexes_base: indexes_position }
        }
    }
}

/// Which of a segment's objects a key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Suffix {
    /// The `.log` data.
    Log,
    /// The index bundle.
    Indexes,
    /// The manifest, the commit point.
    Manifest,
    /// The one object of a single-layout segment (log, indexes, manifest, trailer): its own commit point.
    Segment,
    /// The manifest of a segment Aiven's plugin stored (`.rsm-manifest`, [`crate::format::aiven`]): its commit
    /// point, so that its `.log` and `.indexes` are never taken for an interrupted copy's leftovers.
    AivenManifest,
}

impl Suffix {
    /// Every object of a split-layout segment, in the order a copy writes them.
    pub const ALL: [Suffix; 3] = [Suffix::Log, Suffix::Indexes, Suffix::Manifest];

    /// Every ending a segment object's key has, of either layout or Aiven's; `.rsm-manifest` before
    /// `.manifest`, which ends it too.
    pub const EVERY: [Suffix; 5] =
        [Suffix::AivenManifest, Suffix::Log, Suffix::Indexes, Suffix::Manifest, Suffix::Segment];

    /// Whether an object with this ending is a segment's commit point: a split segment's manifest, a
    /// single segment's one object (complete by construction), or the manifest of a segment Aiven's plugin
    /// stored.
    pub fn commits(self) -> bool {
        matches!(self, Suffix::Manifest | Suffix::Segment | Suffix::AivenManifest)
    }

    /// The extension, without its dot.
    pub fn extension(self) -> &'static str {
        match self {
            Suffix::Log => "log",
            Suffix::Indexes => "indexes",
            Suffix::Manifest => "manifest",
            Suffix::Segment => "segment",
            Suffix::AivenManifest => "rsm-manifest",
        }
    }

    /// The extension with its dot (`.log`), as a key ends.
    pub fn dotted(self) -> &'static str {
        match self {
            Suffix::Log => ".log",
            Suffix::Indexes => ".indexes",
            Suffix::Manifest => ".manifest",
            Suffix::Segment => ".segment",
            Suffix::AivenManifest => ".rsm-manifest",
        }
    }

    /// Which object a key names by how it ends (`.log`, `.indexes`, `.manifest`, `.segment`), the rest of it unread;
    /// `None` for any other ending. [`parse_segment_key`] reads the whole key.
    pub fn of(key: &str) -> Option<Suffix> {
        split_object_key(key).map(|(_, suffix)| suffix)
    }
}

/// A segment object's key cut before its extension: the stem the segment's three keys share (without the
/// dot) and which object the key names; `None` for a key with another ending. The rest of the key is not
/// read (see [`parse_segment_key`]).
pub fn split_object_key(key: &str) -> Option<(&str, Suffix)> {
    Suffix::EVERY.into_iter().find_map(|s| key.strip_suffix(s.dotted()).map(|stem| (stem, s)))
}

/// The key of the object `suffix` of the segment whose keys share `stem` (as [`split_object_key`] cuts it).
pub fn object_key(stem: &str, suffix: Suffix) -> String {
    format!("{stem}{}", suffix.dotted())
}

/// What a segment object's key names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentKey {
    /// The partition, from the key's `{topic}-{topicId}/{partition}/` part.
    pub topic_id_partition: TopicIdPartition,
    /// The segment's start offset, from the key's 20 digits.
    pub start_offset: i64,
    /// The segment (copy attempt) id.
    pub segment_id: Uuid,
    /// Which object.
    pub suffix: Suffix,
}

impl SegmentKey {
    /// Whether `metadata` is the segment this key names: same partition (topic, topic id, number), start
    /// offset and segment id.
    pub fn names(&self, metadata: &RemoteLogSegmentMetadata) -> bool {
        let id = &metadata.remote_log_segment_id;
        id.topic_id_partition == self.topic_id_partition
            && id.id == self.segment_id
            && metadata.start_offset == self.start_offset
    }
}

impl SegmentKeys {
    /// What the segment's keys start with, up to and including the dot before the extension: the prefix
    /// of its objects' temporary upload objects too.
    pub fn shared_prefix(&self) -> &str {
        self.manifest.strip_suffix(Suffix::Manifest.extension()).unwrap_or(&self.manifest)
    }
}

/// The key prefix of a partition: `{prefix}{topic}-{topicId}/{partition}/`.
pub fn partition_prefix(key_prefix: &str, tp: &TopicIdPartition) -> String {
    crate::partition_dir::partition_dir(key_prefix, tp)
}

/// The key prefix of the segments of `tp` that start at `start_offset`, whatever their ids:
/// `{prefix}{topic}-{topicId}/{partition}/{startOffset:020}-`.
pub fn start_offset_prefix(key_prefix: &str, tp: &TopicIdPartition, start_offset: i64) -> String {
    format!("{}{start_offset:020}-", partition_prefix(key_prefix, tp))
}

/// How every manifest key of the segment `id` ends, whatever its partition and start offset:
/// `-{segmentId}.manifest`.
pub fn manifest_key_tail(id: &Uuid) -> String {
    key_tail(id, Suffix::Manifest)
}

/// How every key of the object `suffix` of the segment `id` ends, whatever its partition and start offset:
/// `-{segmentId}.{extension}`.
pub fn key_tail(id: &Uuid, suffix: Suffix) -> String {
    format!("-{id}{}", suffix.dotted())
}

/// The keys of the segment `metadata` describes.
pub fn segment_keys(key_prefix: &str, metadata: &RemoteLogSegmentMetadata) -> SegmentKeys {
    let id = &metadata.remote_log_segment_id;
    let stem = format!("{}{}", start_offset_prefix(key_prefix, &id.topic_id_partition, metadata.start_offset), id.id);
    SegmentKeys {
        log: object_key(&stem, Suffix::Log),
        indexes: object_key(&stem, Suffix::Indexes),
        manifest: object_key(&stem, Suffix::Manifest),
        segment: object_key(&stem, Suffix::Segment),
    }
}

/// The key prefix of one partition, or of the whole store when `tp` is `None`.
pub fn scope_prefix(key_prefix: &str, tp: Option<&TopicIdPartition>) -> String {
    match tp {
        Some(tp) => partition_prefix(key_prefix, tp),
        None => key_prefix.to_string(),
    }
}

/// Reads a segment object's key back into what it names; `None` for a key of any other shape (not under
/// `key_prefix`, another extension, a start offset that is not 20 digits, an id that is not a Kafka Uuid).
pub fn parse_segment_key(key_prefix: &str, key: &str) -> Option<SegmentKey> {
    let mut parts = key.strip_prefix(key_prefix)?.split('/');
    let (topic_and_id, partition, name) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (topic, topic_id) = crate::partition_dir::split_topic_and_id(topic_and_id)?;
    let partition: i32 = partition.parse().ok().filter(|p: &i32| *p >= 0 && !partition.starts_with('+'))?;
    let (stem, ext) = name.rsplit_once('.')?;
    let suffix = Suffix::EVERY.into_iter().find(|s| s.extension() == ext)?;
    let (digits, segment_id) = (stem.get(..20)?, stem.get(20..)?.strip_prefix('-')?);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(SegmentKey {
        topic_id_partition: TopicIdPartition {
            topic_id: topic_id.parse().ok()?,
            topic_partition: TopicPartition { topic: topic.to_string(), partition },
        },
        start_offset: digits.parse().ok()?,
        segment_id: segment_id.parse().ok()?,
        suffix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RemoteLogSegmentId, RemoteLogSegmentState};

    fn metadata(topic: &str, partition: i32, start: i64) -> RemoteLogSegmentMetadata {
        RemoteLogSegmentMetadata {
            remote_log_segment_id: RemoteLogSegmentId {
                topic_id_partition: TopicIdPartition {
                    topic_id: "AAAAAAAAAAAAAAAAAAAA-w".parse().unwrap(),
                    topic_partition: TopicPartition { topic: topic.into(), partition },
                },
                id: "_-_-_-_-_-_-_-_-_-_-_w".parse().unwrap(),
            },
            start_offset: start,
            end_offset: start.saturating_add(9),
            max_timestamp_ms: 0,
            broker_id: 0,
            event_timestamp_ms: 0,
            segment_size_in_bytes: 1,
            segment_leader_epochs: Default::default(),
            custom_metadata: None,
            state: RemoteLogSegmentState::CopySegmentStarted,
            txn_idx_empty: true,
        }
    }

    #[test]
    fn every_key_made_reads_back_as_its_segment() {
        for (prefix, topic, partition, start) in
            [("", "orders", 0, 0), ("tiered/", "a-b-c", 7, 123), ("p", "x", i32::MAX, i64::MAX)]
        {
            let md = metadata(topic, partition, start);
            let keys = segment_keys(prefix, &md);
            for (key, suffix) in [
                (&keys.log, Suffix::Log),
                (&keys.indexes, Suffix::Indexes),
                (&keys.manifest, Suffix::Manifest),
                (&keys.segment, Suffix::Segment),
            ] {
                let k = parse_segment_key(prefix, key).unwrap_or_else(|| panic!("{key} does not parse"));
                assert!(k.names(&md), "{key}: {k:?}");
                assert_eq!(k.suffix, suffix, "{key}");
                // The small helpers cut it as segment_keys made it.
                let (stem, s) = split_object_key(key).unwrap_or_else(|| panic!("{key} does not split"));
                assert_eq!((s, Suffix::of(key)), (suffix, Some(suffix)), "{key}");
                assert_eq!(format!("{stem}."), keys.shared_prefix(), "{key}");
                assert_eq!(&object_key(stem, suffix), key);
                let tp = &md.remote_log_segment_id.topic_id_partition;
                assert!(key.starts_with(&start_offset_prefix(prefix, tp, start)), "{key}");
            }
            assert!(keys.manifest.ends_with(&manifest_key_tail(&md.remote_log_segment_id.id)));
        }
        for other in ["pre/x.json", "pre/x.logs", "pre/xlog", "pre/x.manifest/"] {
            assert_eq!(Suffix::of(other), None, "{other}");
        }
    }

    #[test]
    fn keys_of_other_shapes_are_not_segment_keys() {
        let good = segment_keys("pre/", &metadata("t", 1, 5)).manifest;
        assert!(parse_segment_key("pre/", &good).is_some());
        let bad = [
            good.replace("pre/", "other/"),
            good.replace(".manifest", ".json"),
            good.replace("/1/", "/-1/"),
            good.replace("/1/", "/x/"),
            good.replace("00000000000000000005", "0000000000000000005"),
            good.replace("00000000000000000005", "0000000000000000000a"),
            good.replace("-_-_-_", "-_-_-"),
            format!("{good}/more"),
            "pre/".to_string(),
            "pre/-AAAAAAAAAAAAAAAAAAAA-w/0/x.log".to_string(),
        ];
        for key in bad {
            assert_eq!(parse_segment_key("pre/", &key), None, "{key}");
        }
    }
}
