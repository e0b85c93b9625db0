//! The fetch planner: a byte range, an offset or a timestamp of a segment becomes ranged reads of its
//! chunks, from the manifest alone; the reads go through the [`ChunkSource`](super::ChunkSource) and every
//! chunk a fetch covers whole is checked as its bytes stream past.

use super::TieredStorage;
use super::layout::placement;
use super::read_budget::within_budget;
use crate::backend::ByteStream;
use crate::error::{Error, Result};
use crate::format::batch::{Batch, BatchIter};
use crate::format::chunk::Transform;
use crate::format::manifest::Manifest;
use crate::model::RemoteLogSegmentMetadata;
use futures::StreamExt;
use std::ops::Range;
use std::sync::Arc;

/// The most a fetch that starts inside a chunk reads before yielding its first bytes: one default consumer
/// fetch (`max.partition.fetch.bytes`, 1 MiB) plus room for the batches the broker reads past between the
/// offset-index entry it starts from and the fetch offset, so that the broker's usual fetch is one ranged read.
pub const FIRST_READ_BYTES: u64 = (1 << 20) + (128 << 10);

/// The reads of a fetch of the original bytes `start..end`, each widened to whole blocks
/// ([`Manifest::align`]) so that it can be checked: the first covers at most [`FIRST_READ_BYTES`] of the fetch
/// wherever it starts (the broker's usual fetch is that one read), then one read per chunk, the last cut to
/// the block holding the fetch's last byte. A chunk longer than `max_read` (one of a batch larger than
/// `chunk.size`) that can be read in parts (stored as it is, sealed block by block, or in frames) is read in
/// parts of about `max_read` (whole frames of a chunk in frames), so that no read holds more than the settings
/// say. `end` is cut at the end of the last chunk; an empty or out-of-range fetch has no read.
pub fn plan_reads(manifest: &Manifest, start: u64, end: u64, max_read: u64) -> Vec<Range<u64>> {
    let end = end.min(manifest.chunks.last().map_or(0, |c| c.end()));
    if start >= end || manifest.chunk_at_position(start).is_none() {
        return Vec::new();
    }
    let last = manifest.align(start..end).end;
    let mut reads = vec![manifest.align(start..end.min(start.saturating_add(FIRST_READ_BYTES)))];
    let mut at = reads[0].end;
    while let Some(i) = manifest.chunk_at_position(at).filter(|_| at < last) {
        let e = read_end(manifest, i, at, last, max_read);
        reads.push(at..e);
        at = e;
    }
    reads
}

/// Where a read of chunk `i` from `at` ends: at the chunk's end or `last`, whichever is first, or, when that is
/// more than `max_read` away and the chunk can be read in parts, after whole parts' steps of about `max_read`
/// from the chunk's start (at least one step), widened to its block.
fn read_end(manifest: &Manifest, i: usize, at: u64, last: u64, max_read: u64) -> u64 {
    let c = &manifest.chunks[i];
    let e = last.min(c.end());
    let Some(step) = part_step(manifest, i).filter(|_| e - at > max_read) else { return e };
    let part = (max_read / step).max(1) * step;
    let from = at - c.original_position();
    let cut = e.min(c.original_position() + (from / step) * step + part).max(at + 1);
    manifest.align(at..cut).end.min(c.end())
}

/// What a read of the original bytes `r` holds at its peak: those bytes, and while a transformed chunk is
/// undone its stored bytes too (their share of the chunk's stored length).
pub fn read_weight(manifest: &Manifest, r: &Range<u64>) -> u64 {
    let Some(first) = manifest.chunk_at_position(r.start) else { return r.end - r.start };
    manifest.chunks[first..]
        .iter()
        .take_while(|c| c.original_position() < r.end)
        .map(|c| {
            let part = r.end.min(c.end()) - r.start.max(c.original_position());
            match c.rdi.transform {
                Transform::None => part,
                _ => part + part * c.rdi.stored_length as u64 / (c.data_length as u64).max(1),
            }
        })
        .sum()
}

/// The reads of chunk `i` whole: one, or when it is longer than `max_read` and can be read in parts, parts
/// of about `max_read` as [`plan_reads`] cuts them.
pub fn chunk_reads(manifest: &Manifest, i: usize, max_read: u64) -> Vec<Range<u64>> {
    let c = &manifest.chunks[i];
    let first = c.original_position()..read_end(manifest, i, c.original_position(), c.end(), max_read);
    let mut reads = vec![first];
    while let Some(at) = reads.last().map(|r| r.end).filter(|&at| at < c.end()) {
        reads.push(at..read_end(manifest, i, at, c.end(), max_read));
    }
    reads
}

/// The unit chunk `i` can be read in parts of: its frame size when stored in frames, a block when stored as
/// it is or sealed block by block; `None` for one zstd frame, read whole.
fn part_step(manifest: &Manifest, i: usize) -> Option<u64> {
    let c = &manifest.chunks[i];
    let block = manifest.block_size.max(1) as u64;
    match c.rdi.transform {
        Transform::None | Transform::Aes256Gcm => Some(block),
        Transform::ZstdFrames | Transform::ZstdFramesAes256Gcm => {
            manifest.frames_of(i).map(|(size, _)| size.max(1) as u64)
        }
        Transform::Zstd | Transform::ZstdAes256Gcm => None,
    }
}

/// The original bytes `start..end` a fetch of positions `start_position..=end_position` (to the end of the
/// log without an end) of the segment of `manifest` serves: a start outside the log, or an end before the
/// start, is refused naming the segment; an end past the log is cut at its end.
pub fn fetch_bounds(manifest: &Manifest, start_position: i64, end_position: Option<i64>) -> Result<(u64, u64)> {
    log_bounds(manifest.log_length, &manifest.metadata.remote_log_segment_id, start_position, end_position)
}

/// [`fetch_bounds`] over a log of `log_length` bytes of segment `id`, whatever its format.
pub fn log_bounds(
    log_length: u64,
    id: &dyn std::fmt::Display,
    start_position: i64,
    end_position: Option<i64>,
) -> Result<(u64, u64)> {
    if start_position < 0 || start_position as u64 >= log_length {
        return Err(Error::invalid(format!(
            "start position {start_position} is outside segment {id} of {log_length} bytes"
        )));
    }
    let end = match end_position {
        Some(e) if e < start_position => {
            return Err(Error::invalid(format!(
                "end position {e} is before start position {start_position} in segment {id}"
            )));
        }
        Some(e) => (e as u64 + 1).min(log_length),
        None => log_length,
    };
    Ok((start_position as u64, end))
}

impl TieredStorage {
    /// Streams the bytes `start..end` of a committed segment's log, in order, as [`plan_reads`] plans them.
    /// The first two reads go one at a time (a reader that stops early has cost at most one read more than
    /// it used), then up to `fetch.concurrency` are in flight, within [`TieredStorage::read_budget`] bytes
    /// (a segment of larger chunks has fewer in flight). Each read is checked block by block
    /// ([`Manifest::check_blocks`]) before any of its bytes are yielded, then cut to the fetch.
    pub fn stream_range(&self, manifest: Arc<Manifest>, start: u64, end: u64) -> ByteStream {
        let mut reads = plan_reads(&manifest, start, end, self.config.chunk_size as u64);
        let end = end.min(manifest.log_length);
        let read = {
            let (chunks, manifest) = (self.chunks.clone(), manifest.clone());
            let key = placement(&self.config.key_prefix, &manifest).log;
            move |r: Range<u64>| {
                let (chunks, manifest, key) = (chunks.clone(), manifest.clone(), key.clone());
                async move {
                    let bytes = chunks.read(&manifest, r.clone()).await?;
                    if !chunks.checks() {
                        manifest.check_blocks(r.clone(), &bytes, &key)?;
                    }
                    let (from, to) = (start.max(r.start) - r.start, end.min(r.end) - r.start);
                    Ok(bytes.slice(from as usize..to as usize))
                }
            }
        };
        let rest = reads.split_off(reads.len().min(2));
        let head = futures::stream::iter(reads).then(read.clone());
        let weigh = manifest.clone();
        let rest = rest.into_iter().map(move |r| (read_weight(&weigh, &r), read(r)));
        Box::pin(head.chain(within_budget(rest, self.config.fetch_concurrency, self.read_budget())))
    }

    /// The most bytes a whole-segment read (a fetch, a verify) holds in reads in flight at once
    /// ([`read_weight`]: the original bytes, and the stored ones of a transformed chunk while it is undone):
    /// `fetch.concurrency` × `chunk.size`, the settings' bound whatever the chunks' own size.
    pub fn read_budget(&self) -> u64 {
        self.config.fetch_concurrency as u64 * self.config.chunk_size as u64
    }

    /// Byte position of the first batch holding `offset` or a later one, from the manifest and one chunk. An
    /// offset outside the segment is refused the same way below its start as past its end.
    pub async fn position_of_offset(&self, md: &RemoteLogSegmentMetadata, offset: i64) -> Result<u64> {
        let outside = || {
            Error::invalid(format!(
                "`offset` {offset} is outside segment {} (offsets {} to {} inclusive)",
                md.remote_log_segment_id, md.start_offset, md.end_offset
            ))
        };
        if offset < md.start_offset || offset > md.end_offset {
            return Err(outside());
        }
        let m = match self.locate(md).await? {
            super::aiven::Located::Ours(m) => m,
            super::aiven::Located::Aiven(s) => return self.aiven_position_of_offset(s, offset).await,
        };
        let Some(i) = m.chunk_for_offset(offset) else { return Err(outside()) };
        self.find_in_chunk(&m, i, |b| b.last_offset() >= offset).await?.ok_or_else(|| {
            Error::corrupt(format!(
                "segment {}: chunk {i} has no batch reaching offset {offset}",
                md.remote_log_segment_id
            ))
        })
    }

    /// Byte position of the first batch with a timestamp at or after `timestamp`, or `None` when no record
    /// in the segment is that late.
    pub async fn position_of_timestamp(&self, md: &RemoteLogSegmentMetadata, timestamp: i64) -> Result<Option<u64>> {
        let m = match self.locate(md).await? {
            super::aiven::Located::Ours(m) => m,
            super::aiven::Located::Aiven(s) => return self.aiven_position_of_timestamp(s, timestamp).await,
        };
        let Some(i) = m.chunk_for_timestamp(timestamp) else {
            return Ok(None);
        };
        self.find_in_chunk(&m, i, |b| b.max_timestamp() >= timestamp).await
    }

    /// The position of the first batch of chunk `i` that `pred` accepts; the chunk is read whole and
    /// checked first.
    async fn find_in_chunk(
        &self,
        m: &Arc<Manifest>,
        i: usize,
        pred: impl Fn(&Batch<'_>) -> bool,
    ) -> Result<Option<u64>> {
        let c = m.chunks[i];
        let key = placement(&self.config.key_prefix, m).log;
        let bytes = self.chunks.read(m, c.original_position()..c.end()).await?;
        c.verify(&bytes, &key)?;
        for b in BatchIter::new(&bytes, c.original_position(), false) {
            let b = b.map_err(|e| e.context(&key))?;
            if pred(&b) {
                return Ok(Some(b.position()));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::manifest::tests::sample;

    /// A manifest whose chunks have these lengths, stored in place.
    fn chunked(lengths: &[u32]) -> Manifest {
        let mut m = sample();
        m.block_size = 64 << 10;
        let proto = m.chunks[0];
        let mut pos = 0;
        m.chunks = lengths
            .iter()
            .map(|&len| {
                let mut c = proto;
                (c.data_length, c.rdi.stored_length, c.rdi.stored_position, c.rdi.original_position) =
                    (len, len, pos, pos);
                pos += len as u64;
                c
            })
            .collect();
        m.log_length = pos;
        m
    }

    #[test]
    fn plans_cut_the_first_read_then_follow_chunks() {
        const MIB: u64 = 1 << 20;
        const K64: u64 = 64 << 10;
        const F: u64 = FIRST_READ_BYTES;
        assert_eq!(F % K64, 0, "the first read is whole blocks");
        let m = chunked(&[4 << 20; 3]);
        // (case, start, end, the reads as (start, end) pairs: whole 64 KiB blocks)
        type Case = (&'static str, u64, u64, &'static [(u64, u64)]);
        let cases: [Case; 7] = [
            ("a broker fetch inside a chunk: one read", 1000, 1000 + MIB, &[(0, MIB + K64)]),
            (
                "more: the first read, then the rest of each chunk",
                1000,
                12 * MIB,
                &[(0, F + K64), (F + K64, 4 * MIB), (4 * MIB, 8 * MIB), (8 * MIB, 12 * MIB)],
            ),
            (
                "across a chunk's end: the first read crosses it",
                4 * MIB - 100,
                6 * MIB - 1,
                &[(4 * MIB - K64, 4 * MIB + F), (4 * MIB + F, 6 * MIB)],
            ),
            ("the end is cut at the last chunk", 11 * MIB, u64::MAX, &[(11 * MIB, 12 * MIB)]),
            ("empty", 700, 700, &[]),
            ("start past the end", 12 * MIB, 13 * MIB, &[]),
            ("reversed", 900, 100, &[]),
        ];
        for (case, start, end, want) in cases {
            let want: Vec<Range<u64>> = want.iter().map(|&(a, b)| a..b).collect();
            assert_eq!(plan_reads(&m, start, end, 4 * MIB), want, "{case}");
        }
    }

    #[test]
    fn a_chunk_longer_than_a_read_may_be_is_read_in_parts_when_it_can_be() {
        const MIB: u64 = 1 << 20;
        const F: u64 = FIRST_READ_BYTES;
        let big = 10 * MIB + 5000;
        let mut m = chunked(&[big as u32, 4 << 20]);
        let parts: Vec<Range<u64>> =
            vec![0..F, F..F + 4 * MIB, F + 4 * MIB..F + 8 * MIB, F + 8 * MIB..big, big..big + 4 * MIB];
        assert_eq!(plan_reads(&m, 0, u64::MAX, 4 * MIB), parts, "stored as it is: parts of 4 MiB");
        m.chunks[0].rdi.transform = Transform::Aes256Gcm;
        assert_eq!(plan_reads(&m, 0, u64::MAX, 4 * MIB), parts, "sealed block by block: the same parts");
        m.chunks[0].rdi.transform = Transform::Zstd;
        let whole: Vec<Range<u64>> = vec![0..F, F..big, big..big + 4 * MIB];
        assert_eq!(plan_reads(&m, 0, u64::MAX, 4 * MIB), whole, "one zstd frame: read whole");
        m.chunks[0].rdi.transform = Transform::None;
        assert_eq!(plan_reads(&m, 0, u64::MAX, 64 << 20), whole, "a chunk within the limit: whole");
    }
}
