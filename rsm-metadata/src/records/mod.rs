//! Kafka's record format on `__remote_log_metadata`: the value of every record is Kafka's
//! `RemoteLogMetadataSerde` output, that is `AbstractApiMessageSerde`'s frame (frame version, api key and
//! message version, each an unsigned varint) followed by the message in Kafka's flexible-version encoding.
//!
//! | api key | message | event |
//! |---|---|---|
//! | 0 | `RemoteLogSegmentMetadataRecord` | [`MetadataEvent::Segment`] |
//! | 1 | `RemoteLogSegmentMetadataUpdateRecord` | [`MetadataEvent::SegmentUpdate`] |
//! | 2 | `RemotePartitionDeleteMetadataRecord` | [`MetadataEvent::PartitionDelete`] |
//! | 3 | `RemoteLogSegmentMetadataSnapshotRecord` | [`MetadataEvent::Snapshot`] |
//!
//! Every Kafka release from 3.9.2 to 4.4.0 writes version 0 of every message (their generated classes
//! know only version 0); 4.0 added the tagged field `TxnIndexEmpty` (tag 0) to the segment and snapshot
//! records, written only when true, which 3.9 reads as an unknown tagged field. [`encode`] writes exactly
//! those bytes. [`decode`] also reads version 1, which KIP-1266's proposal defines (apache/kafka pull
//! request 22459, not merged): its extra tagged fields (`BrokerLeaderEpoch`, `EndOffset`) are checked
//! and returned by [`decode_with_tags`]. Unknown tagged fields are skipped in every version.
//!
//! # Keyed records and tombstones (KIP-1266)
//!
//! KIP-1266 (under discussion, not in any release: Kafka 4.4.0's schemas know version 0 only) makes the
//! metadata topic compactable: every record gets a key, and once a segment's deletion finished its records
//! are deleted with tombstones (a key and a null value). [`decode_record`] reads a record as such a broker
//! writes it: the value, when there is one, decides alone (the key is derived from it and is not checked);
//! a tombstone whose key is a [`SegmentKey`] (the 37-byte layout of the proposal's
//! `RemoteLogSegmentMetadataKeySerde`: topic id, partition, segment id, state id) names the segment whose
//! records are gone; a tombstone with any other key is read as one that changes nothing; a record with
//! neither key nor value is an error naming both. Version 1's tagged `BrokerLeaderEpoch` and `EndOffset`
//! are returned by [`decode_with_tags`].
//!
//! The codec is structural: it checks the encoding, not Kafka's value rules (a segment's leader epochs
//! not empty, offsets in order, state transitions); those belong to the model and the state machines.

use crate::events::{
    MetadataEvent, RemoteLogSegmentMetadataSnapshot, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
};
use rsm_core::error::{Error, Result};
use rsm_core::format::codec::{Reader, Writer};
use rsm_core::model::{
    CustomMetadata, RemoteLogSegmentId, RemoteLogSegmentState, TopicIdPartition, TopicPartition, Uuid,
};
use std::collections::BTreeMap;

mod keys;

pub use keys::{EndOffsetKey, MetadataRecord, SEGMENT_KEY_LEN, SegmentKey, Tombstone, decode_record};

/// The topic Kafka's `TopicBasedRemoteLogMetadataManager` keeps the events in.
pub const METADATA_TOPIC: &str = "__remote_log_metadata";

/// The topic of segments whose deletion failed (SR-35).
pub const FAILED_DELETIONS_TOPIC: &str = "__remote_segments_to_be_deleted";

/// `AbstractApiMessageSerde`'s frame version, the first varint of every value.
pub const FRAME_VERSION: u32 = 1;

/// The message version [`encode`] writes: the one every Kafka release from 3.9.2 to 4.4.0 writes.
pub const RECORD_VERSION: u16 = 0;

/// The highest message version [`decode`] reads.
pub const MAX_RECORD_VERSION: u16 = 1;

/// Api key of `RemoteLogSegmentMetadataRecord`.
pub const SEGMENT_API_KEY: u16 = 0;
/// Api key of `RemoteLogSegmentMetadataUpdateRecord`.
pub const SEGMENT_UPDATE_API_KEY: u16 = 1;
/// Api key of `RemotePartitionDeleteMetadataRecord`.
pub const PARTITION_DELETE_API_KEY: u16 = 2;
/// Api key of `RemoteLogSegmentMetadataSnapshotRecord`.
pub const SNAPSHOT_API_KEY: u16 = 3;

/// The longest string Kafka's generated readers accept (`0x7fff` bytes).
const MAX_STRING_LEN: usize = 0x7fff;

/// Encodes an event as the value of a record on the metadata topic, byte for byte as Kafka's
/// `RemoteLogMetadataSerde.serialize` writes it (version [`RECORD_VERSION`]), which every broker from
/// Kafka 3.9.2 on reads. A topic name longer than 32767 bytes (never a Kafka topic name) is written, but
/// Kafka, and [`decode`], refuse it.
pub fn encode(event: &MetadataEvent) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let mut w = Writer::new(&mut out);
    let api_key = match event {
        MetadataEvent::Segment(_) => SEGMENT_API_KEY,
        MetadataEvent::SegmentUpdate(_) => SEGMENT_UPDATE_API_KEY,
        MetadataEvent::PartitionDelete(_) => PARTITION_DELETE_API_KEY,
        MetadataEvent::Snapshot(_) => SNAPSHOT_API_KEY,
    };
    w.uvarint(FRAME_VERSION);
    w.uvarint(api_key.into());
    w.uvarint(RECORD_VERSION.into());
    match event {
        MetadataEvent::Segment(m) => {
            write_segment_id(&mut w, &m.remote_log_segment_id);
            write_segment_fields(&mut w, &RemoteLogSegmentMetadataSnapshot::of(m));
        }
        MetadataEvent::SegmentUpdate(u) => {
            write_segment_id(&mut w, &u.remote_log_segment_id);
            w.i32(u.broker_id);
            w.i64(u.event_timestamp_ms);
            write_custom(&mut w, &u.custom_metadata);
            w.i8(u.state as i8);
            write_no_tags(&mut w);
        }
        MetadataEvent::PartitionDelete(d) => {
            write_topic_id_partition(&mut w, &d.topic_id_partition);
            w.i32(d.broker_id);
            w.i64(d.event_timestamp_ms);
            w.i8(d.state as i8);
            write_no_tags(&mut w);
        }
        MetadataEvent::Snapshot(s) => {
            w.bytes(&s.segment_id.to_bytes());
            write_segment_fields(&mut w, s);
        }
    }
    out
}

/// Decodes a record value of the metadata topic, as any Kafka broker from 3.9 to 4.4 writes it (and
/// version 1 of the messages). Any damage is a corrupt error naming the record type, the field and its
/// offset in the value: truncation, trailing bytes, a varint longer than 5 bytes, a length that is
/// negative or longer than what is left, a null where Kafka allows none, a string that is not UTF-8, an
/// unknown frame version, api key, message version or state id, a leader epoch given twice.
pub fn decode(value: &[u8]) -> Result<MetadataEvent> {
    decode_with_tags(value).map(|(event, _)| event)
}

/// What a value says beside its event: its message version and version 1's tagged fields (KIP-1266's
/// proposal), `None` when absent (a version 0 value, or a field left at its default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordTags {
    /// The message version (0 or 1).
    pub version: u16,
    /// `BrokerLeaderEpoch`: the leader epoch of the partition on the broker that wrote the event (tag 1 of
    /// the segment and snapshot records, tag 0 of the update and partition-delete records).
    pub broker_leader_epoch: Option<i32>,
    /// `EndOffset` (tag 1 of the update and partition-delete records): the end offset of the segment
    /// updated, or of the partition at its deletion.
    pub end_offset: Option<i64>,
}

/// As [`decode`], and the value's version and tagged fields.
pub fn decode_with_tags(value: &[u8]) -> Result<(MetadataEvent, RecordTags)> {
    let mut r = ValueReader::new(value, "record frame");
    let frame = r.uvarint("frame version")?;
    if frame != FRAME_VERSION {
        return Err(r.err_at(0, "frame version", format!("unsupported frame version {frame} (expected 1)")));
    }
    let at = r.pos();
    let api_key = r.uvarint("api key")?;
    r.record = match api_key {
        0 => "RemoteLogSegmentMetadataRecord",
        1 => "RemoteLogSegmentMetadataUpdateRecord",
        2 => "RemotePartitionDeleteMetadataRecord",
        3 => "RemoteLogSegmentMetadataSnapshotRecord",
        _ => return Err(r.err_at(at, "api key", format!("unknown api key {api_key} (expected 0 to 3)"))),
    };
    let at = r.pos();
    let version = r.uvarint("version")?;
    if version > MAX_RECORD_VERSION.into() {
        return Err(r.err_at(at, "version", format!("unsupported version {version} (expected 0 or 1)")));
    }
    let v1 = version == 1;
    r.tags.version = version as u16;
    let event = match api_key {
        0 => {
            let id = r.segment_id()?;
            let fields = r.segment_fields("RemoteLogSegmentMetadataRecord", v1, id.id)?;
            MetadataEvent::Segment(fields.into_metadata(id.topic_id_partition))
        }
        1 => {
            let remote_log_segment_id = r.segment_id()?;
            let broker_id = r.i32("BrokerId")?;
            let event_timestamp_ms = r.i64("EventTimestampMs")?;
            let custom_metadata = r.custom()?;
            let state = r.segment_state()?;
            r.tags("RemoteLogSegmentMetadataUpdateRecord", |r, tag, size| r.v1_epoch_and_offset(v1, tag, size))?;
            MetadataEvent::SegmentUpdate(RemoteLogSegmentMetadataUpdate {
                remote_log_segment_id,
                event_timestamp_ms,
                custom_metadata,
                state,
                broker_id,
            })
        }
        2 => {
            let topic_id_partition = r.topic_id_partition()?;
            let broker_id = r.i32("BrokerId")?;
            let event_timestamp_ms = r.i64("EventTimestampMs")?;
            let at = r.pos();
            let id = r.i8("RemotePartitionDeleteState")?;
            let state = RemotePartitionDeleteState::for_id(id)
                .map_err(|e| r.err_at(at, "RemotePartitionDeleteState", e.to_string()))?;
            r.tags("RemotePartitionDeleteMetadataRecord", |r, tag, size| r.v1_epoch_and_offset(v1, tag, size))?;
            MetadataEvent::PartitionDelete(RemotePartitionDeleteMetadata {
                topic_id_partition,
                state,
                event_timestamp_ms,
                broker_id,
            })
        }
        _ => {
            let segment_id = r.uuid("SegmentId")?;
            MetadataEvent::Snapshot(r.segment_fields("RemoteLogSegmentMetadataSnapshotRecord", v1, segment_id)?)
        }
    };
    if r.remaining() != 0 {
        let trailing = r.remaining();
        return Err(r.err_at(r.pos(), "end of value", format!("{trailing} trailing bytes after the message")));
    }
    Ok((event, r.tags))
}

// Kafka's flexible-version writing (`ByteBufferAccessor` plus the generated `write` methods), over the
// SDK's writer.

/// An empty tagged-field section.
fn write_no_tags(w: &mut Writer<'_>) {
    w.uvarint(0);
}

fn write_topic_id_partition(w: &mut Writer<'_>, tp: &TopicIdPartition) {
    let name = tp.topic_partition.topic.as_bytes();
    w.compact_len(name.len());
    w.bytes(name);
    w.bytes(&tp.topic_id.to_bytes());
    w.i32(tp.topic_partition.partition);
    write_no_tags(w);
}

/// The fields a segment record and a snapshot record share, after the segment's id.
fn write_segment_fields(w: &mut Writer<'_>, s: &RemoteLogSegmentMetadataSnapshot) {
    w.i64(s.start_offset);
    w.i64(s.end_offset);
    w.i32(s.broker_id);
    w.i64(s.max_timestamp_ms);
    w.i64(s.event_timestamp_ms);
    write_leader_epochs(w, &s.segment_leader_epochs);
    w.i32(s.segment_size_in_bytes);
    write_custom(w, &s.custom_metadata);
    w.i8(s.state as i8);
    write_txn_idx_empty_tag(w, s.txn_idx_empty);
}

fn write_segment_id(w: &mut Writer<'_>, id: &RemoteLogSegmentId) {
    write_topic_id_partition(w, &id.topic_id_partition);
    w.bytes(&id.id.to_bytes());
    write_no_tags(w);
}

fn write_leader_epochs(w: &mut Writer<'_>, epochs: &BTreeMap<i32, i64>) {
    w.compact_len(epochs.len());
    for (&epoch, &offset) in epochs {
        w.i32(epoch);
        w.i64(offset);
        write_no_tags(w);
    }
}

fn write_custom(w: &mut Writer<'_>, custom: &Option<CustomMetadata>) {
    match custom {
        None => w.uvarint(0),
        Some(c) => {
            w.compact_len(c.0.len());
            w.bytes(&c.0);
        }
    }
}

/// The record's tagged fields: `TxnIndexEmpty` (tag 0), written only when true (its default is false).
fn write_txn_idx_empty_tag(w: &mut Writer<'_>, txn_idx_empty: bool) {
    if txn_idx_empty {
        w.bytes(&[1, 0, 1, 1]);
    } else {
        write_no_tags(w);
    }
}

/// Kafka's flexible-version reading of one value, over the SDK's reader: every error names the record
/// type, the field and its offset.
struct ValueReader<'a> {
    r: Reader<'a>,
    len: usize,
    record: &'static str,
    tags: RecordTags,
}

impl<'a> ValueReader<'a> {
    fn new(value: &'a [u8], record: &'static str) -> Self {
        ValueReader { r: Reader::unnamed(value), len: value.len(), record, tags: RecordTags::default() }
    }

    fn err_at(&self, at: usize, field: &str, what: impl std::fmt::Display) -> Error {
        Error::corrupt(format!(
            "{METADATA_TOPIC} value of {} bytes, {}: field {field} at offset {at}: {what}",
            self.len, self.record
        ))
    }

    /// Bytes read so far: the offset in the value.
    fn pos(&self) -> usize {
        self.r.position()
    }

    fn remaining(&self) -> usize {
        self.r.remaining()
    }

    /// Reads `field` with `read`; its error names the field and the offset it starts at.
    fn field<T>(&mut self, field: &str, read: impl FnOnce(&mut Reader<'a>) -> Result<T>) -> Result<T> {
        let at = self.r.position();
        read(&mut self.r).map_err(|e| self.err_at(at, field, e.message()))
    }

    fn take(&mut self, field: &str, n: usize) -> Result<&'a [u8]> {
        self.field(field, |r| r.bytes(n))
    }

    fn i8(&mut self, field: &str) -> Result<i8> {
        self.field(field, |r| Ok(r.u8()? as i8))
    }

    fn i32(&mut self, field: &str) -> Result<i32> {
        self.field(field, Reader::i32)
    }

    fn i64(&mut self, field: &str) -> Result<i64> {
        self.field(field, Reader::i64)
    }

    fn uuid(&mut self, field: &str) -> Result<Uuid> {
        self.field(field, |r| Ok(Uuid::from_bytes(r.array()?)))
    }

    /// Kafka's unsigned varint: at most 5 bytes, and no bits beyond 32.
    fn uvarint(&mut self, field: &str) -> Result<u32> {
        self.field(field, Reader::uvarint)
    }

    /// A compact length: `None` for the null marker (0), else the length, checked against what is left.
    fn compact_len(&mut self, field: &str, min_item: usize) -> Result<Option<usize>> {
        self.field(field, |r| r.compact_len(min_item))
    }

    fn string(&mut self, field: &str) -> Result<String> {
        let at = self.pos();
        let Some(len) = self.compact_len(field, 1)? else {
            return Err(self.err_at(at, field, "null, but the field is not nullable"));
        };
        if len > MAX_STRING_LEN {
            return Err(self.err_at(at, field, format!("string length {len} is over Kafka's limit of 32767")));
        }
        let bytes = self.take(field, len)?;
        String::from_utf8(bytes.to_vec()).map_err(|e| self.err_at(at, field, format!("not UTF-8: {e}")))
    }

    /// The tagged-field section that ends every struct: `known` reads a tag it knows (returning true),
    /// or returns false for one to skip by its size.
    fn tags(&mut self, of: &str, mut known: impl FnMut(&mut Self, u32, usize) -> Result<bool>) -> Result<()> {
        let field = format!("{of} tagged fields");
        let count = self.uvarint(&field)?;
        for _ in 0..count {
            let tag = self.uvarint(&field)?;
            let at = self.pos();
            let size = self.uvarint(&field)? as usize;
            if size > self.remaining() {
                return Err(self.err_at(
                    at,
                    &field,
                    format!("tag {tag}: size {size} is longer than the {} bytes left", self.remaining()),
                ));
            }
            if !known(self, tag, size)? {
                self.take(&field, size)?;
            }
        }
        Ok(())
    }

    /// Checks that a known tagged field has its type's width.
    fn known_tag(&self, field: &str, size: usize, width: usize) -> Result<()> {
        if size != width {
            return Err(self.err_at(self.pos(), field, format!("tagged field of {size} bytes, expected {width}")));
        }
        Ok(())
    }

    /// Version 1's `BrokerLeaderEpoch`, kept in the tags.
    fn broker_leader_epoch_tag(&mut self, size: usize) -> Result<bool> {
        self.known_tag("BrokerLeaderEpoch", size, 4)?;
        self.tags.broker_leader_epoch = Some(self.i32("BrokerLeaderEpoch")?);
        Ok(true)
    }

    fn txn_idx_empty_tag(&mut self, size: usize) -> Result<bool> {
        if size != 1 {
            return Err(self.err_at(self.pos(), "TxnIndexEmpty", format!("tagged field of {size} bytes, expected 1")));
        }
        Ok(self.i8("TxnIndexEmpty")? != 0)
    }

    /// Version 1's `BrokerLeaderEpoch` (tag 0) and `EndOffset` (tag 1) of the update and delete records.
    fn v1_epoch_and_offset(&mut self, v1: bool, tag: u32, size: usize) -> Result<bool> {
        match tag {
            0 if v1 => self.broker_leader_epoch_tag(size),
            1 if v1 => {
                self.known_tag("EndOffset", size, 8)?;
                self.tags.end_offset = Some(self.i64("EndOffset")?);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn topic_id_partition(&mut self) -> Result<TopicIdPartition> {
        let name = self.string("TopicIdPartition.Name")?;
        let id = self.uuid("TopicIdPartition.Id")?;
        let partition = self.i32("TopicIdPartition.Partition")?;
        self.tags("TopicIdPartitionEntry", |_, _, _| Ok(false))?;
        Ok(TopicIdPartition::new(id, TopicPartition::new(name, partition)))
    }

    /// The fields a segment record and a snapshot record share, after the segment's id (its state and
    /// tagged fields included).
    fn segment_fields(&mut self, record: &str, v1: bool, segment_id: Uuid) -> Result<RemoteLogSegmentMetadataSnapshot> {
        let start_offset = self.i64("StartOffset")?;
        let end_offset = self.i64("EndOffset")?;
        let broker_id = self.i32("BrokerId")?;
        let max_timestamp_ms = self.i64("MaxTimestampMs")?;
        let event_timestamp_ms = self.i64("EventTimestampMs")?;
        let segment_leader_epochs = self.leader_epochs()?;
        let segment_size_in_bytes = self.i32("SegmentSizeInBytes")?;
        let custom_metadata = self.custom()?;
        let state = self.segment_state()?;
        let mut txn_idx_empty = false;
        self.tags(record, |r, tag, size| match tag {
            0 => r.txn_idx_empty_tag(size).map(|b| txn_idx_empty = b).map(|_| true),
            1 if v1 => r.broker_leader_epoch_tag(size),
            _ => Ok(false),
        })?;
        Ok(RemoteLogSegmentMetadataSnapshot {
            segment_id,
            start_offset,
            end_offset,
            max_timestamp_ms,
            broker_id,
            event_timestamp_ms,
            segment_leader_epochs,
            segment_size_in_bytes,
            custom_metadata,
            state,
            txn_idx_empty,
        })
    }

    fn segment_id(&mut self) -> Result<RemoteLogSegmentId> {
        let tp = self.topic_id_partition()?;
        let id = self.uuid("RemoteLogSegmentId.Id")?;
        self.tags("RemoteLogSegmentIdEntry", |_, _, _| Ok(false))?;
        Ok(RemoteLogSegmentId::new(tp, id))
    }

    fn leader_epochs(&mut self) -> Result<BTreeMap<i32, i64>> {
        let at = self.pos();
        // An entry is at least 13 bytes: epoch, offset and an empty tagged-field section.
        let Some(n) = self.compact_len("SegmentLeaderEpochs", 13)? else {
            return Err(self.err_at(at, "SegmentLeaderEpochs", "null, but the field is not nullable"));
        };
        let mut epochs = BTreeMap::new();
        for _ in 0..n {
            let entry = self.pos();
            let epoch = self.i32("SegmentLeaderEpochs.LeaderEpoch")?;
            let offset = self.i64("SegmentLeaderEpochs.Offset")?;
            self.tags("SegmentLeaderEpochEntry", |_, _, _| Ok(false))?;
            if epochs.insert(epoch, offset).is_some() {
                return Err(self.err_at(entry, "SegmentLeaderEpochs", format!("leader epoch {epoch} given twice")));
            }
        }
        Ok(epochs)
    }

    fn custom(&mut self) -> Result<Option<CustomMetadata>> {
        let Some(len) = self.compact_len("CustomMetadata", 1)? else { return Ok(None) };
        Ok(Some(CustomMetadata(self.take("CustomMetadata", len)?.to_vec())))
    }

    fn segment_state(&mut self) -> Result<RemoteLogSegmentState> {
        let at = self.pos();
        let id = self.i8("RemoteLogSegmentState")?;
        RemoteLogSegmentState::for_id(id).map_err(|e| self.err_at(at, "RemoteLogSegmentState", e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> TopicIdPartition {
        TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new("t", 0))
    }

    fn update() -> MetadataEvent {
        MetadataEvent::SegmentUpdate(RemoteLogSegmentMetadataUpdate {
            remote_log_segment_id: RemoteLogSegmentId::new(tp(), Uuid::new(3, 4)),
            event_timestamp_ms: 5,
            custom_metadata: None,
            state: RemoteLogSegmentState::CopySegmentFinished,
            broker_id: 6,
        })
    }

    fn err(value: &[u8]) -> String {
        decode(value).expect_err("an error").to_string()
    }

    #[test]
    fn varints_are_kafkas() {
        for (v, bytes) in
            [(0u32, &[0u8][..]), (127, &[0x7f]), (128, &[0x80, 1]), (u32::MAX, &[0xff, 0xff, 0xff, 0xff, 0x0f])]
        {
            let mut out = Vec::new();
            Writer::new(&mut out).uvarint(v);
            assert_eq!(out, bytes);
            let mut r = ValueReader::new(bytes, "test");
            assert_eq!(r.uvarint("v").unwrap(), v);
        }
        let mut r = ValueReader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], "test");
        assert!(r.uvarint("v").unwrap_err().to_string().contains("too long"));
    }

    #[test]
    fn frame_errors_name_what_is_wrong() {
        let good = encode(&update());
        assert_eq!(decode(&good).unwrap(), update());
        let mut bad = good.clone();
        bad[0] = 2;
        assert!(err(&bad).contains("frame version 2"), "{}", err(&bad));
        bad = good.clone();
        bad[1] = 4;
        assert!(err(&bad).contains("unknown api key 4"));
        bad = good.clone();
        bad[2] = 2;
        assert!(err(&bad).contains("unsupported version 2"));
        bad = good.clone();
        bad.push(0);
        assert!(err(&bad).contains("1 trailing bytes"));
        assert!(err(&[]).contains("truncated varint"));
    }

    #[test]
    fn version_1_tags_are_read_and_dropped_and_unknown_ones_skipped() {
        let mut v1 = encode(&update());
        v1[2] = 1;
        v1.pop(); // no tagged fields
        v1.extend_from_slice(&[3, 0, 4, 0, 0, 0, 9, 1, 8, 0, 0, 0, 0, 0, 0, 0, 99, 7, 2, 0xaa, 0xbb]);
        assert_eq!(decode(&v1).unwrap(), update());
        let at = v1.len() - 19;
        v1[at] = 3; // BrokerLeaderEpoch of 3 bytes
        assert!(err(&v1).contains("BrokerLeaderEpoch"), "{}", err(&v1));
    }

    #[test]
    fn nulls_negative_lengths_and_bad_states_are_errors() {
        let good = encode(&update());
        // The topic name's length is at offset 3.
        let mut bad = good.clone();
        bad[3] = 0;
        assert!(err(&bad).contains("TopicIdPartition.Name at offset 3: null"), "{}", err(&bad));
        let mut bad = good[..3].to_vec();
        bad.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        bad.extend_from_slice(&good[5..]);
        assert!(err(&bad).contains("negative length -2"), "{}", err(&bad));
        let mut bad = good.clone();
        let state = bad.len() - 2;
        bad[state] = 9;
        assert!(err(&bad).contains("RemoteLogSegmentState"), "{}", err(&bad));
    }
}
