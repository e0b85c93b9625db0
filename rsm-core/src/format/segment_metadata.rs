//! The fields of Kafka's `RemoteLogSegmentMetadata` as the SDK's own binary encodings write them: the
//! segment manifest ([`crate::format::manifest`]) and the bytes a face passes across a language boundary
//! (the facade's `wire` module, which Java's `MetadataCodec` writes). Both are big-endian and write most
//! fields alike, but not in the same order: the manifest starts with the topic partition and ends with the
//! leader epochs, custom metadata, state and transaction-index flag; the wire encoding starts with the topic
//! id and gives the state and a flags byte before the epochs. So this module owns the pieces the two write
//! byte for byte alike, and each encoding keeps its framing (magic, versions, CRC) and its order around
//! them:
//!
//! ```text
//! uuid             16 bytes: most significant 64 bits, least significant 64 bits (two i64)
//! topic partition  u16 name length, [u8] name (UTF-8), i32 partition
//! segment fields   uuid segment id, i64 start offset, i64 end offset, i64 max timestamp (ms),
//!                  i32 broker id, i64 event timestamp (ms), i32 segment size in bytes
//! leader epoch     i32 epoch, i64 start offset (each entry; the count is each encoding's own)
//! ```
//!
//! Kafka's record of the same metadata on `__remote_log_metadata` is another encoding (Kafka's, with its
//! own field order and varints), kept with the records in `rsm-metadata`.

use crate::error::Result;
use crate::format::codec::{Reader, Writer};
use crate::model::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition, TopicPartition, Uuid,
};
use std::collections::BTreeMap;

/// Writes a [`Uuid`]: its 16 bytes, big-endian.
pub fn write_uuid(w: &mut Writer<'_>, id: Uuid) {
    w.bytes(&id.to_bytes());
}

/// Reads what [`write_uuid`] writes.
pub fn read_uuid(r: &mut Reader<'_>) -> Result<Uuid> {
    Ok(Uuid::from_bytes(r.array()?))
}

/// Writes a topic partition: the name's length (u16) and UTF-8 bytes, then the partition (i32). (A Kafka
/// topic name is at most 249 bytes.)
pub fn write_topic_partition(w: &mut Writer<'_>, tp: &TopicPartition) {
    let name = tp.topic.as_bytes();
    w.u16(name.len() as u16);
    w.bytes(name);
    w.i32(tp.partition);
}

/// Reads what [`write_topic_partition`] writes; a name that is not UTF-8 is an error of the reader's kind.
pub fn read_topic_partition(r: &mut Reader<'_>) -> Result<TopicPartition> {
    let len = r.u16()? as usize;
    let name = r.bytes(len)?;
    let topic = std::str::from_utf8(name).map_err(|_| r.error("the topic name is not UTF-8"))?;
    Ok(TopicPartition::new(topic, r.i32()?))
}

/// Writes the segment fields both encodings write in the same order after the topic partition: the
/// segment id, start and end offsets, max timestamp, broker id, event timestamp and size.
pub fn write_segment_fields(w: &mut Writer<'_>, m: &RemoteLogSegmentMetadata) {
    write_uuid(w, m.remote_log_segment_id.id);
    w.i64(m.start_offset);
    w.i64(m.end_offset);
    w.i64(m.max_timestamp_ms);
    w.i32(m.broker_id);
    w.i64(m.event_timestamp_ms);
    w.i32(m.segment_size_in_bytes);
}

/// Reads what [`write_segment_fields`] writes, as the metadata of a segment of `tp`: the fields after them
/// (leader epochs, custom metadata, state, transaction-index flag) are left empty (none, the default state,
/// false) for the encoding to read in its own order. Nothing is validated.
pub fn read_segment_fields(r: &mut Reader<'_>, tp: TopicIdPartition) -> Result<RemoteLogSegmentMetadata> {
    let id = read_uuid(r)?;
    Ok(RemoteLogSegmentMetadata {
        remote_log_segment_id: RemoteLogSegmentId::new(tp, id),
        start_offset: r.i64()?,
        end_offset: r.i64()?,
        max_timestamp_ms: r.i64()?,
        broker_id: r.i32()?,
        event_timestamp_ms: r.i64()?,
        segment_size_in_bytes: r.i32()?,
        segment_leader_epochs: BTreeMap::new(),
        custom_metadata: None,
        state: RemoteLogSegmentState::default(),
        txn_idx_empty: false,
    })
}

/// Writes the leader-epoch entries, in epoch order, without their count (each encoding writes its own).
pub fn write_leader_epochs(w: &mut Writer<'_>, epochs: &BTreeMap<i32, i64>) {
    for (&epoch, &offset) in epochs {
        w.i32(epoch);
        w.i64(offset);
    }
}

/// Reads one entry [`write_leader_epochs`] writes: the epoch and its start offset.
pub fn read_leader_epoch(r: &mut Reader<'_>) -> Result<(i32, i64)> {
    Ok((r.i32()?, r.i64()?))
}
