//! `rsm ls`: the segments in a store (topic id, offsets, sizes, copy time) and totals, as a table or JSON.

use super::listing::{
    NoManifest, Problems, leftover_orphans, leftovers, report_without_manifest, usable, without_manifest,
};
use crate::exit::CmdResult;
use crate::output::{Out, human, out, utc};
use crate::settings::StoreArgs;
use clap::Args;
use rsm_core::Error;
use rsm_core::format::aiven::AivenManifest;
use rsm_core::storage::aiven::ListedAivenSegment;
use rsm_core::storage::{ListedSegment, SegmentKey};
use rsm_facade::Store;

/// The arguments of `rsm ls`.
#[derive(Args)]
pub struct LsArgs {
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only this topic's segments.
    #[arg(long)]
    pub topic: Option<String>,
    /// Only this partition's segments.
    #[arg(long, allow_hyphen_values = true)]
    pub partition: Option<i32>,
    /// One JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Topic, topic id and partition a segment key names (`{prefix}{topic}-{topicId}/{partition}/…`), without
/// reading it, so damaged segments are filtered like the others.
fn owner(k: &SegmentKey) -> (String, String, i32) {
    let tp = &k.topic_id_partition;
    (tp.topic_partition.topic.clone(), tp.topic_id.to_string(), tp.topic_partition.partition)
}

/// [`owner`] of a listed segment's manifest key, read under the prefix it was written under.
fn key_owner(s: &ListedSegment, prefix: &str) -> Option<(String, String, i32)> {
    let prefix = s.stored_under.as_deref().unwrap_or(prefix);
    rsm_core::storage::parse_segment_key(prefix, &s.manifest_key).map(|k| owner(&k))
}

fn owner_fields(owner: Option<(String, String, i32)>, key: &str) -> serde_json::Value {
    serde_json::json!({
        "manifest_key": key,
        "topic": owner.as_ref().map(|o| o.0.clone()),
        "topic_id": owner.as_ref().map(|o| o.1.clone()),
        "partition": owner.as_ref().map(|o| o.2),
    })
}

fn json_segment(s: &ListedSegment, prefix: &str) -> serde_json::Value {
    let mut v = owner_fields(key_owner(s, prefix), &s.manifest_key);
    let fields = v.as_object_mut().expect("an object");
    if let Some(p) = &s.stored_under {
        fields.insert("status".into(), "other_prefix".into());
        fields.insert("key_prefix".into(), p.clone().into());
        if let Some(k) = rsm_core::storage::parse_segment_key(p, &s.manifest_key) {
            fields.insert("segment_id".into(), k.segment_id.to_string().into());
            fields.insert("start_offset".into(), k.start_offset.into());
        }
        return v;
    }
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

/// How an Aiven segment is stored, for the chunks column and JSON: `Aiven's` and its transforms.
fn aiven_form(m: &AivenManifest) -> String {
    let mut form = "Aiven's".to_string();
    if m.compression {
        form.push_str(", compressed");
    }
    if m.encryption.is_some() {
        form.push_str(", encrypted");
    }
    form
}

fn json_aiven(s: &ListedAivenSegment) -> serde_json::Value {
    let owner = s.segment.as_ref().ok().map(|(_, md)| {
        let tp = &md.remote_log_segment_id.topic_id_partition;
        (tp.topic_partition.topic.clone(), tp.topic_id.to_string(), tp.topic_partition.partition)
    });
    let mut v = owner_fields(owner, &s.manifest_key);
    let fields = v.as_object_mut().expect("an object");
    fields.insert("format".into(), "aiven".into());
    match &s.segment {
        Ok((m, md)) => {
            fields.insert("status".into(), "ok".into());
            fields.insert("segment_id".into(), md.remote_log_segment_id.id.to_string().into());
            fields.insert("start_offset".into(), md.start_offset.into());
            fields.insert("end_offset".into(), md.end_offset.into());
            fields.insert("bytes".into(), m.chunks.original_file_size.into());
            fields.insert("chunks".into(), m.chunks.len().into());
            fields.insert("stored_as".into(), aiven_form(m).into());
            fields.insert("max_timestamp_ms".into(), md.max_timestamp_ms.into());
            fields.insert("copied_at_ms".into(), md.event_timestamp_ms.into());
            fields.insert("copied_at".into(), utc(md.event_timestamp_ms).into());
            fields.insert("broker_id".into(), md.broker_id.into());
        }
        Err(e) => {
            fields.insert("status".into(), "damaged".into());
            fields.insert("error".into(), e.full_message().into());
        }
    }
    v
}

/// A segment without a manifest as JSON: status `no_manifest` past the safety age (among the segments, a
/// problem); younger, one of the leftovers (an upload may still be writing it), with status
/// `no_manifest_yet`.
fn json_without_manifest(s: &NoManifest) -> serde_json::Value {
    let mut v = owner_fields(s.key.as_ref().map(owner), &s.manifest_key);
    let fields = v.as_object_mut().expect("an object");
    fields.insert("status".into(), if s.old() { "no_manifest" } else { "no_manifest_yet" }.into());
    if let Some(k) = &s.key {
        fields.insert("segment_id".into(), k.segment_id.to_string().into());
        fields.insert("start_offset".into(), k.start_offset.into());
    }
    fields.insert("bytes".into(), s.bytes.into());
    fields.insert("objects".into(), s.objects.clone().into());
    fields.insert("age_s".into(), s.age.map(|a| a.as_secs()).into());
    v
}

/// Lists the segments of `store` (of `topic` and `partition` only, when given), a line each, with totals
/// and the leftovers of interrupted uploads, or (`json`) one JSON document. Fails when some segment is
/// damaged or incomplete, or its `.log` and `.indexes` have had no manifest for longer than the safety age
/// (a segment younger than that may be an upload still running: reported, not a failure), and (a setting
/// this run lacks) when segments were written under another key prefix than the store's `key.prefix`.
pub fn run(o: &mut Out, store: &Store, topic: Option<&str>, partition: Option<i32>, json: bool) -> CmdResult {
    let prefix = store.storage().config().key_prefix.clone();
    let wanted = |owner: Option<(String, String, i32)>| {
        topic.is_none_or(|t| owner.as_ref().is_some_and(|o| o.0 == t))
            && partition.is_none_or(|p| owner.as_ref().is_some_and(|o| o.2 == p))
    };
    let listed: Vec<ListedSegment> =
        store.scan_segments(None)?.into_iter().filter(|s| wanted(key_owner(s, &prefix))).collect();
    let aiven: Vec<ListedAivenSegment> = store
        .scan_aiven_segments(None)?
        .into_iter()
        .filter(|s| match &s.segment {
            Ok((_, md)) => {
                let tp = &md.remote_log_segment_id.topic_id_partition;
                wanted(Some((tp.topic_partition.topic.clone(), String::new(), tp.topic_partition.partition)))
            }
            Err(_) => topic.is_none() && partition.is_none(),
        })
        .collect();
    // Every one is kept out of the leftovers; those of the partitions asked for are listed.
    let all_without = without_manifest(store)?;
    let without: Vec<&NoManifest> = all_without.iter().filter(|s| wanted(s.key.as_ref().map(owner))).collect();
    let (mut segments, mut bytes) = (0usize, 0u64);
    let mut partitions = std::collections::BTreeSet::new();
    for s in &listed {
        if let Ok(m) = &s.manifest
            && s.missing.is_empty()
            && s.stored_under.is_none()
        {
            segments += 1;
            bytes += m.log_length;
            partitions.insert(m.metadata.remote_log_segment_id.topic_id_partition.to_string());
        }
    }
    for (m, md) in aiven.iter().filter_map(|s| s.segment.as_ref().ok()) {
        segments += 1;
        bytes += m.chunks.original_file_size as u64;
        partitions.insert(md.remote_log_segment_id.topic_id_partition.to_string());
    }
    let mut problems = Problems::default();
    problems.damaged += aiven.iter().filter(|s| s.segment.is_err()).count();
    if json {
        for s in &listed {
            match &s.stored_under {
                Some(p) => *problems.elsewhere.entry(p.clone()).or_default() += 1,
                None if s.manifest.is_err() || !s.missing.is_empty() => problems.damaged += 1,
                None => {}
            }
        }
        problems.without_manifest += without.iter().filter(|s| s.old()).count();
        let leftover = leftover_orphans(store, &all_without)?;
        let doc = serde_json::json!({
            "segments": listed.iter().map(|s| json_segment(s, &prefix))
                .chain(aiven.iter().map(json_aiven))
                .chain(without.iter().filter(|s| s.old()).map(|s| json_without_manifest(s))).collect::<Vec<_>>(),
            "totals": {
                "segments": segments,
                "bytes": bytes,
                "partitions": partitions.len(),
                "problems": problems.failing(),
                "other_prefix": problems.elsewhere(),
            },
            "leftovers": {
                "uncommitted": leftover.uncommitted.iter().map(|(k, b)| serde_json::json!({"key": k, "bytes": b})).collect::<Vec<_>>(),
                "temporary": leftover.temporary.iter().map(|(k, b)| serde_json::json!({"key": k, "bytes": b})).collect::<Vec<_>>(),
                "no_manifest_yet": without.iter().filter(|s| !s.old()).map(|s| json_without_manifest(s)).collect::<Vec<_>>(),
            },
        });
        out!(o, "{}", serde_json::to_string_pretty(&doc).map_err(|e| Error::storage("JSON output", e))?);
    } else {
        out!(o, "partition\ttopic id\tsegment id\toffsets\tsize\tchunks\tmax timestamp\tcopied at");
        for s in listed {
            let Some(m) = usable(o, store, s, &mut problems)? else { continue };
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
        for s in &aiven {
            match &s.segment {
                Ok((m, md)) => {
                    let tp = &md.remote_log_segment_id.topic_id_partition;
                    out!(
                        o,
                        "{}\t{}\t{}\t{}..={}\t{}\t{} ({})\t{}\t{}",
                        tp.topic_partition,
                        tp.topic_id,
                        md.remote_log_segment_id.id,
                        md.start_offset,
                        md.end_offset,
                        human(m.chunks.original_file_size as u64),
                        m.chunks.len(),
                        aiven_form(m),
                        md.max_timestamp_ms,
                        utc(md.event_timestamp_ms)
                    );
                }
                Err(e) => out!(o, "DAMAGED\t{}\t{}", s.manifest_key, e.full_message()),
            }
        }
        report_without_manifest(o, without.iter().copied(), &mut problems)?;
        let mut notes = String::new();
        if problems.damaged > 0 {
            notes.push_str(&format!("; {} damaged or incomplete", problems.damaged));
        }
        if problems.without_manifest > 0 {
            notes.push_str(&format!("; {} without a manifest", problems.without_manifest));
        }
        if problems.elsewhere() > 0 {
            notes.push_str(&format!("; {} under another key prefix", problems.elsewhere()));
        }
        out!(
            o,
            "total: {segments} segments, {} ({bytes} bytes) in {} partitions{notes}",
            human(bytes),
            partitions.len()
        );
        leftovers(o, store, &all_without)?;
    }
    if problems.failing() > 0 {
        return Err(Error::corrupt(format!(
            "{} segments are damaged, incomplete or without a manifest (listed above)",
            problems.failing()
        ))
        .into());
    }
    if let Some(e) = problems.elsewhere_error(store) {
        return Err(e.into());
    }
    Ok(())
}
