//! Whether a segment's key-encryption key is what keeps it from verifying: a configured key that does not
//! open a segment's data key is a wrong key (or a manifest holding another segment's data key), not data
//! loss. Used by the audit and by `rsm verify`.

use crate::Store;
use crate::runtime::runtime;
use rsm_core::{ErrorKind, RemoteLogSegmentMetadata};

/// When the segment `md` is encrypted and the keyring's key of its key id (present: a missing one is a
/// config error of its own) does not open its data key: that key id. One manifest read (cached) and one
/// unwrap, which on a KMS key is one request.
pub fn refused_key(store: &Store, md: &RemoteLogSegmentMetadata) -> Option<String> {
    let manifest = store.manifest(md).ok()?;
    let envelope = manifest.encryption.as_ref()?;
    let keyring = &store.storage().config().encryption.as_ref()?.keyring;
    let unwrapped = runtime().block_on(envelope.unwrap(
        keyring,
        manifest.metadata.remote_log_segment_id.id,
        manifest.metadata.start_offset,
    ));
    match unwrapped {
        Err(e) if e.kind() == ErrorKind::Corrupt => Some(envelope.kek_id.clone()),
        _ => None,
    }
}

/// What [`refused_key`] found, as a finding says it: names the key id, never its bytes.
pub fn refusal(kek: &str) -> String {
    format!(
        "key encryption key `{kek}` is configured but does not open this segment's data key (the key configured \
         as `{kek}` is not the key it was wrapped with, or the manifest holds another segment's data key)"
    )
}

/// The key-encryption key id the segment `md` is wrapped under, when it is encrypted (its manifest cached).
pub(super) fn key_id(store: &Store, md: &RemoteLogSegmentMetadata) -> Option<String> {
    store.manifest(md).ok()?.encryption.as_ref().map(|e| e.kek_id.clone())
}
