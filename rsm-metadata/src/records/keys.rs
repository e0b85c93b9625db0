//! The record keys and tombstones of KIP-1266's proposal for a compacted metadata topic: a segment's
//! records keyed by its partition, id and state, and a key with no value removing them; read as both open
//! designs write them, beside the unkeyed records Kafka writes today.

use super::{METADATA_TOPIC, RecordTags, decode_with_tags};
use crate::events::MetadataEvent;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentId, RemoteLogSegmentState, Uuid};

/// The length of a [`SegmentKey`] in bytes.
pub const SEGMENT_KEY_LEN: usize = 37;

/// The key KIP-1266's proposal (apache/kafka pull request 22774, `RemoteLogSegmentMetadataKeySerde`)
/// gives a segment's records: 37 bytes, the topic id (16, most significant half first), the partition
/// (4, big-endian), the segment id (16) and the state id (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentKey {
    /// The user topic's id.
    pub topic_id: Uuid,
    /// The user partition.
    pub partition: i32,
    /// The remote segment's id.
    pub segment_id: Uuid,
    /// The id of the state whose record the key is (`RemoteLogSegmentState::id`); kept as written, so a
    /// tombstone of a state this version does not know still names its segment.
    pub state_id: i8,
}

impl SegmentKey {
    /// The key of a segment's record in `state`.
    pub fn new(id: &RemoteLogSegmentId, state: RemoteLogSegmentState) -> Self {
        SegmentKey {
            topic_id: id.topic_id_partition.topic_id,
            partition: id.topic_id_partition.topic_partition.partition,
            segment_id: id.id,
            state_id: state as i8,
        }
    }

    /// The key's bytes.
    pub fn encode(&self) -> [u8; SEGMENT_KEY_LEN] {
        let mut out = [0u8; SEGMENT_KEY_LEN];
        out[..16].copy_from_slice(&self.topic_id.to_bytes());
        out[16..20].copy_from_slice(&self.partition.to_be_bytes());
        out[20..36].copy_from_slice(&self.segment_id.to_bytes());
        out[36] = self.state_id as u8;
        out
    }

    /// Reads a key of exactly [`SEGMENT_KEY_LEN`] bytes; `None` for any other length.
    pub fn decode(key: &[u8]) -> Option<Self> {
        let key: &[u8; SEGMENT_KEY_LEN] = key.try_into().ok()?;
        let uuid = |at: usize| {
            let mut b = [0u8; 16];
            b.copy_from_slice(&key[at..at + 16]);
            Uuid::from_bytes(b)
        };
        Some(SegmentKey {
            topic_id: uuid(0),
            partition: i32::from_be_bytes([key[16], key[17], key[18], key[19]]),
            segment_id: uuid(20),
            state_id: key[36] as i8,
        })
    }

    /// The state the key names, if it is one Kafka defines.
    pub fn state(&self) -> Option<RemoteLogSegmentState> {
        RemoteLogSegmentState::for_id(self.state_id).ok()
    }
}

impl std::fmt::Display for SegmentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state() {
            Some(s) => crate::events::segment_state_name(s).to_string(),
            None => format!("unknown state {}", self.state_id),
        };
        write!(f, "segment {} of topic id {} partition {} ({state})", self.segment_id, self.topic_id, self.partition)
    }
}

/// The key the other open design of KIP-1266 (apache/kafka pull request 22459) gives all of a segment's
/// records: the text `topicId:topicName:partition:endOffset:brokerLeaderEpoch` (`topicId:partition:...` in
/// the KIP's first text), the topic id in Kafka's form (22 characters of URL-safe base64). It names the
/// segment by its partition and end offset, not by its id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EndOffsetKey {
    /// The user topic's id.
    pub topic_id: Uuid,
    /// The user partition.
    pub partition: i32,
    /// The segment's end offset.
    pub end_offset: i64,
    /// The leader epoch of the broker that wrote the segment's records.
    pub broker_leader_epoch: i32,
}

impl EndOffsetKey {
    /// Reads the text key of four or five `:`-separated fields; `None` for anything else (a topic name
    /// cannot hold `:`, nor can a topic id).
    pub fn decode(key: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(key).ok()?;
        let fields: Vec<&str> = text.split(':').collect();
        let (id, rest) = match fields.as_slice() {
            [id, _topic, rest @ ..] if rest.len() == 3 => (id, rest),
            [id, rest @ ..] if rest.len() == 3 => (id, rest),
            _ => return None,
        };
        Some(EndOffsetKey {
            topic_id: id.parse().ok()?,
            partition: rest[0].parse().ok()?,
            end_offset: rest[1].parse().ok()?,
            broker_leader_epoch: rest[2].parse().ok()?,
        })
    }
}

impl std::fmt::Display for EndOffsetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the segment ending at offset {} of topic id {} partition {} (broker leader epoch {})",
            self.end_offset, self.topic_id, self.partition, self.broker_leader_epoch
        )
    }
}

/// A record of the metadata topic without a value (KIP-1266): what its key names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tombstone {
    /// The records of a segment in one state are deleted (sent once the segment's deletion finished).
    Segment(SegmentKey),
    /// The records of the segment ending at an offset are deleted (pull request 22459's design, sent once
    /// the segment's deletion finished).
    EndOffset(EndOffsetKey),
    /// A key of another shape (`len` bytes): nothing this reader can attribute, so nothing changes.
    Unrecognized {
        /// The key's length.
        len: usize,
    },
}

impl std::fmt::Display for Tombstone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tombstone::Segment(k) => write!(f, "tombstone of {k}"),
            Tombstone::EndOffset(k) => write!(f, "tombstone of {k}"),
            Tombstone::Unrecognized { len } => write!(f, "tombstone with an unrecognized key of {len} bytes"),
        }
    }
}

/// One record of the metadata topic, read by [`decode_record`].
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataRecord {
    /// A record with a value: its event and tagged fields.
    Event(MetadataEvent, RecordTags),
    /// A record with a key and no value.
    Tombstone(Tombstone),
}

/// Reads a record of the metadata topic from its key and value, as Kafka 3.9 to 4.4 write them (no key)
/// and as KIP-1266's proposal writes them (a key, and tombstones): see the [module](super). A value that
/// does not decode is [`super::decode`]'s error; a record with neither key nor value is a corrupt error.
pub fn decode_record(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<MetadataRecord> {
    match (key, value) {
        (_, Some(value)) => decode_with_tags(value).map(|(e, t)| MetadataRecord::Event(e, t)),
        // The text first: a text key can be 37 bytes long too, while a binary key that reads as the text form
        // (`:` at the right places, a topic id and three numbers between) is not one a broker writes.
        (Some(key), None) => {
            Ok(MetadataRecord::Tombstone(match (EndOffsetKey::decode(key), SegmentKey::decode(key)) {
                (Some(k), _) => Tombstone::EndOffset(k),
                (None, Some(k)) => Tombstone::Segment(k),
                (None, None) => Tombstone::Unrecognized { len: key.len() },
            }))
        }
        (None, None) => {
            Err(Error::corrupt(format!("{METADATA_TOPIC} record with neither a key nor a value (not a tombstone)")))
        }
    }
}
