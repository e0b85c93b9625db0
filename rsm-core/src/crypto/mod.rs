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
//! - **Where KEKs live.** A KEK is anything that wraps and unwraps data keys ([`KeyEncryptionKey`], async,
//!   so a remote one does not block a runtime thread): a key file ([`LocalKek`], wrapping with AES-256-GCM
//!   here, [`Wrapped::Local`]), or an AWS KMS key (`encryption.key.<id>.kms.key.id`), whose bytes never
//!   leave KMS: KMS generates each data key (GenerateDataKey) and unwraps it (Decrypt), the manifest keeps
//!   its ciphertext blob ([`Wrapped::Provider`], at most [`MAX_PROVIDER_BLOB_LEN`] bytes) with an
//!   encryption context binding the segment and the KEK id as the local wrap's associated data does. The
//!   core holds only the trait and the settings; the KMS client lives beside the S3 backend
//!   (`rsm_backend_s3::kms`), and the host passes it in as a [`KmsConnector`] where the settings are read
//!   ([`KeyRing::read`]; the facade's store builder passes `rsm_backend_s3::kms::AwsKms`).
//!   [`KeyRing`] holds the KEKs by id, the active one, and the per-topic ones
//!   (`encryption.topic.<topic>.key.id`); a reader keeps each segment's unwrapped data key in memory, so a
//!   KMS is asked once per segment, not once per fetch.
//!
//! The parts, one module each, their items re-exported here: `settings` (the `encryption.*` settings and
//! the KMS client's), `kek` (the KEK trait, the KEK of a key file, the KMS connector trait), `keyring`
//! (the KEKs by id, read from the settings), `seal` (AES-256-GCM of chunks, blocks and frames under a
//! data key), `envelope` (a data key wrapped under a KEK: generated, unwrapped, rewrapped) and
//! `key_cache` (unwrapped data keys kept in memory).

mod aiven;
mod envelope;
mod kek;
mod key_cache;
mod keyring;
mod seal;
mod settings;

pub use aiven::{AivenDataKey, AivenKeyPairs};
pub use envelope::KeyEnvelope;
pub use kek::{KeyEncryptionKey, KmsConnector, LocalKek, WrapContext, Wrapped};
pub use key_cache::DataKeyCache;
pub use keyring::{KekSource, KeyRing};
pub use seal::{ChunkBinding, DataKey, chunk_aad, sealed_blocks_len};
pub use settings::{
    ENCRYPTION_ENABLED, ENCRYPTION_ENABLED_KEY, ENCRYPTION_KEY_FILE, ENCRYPTION_KEY_ID, ENCRYPTION_KEY_ID_KEY,
    ENCRYPTION_KEY_KMS, ENCRYPTION_KEYS, ENCRYPTION_KEYS_KEY, ENCRYPTION_KMS_ACCESS_KEY_ID, ENCRYPTION_KMS_ENDPOINT,
    ENCRYPTION_KMS_KEY_ID, ENCRYPTION_KMS_REGION, ENCRYPTION_KMS_SECRET_ACCESS_KEY, ENCRYPTION_KMS_SESSION_TOKEN,
    ENCRYPTION_TOPIC_KEY_ID, KmsSettings, SHORT_KMS_KEK_ID, key_file_setting, kms_key_setting, topic_key_setting,
};

use crate::error::{Error, Result};
use ring::aead::{AES_256_GCM, LessSafeKey, NONCE_LEN, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
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
/// The longest wrapped data key of a KEK provider ([`Wrapped::Provider`]: an AWS KMS ciphertext blob is
/// about 150 to 200 bytes).
pub const MAX_PROVIDER_BLOB_LEN: usize = 1024;

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

/// The AES-256-GCM cipher of `key` (a KEK's or a data key's bytes).
fn cipher(key: &[u8; KEY_LEN]) -> LessSafeKey {
    // AES-256-GCM takes any 32-byte key: `UnboundKey::new` fails only on a wrong length.
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte AES-256 key"))
}

/// `N` bytes from the system's random generator; `what` names them in the error.
fn random<const N: usize>(what: &str) -> Result<[u8; N]> {
    let mut b = [0u8; N];
    SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| Error::storage(format!("the system random generator failed ({what})"), "ring::rand"))?;
    Ok(b)
}
