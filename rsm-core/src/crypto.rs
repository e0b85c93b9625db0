//! Envelope encryption of chunks (`encryption.*`): AES-256-GCM (`ring`) under a data key of its own per
//! segment, the data key wrapped by a key-encryption key (KEK) from a [`KeyRing`].
//!
//! Design:
//! - **Data key.** Each encrypted segment gets a fresh random 256-bit data key at copy time
//!   ([`DataKey::generate`]). The manifest keeps it wrapped ([`KeyEnvelope`]): AES-256-GCM under the KEK, a
//!   random 96-bit nonce, and associated data binding the segment (id and start offset) and the KEK id, so a
//!   wrapped key copied into another segment's manifest, or relabelled with another KEK id, does not unwrap.
//!   AES-256-GCM wrapping rather than RSA-OAEP (the Java plugin's): a symmetric KEK is 32 bytes in a file
//!   or a KMS, with no key pair to manage, and `ring` has no AES-KW; a random nonce per wrap is safe at the
//!   rate segments are copied (2^32 wraps per KEK keep the collision chance negligible).
//! - **Chunks.** A chunk only encrypted is sealed block by block, in the manifest's integrity blocks
//!   (`chunk.block.size`, 64 KiB by default): `nonce (12) ‖ ciphertext ‖ tag (16)` per block
//!   ([`DataKey::seal_blocks`]), so a 1 MiB read of a 4 MiB chunk reads and decrypts about 1 MiB, not the
//!   chunk (0.04% more bytes stored at 64 KiB blocks). A chunk compressed in frames
//!   (`compression.frame.size`, manifest version 5) is sealed frame by frame ([`DataKey::seal_frame`]), so a
//!   read of part of it decrypts only the frames it decompresses; a chunk compressed as one zstd frame
//!   (`compression.frame.size=0`), read whole anyway, is sealed as one piece ([`DataKey::seal_chunk`]). A random nonce per piece
//!   stored with it (rather than derived): a copy retried after a crash generates a new data key anyway,
//!   and a stored nonce needs no counter state. The associated data binds the segment id and start
//!   offset, the object, the chunk's index, original position, original length and transform
//!   ([`chunk_aad`]), for a block its index in the chunk, and for a frame its index in the chunk and its
//!   original position and length: a chunk, block or frame moved, reordered, or swapped between segments
//!   fails to decrypt.
//!   The KEK id is bound by the data key's wrap, not by each chunk, so that a key rotation
//!   ([`KeyEnvelope::rewrap`]) rewrites the manifest only.
//! - **Keys in memory.** [`KeyBytes`] prints `[redacted]` and is zeroed when dropped; no error names key
//!   bytes, only key ids and settings.

use crate::config::{ConfigReader, Kind, Setting};
use crate::error::{Error, Result};
use crate::model::Uuid;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use std::collections::BTreeMap;
use std::fmt;

/// Length of a key (KEK or data key): 256 bits.
pub const KEY_LEN: usize = 32;
/// Length of an AES-GCM nonce.
pub const NONCE_BYTES: usize = NONCE_LEN;
/// Length of an AES-GCM tag.
pub const TAG_BYTES: usize = 16;
/// What encryption adds to a chunk's stored length: its nonce and tag.
pub const CHUNK_OVERHEAD: usize = NONCE_BYTES + TAG_BYTES;
/// Length of a wrapped data key: the key and its tag.
pub const WRAPPED_LEN: usize = KEY_LEN + TAG_BYTES;
/// The longest KEK id.
pub const MAX_KEY_ID_LEN: usize = 255;

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

/// `encryption.enabled`: encrypt new copies.
pub const ENCRYPTION_ENABLED: Setting = Setting::bool("encryption.enabled", false).with_doc(
    "encrypt every chunk of a new copy with AES-256-GCM (after compression; a chunk left uncompressed block by \
     block, so a read of part of it decrypts only its blocks) under a fresh data key per segment, wrapped \
     (AES-256-GCM) under the key-encryption key `encryption.key.id`; a chunk's associated data binds its segment, \
     index, position and length, so a chunk moved, reordered or swapped reads as corrupt; segments copied before, \
     or without it, read as they are",
);
/// `encryption.key.id`: the active KEK.
pub const ENCRYPTION_KEY_ID: Setting = Setting::of("encryption.key.id", Kind::String)
    .with_checks("must be listed in `encryption.keys`; required with `encryption.enabled`")
    .with_doc("the active key-encryption key id: new copies are wrapped under it");
/// `encryption.keys`: the KEK ids kept for reading.
pub const ENCRYPTION_KEYS: Setting = Setting::of("encryption.keys", Kind::List)
    .with_checks("ids of 1 … 255 characters of letters, digits, `.`, `_`, `-`")
    .with_doc(
        "comma-separated key-encryption key ids kept for reading; listed keys are loaded even with \
         `encryption.enabled=false`, so encrypted segments still read; a segment whose key id is not listed fails \
         with a config error naming the id",
    );
/// `encryption.key.<id>.file`: the file of one KEK (a family: one key per listed id, see [`key_file_setting`]).
pub const ENCRYPTION_KEY_FILE: Setting =
    Setting::of("encryption.key.<id>.file", Kind::Path).with_checks("required for every listed id").with_doc(
        "the file holding key `<id>`: 64 hexadecimal characters (256 bits), surrounding whitespace ignored; errors \
         name the id and the setting, never the key",
    );

/// The setting that turns encryption of new copies on.
pub const ENCRYPTION_ENABLED_KEY: &str = ENCRYPTION_ENABLED.key;
/// The setting naming the active KEK (new copies are wrapped under it).
pub const ENCRYPTION_KEY_ID_KEY: &str = ENCRYPTION_KEY_ID.key;
/// The setting listing the KEK ids kept for reading.
pub const ENCRYPTION_KEYS_KEY: &str = ENCRYPTION_KEYS.key;

/// The setting of the file holding KEK `id` ([`ENCRYPTION_KEY_FILE`] with `<id>` filled in).
pub fn key_file_setting(id: &str) -> String {
    ENCRYPTION_KEY_FILE.key.replace("<id>", id)
}

/// 256 bits of key material. `Debug` prints `[redacted]`; the bytes are zeroed on drop.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyBytes([u8; KEY_LEN]);

impl KeyBytes {
    /// Wraps key bytes.
    pub fn new(bytes: [u8; KEY_LEN]) -> Self {
        KeyBytes(bytes)
    }

    /// The key bytes, for the cipher.
    pub fn expose(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Drop for KeyBytes {
    fn drop(&mut self) {
        for b in self.0.iter_mut() {
            // SAFETY: `b` is a valid, aligned, exclusive reference to a byte of `self`.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Key-encryption keys by id.
pub trait KeyRing: Send + Sync + fmt::Debug {
    /// The active KEK (new data keys are wrapped under it), with its id; a config error when there is none.
    fn active(&self) -> Result<(&str, &KeyBytes)>;
    /// The KEK `id`; a [`crate::ErrorKind::Config`] error naming it when the keyring does not hold it.
    fn get(&self, id: &str) -> Result<&KeyBytes>;
}

/// KEKs read from files (`encryption.keys`, `encryption.key.<id>.file`): each file holds one 256-bit key
/// as 64 hexadecimal characters (surrounding whitespace ignored).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FileKeyRing {
    active: Option<String>,
    keys: BTreeMap<String, KeyBytes>,
}

/// Parses a key file's text: 64 hex characters once trimmed. The error never quotes the text.
fn parse_hex_key(text: &[u8]) -> std::result::Result<KeyBytes, String> {
    let t = text.trim_ascii();
    if t.len() != 2 * KEY_LEN {
        return Err(format!(
            "holds {} characters once trimmed; expected 64 hexadecimal characters (256 bits)",
            t.len()
        ));
    }
    let mut key = [0u8; KEY_LEN];
    for (i, pair) in t.chunks_exact(2).enumerate() {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        match (hex(pair[0]), hex(pair[1])) {
            (Some(h), Some(l)) => key[i] = h << 4 | l,
            _ => {
                key.fill(0);
                return Err(format!("character {} is not hexadecimal", 2 * i + 1));
            }
        }
    }
    let k = KeyBytes(key);
    key.fill(0);
    Ok(k)
}

/// Whether `id` is a valid KEK id: 1 to 255 characters of `[A-Za-z0-9._-]` (it appears in setting names).
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_KEY_ID_LEN
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl FileKeyRing {
    /// A keyring of these keys, `active` among them (tests, and callers that hold keys already).
    pub fn from_keys(active: Option<&str>, keys: impl IntoIterator<Item = (String, KeyBytes)>) -> Result<Self> {
        let keys: BTreeMap<String, KeyBytes> = keys.into_iter().collect();
        if let Some(a) = active
            && !keys.contains_key(a)
        {
            return Err(Error::config(ENCRYPTION_KEYS_KEY, format!("does not list the active key `{a}`")));
        }
        Ok(FileKeyRing { active: active.map(str::to_string), keys })
    }

    /// The ids it holds.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Reads the `encryption.*` settings: `Ok(None)` when no keys are listed (then `encryption.enabled`
    /// must be false). A keyring is read whenever keys are listed, so a reader with encryption off still
    /// reads encrypted segments. Errors name the setting and the key id, never key bytes.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Option<(Self, bool)>> {
        let enabled = r.get_bool(&ENCRYPTION_ENABLED)?;
        let active = r.get_string(&ENCRYPTION_KEY_ID).map(str::to_string);
        let listed = r.get_string(&ENCRYPTION_KEYS);
        let Some(listed) = listed else {
            if enabled {
                return Err(Error::config(ENCRYPTION_KEYS_KEY, format!("is required with `{ENCRYPTION_ENABLED_KEY}`")));
            }
            if active.is_some() {
                return Err(Error::config(ENCRYPTION_KEYS_KEY, format!("is required with `{ENCRYPTION_KEY_ID_KEY}`")));
            }
            return Ok(None);
        };
        let mut keys = BTreeMap::new();
        for id in listed.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if !valid_id(id) {
                return Err(Error::config(
                    ENCRYPTION_KEYS_KEY,
                    format!("key id `{id}` is not 1 to 255 characters of letters, digits, `.`, `_` and `-`"),
                ));
            }
            let setting = key_file_setting(id);
            let path = r.string(&setting).ok_or_else(|| {
                Error::config(&setting, format!("is required: key `{id}` is listed in `{ENCRYPTION_KEYS_KEY}`"))
            })?;
            let text = std::fs::read(path)
                .map_err(|e| Error::config(&setting, format!("key `{id}`: cannot read the key file {path}: {e}")))?;
            let key = parse_hex_key(&text);
            let mut text = text;
            text.fill(0);
            let key = key.map_err(|m| Error::config(&setting, format!("key `{id}`: the key file {path} {m}")))?;
            keys.insert(id.to_string(), key);
        }
        if keys.is_empty() {
            return Err(Error::config(ENCRYPTION_KEYS_KEY, "lists no key id"));
        }
        match &active {
            None if enabled => {
                return Err(Error::config(
                    ENCRYPTION_KEY_ID_KEY,
                    format!("is required with `{ENCRYPTION_ENABLED_KEY}`"),
                ));
            }
            Some(a) if !keys.contains_key(a) => {
                return Err(Error::config(
                    ENCRYPTION_KEY_ID_KEY,
                    format!("names key `{a}`, which `{ENCRYPTION_KEYS_KEY}` does not list"),
                ));
            }
            _ => {}
        }
        Ok(Some((FileKeyRing { active, keys }, enabled)))
    }
}

impl KeyRing for FileKeyRing {
    fn active(&self) -> Result<(&str, &KeyBytes)> {
        let id = self
            .active
            .as_deref()
            .ok_or_else(|| Error::config(ENCRYPTION_KEY_ID_KEY, "names no active key encryption key"))?;
        Ok((id, self.get(id)?))
    }

    fn get(&self, id: &str) -> Result<&KeyBytes> {
        self.keys.get(id).ok_or_else(|| {
            Error::config(
                ENCRYPTION_KEYS_KEY,
                format!("key encryption key `{id}` is not in the keyring (add it to `{ENCRYPTION_KEYS_KEY}`)"),
            )
        })
    }
}

fn cipher(key: &[u8; KEY_LEN]) -> LessSafeKey {
    // AES-256-GCM takes any 32-byte key: `UnboundKey::new` fails only on a wrong length.
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte AES-256 key"))
}

fn random<const N: usize>(what: &str) -> Result<[u8; N]> {
    let mut b = [0u8; N];
    SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| Error::storage(format!("the system random generator failed ({what})"), "ring::rand"))?;
    Ok(b)
}

/// A segment's data key, unwrapped. `Debug` prints `[redacted]`.
pub struct DataKey(LessSafeKey);

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey([redacted])")
    }
}

/// A segment's data key as the manifest keeps it: wrapped under the KEK `kek_id`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KeyEnvelope {
    /// The id of the KEK it is wrapped under.
    pub kek_id: String,
    /// The nonce of the wrap.
    pub nonce: [u8; NONCE_BYTES],
    /// The wrapped key and its tag.
    pub wrapped: [u8; WRAPPED_LEN],
}

/// The associated data of a data key's wrap: the segment and the KEK id.
fn wrap_aad(segment_id: Uuid, start_offset: i64, kek_id: &str) -> Vec<u8> {
    let mut a = Vec::with_capacity(48 + kek_id.len());
    a.extend_from_slice(b"rsm-dek-wrap-v1\0");
    a.extend_from_slice(&segment_id.to_bytes());
    a.extend_from_slice(&start_offset.to_be_bytes());
    a.extend_from_slice(&(kek_id.len() as u16).to_be_bytes());
    a.extend_from_slice(kek_id.as_bytes());
    a
}

fn wrap(key: &KeyBytes, kek_id: &str, kek: &KeyBytes, segment_id: Uuid, start_offset: i64) -> Result<KeyEnvelope> {
    let nonce = random::<NONCE_BYTES>("data key wrap nonce")?;
    let mut buf = key.expose().to_vec();
    cipher(kek.expose())
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(wrap_aad(segment_id, start_offset, kek_id)),
            &mut buf,
        )
        .map_err(|_| Error::invalid(format!("segment {segment_id}: cannot wrap its data key")))?;
    let mut wrapped = [0u8; WRAPPED_LEN];
    wrapped.copy_from_slice(&buf);
    Ok(KeyEnvelope { kek_id: kek_id.to_string(), nonce, wrapped })
}

impl DataKey {
    /// A fresh random data key for the segment (`segment_id`, `start_offset`), wrapped under the keyring's
    /// active KEK.
    pub fn generate(keyring: &dyn KeyRing, segment_id: Uuid, start_offset: i64) -> Result<(DataKey, KeyEnvelope)> {
        let (kek_id, kek) = keyring.active()?;
        let key = KeyBytes(random::<KEY_LEN>("data key")?);
        let envelope = wrap(&key, kek_id, kek, segment_id, start_offset)?;
        Ok((DataKey(cipher(key.expose())), envelope))
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
        let mut out = Vec::with_capacity((within.end - within.start) as usize + TAG_BYTES);
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

impl KeyEnvelope {
    /// The data key, unwrapped with the keyring's KEK of this envelope's id, for the segment
    /// (`segment_id`, `start_offset`). A KEK id the keyring does not hold is a config error naming it; a
    /// wrap that does not open (another key under the same id, or a wrapped key from another segment) is
    /// corrupt.
    pub fn unwrap(&self, keyring: &dyn KeyRing, segment_id: Uuid, start_offset: i64) -> Result<DataKey> {
        let key = self.unwrap_bytes(keyring, segment_id, start_offset)?;
        Ok(DataKey(cipher(key.expose())))
    }

    fn unwrap_bytes(&self, keyring: &dyn KeyRing, segment_id: Uuid, start_offset: i64) -> Result<KeyBytes> {
        let kek = keyring.get(&self.kek_id).map_err(|e| e.context(format!("segment {segment_id}")))?;
        let mut buf = self.wrapped.to_vec();
        let opened = cipher(kek.expose())
            .open_in_place(
                Nonce::assume_unique_for_key(self.nonce),
                Aad::from(wrap_aad(segment_id, start_offset, &self.kek_id)),
                &mut buf,
            )
            .map_err(|_| {
                Error::corrupt(format!(
                    "segment {segment_id}: its data key does not unwrap with key encryption key `{}` (the key's \
                     bytes are not those it was wrapped with, or the manifest holds another segment's key)",
                    self.kek_id
                ))
            })?;
        let mut key = [0u8; KEY_LEN];
        key.copy_from_slice(opened);
        buf.fill(0);
        let k = KeyBytes(key);
        key.fill(0);
        Ok(k)
    }

    /// The same data key wrapped under the keyring's KEK `new_id` (key rotation: the chunks are untouched).
    pub fn rewrap(&self, keyring: &dyn KeyRing, new_id: &str, segment_id: Uuid, start_offset: i64) -> Result<Self> {
        let key = self.unwrap_bytes(keyring, segment_id, start_offset)?;
        wrap(&key, new_id, keyring.get(new_id)?, segment_id, start_offset)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::props;

    const HEX1: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const HEX2: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

    #[test]
    fn key_files_are_checked_and_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let f = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p.display().to_string()
        };
        let (k1, k2, short, bad) =
            (f("k1", &format!("  {HEX1}\n")), f("k2", HEX2), f("s", &HEX1[..62]), f("b", &HEX1.replace('0', "g")));
        let missing = dir.path().join("none").display().to_string();
        let read = |pairs: &[(&str, &str)]| {
            let p = props(pairs.iter().copied());
            FileKeyRing::read(&mut ConfigReader::new(&p))
        };
        let (ring, enabled) = read(&[
            ("encryption.enabled", "true"),
            ("encryption.key.id", "k1"),
            ("encryption.keys", "k1, k2"),
            ("encryption.key.k1.file", &k1),
            ("encryption.key.k2.file", &k2),
        ])
        .unwrap()
        .unwrap();
        assert!(enabled);
        assert_eq!(ring.active().unwrap().0, "k1");
        assert_eq!(ring.get("k2").unwrap().expose()[0], 0xff);
        let debug = format!("{ring:?}");
        assert!(debug.contains("[redacted]") && !debug.contains("00112233") && !debug.contains("ffeedd"), "{debug}");
        assert!(read(&[]).unwrap().is_none());
        // (settings, the key the error names, a piece of its message)
        type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);
        let cases: Vec<Case> = vec![
            (vec![("encryption.enabled", "true")], "encryption.keys", "required"),
            (vec![("encryption.key.id", "k1")], "encryption.keys", "required"),
            (vec![("encryption.keys", "k1")], "encryption.key.k1.file", "key `k1` is listed"),
            (
                vec![("encryption.keys", "k1"), ("encryption.key.k1.file", &missing)],
                "encryption.key.k1.file",
                "key `k1`: cannot read",
            ),
            (
                vec![("encryption.keys", "k1"), ("encryption.key.k1.file", &short)],
                "encryption.key.k1.file",
                "holds 62 characters",
            ),
            (
                vec![("encryption.keys", "k1"), ("encryption.key.k1.file", &bad)],
                "encryption.key.k1.file",
                "not hexadecimal",
            ),
            (vec![("encryption.keys", "k/1")], "encryption.keys", "key id `k/1`"),
            (
                vec![("encryption.enabled", "true"), ("encryption.keys", "k1"), ("encryption.key.k1.file", &k1)],
                "encryption.key.id",
                "required",
            ),
            (
                vec![("encryption.key.id", "k2"), ("encryption.keys", "k1"), ("encryption.key.k1.file", &k1)],
                "encryption.key.id",
                "names key `k2`",
            ),
        ];
        for (settings, key, says) in cases {
            let e = read(&settings).unwrap_err();
            assert_eq!(e.config_key(), Some(key), "{settings:?}: {e}");
            assert!(e.to_string().contains(says), "{settings:?}: {e}");
            assert!(!e.full_message().contains("00112233"), "{e}");
        }
        let e = ring.get("k9").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert!(e.to_string().contains("`k9`"), "{e}");
    }

    #[test]
    fn wraps_bind_the_segment_and_the_key_id() {
        let k = |b: u8| KeyBytes::new([b; KEY_LEN]);
        let ring = FileKeyRing::from_keys(Some("a"), [("a".to_string(), k(1)), ("b".to_string(), k(2))]).unwrap();
        let seg = Uuid::new(1, 2);
        let (_, env) = DataKey::generate(&ring, seg, 100).unwrap();
        env.unwrap(&ring, seg, 100).unwrap();
        let wrong = FileKeyRing::from_keys(Some("a"), [("a".to_string(), k(9))]).unwrap();
        let cases = [
            ("another segment", env.unwrap(&ring, Uuid::new(1, 3), 100).unwrap_err()),
            ("another start offset", env.unwrap(&ring, seg, 101).unwrap_err()),
            ("relabelled", KeyEnvelope { kek_id: "b".into(), ..env.clone() }.unwrap(&ring, seg, 100).unwrap_err()),
            ("other bytes under the same id", env.unwrap(&wrong, seg, 100).unwrap_err()),
        ];
        for (case, e) in cases {
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{case}: {e}");
        }
        let b = env.rewrap(&ring, "b", seg, 100).unwrap();
        assert_eq!(b.kek_id, "b");
        let only_b = FileKeyRing::from_keys(None, [("b".to_string(), k(2))]).unwrap();
        b.unwrap(&only_b, seg, 100).unwrap();
        let e = env.unwrap(&only_b, seg, 100).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert!(e.to_string().contains("`a` is not in the keyring"), "{e}");
    }
}
