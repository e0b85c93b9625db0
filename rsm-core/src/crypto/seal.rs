//! The sealing (AES-256-GCM) of a segment's chunks under its data key ([`DataKey`]): a chunk as one
//! piece, block by block, or frame by frame, each piece stored as `nonce ‖ ciphertext ‖ tag` and bound by
//! its associated data to its place ([`ChunkBinding`], [`chunk_aad`]).

use super::{CHUNK_OVERHEAD, KeyBytes, NONCE_BYTES, TAG_BYTES, cipher, random};
use crate::error::{Error, Result};
use crate::model::Uuid;
use ring::aead::{Aad, LessSafeKey, Nonce};
use std::fmt;

/// What the encryption of a chunk binds it to ([`chunk_aad`]) and names it by in errors: the chunk as its
/// entry in the manifest describes it. A chunk entry (`format::chunk::ChunkEntry`) converts into it, so
/// this module, which the formats use, needs nothing of them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkBinding {
    /// Id of the segment owning the chunk.
    pub segment_id: Uuid,
    /// Start offset of the segment owning the chunk.
    pub segment_start_offset: i64,
    /// The object holding the chunk, by its id in the chunk entry.
    pub object: u8,
    /// The chunk's transform, by its id in the chunk entry.
    pub transform: u8,
    /// Byte position of the chunk's original bytes in the segment's `.log` file.
    pub original_position: u64,
    /// Length of the chunk's original bytes.
    pub data_length: u32,
    /// Base offset of the chunk's first batch (named in errors).
    pub first_offset: i64,
    /// Last offset of the chunk's last batch (named in errors).
    pub last_offset: i64,
}

/// A segment's data key, unwrapped. `Debug` prints `[redacted]`.
pub struct DataKey(LessSafeKey);

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey([redacted])")
    }
}

impl DataKey {
    /// The data key of these key bytes (a data key generated, or unwrapped).
    pub(super) fn from_key_bytes(key: &KeyBytes) -> Self {
        DataKey(cipher(key.expose()))
    }

    /// Encrypts `plain` as chunk `index` (whose entry, transform included, is `c`): `nonce ‖ ciphertext ‖ tag`.
    pub fn seal_chunk(&self, c: impl Into<ChunkBinding>, index: usize, plain: &[u8]) -> Result<Vec<u8>> {
        let c = &c.into();
        let nonce = random::<NONCE_BYTES>("chunk nonce")?;
        let mut out = Vec::with_capacity(plain.len() + CHUNK_OVERHEAD);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let mut body = out.split_off(NONCE_BYTES);
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(chunk_aad(c, index)), &mut body)
            .map_err(|_| Error::invalid(format!("chunk at position {}: cannot encrypt", c.original_position)))?;
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Decrypts the stored bytes of chunk `index` (entry `c`); an error (never other bytes) when they were
    /// damaged, or belong to another chunk, position or segment. `what` names the object.
    pub fn open_chunk(&self, c: impl Into<ChunkBinding>, index: usize, stored: &[u8], what: &str) -> Result<Vec<u8>> {
        let c = &c.into();
        let fail = |why: &str| corrupt_chunk(c, index, what, why);
        if stored.len() < CHUNK_OVERHEAD {
            return Err(fail(&format!(
                "{} stored bytes, fewer than an encrypted chunk's {CHUNK_OVERHEAD}",
                stored.len()
            )));
        }
        let (nonce, body) = stored.split_at(NONCE_BYTES);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| fail("bad nonce"))?;
        let mut buf = body.to_vec();
        let plain_len = self
            .0
            .open_in_place(nonce, Aad::from(chunk_aad(c, index)), &mut buf)
            .map_err(|_| {
                fail("does not decrypt under the segment's data key (damaged, or moved from another chunk or segment)")
            })?
            .len();
        buf.truncate(plain_len);
        Ok(buf)
    }
}

/// The error of chunk `index` (entry `c`) of the object `what` whose stored bytes do not open: `why`.
fn corrupt_chunk(c: &ChunkBinding, index: usize, what: &str, why: &str) -> Error {
    Error::corrupt(format!(
        "{what}: chunk {index} at position {} (offsets {}..={}) of segment {}: {why}",
        c.original_position, c.first_offset, c.last_offset, c.segment_id
    ))
}

/// The stored length of `len` original bytes sealed block by block ([`DataKey::seal_blocks`]) in blocks of
/// `block` bytes (the whole as one block when `block` is 0): the bytes, and a nonce and a tag per block.
pub fn sealed_blocks_len(len: u64, block: u32) -> u64 {
    let block = if block == 0 { len.max(1) } else { block as u64 };
    len + len.div_ceil(block) * CHUNK_OVERHEAD as u64
}

/// The associated data of block `block` of chunk `index` (entry `c`): the chunk's ([`chunk_aad`]) and the
/// block's index in the chunk.
fn block_aad(c: &ChunkBinding, index: usize, block: u64) -> Vec<u8> {
    let mut a = chunk_aad(c, index);
    a.extend_from_slice(&block.to_be_bytes());
    a
}

impl DataKey {
    /// Encrypts `plain`, the original bytes of chunk `index` (entry `c`, transform included), block by block
    /// in blocks of `block` bytes (the chunk's integrity blocks; the whole chunk as one when 0): each block
    /// stored as `nonce ‖ ciphertext ‖ tag` and bound to its place, so a read of some blocks decrypts and
    /// authenticates those blocks only.
    pub fn seal_blocks(&self, c: impl Into<ChunkBinding>, index: usize, plain: &[u8], block: u32) -> Result<Vec<u8>> {
        let c = &c.into();
        let step = if block == 0 { plain.len().max(1) } else { block as usize };
        let mut out = Vec::with_capacity(sealed_blocks_len(plain.len() as u64, block) as usize);
        for (k, piece) in plain.chunks(step).enumerate() {
            let nonce = random::<NONCE_BYTES>("block nonce")?;
            out.extend_from_slice(&nonce);
            let at = out.len();
            out.extend_from_slice(piece);
            let tag = self
                .0
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::from(block_aad(c, index, k as u64)),
                    &mut out[at..],
                )
                .map_err(|_| Error::invalid(format!("chunk at position {}: cannot encrypt", c.original_position)))?;
            out.extend_from_slice(tag.as_ref());
        }
        Ok(out)
    }

    /// Decrypts `stored`, the sealed blocks ([`DataKey::seal_blocks`], blocks of `block` bytes) holding the
    /// original bytes `within` of chunk `index` (entry `c`), relative to the chunk's start; `within` starts
    /// on a block and ends on one or at the chunk's end. An error (never other bytes) when a block was
    /// damaged or belongs to another block, chunk, position or segment. `what` names the object.
    pub fn open_blocks(
        &self,
        c: impl Into<ChunkBinding>,
        index: usize,
        within: std::ops::Range<u64>,
        stored: &[u8],
        block: u32,
        what: &str,
    ) -> Result<Vec<u8>> {
        let c = &c.into();
        let fail = |why: String| corrupt_chunk(c, index, what, &why);
        let len = c.data_length as u64;
        let step = if block == 0 { len.max(1) } else { block as u64 };
        if !within.start.is_multiple_of(step)
            || within.end > len
            || (!within.end.is_multiple_of(step) && within.end != len)
        {
            return Err(Error::invalid(format!(
                "{what}: chunk {index} at position {}: {}..{} is not whole blocks of {step} bytes",
                c.original_position, within.start, within.end
            )));
        }
        let want = sealed_blocks_len(within.end - within.start, step as u32);
        if stored.len() as u64 != want {
            return Err(fail(format!(
                "{} stored bytes for its bytes {}..{}, {want} expected",
                stored.len(),
                within.start,
                within.end
            )));
        }
        // Each block's ciphertext and tag are copied into `out` and decrypted there, the tag then cut off:
        // one copy of the bytes in all.
        let mut out = crate::backend::UNDONE.take((within.end - within.start) as usize + TAG_BYTES);
        let mut rest = stored;
        let mut at = within.start;
        while at < within.end {
            let n = (within.end - at).min(step) as usize;
            let (piece, tail) = rest.split_at(NONCE_BYTES + n + TAG_BYTES);
            rest = tail;
            let (nonce, body) = piece.split_at(NONCE_BYTES);
            let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| fail("bad nonce".into()))?;
            let from = out.len();
            out.extend_from_slice(body);
            self.0.open_in_place(nonce, Aad::from(block_aad(c, index, at / step)), &mut out[from..]).map_err(|_| {
                fail(format!(
                    "block at {at} does not decrypt under the segment's data key (damaged, or moved from another block, chunk or segment)"
                ))
            })?;
            out.truncate(from + n);
            at += n as u64;
        }
        Ok(out)
    }
}

/// The associated data of frame `frame` of chunk `index` (entry `c`), the frame holding the chunk's original
/// bytes `original` (positions in the `.log`): the chunk's ([`chunk_aad`]), then the frame's index in the
/// chunk and its original position and length.
fn frame_aad(c: &ChunkBinding, index: usize, frame: usize, original: &std::ops::Range<u64>) -> Vec<u8> {
    let mut a = chunk_aad(c, index);
    a.extend_from_slice(b"frame\0\0\0");
    a.extend_from_slice(&(frame as u64).to_be_bytes());
    a.extend_from_slice(&original.start.to_be_bytes());
    a.extend_from_slice(&(original.end - original.start).to_be_bytes());
    a
}

impl DataKey {
    /// Encrypts `plain`, frame `frame` of chunk `index` (entry `c`, transform included) holding the chunk's
    /// original bytes `original` (positions in the `.log`), appending `nonce ‖ ciphertext ‖ tag` to `out`:
    /// bound to its place, so a frame moved to another place, chunk or segment does not open.
    pub fn seal_frame(
        &self,
        c: impl Into<ChunkBinding>,
        index: usize,
        frame: usize,
        original: std::ops::Range<u64>,
        plain: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let c = &c.into();
        let nonce = random::<NONCE_BYTES>("frame nonce")?;
        out.reserve(plain.len() + CHUNK_OVERHEAD);
        out.extend_from_slice(&nonce);
        let at = out.len();
        out.extend_from_slice(plain);
        let tag = self
            .0
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(frame_aad(c, index, frame, &original)),
                &mut out[at..],
            )
            .map_err(|_| Error::invalid(format!("chunk at position {}: cannot encrypt", c.original_position)))?;
        out.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// Decrypts `stored`, the sealed frame `frame` ([`DataKey::seal_frame`]) of chunk `index` (entry `c`)
    /// holding the original bytes `original`, into `out` (replacing what it held); an error (never other
    /// bytes) when it was damaged or belongs to another frame, chunk, position or segment. `what` names the
    /// object.
    #[allow(clippy::too_many_arguments)]
    pub fn open_frame(
        &self,
        c: impl Into<ChunkBinding>,
        index: usize,
        frame: usize,
        original: std::ops::Range<u64>,
        stored: &[u8],
        what: &str,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let c = &c.into();
        let fail = |why: String| corrupt_chunk(c, index, what, &why);
        if stored.len() < CHUNK_OVERHEAD {
            return Err(fail(format!(
                "frame {frame}: {} stored bytes, fewer than an encrypted frame's {CHUNK_OVERHEAD}",
                stored.len()
            )));
        }
        let (nonce, body) = stored.split_at(NONCE_BYTES);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| fail(format!("frame {frame}: bad nonce")))?;
        out.clear();
        out.extend_from_slice(body);
        let plain_len = self
            .0
            .open_in_place(nonce, Aad::from(frame_aad(c, index, frame, &original)), out)
            .map_err(|_| {
                fail(format!(
                    "frame {frame} (original bytes {}..{}) does not decrypt under the segment's data key (damaged, \
                     or moved from another frame, chunk or segment)",
                    original.start, original.end
                ))
            })?
            .len();
        out.truncate(plain_len);
        Ok(())
    }
}

/// The associated data of chunk `index` (entry `c`): the segment id and start offset, the object, the
/// chunk's index, original position and length, and its transform.
pub fn chunk_aad(c: &ChunkBinding, index: usize) -> Vec<u8> {
    let mut a = Vec::with_capacity(64);
    a.extend_from_slice(b"rsm-chunk-v1\0\0\0\0");
    a.extend_from_slice(&c.segment_id.to_bytes());
    a.extend_from_slice(&c.segment_start_offset.to_be_bytes());
    a.push(c.object);
    a.push(c.transform);
    a.extend_from_slice(&(index as u64).to_be_bytes());
    a.extend_from_slice(&c.original_position.to_be_bytes());
    a.extend_from_slice(&c.data_length.to_be_bytes());
    a
}
