//! `rsm metadata`: every record of a cluster's remote log metadata topic, one line each.

use crate::exit::CmdResult;
use crate::output::{Out, out};
use clap::Args;
use rsm_core::Error;
use rsm_metadata::MetadataEvent;
use rsm_metadata::events::segment_state_name;
use rsm_metadata::kafka::{KafkaMetadataConfig, TopicRecord, read_topic};
use rsm_metadata::records::MetadataRecord;

/// The arguments of `rsm metadata`.
#[derive(Args)]
pub struct MetadataArgs {
    /// A Kafka broker (HOST:PORT).
    #[arg(long)]
    pub bootstrap_server: String,
    /// The metadata topic.
    #[arg(long, default_value = "__remote_log_metadata")]
    pub metadata_topic: String,
}

/// How a tool reads the metadata topic `topic` of the cluster `bootstrap` (`rsm metadata`, `rsm audit`): read
/// only, so the snapshot directory it never writes is the system's temporary one.
pub fn topic_reader_config(bootstrap: &str, topic: &str) -> KafkaMetadataConfig {
    KafkaMetadataConfig::new(bootstrap, std::env::temp_dir()).with_topic(topic)
}

/// Prints the records of `--metadata-topic`; fails when some do not decode.
pub fn run(o: &mut Out, args: &MetadataArgs) -> CmdResult {
    let metadata_topic = &args.metadata_topic;
    let records =
        rsm_facade::runtime().block_on(read_topic(&topic_reader_config(&args.bootstrap_server, metadata_topic)))?;
    for r in &records {
        out!(o, "{}", describe(r));
    }
    match records.iter().filter(|r| r.record.is_err()).count() {
        0 => Ok(()),
        n => Err(Error::corrupt(format!("{n} records of {metadata_topic} do not decode (listed above)")).into()),
    }
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
                "{at} segment {} {} state={} start={} end={} maxTs={} broker={} eventTs={} size={} \
                 epochs={{{}}} custom={}",
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
