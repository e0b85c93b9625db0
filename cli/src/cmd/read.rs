//! `rsm read`: the records served from remote storage at an offset or from a timestamp, as a consumer at an
//! isolation level would get them (every codec, legacy formats; aborted transactions dropped at
//! `read_committed`), through the engine's reader pool: a table, or one JSON object a line. Records come
//! out strictly in offset order as they are read; `--max-records` bounds all output; `--follow` keeps
//! reading newly tiered segments.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out, utc};
use base64::Engine as _;
use rsm_core::format::records::isolation::IsolationLevel;
use rsm_core::format::records::{DecodeLimits, Record};
use rsm_core::{Error, ErrorKind, Result, TopicIdPartition};
use rsm_engine::{RecordsRequest, RemoteLogManager};
use std::path::Path;
use std::time::Duration;

/// Records asked of the engine per call: enough to amortise a call, few enough to print as they come.
const RECORDS_PER_CALL: usize = 500;

/// What `rsm read` was asked.
#[derive(Clone, Debug)]
pub struct ReadArgs {
    /// The first offset, or
    pub offset: Option<i64>,
    /// the first record at or after this timestamp.
    pub timestamp: Option<i64>,
    /// The consumer's isolation level.
    pub isolation: IsolationLevel,
    /// The most records printed, all reads together (`None`: no bound).
    pub max_records: Option<usize>,
    /// Batch bytes per read.
    pub max_bytes: u32,
    /// The most bytes one batch may inflate to.
    pub max_batch_bytes: usize,
    /// How long one read may take, retries included.
    pub timeout: Duration,
    /// One JSON object a line instead of the table.
    pub json: bool,
    /// After the end of the remote log, wait this long and read what was tiered since, until stopped.
    pub follow: Option<Duration>,
}

/// Prints the records of the partition `dir` names as `args` asks.
pub fn run(o: &mut Out, dir: &Path, engine: &EngineArgs, args: &ReadArgs) -> CmdResult {
    let rt = rsm_facade::runtime();
    let mut next: Option<i64> = args.offset;
    let mut left = args.max_records.unwrap_or(usize::MAX);
    let mut printed = 0usize;
    if !args.json {
        out!(o, "{:>12}  {:<24}  {:<24}  {:<40}  headers", "offset", "timestamp", "key", "value");
    }
    let tp = loop {
        // Opened anew on each round of --follow, so segments tiered by another process are seen.
        let e = engine.open_read_only()?;
        let tp = e.add(&[dir.to_path_buf()])?.remove(0);
        let round: CmdResult<(usize, Option<i64>)> = rt.block_on(async {
            let start = match next {
                Some(n) => n,
                None => {
                    let limits = DecodeLimits { max_batch_bytes: args.max_batch_bytes };
                    let ts = args.timestamp.unwrap_or(i64::MIN);
                    match offset_of_timestamp(&e.manager, &tp, ts, &limits).await {
                        Ok(n) => n,
                        // --follow from a timestamp no record has reached yet: wait for one.
                        Err(err) if args.follow.is_some() && err.kind() == ErrorKind::NotFound => return Ok((0, None)),
                        Err(err) => return Err(err.into()),
                    }
                }
            };
            read_round(o, &e.manager, &tp, start, &mut left, args).await
        });
        e.close()?;
        let (n, at) = round?;
        printed += n;
        next = at;
        match args.follow {
            Some(wait) if left > 0 => std::thread::sleep(wait),
            _ => break tp,
        }
    };
    if !args.json {
        let next = next.map_or_else(|| "-".to_string(), |n| n.to_string());
        out!(o, "{printed} records of {tp} ({}; next offset {next})", args.isolation);
    }
    Ok(())
}

/// Reads from `start` until the remote log's end or `left` records, printing each as it comes. Returns the
/// records printed and the offset to continue from.
async fn read_round(
    o: &mut Out,
    engine: &RemoteLogManager,
    tp: &TopicIdPartition,
    start: i64,
    left: &mut usize,
    args: &ReadArgs,
) -> CmdResult<(usize, Option<i64>)> {
    let mut next = start;
    let mut printed = 0;
    while *left > 0 {
        let req = RecordsRequest {
            offset: next,
            isolation: args.isolation,
            max_records: (*left).min(RECORDS_PER_CALL),
            max_bytes: args.max_bytes,
            limits: DecodeLimits { max_batch_bytes: args.max_batch_bytes },
            last_stable_offset: None,
            timeout: args.timeout,
        };
        let got = match engine.read_records(tp, &req).await {
            Ok(g) => g,
            // At the end of what is tiered after records were printed, or following: nothing more for now.
            Err(e) if e.kind() == ErrorKind::NotFound && (printed > 0 || args.follow.is_some()) => break,
            Err(e) => return Err(e.into()),
        };
        for r in &got.records {
            print_record(o, r, args.json)?;
        }
        printed += got.records.len();
        *left -= got.records.len();
        let stuck = got.next_offset == next && got.records.is_empty();
        next = got.next_offset;
        if got.at_end || stuck {
            break;
        }
    }
    Ok((printed, Some(next)))
}

/// The offset of the first record at or after timestamp `ts` in the copied segments (as Kafka's
/// `offsetsForTimes` answers): the batch the segments' time indexes name, read through the store and
/// decoded.
async fn offset_of_timestamp(
    engine: &RemoteLogManager,
    tp: &TopicIdPartition,
    ts: i64,
    limits: &DecodeLimits,
) -> Result<i64> {
    use futures::TryStreamExt;
    use rsm_core::RemoteStorageManager;
    use rsm_core::format::batch::{BatchIter, LOG_OVERHEAD};
    let mut copied: Vec<_> = engine
        .metadata()
        .list_remote_log_segments(tp)
        .await?
        .into_iter()
        .filter(|m| m.state == rsm_core::RemoteLogSegmentState::CopySegmentFinished)
        .collect();
    copied.sort_by_key(|m| m.start_offset);
    for md in copied.iter().filter(|m| m.max_timestamp_ms >= ts) {
        let Some(pos) = engine.storage().position_of_timestamp(md, ts).await? else { continue };
        let fetch = |len: i32| async move {
            let parts: Vec<bytes::Bytes> = engine
                .storage()
                .fetch_log_segment(md, pos as i32, Some(pos as i32 + len - 1))
                .await?
                .try_collect()
                .await?;
            Ok::<_, Error>(parts.concat())
        };
        let short = || Error::corrupt(format!("segment {} at position {pos}: short read", md.remote_log_segment_id));
        let head = fetch(LOG_OVERHEAD as i32).await?;
        let size = head.get(8..12).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes).ok_or_else(short)?;
        let bytes = fetch(size.saturating_add(LOG_OVERHEAD as i32)).await?;
        let batch = BatchIter::new(&bytes, u64::from(pos), false).next_complete()?.ok_or_else(short)?;
        let decoded = rsm_core::format::records::decode_batch(&batch, limits)?;
        let first = decoded.records.iter().find(|r| r.timestamp >= ts).map(|r| r.offset);
        return Ok(first.unwrap_or(decoded.last_offset.saturating_add(1)));
    }
    Err(Error::not_found(format!("no remote record of {tp} has a timestamp at or after {ts}")))
}

/// Bytes as text for a table: UTF-8 with control characters escaped, cut at `max` characters.
fn shown(b: Option<&[u8]>, max: usize) -> String {
    let Some(b) = b else { return "null".to_string() };
    let text: String = String::from_utf8_lossy(b).chars().flat_map(char::escape_default).collect();
    if text.chars().count() > max { format!("{}…", text.chars().take(max).collect::<String>()) } else { text }
}

/// Bytes for JSON and whether they are base64: the text when they are UTF-8, else standard base64; null
/// stays null (not base64).
fn json_bytes(b: Option<&[u8]>) -> (serde_json::Value, bool) {
    match b {
        None => (serde_json::Value::Null, false),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => (serde_json::Value::String(s.to_string()), false),
            Err(_) => (serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(b)), true),
        },
    }
}

/// One record as a JSON object: offset, timestamp and its type, key, value and headers, each bytes field
/// with a `_base64` flag.
pub fn record_json(r: &Record) -> serde_json::Value {
    let (key, key_base64) = json_bytes(r.key.as_deref());
    let (value, value_base64) = json_bytes(r.value.as_deref());
    let headers: Vec<_> = r
        .headers
        .iter()
        .map(|(k, v)| {
            let (value, value_base64) = json_bytes(v.as_deref());
            serde_json::json!({"key": k, "value": value, "value_base64": value_base64})
        })
        .collect();
    serde_json::json!({
        "offset": r.offset,
        "timestamp": r.timestamp,
        "timestamp_type": r.timestamp_type.name(),
        "key": key,
        "key_base64": key_base64,
        "value": value,
        "value_base64": value_base64,
        "headers": headers,
    })
}

fn print_record(o: &mut Out, r: &Record, json: bool) -> CmdResult {
    if json {
        out!(o, "{}", record_json(r));
        return Ok(());
    }
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
    Ok(())
}
