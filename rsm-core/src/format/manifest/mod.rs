//! The segment manifest: the commit point of a copy. Written last; a segment without one does not exist.
//!
//! Versioned binary, big-endian, ending in a CRC-32C of everything before it:
//! magic `RSMM`, version u16 (2 to 6, see below; 1 is still read); the segment metadata (topic, partition,
//! topic id, segment id, offsets, timestamps, broker id, size, leader epochs, custom metadata, state,
//! txn-index-empty; the pieces it writes as the wire encoding does are [`crate::format::segment_metadata`]'s);
//! the log object's
//! length and the chunk target size; for each of the five index types (Kafka's order) a presence byte,
//! position and length in the index bundle and a CRC-32C; the chunk count and the chunk table in SR-32
//! remoteLogIndex entry format; (version 2) the block size u32, the block count u32 and a CRC-32C u32 of every
//! block of every chunk; the CRC.
//!
//! Version 2 differs from version 1 in its chunk entries' RDIs (version 1 instead of 0), which keep a
//! chunk's original position in the `.log` apart from where it is stored (see [`crate::format::chunk`]), and
//! in the block CRC table, so that a read of any byte range is checked block by block. A version-1 manifest
//! has no block table: its blocks are its chunks, checked whole by their entries' CRCs.
//!
//! Version 3 is version 2 whose chunk table may hold transformed (compressed) chunks, whose entries carry
//! RDI version 2 (the stored bytes' CRC, see [`crate::format::chunk`] and [`crate::format::transform`]). It is
//! written only when at least one chunk is transformed: a manifest of chunks all stored as is stays version 2,
//! byte for byte what earlier builds wrote, and a build that predates transforms refuses a version-3 manifest
//! by its version rather than by a chunk it cannot undo. The block CRCs of a transformed chunk cover its
//! original bytes, like every chunk's, and a read checks them block by block as it does a plain chunk's: a
//! compressed chunk (of one zstd frame, as version 3 holds) is read whole but decompressed only up to the last
//! block a read wants. `log_length` is always the original `.log` file's length (the object is shorter when chunks
//! are compressed; the stored ranges say where each chunk is).
//!
//! Version 4 is version 3 with an encryption block after the block CRCs: the id of the key-encryption key
//! (KEK) as a length u8 (1 to 255) and its bytes, the wrap's nonce (12 bytes) and the wrapped data key (48
//! bytes: the key and its tag), see [`crate::crypto`]. It is written only for an encrypted segment, whose
//! chunks are all encrypted (transforms 2 and 3); older versions cannot hold an encrypted chunk. The
//! manifest's CRC covers the block; the wrap's tag authenticates the key, the segment and the KEK id.
//!
//! Version 5 is written when at least one chunk is stored in frames (`compression.frame.size`, transforms 4
//! and 5: the chunk's original bytes cut into frames of the frame size, whole blocks, each compressed as an
//! independent zstd frame and, with encryption, sealed on its own; see [`crate::format::transform`]), and
//! only then: a segment without such a chunk keeps versions 2 to 4, so older readers of it are not broken.
//! It is version 4's layout up to the block CRCs, then the frame size u32 (a non-zero multiple of the block
//! size), then the frame table: for each chunk whose transform is 4 or 5, in chunk order, for each of its
//! frames the stored length u32 and the CRC-32C u32 of the frame's stored bytes; then an encryption flag u8
//! (0 or 1) and, when 1, version 4's encryption block. A chunk's frame count is not stored: it is its
//! original length divided by the frame size, rounded up, and the decoder checks the whole table against the
//! bytes left before it allocates anything for it; each chunk's frames' stored lengths add up to exactly its
//! stored length. With the flag every chunk is encrypted (transforms 2, 3, 5), without it none is; transforms
//! 4 and 5 appear in no other version. A read of part of a chunk in frames reads the stored bytes of the
//! frames holding it only, checks each frame against its CRC before it is opened or decompressed, and what
//! it serves against the block CRCs.
//!
//! Version 6 is written for a segment whose data key a KEK provider wrapped (an AWS KMS key,
//! [`crate::crypto::Wrapped::Provider`]), and only then: segments under key files keep versions 4 and 5 byte for
//! byte. It is version 5's layout with two differences: the frame size may be 0, when no chunk is stored in
//! frames, and then no frame table follows; the encryption flag is 2, and the encryption block is the KEK id
//! (length u8, 1 to 255, and its bytes), then the provider's blob as a length u16 (1 to
//! [`MAX_PROVIDER_BLOB_LEN`](crate::crypto::MAX_PROVIDER_BLOB_LEN)) and its bytes. Every chunk of a
//! version-6 segment is encrypted.
//!
//! What each version holds beyond the sections every version has is stated once, in the table of
//! `versions.rs`, which the encoder (`encode.rs`) and the decoder (`decode.rs`, section by section) follow.

mod decode;
mod encode;
#[cfg(test)]
pub(crate) mod tests;
mod versions;

use crate::crypto::KeyEnvelope;
use crate::error::{Error, Result};
use crate::format::chunk::{ChunkEntry, StoredFrame};
use crate::model::{IndexType, RemoteLogSegmentMetadata};

/// The manifest magic.
pub const MAGIC: &[u8; 4] = b"RSMM";
/// The newest version this code writes and reads ([`PROVIDER_KEY_VERSION`]).
pub const VERSION: u16 = PROVIDER_KEY_VERSION;
/// The version this code writes for a segment whose data key a KEK provider (a KMS) wrapped.
pub const PROVIDER_KEY_VERSION: u16 = 6;
/// The version this code writes for a segment with a chunk stored in frames (transforms 4 and 5), encrypted
/// or not.
pub const FRAMED_VERSION: u16 = 5;
/// The version this code writes for an encrypted segment with no chunk stored in frames.
pub const ENCRYPTED_VERSION: u16 = 4;
/// The version this code writes for a manifest with a transformed chunk, none in frames, and no encryption.
pub const TRANSFORMED_VERSION: u16 = 3;
/// The version this code writes for a manifest whose chunks are all stored as is.
pub const UNTRANSFORMED_VERSION: u16 = 2;
/// The oldest version this code reads.
pub const OLDEST_VERSION: u16 = 1;

/// Where one index lies in the bundle object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct IndexLocation {
    /// Byte position in the bundle.
    pub position: u64,
    /// Length in bytes.
    pub length: u64,
    /// CRC-32C of the index bytes.
    pub crc32c: u32,
}

/// The frame table of a version-5 manifest: where each frame of the chunks stored in frames is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FrameTable {
    /// The original bytes of each frame (a chunk's last frame may be shorter): a non-zero multiple of the
    /// block size.
    pub frame_size: u32,
    /// For each chunk, in order: its frames ([`frame_count`](crate::format::chunk::frame_count) of them) when
    /// it is stored in frames, else none.
    pub chunks: Vec<Vec<StoredFrame>>,
}

/// Everything a reader needs to serve a segment, from this object alone.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Manifest {
    /// The segment's metadata as given to the copy.
    pub metadata: RemoteLogSegmentMetadata,
    /// Length of the segment's original `.log` file, which the chunks tile (the `.log` object is that long
    /// when no chunk is transformed).
    pub log_length: u64,
    /// The chunk target size used by the copy.
    pub chunk_target: u32,
    /// Each index type's place in the bundle, by [`IndexType::ordinal`]; `None` when absent.
    pub indexes: [Option<IndexLocation>; 5],
    /// The chunk table, tiling `[0, log_length)` in order.
    pub chunks: Vec<ChunkEntry>,
    /// The size of the CRC blocks inside each chunk (blocks start at each chunk's start), or 0 when there
    /// are none (version 1): then each chunk is one block, checked by its entry's CRC.
    pub block_size: u32,
    /// The CRC-32C of every block, chunk after chunk.
    pub block_crcs: Vec<u32>,
    /// The segment's data key, wrapped (version 4, or 5 with its flag: an encrypted segment); `None` when not
    /// encrypted.
    pub encryption: Option<KeyEnvelope>,
    /// The frame table (version 5: some chunk is stored in frames); `None` before version 5.
    pub frames: Option<FrameTable>,
    /// Where the segment's data was found in the store: not encoded (the store's layout, not the
    /// manifest's), set by the read that found the manifest; [`StoredAs::Split`] when decoded alone.
    pub stored_as: StoredAs,
}

/// Where a segment's stored log and index bundle lie in the store, as the reader of its manifest found it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoredAs {
    /// In objects of their own: `.log` and `.indexes` (the manifest in `.manifest`).
    #[default]
    Split,
    /// In one `.segment` object: the stored log from byte 0, then the index bundle from `indexes_position`,
    /// then the manifest from `manifest_position` and the trailer ([`crate::format::trailer`]).
    Single {
        /// Where the index bundle starts in the object (the stored log's length).
        indexes_position: u64,
        /// Where the manifest starts in the object.
        manifest_position: u64,
        /// The manifest's length.
        manifest_length: u32,
    },
}

/// How many blocks of `block_size` a chunk of `len` bytes has.
fn blocks_in(len: u32, block_size: u32) -> usize {
    (len as usize).div_ceil(block_size as usize)
}

impl Manifest {
    /// The location of `index` in the bundle.
    pub fn index(&self, index: IndexType) -> Option<IndexLocation> {
        self.indexes[index.ordinal()]
    }
    /// The frame size and the frames of chunk `i`, when it is stored in frames (and the table has it).
    pub fn frames_of(&self, i: usize) -> Option<(u32, &[StoredFrame])> {
        let c = self.chunks.get(i)?;
        let t = self.frames.as_ref().filter(|_| c.rdi.transform.is_framed())?;
        Some((t.frame_size, t.chunks.get(i)?.as_slice()))
    }

    /// The original range of the block holding byte `position` (its chunk when there are no block CRCs).
    /// A compressed chunk has its blocks too: only as many of its frames as a read wants are read and
    /// decompressed (for one frame, it is read whole and decompressed up to the last block the read wants),
    /// and what is served is checked block by block.
    fn block_at(&self, position: u64) -> Option<std::ops::Range<u64>> {
        let c = self.chunks.get(self.chunk_at_position(position)?)?;
        if self.block_size == 0 {
            return Some(c.original_position()..c.end());
        }
        let bs = self.block_size as u64;
        let start = c.original_position() + (position - c.original_position()) / bs * bs;
        Some(start..(start + bs).min(c.end()))
    }

    /// `range` widened to whole blocks (whole chunks when there are no block CRCs), so that a read of it can
    /// be checked before any of its bytes are used; cut at the end of the last chunk.
    pub fn align(&self, range: std::ops::Range<u64>) -> std::ops::Range<u64> {
        let end = range.end.min(self.chunks.last().map_or(0, |c| c.end()));
        if range.start >= end {
            return range.start..range.start;
        }
        let start = self.block_at(range.start).map_or(range.start, |b| b.start);
        let end = self.block_at(end - 1).map_or(end, |b| b.end);
        start..end
    }

    /// The end of the run of whole blocks (whole chunks without block CRCs) from `start` that ends by
    /// `limit`: `start` itself when no block starts there or the first one ends past `limit`.
    pub fn whole_blocks_end(&self, start: u64, limit: u64) -> u64 {
        let mut at = start;
        while let Some(b) = self.block_at(at) {
            if b.start != at || b.end > limit {
                break;
            }
            at = b.end;
        }
        at
    }

    /// Checks `bytes`, the original bytes of the whole-block range `range` (see [`Manifest::align`]), block by
    /// block against the block CRCs (chunk by chunk against the entries' CRCs when there are none); `what`
    /// (the object key) is named in errors.
    pub fn check_blocks(&self, range: std::ops::Range<u64>, bytes: &[u8], what: &str) -> Result<()> {
        if range.is_empty() && bytes.is_empty() {
            return Ok(());
        }
        if bytes.len() as u64 != range.end - range.start {
            return Err(Error::corrupt(format!(
                "{what}: {} bytes for the range {}..{}",
                bytes.len(),
                range.start,
                range.end
            )));
        }
        let Some(first) = self.chunk_at_position(range.start) else {
            return Err(Error::invalid(format!("{what}: {} is in no chunk", range.start)));
        };
        let mut block = self.chunks[..first].iter().map(|c| self.blocks_of(c)).sum::<usize>();
        for c in self.chunks[first..].iter().take_while(|c| c.original_position() < range.end) {
            let here = |from: u64, to: u64| {
                if from < range.start || to > range.end {
                    return Err(Error::invalid(format!(
                        "{what}: the range {}..{} is not aligned to blocks ({from}..{to})",
                        range.start, range.end
                    )));
                }
                Ok(&bytes[(from - range.start) as usize..(to - range.start) as usize])
            };
            if self.block_size == 0 {
                c.verify(here(c.original_position(), c.end())?, what)?;
                continue;
            }
            let bs = self.block_size as u64;
            let mut at = c.original_position();
            while at < c.end() {
                let to = (at + bs).min(c.end());
                if to > range.start && at < range.end {
                    let crc = crate::checksum::crc32c(here(at, to)?);
                    let want = self.block_crcs[block];
                    if crc != want {
                        return Err(Error::corrupt(format!(
                            "{what}: block {at}..{to} (chunk at position {}, offsets {}..={}) has CRC-32C {crc:#010x}, its manifest says {want:#010x}",
                            c.original_position(),
                            c.first_offset,
                            c.last_offset
                        )));
                    }
                }
                at = to;
                block += 1;
            }
        }
        Ok(())
    }

    /// How many block CRCs chunk `c` has.
    fn blocks_of(&self, c: &ChunkEntry) -> usize {
        if self.block_size == 0 { 0 } else { blocks_in(c.data_length, self.block_size) }
    }

    /// Index of the chunk holding byte `position`.
    pub fn chunk_at_position(&self, position: u64) -> Option<usize> {
        let i = self.chunks.partition_point(|c| c.end() <= position);
        (i < self.chunks.len() && self.chunks[i].original_position() <= position).then_some(i)
    }

    /// Index of the first chunk holding an offset at or after `offset`.
    pub fn chunk_for_offset(&self, offset: i64) -> Option<usize> {
        let i = self.chunks.partition_point(|c| c.last_offset < offset);
        (i < self.chunks.len()).then_some(i)
    }

    /// Index of the first chunk holding a timestamp at or after `timestamp`.
    pub fn chunk_for_timestamp(&self, timestamp: i64) -> Option<usize> {
        self.chunks.iter().position(|c| c.last_timestamp >= timestamp)
    }
}
