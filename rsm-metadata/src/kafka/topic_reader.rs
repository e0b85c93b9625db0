//! A metadata topic read whole, for tools: its records ([`read_topic`]), or the segments they describe
//! ([`read_segments`]).

use super::KafkaMetadataConfig;
use super::client::{FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS, connect, kafka_error, within};
use crate::cache::MetadataStore;
use crate::events::MetadataEvent;
use crate::records::{self, MetadataRecord};
use rskafka::client::partition::{OffsetAt, UnknownTopicHandling};
use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::error::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};

/// One record of a metadata topic as [`read_topic`] found it.
#[derive(Debug)]
pub struct TopicRecord {
    /// The metadata partition.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
    /// The record ([`records::decode_record`]: an event, or a KIP-1266 tombstone), or why it does not
    /// decode.
    pub record: Result<MetadataRecord>,
}

impl TopicRecord {
    /// The record's event, if it has one (not a tombstone, and decoded).
    pub fn event(&self) -> Option<&MetadataEvent> {
        match &self.record {
            Ok(MetadataRecord::Event(e, _)) => Some(e),
            _ => None,
        }
    }

    /// Applies the record to `store` as a broker's cache would: an event with [`MetadataStore::apply`], a
    /// tombstone with [`MetadataStore::apply_tombstone`]; the error of a record that does not decode or
    /// that Kafka's rules refuse (nothing is changed then).
    pub fn apply_to(self, store: &mut MetadataStore) -> Result<()> {
        match self.record {
            Ok(MetadataRecord::Event(e, _)) => store.apply(&e),
            Ok(MetadataRecord::Tombstone(t)) => {
                store.apply_tombstone(&t);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// Every record of a metadata topic, all its partitions from their start to their current end, in
/// partition then offset order (for tools: `rsm metadata`, `rsm audit`). Reads only; registers nothing.
pub async fn read_topic(config: &KafkaMetadataConfig) -> Result<Vec<TopicRecord>> {
    let client = connect(config).await?;
    let topic = config.topic.as_str();
    let listed = within(config.request_timeout, || format!("listing topics for {topic}"), async {
        client.list_topics().await.map_err(|e| kafka_error(format!("listing topics for {topic}"), e))
    })
    .await?;
    let partitions = listed
        .into_iter()
        .find(|t| t.name == topic)
        .map(|t| t.partitions.into_iter().collect::<BTreeSet<i32>>())
        .ok_or_else(|| Error::not_found(format!("topic {topic} on {}", config.bootstrap_servers.join(","))))?;
    let mut out = Vec::new();
    for partition in partitions {
        let what = || format!("reading {topic}-{partition}");
        let pc = within(config.request_timeout, what, async {
            client
                .partition_client(topic, partition, UnknownTopicHandling::Error)
                .await
                .map_err(|e| kafka_error(what(), e))
        })
        .await?;
        let offset =
            |at: OffsetAt| {
                let pc = &pc;
                within(config.request_timeout, what, async move {
                    pc.get_offset(at).await.map_err(|e| kafka_error(what(), e))
                })
            };
        let (mut next, end) = (offset(OffsetAt::Earliest).await?, offset(OffsetAt::Latest).await?);
        while next < end {
            let fetched = within(config.consume_wait, what, async {
                pc.fetch_records(next, 1..FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS).await.map_err(|e| kafka_error(what(), e))
            })
            .await?;
            let before = next;
            // A fetch returns whole batches: skip what was read already.
            for r in fetched.0.into_iter().filter(|r| r.offset >= before) {
                if r.offset >= end {
                    break;
                }
                let record = records::decode_record(r.record.key.as_deref(), r.record.value.as_deref())
                    .map_err(|e| e.context(format!("{topic}-{partition} offset {}", r.offset)));
                out.push(TopicRecord { partition, offset: r.offset, record });
                next = r.offset + 1;
            }
            if next == before {
                // Nothing readable before the end (control records only): the partition is read.
                break;
            }
        }
    }
    Ok(out)
}

/// Every segment a metadata topic holds, in any state but delete finished (for tools: `rsm audit`): the
/// records of [`read_topic`] applied in order per metadata partition, as a broker's cache applies them (a
/// record that does not decode or that Kafka's rules refuse is skipped, with a warning).
pub async fn read_segments(config: &KafkaMetadataConfig) -> Result<Vec<RemoteLogSegmentMetadata>> {
    Ok(segments_of(read_topic(config).await?))
}

/// The segments `records` leave, each metadata partition's records applied to a cache of its own in order.
fn segments_of(records: Vec<TopicRecord>) -> Vec<RemoteLogSegmentMetadata> {
    let mut stores: BTreeMap<i32, MetadataStore> = BTreeMap::new();
    for r in records {
        let (partition, offset) = (r.partition, r.offset);
        // An event is applied, a KIP-1266 tombstone forgets the segment its key names.
        if let Err(e) = r.apply_to(stores.entry(partition).or_default()) {
            tracing::warn!(partition, offset, error = %e.full_message(), "skipped a metadata record");
        }
    }
    stores.values().flat_map(|s| s.partitions().flat_map(|(_, p)| p.segments())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::RemoteLogSegmentMetadataUpdate;
    use crate::records::RecordTags;
    use rsm_core::model::{RemoteLogSegmentId, TopicPartition};
    use rsm_core::{RemoteLogSegmentState, TopicIdPartition, Uuid};

    fn segment(n: i64, start: i64, end: i64) -> RemoteLogSegmentMetadata {
        let tp = TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new("orders", 0));
        let id = RemoteLogSegmentId::new(tp, Uuid::new(7, n));
        RemoteLogSegmentMetadata::new(id, start, end, 1_000, 1, 2_000, 100, [(0, start)].into_iter().collect()).unwrap()
    }

    fn record(partition: i32, offset: i64, event: MetadataEvent) -> TopicRecord {
        TopicRecord { partition, offset, record: Ok(MetadataRecord::Event(event, RecordTags::default())) }
    }

    fn update(m: &RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> MetadataEvent {
        MetadataEvent::SegmentUpdate(RemoteLogSegmentMetadataUpdate::of(m, state, 3_000, 1))
    }

    #[test]
    fn each_metadata_partition_is_applied_in_order_and_refused_records_are_skipped() {
        let (a, b) = (segment(1, 0, 99), segment(2, 100, 199));
        let records = vec![
            record(0, 0, MetadataEvent::Segment(a.clone())),
            record(0, 1, update(&a, RemoteLogSegmentState::CopySegmentFinished)),
            TopicRecord { partition: 0, offset: 2, record: Err(Error::corrupt("a value that does not decode")) },
            // Partition 1's cache has never seen `a`: Kafka's rules refuse the update, and `a` stays finished.
            record(1, 0, update(&a, RemoteLogSegmentState::DeleteSegmentStarted)),
            record(1, 1, MetadataEvent::Segment(b.clone())),
        ];
        let mut segments = segments_of(records);
        segments.sort_by_key(|m| m.start_offset);
        let got: Vec<_> = segments.iter().map(|m| (m.remote_log_segment_id.id, m.state)).collect();
        assert_eq!(
            got,
            [
                (a.remote_log_segment_id.id, RemoteLogSegmentState::CopySegmentFinished),
                (b.remote_log_segment_id.id, RemoteLogSegmentState::CopySegmentStarted)
            ]
        );
    }
}
