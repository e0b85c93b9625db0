//! The chunk entry: SR-32's remoteLogIndex entry, and the RDI (remote data identifier) it carries.
//!
//! Entry layout (big-endian): magic i16 (0), length i16 (bytes after this field), crc u32 (CRC-32C of the
//! bytes after the crc field), firstOffset i64, lastOffset i64, firstTimestamp i64, lastTimestamp i64,
//! dataLength u32 (the chunk's original length; SR-32's i32 read unsigned, so every length the encoder
//! writes reads back), rdiLength i16, rdi.
//!
//! Our RDI names the object, where the chunk is stored and where it belongs, apart: a transform (compression,
//! encryption) changes the stored position and length, never the original ones.
//! - version 2 (56 bytes, written by manifest versions 3 to 6 for a transformed chunk only): version 1's
//!   fields, then the CRC-32C u32 of the chunk's stored (transformed) bytes, so that damage to them is caught
//!   before they are undone, and every stored byte is covered by a check even where the transform would not
//!   notice (a zstd frame header field that does not change the output). For a chunk stored in frames it
//!   covers all its frames, so a read of the whole chunk is checked as any other's; a read of some frames
//!   checks each against its own CRC in the manifest's frame table;
//! - version 1 (52 bytes, written by manifest version 2, and by version 3 for a chunk stored as is):
//!   version u8 (1), object u8 (0 = a segment's `.log` object), transform u8 (0 = none; version 2 only:
//!   1 = zstd, 2 = AES-256-GCM, 3 = zstd then AES-256-GCM, 4 = zstd frames, 5 = zstd frames each then
//!   AES-256-GCM; 4 and 5 only in a manifest of version 5, whose frame table says where each frame is
//!   stored, see [`crate::format::manifest`]), reserved u8, the segment's start offset i64 and id (16 bytes) (which with the partition
//!   give the object key), stored position u64 (in the object), stored length u32, CRC-32C u32 of the
//!   chunk's original bytes, original position u64 (in the segment's `.log` file);
//! - version 0 (44 bytes, manifest version 1): the same without the original position, which then equals
//!   the stored position (chunks stored in place).
//!
//! The module's parts: the entry and its RDI (`entry.rs`); the [`Chunker`] that cuts a segment's batches into
//! chunks and computes their CRCs (`chunker.rs`); the combination of CRC-32Cs it and the transforms use
//! (`crc_combine.rs`).

mod chunker;
mod crc_combine;
mod entry;

pub use chunker::{ChunkTable, Chunker, DEFAULT_BLOCK_SIZE};
pub use crc_combine::{crc32c_combine, crc32c_shift};
pub use entry::{
    ChunkEntry, ENTRY_FIXED_LEN, ENTRY_MAGIC, RDI_LEN, RDI_V0_LEN, RDI_V2_LEN, Rdi, RdiObject, StoredFrame, Transform,
    frame_count,
};
