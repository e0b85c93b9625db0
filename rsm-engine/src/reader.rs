//! The reader pool (SR-8, SR-9, SR-19, SR-23, SR-24): a fixed number of readers and a bounded queue of
//! remote reads by offset.
//!
//! - `readers` workers (`remote.log.reader.threads`, default 10) each serve one read at a time.
//! - At most `queue` reads (`remote.log.reader.max.pending.tasks`, default 100) wait for a reader; a read
//!   that finds the queue full is refused at once with [`ErrorKind::Busy`] (backpressure), never queued
//!   without bound. Reads being served do not count against the queue, as in Kafka's executor.
//! - A read finds its segment in the [`RemoteLogMetadataManager`] ([`find_segment`]), its start position
//!   from the segment's offset index ([`TieredStorage::position_of_offset`]), then its bytes through
//!   [`TieredStorage::read_batches_from`] (every byte checked): at most `max_bytes`, but always at
//!   least the whole first batch holding the offset (Kafka's `minOneMessage`).
//! - Transient failures are retried with a short exponential backoff ([`READ_RETRY_BACKOFF`] doubling up to
//!   [`READ_RETRY_BACKOFF_MAX`]) until the request's deadline (the consumer's fetch timeout, SR-19), which
//!   also bounds a hung store; a permanent failure fails at once.
//!
//! Leaders only (SR-24): the pool reads remote segments for consumers; followers learn of remote segments
//! from the metadata and are not served by it.

use bytes::Bytes;
use futures::FutureExt;
use rsm_core::storage::TieredStorage;
use rsm_core::{Error, ErrorKind, RemoteLogSegmentMetadata, RemoteLogSegmentState, Result, TopicIdPartition};
use rsm_metadata::RemoteLogMetadataManager;
use rsm_tiering::settings::catalogue::{READER_MAX_PENDING_TASKS, READER_THREADS};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The delay before the first retry of a read that failed transiently; it doubles with each retry.
pub const READ_RETRY_BACKOFF: Duration = Duration::from_millis(50);
/// The longest delay between two attempts of a read.
pub const READ_RETRY_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Settings of a [`ReaderPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReaderPoolConfig {
    /// Readers, each serving one read at a time (`remote.log.reader.threads`, default 10; at least 1).
    pub readers: usize,
    /// Reads that may wait for a reader (`remote.log.reader.max.pending.tasks`, default 100; at least 1).
    pub queue: usize,
}

impl Default for ReaderPoolConfig {
    /// 10 readers, a queue of 100, Kafka's defaults.
    fn default() -> Self {
        ReaderPoolConfig { readers: 10, queue: 100 }
    }
}

impl ReaderPoolConfig {
    /// Checks the settings; an error names the Kafka key at fault.
    pub fn validate(&self) -> Result<()> {
        if self.readers == 0 {
            return Err(Error::config(READER_THREADS.key, "the reader pool needs at least 1 reader (readers = 0)"));
        }
        if self.queue == 0 {
            return Err(Error::config(
                READER_MAX_PENDING_TASKS.key,
                "the reader queue must hold at least 1 read (queue = 0)",
            ));
        }
        Ok(())
    }
}

/// A consumer's read of one partition from remote storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    /// The partition.
    pub partition: TopicIdPartition,
    /// The first offset wanted.
    pub offset: i64,
    /// The most bytes wanted (`max.partition.fetch.bytes`); the whole first batch is returned even when it
    /// is larger.
    pub max_bytes: u32,
    /// When the consumer's fetch times out: retries stop then, and a read still waiting fails.
    pub deadline: Instant,
}

/// What a read returns.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadResult {
    /// The remote segment read.
    pub segment: RemoteLogSegmentMetadata,
    /// The byte position in the segment of the first batch holding the offset.
    pub start_position: u64,
    /// The segment's bytes from `start_position`: whole batches but maybe the last, which may be cut at
    /// `max_bytes` (as Kafka's fetch responses are); never less than the first batch.
    pub bytes: Bytes,
}

type Job = (ReadRequest, oneshot::Sender<Result<ReadResult>>);

struct Shared {
    config: ReaderPoolConfig,
    metadata: Arc<dyn RemoteLogMetadataManager>,
    storage: Arc<TieredStorage>,
    queued: AtomicUsize,
    in_flight: AtomicUsize,
    closed: AtomicBool,
    rx: tokio::sync::Mutex<mpsc::Receiver<Job>>,
}

/// A fixed pool of remote readers with a bounded queue. See the [module](self) docs.
pub struct ReaderPool {
    shared: Arc<Shared>,
    tx: std::sync::Mutex<Option<mpsc::Sender<Job>>>,
    workers: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for ReaderPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderPool")
            .field("config", &self.shared.config)
            .field("queued", &self.queued())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

impl ReaderPool {
    /// Starts `config.readers` readers on `runtime`, reading segments found in `metadata` from `storage`.
    /// Fails with a configuration error naming the Kafka key when a setting is zero.
    pub fn start(
        config: ReaderPoolConfig,
        runtime: &tokio::runtime::Handle,
        metadata: Arc<dyn RemoteLogMetadataManager>,
        storage: Arc<TieredStorage>,
    ) -> Result<Self> {
        config.validate()?;
        let (tx, rx) = mpsc::channel(config.queue);
        let shared = Arc::new(Shared {
            config,
            metadata,
            storage,
            queued: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            rx: tokio::sync::Mutex::new(rx),
        });
        let workers = (0..config.readers).map(|_| runtime.spawn(reader(shared.clone()))).collect();
        Ok(ReaderPool { shared, tx: std::sync::Mutex::new(Some(tx)), workers: std::sync::Mutex::new(workers) })
    }

    /// The settings.
    pub fn config(&self) -> ReaderPoolConfig {
        self.shared.config
    }

    /// Reads from remote storage (see the [module](self) docs). Refused at once with [`ErrorKind::Busy`]
    /// (transient) when the queue is full, and with a transient storage error once the pool is shut down.
    /// Dropping the future abandons the read: a reader skips it if it has not started.
    pub async fn read(&self, request: ReadRequest) -> Result<ReadResult> {
        let (done, answer) = oneshot::channel();
        {
            let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
            let Some(tx) = tx.as_ref() else {
                return Err(shut_down(&request, "refused"));
            };
            self.shared.queued.fetch_add(1, Ordering::SeqCst);
            if let Err(e) = tx.try_send((request, done)) {
                self.shared.queued.fetch_sub(1, Ordering::SeqCst);
                return Err(match e {
                    mpsc::error::TrySendError::Full((r, _)) => Error::busy(format!(
                        "the remote reader queue is full ({} reads waiting, {} = {}): read of {} at offset {} refused",
                        self.shared.config.queue,
                        READER_MAX_PENDING_TASKS.key,
                        self.shared.config.queue,
                        r.partition,
                        r.offset
                    ))
                    .with_field("partition", &r.partition)
                    .with_field("offset", r.offset),
                    mpsc::error::TrySendError::Closed((r, _)) => shut_down(&r, "refused"),
                });
            }
        }
        answer.await.unwrap_or_else(|_| {
            Err(Error::new(ErrorKind::Storage, "the remote reader ended without answering (the pool shut down)")
                .transient())
        })
    }

    /// Reads waiting for a reader.
    pub fn queued(&self) -> usize {
        self.shared.queued.load(Ordering::SeqCst)
    }

    /// Reads being served by a reader.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Stops: new reads are refused, queued reads fail with an error saying the pool shut down, reads in
    /// flight finish (each bounded by its deadline); returns when every reader has exited.
    pub async fn shutdown(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        drop(self.tx.lock().unwrap_or_else(|p| p.into_inner()).take());
        let workers = std::mem::take(&mut *self.workers.lock().unwrap_or_else(|p| p.into_inner()));
        for w in workers {
            if let Err(e) = w.await {
                tracing::error!(error = %e, "a remote reader ended abnormally");
            }
        }
    }
}

impl Drop for ReaderPool {
    /// Closes the queue so the readers exit once it is drained (queued reads fail as on shutdown).
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        drop(self.tx.lock().unwrap_or_else(|p| p.into_inner()).take());
    }
}

fn shut_down(r: &ReadRequest, what: &str) -> Error {
    Error::new(
        ErrorKind::Storage,
        format!("the remote reader pool is shut down: read of {} at offset {} {what}", r.partition, r.offset),
    )
    .transient()
    .with_field("partition", &r.partition)
    .with_field("offset", r.offset)
}

/// One reader: serves one queued read at a time until the queue is closed and drained.
async fn reader(shared: Arc<Shared>) {
    loop {
        let job = shared.rx.lock().await.recv().await;
        let Some((request, done)) = job else { return };
        shared.queued.fetch_sub(1, Ordering::SeqCst);
        if done.is_closed() {
            continue; // the caller gave up
        }
        if shared.closed.load(Ordering::SeqCst) {
            let _ = done.send(Err(shut_down(&request, "was queued and never started")));
            continue;
        }
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        // A panic below (a bug) fails this read, not the reader.
        let result = AssertUnwindSafe(read_with_retries(&shared, &request)).catch_unwind().await.unwrap_or_else(|_| {
            tracing::error!(partition = %request.partition, offset = request.offset, "remote read panicked");
            Err(Error::new(
                ErrorKind::Storage,
                format!("the remote read of {} at offset {} panicked", request.partition, request.offset),
            ))
        });
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        let _ = done.send(result);
    }
}

/// Attempts the read until it succeeds, fails permanently, or its deadline passes.
async fn read_with_retries(shared: &Shared, r: &ReadRequest) -> Result<ReadResult> {
    let mut attempts = 0u32;
    let mut delay = READ_RETRY_BACKOFF;
    let last = loop {
        if Instant::now() >= r.deadline {
            break None;
        }
        attempts += 1;
        let e = match tokio::time::timeout_at(r.deadline, read_once(shared, r)).await {
            Ok(Ok(result)) => return Ok(result),
            Ok(Err(e)) if !e.is_transient() => {
                return Err(e.with_field("partition", &r.partition).with_field("offset", r.offset));
            }
            Ok(Err(e)) => e,
            Err(_) => Error::new(ErrorKind::Storage, format!("attempt {attempts} was still running at the deadline"))
                .transient(),
        };
        tracing::debug!(partition = %r.partition, offset = r.offset, attempts, error = %e.full_message(), "remote read failed; retrying");
        let next = Instant::now() + delay;
        if next >= r.deadline {
            break Some(e);
        }
        tokio::time::sleep_until(next).await;
        delay = (delay * 2).min(READ_RETRY_BACKOFF_MAX);
    };
    let last = match last {
        Some(e) => e.full_message(),
        None if attempts == 0 => "its deadline passed while it was queued".to_string(),
        None => "none".to_string(),
    };
    Err(Error::new(
        ErrorKind::Storage,
        format!(
            "remote read of {} at offset {} did not succeed before its deadline after {attempts} attempts; last \
             error: {last}",
            r.partition, r.offset
        ),
    )
    .transient()
    .with_field("partition", &r.partition)
    .with_field("offset", r.offset)
    .with_field("attempts", attempts))
}

/// One attempt: the segment from the metadata, the position, the bytes. A store that no longer has the
/// segment is told apart from a segment deleted meanwhile by asking the metadata again.
async fn read_once(shared: &Shared, r: &ReadRequest) -> Result<ReadResult> {
    let (segment, next) = find_segment_and_next(shared.metadata.as_ref(), &r.partition, r.offset).await?;
    // The segment after this one, so that a consumer reading on finds it read ahead without a listing.
    if let Some(next) = &next {
        shared.storage.note_segment(next);
    }
    let e = match read_segment(&shared.storage, &segment, r).await {
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Corrupt) => e,
        other => return other,
    };
    // Another copy of the same history (the same epoch at the offset: a duplicate left by two hosts copying,
    // or by a store-only copy a rebuilt metadata log lists beside the engine's) serves what this one, damaged
    // or missing, cannot: its bytes are checked as any others.
    for other in twins(shared, &segment, r).await? {
        if let Ok(result) = read_segment(&shared.storage, &other, r).await {
            tracing::warn!(partition = %r.partition, offset = r.offset, segment = %segment.remote_log_segment_id.id,
                served_by = %other.remote_log_segment_id.id, error = %e,
                "a copied segment failed to read; another copy of the same offsets served the read");
            return Ok(result);
        }
    }
    match e.kind() {
        ErrorKind::NotFound => Err(gone(shared, &segment, r, e).await),
        _ => Err(e),
    }
}

/// The other copied segments holding `r.offset` in the same epoch as `segment`, newest first.
async fn twins(
    shared: &Shared,
    segment: &RemoteLogSegmentMetadata,
    r: &ReadRequest,
) -> Result<Vec<RemoteLogSegmentMetadata>> {
    let epoch = epoch_of(segment, r.offset);
    let mut out: Vec<RemoteLogSegmentMetadata> = shared
        .metadata
        .list_remote_log_segments(&r.partition)
        .await?
        .into_iter()
        .filter(|s| {
            s.state == RemoteLogSegmentState::CopySegmentFinished
                && s.remote_log_segment_id != segment.remote_log_segment_id
                && s.start_offset <= r.offset
                && r.offset <= s.end_offset
                && epoch_of(s, r.offset) == epoch
        })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.event_timestamp_ms));
    Ok(out)
}

/// The error for a segment the store does not have: deleted meanwhile when the metadata no longer lists
/// it as copied, else missing from the store.
async fn gone(shared: &Shared, segment: &RemoteLogSegmentMetadata, r: &ReadRequest, e: Error) -> Error {
    let id = &segment.remote_log_segment_id;
    let listed = match shared.metadata.list_remote_log_segments(&r.partition).await {
        Ok(all) => {
            all.iter().any(|s| s.remote_log_segment_id == *id && s.state == RemoteLogSegmentState::CopySegmentFinished)
        }
        Err(me) => return me.context(format!("checking whether segment {id} was deleted")),
    };
    let what = if listed {
        format!(
            "remote segment {id} holding offset {} of {} is listed as copied but missing from the store: {}",
            r.offset,
            r.partition,
            e.full_message()
        )
    } else {
        format!("remote segment {id} holding offset {} of {} was deleted while being read", r.offset, r.partition)
    };
    Error::not_found(what).with_field("segment", id).with_field("offset", r.offset)
}

/// The epoch of `offset` in `segment`: the last epoch starting at or before it.
fn epoch_of(segment: &RemoteLogSegmentMetadata, offset: i64) -> i32 {
    segment.segment_leader_epochs.range(..).rev().find(|(_, start)| **start <= offset).map_or(-1, |(e, _)| *e)
}

/// The copied segment (`COPY_SEGMENT_FINISHED`) of `partition` holding `offset`.
///
/// One listing ([`RemoteLogMetadataManager::list_remote_log_segments`]) rather than Kafka's by-epoch query:
/// the pool has no local leader epoch cache to tell it the offset's epoch, and the listing also gives the
/// remote log's range for the out-of-range error. When several copied segments hold the offset (an unclean
/// leader election left a segment of an older epoch that overlaps a newer one), the one whose epoch at the
/// offset is highest wins: the newer leader's log is the partition's history.
///
/// An offset below the earliest copied offset or above the highest (or a partition with nothing copied) is
/// a not-found error naming partition and offset, Kafka's `OffsetOutOfRange`; so is an offset in a gap.
pub async fn find_segment(
    metadata: &dyn RemoteLogMetadataManager,
    partition: &TopicIdPartition,
    offset: i64,
) -> Result<RemoteLogSegmentMetadata> {
    Ok(find_segment_and_next(metadata, partition, offset).await?.0)
}

/// [`find_segment`], and the copied segment a consumer reads after it: the one starting right after it
/// ends (of several, the one whose epoch at that offset is highest), if any.
pub async fn find_segment_and_next(
    metadata: &dyn RemoteLogMetadataManager,
    partition: &TopicIdPartition,
    offset: i64,
) -> Result<(RemoteLogSegmentMetadata, Option<RemoteLogSegmentMetadata>)> {
    let copied: Vec<RemoteLogSegmentMetadata> = metadata
        .list_remote_log_segments(partition)
        .await?
        .into_iter()
        .filter(|s| s.state == RemoteLogSegmentState::CopySegmentFinished)
        .collect();
    let out_of_range = |why: String| {
        Error::not_found(format!("offset {offset} of {partition} is out of range of the remote log: {why}"))
            .with_field("partition", partition)
            .with_field("offset", offset)
    };
    let (Some(earliest), Some(highest)) =
        (copied.iter().map(|s| s.start_offset).min(), copied.iter().map(|s| s.end_offset).max())
    else {
        return Err(out_of_range("no segment is copied".into()));
    };
    if offset < earliest || offset > highest {
        return Err(out_of_range(format!("the remote log holds offsets {earliest} to {highest}")));
    }
    let holding = |at: i64| {
        copied
            .iter()
            .filter(|s| s.start_offset <= at && at <= s.end_offset)
            .max_by_key(|s| (epoch_of(s, at), s.event_timestamp_ms))
    };
    let segment = holding(offset)
        .ok_or_else(|| out_of_range(format!("no copied segment holds it (a gap in {earliest} to {highest})")))?;
    let after = segment.end_offset.saturating_add(1);
    let next = holding(after).filter(|s| s.start_offset == after).cloned();
    Ok((segment.clone(), next))
}

/// The position of the offset's batch, then up to `max_bytes` from it, widened to the whole first batch.
async fn read_segment(
    storage: &TieredStorage,
    segment: &RemoteLogSegmentMetadata,
    r: &ReadRequest,
) -> Result<ReadResult> {
    let position = storage.position_of_offset(segment, r.offset).await?;
    let bytes = storage.read_batches_from(segment, position, r.max_bytes).await?;
    Ok(ReadResult { segment: segment.clone(), start_position: position, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_settings_name_the_kafka_key() {
        let cases = [
            (ReaderPoolConfig { readers: 0, queue: 1 }, READER_THREADS.key),
            (ReaderPoolConfig { readers: 1, queue: 0 }, READER_MAX_PENDING_TASKS.key),
        ];
        for (c, key) in cases {
            let e = c.validate().unwrap_err();
            assert_eq!((e.kind(), e.config_key()), (ErrorKind::Config, Some(key)), "{e}");
        }
        assert_eq!(ReaderPoolConfig::default(), ReaderPoolConfig { readers: 10, queue: 100 });
        assert!(ReaderPoolConfig::default().validate().is_ok());
    }
}
