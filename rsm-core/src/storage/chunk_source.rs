//! The seam between the fetch planner and the store: where a chunk's original bytes come from.
//!
//! The planner works in original positions of the segment's `.log` file only; a [`ChunkSource`] turns a
//! range of those into bytes. [`BackendChunks`] reads the stored object: a run of chunks stored as they are
//! is one ranged read; of a chunk compressed in frames (manifest version 5) only the frames holding the
//! range are read, in one ranged read, and undone (checked, opened, decompressed) frame by frame; of a
//! chunk only encrypted only the blocks holding the range; any other transformed chunk (one zstd frame) is
//! read whole at its stored position and length, which the chunk entries keep apart from the original ones,
//! and undone there ([`crate::format::transform`]). A chunk cache wraps a source, so it keeps original
//! (decompressed), checked chunks.

use super::layout::placement;
use crate::backend::{StorageBackend, UNDONE};
use crate::crypto::{DataKey, DataKeyCache, KeyRing};
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::format::transform;
use async_trait::async_trait;
use bytes::Bytes;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// Where the original bytes of a segment's chunks come from.
#[async_trait]
pub trait ChunkSource: Send + Sync + fmt::Debug + 'static {
    /// The original bytes `range` of the `.log` of the segment `manifest` describes, exactly
    /// `range.end - range.start` of them or an error. `range` lies inside the manifest's chunks (it may
    /// start or end inside one, and span several).
    async fn read(&self, manifest: &Arc<Manifest>, range: Range<u64>) -> Result<Bytes>;

    /// Whether the bytes this source returns were already checked against the manifest's CRCs (a cache
    /// keeps only checked chunks); the fetch path then does not check them again.
    fn checks(&self) -> bool {
        false
    }

    /// Drops whatever the source keeps of the segment `segment` (a cache's entries), once it is deleted.
    fn forget(&self, segment: &crate::model::Uuid) {
        let _ = segment;
    }
}

/// Chunks read from the backend: a range over chunks stored as they are is one ranged read of the
/// segment's `.log` object, at the stored positions the chunk entries give. Of a chunk stored in frames
/// (compressed, and encrypted frame by frame or not) the range touches, one ranged read of the stored bytes
/// of the frames holding the range ([`transform::stored_frames`]), each frame checked against the frame
/// table before it is opened and decompressed, the last only up to the range's end
/// ([`transform::undo_frames`]); a whole chunk is also checked against its entry. Of a chunk encrypted and
/// not compressed, which is sealed block by block, only the blocks the range touches are read and
/// decrypted. Any other transformed chunk (one zstd frame) is one ranged read of its whole stored range,
/// checked and undone ([`transform::undo_chunk_prefix`]: only as far as the range wants). The part the range
/// wants is cut from what is undone; the caller checks it against the manifest's block CRCs.
#[derive(Debug)]
pub struct BackendChunks {
    backend: Arc<dyn StorageBackend>,
    key_prefix: String,
    /// Each segment's data key, unwrapped once (a KMS is asked once per segment).
    keys: Option<DataKeyCache>,
}

/// Segments' data keys a [`BackendChunks`] keeps unwrapped (about 0.5 KiB each).
const DATA_KEYS_KEPT: usize = 4096;

/// One ranged read of a [`BackendChunks`] read: the stored range, and the chunk to undo when transformed.
#[derive(Debug, PartialEq, Eq)]
struct StoredRead {
    stored: Range<u64>,
    /// The transformed chunk whose stored range this is, with the part of the original bytes it gives that
    /// is wanted.
    undo: Option<(usize, Range<usize>)>,
    /// For a chunk sealed block by block ([`transform::undoes_by_block`]) or stored in frames: the original
    /// bytes (whole blocks or frames, relative to the chunk's start) of the blocks or frames this read
    /// covers, then undone alone (the wanted part is relative to their start); `None`: the read is the
    /// chunk's whole stored range.
    blocks: Option<Range<u64>>,
    /// For a chunk stored in frames: the frames this read covers.
    frames: Option<Range<usize>>,
}

impl BackendChunks {
    /// Chunks of the segments under `key_prefix` in `backend`.
    pub fn new(backend: Arc<dyn StorageBackend>, key_prefix: String) -> Self {
        BackendChunks { backend, key_prefix, keys: None }
    }

    /// The same source decrypting encrypted segments with the KEKs of `keyring` (`encryption.*`).
    pub fn with_keyring(mut self, keyring: Option<Arc<KeyRing>>) -> Self {
        self.keys = keyring.map(|k| DataKeyCache::new(k, DATA_KEYS_KEPT));
        self
    }

    /// The data key of the segment `manifest` describes, unwrapped (once per segment), or `None` when it is
    /// not encrypted.
    async fn data_key(&self, manifest: &Manifest) -> Result<Option<Arc<DataKey>>> {
        let Some(envelope) = &manifest.encryption else { return Ok(None) };
        let id = &manifest.metadata.remote_log_segment_id;
        let keys = self.keys.as_ref().ok_or_else(|| {
            Error::config(
                crate::crypto::ENCRYPTION_KEYS_KEY,
                format!(
                    "segment {id} is encrypted under key encryption key `{}`, and no keyring is configured",
                    envelope.kek_id
                ),
            )
        })?;
        Ok(Some(keys.get(envelope, id.id, manifest.metadata.start_offset).await?))
    }

    /// The stored reads that give the original bytes `range`, in order: runs of chunks stored as they are,
    /// one after another, are one read each; each transformed chunk is a read of its own, whole.
    fn plan(manifest: &Manifest, key: &str, range: &Range<u64>) -> Result<Vec<StoredRead>> {
        let first = manifest
            .chunk_at_position(range.start)
            .ok_or_else(|| Error::invalid(format!("object {key}: position {} is in no chunk", range.start)))?;
        let mut reads: Vec<StoredRead> = Vec::new();
        for (i, c) in
            manifest.chunks.iter().enumerate().skip(first).take_while(|(_, c)| c.original_position() < range.end)
        {
            let (from, to) = (range.start.max(c.original_position()), range.end.min(c.end()));
            if let Some((frame_size, table)) = manifest.frames_of(i) {
                let part = from - c.original_position()..to - c.original_position();
                let (frames, within, stored) = transform::stored_frames(c, table, frame_size, &part);
                let wanted = (part.start - within.start) as usize..(part.end - within.start) as usize;
                reads.push(StoredRead { stored, undo: Some((i, wanted)), blocks: Some(within), frames: Some(frames) });
                continue;
            }
            if c.is_transformed() && transform::undoes_by_block(c) {
                let (within, stored) = transform::stored_blocks(
                    c,
                    &(from - c.original_position()..to - c.original_position()),
                    manifest.block_size,
                );
                let wanted = (from - c.original_position() - within.start) as usize
                    ..(to - c.original_position() - within.start) as usize;
                reads.push(StoredRead { stored, undo: Some((i, wanted)), blocks: Some(within), frames: None });
                continue;
            }
            if c.is_transformed() {
                let wanted = (from - c.original_position()) as usize..(to - c.original_position()) as usize;
                reads.push(StoredRead {
                    stored: c.stored_range(),
                    undo: Some((i, wanted)),
                    blocks: None,
                    frames: None,
                });
                continue;
            }
            let stored = c.stored_range().start + (from - c.original_position())
                ..c.stored_range().start + (to - c.original_position());
            match reads.last_mut() {
                Some(r) if r.undo.is_none() => {
                    if r.stored.end != c.stored_range().start {
                        return Err(Error::corrupt(format!(
                            "object {key}: chunk at position {} is not stored right after the one before it",
                            c.original_position()
                        )));
                    }
                    r.stored.end = stored.end;
                }
                _ => reads.push(StoredRead { stored, undo: None, blocks: None, frames: None }),
            }
        }
        Ok(reads)
    }

    /// One ranged read, exactly as long as asked.
    async fn get(&self, key: &str, stored: Range<u64>) -> Result<Bytes> {
        let bytes = self.backend.get_range(key, stored.clone()).await?;
        if bytes.len() as u64 != stored.end - stored.start {
            return Err(Error::corrupt(format!(
                "object {key}: read {}..{} returned {} bytes",
                stored.start,
                stored.end,
                bytes.len()
            )));
        }
        Ok(bytes)
    }
}

#[async_trait]
impl ChunkSource for BackendChunks {
    fn forget(&self, segment: &crate::model::Uuid) {
        if let Some(keys) = &self.keys {
            keys.forget(segment);
        }
    }

    async fn read(&self, manifest: &Arc<Manifest>, range: Range<u64>) -> Result<Bytes> {
        let key = placement(&self.key_prefix, manifest).log;
        let mut parts = Vec::new();
        let plan = Self::plan(manifest, &key, &range)?;
        let data_key = if plan.iter().any(|r| r.undo.is_some()) { self.data_key(manifest).await? } else { None };
        let block = manifest.block_size;
        for r in plan {
            let bytes = self.get(&key, r.stored).await?;
            parts.push(match r.undo {
                None => bytes,
                Some((i, wanted)) => {
                    let c = manifest.chunks[i];
                    // A fetch's frames are undone in place, a whole chunk's (a load) on the blocking pool, as
                    // reads are: a hop to the pool and back costs two wake-ups, and behind a chunk's load
                    // already on the pool it can wait for that load's end.
                    let original = crate::blocking::read_in_place_or_pool(wanted.end as u64, {
                        let key = key.clone();
                        let data_key = data_key.clone();
                        let manifest = manifest.clone();
                        let wanted_end = wanted.end as u64;
                        move || match (r.frames, r.blocks) {
                            (Some(frames), Some(within)) => transform::undo_frames(
                                &manifest,
                                i,
                                frames,
                                &bytes,
                                within.start + wanted_end,
                                &key,
                                data_key.as_deref(),
                            ),
                            (_, Some(within)) => {
                                transform::undo_blocks(&c, i, within, &bytes, &key, data_key.as_deref(), block)
                            }
                            (_, None) => {
                                transform::undo_chunk_prefix(&c, i, bytes, &key, data_key.as_deref(), block, wanted.end)
                            }
                        }
                    })
                    .await
                    .map_err(|e| e.context(format!("object {key}: chunk transform")))??;
                    original.slice(wanted)
                }
            });
        }
        Ok(join_parts(parts, range.end - range.start))
    }
}

/// The parts of one read, in order, as one buffer of `len` bytes: a single part is returned as it is
/// (no copy); several are copied once into one buffer.
pub(crate) fn join_parts(mut parts: Vec<Bytes>, len: u64) -> Bytes {
    if parts.len() == 1 {
        return parts.pop().expect("one part");
    }
    let mut out = UNDONE.take(len as usize);
    for p in parts {
        out.extend_from_slice(&p);
    }
    UNDONE.bytes(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::chunk::Transform;
    use crate::format::manifest::tests::sample;

    #[test]
    fn reads_join_chunks_stored_as_they_are_and_take_transformed_ones_whole() {
        // Chunks of 1000 bytes at 0, 1000, 2000, 3000; chunk 1 compressed to 300 bytes, the others after it.
        let mut m = sample();
        let proto = m.chunks[0];
        let stored = [(0, 1000), (1000, 300), (1300, 1000), (2300, 1000)];
        m.chunks = (0..4)
            .map(|i| {
                let mut c = proto;
                c.rdi.original_position = i as u64 * 1000;
                (c.rdi.stored_position, c.rdi.stored_length) = stored[i];
                if i == 1 {
                    c.rdi.transform = Transform::Zstd;
                }
                c
            })
            .collect();
        m.log_length = 4000;
        let read = |stored: Range<u64>, undo: Option<(usize, Range<usize>)>| StoredRead {
            stored,
            undo,
            blocks: None,
            frames: None,
        };
        // (case, original range, the reads)
        let cases = [
            ("inside a chunk stored as is", 10..20, vec![read(10..20, None)]),
            ("inside the compressed chunk: all of it", 1500..1501, vec![read(1000..1300, Some((1, 500..501)))]),
            (
                "across it",
                900..2100,
                vec![read(900..1000, None), read(1000..1300, Some((1, 0..1000))), read(1300..1400, None)],
            ),
            ("two chunks stored as is: one read", 2500..3500, vec![read(1800..2800, None)]),
        ];
        for (case, range, want) in cases {
            assert_eq!(BackendChunks::plan(&m, "k", &range).unwrap(), want, "{case}");
        }
        m.chunks[3].rdi.stored_position += 1;
        let e = BackendChunks::plan(&m, "k", &(2500..3500)).unwrap_err();
        assert!(e.to_string().contains("not stored right after"), "{e}");
    }
}
