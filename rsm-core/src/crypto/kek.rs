//! Key-encryption keys: what a data key's wrap is bound to ([`WrapContext`]) and what it becomes
//! ([`Wrapped`]), the [`KeyEncryptionKey`] trait, the KEK of a key file ([`LocalKek`], whose wraps are
//! AES-256-GCM here), and the [`KmsConnector`] trait, through which a host's KMS client makes the KEK of a
//! KMS key.

use super::settings::KmsSettings;
use super::{KEY_LEN, KeyBytes, NONCE_BYTES, WRAPPED_LEN, cipher, random};
use crate::error::{Error, Result};
use crate::model::Uuid;
use async_trait::async_trait;
use ring::aead::{Aad, Nonce};
use std::fmt;
use std::sync::Arc;

/// What a data key's wrap is bound to: the KEK id and the segment (id and start offset). A local wrap
/// binds it as associated data, a KMS as the encryption context, so a wrapped key moved to another
/// segment's manifest, or relabelled with another KEK id, does not unwrap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrapContext<'a> {
    /// The id of the KEK (as `encryption.keys` lists it, and the manifest names it).
    pub kek_id: &'a str,
    /// The segment's id.
    pub segment_id: Uuid,
    /// The segment's start offset.
    pub start_offset: i64,
}

impl WrapContext<'_> {
    /// The encryption context a KMS binds the wrap to: the segment, its start offset and the KEK id.
    pub fn encryption_context(&self) -> [(&'static str, String); 3] {
        [
            ("rsm:segment", self.segment_id.to_string()),
            ("rsm:start-offset", self.start_offset.to_string()),
            ("rsm:kek", self.kek_id.to_string()),
        ]
    }
}

/// A data key as its KEK wrapped it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Wrapped {
    /// AES-256-GCM under a KEK whose bytes this process holds ([`LocalKek`]; manifest versions 4 and 5).
    Local {
        /// The nonce of the wrap.
        nonce: [u8; NONCE_BYTES],
        /// The wrapped key and its tag.
        wrapped: [u8; WRAPPED_LEN],
    },
    /// What a KEK whose bytes never leave its provider returned (an AWS KMS ciphertext blob), 1 to
    /// [`MAX_PROVIDER_BLOB_LEN`](super::MAX_PROVIDER_BLOB_LEN) bytes (manifest version 6).
    Provider(Vec<u8>),
}

/// A key-encryption key: wraps and unwraps data keys, each bound to a [`WrapContext`]. Async, so that a KEK
/// in a remote service (a KMS) is asked without blocking a runtime thread. Errors name the KEK id and its
/// setting, never key bytes or credentials: a KEK that cannot be used (disabled, deleted, not allowed) is a
/// [`crate::error::ErrorKind::Config`] error, a wrap that does not open is [`crate::error::ErrorKind::Corrupt`].
#[async_trait]
pub trait KeyEncryptionKey: Send + Sync + fmt::Debug {
    /// A fresh random data key and its wrap. By default drawn here and wrapped with [`Self::wrap`]; a KMS
    /// generates it (one request).
    async fn generate(&self, ctx: WrapContext<'_>) -> Result<(KeyBytes, Wrapped)> {
        let key = KeyBytes(random::<KEY_LEN>("data key")?);
        let wrapped = self.wrap(&key, ctx).await?;
        Ok((key, wrapped))
    }

    /// `key` wrapped, bound to `ctx` (a key rotation wraps an unwrapped key again).
    async fn wrap(&self, key: &KeyBytes, ctx: WrapContext<'_>) -> Result<Wrapped>;

    /// The data key `wrapped` holds, when it was wrapped bound to `ctx`.
    async fn unwrap(&self, wrapped: &Wrapped, ctx: WrapContext<'_>) -> Result<KeyBytes>;
}

/// A KEK whose bytes this process holds (a key file): AES-256-GCM wraps ([`Wrapped::Local`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LocalKek(pub KeyBytes);

#[async_trait]
impl KeyEncryptionKey for LocalKek {
    async fn wrap(&self, key: &KeyBytes, ctx: WrapContext<'_>) -> Result<Wrapped> {
        local_wrap(key, &self.0, ctx)
    }

    async fn unwrap(&self, wrapped: &Wrapped, ctx: WrapContext<'_>) -> Result<KeyBytes> {
        match wrapped {
            Wrapped::Local { nonce, wrapped } => local_unwrap(&self.0, nonce, wrapped, ctx),
            Wrapped::Provider(_) => Err(Error::corrupt(format!(
                "segment {}: its data key was wrapped by a key provider (a KMS), and key encryption key `{}` is a \
                 key file",
                ctx.segment_id, ctx.kek_id
            ))),
        }
    }
}

/// What turns a KMS key's settings into a [`KeyEncryptionKey`]: the core speaks no HTTP, so the host passes
/// one where the settings are read ([`KeyRing::read`](super::KeyRing::read), through
/// [`TieredConfig::read_with_kms`](crate::storage::TieredConfig::read_with_kms); the facade's store builder passes
/// `rsm_backend_s3::kms::AwsKms`).
pub trait KmsConnector: Send + Sync {
    /// The KEK of the KMS key `key_id`, which the setting `setting` names, sent with `settings`. Errors name
    /// the setting, never a secret.
    fn connect(&self, settings: &KmsSettings, setting: &str, key_id: &str) -> Result<Arc<dyn KeyEncryptionKey>>;
}

/// The associated data of a data key's local wrap: the segment and the KEK id.
fn wrap_aad(ctx: WrapContext<'_>) -> Vec<u8> {
    let mut a = Vec::with_capacity(48 + ctx.kek_id.len());
    a.extend_from_slice(b"rsm-dek-wrap-v1\0");
    a.extend_from_slice(&ctx.segment_id.to_bytes());
    a.extend_from_slice(&ctx.start_offset.to_be_bytes());
    a.extend_from_slice(&(ctx.kek_id.len() as u16).to_be_bytes());
    a.extend_from_slice(ctx.kek_id.as_bytes());
    a
}

fn local_wrap(key: &KeyBytes, kek: &KeyBytes, ctx: WrapContext<'_>) -> Result<Wrapped> {
    let nonce = random::<NONCE_BYTES>("data key wrap nonce")?;
    let mut buf = key.expose().to_vec();
    cipher(kek.expose())
        .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(wrap_aad(ctx)), &mut buf)
        .map_err(|_| Error::invalid(format!("segment {}: cannot wrap its data key", ctx.segment_id)))?;
    let mut wrapped = [0u8; WRAPPED_LEN];
    wrapped.copy_from_slice(&buf);
    buf.fill(0);
    Ok(Wrapped::Local { nonce, wrapped })
}

fn local_unwrap(
    kek: &KeyBytes,
    nonce: &[u8; NONCE_BYTES],
    wrapped: &[u8; WRAPPED_LEN],
    ctx: WrapContext<'_>,
) -> Result<KeyBytes> {
    let mut buf = wrapped.to_vec();
    let opened = cipher(kek.expose())
        .open_in_place(Nonce::assume_unique_for_key(*nonce), Aad::from(wrap_aad(ctx)), &mut buf)
        .map_err(|_| {
            Error::corrupt(format!(
                "segment {}: its data key does not unwrap with key encryption key `{}` (the key's bytes are not \
                 those it was wrapped with, or the manifest holds another segment's key)",
                ctx.segment_id, ctx.kek_id
            ))
        })?;
    let mut key = [0u8; KEY_LEN];
    key.copy_from_slice(opened);
    buf.fill(0);
    let k = KeyBytes(key);
    key.fill(0);
    Ok(k)
}
