//! `rsm ls`: the segments in a store (topic id, offsets, sizes, copy time) and totals, as a table or JSON.

use super::listing::{leftovers, usable};
use crate::exit::CmdResult;
use crate::output::{Out, human, out, utc};
use rsm_core::Error;
use rsm_core::storage::ListedSegment;
use rsm_facade::Store;

/// Topic, topic id and partition of a manifest key (`{prefix}{topic}-{topicId}/{partition}/…`), without
/// reading it, so damaged segments are filtered like the others.
fn key_owner(key: &str, prefix: &str) -> Option<(String, String, i32)> {
    let k = rsm_core::storage::parse_segment_key(prefix, key)?;
    let tp = k.topic_id_partition;
    Some((tp.topic_partition.topic, tp.topic_id.to_string(), tp.topic_partition.partition))
}

fn json_segment(s: &ListedSegment, prefix: &str) -> serde_json::Value {
    let owner = key_owner(&s.manifest_key, prefix);
    let mut v = serde_json::json!({
        "manifest_key": s.manifest_key,
        "topic": owner.as_ref().map(|o| o.0.clone()),
        "topic_id": owner.as_ref().map(|o| o.1.clone()),
        "partition": owner.as_ref().map(|o| o.2),
    });
    let fields = v.as_object_mut().expect("an object");
    match &s.manifest {
        Ok(m) => {
            let md = &m.metadata;
            let status = if s.missing.is_empty() { "ok" } else { "incomplete" };
            fields.insert("status".into(), status.into());
            fields.insert("segment_id".into(), md.remote_log_segment_id.id.to_string().into());
            fields.insert("start_offset".into(), md.start_offset.into());
            fields.insert("end_offset".into(), md.end_offset.into());
            fields.insert("bytes".into(), m.log_length.into());
            fields.insert("chunks".into(), m.chunks.len().into());
            fields.insert("max_timestamp_ms".into(), md.max_timestamp_ms.into());
            fields.insert("copied_at_ms".into(), md.event_timestamp_ms.into());
            fields.insert("copied_at".into(), utc(md.event_timestamp_ms).into());
            fields.insert("broker_id".into(), md.broker_id.into());
            fields.insert("missing".into(), s.missing.clone().into());
        }
        Err(e) => {
            fields.insert("status".into(), "damaged".into());
            fields.insert("error".into(), e.full_message().into());
        }
    }
    v
}

/// Lists the segments of `store` (of `topic` and `partition` only, when given), a line each, with totals
/// and the leftovers of interrupted uploads, or (`json`) one JSON document; fails when some segment is
/// damaged or incomplete.
pub fn run(o: &mut Out, store: &Store, topic: Option<&str>, partition: Option<i32>, json: bool) -> CmdResult {
    let prefix = store.storage().config().key_prefix.clone();
    let listed: Vec<ListedSegment> = store
        .scan_segments(None)?
        .into_iter()
        .filter(|s| {
            let owner = key_owner(&s.manifest_key, &prefix);
            topic.is_none_or(|t| owner.as_ref().is_some_and(|o| o.0 == t))
                && partition.is_none_or(|p| owner.as_ref().is_some_and(|o| o.2 == p))
        })
        .collect();
    let (mut segments, mut bytes, mut problems) = (0usize, 0u64, 0usize);
    let mut partitions = std::collections::BTreeSet::new();
    for s in &listed {
        match &s.manifest {
            Ok(m) if s.missing.is_empty() => {
                segments += 1;
                bytes += m.log_length;
                partitions.insert(m.metadata.remote_log_segment_id.topic_id_partition.to_string());
            }
            _ => problems += 1,
        }
    }
    if json {
        let leftover = store.orphans(None, std::time::Duration::ZERO)?;
        let doc = serde_json::json!({
            "segments": listed.iter().map(|s| json_segment(s, &prefix)).collect::<Vec<_>>(),
            "totals": { "segments": segments, "bytes": bytes, "partitions": partitions.len(), "problems": problems },
            "leftovers": {
                "uncommitted": leftover.uncommitted.iter().map(|(k, b)| serde_json::json!({"key": k, "bytes": b})).collect::<Vec<_>>(),
                "temporary": leftover.temporary.iter().map(|(k, b)| serde_json::json!({"key": k, "bytes": b})).collect::<Vec<_>>(),
            },
        });
        out!(o, "{}", serde_json::to_string_pretty(&doc).map_err(|e| Error::storage("JSON output", e))?);
    } else {
        out!(o, "partition\ttopic id\tsegment id\toffsets\tsize\tchunks\tmax timestamp\tcopied at");
        let mut ignored = 0;
        for s in listed {
            let Some(m) = usable(o, s, &mut ignored)? else { continue };
            let md = &m.metadata;
            let tp = &md.remote_log_segment_id.topic_id_partition;
            out!(
                o,
                "{}\t{}\t{}\t{}..={}\t{}\t{}\t{}\t{}",
                tp.topic_partition,
                tp.topic_id,
                md.remote_log_segment_id.id,
                md.start_offset,
                md.end_offset,
                human(m.log_length),
                m.chunks.len(),
                md.max_timestamp_ms,
                utc(md.event_timestamp_ms)
            );
        }
        out!(
            o,
            "total: {segments} segments, {} ({bytes} bytes) in {} partitions{}",
            human(bytes),
            partitions.len(),
            if problems > 0 { format!("; {problems} damaged or incomplete") } else { String::new() }
        );
        leftovers(o, store)?;
    }
    if problems > 0 {
        return Err(Error::corrupt(format!("{problems} segments are damaged or incomplete (listed above)")).into());
    }
    Ok(())
}
