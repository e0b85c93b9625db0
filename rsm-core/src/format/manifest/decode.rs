//! Reading a manifest back: section by section, each present or read as the version's layout
//! ([`super::versions`]) says, every bound checked before anything is allocated by it, and every damage a
//! corrupt error.

use super::versions::{EncryptionSection, FrameTableSection, VersionLayout};
use super::{FRAMED_VERSION, FrameTable, IndexLocation, MAGIC, Manifest, OLDEST_VERSION, StoredAs, VERSION, blocks_in};
use crate::crypto::{CHUNK_OVERHEAD, KeyEnvelope, MAX_PROVIDER_BLOB_LEN, NONCE_BYTES, WRAPPED_LEN, Wrapped};
use crate::error::{Error, Result};
use crate::format::chunk::{ChunkEntry, StoredFrame, frame_count};
use crate::format::codec::Reader;
use crate::format::segment_metadata::{read_leader_epoch, read_segment_fields, read_topic_partition, read_uuid};
use crate::model::{CustomMetadata, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition};

impl Manifest {
    /// Decodes and checks a manifest; `what` (the object key) appears in every error.
    pub fn decode(bytes: &[u8], what: &str) -> Result<Self> {
        decode_sections(bytes).map_err(|e| e.context(format!("manifest {what}")))
    }
}

/// The manifest in `bytes`: its magic and CRC checked, then its version's sections in order.
fn decode_sections(bytes: &[u8]) -> Result<Manifest> {
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
    let layout = VersionLayout::of(version).ok_or_else(|| {
        Error::corrupt(format!("version {version} is not supported (this build reads {OLDEST_VERSION} to {VERSION})"))
    })?;
    let metadata = read_metadata(&mut r)?;
    let log_length = r.u64()?;
    let chunk_target = r.u32()?;
    let indexes = read_indexes(&mut r)?;
    let chunks = read_chunks(&mut r, version, layout, &metadata)?;
    let (block_size, block_crcs) = read_block_crcs(&mut r, layout, &chunks)?;
    let frames = read_frame_table(&mut r, layout.frame_table, &chunks, block_size)?;
    let encryption = read_encryption(&mut r, version, layout.encryption, &chunks)?;
    let covered = chunks.last().map_or(0, ChunkEntry::end);
    if covered != log_length || r.remaining() != 0 {
        return Err(Error::corrupt(format!(
            "chunks cover {covered} of {log_length} log bytes; {} trailing bytes",
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

/// The segment's metadata (every version): topic, partition, topic id, the segment's fields, its leader
/// epochs, custom metadata, state and whether its transaction index is empty.
fn read_metadata(r: &mut Reader<'_>) -> Result<RemoteLogSegmentMetadata> {
    let topic_partition = read_topic_partition(r)?;
    let topic_id = read_uuid(r)?;
    let mut metadata = read_segment_fields(r, TopicIdPartition::new(topic_id, topic_partition))?;
    let n_epochs = r.u32()?;
    for _ in 0..n_epochs {
        let (epoch, offset) = read_leader_epoch(r)?;
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
    Ok(metadata)
}

/// The five index locations (every version), in Kafka's order: a presence byte, position, length and CRC
/// each.
fn read_indexes(r: &mut Reader<'_>) -> Result<[Option<IndexLocation>; 5]> {
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
    Ok(indexes)
}

/// The chunk table (every version): the count, then the entries, each of this segment, of a transform the
/// version can hold, and starting where the one before ends.
fn read_chunks(
    r: &mut Reader<'_>,
    version: u16,
    layout: VersionLayout,
    metadata: &RemoteLogSegmentMetadata,
) -> Result<Vec<ChunkEntry>> {
    let (seg_id, start_offset) = (metadata.remote_log_segment_id.id, metadata.start_offset);
    let n_chunks = r.u32()? as usize;
    if n_chunks > r.remaining() / 46 {
        return Err(Error::corrupt(format!("chunk count {n_chunks} exceeds the manifest's size")));
    }
    let mut chunks = Vec::with_capacity(n_chunks);
    let mut expected_position = 0;
    for i in 0..n_chunks {
        let c = ChunkEntry::decode(r)?;
        if c.rdi.segment_id != seg_id || c.rdi.segment_start_offset != start_offset {
            return Err(Error::corrupt(format!("chunk {i} names another segment ({})", c.rdi.segment_id)));
        }
        check_transform(i, &c, version, layout)?;
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
    Ok(chunks)
}

/// Checks that chunk `i`'s transform is one manifest `version` (of `layout`) can hold: encrypted only with
/// an encryption section, and then always where the section has no flag; in frames only with a frame
/// table; transformed at all only from version 3.
fn check_transform(i: usize, c: &ChunkEntry, version: u16, layout: VersionLayout) -> Result<()> {
    let transform = c.rdi.transform;
    let cannot_hold = |what: &str| {
        Err(Error::corrupt(format!(
            "chunk {i} is {what} ({transform:?}), which manifest version {version} cannot hold"
        )))
    };
    if transform.is_encrypted() && layout.encryption == EncryptionSection::Absent {
        return cannot_hold("encrypted");
    }
    if transform.is_framed() && !layout.framed_chunks() {
        return cannot_hold("stored in frames");
    }
    if layout.encryption == EncryptionSection::Always && !transform.is_encrypted() {
        return Err(Error::corrupt(format!(
            "chunk {i} of an encrypted segment (manifest version {version}) is not encrypted ({transform:?})"
        )));
    }
    if c.is_transformed() && !layout.transformed_chunks {
        return cannot_hold("transformed");
    }
    Ok(())
}

/// The block size and a CRC-32C of every block of every chunk (version 2 on; before, no blocks: a block
/// size of 0, each chunk checked whole by its entry's CRC). The count must be the chunks' blocks.
fn read_block_crcs(r: &mut Reader<'_>, layout: VersionLayout, chunks: &[ChunkEntry]) -> Result<(u32, Vec<u32>)> {
    if !layout.block_crcs {
        return Ok((0, Vec::new()));
    }
    let block_size = r.u32()?;
    let count = r.u32()? as usize;
    let want = if block_size == 0 { 0 } else { chunks.iter().map(|c| blocks_in(c.data_length, block_size)).sum() };
    if count != want || count > r.remaining() / 4 {
        return Err(Error::corrupt(format!(
            "{count} block CRCs for blocks of {block_size} bytes, the chunks have {want}"
        )));
    }
    Ok((block_size, (0..count).map(|_| r.u32()).collect::<Result<Vec<u32>>>()?))
}

/// The segment's wrapped data key, as the version's encryption `section` holds it: none before version 4;
/// always a key file's in version 4; by a flag in versions 5 (0 none, 1 a key file's) and 6 (2, a KEK
/// provider's). Every chunk must be encrypted when the segment is and none when it is not.
fn read_encryption(
    r: &mut Reader<'_>,
    version: u16,
    section: EncryptionSection,
    chunks: &[ChunkEntry],
) -> Result<Option<KeyEnvelope>> {
    let encrypted = match section {
        EncryptionSection::Absent => false,
        EncryptionSection::Always => true,
        EncryptionSection::LocalFlag => match r.u8()? {
            0 => false,
            1 => true,
            f => return Err(Error::corrupt(format!("encryption flag {f}, neither 0 nor 1"))),
        },
        EncryptionSection::ProviderFlag => match r.u8()? {
            2 => true,
            f => return Err(Error::corrupt(format!("encryption flag {f}, not 2 (manifest version {version})"))),
        },
    };
    // Without a flag the chunks were checked as they were read (`check_transform`), and this finds none.
    if let Some((i, c)) = chunks.iter().enumerate().find(|(_, c)| c.rdi.transform.is_encrypted() != encrypted) {
        return Err(Error::corrupt(format!(
            "chunk {i} is {} ({:?}) in a segment that is {} (manifest version {version})",
            if encrypted { "not encrypted" } else { "encrypted" },
            c.rdi.transform,
            if encrypted { "encrypted" } else { "not encrypted" }
        )));
    }
    if !encrypted {
        return Ok(None);
    }
    let len = r.u8()? as usize;
    if len == 0 {
        return Err(Error::corrupt("encryption block: an empty key encryption key id"));
    }
    let kek_id = std::str::from_utf8(r.bytes(len)?)
        .map_err(|_| Error::corrupt("encryption block: the key encryption key id is not UTF-8"))?
        .to_string();
    let wrapped = if section == EncryptionSection::ProviderFlag {
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
    Ok(Some(KeyEnvelope { kek_id, wrapped }))
}

/// The frame table (versions 5 and 6; none before): the frame size and the frames of `chunks` (blocks of
/// `block_size`), every bound checked before anything is allocated by it: the frame size a non-zero multiple
/// of the block size, at least one chunk in frames, the whole table (its frame counts derived from the
/// chunks, never read) within the bytes left, no frame without stored bytes (nor, sealed, shorter than a
/// nonce and a tag), and each chunk's frames adding up to exactly its stored length. Where the table is
/// [`FrameTableSection::Optional`] (version 6), a frame size of 0 says no chunk is stored in frames, and no
/// table follows.
fn read_frame_table(
    r: &mut Reader<'_>,
    section: FrameTableSection,
    chunks: &[ChunkEntry],
    block_size: u32,
) -> Result<Option<FrameTable>> {
    if section == FrameTableSection::Absent {
        return Ok(None);
    }
    let framed = |c: &&ChunkEntry| c.rdi.transform.is_framed();
    let frame_size = r.u32()?;
    if section == FrameTableSection::Optional && frame_size == 0 {
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
