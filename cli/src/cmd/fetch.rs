//! `rsm fetch`: a segment's bytes, or one of its indexes, to stdout or a file.

use crate::exit::CmdResult;
use crate::output::stdout_error;
use crate::settings::StoreArgs;
use clap::Args;
use rsm_core::{Error, ErrorKind, IndexType, RemoteLogSegmentMetadata, Result, Uuid};
use rsm_facade::Store;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The arguments of `rsm fetch`.
#[derive(Args)]
pub struct FetchArgs {
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The segment id as `rsm ls` shows it, or the full `topicId:topic-partition:id` an error names.
    #[arg(long, allow_hyphen_values = true)]
    pub segment: String,
    /// Start at the batch holding this offset.
    #[arg(long, conflicts_with_all = ["timestamp", "position"], allow_hyphen_values = true)]
    pub offset: Option<i64>,
    /// Start at the first batch with a timestamp at or after this one (ms).
    #[arg(long, conflicts_with = "position", allow_hyphen_values = true)]
    pub timestamp: Option<i64>,
    /// Start at this byte position.
    #[arg(long, allow_hyphen_values = true)]
    pub position: Option<i64>,
    /// At most this many bytes (at least 1).
    #[arg(long, allow_hyphen_values = true)]
    pub bytes: Option<i64>,
    /// Fetch this index instead of the log (OFFSET, TIMESTAMP, PRODUCER_SNAPSHOT, TRANSACTION,
    /// LEADER_EPOCH); the whole index, so not with --offset, --timestamp, --position or --bytes.
    #[arg(long, conflicts_with_all = ["offset", "timestamp", "position", "bytes"])]
    pub index: Option<String>,
    /// Output file (default stdout); written under a temporary name and renamed when complete, so a
    /// failed fetch leaves no file.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Where a fetch writes: stdout, or a file made under a temporary name and renamed when complete.
enum Sink {
    Stdout(std::io::StdoutLock<'static>),
    File { file: std::io::BufWriter<std::fs::File>, tmp: PathBuf, path: PathBuf },
}

impl Sink {
    fn open(output: Option<&Path>) -> Result<Self> {
        let Some(path) = output else { return Ok(Sink::Stdout(std::io::stdout().lock())) };
        let name = path.file_name().ok_or_else(|| Error::invalid(format!("-o {}: not a file name", path.display())))?;
        let tmp = path.with_file_name(format!(".{}.rsm-part-{}", name.to_string_lossy(), Uuid::random()));
        let file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::from_io(path.display(), e))?;
        Ok(Sink::File { file: std::io::BufWriter::new(file), tmp, path: path.to_path_buf() })
    }

    fn write(&mut self, b: &[u8]) -> CmdResult {
        match self {
            Sink::Stdout(s) => s.write_all(b).map_err(stdout_error),
            Sink::File { file, path, .. } => Ok(file.write_all(b).map_err(|e| Error::from_io(path.display(), e))?),
        }
    }

    /// Flushes and, for a file, renames it into place; on `Err` the temporary file is removed.
    fn finish(self, result: CmdResult) -> CmdResult {
        match self {
            Sink::Stdout(mut s) => result.and_then(|_| s.flush().map_err(stdout_error)),
            Sink::File { file, tmp, path } => {
                let done = result.and_then(|_| {
                    let f = file.into_inner().map_err(|e| Error::from_io(path.display(), e.into_error()))?;
                    f.sync_all().map_err(|e| Error::from_io(path.display(), e))?;
                    Ok(std::fs::rename(&tmp, &path).map_err(|e| Error::from_io(path.display(), e))?)
                });
                if done.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                done
            }
        }
    }
}

/// Writes the segment `segment` names (from the batch holding `offset`, the first at or after `timestamp`,
/// or byte `position`; at most `bytes`), or its index `index`, to `output` or stdout.
#[allow(clippy::too_many_arguments)]
pub fn run(
    store: &Store,
    segment: &str,
    offset: Option<i64>,
    timestamp: Option<i64>,
    position: Option<i64>,
    bytes: Option<i64>,
    index: Option<String>,
    output: Option<&Path>,
) -> CmdResult {
    if let Some(n) = bytes
        && n < 1
    {
        return Err(Error::invalid(format!("--bytes {n}: must be at least 1")).into());
    }
    let index = index.map(|t| t.parse::<IndexType>()).transpose()?;
    let md = &find_segment(store, segment)?;
    let mut sink = Sink::open(output)?;
    let result = (|| {
        if let Some(t) = index {
            return sink.write(&store.fetch_index(md, t)?);
        }
        let start = match (offset, timestamp, position) {
            (Some(o), _, _) => store.position_of_offset(md, o)?,
            (_, Some(ts), _) => store
                .position_of_timestamp(md, ts)?
                .ok_or_else(|| Error::not_found(format!("a record at or after timestamp {ts} in segment {segment}")))?,
            (_, _, Some(p)) => p,
            _ => 0,
        };
        let end = bytes.map(|n| start.saturating_add(n - 1));
        let mut reader = store.fetch(md, start, end)?;
        while let Some(b) = reader.next_bytes()? {
            sink.write(&b)?;
        }
        Ok(())
    })();
    sink.finish(result)
}

/// A segment id as `rsm ls` prints it (`id`), or as errors and Kafka print it
/// (`topicId:topic-partition:id`); the second form is checked against the segment found. Ours, or one
/// Aiven's plugin stored (`aiven.read.enabled`).
fn find_segment(store: &Store, given: &str) -> Result<RemoteLogSegmentMetadata> {
    let given = given.trim();
    let (owner, id) = match given.rsplit_once(':') {
        Some((owner, id)) => (Some(owner), id),
        None => (None, given),
    };
    let id = id.parse()?;
    let m = match store.find_segment(&id) {
        Ok(m) => m.metadata,
        Err(e) if e.kind() == ErrorKind::NotFound => store.find_aiven_segment(&id).map_err(|_| e)?,
        Err(e) => return Err(e),
    };
    if let Some(owner) = owner {
        let tp = &m.remote_log_segment_id.topic_id_partition;
        if owner != tp.to_string() {
            return Err(Error::invalid(format!("segment {id} belongs to {tp}, not to `{owner}` as given")));
        }
    }
    Ok(m)
}
