//! `rsm read`: the records served from remote storage at an offset or from a timestamp, through the
//! engine's reader pool, as a table or JSON.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out, utc};
use rsm_core::{Error, Result, TopicIdPartition};
use rsm_engine::RemoteLogManager;
use std::path::Path;

/// Prints up to `max_records` records of the partition `dir` names, from `offset` or from the first at or
/// after `timestamp`, each read at most `max_bytes` from the store and taking at most `timeout_ms`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    o: &mut Out,
    dir: &Path,
    engine: &EngineArgs,
    offset: Option<i64>,
    timestamp: Option<i64>,
    max_records: usize,
    max_bytes: u32,
    timeout_ms: u64,
    json: bool,
) -> CmdResult {
    let e = engine.open_read_only()?;
    let tp = e.add(&[dir.to_path_buf()])?.remove(0);
    let timeout = std::time::Duration::from_millis(timeout_ms);
    let got = rsm_facade::runtime().block_on(read(&e.manager, &tp, offset, timestamp, max_records, max_bytes, timeout));
    e.close()?;
    print_records(o, &tp, &got?, json)
}

/// What `rsm read` found: records, and the batches it could not decode (compressed, legacy), by offset.
#[derive(Default)]
struct ReadOut {
    /// The records, in offset order.
    pub records: Vec<rsm_core::format::record::RecordView>,
    /// Batches shown as such: (base offset, why their records are not shown).
    pub undecoded: Vec<(i64, String)>,
}

/// The first offset of the copied segments at or after timestamp `ts`: the batch the segment's time index
/// names, read through the store.
async fn offset_of_timestamp(engine: &RemoteLogManager, tp: &TopicIdPartition, ts: i64) -> Result<i64> {
    use futures::TryStreamExt;
    use rsm_core::RemoteStorageManager;
    let mut copied: Vec<_> = engine
        .metadata()
        .list_remote_log_segments(tp)
        .await?
        .into_iter()
        .filter(|m| m.state == rsm_core::RemoteLogSegmentState::CopySegmentFinished)
        .collect();
    copied.sort_by_key(|m| m.start_offset);
    for md in copied.iter().filter(|m| m.max_timestamp_ms >= ts) {
        if let Some(pos) = engine.storage().position_of_timestamp(md, ts).await? {
            let head: Vec<bytes::Bytes> =
                engine.storage().fetch_log_segment(md, pos as i32, Some(pos as i32 + 7)).await?.try_collect().await?;
            let head = head.concat();
            let base = head.get(..8).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
            return base.ok_or_else(|| {
                Error::corrupt(format!("segment {} at position {pos}: short read", md.remote_log_segment_id.id))
            });
        }
    }
    Err(Error::not_found(format!("no remote record of {tp} has a timestamp at or after {ts}")))
}

/// Reads up to `max_records` records of `tp` from remote storage, from `offset` or from the first record at or
/// after `timestamp`, through the reader pool.
async fn read(
    engine: &RemoteLogManager,
    tp: &TopicIdPartition,
    offset: Option<i64>,
    timestamp: Option<i64>,
    max_records: usize,
    max_bytes: u32,
    timeout: std::time::Duration,
) -> Result<ReadOut> {
    use rsm_core::format::batch::BatchIter;
    use rsm_core::format::record::{is_control, records};
    let mut next = match (offset, timestamp) {
        (Some(o), _) => o,
        (None, Some(ts)) => offset_of_timestamp(engine, tp, ts).await?,
        (None, None) => return Err(Error::invalid("--offset or --timestamp is required")),
    };
    let mut out = ReadOut::default();
    let mut first = true;
    while out.records.len() < max_records {
        let deadline = tokio::time::Instant::now() + timeout;
        let r = match engine.read(tp, next, max_bytes, deadline).await {
            Ok(r) => r,
            // Past the remote log's end after the first read: the records end there.
            Err(e) if !first && e.kind() == rsm_core::ErrorKind::NotFound => break,
            Err(e) => return Err(e),
        };
        first = false;
        let mut it = BatchIter::new(&r.bytes, u64::from(r.start_position), false);
        let mut advanced = false;
        while let Some(batch) = it.next_complete()? {
            advanced = true;
            next = batch.last_offset() + 1;
            if is_control(&batch) {
                continue;
            }
            match records(&batch) {
                Ok(rs) => out.records.extend(rs.into_iter().filter(|x| {
                    x.offset >= offset.unwrap_or(i64::MIN) && x.timestamp >= timestamp.unwrap_or(i64::MIN)
                })),
                Err(e) if e.kind() == rsm_core::ErrorKind::InvalidArgument => {
                    out.undecoded.push((batch.base_offset(), e.message().to_string()))
                }
                Err(e) => return Err(e),
            }
            if out.records.len() >= max_records {
                break;
            }
        }
        if !advanced {
            return Err(Error::corrupt(format!("a read of {tp} at offset {next} returned no whole batch")));
        }
    }
    out.records.truncate(max_records);
    Ok(out)
}

/// Bytes as text for a table: UTF-8 with control characters escaped, cut at `max` characters.
fn shown(b: Option<&[u8]>, max: usize) -> String {
    let Some(b) = b else { return "null".to_string() };
    let text: String = String::from_utf8_lossy(b).chars().flat_map(char::escape_default).collect();
    if text.chars().count() > max { format!("{}…", text.chars().take(max).collect::<String>()) } else { text }
}

/// Bytes for JSON: a string when they are UTF-8, else `{"hex": "…"}`; null stays null.
fn json_bytes(b: Option<&[u8]>) -> serde_json::Value {
    match b {
        None => serde_json::Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => serde_json::Value::String(s.to_string()),
            Err(_) => serde_json::json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() }),
        },
    }
}

fn print_records(o: &mut Out, tp: &TopicIdPartition, got: &ReadOut, json: bool) -> CmdResult {
    if json {
        let records: Vec<_> = got
            .records
            .iter()
            .map(|r| {
                serde_json::json!({
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": json_bytes(r.key.as_deref()),
                    "value": json_bytes(r.value.as_deref()),
                    "headers": r.headers.iter().map(|(k, v)| serde_json::json!({"key": k, "value": json_bytes(v.as_deref())})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let undecoded: Vec<_> =
            got.undecoded.iter().map(|(off, why)| serde_json::json!({"base_offset": off, "why": why})).collect();
        let doc =
            serde_json::json!({ "partition": tp.to_string(), "records": records, "undecoded_batches": undecoded });
        out!(o, "{doc}");
        return Ok(());
    }
    out!(o, "{:>12}  {:<24}  {:<24}  {:<40}  headers", "offset", "timestamp", "key", "value");
    for r in &got.records {
        let headers: Vec<String> = r.headers.iter().map(|(k, v)| format!("{k}={}", shown(v.as_deref(), 20))).collect();
        out!(
            o,
            "{:>12}  {:<24}  {:<24}  {:<40}  {}",
            r.offset,
            utc(r.timestamp),
            shown(r.key.as_deref(), 24),
            shown(r.value.as_deref(), 40),
            headers.join(",")
        );
    }
    for (off, why) in &got.undecoded {
        out!(o, "{off:>12}  ({why})");
    }
    out!(o, "{} records of {tp}", got.records.len());
    Ok(())
}
