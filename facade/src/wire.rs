//! The compact byte encoding of Kafka's `RemoteLogSegmentMetadata` that a face passes across a language
//! boundary (JNI today; any host that would rather hand over bytes than a struct).
//!
//! Java writes it (`io.rsm.kafka.MetadataCodec`) and Rust reads it, so no Java object is walked from native
//! code. All integers are big-endian, as `java.nio.ByteBuffer` writes them, and are read and written with
//! the SDK's one cursor ([`rsm_core::format::codec`]); the pieces it writes as the segment manifest does
//! (the topic partition, the segment fields from the segment id to the size, the leader-epoch entries) are
//! [`rsm_core::format::segment_metadata`]'s. Version 1:
//!
//! ```text
//! u8   version = 1
//! i64  topic id, most significant bits      i64  topic id, least significant bits
//! u16  topic name length                    [u8] topic name, UTF-8
//! i32  partition
//! i64  segment id, most significant bits    i64  segment id, least significant bits
//! i64  start offset     i64  end offset     i64  max timestamp (ms)
//! i32  broker id        i64  event timestamp (ms)
//! i32  segment size in bytes
//! u8   state id (0..=3)
//! u8   flags: bit 0 = transaction index empty, bit 1 = custom metadata present
//! i32  leader-epoch count, then per entry: i32 epoch, i64 start offset (epochs strictly increasing)
//! if bit 1: i32 length, [u8] custom metadata
//! ```
//! Nothing may follow. Every length is checked against the bytes that remain before anything is allocated,
//! so a malformed array can never make the native side allocate more than the array's own size.

use rsm_core::format::codec::{Reader, Writer};
use rsm_core::format::segment_metadata::{
    read_leader_epoch, read_segment_fields, read_topic_partition, read_uuid, write_leader_epochs, write_segment_fields,
    write_topic_partition, write_uuid,
};
use rsm_core::{CustomMetadata, Error, RemoteLogSegmentMetadata, RemoteLogSegmentState, Result, TopicIdPartition};

/// The version this crate writes and reads.
pub const VERSION: u8 = 1;

const FLAG_TXN_IDX_EMPTY: u8 = 1;
const FLAG_CUSTOM: u8 = 2;

/// Decodes the metadata Java encoded.
pub fn decode_metadata(buf: &[u8]) -> Result<RemoteLogSegmentMetadata> {
    let mut r = Reader::input(buf, "segment metadata encoding");
    let version = r.u8()?;
    if version != VERSION {
        return Err(Error::invalid(format!(
            "segment metadata encoding version {version} is not supported (this library reads {VERSION}); \
             the plugin jar and its native library do not match"
        )));
    }
    let topic_id = read_uuid(&mut r)?;
    let topic_partition = read_topic_partition(&mut r)?;
    let mut md = read_segment_fields(&mut r, TopicIdPartition::new(topic_id, topic_partition))?;
    md.state = RemoteLogSegmentState::for_id(r.u8()? as i8)?;
    let flags = r.u8()?;
    if flags & !(FLAG_TXN_IDX_EMPTY | FLAG_CUSTOM) != 0 {
        return Err(Error::invalid(format!("segment metadata encoding: unknown flags {flags:#04x}")));
    }
    md.txn_idx_empty = flags & FLAG_TXN_IDX_EMPTY != 0;
    let epochs_len = r.count("leader epoch count", 12)?;
    let mut last_epoch = None;
    for _ in 0..epochs_len {
        let (epoch, offset) = read_leader_epoch(&mut r)?;
        if last_epoch.is_some_and(|l| epoch <= l) {
            return Err(Error::invalid(format!(
                "segment metadata encoding: leader epochs are not increasing at epoch {epoch}"
            )));
        }
        last_epoch = Some(epoch);
        md.segment_leader_epochs.insert(epoch, offset);
    }
    if flags & FLAG_CUSTOM != 0 {
        let n = r.count("custom metadata length", 1)?;
        md.custom_metadata = Some(CustomMetadata(r.bytes(n)?.to_vec()));
    }
    if r.remaining() != 0 {
        return Err(r.error(format_args!("{} unexpected bytes after the end", r.remaining())));
    }
    Ok(md)
}

/// Encodes metadata as Java does (used by tests on this side; Java has its own writer).
pub fn encode_metadata(md: &RemoteLogSegmentMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let mut w = Writer::new(&mut out);
    let tp = &md.remote_log_segment_id.topic_id_partition;
    w.u8(VERSION);
    write_uuid(&mut w, tp.topic_id);
    write_topic_partition(&mut w, &tp.topic_partition);
    write_segment_fields(&mut w, md);
    w.u8(md.state as u8);
    let mut flags = 0;
    if md.txn_idx_empty {
        flags |= FLAG_TXN_IDX_EMPTY;
    }
    if md.custom_metadata.is_some() {
        flags |= FLAG_CUSTOM;
    }
    w.u8(flags);
    w.i32(md.segment_leader_epochs.len() as i32);
    write_leader_epochs(&mut w, &md.segment_leader_epochs);
    if let Some(CustomMetadata(c)) = &md.custom_metadata {
        w.i32(c.len() as i32);
        w.bytes(c);
    }
    out
}

/// A one-line description of decoded metadata, the same text Java's `MetadataCodec.describe` builds from
/// Kafka's own object, so a test can compare the two across the boundary.
pub fn describe_metadata(md: &RemoteLogSegmentMetadata) -> String {
    let id = &md.remote_log_segment_id;
    let epochs: Vec<String> = md.segment_leader_epochs.iter().map(|(e, o)| format!("{e}={o}")).collect();
    let custom = match &md.custom_metadata {
        None => "none".to_string(),
        Some(CustomMetadata(c)) => c.iter().map(|b| format!("{b:02x}")).collect(),
    };
    format!(
        "topicId={} topic={} partition={} id={} start={} end={} maxTs={} broker={} eventTs={} size={} \
         state={} txnIdxEmpty={} epochs={{{}}} custom={}",
        id.topic_id_partition.topic_id,
        id.topic_id_partition.topic_partition.topic,
        id.topic_id_partition.topic_partition.partition,
        id.id,
        md.start_offset,
        md.end_offset,
        md.max_timestamp_ms,
        md.broker_id,
        md.event_timestamp_ms,
        md.segment_size_in_bytes,
        md.state as i8,
        md.txn_idx_empty,
        epochs.join(","),
        custom
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::{ErrorKind, RemoteLogSegmentId, TopicPartition, Uuid};
    use std::collections::BTreeMap;

    fn sample() -> RemoteLogSegmentMetadata {
        let tp = TopicIdPartition::new(Uuid::new(0x0102030405060708, -2), TopicPartition::new("orders", 7));
        let mut md = RemoteLogSegmentMetadata::new(
            RemoteLogSegmentId::new(tp, Uuid::new(-0x0f0e0d0c0b0a0908, 0x1122334455667788)),
            100,
            199,
            1_700_000_000_123,
            3,
            1_700_000_000_456,
            4096,
            BTreeMap::from([(0, 100), (2, 150)]),
        )
        .unwrap();
        md.state = RemoteLogSegmentState::CopySegmentFinished;
        md.txn_idx_empty = true;
        md.custom_metadata = Some(CustomMetadata(vec![0xca, 0xfe]));
        md
    }

    /// The same bytes `MetadataCodecTest.goldenVector` in java-bindings expects Java to write for the same
    /// metadata: the two sides agree on the format, not only each with itself.
    pub(crate) const GOLDEN: &str = "01\
        0102030405060708fffffffffffffffe\
        00066f7264657273\
        00000007\
        f0f1f2f3f4f5f6f81122334455667788\
        0000000000000064\
        00000000000000c7\
        0000018bcfe5687b\
        00000003\
        0000018bcfe569c8\
        00001000\
        01\
        03\
        00000002\
        000000000000000000000064\
        000000020000000000000096\
        00000002cafe";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn golden_vector_round_trips() {
        let md = sample();
        assert_eq!(encode_metadata(&md), hex(GOLDEN));
        assert_eq!(decode_metadata(&hex(GOLDEN)).unwrap(), md);
        assert_eq!(
            describe_metadata(&md),
            format!(
                "topicId={} topic=orders partition=7 id={} start=100 end=199 maxTs=1700000000123 broker=3 \
                 eventTs=1700000000456 size=4096 state=1 txnIdxEmpty=true epochs={{0=100,2=150}} custom=cafe",
                md.remote_log_segment_id.topic_id_partition.topic_id, md.remote_log_segment_id.id
            )
        );
    }

    #[test]
    fn without_custom_metadata_and_flags() {
        let mut md = sample();
        md.custom_metadata = None;
        md.txn_idx_empty = false;
        md.state = RemoteLogSegmentState::CopySegmentStarted;
        let enc = encode_metadata(&md);
        assert_eq!(decode_metadata(&enc).unwrap(), md);
    }

    #[test]
    fn every_truncation_and_corruption_is_an_invalid_argument() {
        let good = hex(GOLDEN);
        for n in 0..good.len() {
            let e = decode_metadata(&good[..n]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "truncated at {n}: {e}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert!(decode_metadata(&extra).unwrap_err().to_string().contains("1 unexpected bytes"));
        let mut v2 = good.clone();
        v2[0] = 2;
        assert!(decode_metadata(&v2).unwrap_err().to_string().contains("version 2"));
        // A huge epoch count must be refused before any allocation.
        let count_at = good.len() - 2 - 4 - 24 - 4;
        let mut huge = good.clone();
        huge[count_at..count_at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_metadata(&huge).unwrap_err().to_string().contains("does not fit"));
        let mut neg = good.clone();
        neg[count_at..count_at + 4].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(decode_metadata(&neg).unwrap_err().to_string().contains("does not fit"));
        let mut state = good.clone();
        state[count_at - 2] = 9;
        assert!(decode_metadata(&state).unwrap_err().to_string().contains("state id 9"));
        let mut flags = good;
        flags[count_at - 1] = 0x80;
        assert!(decode_metadata(&flags).unwrap_err().to_string().contains("unknown flags"));
    }
}
