//! The fetch planner: a byte range, an offset or a timestamp of a segment becomes ranged reads of its
//! chunks, from the manifest alone; the reads go through the [`ChunkSource`](super::ChunkSource) and every
//! chunk a fetch covers whole is checked as its bytes stream past.

use super::TieredStorage;
use crate::backend::ByteStream;
use crate::error::{Error, Result};
use crate::format::batch::{Batch, BatchIter};
use crate::format::manifest::Manifest;
use crate::model::RemoteLogSegmentMetadata;
use futures::StreamExt;
use std::ops::Range;
use std::sync::Arc;

/// The most a fetch that starts inside a chunk reads before yielding its first bytes: one default consumer
/// fetch (`max.partition.fetch.bytes`, 1 MiB) plus room for the batches the broker reads past between the
/// offset-index entry it starts from and the fetch offset, so that the broker's usual fetch is one ranged read.
pub const FIRST_READ_BYTES: u64 = (1 << 20) + (128 << 10);

/// The reads of a fetch of the original bytes `start..end`: the first takes at most [`FIRST_READ_BYTES`]
/// wherever it starts (the broker's usual fetch is that one read), then one read per chunk, the first and
/// last cut to the fetch. `end` is cut at the end of the last chunk; an empty or out-of-range fetch has no
/// read.
pub fn plan_reads(manifest: &Manifest, start: u64, end: u64) -> Vec<Range<u64>> {
    let end = end.min(manifest.chunks.last().map_or(0, |c| c.end()));
    let mut reads: Vec<Range<u64>> = Vec::new();
    if start < end && manifest.chunk_at_position(start).is_some() {
        reads.push(start..end.min(start.saturating_add(FIRST_READ_BYTES)));
        let mut at = reads[0].end;
        while let Some(i) = manifest.chunk_at_position(at).filter(|_| at < end) {
            let e = end.min(manifest.chunks[i].end());
            reads.push(at..e);
            at = e;
        }
    }
    reads
}

/// Checks the chunks a fetch covers whole as their bytes stream past in order: each chunk's CRC-32C is
/// summed across the reads that carry it and compared when its last byte arrives. The chunk the fetch
/// starts inside (its start is never read) is not checked.
struct ChunkCheck {
    manifest: Arc<Manifest>,
    key: String,
    /// Position of the next byte expected.
    next: u64,
    /// Index of the chunk holding `next`.
    chunk: usize,
    /// CRC-32C of the current chunk's bytes so far, when it was seen from its start.
    crc: Option<u32>,
}

impl ChunkCheck {
    fn new(manifest: Arc<Manifest>, key: String, start: u64) -> Self {
        let chunk = manifest.chunk_at_position(start).unwrap_or(manifest.chunks.len());
        let whole = manifest.chunks.get(chunk).is_some_and(|c| c.position() == start);
        ChunkCheck { manifest, key, next: start, chunk, crc: whole.then_some(0) }
    }

    /// Takes the next bytes of the stream; fails on a chunk whose last byte is among them and whose
    /// CRC-32C is not its entry's.
    fn feed(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let Some(c) = self.manifest.chunks.get(self.chunk) else {
                return Err(Error::corrupt(format!("object {}: bytes past its last chunk", self.key)));
            };
            let n = ((c.end() - self.next) as usize).min(bytes.len());
            self.crc = self.crc.map(|crc| crc32c::crc32c_append(crc, &bytes[..n]));
            self.next += n as u64;
            bytes = &bytes[n..];
            if self.next == c.end() {
                if let Some(crc) = self.crc {
                    c.check_crc(crc, &self.key)?;
                }
                self.chunk += 1;
                self.crc = Some(0);
            }
        }
        Ok(())
    }
}

impl TieredStorage {
    /// Streams the bytes `start..end` of a committed segment's log, in order, as [`plan_reads`] plans them.
    /// The first two reads go one at a time (a reader that stops early has cost at most one read more than
    /// it used), then up to `fetch.concurrency` are in flight. Every read is checked for length, and every
    /// chunk the fetch covers whole is checked against its CRC-32C before its last bytes are yielded: a chunk
    /// read whole in one read (every chunk after the first read) is checked before any of its bytes are
    /// yielded; one that straddles the end of the first read has its first part yielded before the check.
    /// The chunks the fetch starts or ends inside are checked for length only.
    pub fn stream_range(&self, manifest: Arc<Manifest>, start: u64, end: u64) -> ByteStream {
        let mut reads = plan_reads(&manifest, start, end);
        let read = {
            let (chunks, manifest) = (self.chunks.clone(), manifest.clone());
            move |r: Range<u64>| {
                let (chunks, manifest) = (chunks.clone(), manifest.clone());
                async move { chunks.read(&manifest, r).await }
            }
        };
        let rest = reads.split_off(reads.len().min(2));
        let concurrency = self.config.fetch_concurrency;
        let head = futures::stream::iter(reads).then(read.clone());
        let rest = futures::stream::iter(rest).map(read).buffered(concurrency);
        let key = self.keys(&manifest.metadata).log;
        let mut check = ChunkCheck::new(manifest, key, start);
        Box::pin(head.chain(rest).map(move |r| r.and_then(|b| check.feed(&b).map(|()| b))))
    }

    /// Byte position of the first batch holding `offset` or a later one, from the manifest and one chunk.
    pub async fn position_of_offset(&self, md: &RemoteLogSegmentMetadata, offset: i64) -> Result<u32> {
        let m = self.manifest(md).await?;
        let Some(i) = m.chunk_for_offset(offset) else {
            return Err(Error::invalid(format!(
                "offset {offset} is past the end of segment {} (last offset {})",
                md.remote_log_segment_id, md.end_offset
            )));
        };
        self.find_in_chunk(&m, i, |b| b.last_offset() >= offset).await?.ok_or_else(|| {
            Error::corrupt(format!(
                "segment {}: chunk {i} has no batch reaching offset {offset}",
                md.remote_log_segment_id
            ))
        })
    }

    /// Byte position of the first batch with a timestamp at or after `timestamp`, or `None` when no record
    /// in the segment is that late.
    pub async fn position_of_timestamp(&self, md: &RemoteLogSegmentMetadata, timestamp: i64) -> Result<Option<u32>> {
        let m = self.manifest(md).await?;
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
    ) -> Result<Option<u32>> {
        let c = m.chunks[i];
        let key = self.keys(&m.metadata).log;
        let bytes = self.chunks.read(m, c.position()..c.end()).await?;
        c.verify(&bytes, &key)?;
        for b in BatchIter::new(&bytes, c.position(), false) {
            let b = b.map_err(|e| e.context(&key))?;
            if pred(&b) {
                return Ok(Some(b.position() as u32));
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
        let proto = m.chunks[0];
        let mut pos = 0;
        m.chunks = lengths
            .iter()
            .map(|&len| {
                let mut c = proto;
                (c.data_length, c.rdi.stored_length, c.rdi.position, c.rdi.original_position) = (len, len, pos, pos);
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
        const F: u64 = FIRST_READ_BYTES;
        let m = chunked(&[4 << 20; 3]);
        // (case, start, end, the reads as (start, end) pairs)
        type Case = (&'static str, u64, u64, &'static [(u64, u64)]);
        let cases: [Case; 7] = [
            ("a broker fetch inside a chunk: one read", 1000, 1000 + MIB, &[(1000, 1000 + MIB)]),
            (
                "more: the first read, then the rest of each chunk",
                1000,
                12 * MIB,
                &[(1000, 1000 + F), (1000 + F, 4 * MIB), (4 * MIB, 8 * MIB), (8 * MIB, 12 * MIB)],
            ),
            (
                "across a chunk's end: the first read crosses it",
                4 * MIB - 100,
                6 * MIB,
                &[(4 * MIB - 100, 4 * MIB - 100 + F), (4 * MIB - 100 + F, 6 * MIB)],
            ),
            ("the end is cut at the last chunk", 11 * MIB, u64::MAX, &[(11 * MIB, 12 * MIB)]),
            ("empty", 700, 700, &[]),
            ("start past the end", 12 * MIB, 13 * MIB, &[]),
            ("reversed", 900, 100, &[]),
        ];
        for (case, start, end, want) in cases {
            let want: Vec<Range<u64>> = want.iter().map(|&(a, b)| a..b).collect();
            assert_eq!(plan_reads(&m, start, end), want, "{case}");
        }
    }
}
