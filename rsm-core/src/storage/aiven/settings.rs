//! The settings that read the segments Aiven's plugin stored (`aiven.*`): off unless asked for.

use crate::config::{ConfigReader, Kind, Setting};
use crate::crypto::AivenKeyPairs;
use crate::error::{Error, Result};

/// `aiven.read.enabled`.
pub const AIVEN_READ_ENABLED: Setting = Setting::bool("aiven.read.enabled", false).with_doc(
    "read the segments Aiven's tiered-storage plugin (1.x, `segment.format=kafka`) stored, so that a switch from \
     it keeps every tiered offset readable: a segment without a manifest of ours is looked up as Aiven's \
     (`.rsm-manifest`) under `aiven.key.prefix`, or under the prefix and key its custom metadata names; its bytes \
     are checked by their AES-GCM tags where it encrypted, by the record batches' own CRCs otherwise; retention \
     deletes its objects too. New copies are ours",
);
/// `aiven.key.prefix`.
pub const AIVEN_KEY_PREFIX: Setting = Setting::of("aiven.key.prefix", Kind::String)
    .with_text_default("")
    .with_doc("the `key.prefix` Aiven's plugin stored segments under (its own setting's value, as it was)");
/// `aiven.encryption.key.pairs`.
pub const AIVEN_KEY_PAIRS: Setting = Setting::of("aiven.encryption.key.pairs", Kind::List)
    .with_checks("ids as Aiven's `encryption.key.pairs` named them")
    .with_doc(
        "the ids of the RSA key pairs Aiven's plugin encrypted segments under (its `encryption.key.pairs`); a \
         segment under a key pair not listed fails to read with a config error naming the id",
    );
/// `aiven.encryption.key.pairs.<id>.private.key.file`.
pub const AIVEN_PRIVATE_KEY_FILE: Setting = Setting::of("aiven.encryption.key.pairs.<id>.private.key.file", Kind::Path)
    .with_checks("required for every listed id; a PKCS#8 PEM file")
    .with_doc(
        "the private key of Aiven key pair `<id>` (the file its `encryption.key.pairs.<id>.private.key.file` \
             named); its public key is not needed to read",
    );

/// What reads Aiven's segments: where they are, and the key pairs that unwrap their data keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AivenConfig {
    /// [`AIVEN_KEY_PREFIX`].
    pub key_prefix: String,
    /// [`AIVEN_KEY_PAIRS`] and their [`AIVEN_PRIVATE_KEY_FILE`]s.
    pub key_pairs: AivenKeyPairs,
}

impl AivenConfig {
    /// Reads the `aiven.*` settings: `None` unless [`AIVEN_READ_ENABLED`]; a key pair listed without a
    /// readable key file is a config error naming its setting.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Option<Self>> {
        let enabled = r.get_bool(&AIVEN_READ_ENABLED)?;
        let key_prefix = r.get_string(&AIVEN_KEY_PREFIX).unwrap_or("").to_string();
        let listed = r.get_string(&AIVEN_KEY_PAIRS).unwrap_or("");
        let mut key_pairs = AivenKeyPairs::default();
        for id in listed.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let setting = AIVEN_PRIVATE_KEY_FILE.key.replace("<id>", id);
            let path = r.string(&setting).ok_or_else(|| {
                Error::config(&setting, format!("is required: key pair `{id}` is listed in `{}`", AIVEN_KEY_PAIRS.key))
            })?;
            let pem = std::fs::read_to_string(path)
                .map_err(|e| Error::config(&setting, format!("key pair `{id}`: cannot read {path}: {e}")))?;
            key_pairs.add_pem(id, &pem, &setting)?;
        }
        if !enabled {
            if !listed.trim().is_empty() || !key_prefix.is_empty() {
                return Err(Error::config(
                    AIVEN_READ_ENABLED.key,
                    format!("is false, but `{}` or `{}` is set", AIVEN_KEY_PREFIX.key, AIVEN_KEY_PAIRS.key),
                ));
            }
            return Ok(None);
        }
        if !key_prefix.is_empty() {
            crate::backend::validate_key(&format!("{key_prefix}x"))
                .map_err(|e| Error::config(AIVEN_KEY_PREFIX.key, e.to_string()))?;
        }
        Ok(Some(AivenConfig { key_prefix, key_pairs }))
    }
}
