//! Copy: scan the `.log` (batch checks, chunk table), upload it and the index bundle, then commit the
//! manifest.
//!
//! Without chunk transforms the `.log` is uploaded as it is while it is scanned. With them (compression,
//! `compression.enabled`, or encryption, `encryption.enabled`) the `.log` object is the chunks' stored bytes back
//! to back, known only once the chunk table is: the scan (with the index upload) comes first, then one pass
//! over the file a few chunks at a time transforms each (compresses it, frame by frame of
//! `compression.frame.size` or as one frame, or leaves it as it is, [`ChunkCompressor`], then encrypts it,
//! each frame on its own, when the store encrypts),
//! the chunks of a window in parallel, and streams the stored bytes to the upload in order, a few chunks in
//! memory at a time; each chunk read again is checked against its CRC from the scan. When compression alone
//! would leave every chunk as it is because the producer compressed most of each (the scan notes where it
//! did), the file is uploaded as it is after the scan instead, as without transforms.

use super::TieredStorage;
use super::layout::{SegmentKeys, SegmentLayout};
use super::settings::EncryptionConfig;
use super::single;
use crate::crypto::DataKey;
use crate::error::{Error, Result};
use crate::format::batch::scan_file;
use crate::format::chunk::StoredFrame;
use crate::format::chunk::{ChunkEntry, ChunkTable, Chunker, Transform};
use crate::format::index::{read_offset_index, read_time_index};
use crate::format::manifest::{FrameTable, IndexLocation, Manifest, StoredAs};
use crate::format::trailer::Trailer;
use crate::format::transform::{self, ChunkCompressor, CompressionConfig};
use crate::model::{LogSegmentData, RemoteLogSegmentMetadata};
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::from_io(path.display(), e)
}

/// What a copy reads of its segment before writing: the log file, its length, and how it is stored.
struct Source {
    log_path: PathBuf,
    log_len: u64,
    /// The active encryption settings, when new copies are encrypted.
    encrypt: Option<EncryptionConfig>,
    /// Whether chunks go through transforms (compression or encryption).
    transformed: bool,
    /// Compressed only: the scan notes where the producer compressed, so that a segment every chunk of which
    /// compression's heuristic would leave as it is is stored as it is, without a transforming pass.
    note_compressed: bool,
}

/// The scan's result: the chunk table, and where the producer compressed.
type Scanned = (ChunkTable, CompressedRuns);

/// The pieces of the log as a copy stores it: the chunks (stored positions from 0), the data key's envelope
/// when encrypted, and the frame table when some chunk is in frames.
struct StoredLog {
    chunks: Vec<ChunkEntry>,
    encryption: Option<crate::crypto::KeyEnvelope>,
    frames: Option<FrameTable>,
}

impl TieredStorage {
    /// Reads and checks the index files, returning their bytes in bundle order and each one's place in the
    /// bundle.
    async fn read_indexes(
        data: &LogSegmentData,
        base_offset: i64,
        log_len: u64,
    ) -> Result<(Vec<Bytes>, [Option<IndexLocation>; 5])> {
        async fn read(p: &PathBuf) -> Result<Bytes> {
            Ok(Bytes::from(tokio::fs::read(p).await.map_err(io_err(p))?))
        }
        let offset = read(&data.offset_index).await?;
        read_offset_index(&data.offset_index.display().to_string(), base_offset, &offset, log_len)?;
        let time = read(&data.time_index).await?;
        read_time_index(&data.time_index.display().to_string(), base_offset, &time)?;
        let snapshot = read(&data.producer_snapshot_index).await?;
        let txn = match &data.transaction_index {
            Some(p) => Some(read(p).await?),
            None => None,
        };
        let parts: [Option<Bytes>; 5] =
            [Some(offset), Some(time), Some(snapshot), txn, Some(data.leader_epoch_index.clone())];
        let mut locations = [None; 5];
        let mut position = 0u64;
        for (slot, part) in locations.iter_mut().zip(&parts) {
            if let Some(b) = part {
                *slot = Some(IndexLocation { position, length: b.len() as u64, crc32c: crate::checksum::crc32c(b) });
                position += b.len() as u64;
            }
        }
        Ok((parts.into_iter().flatten().collect(), locations))
    }

    async fn upload_indexes(
        &self,
        key: &str,
        data: &LogSegmentData,
        base_offset: i64,
        log_len: u64,
    ) -> Result<[Option<IndexLocation>; 5]> {
        let (parts, locations) = Self::read_indexes(data, base_offset, log_len).await?;
        let stream = futures::stream::iter(parts.into_iter().map(Ok));
        self.backend.put_stream(key, Box::pin(stream)).await?;
        Ok(locations)
    }

    /// Copies a segment in the configured layout (`segment.layout`): three objects, the manifest last, or
    /// one object; returns the one object's trailer. On failure the caller removes whatever was written.
    pub(super) async fn copy_segment(
        &self,
        md: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
        keys: &SegmentKeys,
    ) -> Result<Option<Trailer>> {
        match self.config.segment_layout {
            SegmentLayout::Split => self.copy_split(md, data, keys).await.map(|()| None),
            SegmentLayout::Single => self.copy_single(md, data, &keys.segment).await.map(Some),
        }
    }

    /// The log file of a copy and how it is to be stored. Any length: segments over 2 GiB (KIP-1333) too.
    async fn source(&self, md: &RemoteLogSegmentMetadata, data: &LogSegmentData) -> Result<Source> {
        let log_path = data.log_segment.clone();
        let log_len = tokio::fs::metadata(&log_path).await.map_err(io_err(&log_path))?.len();
        if log_len != md.segment_size_in_bytes as u64 {
            tracing::warn!(segment = %md.remote_log_segment_id, log_len, metadata_size = md.segment_size_in_bytes,
                "log file size differs from the metadata's segment size; copying the file as it is");
        }
        let encrypt = self.config.encryption.clone().filter(|e| e.encrypt);
        let transformed = self.config.compression.is_some() || encrypt.is_some();
        let note_compressed = encrypt.is_none() && self.config.compression.is_some_and(|c| c.heuristic);
        Ok(Source { log_path, log_len, encrypt, transformed, note_compressed })
    }

    /// The scan of the log (every batch checked when `copy.verify.checksums`), cutting the chunk table.
    async fn scan(&self, md: &RemoteLogSegmentMetadata, src: &Source) -> Result<Scanned> {
        let verify = self.config.verify_checksums;
        let mut chunker = Chunker::new(
            self.config.chunk_size as u64,
            self.config.block_size,
            md.start_offset,
            md.remote_log_segment_id.id,
        );
        let (scan_path, log_len, note_compressed) = (src.log_path.clone(), src.log_len, src.note_compressed);
        let scan = tokio::task::spawn_blocking(move || {
            let mut compressed = CompressedRuns::default();
            scan_file(&scan_path, log_len, verify, |b| {
                if note_compressed && b.compression() != 0 {
                    compressed.add(b.position()..b.position() + b.size() as u64);
                }
                chunker.push(b)
            })
            .map(|_| (chunker.finish(), compressed))
        });
        scan.await
            .map_err(|e| Error::storage("log scan task failed", e))?
            .map_err(|e| e.context(src.log_path.display()))
    }

    /// Refuses a log holding offsets outside the metadata's.
    fn check_offsets(md: &RemoteLogSegmentMetadata, src: &Source, chunks: &[ChunkEntry]) -> Result<()> {
        if let (Some(first), Some(last)) = (chunks.first(), chunks.last())
            && (first.first_offset < md.start_offset || last.last_offset > md.end_offset)
        {
            return Err(Error::invalid(format!(
                "{}: holds offsets {}..={}, outside the metadata's {}..={}",
                src.log_path.display(),
                first.first_offset,
                last.last_offset,
                md.start_offset,
                md.end_offset
            )));
        }
        Ok(())
    }

    /// Whether a compressed-only copy stores the file as it is: every chunk's bytes mostly in batches the
    /// producer compressed, so the transforming pass would leave each as it is (its entry unchanged, no
    /// frames).
    fn stored_as_is(src: &Source, chunks: &[ChunkEntry], compressed: &CompressedRuns) -> bool {
        src.note_compressed
            && chunks.iter().all(|c| compressed.within(c.original_position()..c.end()) * 2 > c.data_length as u64)
    }

    /// Transforms the chunks (compression, encryption under a fresh data key), sending their stored bytes to
    /// `tx` in order; returns the stored log's pieces for the manifest.
    async fn transform_log(
        &self,
        md: &RemoteLogSegmentMetadata,
        src: &Source,
        chunks: Vec<ChunkEntry>,
        block_size: u32,
        tx: tokio::sync::mpsc::Sender<Result<Bytes>>,
    ) -> Result<StoredLog> {
        let mut encryption = None;
        let data_key = match &src.encrypt {
            Some(e) => {
                let id = &md.remote_log_segment_id;
                let topic = &id.topic_id_partition.topic_partition.topic;
                let (key, envelope) = DataKey::generate(&e.keyring, topic, id.id, md.start_offset).await?;
                encryption = Some(envelope);
                Some(key)
            }
            None => None,
        };
        let compression = self.config.compression;
        let path = src.log_path.clone();
        let pass = tokio::task::spawn_blocking(move || {
            let result = transform_chunks(&path, chunks, block_size, compression, data_key.as_ref(), &tx);
            if let Err(e) = &result {
                let _ = tx.blocking_send(Err(Error::new(e.kind(), format!("compressing {}: {e}", path.display()))));
            }
            result
        });
        let (chunks, table) = pass.await.map_err(|e| Error::storage("chunk transform task failed", e))??;
        // A frame table only when a chunk is stored in frames: otherwise the manifest is what a copy
        // without frames writes (versions 2 to 4).
        let mut frames = None;
        if let Some(frame_size) = compression.map(|c| c.frame_size_for(block_size))
            && chunks.iter().any(|c| c.rdi.transform.is_framed())
        {
            frames = Some(FrameTable { frame_size, chunks: table });
        }
        Ok(StoredLog { chunks, encryption, frames })
    }

    /// The manifest of a copy.
    fn manifest_of(
        &self,
        md: &RemoteLogSegmentMetadata,
        src: &Source,
        indexes: [Option<IndexLocation>; 5],
        log: StoredLog,
        table: (u32, Vec<u32>),
        stored_as: StoredAs,
    ) -> Manifest {
        Manifest {
            metadata: md.clone(),
            log_length: src.log_len,
            chunk_target: self.config.chunk_size,
            indexes,
            chunks: log.chunks,
            block_size: table.0,
            block_crcs: table.1,
            encryption: log.encryption,
            frames: log.frames,
            stored_as,
        }
    }

    /// Copies a segment as three objects: the scan and both uploads at once, then the manifest.
    async fn copy_split(&self, md: &RemoteLogSegmentMetadata, data: &LogSegmentData, keys: &SegmentKeys) -> Result<()> {
        let src = self.source(md, data).await?;
        // The scan and both uploads run at once (with chunk transforms, the `.log`'s upload waits for the scan);
        // all three finish before any result is judged, so a cleanup never races an upload still in flight.
        let upload_as_is = async {
            match src.transformed {
                false => self.backend.put_file(&keys.log, &src.log_path, src.log_len).await,
                true => Ok(()),
            }
        };
        let (scan, log_up, idx_up) = tokio::join!(
            self.scan(md, &src),
            upload_as_is,
            self.upload_indexes(&keys.indexes, data, md.start_offset, src.log_len)
        );
        let (ChunkTable { chunks, block_size, block_crcs }, compressed) = scan?;
        log_up?;
        let indexes = idx_up?;
        Self::check_offsets(md, &src, &chunks)?;
        let log = if Self::stored_as_is(&src, &chunks, &compressed) {
            // The kernel's copy path, as without transforms.
            self.backend.put_file(&keys.log, &src.log_path, src.log_len).await?;
            StoredLog { chunks, encryption: None, frames: None }
        } else if src.transformed {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes>>(TRANSFORMED_IN_FLIGHT);
            let (up, log) = tokio::join!(
                self.backend.put_stream(&keys.log, receiver_stream(rx)),
                self.transform_log(md, &src, chunks, block_size, tx)
            );
            // The upload's error first: a failed pass failed the upload's stream with its own error.
            up?;
            log?
        } else {
            StoredLog { chunks, encryption: None, frames: None }
        };
        let manifest = self.manifest_of(md, &src, indexes, log, (block_size, block_crcs), StoredAs::Split);
        self.backend.put_bytes(&keys.manifest, Bytes::from(manifest.encode())).await?;
        self.manifests.insert(md.remote_log_segment_id.id, Arc::new(manifest));
        Ok(())
    }

    /// Copies a segment as one object `key` in one upload: the log's stored bytes (the file streamed while it
    /// is scanned; with transforms, the transformed chunks after the scan), then the index bundle, then the
    /// manifest and the trailer ([`super::single`]). Returns the trailer.
    pub(super) async fn copy_single(
        &self,
        md: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
        key: &str,
    ) -> Result<Trailer> {
        let src = self.source(md, data).await?;
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes>>(TRANSFORMED_IN_FLIGHT);
        let produce = async move {
            let made = async {
                let stream_file = async {
                    match src.transformed {
                        false => send_file(&tx, &src.log_path, src.log_len).await,
                        true => Ok(()),
                    }
                };
                let (scan, streamed, idx) = tokio::join!(
                    self.scan(md, &src),
                    stream_file,
                    Self::read_indexes(data, md.start_offset, src.log_len)
                );
                let (ChunkTable { chunks, block_size, block_crcs }, compressed) = scan?;
                streamed?;
                let (index_parts, indexes) = idx?;
                Self::check_offsets(md, &src, &chunks)?;
                let log = if Self::stored_as_is(&src, &chunks, &compressed) {
                    send_file(&tx, &src.log_path, src.log_len).await?;
                    StoredLog { chunks, encryption: None, frames: None }
                } else if src.transformed {
                    self.transform_log(md, &src, chunks, block_size, tx.clone()).await?
                } else {
                    StoredLog { chunks, encryption: None, frames: None }
                };
                let indexes_position = log.chunks.last().map_or(0, |c| c.stored_range().end);
                let bundle: u64 = index_parts.iter().map(|b| b.len() as u64).sum();
                for part in index_parts {
                    send(&tx, part).await?;
                }
                // Where the manifest lies is known once it is encoded (which leaves `stored_as` out).
                let stored_as = StoredAs::Single { indexes_position, manifest_position: 0, manifest_length: 0 };
                let mut manifest = self.manifest_of(md, &src, indexes, log, (block_size, block_crcs), stored_as);
                let (tail, trailer) = single::manifest_and_trailer(&manifest.encode(), indexes_position, bundle);
                manifest.stored_as = trailer.stored_as();
                send(&tx, tail).await?;
                Ok::<_, Error>((manifest, trailer))
            }
            .await;
            if let Err(e) = &made {
                // The upload's stream fails with it (its kind and status kept), so no object is left.
                let failed = Error::new(e.kind(), e.full_message());
                let _ = tx.send(Err(if e.is_transient() { failed.transient() } else { failed })).await;
            }
            // Dropping the sender here ends the upload's stream.
            made
        };
        let (up, made) = tokio::join!(self.backend.put_stream(key, receiver_stream(rx)), produce);
        // A failed production failed the upload with its own error; an upload that failed first stopped it.
        up?;
        let (manifest, trailer) = made?;
        self.manifests.insert(md.remote_log_segment_id.id, Arc::new(manifest));
        Ok(trailer)
    }
}

/// The items of `rx` as an upload's stream.
fn receiver_stream(rx: tokio::sync::mpsc::Receiver<Result<Bytes>>) -> crate::backend::ByteStream {
    Box::pin(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) }))
}

/// Sends `bytes` to an upload's stream; an error once the upload stopped taking them (its own error is the
/// one reported).
async fn send(tx: &tokio::sync::mpsc::Sender<Result<Bytes>>, bytes: Bytes) -> Result<()> {
    tx.send(Ok(bytes)).await.map_err(|_| Error::invalid("the upload stopped taking bytes"))
}

/// Sends the first `len` bytes of the file at `path` to an upload's stream, in the pieces
/// [`crate::backend::file_stream`] reads.
async fn send_file(tx: &tokio::sync::mpsc::Sender<Result<Bytes>>, path: &Path, len: u64) -> Result<()> {
    use futures::StreamExt;
    let mut pieces = crate::backend::file_stream(path, len);
    while let Some(piece) = pieces.next().await {
        send(tx, piece?).await?;
    }
    Ok(())
}

/// The byte ranges of a `.log` in batches the producer compressed, adjacent batches merged (one range for a
/// segment whose every batch is compressed), in order.
#[derive(Default)]
struct CompressedRuns(Vec<std::ops::Range<u64>>);

impl CompressedRuns {
    /// Adds the batch at `r`, after every batch added before.
    fn add(&mut self, r: std::ops::Range<u64>) {
        match self.0.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => self.0.push(r),
        }
    }

    /// How many bytes of `r` are in compressed batches.
    fn within(&self, r: std::ops::Range<u64>) -> u64 {
        let first = self.0.partition_point(|run| run.end <= r.start);
        self.0[first..]
            .iter()
            .take_while(|run| run.start < r.end)
            .map(|run| run.end.min(r.end) - run.start.max(r.start))
            .sum()
    }
}

/// Chunks in flight between the transforming pass ([`transform_chunks`]) and the upload.
const TRANSFORMED_IN_FLIGHT: usize = 2;

/// The most threads one copy transforms chunks on (fewer when the machine has fewer cores).
const MAX_TRANSFORM_THREADS: usize = 4;

/// The transforming pass of [`TieredStorage::upload_transformed`]: reads each chunk of the file at `path`,
/// checks it against its scanned CRC, decides its transform (compressed or not, in frames of the
/// compression's frame size or as one, then encrypted when `data_key` is given), sends its stored bytes to
/// `tx` in order, and records where they are stored and, for a chunk in frames, its frames.
/// Chunks are read a window at a time and the window's chunks transformed in parallel, one thread (and one
/// zstd context) each, up to the machine's cores and [`MAX_TRANSFORM_THREADS`].
fn transform_chunks(
    path: &Path,
    mut chunks: Vec<ChunkEntry>,
    block_size: u32,
    compression: Option<CompressionConfig>,
    data_key: Option<&DataKey>,
    tx: &tokio::sync::mpsc::Sender<Result<Bytes>>,
) -> Result<(Vec<ChunkEntry>, Vec<Vec<StoredFrame>>)> {
    use std::io::Read;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_TRANSFORM_THREADS);
    let frame_size = compression.map_or(0, |c| c.frame_size_for(block_size));
    let mut frames = Vec::with_capacity(chunks.len());
    let mut compressors = (0..threads)
        .map(|_| compression.map(ChunkCompressor::new).transpose())
        .collect::<Result<Vec<Option<ChunkCompressor>>>>()?;
    let mut file = std::io::BufReader::new(std::fs::File::open(path).map_err(io_err(path))?);
    let what = path.display().to_string();
    let (mut stored_at, mut compressed, mut original_bytes, mut first_index) = (0u64, 0usize, 0u64, 0usize);
    for window in chunks.chunks_mut(threads) {
        let mut originals = Vec::with_capacity(window.len());
        for c in window.iter() {
            let mut original = vec![0; c.data_length as usize];
            file.read_exact(&mut original).map_err(io_err(path))?;
            // The file is read a second time: it must still be what the scan checked.
            c.verify(&original, &what).map_err(|e| Error::invalid(format!("changed since it was scanned: {e}")))?;
            originals.push(original);
        }
        let sizes = Sizes { block: block_size, frame: frame_size };
        let results: Vec<Result<Transformed>> = if window.len() == 1 {
            let original = originals.pop().expect("one chunk");
            vec![transform_chunk(&window[0], first_index, original, compressors[0].as_mut(), data_key, sizes)]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = window
                    .iter()
                    .zip(originals)
                    .zip(compressors.iter_mut())
                    .enumerate()
                    .map(|(k, ((c, original), z))| {
                        s.spawn(move || transform_chunk(c, first_index + k, original, z.as_mut(), data_key, sizes))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| Err(Error::invalid(format!("{what}: a chunk transform panicked"))))
                    })
                    .collect()
            })
        };
        first_index += window.len();
        for (c, result) in window.iter_mut().zip(results) {
            let (mut entry, stored, chunk_frames) = result?;
            entry.rdi.stored_position = stored_at;
            if entry.rdi.transform.is_compressed() {
                compressed += 1;
            }
            *c = entry;
            frames.push(chunk_frames);
            original_bytes += c.data_length as u64;
            stored_at += stored.len() as u64;
            if tx.blocking_send(Ok(Bytes::from(stored))).is_err() {
                // The upload ended early: its own error is the one reported.
                return Err(Error::invalid(format!("{what}: the upload stopped taking chunks")));
            }
        }
    }
    tracing::debug!(file = %what, chunks = chunks.len(), compressed, original_bytes, stored_bytes = stored_at,
        encrypted = data_key.is_some(), frame_size, threads, "copied with chunk transforms");
    Ok((chunks, frames))
}

/// The block size and the frame size (0: one frame per compressed chunk) of a copy.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    block: u32,
    frame: u32,
}

/// A chunk transformed: its entry, its stored bytes, and its frames when stored in frames.
type Transformed = (ChunkEntry, Vec<u8>, Vec<StoredFrame>);

/// Chunk `c` (the `index`-th of its segment, `original` its bytes) through the transforms: compressed or
/// left as it is (with `compressor`; in frames of `sizes.frame` original bytes unless 0), then sealed under
/// `data_key` when given (frame by frame when in frames, else as one piece when compressed, else block by
/// block, blocks of `sizes.block`). Returns its entry, with the transform, stored length and stored CRC set
/// but not its position in the object, its stored bytes, and its frames (none unless in frames).
fn transform_chunk(
    c: &ChunkEntry,
    index: usize,
    original: Vec<u8>,
    mut compressor: Option<&mut ChunkCompressor>,
    data_key: Option<&DataKey>,
    sizes: Sizes,
) -> Result<Transformed> {
    let block_size = sizes.block;
    if let Some(z) = compressor.as_deref_mut().filter(|_| sizes.frame > 0) {
        let (decision, framed) = z.apply_frames(&original, c.original_position(), sizes.frame)?;
        if let Some(f) = framed {
            tracing::trace!(
                chunk_at = c.original_position(),
                ?decision,
                original = c.data_length,
                stored = f.bytes.len(),
                frames = f.lengths.len()
            );
            return seal_frames(c, index, f, data_key, sizes.frame);
        }
        // Left as it is: encrypted block by block below, as a chunk compression leaves.
        tracing::trace!(chunk_at = c.original_position(), ?decision, original = c.data_length);
        return transform_chunk(c, index, original, None, data_key, sizes);
    }
    let (decision, stored) = match compressor {
        Some(z) => {
            let (d, s) = z.apply(&original, c.original_position())?;
            (Some(d), s)
        }
        None => (None, None),
    };
    let (transform, stored) = match stored {
        Some(s) => (Transform::Zstd, s),
        None => (Transform::None, original),
    };
    tracing::trace!(chunk_at = c.original_position(), ?decision, original = c.data_length, stored = stored.len());
    Ok(match data_key {
        Some(key) => {
            let transform = if transform == Transform::Zstd { Transform::ZstdAes256Gcm } else { Transform::Aes256Gcm };
            // The associated data binds the entry's transform, so it is set before sealing.
            let mut sealed_as = *c;
            sealed_as.rdi.transform = transform;
            // A chunk only encrypted is sealed block by block, so a read of part of it decrypts only the
            // blocks it needs; a compressed one is a single frame, read whole anyway, and sealed whole.
            let sealed = match transform {
                Transform::Aes256Gcm => key.seal_blocks(&sealed_as, index, &stored, block_size)?,
                _ => key.seal_chunk(&sealed_as, index, &stored)?,
            };
            (transform::transformed_entry(c, transform, 0, &sealed), sealed, Vec::new())
        }
        None if transform == Transform::Zstd => (transform::compressed_entry(c, 0, &stored), stored, Vec::new()),
        None => (*c, stored, Vec::new()),
    })
}

/// Chunk `c` (the `index`-th of its segment) compressed in `frames` of `frame_size` original bytes: as they
/// are ([`Transform::ZstdFrames`]), or each sealed on its own under `data_key` when given
/// ([`Transform::ZstdFramesAes256Gcm`], bound to the frame's index and original position).
fn seal_frames(
    c: &ChunkEntry,
    index: usize,
    frames: transform::Frames,
    data_key: Option<&DataKey>,
    frame_size: u32,
) -> Result<Transformed> {
    let Some(key) = data_key else {
        let (entry, table) = transform::framed_entry(c, Transform::ZstdFrames, 0, &frames.bytes, &frames.lengths);
        return Ok((entry, frames.bytes, table));
    };
    // The associated data binds the entry's transform, so it is set before sealing.
    let mut sealed_as = *c;
    sealed_as.rdi.transform = Transform::ZstdFramesAes256Gcm;
    let overhead = crate::crypto::CHUNK_OVERHEAD;
    let mut sealed = Vec::with_capacity(frames.bytes.len() + frames.lengths.len() * overhead);
    let mut lengths = Vec::with_capacity(frames.lengths.len());
    let (mut at, step) = (0usize, frame_size as u64);
    for (k, &n) in frames.lengths.iter().enumerate() {
        let start = c.original_position() + k as u64 * step;
        let original = start..(start + step).min(c.end());
        key.seal_frame(&sealed_as, index, k, original, &frames.bytes[at..at + n as usize], &mut sealed)?;
        lengths.push(n + overhead as u32);
        at += n as usize;
    }
    let (entry, table) = transform::framed_entry(c, Transform::ZstdFramesAes256Gcm, 0, &sealed, &lengths);
    Ok((entry, sealed, table))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::log_writer::{Record, encode_batch};

    #[test]
    fn compressed_runs_merge_adjacent_batches_and_count_what_a_range_holds() {
        let mut runs = CompressedRuns::default();
        for r in [0..4, 4..10, 20..25, 25..30, 40..41] {
            runs.add(r);
        }
        assert_eq!(runs.0, vec![0..10, 20..30, 40..41]);
        let cases = [(0..100, 21), (5..25, 10), (10..20, 0), (29..40, 1), (30..40, 0), (0..1, 1), (41..50, 0)];
        for (r, want) in cases {
            assert_eq!(runs.within(r.clone()), want, "{r:?}");
        }
        assert_eq!(CompressedRuns::default().within(0..10), 0);
    }

    #[test]
    fn a_batch_claiming_more_than_the_file_holds_fails_before_any_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.log");
        let record = Record { key: None, value: Some(vec![7; 100]), headers: vec![], timestamp: 0 };
        let mut log = encode_batch(0, 0, &[record]);
        log.resize(2 << 20, 0);
        // The first batch claims 2 GiB: the scan must not size a buffer by that.
        log[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        std::fs::write(&path, &log).unwrap();
        let mut chunker = Chunker::new(4 << 20, 64 << 10, 0, crate::model::Uuid::random());
        let e = scan_file(&path, log.len() as u64, true, |b| chunker.push(b)).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("position 0 declares 2147483659 bytes, past the end: 2097152 bytes remain"), "{text}");
    }
}
