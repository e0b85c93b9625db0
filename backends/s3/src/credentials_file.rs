//! Credentials that rotate: `aws.credentials.file`, a file in the AWS shared-credentials format, read again
//! when it changes ([`FileCredentials`], object_store's credential provider of the store's clients).
//!
//! Requests ask the provider for credentials; at most once a second ([`RECHECK`]) it looks at the file's
//! modification time and length, and when they changed it reads the file again. The new credentials are
//! taken only when the whole profile reads (an access key id and a secret key) and the file did not change
//! while it was read; until then requests keep the credentials in use, so a rotation never fails a request.
//! A file that does not read is logged once (its path, the profile and why, never a value) and read again
//! when it changes.

use object_store::CredentialProvider;
use object_store::aws::AwsCredential;
use rsm_core::config::Secret;
use rsm_core::{Error, Result};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often, at most, the file is looked at.
pub const RECHECK: Duration = Duration::from_secs(1);

/// What tells that the file changed: its modification time and length.
type Stamp = (Option<SystemTime>, u64);

/// object_store's credential provider over `aws.credentials.file`. `Debug` shows the path and profile
/// only.
pub struct FileCredentials {
    path: PathBuf,
    profile: String,
    state: Mutex<State>,
}

struct State {
    current: Arc<AwsCredential>,
    /// The stamp of the file `current` was read from.
    loaded: Stamp,
    /// The stamp of the last file that did not read (logged once).
    failed: Option<Stamp>,
    checked: Instant,
}

impl fmt::Debug for FileCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileCredentials({}, profile {})", self.path.display(), self.profile)
    }
}

impl FileCredentials {
    /// Reads `profile` of the file at `path`; an error (naming `setting`, never a value) when it does not
    /// read.
    pub fn open(path: &Path, profile: &str, setting: &str) -> Result<Arc<Self>> {
        let (credential, loaded) =
            read_stable(path, profile).map_err(|why| Error::config(setting, format!("{}: {why}", path.display())))?;
        Ok(Arc::new(FileCredentials {
            path: path.to_path_buf(),
            profile: profile.to_string(),
            state: Mutex::new(State { current: Arc::new(credential), loaded, failed: None, checked: Instant::now() }),
        }))
    }

    /// The access key id in use (for tests and logs: an access key id names the key, it does not open it).
    pub fn key_id(&self) -> String {
        self.credential().key_id.clone()
    }

    /// The credentials read when the store opened, to scrub from messages (the store's [`Redactor`] is made
    /// once: credentials the file gets later are not in it).
    ///
    /// [`Redactor`]: rsm_backend_object_store::Redactor
    pub fn initial_secrets(&self) -> Vec<Secret> {
        let c = self.state.lock().unwrap_or_else(|e| e.into_inner()).current.clone();
        [Some(&c.key_id), Some(&c.secret_key), c.token.as_ref()].into_iter().flatten().map(Secret::new).collect()
    }

    /// The credentials in use, the file looked at first when [`RECHECK`] has passed since the last look.
    fn credential(&self) -> Arc<AwsCredential> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.checked.elapsed() >= RECHECK {
            s.checked = Instant::now();
            self.recheck(&mut s);
        }
        s.current.clone()
    }

    fn recheck(&self, s: &mut State) {
        let Ok(now) = stamp(&self.path) else {
            // Gone for a moment (a rename in progress, a remount): keep what is in use.
            return;
        };
        if now == s.loaded || Some(now) == s.failed {
            return;
        }
        match read_stable(&self.path, &self.profile) {
            Ok((credential, loaded)) => {
                tracing::info!(path = %self.path.display(), profile = %self.profile, "AWS credentials file read again");
                s.current = Arc::new(credential);
                s.loaded = loaded;
                s.failed = None;
            }
            // A writer still at it: looked at again at the next check.
            Err(why) if why == UNSTABLE => {}
            Err(why) => {
                tracing::warn!(path = %self.path.display(), profile = %self.profile, error = %why,
                    "the AWS credentials file does not read; the credentials in use are kept");
                s.failed = Some(now);
            }
        }
    }
}

#[async_trait::async_trait]
impl CredentialProvider for FileCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        Ok(self.credential())
    }
}

const UNSTABLE: &str = "the file changed while it was read";

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    let m = std::fs::metadata(path)?;
    Ok((m.modified().ok(), m.len()))
}

/// Reads the profile, refusing a file that changed while it was read (a writer still at it).
fn read_stable(path: &Path, profile: &str) -> std::result::Result<(AwsCredential, Stamp), String> {
    let before = stamp(path).map_err(|e| format!("cannot read it: {e}"))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let after = stamp(path).map_err(|e| format!("cannot read it: {e}"))?;
    if before != after || after.1 != text.len() as u64 {
        return Err(UNSTABLE.to_string());
    }
    Ok((parse_profile(&text, profile)?, after))
}

/// The credentials of `profile` in a shared-credentials file (`[name]` or `[profile name]` sections of
/// `key = value` lines, `#` and `;` comments). An error says what is missing or which line does not read,
/// never a value.
pub fn parse_profile(text: &str, profile: &str) -> std::result::Result<AwsCredential, String> {
    let (mut in_profile, mut found) = (false, false);
    let (mut key_id, mut secret, mut token) = (None, None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            let name =
                section.strip_suffix(']').ok_or_else(|| format!("line {}: a section without `]`", n + 1))?.trim();
            let name = name.strip_prefix("profile ").map(str::trim).unwrap_or(name);
            in_profile = name == profile;
            found |= in_profile;
            continue;
        }
        if !in_profile {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| format!("line {}: not `key = value`", n + 1))?;
        let v = v.trim().to_string();
        match k.trim().to_ascii_lowercase().as_str() {
            "aws_access_key_id" => key_id = Some(v),
            "aws_secret_access_key" => secret = Some(v),
            "aws_session_token" => token = Some(v),
            _ => {}
        }
    }
    if !found {
        return Err(format!("no profile `{profile}`"));
    }
    let missing = |what: &str| format!("profile `{profile}` has no {what}");
    let key_id = key_id.filter(|v| !v.is_empty()).ok_or_else(|| missing("aws_access_key_id"))?;
    let secret_key = secret.filter(|v| !v.is_empty()).ok_or_else(|| missing("aws_secret_access_key"))?;
    Ok(AwsCredential { key_id, secret_key, token: token.filter(|t| !t.is_empty()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_read_and_errors_name_no_value() {
        let text = "# rotated by the agent\n[default]\naws_access_key_id = AKIA1\naws_secret_access_key=S1\n\n\
                    [profile other]\n aws_access_key_id = AKIA2 \n aws_secret_access_key = S2\naws_session_token = T2\n\
                    [half]\naws_access_key_id = AKIA3\n";
        let c = parse_profile(text, "default").unwrap();
        assert_eq!((c.key_id.as_str(), c.secret_key.as_str(), c.token), ("AKIA1", "S1", None));
        let c = parse_profile(text, "other").unwrap();
        assert_eq!((c.key_id.as_str(), c.secret_key.as_str(), c.token.as_deref()), ("AKIA2", "S2", Some("T2")));
        let e = parse_profile(text, "half").unwrap_err();
        assert_eq!(e, "profile `half` has no aws_secret_access_key");
        assert_eq!(parse_profile(text, "nope").unwrap_err(), "no profile `nope`");
        let e = parse_profile("[default]\naws_secret_access_key SECRET\n", "default").unwrap_err();
        assert!(e.contains("line 2") && !e.contains("SECRET"), "{e}");
    }

    /// A new file is taken once it reads whole; a broken one keeps the credentials in use.
    #[test]
    fn a_rotation_keeps_the_old_credentials_until_the_new_file_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials");
        std::fs::write(&path, "[default]\naws_access_key_id=OLD\naws_secret_access_key=s\n").unwrap();
        let c = FileCredentials::open(&path, "default", "aws.credentials.file").unwrap();
        assert_eq!(c.key_id(), "OLD");
        let wait = || std::thread::sleep(RECHECK + Duration::from_millis(50));
        std::fs::write(&path, "[default]\naws_access_key_id=NEW\n").unwrap();
        wait();
        assert_eq!(c.key_id(), "OLD", "a half-written file is not taken");
        std::fs::write(&path, "[default]\naws_access_key_id=NEW\naws_secret_access_key=s2\n").unwrap();
        assert_eq!(c.key_id(), "OLD", "looked at once a second at most");
        wait();
        assert_eq!(c.key_id(), "NEW");
        std::fs::remove_file(&path).unwrap();
        wait();
        assert_eq!(c.key_id(), "NEW", "a missing file keeps the credentials");
    }
}
