//! The one-object layout (`segment.layout=single`): a segment stored as one `.segment` object,
//!
//! ```text
//! stored log (what `.log` would hold, from byte 0) ‖ index bundle (what `.indexes` would hold)
//!   ‖ manifest (encoded as `.manifest` would be) ‖ trailer (32 bytes, see [`crate::format::trailer`])
//! ```
//!
//! written by one upload (one PUT below the store's multipart threshold), so the object is its own commit
//! point: no reader ever sees part of a segment. Every chunk's stored position and every index's position in
//! its bundle are what they would be in the split layout, so the manifest's format is unchanged; only where
//! the bundle starts ([`StoredAs::Single`]) is new, and the trailer says it.
//!
//! A copy returns the trailer as the segment's custom metadata ([`Trailer::custom_metadata`]: a tag byte and
//! the trailer, 33 bytes), which Kafka keeps with the segment's metadata and hands back to every fetch and
//! delete: with it a reader knows the layout and reads the manifest with one exact ranged read, and a delete
//! deletes the one key. Without it (a host that drops custom metadata, `rsm` tools reading by manifest) the
//! manifest is found from the object's tail (`read_manifest`).
//!
//! [`StoredAs::Single`]: crate::format::manifest::StoredAs::Single

use crate::backend::StorageBackend;
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::format::trailer::{TRAILER_LEN, Trailer};
use bytes::{Bytes, BytesMut};

/// How much of an object's end a reader without the trailer reads first: the trailer and, for all but the
/// largest segments (a 1 GiB segment's manifest is about 64 KiB of block CRCs and its chunk table), the whole
/// manifest, in one request.
pub const TAIL_READ: u64 = 128 << 10;

/// The manifest and trailer bytes a copy appends after the index bundle, and the trailer: the stored log is
/// `indexes_position` bytes, the bundle `indexes_length`.
pub(super) fn manifest_and_trailer(manifest: &[u8], indexes_position: u64, indexes_length: u64) -> (Bytes, Trailer) {
    let trailer = Trailer {
        indexes_position,
        manifest_position: indexes_position + indexes_length,
        manifest_length: u32::try_from(manifest.len()).expect("a manifest is far below 4 GiB"),
    };
    let mut out = BytesMut::with_capacity(manifest.len() + TRAILER_LEN);
    out.extend_from_slice(manifest);
    out.extend_from_slice(&trailer.encode());
    (out.freeze(), trailer)
}

/// Reads the manifest of the one-object segment `key`, and where its data lies. With `known` (from the
/// segment's custom metadata): one ranged read of the manifest and trailer, the trailer checked equal to
/// the known one. Without: one read of the object's last [`TAIL_READ`] bytes, the trailer checked (magic,
/// CRC, the manifest ending where it starts, within the object), and one more ranged read only when the
/// manifest began before the tail read. A damaged or missing trailer, or a manifest that does not fit the
/// trailer, is corrupt, naming `key`. The manifest is not checked against its key here (the caller does).
pub(super) async fn read_manifest(backend: &dyn StorageBackend, key: &str, known: Option<Trailer>) -> Result<Manifest> {
    let (bytes, trailer) = match known {
        Some(t) => {
            let want = t.manifest_position..t.object_size();
            let got = match backend.get_range(key, want.clone()).await {
                // The range starts past the object's end: it is shorter than the copy wrote it.
                Err(e) if e.kind() == crate::error::ErrorKind::InvalidArgument => Bytes::new(),
                r => r?,
            };
            if got.len() as u64 != want.end - want.start {
                return Err(Error::corrupt(format!(
                    "one-object segment {key}: {} bytes from {}, where its metadata puts {} bytes of manifest and \
                     trailer (the object is shorter)",
                    got.len(),
                    want.start,
                    want.end - want.start
                )));
            }
            let found = Trailer::decode(&got[got.len() - TRAILER_LEN..], key)?;
            if found != t {
                return Err(Error::corrupt(format!(
                    "one-object segment {key}: its trailer {found:?} is not the one its metadata carries ({t:?})"
                )));
            }
            (got.slice(..t.manifest_length as usize), t)
        }
        None => {
            let (tail, size) = backend.get_tail(key, TAIL_READ).await?;
            let t = Trailer::of_tail(&tail, size, key)?;
            let tail_start = size - tail.len() as u64;
            let manifest_end = size - TRAILER_LEN as u64;
            let bytes = if t.manifest_position >= tail_start {
                tail.slice((t.manifest_position - tail_start) as usize..(manifest_end - tail_start) as usize)
            } else {
                let head = backend.get_range(key, t.manifest_position..tail_start).await?;
                if head.len() as u64 != tail_start - t.manifest_position {
                    return Err(Error::corrupt(format!(
                        "one-object segment {key}: a read of {}..{tail_start} returned {} bytes",
                        t.manifest_position,
                        head.len()
                    )));
                }
                let mut all = BytesMut::with_capacity(t.manifest_length as usize);
                all.extend_from_slice(&head);
                all.extend_from_slice(&tail[..(manifest_end - tail_start) as usize]);
                all.freeze()
            };
            (bytes, t)
        }
    };
    manifest_of(&bytes, trailer, key)
}

/// The manifest of the one-object segment `key` from its bytes (those `trailer` locates), checked against
/// the trailer: the stored log fills the object up to the index bundle, and every index lies in the bundle;
/// with where its data lies ([`StoredAs::Single`](crate::format::manifest::StoredAs::Single)).
pub fn manifest_of(bytes: &[u8], trailer: Trailer, key: &str) -> Result<Manifest> {
    let mut m = Manifest::decode(bytes, key)?;
    let stored_end = m.chunks.last().map_or(0, |c| c.stored_range().end);
    let bundle = trailer.manifest_position - trailer.indexes_position;
    let index_end = m.indexes.iter().flatten().map(|l| l.position.saturating_add(l.length)).max().unwrap_or(0);
    if stored_end != trailer.indexes_position || index_end > bundle {
        return Err(Error::corrupt(format!(
            "one-object segment {key}: its manifest's chunks end at {stored_end} and indexes at {index_end} of the \
             bundle, where its trailer puts the indexes at {} ({bundle} bytes)",
            trailer.indexes_position
        )));
    }
    m.stored_as = trailer.stored_as();
    Ok(m)
}
