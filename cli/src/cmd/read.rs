//! `rsm read`: the records served from remote storage at an offset or from a timestamp, as a consumer at an
//! isolation level would get them (every codec, legacy formats; aborted transactions dropped at
//! `read_committed`), through the engine's reader pool: a table, or one JSON object a line. Records come
//! out strictly in offset order as they are read; `--max-records` bounds all output; `--follow` keeps
//! reading newly tiered segments.

use super::engine::EngineArgs;
use crate::exit::CmdResult;
use crate::output::{Out, out, utc};
use base64::Engine as _;
use clap::Args;
use rsm_core::format::records::isolation::IsolationLevel;
use rsm_core::format::records::{DecodeLimits, Record};
use rsm_core::{Error, ErrorKind, Result, TopicIdPartition};
use rsm_engine::{RecordsRequest, RemoteLogManager};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The arguments of `rsm read`.
#[derive(Args)]
pub struct ReadArgs {
    /// The partition directory (it names the partition; its segments may be gone locally).
    pub dir: PathBuf,
    /// The engine's store, settings and metadata.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// The first offset.
    #[arg(long, allow_hyphen_values = true, required_unless_present = "timestamp", conflicts_with = "timestamp")]
    pub offset: Option<i64>,
    /// The first record at or after this timestamp (ms since the epoch).
    #[arg(long, allow_hyphen_values = true)]
    pub timestamp: Option<i64>,
    /// read_uncommitted (every record, the consumer's default) or read_committed (records of aborted
    /// transactions dropped).
    #[arg(long, default_value = "read_uncommitted")]
    pub isolation: IsolationLevel,
    /// The most records to print, all reads together [default: 20, or no bound with --follow].
    #[arg(long)]
    pub max_records: Option<usize>,
    /// Batch bytes per read from the store (at least one whole batch is read).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_bytes: u32,
    /// The most bytes one batch may decompress to; a larger batch is an error naming it.
    #[arg(long, default_value_t = rsm_core::format::records::DEFAULT_MAX_BATCH_BYTES)]
    pub max_batch_bytes: usize,
    /// How long one read may take, retries included (ms).
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// One JSON object a line (offset, timestamp, timestamp_type, key, value, headers; bytes that are
    /// not UTF-8 in base64, with a `_base64` flag saying so) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Keep reading: after the end of the remote log, wait --follow-interval-ms and print what was
    /// tiered since, until stopped (or --max-records).
    #[arg(long)]
    pub follow: bool,
    /// How long --follow waits between looks (ms).
    #[arg(long, default_value_t = 1_000, requires = "follow")]
    pub follow_interval_ms: u64,
}

impl ReadArgs {
    /// What the read is asked, from the flags: 20 records at most unless following, the timeouts as
    /// durations.
    pub fn options(&self) -> ReadOptions {
        ReadOptions {
            offset: self.offset,
            timestamp: self.timestamp,
            isolation: self.isolation,
            max_records: self.max_records.or((!self.follow).then_some(20)),
            max_bytes: self.max_bytes,
            limits: DecodeLimits { max_batch_bytes: self.max_batch_bytes },
            timeout: Duration::from_millis(self.timeout_ms),
            json: self.json,
            follow: self.follow.then(|| Duration::from_millis(self.follow_interval_ms)),
        }
    }
}

/// What `rsm read` was asked, as the read uses it.
#[derive(Clone, Debug)]
pub struct ReadOptions {
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
    /// The most bytes one batch may inflate to (and its records take in memory).
    pub limits: DecodeLimits,
    /// How long one read may take, retries included.
    pub timeout: Duration,
    /// One JSON object a line instead of the table.
    pub json: bool,
    /// After the end of the remote log, wait this long and read what was tiered since, until stopped.
    pub follow: Option<Duration>,
}

/// Prints the records of the partition `dir` names as `args` asks.
pub fn run(o: &mut Out, dir: &Path, engine: &EngineArgs, args: &ReadOptions) -> CmdResult {
    let rt = rsm_facade::runtime();
    // Many lines: written a read at a time, not a line at a time.
    o.buffer_lines();
    let mut next: Option<i64> = args.offset;
    let mut left = args.max_records.unwrap_or(usize::MAX);
    let mut printed = 0usize;
    let mut table_header = !args.json;
    let tp = loop {
        // Opened anew on each round of --follow, so segments tiered by another process are seen.
        let e = engine.open_read_only()?;
        let tp = e.add(&[dir.to_path_buf()])?.remove(0);
        // The table's header once the store, metadata and partition are found: a mistyped one prints only
        // its error.
        if std::mem::take(&mut table_header) {
            out!(o, "{:>12}  {:<24}  {:<24}  {:<40}  headers", "offset", "timestamp", "key", "value");
        }
        let round: CmdResult<(usize, Option<i64>)> = rt.block_on(async {
            let start = match next {
                Some(n) => n,
                None => {
                    let ts = args.timestamp.unwrap_or(i64::MIN);
                    match offset_of_timestamp(&e.manager, &tp, ts, &args.limits).await {
                        Ok(n) => n,
                        // --follow from a timestamp no record has reached yet: wait for one.
                        Err(err) if args.follow.is_some() && err.kind() == ErrorKind::NotFound => return Ok((0, None)),
                        Err(err) => return Err(err.into()),
                    }
                }
            };
            let (n, at) = read_round(o, &e.manager, &tp, start, &mut left, args).await?;
            Ok((n, Some(at)))
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
    args: &ReadOptions,
) -> CmdResult<(usize, i64)> {
    let mut next = start;
    let mut printed = 0;
    let mut line = Vec::with_capacity(1024);
    while *left > 0 {
        let req = RecordsRequest {
            offset: next,
            isolation: args.isolation,
            // As many as `max_bytes` of batches hold: a call reads that much anyway, and what it decodes is
            // bounded by it (and by the decode limits per batch).
            max_records: *left,
            max_bytes: args.max_bytes,
            limits: args.limits,
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
            print_record(o, &mut line, r, args.json)?;
        }
        o.flush()?;
        printed += got.records.len();
        *left -= got.records.len();
        let stuck = got.next_offset == next && got.records.is_empty();
        next = got.next_offset;
        if got.at_end || stuck {
            break;
        }
    }
    Ok((printed, next))
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
        let fetch = |len: i64| async move {
            let parts: Vec<bytes::Bytes> = engine
                .storage()
                .fetch_log_segment(md, pos as i64, Some(pos as i64 + len - 1))
                .await?
                .try_collect()
                .await?;
            Ok::<_, Error>(parts.concat())
        };
        let short = || Error::corrupt(format!("segment {} at position {pos}: short read", md.remote_log_segment_id));
        let head = fetch(LOG_OVERHEAD as i64).await?;
        let size = head.get(8..12).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes).ok_or_else(short)?;
        let bytes = fetch(i64::from(size).saturating_add(LOG_OVERHEAD as i64)).await?;
        let batch = BatchIter::new(&bytes, pos, false).next_complete()?.ok_or_else(short)?;
        let decoded = rsm_core::format::records::decode_batch(&batch, limits)?;
        let first = decoded.records.iter().find(|r| r.timestamp >= ts).map(|r| r.offset);
        return Ok(first.unwrap_or(decoded.last_offset.saturating_add(1)));
    }
    Err(Error::not_found(format!("no remote record of {tp} has a timestamp at or after {ts}")))
}

/// Bytes as text for a table: UTF-8 (invalid bytes as U+FFFD) with control characters escaped, cut at `max`
/// characters.
fn shown(b: Option<&[u8]>, max: usize) -> String {
    let Some(b) = b else { return "null".to_string() };
    // Control characters escaped (a table stays one line a record); other text, non-ASCII too, as it is.
    let text: String = String::from_utf8_lossy(b)
        .chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect();
    if text.chars().count() > max { format!("{}…", text.chars().take(max).collect::<String>()) } else { text }
}

/// Bytes as a JSON value into `buf`: null, the text when they are UTF-8, else standard base64. Returns
/// whether they went as base64.
fn push_json_bytes(buf: &mut Vec<u8>, b: Option<&[u8]>) -> bool {
    match b.map(|b| (b, std::str::from_utf8(b))) {
        None => {
            buf.extend_from_slice(b"null");
            false
        }
        Some((_, Ok(text))) => {
            push_json_str(buf, text);
            false
        }
        Some((b, Err(_))) => {
            buf.push(b'"');
            let mut encoded = String::new();
            base64::engine::general_purpose::STANDARD.encode_string(b, &mut encoded);
            buf.extend_from_slice(encoded.as_bytes());
            buf.push(b'"');
            true
        }
    }
}

/// A JSON string, escaped as JSON requires.
fn push_json_str(buf: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, s);
}

/// One record as one line of JSON into `buf` (cleared first): offset, timestamp and its type, key, value
/// and headers, each bytes field with a `_base64` flag saying whether it is base64. Written field by
/// field: `rsm read --json` prints millions of these.
pub fn record_json(buf: &mut Vec<u8>, r: &Record) {
    use std::io::Write;
    buf.clear();
    // Writing into a Vec cannot fail.
    let _ = write!(buf, r#"{{"offset":{},"timestamp":{},"timestamp_type":"#, r.offset, r.timestamp);
    push_json_str(buf, r.timestamp_type.name());
    buf.extend_from_slice(br#","key":"#);
    let key_base64 = push_json_bytes(buf, r.key.as_deref());
    let _ = write!(buf, r#","key_base64":{key_base64},"value":"#);
    let value_base64 = push_json_bytes(buf, r.value.as_deref());
    let _ = write!(buf, r#","value_base64":{value_base64},"headers":["#);
    for (i, (k, v)) in r.headers.iter().enumerate() {
        buf.extend_from_slice(if i == 0 { br#"{"key":"# } else { br#",{"key":"# });
        push_json_str(buf, k);
        buf.extend_from_slice(br#","value":"#);
        let base64 = push_json_bytes(buf, v.as_deref());
        let _ = write!(buf, r#","value_base64":{base64}}}"#);
    }
    buf.extend_from_slice(b"]}");
}

fn print_record(o: &mut Out, buf: &mut Vec<u8>, r: &Record, json: bool) -> CmdResult {
    if json {
        record_json(buf, r);
        return o.bytes_line(buf);
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
