//! The key ring: the key-encryption keys by id, each a key file or a KMS key, with the active one and the
//! per-topic ones, as the `encryption.*` settings list them ([`KeyRing::read`]).

use super::kek::{KeyEncryptionKey, KmsConnector, LocalKek};
use super::settings::{
    ENCRYPTION_ENABLED, ENCRYPTION_ENABLED_KEY, ENCRYPTION_KEY_ID, ENCRYPTION_KEY_ID_KEY, ENCRYPTION_KEYS,
    ENCRYPTION_KEYS_KEY, ENCRYPTION_KMS_KEY_ID, KmsSettings, SHORT_KMS_KEK_ID, key_file_setting, kms_key_setting,
    topic_key_setting,
};
use super::{KEY_LEN, KeyBytes, MAX_KEY_ID_LEN};
use crate::config::ConfigReader;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

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
        Self::build(active.map(str::to_string), BTreeMap::new(), sources, None, None)
    }

    /// The same keyring with KEK `id` (replacing one of that id): a host's own [`KeyEncryptionKey`], or a
    /// test's. `source` is what equality compares it by.
    pub fn with_kek(mut self, id: &str, source: KekSource, kek: Arc<dyn KeyEncryptionKey>) -> Self {
        self.sources.insert(id.to_string(), source);
        self.keks.insert(id.to_string(), kek);
        self
    }

    /// The keyring of these settings, the KEK of each KMS key made by `kms_connector`: a config error naming
    /// the KMS key's setting when there is none.
    fn build(
        active: Option<String>,
        topics: BTreeMap<String, String>,
        sources: BTreeMap<String, KekSource>,
        kms: Option<KmsSettings>,
        kms_connector: Option<&dyn KmsConnector>,
    ) -> Result<Self> {
        let mut keks = BTreeMap::new();
        for (id, source) in &sources {
            let kek: Arc<dyn KeyEncryptionKey> = match source {
                KekSource::File(k) => Arc::new(LocalKek(k.clone())),
                KekSource::Kms(key_id) => {
                    let setting = kms_key_setting(id);
                    let connector = kms_connector.ok_or_else(|| {
                        Error::config(
                            &setting,
                            format!(
                                "names AWS KMS key `{key_id}`, and the store was opened without a KMS client \
                                 (rsm_facade::StoreBuilder passes rsm_backend_s3::kms::AwsKms in a build with S3)"
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

    /// The KEK `id`; a [`crate::error::ErrorKind::Config`] error naming it when the keyring does not hold it.
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
    /// reads encrypted segments. The KEK of a KMS key is made by `kms_connector` (the host's KMS client); a
    /// KMS key without one is a config error naming its setting. Errors name the setting and the key id,
    /// never key bytes or secrets.
    pub fn read(r: &mut ConfigReader<'_>, kms_connector: Option<&dyn KmsConnector>) -> Result<Option<(Self, bool)>> {
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
        Ok(Some((Self::build(active, topics, sources, kms, kms_connector)?, enabled)))
    }
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
            KeyRing::read(&mut ConfigReader::new(&p), None)
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
        assert_eq!(e.kind(), crate::error::ErrorKind::Config);
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

    #[test]
    fn a_kms_key_without_a_kms_client_is_a_config_error_naming_it() {
        let p = props([
            ("encryption.kms.key.id", "alias/rsm"),
            ("encryption.kms.access.key.id", "AKIDEXAMPLE"),
            ("encryption.kms.secret.access.key", "s3cr3t"),
        ]);
        let e = KeyRing::read(&mut ConfigReader::new(&p), None).unwrap_err();
        assert_eq!(e.config_key(), Some("encryption.key.kms.kms.key.id"), "{e}");
        assert_eq!(
            e.to_string(),
            "invalid configuration `encryption.key.kms.kms.key.id`: names AWS KMS key `alias/rsm`, and the store was \
             opened without a KMS client (rsm_facade::StoreBuilder passes rsm_backend_s3::kms::AwsKms in a build \
             with S3)"
        );
        assert!(!e.full_message().contains("s3cr3t"), "{e}");
    }

    /// A KMS client for the tests: makes every KMS key a key-file KEK, noting what it was asked for.
    #[derive(Default)]
    struct NotingConnector {
        /// The setting, the KMS key id and the region of each key it made a KEK of.
        asked: std::sync::Mutex<Vec<(String, String, Option<String>)>>,
    }

    impl KmsConnector for NotingConnector {
        fn connect(&self, settings: &KmsSettings, setting: &str, key_id: &str) -> Result<Arc<dyn KeyEncryptionKey>> {
            self.asked.lock().unwrap().push((setting.to_string(), key_id.to_string(), settings.region.clone()));
            Ok(Arc::new(LocalKek(KeyBytes::new([7; KEY_LEN]))))
        }
    }

    /// The KMS client passed to [`KeyRing::read`] makes the KEK of each KMS key, with the KMS settings, and of
    /// no key file.
    #[test]
    fn the_kms_client_passed_in_makes_the_kek_of_each_kms_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k1");
        std::fs::write(&file, HEX1).unwrap();
        let file = file.display().to_string();
        let p = props([
            ("encryption.kms.key.id", "alias/rsm"),
            ("encryption.kms.region", "eu-west-1"),
            ("encryption.keys", "k1"),
            ("encryption.key.k1.file", &file),
        ]);
        let connector = NotingConnector::default();
        let (ring, enabled) = KeyRing::read(&mut ConfigReader::new(&p), Some(&connector)).unwrap().unwrap();
        assert!(!enabled);
        assert_eq!(ring.active_id("any").unwrap(), SHORT_KMS_KEK_ID);
        assert_eq!(ring.source(SHORT_KMS_KEK_ID), Some(&KekSource::Kms("alias/rsm".to_string())));
        ring.kek(SHORT_KMS_KEK_ID).unwrap();
        let asked = connector.asked.lock().unwrap().clone();
        assert_eq!(
            asked,
            [("encryption.key.kms.kms.key.id".to_string(), "alias/rsm".to_string(), Some("eu-west-1".to_string()))]
        );
    }
}
