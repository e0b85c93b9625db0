//! A partition's offsets (SR-25), with the holes neither the local log nor the store holds, and reads of
//! its records through the reader pool.

use super::RemoteLogManager;
use crate::config::within;
use crate::lifecycle::offset_ranges;
use crate::local_log::LocalLog;
use crate::reader::{ReadRequest, ReadResult, ReaderPool, ReaderPoolConfig};
use crate::state::Role;
use crate::state::lock;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentState, TopicIdPartition, Uuid};
use std::sync::Arc;

/// The offsets of a partition (SR-25): Lx, Ly, Lz, Rx, Ry, and the gaps of the remote log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offsets {
    /// Lx, the local log start offset: the first segment's base offset.
    pub local_log_start: i64,
    /// Ly, the last stable offset: where the earliest transaction the local log leaves open begins (no
    /// marker after it), else Lz.
    pub last_stable: i64,
    /// Lz, the local log end offset: the offset after the last record of the active segment.
    pub local_log_end: i64,
    /// Rx, the remote log start offset (the earliest copied segment's start), if any.
    pub remote_log_start: Option<i64>,
    /// Ry, the remote log end offset (the highest copied segment's end), if any.
    pub remote_log_end: Option<i64>,
    /// The holes of the log, oldest first: offsets between Rx and Lz that neither a copied segment nor the
    /// local log holds (a segment deleted by hand from the middle or the end of the remote log, a local
    /// segment removed by hand): local segments from the first hole on are never deleted.
    pub remote_gaps: Vec<rsm_tiering::OffsetRange>,
    /// The copied segments the metadata lists whose commit object the store lacks (deleted behind the
    /// metadata's back, or a store that is not the one copied to), oldest first: their offsets count as held
    /// nowhere in [`Offsets::remote_gaps`].
    pub missing_from_store: Vec<(Uuid, rsm_tiering::OffsetRange)>,
}

impl RemoteLogManager {
    /// The partition's offsets (SR-25), checked against the constraints Lz ≥ Ly ≥ Lx, Ly ≥ Ry ≥ Rx. Rx and Ry
    /// are the metadata's; the gaps are what neither the local log nor the store holds: one listing of the
    /// partition in the store tells which copied segments it still has.
    pub async fn offsets(&self, tp: &TopicIdPartition) -> Result<Offsets> {
        let state = self.state(tp)?;
        let log = LocalLog::open_read_only(&state.dir())?;
        let remote = self.shared.metadata.list_remote_log_segments(tp).await?;
        let copied = offset_ranges(&remote);
        let lx = log.partition().segments.first().map_or(0, |s| s.base_offset);
        let lz = log.true_log_end_offset()?;
        let rx = copied.iter().map(|m| m.start).min();
        let ry = copied.iter().map(|m| m.end).max();
        let in_store = match copied.is_empty() {
            true => Default::default(),
            false => {
                let listing = self.shared.storage.committed_segment_ids(Some(tp));
                within(&self.shared.config, || format!("listing partition {tp} in the store"), listing).await?
            }
        };
        let (present, missing): (Vec<_>, Vec<_>) =
            remote.into_iter().partition(|m| in_store.contains(&m.remote_log_segment_id.id));
        let offsets = Offsets {
            local_log_start: lx,
            last_stable: log.first_open_transaction(lx)?.map_or(lz, |o| o.min(lz)),
            local_log_end: lz,
            remote_log_start: rx,
            remote_log_end: ry,
            remote_gaps: rsm_tiering::log_gaps(&offset_ranges(&present), &log.held_ranges()?),
            missing_from_store: offset_ranges(&missing)
                .into_iter()
                .zip(missing.iter().filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished))
                .map(|(r, m)| (m.remote_log_segment_id.id, r))
                .collect(),
        };
        Ok(offsets)
    }

    /// Reads `tp` from remote storage at `offset` through the reader pool (SR-8, SR-9, SR-19, SR-23): at
    /// most `max_bytes` but at least the batch holding the offset, retried until `deadline`; refused at once
    /// with [`ErrorKind::Busy`](rsm_core::ErrorKind::Busy) when the pool's queue is full. A partition this
    /// host follows is refused: a follower serves only what is local (SR-24). The pool starts on the first
    /// read, on the runtime of the caller.
    pub async fn read(
        &self,
        tp: &TopicIdPartition,
        offset: i64,
        max_bytes: u32,
        deadline: tokio::time::Instant,
    ) -> Result<ReadResult> {
        let state = self.state(tp)?;
        if !matches!(state.role(), Role::Leader { .. }) {
            return Err(Error::invalid(format!(
                "partition {tp} is a follower here: it serves only local data, and offset {offset} is asked of remote storage"
            )));
        }
        let pool = {
            let mut slot = lock(&self.readers);
            match slot.as_ref() {
                Some(p) => Arc::clone(p),
                None => {
                    let b = &self.shared.config.broker;
                    let config = ReaderPoolConfig {
                        readers: b.reader_threads as usize,
                        queue: b.reader_max_pending_tasks as usize,
                    };
                    let pool = Arc::new(ReaderPool::start(
                        config,
                        &tokio::runtime::Handle::current(),
                        Arc::clone(&self.shared.metadata),
                        Arc::clone(&self.shared.storage),
                    )?);
                    *slot = Some(Arc::clone(&pool));
                    pool
                }
            }
        };
        pool.read(ReadRequest { partition: tp.clone(), offset, max_bytes, deadline }).await
    }
}
