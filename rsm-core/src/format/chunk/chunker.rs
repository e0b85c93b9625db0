//! The chunker: cuts a segment's record batches into chunks on batch boundaries, with a CRC-32C of every
//! block of each chunk, as a copy builds the manifest's chunk table.

use super::crc_combine::{crc32c_combine, crc32c_shift};
use super::entry::{ChunkEntry, Rdi, RdiObject, Transform};
use crate::format::batch::Batch;
use crate::model::Uuid;

/// The block size of the CRC-32Cs inside each chunk, when the settings do not say (`chunk.block.size`).
pub const DEFAULT_BLOCK_SIZE: u32 = 64 << 10;

/// The chunk table of a segment: the chunks, and a CRC-32C of every block of `block_size` bytes inside each
/// chunk (blocks start at each chunk's start; a chunk's last block may be shorter), chunk after chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkTable {
    /// The chunks, in order.
    pub chunks: Vec<ChunkEntry>,
    /// The block size.
    pub block_size: u32,
    /// The block CRC-32Cs, in order.
    pub block_crcs: Vec<u32>,
}

/// Cuts a stream of batches into chunks of about `target` bytes, on batch boundaries, with a CRC-32C of every
/// block of each chunk.
#[derive(Debug)]
pub struct Chunker {
    target: u64,
    segment_start_offset: i64,
    segment_id: Uuid,
    table: ChunkTable,
    open: Option<ChunkEntry>,
    /// Bytes of the open block, and their CRC.
    block_fill: u32,
    block_crc: u32,
    /// Blocks of the open chunk so far.
    chunk_blocks: usize,
    /// [`crc32c_shift`] of a whole block.
    block_shift: u32,
    /// One past the last offset pushed so far.
    next_offset: Option<i64>,
}

impl Chunker {
    /// A chunker for the segment (`segment_start_offset`, `segment_id`) aiming at `target` bytes a chunk
    /// (a batch larger than that is a chunk of its own), with blocks of `block_size` bytes (at least 1).
    pub fn new(target: u64, block_size: u32, segment_start_offset: i64, segment_id: Uuid) -> Self {
        let table = ChunkTable { block_size: block_size.max(1), ..ChunkTable::default() };
        let block_shift = crc32c_shift(table.block_size as u64);
        Chunker {
            block_shift,
            target: target.max(1),
            segment_start_offset,
            segment_id,
            table,
            open: None,
            block_fill: 0,
            block_crc: 0,
            chunk_blocks: 0,
            next_offset: None,
        }
    }

    /// Ends the open chunk: its last block, and its CRC-32C combined from its blocks' (no second pass over
    /// the bytes).
    fn close(&mut self) {
        if let Some(mut c) = self.open.take() {
            if self.block_fill > 0 {
                self.table.block_crcs.push(self.block_crc);
            }
            let n = self.chunk_blocks + (self.block_fill > 0) as usize;
            let blocks = &self.table.block_crcs[self.table.block_crcs.len() - n..];
            let bs = self.table.block_size as u64;
            let mut crc = 0u32;
            let mut left = c.data_length as u64;
            for &b in blocks {
                let len = left.min(bs);
                let shift = if len == bs { self.block_shift } else { crc32c_shift(len) };
                crc = crc32c_combine(crc, b, shift);
                left -= len;
            }
            c.rdi.crc32c = crc;
            c.rdi.stored_crc32c = crc;
            self.table.chunks.push(c);
            (self.block_fill, self.block_crc, self.chunk_blocks) = (0, 0, 0);
        }
    }

    /// Adds the next batch; its bytes (still in cache from the batch check) are summed into the CRC-32C of
    /// the blocks they fall in. A legacy wrapper's first offset is inside its compressed bytes: a chunk that
    /// starts with one records the lowest offset it can hold, one past the previous batch's last (the
    /// segment's start offset for the first), so that the chunk's offsets are never claimed too high.
    pub fn push(&mut self, batch: &Batch<'_>) {
        let size = batch.size() as u64;
        let first_offset = if batch.is_legacy_wrapper() {
            self.next_offset.unwrap_or(self.segment_start_offset).min(batch.base_offset())
        } else {
            batch.base_offset()
        };
        self.next_offset = batch.last_offset().checked_add(1);
        if let Some(open) = &self.open
            && open.data_length as u64 + size > self.target
        {
            self.close();
        }
        let open = self.open.get_or_insert(ChunkEntry {
            first_offset,
            last_offset: batch.last_offset(),
            first_timestamp: batch.base_timestamp(),
            last_timestamp: batch.max_timestamp(),
            data_length: 0,
            rdi: Rdi {
                object: RdiObject::Log,
                transform: Transform::None,
                segment_start_offset: self.segment_start_offset,
                segment_id: self.segment_id,
                stored_position: batch.position(),
                stored_length: 0,
                crc32c: 0,
                original_position: batch.position(),
                stored_crc32c: 0,
            },
        });
        open.last_offset = batch.last_offset();
        open.last_timestamp = open.last_timestamp.max(batch.max_timestamp());
        open.data_length += size as u32;
        open.rdi.stored_length = open.data_length;
        let mut bytes = batch.bytes();
        while !bytes.is_empty() {
            let n = ((self.table.block_size - self.block_fill) as usize).min(bytes.len());
            self.block_crc = crate::checksum::crc32c_append(self.block_crc, &bytes[..n]);
            self.block_fill += n as u32;
            bytes = &bytes[n..];
            if self.block_fill == self.table.block_size {
                self.table.block_crcs.push(self.block_crc);
                (self.block_fill, self.block_crc) = (0, 0);
                self.chunk_blocks += 1;
            }
        }
    }

    /// The chunk table.
    pub fn finish(mut self) -> ChunkTable {
        self.close();
        self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::batch::BatchIter;
    use crate::testkit::log_writer::{Record, encode_batch};

    fn batches(n: usize) -> Vec<u8> {
        let mut log = Vec::new();
        for i in 0..n {
            let recs: Vec<Record> = (0..3)
                .map(|j| Record {
                    value: Some(vec![b'x'; 100 + i]),
                    timestamp: 1000 + (i * 3 + j) as i64,
                    ..Default::default()
                })
                .collect();
            log.extend(encode_batch(i as i64 * 3, 0, &recs));
        }
        log
    }

    #[test]
    fn chunks_cover_the_log_on_batch_boundaries_with_true_crcs() {
        let log = batches(20);
        for verify in [true, false] {
            let mut c = Chunker::new(1000, 100, 0, Uuid::ONE);
            for b in BatchIter::new(&log, 0, verify) {
                let b = b.unwrap();
                c.push(&b);
            }
            let table = c.finish();
            assert_eq!(table.block_size, 100);
            let chunks = table.chunks;
            let mut blocks = table.block_crcs.iter();
            assert!(chunks.len() > 3, "{}", chunks.len());
            let mut pos = 0;
            for ch in &chunks {
                assert_eq!(ch.original_position(), pos);
                let data = &log[pos as usize..ch.end() as usize];
                ch.verify(data, "t").unwrap();
                assert_eq!(crate::checksum::crc32c(data), ch.rdi.crc32c);
                for block in data.chunks(100) {
                    assert_eq!(
                        blocks.next(),
                        Some(&crate::checksum::crc32c(block)),
                        "a CRC per block, from the chunk's start"
                    );
                }
                assert!(ch.data_length <= 1000 || ch.first_offset == ch.last_offset - 2);
                pos = ch.end();
            }
            assert_eq!(pos, log.len() as u64);
            assert_eq!(blocks.next(), None);
            assert_eq!(chunks[0].first_offset, 0);
            assert_eq!(chunks.last().unwrap().last_offset, 59);
        }
    }
}
