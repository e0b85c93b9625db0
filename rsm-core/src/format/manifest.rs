//! The segment manifest: the commit point of a copy. Written last; a segment without one does not exist.
//!
//! Versioned binary, big-endian, ending in a CRC-32C of everything before it:
//! magic `RSMM`, version u16 (2 to 5, see below; 1 is still read); the segment metadata (topic, partition, topic id, segment id, offsets,
//! timestamps, broker id, size, leader epochs, custom metadata, state, txn-index-empty; the pieces it writes as
//! the wire encoding does are [`crate::format::segment_metadata`]'s); the log object's
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
//! [`MAX_PROVIDER_BLOB_LEN`]) and its bytes. Every chunk of a version-6 segment is encrypted.

use crate::crypto::{
    CHUNK_OVERHEAD, KeyEnvelope, MAX_KEY_ID_LEN, MAX_PROVIDER_BLOB_LEN, NONCE_BYTES, WRAPPED_LEN, Wrapped,
};
use crate::error::{Error, Result};
use crate::format::chunk::{ChunkEntry, StoredFrame, frame_count};
use crate::format::codec::{Reader, Writer};
use crate::format::segment_metadata::{
    read_leader_epoch, read_segment_fields, read_topic_partition, read_uuid, write_leader_epochs, write_segment_fields,
    write_topic_partition, write_uuid,
};
use crate::model::{CustomMetadata, IndexType, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition};

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
    /// For each chunk, in order: its frames ([`frame_count`] of them) when it is stored in frames, else none.
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
    /// then the manifest from `manifest_position` and the trailer (`rsm_core::storage::single`).
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

    /// The version [`Manifest::encode`] writes: [`FRAMED_VERSION`] when a chunk is stored in frames, else
    /// [`ENCRYPTED_VERSION`] for an encrypted segment, else [`TRANSFORMED_VERSION`] when a chunk is
    /// transformed, else [`UNTRANSFORMED_VERSION`].
    pub fn version(&self) -> u16 {
        if self.encryption.as_ref().is_some_and(|e| matches!(e.wrapped, Wrapped::Provider(_))) {
            PROVIDER_KEY_VERSION
        } else if self.chunks.iter().any(|c| c.rdi.transform.is_framed()) {
            FRAMED_VERSION
        } else if self.encryption.is_some() {
            ENCRYPTED_VERSION
        } else if self.chunks.iter().any(ChunkEntry::is_transformed) {
            TRANSFORMED_VERSION
        } else {
            UNTRANSFORMED_VERSION
        }
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

    /// Encodes the manifest.
    pub fn encode(&self) -> Vec<u8> {
        let m = &self.metadata;
        let tp = &m.remote_log_segment_id.topic_id_partition;
        let mut out = Vec::with_capacity(256 + self.chunks.len() * 90);
        let mut w = Writer::new(&mut out);
        w.bytes(MAGIC);
        w.u16(self.version());
        write_topic_partition(&mut w, &tp.topic_partition);
        write_uuid(&mut w, tp.topic_id);
        write_segment_fields(&mut w, m);
        w.u32(m.segment_leader_epochs.len() as u32);
        write_leader_epochs(&mut w, &m.segment_leader_epochs);
        match &m.custom_metadata {
            None => w.i32(-1),
            Some(c) => {
                w.i32(c.0.len() as i32);
                w.bytes(&c.0);
            }
        }
        w.u8(m.state as i8 as u8);
        w.u8(m.txn_idx_empty as u8);
        w.u64(self.log_length);
        w.u32(self.chunk_target);
        for loc in &self.indexes {
            match loc {
                None => w.bytes(&[0; 21]),
                Some(l) => {
                    w.u8(1);
                    w.u64(l.position);
                    w.u64(l.length);
                    w.u32(l.crc32c);
                }
            }
        }
        w.u32(self.chunks.len() as u32);
        for c in &self.chunks {
            c.encode(w.out());
        }
        w.u32(self.block_size);
        w.u32(self.block_crcs.len() as u32);
        for &crc in &self.block_crcs {
            w.u32(crc);
        }
        if self.version() >= FRAMED_VERSION {
            // What the table holds is written as it is: a table that does not match the chunks (only a
            // test writes one) does not decode.
            let table = self.frames.as_ref();
            w.u32(table.map_or(0, |t| t.frame_size));
            for (i, _) in self.chunks.iter().enumerate().filter(|(_, c)| c.rdi.transform.is_framed()) {
                for f in table.and_then(|t| t.chunks.get(i)).into_iter().flatten() {
                    w.u32(f.stored_length);
                    w.u32(f.stored_crc32c);
                }
            }
            w.u8(match self.encryption.as_ref().map(|e| &e.wrapped) {
                None => 0,
                Some(Wrapped::Local { .. }) => 1,
                Some(Wrapped::Provider(_)) => 2,
            });
        }
        if let Some(e) = &self.encryption {
            // Ids are validated when read from the settings; an id past 255 bytes is cut rather than
            // written with a wrong length (it would then not unwrap, never read as another id's).
            let id = &e.kek_id.as_bytes()[..e.kek_id.len().min(MAX_KEY_ID_LEN)];
            w.u8(id.len() as u8);
            w.bytes(id);
            match &e.wrapped {
                Wrapped::Local { nonce, wrapped } => {
                    w.bytes(nonce);
                    w.bytes(wrapped);
                }
                Wrapped::Provider(blob) => {
                    // Blobs come from the provider, checked against the bound when wrapped; one past it is
                    // cut likewise (it then does not unwrap).
                    let blob = &blob[..blob.len().min(MAX_PROVIDER_BLOB_LEN)];
                    w.u16(blob.len() as u16);
                    w.bytes(blob);
                }
            }
        }
        let crc = crate::checksum::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decodes and checks a manifest; `what` (the object key) appears in every error.
    pub fn decode(bytes: &[u8], what: &str) -> Result<Self> {
        Self::decode_inner(bytes).map_err(|e| e.context(format!("manifest {what}")))
    }

    fn decode_inner(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < 10 || &bytes[..4] != MAGIC {
            return Err(Error::corrupt("not a manifest (bad magic or too short)"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_be_bytes(crc.try_into().expect("4 bytes"));
        let computed = crate::checksum::crc32c(body);
        if stored != computed {
            return Err(Error::corrupt(format!("CRC {stored:#010x}, computed {computed:#010x}")));
        }
        let mut r = Reader::new(&body[4..], "manifest");
        let version = r.u16()?;
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(Error::corrupt(format!(
                "version {version} is not supported (this build reads {OLDEST_VERSION} to {VERSION})"
            )));
        }
        let topic_partition = read_topic_partition(&mut r)?;
        let topic_id = read_uuid(&mut r)?;
        let mut metadata = read_segment_fields(&mut r, TopicIdPartition::new(topic_id, topic_partition))?;
        let n_epochs = r.u32()?;
        for _ in 0..n_epochs {
            let (epoch, offset) = read_leader_epoch(&mut r)?;
            metadata.segment_leader_epochs.insert(epoch, offset);
        }
        let custom_len = r.i32()?;
        metadata.custom_metadata = match custom_len {
            -1 => None,
            n if n >= 0 => Some(CustomMetadata(r.bytes(n as usize)?.to_vec())),
            n => return Err(Error::corrupt(format!("custom metadata length {n}"))),
        };
        metadata.state = RemoteLogSegmentState::for_id(r.u8()? as i8).map_err(|e| Error::corrupt(e.to_string()))?;
        metadata.txn_idx_empty = r.u8()? != 0;
        let (seg_id, start_offset) = (metadata.remote_log_segment_id.id, metadata.start_offset);
        let log_length = r.u64()?;
        let chunk_target = r.u32()?;
        let mut indexes = [None; 5];
        for slot in indexes.iter_mut() {
            let present = r.u8()?;
            let loc = IndexLocation { position: r.u64()?, length: r.u64()?, crc32c: r.u32()? };
            if present == 1 && loc.position.checked_add(loc.length).is_none() {
                return Err(Error::corrupt(format!(
                    "an index at position {} of length {} ends past the largest position",
                    loc.position, loc.length
                )));
            }
            *slot = (present == 1).then_some(loc);
        }
        let n_chunks = r.u32()? as usize;
        if n_chunks > r.remaining() / 46 {
            return Err(Error::corrupt(format!("chunk count {n_chunks} exceeds the manifest's size")));
        }
        let mut chunks = Vec::with_capacity(n_chunks);
        let mut expected_position = 0;
        for i in 0..n_chunks {
            let c = ChunkEntry::decode(&mut r)?;
            if c.rdi.segment_id != seg_id || c.rdi.segment_start_offset != start_offset {
                return Err(Error::corrupt(format!("chunk {i} names another segment ({})", c.rdi.segment_id)));
            }
            if c.rdi.transform.is_encrypted() && version < ENCRYPTED_VERSION {
                return Err(Error::corrupt(format!(
                    "chunk {i} is encrypted ({:?}), which manifest version {version} cannot hold",
                    c.rdi.transform
                )));
            }
            if c.rdi.transform.is_framed() && version < FRAMED_VERSION {
                return Err(Error::corrupt(format!(
                    "chunk {i} is stored in frames ({:?}), which manifest version {version} cannot hold",
                    c.rdi.transform
                )));
            }
            if version == ENCRYPTED_VERSION && !c.rdi.transform.is_encrypted() {
                return Err(Error::corrupt(format!(
                    "chunk {i} of an encrypted segment (manifest version {version}) is not encrypted ({:?})",
                    c.rdi.transform
                )));
            }
            if c.is_transformed() && version < TRANSFORMED_VERSION {
                return Err(Error::corrupt(format!(
                    "chunk {i} is transformed ({:?}), which manifest version {version} cannot hold",
                    c.rdi.transform
                )));
            }
            if !c.is_transformed() && c.rdi.stored_length != c.data_length {
                return Err(Error::corrupt(format!(
                    "chunk {i} is stored as is but its stored length {} is not its length {}",
                    c.rdi.stored_length, c.data_length
                )));
            }
            if c.original_position() != expected_position {
                return Err(Error::corrupt(format!(
                    "chunk {i} starts at {}, expected {expected_position}",
                    c.original_position()
                )));
            }
            expected_position = c.end();
            chunks.push(c);
        }
        let (block_size, block_crcs) = if version == 1 {
            (0, Vec::new())
        } else {
            let block_size = r.u32()?;
            let count = r.u32()? as usize;
            let want =
                if block_size == 0 { 0 } else { chunks.iter().map(|c| blocks_in(c.data_length, block_size)).sum() };
            if count != want || count > r.remaining() / 4 {
                return Err(Error::corrupt(format!(
                    "{count} block CRCs for blocks of {block_size} bytes, the chunks have {want}"
                )));
            }
            (block_size, (0..count).map(|_| r.u32()).collect::<Result<Vec<u32>>>()?)
        };
        let frames = if version >= FRAMED_VERSION {
            read_frame_table(&mut r, &chunks, block_size, version == PROVIDER_KEY_VERSION)?
        } else {
            None
        };
        let encrypted = match version {
            ENCRYPTED_VERSION => true,
            PROVIDER_KEY_VERSION => match r.u8()? {
                2 => true,
                f => return Err(Error::corrupt(format!("encryption flag {f}, not 2 (manifest version {version})"))),
            },
            v if v >= FRAMED_VERSION => match r.u8()? {
                0 => false,
                1 => true,
                f => return Err(Error::corrupt(format!("encryption flag {f}, neither 0 nor 1"))),
            },
            _ => false,
        };
        if version >= FRAMED_VERSION
            && let Some((i, c)) = chunks.iter().enumerate().find(|(_, c)| c.rdi.transform.is_encrypted() != encrypted)
        {
            return Err(Error::corrupt(format!(
                "chunk {i} is {} ({:?}) in a segment that is {} (manifest version {version})",
                if encrypted { "not encrypted" } else { "encrypted" },
                c.rdi.transform,
                if encrypted { "encrypted" } else { "not encrypted" }
            )));
        }
        let encryption = if encrypted {
            let len = r.u8()? as usize;
            if len == 0 {
                return Err(Error::corrupt("encryption block: an empty key encryption key id"));
            }
            let kek_id = std::str::from_utf8(r.bytes(len)?)
                .map_err(|_| Error::corrupt("encryption block: the key encryption key id is not UTF-8"))?
                .to_string();
            let wrapped = if version == PROVIDER_KEY_VERSION {
                let n = r.u16()? as usize;
                if n == 0 || n > MAX_PROVIDER_BLOB_LEN {
                    return Err(Error::corrupt(format!(
                        "encryption block: a wrapped key of {n} bytes (1 to {MAX_PROVIDER_BLOB_LEN})"
                    )));
                }
                Wrapped::Provider(r.bytes(n)?.to_vec())
            } else {
                let nonce: [u8; NONCE_BYTES] = r.bytes(NONCE_BYTES)?.try_into().expect("12 bytes");
                let wrapped: [u8; WRAPPED_LEN] = r.bytes(WRAPPED_LEN)?.try_into().expect("48 bytes");
                Wrapped::Local { nonce, wrapped }
            };
            Some(KeyEnvelope { kek_id, wrapped })
        } else {
            None
        };
        if expected_position != log_length || r.remaining() != 0 {
            return Err(Error::corrupt(format!(
                "chunks cover {expected_position} of {log_length} log bytes; {} trailing bytes",
                r.remaining()
            )));
        }
        Ok(Manifest {
            metadata,
            log_length,
            chunk_target,
            indexes,
            chunks,
            block_size,
            block_crcs,
            encryption,
            frames,
            stored_as: StoredAs::Split,
        })
    }
}

/// Reads a version-5 manifest's frame size and frame table for `chunks` (blocks of `block_size`), checking
/// every bound before anything is allocated by it: the frame size a non-zero multiple of the block size, at
/// least one chunk in frames, the whole table (its frame counts derived from the chunks, never read) within
/// the bytes left, no frame without stored bytes (nor, sealed, shorter than a nonce and a tag), and each
/// chunk's frames adding up to exactly its stored length.
fn read_frame_table(
    r: &mut Reader<'_>,
    chunks: &[ChunkEntry],
    block_size: u32,
    may_be_absent: bool,
) -> Result<Option<FrameTable>> {
    let framed = |c: &&ChunkEntry| c.rdi.transform.is_framed();
    let frame_size = r.u32()?;
    // Version 6: a frame size of 0 says no chunk is stored in frames, and no table follows.
    if may_be_absent && frame_size == 0 {
        if let Some((i, _)) = chunks.iter().enumerate().find(|(_, c)| framed(c)) {
            return Err(Error::corrupt(format!("chunk {i} is stored in frames, and the frame size is 0")));
        }
        return Ok(None);
    }
    if block_size == 0 || frame_size == 0 || !frame_size.is_multiple_of(block_size) {
        return Err(Error::corrupt(format!(
            "frame size {frame_size} is not a non-zero multiple of the block size {block_size}"
        )));
    }
    if !chunks.iter().any(|c| framed(&c)) {
        return Err(Error::corrupt(format!("version {FRAMED_VERSION} with no chunk stored in frames")));
    }
    let total = chunks
        .iter()
        .filter(framed)
        .try_fold(0usize, |n, c| n.checked_add(frame_count(c.data_length, frame_size)))
        .unwrap_or(usize::MAX);
    if total > r.remaining() / 8 {
        return Err(Error::corrupt(format!(
            "a frame table of {total} frames of {frame_size} bytes (8 bytes each) exceeds the {} bytes left",
            r.remaining()
        )));
    }
    let mut table = Vec::with_capacity(chunks.len());
    for (i, c) in chunks.iter().enumerate() {
        if !c.rdi.transform.is_framed() {
            table.push(Vec::new());
            continue;
        }
        let n = frame_count(c.data_length, frame_size);
        let least = if c.rdi.transform.is_encrypted() { CHUNK_OVERHEAD as u32 + 1 } else { 1 };
        let mut frames = Vec::with_capacity(n);
        let mut sum = 0u64;
        for k in 0..n {
            let f = StoredFrame { stored_length: r.u32()?, stored_crc32c: r.u32()? };
            if f.stored_length < least {
                return Err(Error::corrupt(format!(
                    "chunk {i} at position {}: frame {k} has {} stored bytes, fewer than {least}",
                    c.original_position(),
                    f.stored_length
                )));
            }
            sum += f.stored_length as u64;
            frames.push(f);
        }
        if sum != c.rdi.stored_length as u64 {
            return Err(Error::corrupt(format!(
                "chunk {i} at position {}: its {n} frames hold {sum} stored bytes, its entry says {}",
                c.original_position(),
                c.rdi.stored_length
            )));
        }
        table.push(frames);
    }
    Ok(Some(FrameTable { frame_size, chunks: table }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::chunk::{Rdi, RdiObject, Transform};
    use crate::model::{RemoteLogSegmentId, TopicPartition, Uuid};
    use std::collections::BTreeMap;

    pub(crate) fn sample() -> Manifest {
        let id = RemoteLogSegmentId::new(
            TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new("orders", 3)),
            Uuid::new(3, 4),
        );
        let mut metadata =
            RemoteLogSegmentMetadata::new(id, 100, 299, 5_000, 7, 6_000, 2_000, BTreeMap::from([(0, 100), (2, 250)]))
                .unwrap();
        metadata.custom_metadata = Some(CustomMetadata(vec![1, 2, 3]));
        let chunk = |p: u64, len: u32, first: i64, last: i64| ChunkEntry {
            first_offset: first,
            last_offset: last,
            first_timestamp: first * 10,
            last_timestamp: last * 10,
            data_length: len,
            rdi: Rdi {
                object: RdiObject::Log,
                transform: Transform::None,
                segment_start_offset: 100,
                segment_id: Uuid::new(3, 4),
                stored_position: p,
                stored_length: len,
                crc32c: 9,
                original_position: p,
                stored_crc32c: 9,
            },
        };
        Manifest {
            metadata,
            log_length: 2_000,
            chunk_target: 1_000,
            indexes: [
                Some(IndexLocation { position: 0, length: 80, crc32c: 1 }),
                Some(IndexLocation { position: 80, length: 120, crc32c: 2 }),
                Some(IndexLocation { position: 200, length: 10, crc32c: 3 }),
                None,
                Some(IndexLocation { position: 210, length: 12, crc32c: 4 }),
            ],
            chunks: vec![chunk(0, 1_000, 100, 199), chunk(1_000, 1_000, 200, 299)],
            block_size: 300,
            block_crcs: (11..19).collect(),
            encryption: None,
            frames: None,
            stored_as: StoredAs::Split,
        }
    }

    /// `sample()` over real bytes: its block (or, without blocks, chunk) CRCs are those of `log`.
    fn with_true_crcs(mut m: Manifest, log: &[u8]) -> Manifest {
        for c in m.chunks.iter_mut() {
            c.rdi.crc32c = crate::checksum::crc32c(&log[c.original_position() as usize..c.end() as usize]);
        }
        m.block_crcs.clear();
        for c in &m.chunks {
            for b in log[c.original_position() as usize..c.end() as usize].chunks(m.block_size.max(1) as usize) {
                m.block_crcs.push(crate::checksum::crc32c(b));
            }
        }
        if m.block_size == 0 {
            m.block_crcs.clear();
        }
        m
    }

    #[test]
    fn reads_align_to_blocks_and_every_block_is_checked() {
        let log: Vec<u8> = (0..2_000u32).map(|i| (i * 7) as u8).collect();
        // Blocks of 300 from each chunk's start: 0..300, …, 900..1000, 1000..1300, …, 1900..2000.
        let m = with_true_crcs(sample(), &log);
        let cases = [
            (0..1, 0..300),
            (299..301, 0..600),
            (950..1050, 900..1300),
            (1950..5000, 1900..2000),
            (700..700, 700..700),
        ];
        for (want, aligned) in cases {
            let got = m.align(want.clone());
            assert_eq!(got, aligned, "{want:?}");
            m.check_blocks(got.clone(), &log[got.start as usize..got.end as usize], "k").unwrap();
        }
        let e = m.check_blocks(10..300, &log[10..300], "k").unwrap_err();
        assert!(e.to_string().contains("not aligned"), "{e}");
        let mut bad = log[900..1300].to_vec();
        bad[150] ^= 1;
        let e = m.check_blocks(900..1300, &bad, "t/0/x.log").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        assert!(e.to_string().contains("t/0/x.log: block 1000..1300"), "{e}");
        // Without block CRCs (version 1) the blocks are the chunks.
        let v1 = with_true_crcs(Manifest { block_size: 0, ..sample() }, &log);
        assert_eq!(v1.align(950..1050), 0..2_000);
        assert_eq!(v1.align(1500..1501), 1_000..2_000);
        let mut bad = log[1000..2000].to_vec();
        bad[999] ^= 1;
        assert_eq!(v1.check_blocks(1000..2000, &bad, "k").unwrap_err().kind(), crate::ErrorKind::Corrupt);
    }

    #[test]
    fn round_trip_and_lookups() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(&bytes[..6], b"RSMM\0\x02");
        let d = Manifest::decode(&bytes, "k").unwrap();
        assert_eq!(d, m);
        assert_eq!(d.chunk_at_position(0), Some(0));
        assert_eq!(d.chunk_at_position(999), Some(0));
        assert_eq!(d.chunk_at_position(1_000), Some(1));
        assert_eq!(d.chunk_at_position(2_000), None);
        assert_eq!(d.chunk_for_offset(150), Some(0));
        assert_eq!(d.chunk_for_offset(200), Some(1));
        assert_eq!(d.chunk_for_offset(300), None);
        assert_eq!(d.chunk_for_timestamp(1_995), Some(1));
        assert_eq!(d.index(IndexType::Transaction), None);
    }

    /// `sample()` with its second chunk compressed (stored in 400 bytes after the first).
    fn compressed_sample() -> Manifest {
        let mut m = sample();
        let c = &mut m.chunks[1].rdi;
        (c.transform, c.stored_length, c.stored_crc32c) = (Transform::Zstd, 400, 77);
        m
    }

    #[test]
    fn a_transformed_chunk_makes_version_3_and_is_checked_by_block() {
        let m = compressed_sample();
        let bytes = m.encode();
        assert_eq!(&bytes[..6], b"RSMM\0\x03");
        assert_eq!(bytes.len(), sample().encode().len() + 4, "one RDI 4 bytes longer");
        assert_eq!(Manifest::decode(&bytes, "k").unwrap(), m);
        // Both chunks keep their blocks: the compressed one is read whole but checked, and so aligned, by block.
        assert_eq!(m.align(950..960), 900..1_000);
        assert_eq!(m.align(1_500..1_501), 1_300..1_600);
        assert_eq!(m.align(950..1_050), 900..1_300);
        // A version-2 manifest cannot hold a transformed chunk.
        let mut v2 = bytes.clone();
        v2[5] = 2;
        let body = v2.len() - 4;
        let crc = crate::checksum::crc32c(&v2[..body]);
        v2[body..].copy_from_slice(&crc.to_be_bytes());
        let e = Manifest::decode(&v2, "seg.manifest").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        assert!(e.to_string().contains("chunk 1 is transformed (Zstd), which manifest version 2"), "{e}");
    }

    /// `sample()` encrypted: both chunks, the second compressed too, a wrapped key under `kek-1`.
    fn encrypted_sample() -> Manifest {
        let mut m = sample();
        m.chunks[0].rdi.transform = Transform::Aes256Gcm;
        m.chunks[1].rdi.transform = Transform::ZstdAes256Gcm;
        m.encryption =
            Some(KeyEnvelope { kek_id: "kek-1".into(), wrapped: Wrapped::Local { nonce: [7; 12], wrapped: [9; 48] } });
        m
    }

    #[test]
    fn an_encrypted_segment_makes_version_4_with_its_wrapped_key() {
        let m = encrypted_sample();
        let bytes = m.encode();
        assert_eq!(&bytes[..6], b"RSMM\0\x04");
        assert_eq!(bytes.len(), sample().encode().len() + 8 + 1 + 5 + 12 + 48, "two RDIs v2 and the block");
        assert_eq!(Manifest::decode(&bytes, "k").unwrap(), m);
        // Version 3 cannot hold an encrypted chunk; version 4 holds only encrypted ones.
        let reseal = |mut b: Vec<u8>| {
            let body = b.len() - 4;
            let crc = crate::checksum::crc32c(&b[..body]);
            b[body..].copy_from_slice(&crc.to_be_bytes());
            b
        };
        let mut v3 = bytes[..bytes.len() - 4 - 66].to_vec();
        v3[5] = 3;
        v3.extend_from_slice(&[0; 4]);
        let e = Manifest::decode(&reseal(v3), "seg.manifest").unwrap_err();
        assert!(e.to_string().contains("chunk 0 is encrypted (Aes256Gcm), which manifest version 3"), "{e}");
        let mut plain = encrypted_sample();
        plain.chunks[0].rdi.transform = Transform::Zstd;
        let e = Manifest::decode(&plain.encode(), "k").unwrap_err();
        assert!(e.to_string().contains("chunk 0 of an encrypted segment"), "{e}");
    }

    #[test]
    fn every_corruption_is_detected() {
        for m in [sample(), compressed_sample(), encrypted_sample(), framed_sample(false), framed_sample(true)] {
            every_corruption_is_detected_in(m);
        }
    }

    /// `sample()` with its second chunk stored in frames of 600 bytes (two blocks of 300): two frames, of 150
    /// and 250 stored bytes (with `encrypted`, sealed: 28 bytes more each, and the first chunk encrypted block
    /// by block, under a wrapped key).
    fn framed_sample(encrypted: bool) -> Manifest {
        let mut m = sample();
        let overhead = if encrypted { CHUNK_OVERHEAD as u32 } else { 0 };
        let frames = vec![
            StoredFrame { stored_length: 150 + overhead, stored_crc32c: 0x1111 },
            StoredFrame { stored_length: 250 + overhead, stored_crc32c: 0x2222 },
        ];
        let c = &mut m.chunks[1].rdi;
        c.transform = if encrypted { Transform::ZstdFramesAes256Gcm } else { Transform::ZstdFrames };
        (c.stored_length, c.stored_crc32c) = (400 + 2 * overhead, 77);
        m.frames = Some(FrameTable { frame_size: 600, chunks: vec![Vec::new(), frames] });
        if encrypted {
            m.chunks[0].rdi.transform = Transform::Aes256Gcm;
            m.encryption = Some(KeyEnvelope {
                kek_id: "kek-1".into(),
                wrapped: Wrapped::Local { nonce: [7; 12], wrapped: [9; 48] },
            });
        }
        m
    }

    /// `bytes` with its CRC made right again (a test's edit, which the CRC no longer tells).
    fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
        let body = bytes.len() - 4;
        let crc = crate::checksum::crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    #[test]
    fn a_chunk_in_frames_makes_version_5_with_its_frame_table() {
        for encrypted in [false, true] {
            let m = framed_sample(encrypted);
            let bytes = m.encode();
            assert_eq!(&bytes[..6], b"RSMM\0\x05", "encrypted {encrypted}");
            // Version 2's bytes, a version-2 RDI (4 bytes), the frame size (4), two frames (8 each), the flag
            // (1); encrypted, a version-2 RDI more and the key block (1 + 5 + 12 + 48).
            let more = if encrypted { 4 + 66 } else { 0 };
            assert_eq!(bytes.len(), sample().encode().len() + 4 + 4 + 16 + 1 + more, "encrypted {encrypted}");
            // The frame table as written: frame size 600, then (150, 0x1111), (250, 0x2222), then the flag.
            let at = sample().encode().len() - 4 + 4 + if encrypted { 4 } else { 0 };
            let overhead = if encrypted { 28u32 } else { 0 };
            let mut want = 600u32.to_be_bytes().to_vec();
            for (len, crc) in [(150 + overhead, 0x1111u32), (250 + overhead, 0x2222)] {
                want.extend_from_slice(&len.to_be_bytes());
                want.extend_from_slice(&crc.to_be_bytes());
            }
            want.push(encrypted as u8);
            assert_eq!(&bytes[at..at + want.len()], &want[..], "encrypted {encrypted}");
            let d = Manifest::decode(&bytes, "k").unwrap();
            assert_eq!(d, m);
            assert_eq!(d.frames_of(1).map(|(s, f)| (s, f.len())), Some((600, 2)));
            assert_eq!(d.frames_of(0), None, "chunk 0 is not in frames");
        }
        // Without a chunk in frames the manifest stays what it was: versions 2 to 4, no frame table.
        for (m, version) in [(sample(), 2), (compressed_sample(), 3), (encrypted_sample(), 4)] {
            let with_table = Manifest { frames: framed_sample(false).frames, ..m.clone() };
            assert_eq!((with_table.version(), with_table.encode()), (version, m.encode()));
        }
    }

    #[test]
    fn a_frame_table_that_does_not_fit_its_chunks_is_corrupt() {
        type Edit = fn(&mut Manifest);
        fn table(m: &mut Manifest) -> &mut FrameTable {
            m.frames.as_mut().unwrap()
        }
        // (case, encrypted, the edit, a piece of the error)
        let cases: [(&str, bool, Edit, &str); 10] = [
            (
                "a frame size not a multiple of the block size",
                false,
                |m| table(m).frame_size = 500,
                "not a non-zero multiple",
            ),
            ("a frame size of 0", false, |m| table(m).frame_size = 0, "not a non-zero multiple"),
            (
                "a frame one byte longer",
                false,
                |m| table(m).chunks[1][0].stored_length += 1,
                "frames hold 401 stored bytes",
            ),
            ("a frame one byte shorter", false, |m| table(m).chunks[1][1].stored_length -= 1, "frames hold 399"),
            (
                "a frame more than the chunk holds",
                false,
                |m| table(m).chunks[1].push(StoredFrame { stored_length: 10, stored_crc32c: 0 }),
                "trailing bytes",
            ),
            (
                "a frame fewer",
                false,
                |m| {
                    table(m).chunks[1].pop();
                },
                "",
            ),
            (
                "frames of half the size: four frames, the table holds two",
                false,
                |m| table(m).frame_size = 300,
                "exceeds",
            ),
            (
                "a frame of no bytes",
                false,
                |m| {
                    let f = &mut table(m).chunks[1];
                    (f[0].stored_length, f[1].stored_length) = (0, 400);
                },
                "frame 0 has 0 stored bytes",
            ),
            (
                "a sealed frame shorter than its nonce and tag",
                true,
                |m| {
                    let f = &mut table(m).chunks[1];
                    (f[0].stored_length, f[1].stored_length) = (28, 428);
                },
                "frame 0 has 28 stored bytes, fewer than 29",
            ),
            ("an encrypted chunk in a segment not encrypted", true, |m| m.encryption = None, "is encrypted"),
        ];
        for (case, encrypted, edit, says) in cases {
            let mut m = framed_sample(encrypted);
            edit(&mut m);
            let e = Manifest::decode(&m.encode(), "t/0/seg.manifest").unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{case}: {e}");
            assert!(e.to_string().contains("manifest t/0/seg.manifest") && e.to_string().contains(says), "{case}: {e}");
        }
        // Edits of the bytes: a chunk in frames under an older version; version 5 with no chunk in frames;
        // an encryption flag neither 0 nor 1.
        let bytes = framed_sample(false).encode();
        let mut v3 = bytes[..bytes.len() - 4 - 4 - 16 - 1].to_vec();
        v3[5] = 3;
        v3.extend_from_slice(&[0; 4]);
        let e = Manifest::decode(&resealed(v3), "k").unwrap_err();
        assert!(e.to_string().contains("chunk 1 is stored in frames (ZstdFrames), which manifest version 3"), "{e}");
        let mut v5 = compressed_sample().encode();
        v5.truncate(v5.len() - 4);
        v5[5] = 5;
        v5.extend_from_slice(&600u32.to_be_bytes());
        v5.extend_from_slice(&[0, 0, 0, 0, 0]);
        let e = Manifest::decode(&resealed(v5), "k").unwrap_err();
        assert!(e.to_string().contains("version 5 with no chunk stored in frames"), "{e}");
        let mut flag = bytes.clone();
        let at = flag.len() - 5;
        flag[at] = 2;
        let e = Manifest::decode(&resealed(flag), "k").unwrap_err();
        assert!(e.to_string().contains("encryption flag 2"), "{e}");
    }

    #[test]
    fn a_manifest_cut_anywhere_in_its_frame_section_is_corrupt() {
        for encrypted in [false, true] {
            let bytes = framed_sample(encrypted).encode();
            // The section: frame size, two frames, the flag, and the key block when encrypted.
            let section = 4 + 16 + 1 + if encrypted { 66 } else { 0 };
            let body = bytes.len() - 4;
            for cut in body - section..body {
                let mut b = bytes[..cut].to_vec();
                b.extend_from_slice(&[0; 4]);
                let e = Manifest::decode(&resealed(b), "t/0/seg.manifest").unwrap_err();
                assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "cut at {cut}: {e}");
                assert!(e.to_string().contains("manifest t/0/seg.manifest"), "cut at {cut}: {e}");
            }
        }
    }

    /// `m` with its data key wrapped by a KEK provider: a blob of `n` bytes.
    fn provider_keyed(mut m: Manifest, n: usize) -> Manifest {
        m.encryption = Some(KeyEnvelope { kek_id: "kms".into(), wrapped: Wrapped::Provider(vec![0xb1; n]) });
        m
    }

    #[test]
    fn a_key_wrapped_by_a_provider_makes_version_6_and_only_it() {
        // Key files keep versions 4 and 5 byte for byte; a provider's blob is version 6, with frames or not.
        assert_eq!(&encrypted_sample().encode()[..6], b"RSMM\0\x04");
        assert_eq!(&framed_sample(true).encode()[..6], b"RSMM\0\x05");
        for (m, section) in [
            (provider_keyed(encrypted_sample(), 180), 4 + 1 + 1 + 3 + 2 + 180),
            (provider_keyed(framed_sample(true), 1), 4 + 16 + 1 + 1 + 3 + 2 + 1),
            (
                provider_keyed(framed_sample(true), MAX_PROVIDER_BLOB_LEN),
                4 + 16 + 1 + 1 + 3 + 2 + MAX_PROVIDER_BLOB_LEN,
            ),
        ] {
            let bytes = m.encode();
            assert_eq!(&bytes[..6], b"RSMM\0\x06");
            assert_eq!(Manifest::decode(&bytes, "k").unwrap(), m);
            every_corruption_is_detected_in(m.clone());
            let body = bytes.len() - 4;
            for cut in body - section..body {
                let mut b = bytes[..cut].to_vec();
                b.extend_from_slice(&[0; 4]);
                let e = Manifest::decode(&resealed(b), "k").unwrap_err();
                assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "cut at {cut}: {e}");
            }
        }
        // A blob's length out of bounds, and a version-6 flag other than 2, are corrupt (nothing allocated).
        for n in [0u16, MAX_PROVIDER_BLOB_LEN as u16 + 1, u16::MAX] {
            let mut b = provider_keyed(encrypted_sample(), 1).encode();
            let at = b.len() - 4 - 1 - 2;
            b[at..at + 2].copy_from_slice(&n.to_be_bytes());
            let e = Manifest::decode(&resealed(b), "k").unwrap_err();
            assert!(e.to_string().contains(&format!("a wrapped key of {n} bytes")), "{e}");
        }
        let mut b = provider_keyed(encrypted_sample(), 1).encode();
        let at = b.len() - 4 - 1 - 2 - 3 - 1 - 1;
        b[at] = 1;
        let e = Manifest::decode(&resealed(b), "k").unwrap_err();
        assert!(e.to_string().contains("encryption flag 1, not 2"), "{e}");
        // A chunk in frames with a frame size of 0.
        let mut b = provider_keyed(framed_sample(true), 1).encode();
        let at = b.len() - 4 - (4 + 16 + 1 + 1 + 3 + 2 + 1);
        b[at..at + 4].copy_from_slice(&[0; 4]);
        let e = Manifest::decode(&resealed(b), "k").unwrap_err();
        assert!(e.to_string().contains("frame size is 0"), "{e}");
    }

    fn every_corruption_is_detected_in(m: Manifest) {
        let bytes = m.encode();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            let e = Manifest::decode(&b, "seg.manifest").unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "byte {i}");
            assert!(e.to_string().contains("manifest seg.manifest"), "byte {i}: {e}");
        }
        for len in [0, 5, bytes.len() - 1] {
            assert_eq!(Manifest::decode(&bytes[..len], "k").unwrap_err().kind(), crate::ErrorKind::Corrupt);
        }
    }
}
