//! Chunk transforms: per-chunk zstd compression, decided chunk by chunk when a segment is copied and undone
//! when the chunk is read.
//!
//! Design:
//! - **What is stored.** A segment's `.log` object is its chunks' stored bytes back to back, in order: a chunk
//!   left as it is occupies its original bytes; a compressed chunk (`compression.frame.size`, 256 KiB by
//!   default) its original bytes cut into frames of the frame size (whole blocks; the last frame may be
//!   shorter), each compressed as an independent zstd frame (no dictionary, so each frame decodes alone),
//!   the frames back to back in order ([`Transform::ZstdFrames`]; with encryption each frame then sealed on
//!   its own, [`Transform::ZstdFramesAes256Gcm`]); with `compression.frame.size=0` one zstd frame of the
//!   whole chunk ([`Transform::Zstd`], the format before frames). The chunk entry says which ([`Transform`])
//!   and keeps the original position and length (the `.log` file's) apart from the stored ones (the
//!   object's); the manifest's frame table (version 5) gives each frame's stored length and CRC-32C.
//! - **What the CRCs cover.** The entry's CRC-32C and the manifest's block CRCs cover the chunk's *original*
//!   bytes, compressed or not, so every reader checks what it serves the same way. A compressed chunk's entry
//!   (RDI version 2) adds the CRC-32C of its *stored* bytes: they are checked before zstd sees them, so a
//!   damaged stored byte is caught even where the decoder would not notice it, and never decodes to other
//!   bytes that are then served.
//! - **How a read maps onto a compressed chunk.** A read of part of a chunk in frames
//!   ([`crate::format::manifest::Manifest::align`] widens it to whole blocks) is one ranged read of the stored
//!   bytes of the frames holding it ([`stored_frames`]); each frame's stored length and CRC-32C are checked
//!   against the frame table before it is opened or decompressed ([`undo_frames`]), and the last frame is
//!   decompressed only up to the read's last block: a 1 MiB fetch in the middle of a 4 MiB chunk reads and
//!   decompresses about 1.25 MiB of it (5 frames of 256 KiB), not the 2.5 MiB on average up to its last
//!   block from the chunk's start. A read of a whole chunk reads all its frames and checks the entry's stored
//!   CRC (over all of them) and, decompressed, its length and original CRC. A chunk of one frame is read
//!   whole: its stored CRC is checked, then a read to the chunk's end decompresses it all and checks the
//!   length and the original CRC, a read that ends before decompresses only up to its last block. Either
//!   way the reader checks what it serves against the manifest's block CRCs before it serves a byte.
//! - **Memory.** Decompression never allocates by a length read from a zstd frame: its output buffer has the
//!   capacity the entry's original length gives ([`ChunkEntry::data_length`], bounded by the manifest's
//!   checked chunk table; for frames, the frames' original lengths the frame size gives), a decoder that
//!   streams refuses a window larger than the frame, and a frame that decodes to more or fewer bytes is
//!   corrupt.
//! - **When a chunk is compressed.** With the heuristic on, a chunk most of whose bytes are in batches the
//!   producer already compressed (record batch attributes' codec other than none) is left as it is without
//!   trying, and one whose compression would save less than `min_saving_percent` of its bytes is left as it is
//!   after trying (the saving of all its frames together); with the heuristic off every chunk is compressed.
//!   Frames cost a little ratio (each starts without the history of the ones before it: about 4% more
//!   stored bytes of JSON-like records at 256 KiB, 0.158 of the original against 0.152 for one frame per
//!   4 MiB chunk) and nothing at copy (one zstd context compresses them one after the other).

//!
//! The module's parts: deciding and compressing a chunk when a segment is copied, and the entry that says
//! what was stored (`compress.rs`); checking and undoing stored bytes when a chunk is read, whole, block by
//! block or frame by frame (`undo.rs`).
//!
//! [`Transform`]: crate::format::chunk::Transform
//! [`Transform::Zstd`]: crate::format::chunk::Transform::Zstd
//! [`Transform::ZstdFrames`]: crate::format::chunk::Transform::ZstdFrames
//! [`Transform::ZstdFramesAes256Gcm`]: crate::format::chunk::Transform::ZstdFramesAes256Gcm
//! [`ChunkEntry::data_length`]: crate::format::chunk::ChunkEntry::data_length

mod compress;
#[cfg(test)]
mod tests;
mod undo;

pub use compress::{
    ChunkCompressor, CompressionConfig, DEFAULT_FRAME_SIZE, Decision, Frames, compressed_entry, framed_entry,
    producer_compressed_bytes, transformed_entry,
};
pub use undo::{
    stored_blocks, stored_frames, undo, undo_blocks, undo_chunk, undo_chunk_prefix, undo_frames, undoes_by_block,
};
