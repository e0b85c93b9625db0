//! The `encryption.*` settings: their declarations (key, kind, checks, meaning), the keys of the
//! per-KEK and per-topic families, and how KMS requests are sent ([`KmsSettings`]).

use crate::config::{ConfigReader, Kind, Secret, Setting};
use crate::error::{Error, Result};

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
    pub(super) fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
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
