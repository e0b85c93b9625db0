//! The keys of segments Aiven's plugin encrypted, read so they stay readable after a switch
//! (`aiven.encryption.key.pairs`): its RSA key pairs (the private keys, PKCS#8 PEM files) unwrap each segment's
//! data key (RSA-OAEP with SHA3-512 for the digest and MGF1, as its `RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`
//! under BouncyCastle), and the data key opens the segment's chunks and indexes: each stored as
//! `IV (12) ‖ ciphertext ‖ tag (16)`, AES-256-GCM with the segment's associated data. Errors name key pair ids
//! and settings, never key bytes.

use super::{KEY_LEN, KeyBytes, NONCE_BYTES, TAG_BYTES, cipher};
use crate::error::{Error, Result};
use crate::format::aiven::AivenEncryption;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce};
use rsa::pkcs8::DecodePrivateKey;
use std::collections::BTreeMap;
use std::fmt;

/// Aiven key pairs by id (only the private halves: reading needs nothing more). `Debug` prints the ids.
#[derive(Clone, Default)]
pub struct AivenKeyPairs {
    pairs: BTreeMap<String, rsa::PrivateKey>,
}

impl fmt::Debug for AivenKeyPairs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AivenKeyPairs").field("ids", &self.pairs.keys().collect::<Vec<_>>()).finish()
    }
}

impl PartialEq for AivenKeyPairs {
    fn eq(&self, other: &Self) -> bool {
        self.pairs.keys().eq(other.pairs.keys())
    }
}

impl Eq for AivenKeyPairs {}

impl AivenKeyPairs {
    /// Adds key pair `id` from the text of its private key file (PEM, `PRIVATE KEY`: PKCS#8), which `setting`
    /// names for errors.
    pub fn add_pem(&mut self, id: &str, pem: &str, setting: &str) -> Result<()> {
        let bad = |why: &str| Error::config(setting, format!("key pair `{id}`: {why}"));
        let body = pem
            .split_once("-----BEGIN PRIVATE KEY-----")
            .and_then(|(_, rest)| rest.split_once("-----END PRIVATE KEY-----"))
            .map(|(body, _)| body.split_whitespace().collect::<String>())
            .ok_or_else(|| bad("not a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`)"))?;
        let der =
            base64::engine::general_purpose::STANDARD.decode(body).map_err(|_| bad("the PEM body is not base64"))?;
        let key = rsa::PrivateKey::from_pkcs8_der(&der).map_err(|_| bad("not an RSA private key in PKCS#8"))?;
        self.pairs.insert(id.to_string(), key);
        Ok(())
    }

    /// The ids held.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.pairs.keys().map(String::as_str)
    }

    /// Unwraps the data key of a segment (`what` names its manifest): a config error when its key pair is not
    /// held, corrupt when the wrapped key does not unwrap to 32 bytes.
    pub fn unwrap(&self, e: &AivenEncryption, what: &str) -> Result<AivenDataKey> {
        let pair = self.pairs.get(&e.key_pair_id).ok_or_else(|| {
            Error::config(
                "aiven.encryption.key.pairs",
                format!("{what} was encrypted under Aiven key pair `{}`, which is not listed", e.key_pair_id),
            )
        })?;
        let plain = pair.oaep_decrypt::<sha3::Sha3_512>(&e.wrapped_key).map_err(|_| {
            Error::corrupt(format!("{what}: its data key does not unwrap with Aiven key pair `{}`", e.key_pair_id))
        })?;
        let bytes: [u8; KEY_LEN] = plain.as_slice().try_into().map_err(|_| {
            Error::corrupt(format!("{what}: its data key unwraps to {} bytes, not {KEY_LEN}", plain.len()))
        })?;
        let key = KeyBytes::new(bytes);
        Ok(AivenDataKey { cipher: cipher(key.expose()), aad: e.aad.clone() })
    }
}

/// A segment's data key, unwrapped, with its associated data. `Debug` prints `[redacted]`.
pub struct AivenDataKey {
    cipher: LessSafeKey,
    aad: Vec<u8>,
}

impl fmt::Debug for AivenDataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AivenDataKey([redacted])")
    }
}

impl AivenDataKey {
    /// Opens one stored piece (a chunk or an index): its plain bytes, or an error naming `what` when the tag
    /// does not check (damaged bytes, another segment's, or another key's).
    pub fn open(&self, stored: &[u8], what: &str) -> Result<Vec<u8>> {
        if stored.len() < NONCE_BYTES + TAG_BYTES {
            return Err(Error::corrupt(format!("{what}: {} bytes, shorter than an IV and a tag", stored.len())));
        }
        let nonce = Nonce::try_assume_unique_for_key(&stored[..NONCE_BYTES])
            .map_err(|_| Error::corrupt(format!("{what}: no IV")))?;
        let mut body = stored[NONCE_BYTES..].to_vec();
        let n = self
            .cipher
            .open_in_place(nonce, Aad::from(&self.aad), &mut body)
            .map_err(|_| {
                Error::corrupt(format!("{what}: the AES-GCM tag does not check (damaged, or not this segment's)"))
            })?
            .len();
        body.truncate(n);
        Ok(body)
    }
}

#[cfg(any(test, feature = "log-writer"))]
impl AivenDataKey {
    /// A fresh data key and associated data, as Aiven's plugin makes them for a segment, with the data key's
    /// bytes, for a fixture writer to wrap.
    pub fn generate() -> Result<(Self, [u8; KEY_LEN], Vec<u8>)> {
        let bytes = super::random::<KEY_LEN>("data key")?;
        let aad = super::random::<32>("associated data")?.to_vec();
        Ok((AivenDataKey { cipher: cipher(&bytes), aad: aad.clone() }, bytes, aad))
    }

    /// Seals `plain` as Aiven's plugin stores a chunk or an index: `IV ‖ ciphertext ‖ tag`.
    pub fn seal(&self, plain: &[u8]) -> Result<Vec<u8>> {
        let iv = super::random::<NONCE_BYTES>("IV")?;
        let mut body = plain.to_vec();
        self.cipher
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(iv), Aad::from(&self.aad), &mut body)
            .map_err(|_| Error::invalid("cannot encrypt"))?;
        Ok([&iv[..], &body].concat())
    }
}

#[cfg(any(test, feature = "log-writer"))]
impl AivenKeyPairs {
    /// Wraps `data_key` under key pair `id`'s public half as Aiven's plugin does, for a fixture writer.
    pub fn wrap(&self, id: &str, data_key: &[u8]) -> Result<Vec<u8>> {
        let pair = self.pairs.get(id).ok_or_else(|| Error::invalid(format!("no key pair `{id}`")))?;
        pair.to_public_key()
            .oaep_encrypt::<sha3::Sha3_512>(data_key)
            .map_err(|_| Error::invalid(format!("cannot wrap under key pair `{id}`")))
    }
}
