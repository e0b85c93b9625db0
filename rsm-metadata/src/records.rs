//! Kafka's record format on `__remote_log_metadata`: the value of every record is Kafka's
//! `RemoteLogMetadataSerde` output (frame version, api key and version as unsigned varints, then the
//! message in Kafka's flexible-version encoding). Written by a helper: see `encode` and `decode`.

use crate::events::MetadataEvent;
use rsm_core::error::Result;

/// Encodes an event as the value of a record on the metadata topic, as Kafka's serde writes it.
pub fn encode(event: &MetadataEvent) -> Vec<u8> {
    let _ = event;
    todo!("records::encode")
}

/// Decodes a record value of the metadata topic.
pub fn decode(value: &[u8]) -> Result<MetadataEvent> {
    let _ = value;
    todo!("records::decode")
}
