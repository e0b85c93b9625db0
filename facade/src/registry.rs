//! The store registry: each kind of store registers the URL schemes it serves and how to open one. The
//! stores compiled in (one cargo feature each, all on by default) are registered by [`Registry::builtin`];
//! a host may register its own.

use rsm_core::backend::{MemoryBackend, StorageBackend};
use rsm_core::config::{ConfigReader, STORE_URL_KEY};
use rsm_core::{Error, Result};
use std::sync::Arc;

/// Opens a store URL with its settings, returning the backend and the key prefix the URL's path names
/// (empty for stores whose path is their root).
pub type OpenFn = fn(&str, &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)>;

/// One kind of store.
#[derive(Clone, Copy, Debug)]
pub struct StoreKind {
    /// The URL schemes it serves (`s3`, or `hdfs` and `viewfs`).
    pub schemes: &'static [&'static str],
    /// How to open a URL of those schemes. What the store can do beyond the contract, the facade asks the
    /// store it opened ([`StorageBackend::capabilities`]).
    pub open: OpenFn,
}

/// The kinds of store a [`crate::Store`] can open, by scheme.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    kinds: Vec<StoreKind>,
}

fn open_memory(_url: &str, _r: &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)> {
    Ok((Arc::new(MemoryBackend::new()), String::new()))
}

/// The scheme of a store URL: before `://`, or before a final `:` (`memory:`).
pub fn scheme_of(url: &str) -> &str {
    match url.split_once("://") {
        Some((s, _)) => s,
        None => url.strip_suffix(':').unwrap_or(url),
    }
}

/// What to say when `url` is a filesystem path rather than a URL (`/mnt/tiered`, `./store`, `file:/mnt/x`):
/// the `file://` URL to give instead, so the error does not read as an unknown scheme.
fn path_hint(url: &str) -> Option<String> {
    if url.contains("://") {
        return None;
    }
    if let Some(rest) = url.strip_prefix("file:")
        && !rest.is_empty()
    {
        let path = format!("/{}", rest.trim_start_matches('/'));
        return Some(format!(
            "store URL `{url}` is not a file URL: use `file://{path}` (file:// and an absolute path)"
        ));
    }
    if url.starts_with('/') {
        return Some(format!("`{url}` is a path, not a store URL: use `file://{url}` for a filesystem store"));
    }
    if url.starts_with('.') || url.starts_with('~') || (url.contains('/') && !url.contains(':')) {
        return Some(format!(
            "`{url}` is a path, not a store URL: a filesystem store is `file://` and an absolute path \
             (`file:///mnt/tiered`)"
        ));
    }
    None
}

impl Registry {
    /// No store at all.
    pub fn empty() -> Self {
        Registry::default()
    }

    /// Every store compiled in: `memory:` (tests) always, and `file`, `s3`, `az`, `gs`, `hdfs`/`viewfs` as
    /// their cargo features (`fs`, `s3`, `azure`, `gcs`, `hdfs`) say.
    pub fn builtin() -> Self {
        let mut r = Registry::empty();
        r.register(StoreKind { schemes: &["memory"], open: open_memory });
        #[cfg(feature = "fs")]
        r.register(StoreKind { schemes: &["file"], open: rsm_backend_fs::FsBackend::from_url });
        #[cfg(feature = "hdfs")]
        r.register(StoreKind { schemes: &["hdfs", "viewfs"], open: rsm_backend_hdfs::from_url });
        #[cfg(feature = "s3")]
        r.register(StoreKind { schemes: &["s3"], open: rsm_backend_s3::from_url });
        #[cfg(feature = "azure")]
        r.register(StoreKind { schemes: &["az"], open: rsm_backend_azure::from_url });
        #[cfg(feature = "gcs")]
        r.register(StoreKind { schemes: &["gs"], open: rsm_backend_gcs::from_url });
        r
    }

    /// Adds a kind of store; a scheme registered again is served by the newest registration.
    pub fn register(&mut self, kind: StoreKind) {
        self.kinds.insert(0, kind);
    }

    /// Every scheme served, sorted.
    pub fn schemes(&self) -> Vec<&'static str> {
        let mut s: Vec<&'static str> = self.kinds.iter().flat_map(|k| k.schemes.iter().copied()).collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// The kind of store that serves `url`.
    pub fn kind_of(&self, url: &str) -> Result<&StoreKind> {
        if let Some(hint) = path_hint(url) {
            return Err(Error::config(STORE_URL_KEY, hint));
        }
        let scheme = scheme_of(url);
        self.kinds.iter().find(|k| k.schemes.contains(&scheme)).ok_or_else(|| {
            Error::config(
                STORE_URL_KEY,
                format!(
                    "unsupported store URL scheme `{scheme}` (supported by this build: {})",
                    self.schemes()
                        .iter()
                        .map(|s| match *s {
                            // Data in memory is lost when the process stops: never a store for real data.
                            "memory" => "memory (tests only)",
                            s => s,
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_found_and_unknown_ones_named() {
        let r = Registry::builtin();
        assert_eq!(scheme_of("memory:"), "memory");
        assert_eq!(scheme_of("s3://b/p"), "s3");
        assert!(r.kind_of("memory:").is_ok());
        // A path is not a URL: the error gives the file:// URL to use.
        let e = r.kind_of("/mnt/tiered").unwrap_err();
        assert_eq!(e.config_key(), Some(STORE_URL_KEY));
        assert!(
            e.to_string().contains("`/mnt/tiered` is a path") && e.to_string().contains("file:///mnt/tiered"),
            "{e}"
        );
        let e = r.kind_of("./store").unwrap_err();
        assert!(e.to_string().contains("`./store` is a path") && e.to_string().contains("absolute path"), "{e}");
        let e = r.kind_of("file:/mnt/tiered").unwrap_err();
        assert!(e.to_string().contains("use `file:///mnt/tiered`"), "{e}");
        #[cfg(all(feature = "fs", feature = "s3", feature = "hdfs"))]
        {
            assert!(r.kind_of("file:///x").is_ok());
            assert!(r.kind_of("s3://b").is_ok());
            assert!(r.kind_of("viewfs://c/p").is_ok());
        }
        let e = r.kind_of("ftp://x").unwrap_err();
        assert_eq!(e.config_key(), Some(STORE_URL_KEY));
        assert!(e.to_string().contains("unsupported store URL scheme `ftp`"), "{e}");
        assert!(e.to_string().contains("memory (tests only)"), "{e}");
        let e = Registry::empty().kind_of("memory:").unwrap_err();
        assert!(e.to_string().contains("supported by this build: )"), "{e}");
    }
}
