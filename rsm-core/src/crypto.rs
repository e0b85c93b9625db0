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
//!   (`rsm_backend_s3::kms`) and is installed with [`set_kms_connector`] by the host (the facade does).
//!   [`KeyRing`] holds the KEKs by id, the active one, and the per-topic ones
//!   (`encryption.topic.<topic>.key.id`); a reader keeps each segment's unwrapped data key in memory, so a
//!   KMS is asked once per segment, not once per fetch.

use crate::config::{ConfigReader, Kind, Secret, Setting};
use crate::error::{Error, Result};
use crate::model::Uuid;
use async_trait::async_trait;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

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

/// `encryption.key.<id>.kms.key.id`: KEK `<id>` is an AWS KMS key (a family, see [`kms_key_setting`]).
pub const ENCRYPTION_KEY_KMS: Setting = Setting::of("encryption.key.<id>.kms.key.id", Kind::String)
    .with_checks("a KMS key id, key ARN, alias (`alias/…`) or alias ARN; instead of `encryption.key.<id>.file`")
    .with_doc(
        "key `<id>` is this AWS KMS key, whose bytes never leave KMS: a copy asks KMS for a fresh data key \
         (GenerateDataKey, AES_256) and keeps its ciphertext blob in the manifest, a reader asks KMS to decrypt it \
         (Decrypt, naming this key) once per segment and keeps the data key in memory only; the encryption context \
         binds the segment and the key id; a key that is disabled, pending deletion or not found fails with a \
         config error naming this setting and the KMS key",
    );
/// `encryption.kms.key.id`: the short form for one active KMS key.
pub const ENCRYPTION_KMS_KEY_ID: Setting = Setting::of("encryption.kms.key.id", Kind::String)
    .with_checks("the id `kms` must not be listed in `encryption.keys` too")
    .with_doc(
        "short for one AWS KMS key under the key id `kms`: adds `kms` to `encryption.keys` with \
         `encryption.key.kms.kms.key.id` set to this, and makes it `encryption.key.id` unless that names another",
    );
/// `encryption.kms.region`.
pub const ENCRYPTION_KMS_REGION: Setting = Setting::of("encryption.kms.region", Kind::String)
    .with_checks("required with a KMS key unless `AWS_REGION` or `AWS_DEFAULT_REGION` is set")
    .with_doc("the AWS region of the KMS keys");
/// `encryption.kms.endpoint`.
pub const ENCRYPTION_KMS_ENDPOINT: Setting = Setting::of("encryption.kms.endpoint", Kind::String)
    .with_checks("an http(s) URL")
    .with_doc("the KMS endpoint (tests, VPC endpoints); when not set, `https://kms.<region>.amazonaws.com`");
/// `encryption.kms.access.key.id`.
pub const ENCRYPTION_KMS_ACCESS_KEY_ID: Setting = Setting::of("encryption.kms.access.key.id", Kind::Secret)
    .with_checks("with `encryption.kms.secret.access.key`")
    .with_doc(
        "the access key id KMS requests are signed with (SigV4); when not set, the default AWS chain \
         (environment, web identity, ECS, instance metadata)",
    );
/// `encryption.kms.secret.access.key`.
pub const ENCRYPTION_KMS_SECRET_ACCESS_KEY: Setting = Setting::of("encryption.kms.secret.access.key", Kind::Secret)
    .with_checks("with `encryption.kms.access.key.id`")
    .with_doc("its secret access key, never logged");
/// `encryption.kms.session.token`.
pub const ENCRYPTION_KMS_SESSION_TOKEN: Setting = Setting::of("encryption.kms.session.token", Kind::Secret)
    .with_doc("with static keys: a session token of temporary credentials, never logged");
/// `encryption.topic.<topic>.key.id`: the KEK of one topic's new copies (a family, see [`topic_key_setting`]).
pub const ENCRYPTION_TOPIC_KEY_ID: Setting = Setting::of("encryption.topic.<topic>.key.id", Kind::String)
    .with_checks(
        "must be listed in `encryption.keys`; the topic is what lies between `encryption.topic.` and `.key.id`",
    )
    .with_doc(
        "the key-encryption key id new copies of topic `<topic>` (which may hold dots) are wrapped under, instead \
         of `encryption.key.id`",
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

/// The setting naming the KMS key of KEK `id` ([`ENCRYPTION_KEY_KMS`] with `<id>` filled in).
pub fn kms_key_setting(id: &str) -> String {
    ENCRYPTION_KEY_KMS.key.replace("<id>", id)
}

/// The setting naming the KEK of topic `topic` ([`ENCRYPTION_TOPIC_KEY_ID`] with `<topic>` filled in).
pub fn topic_key_setting(topic: &str) -> String {
    ENCRYPTION_TOPIC_KEY_ID.key.replace("<topic>", topic)
}

/// The KEK id the short form `encryption.kms.key.id` gives its key.
pub const SHORT_KMS_KEK_ID: &str = "kms";

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
    /// [`MAX_PROVIDER_BLOB_LEN`] bytes (manifest version 6).
    Provider(Vec<u8>),
}

/// A key-encryption key: wraps and unwraps data keys, each bound to a [`WrapContext`]. Async, so that a KEK
/// in a remote service (a KMS) is asked without blocking a runtime thread. Errors name the KEK id and its
/// setting, never key bytes or credentials: a KEK that cannot be used (disabled, deleted, not allowed) is a
/// [`crate::ErrorKind::Config`] error, a wrap that does not open is [`crate::ErrorKind::Corrupt`].
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

/// How KMS requests are sent (`encryption.kms.*`): region, endpoint and credentials, each falling back to
/// the standard AWS environment variables when not set. `Debug` never shows a secret.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct KmsSettings {
    /// `encryption.kms.region`.
    pub region: Option<String>,
    /// `encryption.kms.endpoint`.
    pub endpoint: Option<String>,
    /// `encryption.kms.access.key.id`.
    pub access_key_id: Option<Secret>,
    /// `encryption.kms.secret.access.key`.
    pub secret_access_key: Option<Secret>,
    /// `encryption.kms.session.token`.
    pub session_token: Option<Secret>,
}

impl KmsSettings {
    fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let s = KmsSettings {
            region: r.get_string(&ENCRYPTION_KMS_REGION).map(str::to_string),
            endpoint: r.get_string(&ENCRYPTION_KMS_ENDPOINT).map(str::to_string),
            access_key_id: r.get_secret(&ENCRYPTION_KMS_ACCESS_KEY_ID),
            secret_access_key: r.get_secret(&ENCRYPTION_KMS_SECRET_ACCESS_KEY),
            session_token: r.get_secret(&ENCRYPTION_KMS_SESSION_TOKEN),
        };
        match (&s.access_key_id, &s.secret_access_key) {
            (Some(_), None) => Err(Error::config(
                ENCRYPTION_KMS_SECRET_ACCESS_KEY.key,
                format!("is required with `{}`", ENCRYPTION_KMS_ACCESS_KEY_ID.key),
            )),
            (None, Some(_)) => Err(Error::config(
                ENCRYPTION_KMS_ACCESS_KEY_ID.key,
                format!("is required with `{}`", ENCRYPTION_KMS_SECRET_ACCESS_KEY.key),
            )),
            _ => Ok(s),
        }
    }
}

/// What turns a KMS key's settings into a [`KeyEncryptionKey`]: the core speaks no HTTP, so the host
/// installs one ([`set_kms_connector`]; the facade installs `rsm_backend_s3::kms`'s).
pub trait KmsConnector: Send + Sync {
    /// The KEK of the KMS key `key_id`, which the setting `setting` names, sent with `settings`. Errors name
    /// the setting, never a secret.
    fn connect(&self, settings: &KmsSettings, setting: &str, key_id: &str) -> Result<Arc<dyn KeyEncryptionKey>>;
}

static KMS_CONNECTOR: OnceLock<Arc<dyn KmsConnector>> = OnceLock::new();

/// Installs the process's KMS client; the first one installed stays (`false` for a later one).
pub fn set_kms_connector(connector: Arc<dyn KmsConnector>) -> bool {
    KMS_CONNECTOR.set(connector).is_ok()
}

/// Where a KEK's key is, as the settings say (what [`KeyRing`]s compare).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum KekSource {
    /// The bytes of its key file (`encryption.key.<id>.file`).
    File(KeyBytes),
    /// An AWS KMS key (`encryption.key.<id>.kms.key.id`): its id, ARN or alias.
    Kms(String),
}

/// Key-encryption keys by id (`encryption.keys`), each a key file or a KMS key ([`KekSource`]), with the
/// active one (`encryption.key.id`) and the per-topic ones (`encryption.topic.<topic>.key.id`). Two key
/// rings are equal when their settings are. `Debug` shows ids and KMS key ids, never key bytes or secrets.
#[derive(Clone)]
pub struct KeyRing {
    active: Option<String>,
    topics: BTreeMap<String, String>,
    sources: BTreeMap<String, KekSource>,
    kms: Option<KmsSettings>,
    keks: BTreeMap<String, Arc<dyn KeyEncryptionKey>>,
}

impl PartialEq for KeyRing {
    fn eq(&self, o: &Self) -> bool {
        (&self.active, &self.topics, &self.sources, &self.kms) == (&o.active, &o.topics, &o.sources, &o.kms)
    }
}

impl Eq for KeyRing {}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("active", &self.active)
            .field("topics", &self.topics)
            .field("keys", &self.sources)
            .field("kms", &self.kms)
            .finish()
    }
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

/// Whether `key_id` may be a KMS key id, ARN or alias: 1 to 2048 printable ASCII characters, no space.
fn valid_kms_key_id(key_id: &str) -> bool {
    !key_id.is_empty() && key_id.len() <= 2048 && key_id.bytes().all(|b| b.is_ascii_graphic())
}

impl KeyRing {
    /// A keyring of these key-file keys, `active` among them (tests, and callers that hold keys already).
    pub fn from_keys(active: Option<&str>, keys: impl IntoIterator<Item = (String, KeyBytes)>) -> Result<Self> {
        let sources: BTreeMap<String, KekSource> = keys.into_iter().map(|(id, k)| (id, KekSource::File(k))).collect();
        if let Some(a) = active
            && !sources.contains_key(a)
        {
            return Err(Error::config(ENCRYPTION_KEYS_KEY, format!("does not list the active key `{a}`")));
        }
        Self::build(active.map(str::to_string), BTreeMap::new(), sources, None)
    }

    /// The same keyring with KEK `id` (replacing one of that id): a host's own [`KeyEncryptionKey`], or a
    /// test's. `source` is what equality compares it by.
    pub fn with_kek(mut self, id: &str, source: KekSource, kek: Arc<dyn KeyEncryptionKey>) -> Self {
        self.sources.insert(id.to_string(), source);
        self.keks.insert(id.to_string(), kek);
        self
    }

    fn build(
        active: Option<String>,
        topics: BTreeMap<String, String>,
        sources: BTreeMap<String, KekSource>,
        kms: Option<KmsSettings>,
    ) -> Result<Self> {
        let mut keks = BTreeMap::new();
        for (id, source) in &sources {
            let kek: Arc<dyn KeyEncryptionKey> = match source {
                KekSource::File(k) => Arc::new(LocalKek(k.clone())),
                KekSource::Kms(key_id) => {
                    let setting = kms_key_setting(id);
                    let connector = KMS_CONNECTOR.get().ok_or_else(|| {
                        Error::config(
                            &setting,
                            format!(
                                "names AWS KMS key `{key_id}`, and this build has no KMS client installed (hosts \
                                 built with the S3 backend have one: rsm_backend_s3::kms::install)"
                            ),
                        )
                    })?;
                    connector.connect(kms.as_ref().unwrap_or(&KmsSettings::default()), &setting, key_id)?
                }
            };
            keks.insert(id.clone(), kek);
        }
        Ok(KeyRing { active, topics, sources, kms, keks })
    }

    /// The ids it holds.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.sources.keys().map(String::as_str)
    }

    /// Where KEK `id` is, when the keyring holds it.
    pub fn source(&self, id: &str) -> Option<&KekSource> {
        self.sources.get(id)
    }

    /// The per-topic KEK ids (`encryption.topic.<topic>.key.id`), by topic.
    pub fn topic_keys(&self) -> &BTreeMap<String, String> {
        &self.topics
    }

    /// The KEK id new copies of `topic` are wrapped under: the topic's own, else the active one; a config
    /// error when there is none.
    pub fn active_id(&self, topic: &str) -> Result<&str> {
        if let Some(id) = self.topics.get(topic) {
            return Ok(id);
        }
        self.active.as_deref().ok_or_else(|| Error::config(ENCRYPTION_KEY_ID_KEY, "names no active key encryption key"))
    }

    /// The KEK `id`; a [`crate::ErrorKind::Config`] error naming it when the keyring does not hold it.
    pub fn kek(&self, id: &str) -> Result<&Arc<dyn KeyEncryptionKey>> {
        self.keks.get(id).ok_or_else(|| {
            Error::config(
                ENCRYPTION_KEYS_KEY,
                format!("key encryption key `{id}` is not in the keyring (add it to `{ENCRYPTION_KEYS_KEY}`)"),
            )
        })
    }

    /// Reads the `encryption.*` settings: `Ok(None)` when no keys are listed (then `encryption.enabled`
    /// must be false). A keyring is read whenever keys are listed, so a reader with encryption off still
    /// reads encrypted segments. Errors name the setting and the key id, never key bytes or secrets.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Option<(Self, bool)>> {
        let enabled = r.get_bool(&ENCRYPTION_ENABLED)?;
        let mut active = r.get_string(&ENCRYPTION_KEY_ID).map(str::to_string);
        let listed = r.get_string(&ENCRYPTION_KEYS);
        let short_kms = r.get_string(&ENCRYPTION_KMS_KEY_ID);
        let kms = KmsSettings::read(r)?;
        let mut topics = BTreeMap::new();
        for (rest, id) in r.with_prefix("encryption.topic.") {
            let key = format!("encryption.topic.{rest}");
            let topic = rest.strip_suffix(".key.id").filter(|t| !t.is_empty()).ok_or_else(|| {
                Error::config(&key, "unknown setting (a topic's key is `encryption.topic.<topic>.key.id`)")
            })?;
            topics.insert(topic.to_string(), id.trim().to_string());
        }
        if listed.is_none() && short_kms.is_none() {
            if enabled {
                return Err(Error::config(ENCRYPTION_KEYS_KEY, format!("is required with `{ENCRYPTION_ENABLED_KEY}`")));
            }
            if active.is_some() {
                return Err(Error::config(ENCRYPTION_KEYS_KEY, format!("is required with `{ENCRYPTION_KEY_ID_KEY}`")));
            }
            if let Some(topic) = topics.keys().next() {
                return Err(Error::config(topic_key_setting(topic), format!("needs `{ENCRYPTION_KEYS_KEY}`")));
            }
            return Ok(None);
        }
        let mut sources = BTreeMap::new();
        for id in listed.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if !valid_id(id) {
                return Err(Error::config(
                    ENCRYPTION_KEYS_KEY,
                    format!("key id `{id}` is not 1 to 255 characters of letters, digits, `.`, `_` and `-`"),
                ));
            }
            let setting = key_file_setting(id);
            let kms_setting = kms_key_setting(id);
            let source = match (r.string(&setting), r.string(&kms_setting)) {
                (Some(_), Some(_)) => {
                    return Err(Error::config(
                        &setting,
                        format!("key `{id}` is a key file or a KMS key: not both (`{kms_setting}`)"),
                    ));
                }
                (None, None) => {
                    return Err(Error::config(
                        &setting,
                        format!("is required (or `{kms_setting}`): key `{id}` is listed in `{ENCRYPTION_KEYS_KEY}`"),
                    ));
                }
                (None, Some(key_id)) => {
                    if !valid_kms_key_id(key_id) {
                        return Err(Error::config(
                            &kms_setting,
                            format!("key `{id}`: `{key_id}` is not a KMS key id, ARN or alias"),
                        ));
                    }
                    KekSource::Kms(key_id.to_string())
                }
                (Some(path), None) => {
                    let text = std::fs::read(path).map_err(|e| {
                        Error::config(&setting, format!("key `{id}`: cannot read the key file {path}: {e}"))
                    })?;
                    let key = parse_hex_key(&text);
                    let mut text = text;
                    text.fill(0);
                    KekSource::File(
                        key.map_err(|m| Error::config(&setting, format!("key `{id}`: the key file {path} {m}")))?,
                    )
                }
            };
            sources.insert(id.to_string(), source);
        }
        if let Some(key_id) = short_kms {
            if sources.contains_key(SHORT_KMS_KEK_ID) {
                return Err(Error::config(
                    ENCRYPTION_KMS_KEY_ID.key,
                    format!("gives its key the id `{SHORT_KMS_KEK_ID}`, which `{ENCRYPTION_KEYS_KEY}` lists too"),
                ));
            }
            if !valid_kms_key_id(key_id) {
                return Err(Error::config(
                    ENCRYPTION_KMS_KEY_ID.key,
                    format!("`{key_id}` is not a KMS key id, ARN or alias"),
                ));
            }
            sources.insert(SHORT_KMS_KEK_ID.to_string(), KekSource::Kms(key_id.to_string()));
            active.get_or_insert_with(|| SHORT_KMS_KEK_ID.to_string());
        }
        if sources.is_empty() {
            return Err(Error::config(ENCRYPTION_KEYS_KEY, "lists no key id"));
        }
        match &active {
            None if enabled => {
                return Err(Error::config(
                    ENCRYPTION_KEY_ID_KEY,
                    format!("is required with `{ENCRYPTION_ENABLED_KEY}`"),
                ));
            }
            Some(a) if !sources.contains_key(a) => {
                return Err(Error::config(
                    ENCRYPTION_KEY_ID_KEY,
                    format!("names key `{a}`, which `{ENCRYPTION_KEYS_KEY}` does not list"),
                ));
            }
            _ => {}
        }
        for (topic, id) in &topics {
            if !sources.contains_key(id) {
                return Err(Error::config(
                    topic_key_setting(topic),
                    format!("names key `{id}`, which `{ENCRYPTION_KEYS_KEY}` does not list"),
                ));
            }
        }
        let kms = sources.values().any(|s| matches!(s, KekSource::Kms(_))).then_some(kms);
        Ok(Some((Self::build(active, topics, sources, kms)?, enabled)))
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
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct KeyEnvelope {
    /// The id of the KEK it is wrapped under.
    pub kek_id: String,
    /// The wrapped key: a local AES-GCM wrap or a KMS ciphertext blob.
    pub wrapped: Wrapped,
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

impl DataKey {
    /// A fresh data key for the segment (`segment_id`, `start_offset`) of topic `topic`, wrapped under the
    /// keyring's KEK for the topic ([`KeyRing::active_id`]): drawn here for a key file, generated by the KMS
    /// for a KMS key.
    pub async fn generate(
        keyring: &KeyRing,
        topic: &str,
        segment_id: Uuid,
        start_offset: i64,
    ) -> Result<(DataKey, KeyEnvelope)> {
        let kek_id = keyring.active_id(topic)?;
        let ctx = WrapContext { kek_id, segment_id, start_offset };
        let (key, wrapped) = keyring.kek(kek_id)?.generate(ctx).await?;
        Ok((DataKey(cipher(key.expose())), KeyEnvelope { kek_id: kek_id.to_string(), wrapped }))
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
    /// The data key, unwrapped by the keyring's KEK of this envelope's id, for the segment (`segment_id`,
    /// `start_offset`). A KEK id the keyring does not hold, or a KEK that cannot be used (a KMS key disabled
    /// or deleted), is a config error naming it; a wrap that does not open (another key under the same id, or
    /// a wrapped key from another segment) is corrupt.
    pub async fn unwrap(&self, keyring: &KeyRing, segment_id: Uuid, start_offset: i64) -> Result<DataKey> {
        let key = self.unwrap_bytes(keyring, segment_id, start_offset).await?;
        Ok(DataKey(cipher(key.expose())))
    }

    async fn unwrap_bytes(&self, keyring: &KeyRing, segment_id: Uuid, start_offset: i64) -> Result<KeyBytes> {
        let kek = keyring.kek(&self.kek_id).map_err(|e| e.context(format!("segment {segment_id}")))?;
        kek.unwrap(&self.wrapped, WrapContext { kek_id: &self.kek_id, segment_id, start_offset }).await
    }

    /// The same data key wrapped under the keyring's KEK `new_id` (key rotation, between key files and KMS
    /// keys alike: the chunks are untouched).
    pub async fn rewrap(&self, keyring: &KeyRing, new_id: &str, segment_id: Uuid, start_offset: i64) -> Result<Self> {
        let new = keyring.kek(new_id)?;
        let key = self.unwrap_bytes(keyring, segment_id, start_offset).await?;
        let wrapped = new.wrap(&key, WrapContext { kek_id: new_id, segment_id, start_offset }).await?;
        Ok(KeyEnvelope { kek_id: new_id.to_string(), wrapped })
    }
}

/// Segments' data keys, unwrapped once and kept in memory only (never written anywhere), so that a reader
/// asks a KMS once per segment, not once per fetch. An entry is found by the segment and its envelope as
/// the manifest holds it, so a manifest rewritten (rewrapped, or replaced by another's) is unwrapped anew;
/// concurrent first reads of a segment share one unwrap; a failed unwrap is not kept (the next read asks
/// again). At most `capacity` entries (the least recently used leaves first when full).
#[derive(Debug)]
pub struct DataKeyCache {
    keyring: Arc<KeyRing>,
    /// The least recently used key is dropped first when full.
    #[allow(clippy::type_complexity)]
    entries: std::sync::Mutex<lru::LruCache<(Uuid, i64, KeyEnvelope), Arc<tokio::sync::OnceCell<Arc<DataKey>>>>>,
}

impl DataKeyCache {
    /// Data keys of the segments whose KEKs `keyring` holds, at most `capacity` of them.
    pub fn new(keyring: Arc<KeyRing>, capacity: usize) -> Self {
        let capacity = std::num::NonZeroUsize::new(capacity.max(1)).expect("at least one");
        DataKeyCache { keyring, entries: std::sync::Mutex::new(lru::LruCache::new(capacity)) }
    }

    /// The keyring.
    pub fn keyring(&self) -> &KeyRing {
        &self.keyring
    }

    /// The data key `envelope` wraps for the segment (`segment_id`, `start_offset`): kept, or unwrapped
    /// ([`KeyEnvelope::unwrap`]) and kept.
    pub async fn get(&self, envelope: &KeyEnvelope, segment_id: Uuid, start_offset: i64) -> Result<Arc<DataKey>> {
        let cell = {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            let key = (segment_id, start_offset, envelope.clone());
            match entries.get(&key) {
                Some(c) => c.clone(),
                None => {
                    let c = Arc::new(tokio::sync::OnceCell::new());
                    entries.put(key, c.clone());
                    c
                }
            }
        };
        cell.get_or_try_init(|| async { envelope.unwrap(&self.keyring, segment_id, start_offset).await.map(Arc::new) })
            .await
            .cloned()
    }

    /// Drops the data keys of segment `segment` (deleted).
    pub fn forget(&self, segment: &Uuid) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<_> = entries.iter().filter(|((id, _, _), _)| id == segment).map(|(k, _)| k.clone()).collect();
        for k in gone {
            entries.pop(&k);
        }
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
            KeyRing::read(&mut ConfigReader::new(&p))
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
        assert_eq!(ring.active_id("any").unwrap(), "k1");
        assert!(matches!(ring.source("k2"), Some(KekSource::File(k)) if k.expose()[0] == 0xff));
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
                vec![("encryption.keys", "k1"), ("encryption.key.k1.file", &k1), ("encryption.key.k1.kms.key.id", "x")],
                "encryption.key.k1.file",
                "not both",
            ),
            (
                vec![
                    ("encryption.keys", "k1"),
                    ("encryption.key.k1.file", &k1),
                    ("encryption.topic.orders.v2.key.id", "k2"),
                ],
                "encryption.topic.orders.v2.key.id",
                "names key `k2`",
            ),
            (
                vec![("encryption.keys", "k1"), ("encryption.key.k1.file", &k1), ("encryption.topic.orders", "k1")],
                "encryption.topic.orders",
                "unknown setting",
            ),
            (vec![("encryption.topic.t.key.id", "k1")], "encryption.topic.t.key.id", "needs"),
            (
                vec![("encryption.kms.key.id", "k"), ("encryption.keys", "kms"), ("encryption.key.kms.file", &k1)],
                "encryption.kms.key.id",
                "lists too",
            ),
            (
                vec![
                    ("encryption.keys", "k1"),
                    ("encryption.key.k1.file", &k1),
                    ("encryption.kms.access.key.id", "AKIDSECRETLY"),
                ],
                "encryption.kms.secret.access.key",
                "required",
            ),
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
        let e = ring.kek("k9").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert!(e.to_string().contains("`k9`"), "{e}");
        // A topic's own key; topic names hold dots.
        let (ring, _) = read(&[
            ("encryption.key.id", "k1"),
            ("encryption.keys", "k1,k2"),
            ("encryption.key.k1.file", &k1),
            ("encryption.key.k2.file", &k2),
            ("encryption.topic.orders.eu.key.id", "k2"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(ring.active_id("orders.eu").unwrap(), "k2");
        assert_eq!(ring.active_id("orders").unwrap(), "k1");
    }

    #[tokio::test]
    async fn wraps_bind_the_segment_and_the_key_id() {
        let k = |b: u8| KeyBytes::new([b; KEY_LEN]);
        let ring = KeyRing::from_keys(Some("a"), [("a".to_string(), k(1)), ("b".to_string(), k(2))]).unwrap();
        let seg = Uuid::new(1, 2);
        let (_, env) = DataKey::generate(&ring, "t", seg, 100).await.unwrap();
        env.unwrap(&ring, seg, 100).await.unwrap();
        let wrong = KeyRing::from_keys(Some("a"), [("a".to_string(), k(9))]).unwrap();
        let cases = [
            ("another segment", env.unwrap(&ring, Uuid::new(1, 3), 100).await.unwrap_err()),
            ("another start offset", env.unwrap(&ring, seg, 101).await.unwrap_err()),
            (
                "relabelled",
                KeyEnvelope { kek_id: "b".into(), ..env.clone() }.unwrap(&ring, seg, 100).await.unwrap_err(),
            ),
            ("other bytes under the same id", env.unwrap(&wrong, seg, 100).await.unwrap_err()),
            (
                "a provider's blob under a key file",
                KeyEnvelope { kek_id: "a".into(), wrapped: Wrapped::Provider(vec![1; 150]) }
                    .unwrap(&ring, seg, 100)
                    .await
                    .unwrap_err(),
            ),
        ];
        for (case, e) in cases {
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{case}: {e}");
        }
        let b = env.rewrap(&ring, "b", seg, 100).await.unwrap();
        assert_eq!(b.kek_id, "b");
        let only_b = KeyRing::from_keys(None, [("b".to_string(), k(2))]).unwrap();
        b.unwrap(&only_b, seg, 100).await.unwrap();
        let e = env.unwrap(&only_b, seg, 100).await.unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert!(e.to_string().contains("`a` is not in the keyring"), "{e}");
    }

    #[test]
    fn a_kms_key_without_a_kms_client_is_a_config_error_naming_it() {
        // No connector is installed in the core's own tests.
        let p = props([
            ("encryption.kms.key.id", "alias/rsm"),
            ("encryption.kms.access.key.id", "AKIDEXAMPLE"),
            ("encryption.kms.secret.access.key", "s3cr3t"),
        ]);
        let e = KeyRing::read(&mut ConfigReader::new(&p)).unwrap_err();
        assert_eq!(e.config_key(), Some("encryption.key.kms.kms.key.id"), "{e}");
        assert!(e.to_string().contains("`alias/rsm`") && !e.full_message().contains("s3cr3t"), "{e}");
    }

    /// The data-key cache keeps at most its capacity, dropping the least recently used first, and a
    /// segment's key once forgotten is unwrapped anew.
    #[tokio::test]
    async fn the_data_key_cache_drops_the_least_recently_used_first() {
        let ring = Arc::new(KeyRing::from_keys(Some("a"), [("a".to_string(), KeyBytes::new([1; KEY_LEN]))]).unwrap());
        let mut segments = Vec::new();
        for i in 0..3 {
            let seg = Uuid::new(7, i);
            segments.push((seg, DataKey::generate(&ring, "t", seg, 0).await.unwrap().1));
        }
        let cache = DataKeyCache::new(ring, 2);
        let get = |i: usize| {
            let (seg, env) = &segments[i];
            cache.get(env, *seg, 0)
        };
        let (a, b) = (get(0).await.unwrap(), get(1).await.unwrap());
        assert!(Arc::ptr_eq(&a, &get(0).await.unwrap()), "kept");
        get(2).await.unwrap(); // full: the least recently used (segment 1) leaves, not segment 0
        assert!(Arc::ptr_eq(&a, &get(0).await.unwrap()), "the recently used one is kept");
        assert!(!Arc::ptr_eq(&b, &get(1).await.unwrap()), "the least recently used one was dropped");
        cache.forget(&segments[0].0);
        assert!(!Arc::ptr_eq(&a, &get(0).await.unwrap()), "a forgotten segment is unwrapped anew");
    }
}
