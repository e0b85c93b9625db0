//! Kafka's tiered-storage plugin types, mirrored field for field
//! (`org.apache.kafka.server.log.remote.storage` and `org.apache.kafka.common`).

use crate::error::{Error, Result};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Kafka's `Uuid`: 128 bits, shown as 22 characters of URL-safe base64 without padding.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid {
    msb: u64,
    lsb: u64,
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl Uuid {
    /// The all-zero id (Kafka's `ZERO_UUID`), reserved.
    pub const ZERO: Uuid = Uuid { msb: 0, lsb: 0 };
    /// Kafka's `ONE_UUID` (the metadata topic id), reserved.
    pub const ONE: Uuid = Uuid { msb: 0, lsb: 1 };

    /// Builds an id from Kafka's two signed longs.
    pub const fn new(most_significant_bits: i64, least_significant_bits: i64) -> Self {
        Uuid { msb: most_significant_bits as u64, lsb: least_significant_bits as u64 }
    }

    /// The most significant 64 bits, as Kafka's `getMostSignificantBits()`.
    pub const fn most_significant_bits(&self) -> i64 {
        self.msb as i64
    }

    /// The least significant 64 bits, as Kafka's `getLeastSignificantBits()`.
    pub const fn least_significant_bits(&self) -> i64 {
        self.lsb as i64
    }

    /// The 16 bytes, big-endian.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.msb.to_be_bytes());
        b[8..].copy_from_slice(&self.lsb.to_be_bytes());
        b
    }

    /// From 16 big-endian bytes.
    pub fn from_bytes(b: [u8; 16]) -> Self {
        Uuid {
            msb: u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
            lsb: u64::from_be_bytes(b[8..].try_into().expect("8 bytes")),
        }
    }

    /// The topic id of a partition directory that has no `partition.metadata` (written by hand, restored
    /// without it, from a tool): derived from the topic name alone, so every partition of the topic, every
    /// rerun and every host name the same topic (a rerun never stores a second copy under another id). It is
    /// a name-based UUID (version 5 layout) over SHA-256 of `rsm topic id v1:` and the name: the first 16
    /// bytes, version 5 and IETF variant bits set, then, as Kafka's `randomUuid`, never a reserved id nor a
    /// string starting with '-' (a counter byte is appended to the input until it is neither).
    pub fn for_topic_name(topic: &str) -> Self {
        for n in 0u8.. {
            let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
            ctx.update(b"rsm topic id v1:");
            ctx.update(topic.as_bytes());
            if n > 0 {
                ctx.update(&[n]);
            }
            let digest = ctx.finish();
            let mut b: [u8; 16] = digest.as_ref()[..16].try_into().expect("SHA-256 has 32 bytes");
            b[6] = (b[6] & 0x0f) | 0x50;
            b[8] = (b[8] & 0x3f) | 0x80;
            let id = Uuid::from_bytes(b);
            if id != Uuid::ZERO && id != Uuid::ONE && !id.to_string().starts_with('-') {
                return id;
            }
        }
        unreachable!("255 SHA-256 digests all started with '-'")
    }

    /// A random id, as Kafka's `Uuid.randomUuid()`: never a reserved id, never a string starting with '-'.
    pub fn random() -> Self {
        loop {
            let mut b = [0u8; 16];
            getrandom::fill(&mut b).expect("the operating system's random source failed");
            // Version 4, IETF variant, as java.util.UUID.randomUUID().
            b[6] = (b[6] & 0x0f) | 0x40;
            b[8] = (b[8] & 0x3f) | 0x80;
            let id = Uuid::from_bytes(b);
            if id != Uuid::ZERO && id != Uuid::ONE && !id.to_string().starts_with('-') {
                return id;
            }
        }
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.to_bytes();
        let mut out = [0u8; 22];
        let mut o = 0;
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
            let chars = chunk.len() + 1;
            for i in 0..chars {
                out[o] = B64[((n >> (18 - 6 * i)) & 0x3f) as usize];
                o += 1;
            }
        }
        f.write_str(std::str::from_utf8(&out).expect("base64 is ascii"))
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Uuid {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::invalid(format!("`{s}` is not a Kafka Uuid (22 characters of URL-safe base64)"));
        if s.len() != 22 {
            return Err(bad());
        }
        let mut bytes = [0u8; 16];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut o = 0;
        for c in s.bytes() {
            let v = B64.iter().position(|&x| x == c).ok_or_else(bad)? as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                if o < 16 {
                    bytes[o] = (acc >> bits) as u8;
                    o += 1;
                }
                acc &= (1 << bits) - 1;
            }
        }
        // 22 chars carry 132 bits; the last 4 must be zero for a canonical encoding.
        if acc != 0 {
            return Err(bad());
        }
        Ok(Uuid::from_bytes(bytes))
    }
}

/// Kafka's `TopicPartition`; displayed as `topic-partition`.
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct TopicPartition {
    /// The topic name.
    pub topic: String,
    /// The partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// A topic partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition { topic: topic.into(), partition }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Kafka's `TopicIdPartition`: a topic id with its topic partition.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct TopicIdPartition {
    /// The topic's id.
    pub topic_id: Uuid,
    /// The topic name and partition.
    pub topic_partition: TopicPartition,
}

impl TopicIdPartition {
    /// A topic id partition.
    pub fn new(topic_id: Uuid, topic_partition: TopicPartition) -> Self {
        TopicIdPartition { topic_id, topic_partition }
    }
}

impl fmt::Display for TopicIdPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.topic_id, self.topic_partition)
    }
}

/// Kafka's `RemoteLogSegmentId`: a partition and a unique id, new for every copy attempt.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RemoteLogSegmentId {
    /// The partition the segment belongs to.
    pub topic_id_partition: TopicIdPartition,
    /// The attempt's unique id.
    pub id: Uuid,
}

impl RemoteLogSegmentId {
    /// A segment id.
    pub fn new(topic_id_partition: TopicIdPartition, id: Uuid) -> Self {
        RemoteLogSegmentId { topic_id_partition, id }
    }

    /// A fresh id for `tp`, as `RemoteLogSegmentId.generateNew`.
    pub fn generate_new(tp: TopicIdPartition) -> Self {
        RemoteLogSegmentId { topic_id_partition: tp, id: Uuid::random() }
    }
}

impl fmt::Display for RemoteLogSegmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.topic_id_partition, self.id)
    }
}

/// Kafka's `RemoteLogSegmentState`, with its wire ids.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[repr(i8)]
pub enum RemoteLogSegmentState {
    /// The copy started (id 0).
    #[default]
    CopySegmentStarted = 0,
    /// The copy finished (id 1).
    CopySegmentFinished = 1,
    /// The deletion started (id 2).
    DeleteSegmentStarted = 2,
    /// The deletion finished (id 3).
    DeleteSegmentFinished = 3,
}

impl RemoteLogSegmentState {
    /// The state for a wire id.
    pub fn for_id(id: i8) -> Result<Self> {
        Ok(match id {
            0 => Self::CopySegmentStarted,
            1 => Self::CopySegmentFinished,
            2 => Self::DeleteSegmentStarted,
            3 => Self::DeleteSegmentFinished,
            _ => {
                return Err(Error::invalid(format!("unknown remote log segment state id {id}")));
            }
        })
    }
}

/// Kafka's `RemoteLogSegmentMetadata.CustomMetadata`: opaque bytes a plugin returns from a copy.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct CustomMetadata(pub Vec<u8>);

/// Kafka's `RemoteLogSegmentMetadata`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RemoteLogSegmentMetadata {
    /// The segment's id.
    pub remote_log_segment_id: RemoteLogSegmentId,
    /// First offset, inclusive.
    pub start_offset: i64,
    /// Last offset, inclusive.
    pub end_offset: i64,
    /// Largest record timestamp in the segment.
    pub max_timestamp_ms: i64,
    /// The broker that made this metadata.
    pub broker_id: i32,
    /// When this metadata event was made.
    pub event_timestamp_ms: i64,
    /// Size of the `.log` file in bytes.
    pub segment_size_in_bytes: i32,
    /// Leader epoch -> first offset of that epoch in the segment.
    pub segment_leader_epochs: BTreeMap<i32, i64>,
    /// What the plugin returned from the copy, if anything.
    pub custom_metadata: Option<CustomMetadata>,
    /// The lifecycle state.
    pub state: RemoteLogSegmentState,
    /// Whether the segment's transaction index is empty (Kafka 4.0+).
    pub txn_idx_empty: bool,
}

impl RemoteLogSegmentMetadata {
    /// Metadata in state `COPY_SEGMENT_STARTED` without custom metadata, validated as Kafka does.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        remote_log_segment_id: RemoteLogSegmentId,
        start_offset: i64,
        end_offset: i64,
        max_timestamp_ms: i64,
        broker_id: i32,
        event_timestamp_ms: i64,
        segment_size_in_bytes: i32,
        segment_leader_epochs: BTreeMap<i32, i64>,
    ) -> Result<Self> {
        let m = RemoteLogSegmentMetadata {
            remote_log_segment_id,
            start_offset,
            end_offset,
            max_timestamp_ms,
            broker_id,
            event_timestamp_ms,
            segment_size_in_bytes,
            segment_leader_epochs,
            custom_metadata: None,
            state: RemoteLogSegmentState::CopySegmentStarted,
            txn_idx_empty: false,
        };
        m.validate()?;
        Ok(m)
    }

    /// Kafka's constructor checks: start offset not negative, end not below start, at least one leader
    /// epoch; and, ours, a size that is not negative.
    pub fn validate(&self) -> Result<()> {
        let id = &self.remote_log_segment_id;
        if self.start_offset < 0 {
            return Err(Error::invalid(format!("segment {id}: unexpected start offset = {}", self.start_offset)));
        }
        if self.end_offset < self.start_offset {
            return Err(Error::invalid(format!(
                "segment {id}: end offset {} can not be less than start offset {}",
                self.end_offset, self.start_offset
            )));
        }
        if self.segment_leader_epochs.is_empty() {
            return Err(Error::invalid(format!("segment {id}: segment leader epochs can not be empty")));
        }
        if self.segment_size_in_bytes < 0 {
            return Err(Error::invalid(format!("segment {id}: negative segment size {}", self.segment_size_in_bytes)));
        }
        Ok(())
    }
}

/// Kafka's `LogSegmentData`: the local files of a closed segment, and the leader-epoch checkpoint bytes.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LogSegmentData {
    /// The `.log` file.
    pub log_segment: PathBuf,
    /// The `.index` file.
    pub offset_index: PathBuf,
    /// The `.timeindex` file.
    pub time_index: PathBuf,
    /// The `.txnindex` file, if the segment has one.
    pub transaction_index: Option<PathBuf>,
    /// The `.snapshot` producer state file.
    pub producer_snapshot_index: PathBuf,
    /// The leader-epoch checkpoint, in its text format.
    pub leader_epoch_index: Bytes,
}

/// Kafka's `RemoteStorageManager.IndexType`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum IndexType {
    /// The `.index` file.
    Offset,
    /// The `.timeindex` file.
    Timestamp,
    /// The producer snapshot.
    ProducerSnapshot,
    /// The `.txnindex` file (may be absent).
    Transaction,
    /// The leader-epoch checkpoint.
    LeaderEpoch,
}

impl IndexType {
    /// All five, in Kafka's declaration order (which is also their order in the bundle).
    pub const ALL: [IndexType; 5] = [
        IndexType::Offset,
        IndexType::Timestamp,
        IndexType::ProducerSnapshot,
        IndexType::Transaction,
        IndexType::LeaderEpoch,
    ];

    /// Position in [`IndexType::ALL`] (Kafka's ordinal).
    pub fn ordinal(self) -> usize {
        self as usize
    }

    /// Kafka's enum constant name.
    pub fn name(self) -> &'static str {
        match self {
            IndexType::Offset => "OFFSET",
            IndexType::Timestamp => "TIMESTAMP",
            IndexType::ProducerSnapshot => "PRODUCER_SNAPSHOT",
            IndexType::Transaction => "TRANSACTION",
            IndexType::LeaderEpoch => "LEADER_EPOCH",
        }
    }
}

impl FromStr for IndexType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        IndexType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| Error::invalid(format!("unknown index type `{s}`")))
    }
}

impl fmt::Display for IndexType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_string_matches_kafka_known_answers() {
        // Kafka: new Uuid(0, 0).toString() == "AAAAAAAAAAAAAAAAAAAAAA", new Uuid(0, 1) == "AAAAAAAAAAAAAAAAAAAAAQ".
        assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(Uuid::ONE.to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
        // All bits set: 21 '_' and a final 'w' (the last char carries only 2 data bits).
        assert_eq!(Uuid::new(-1, -1).to_string(), "_____________________w");
        // java.util.Base64 of bytes 00..0f: "AAECAwQFBgcICQoLDA0ODw".
        let b: [u8; 16] = std::array::from_fn(|i| i as u8);
        assert_eq!(Uuid::from_bytes(b).to_string(), "AAECAwQFBgcICQoLDA0ODw");
    }

    #[test]
    fn a_topic_name_always_derives_the_same_id() {
        // Known answers from Python's hashlib and base64 (an independent implementation of the rule):
        // SHA-256 of "rsm topic id v1:" + name, first 16 bytes, version 5 and IETF variant bits.
        assert_eq!(Uuid::for_topic_name("orders").to_string(), "6oXs9aatViuWNaden5SoTg");
        assert_eq!(Uuid::for_topic_name("a-b.c_d").to_string(), "KQrRDnojVhyw9u5yQ58rag");
        assert_ne!(Uuid::for_topic_name("orders"), Uuid::for_topic_name("orders2"));
        for i in 0..2000 {
            let s = Uuid::for_topic_name(&format!("topic{i}")).to_string();
            assert!(!s.starts_with('-'), "{s}");
        }
    }

    #[test]
    fn uuid_round_trips_and_rejects_bad_strings() {
        for _ in 0..200 {
            let u = Uuid::random();
            let s = u.to_string();
            assert_eq!(s.len(), 22);
            assert!(!s.starts_with('-'));
            assert_eq!(s.parse::<Uuid>().unwrap(), u);
            assert_eq!(Uuid::new(u.most_significant_bits(), u.least_significant_bits()), u);
        }
        for bad in ["", "AAAA", "AAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAB", "AAAAAAAAAAAAAAAAAAAAA+A"] {
            let e = bad.parse::<Uuid>().unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    fn sid() -> RemoteLogSegmentId {
        RemoteLogSegmentId::generate_new(TopicIdPartition::new(Uuid::random(), TopicPartition::new("t", 0)))
    }

    #[test]
    fn metadata_is_validated_as_kafka_does() {
        let epochs = BTreeMap::from([(0, 0)]);
        struct Case {
            start: i64,
            end: i64,
            epochs: BTreeMap<i32, i64>,
            err: Option<&'static str>,
        }
        let cases = [
            Case { start: 0, end: 0, epochs: epochs.clone(), err: None },
            Case { start: 5, end: 9, epochs: epochs.clone(), err: None },
            Case { start: -1, end: 9, epochs: epochs.clone(), err: Some("unexpected start offset = -1") },
            Case {
                start: 10,
                end: 9,
                epochs: epochs.clone(),
                err: Some("end offset 9 can not be less than start offset 10"),
            },
            Case { start: 0, end: 9, epochs: BTreeMap::new(), err: Some("leader epochs can not be empty") },
        ];
        for c in cases {
            let r = RemoteLogSegmentMetadata::new(sid(), c.start, c.end, 0, 1, 0, 100, c.epochs);
            match (r, c.err) {
                (Ok(_), None) => {}
                (Err(e), Some(msg)) => {
                    assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
                    assert!(e.to_string().contains(msg), "{e}");
                }
                (r, want) => panic!("start {} end {}: got {r:?}, want error {want:?}", c.start, c.end),
            }
        }
    }

    #[test]
    fn topic_partition_and_index_type_names() {
        assert_eq!(TopicPartition::new("orders", 7).to_string(), "orders-7");
        for t in IndexType::ALL {
            assert_eq!(t.name().parse::<IndexType>().unwrap(), t);
        }
        assert_eq!(RemoteLogSegmentState::for_id(3).unwrap(), RemoteLogSegmentState::DeleteSegmentFinished);
        assert!(RemoteLogSegmentState::for_id(4).is_err());
    }
}
