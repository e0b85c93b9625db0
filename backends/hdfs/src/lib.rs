//! The HDFS backend over [`hdfs_native`]: a pure-Rust HDFS client (protobuf RPC to the NameNode, the data
//! transfer protocol to the DataNodes), so no JVM and no libhdfs.
//!
//! Objects are files under a root directory (`hdfs.root`); a key `a/b/c` is the file `{root}/a/b/c`.
//! Every upload is written to a hidden temporary file beside its target (`.rsm-tmp-{name}.{uuid}`), closed
//! (the NameNode then knows every block and the length), and renamed over the key with `OVERWRITE`, which
//! the NameNode does atomically: readers see the old object or the new one, never part of one. A failed
//! upload deletes its temporary file. Reads open the file (one `getBlockLocations` call) and read only the
//! blocks the range touches, positionally. Deletes remove the file and then prune the directories left
//! empty, up to the root. Listings walk the directory tree under the prefix and skip temporary files.
//!
//! # Settings
//! | key | default | meaning |
//! |---|---|---|
//! | `hdfs.namenode.url` | `fs.defaultFS` | `hdfs://host:port`, an HA name service `hdfs://ns`, or `viewfs://cluster`; a path in it is the root |
//! | `hdfs.conf.dir` | `$HADOOP_CONF_DIR` | a Hadoop configuration directory; its `core-site.xml` and `hdfs-site.xml` are read (HA, Kerberos, timeouts) |
//! | `hdfs.core-site.path`, `hdfs.hdfs-site.path` | none | single Hadoop XML files, read after the directory (the leading plugin's keys) |
//! | `hdfs.conf.<hadoop key>` | none | any Hadoop client setting, overriding the files: `hdfs.conf.dfs.client.socket-timeout=30000` |
//! | `hdfs.root` | `/` | absolute directory that holds the objects |
//! | `hdfs.user` | `$HADOOP_USER_NAME` or the OS user | effective user (simple authentication) |
//! | `hdfs.auth.enabled` | false | Kerberos: requires the principal and keytab and sets `hadoop.security.authentication=kerberos` |
//! | `hdfs.auth.kerberos.principal`, `hdfs.auth.kerberos.keytab` | none | Kerberos client principal and keytab path |
//! | `hdfs.upload.buffer.size` | 1 MiB | bytes read from a local file per piece while uploading (memory per upload) |
//!
//! None of these is a secret: the keytab is a file the operator protects, and the backend only holds its
//! path. The values of `hdfs.conf.*` pass-through settings are still never printed (a Hadoop key may
//! carry a password), only their names.
//!
//! # Errors
//! A missing file is not found, naming the key. Connection refused, reset or timed out, an unavailable or
//! standby NameNode, safe mode and DataNode transfer failures are retriable. A bad checksum from a
//! DataNode is corrupt. The rest are storage errors. Messages name the key and the HDFS path.
//!
//! # Runtime
//! The client spawns its connection and lease-renewal tasks on the tokio runtime current when the backend
//! is built (or, outside any runtime, on a runtime of its own). Build it on the runtime that will use it.

#![warn(missing_docs)]

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream;
use hdfs_native::client::FileStatus;
use hdfs_native::file::FileWriter;
use hdfs_native::{Client, ClientBuilder, HdfsError, WriteOptions};
use rsm_core::backend::{ByteStream, ObjectMeta, StorageBackend, clamp_range, validate_key};
use rsm_core::config::ConfigReader;
use rsm_core::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::AsyncReadExt;

/// Prefix of temporary upload files; listings skip them.
pub const TMP_PREFIX: &str = ".rsm-tmp-";

/// Directory listings in flight at once while walking a tree.
const LIST_CONCURRENCY: usize = 8;

/// Deletes in flight at once in [`StorageBackend::delete_many`].
const DELETE_CONCURRENCY: usize = 8;

/// Extra attempts of a ranged read whose DataNode transfer failed (a replica moved, or the file was
/// replaced between open and read), each after re-opening the file.
const READ_RETRIES: usize = 2;

/// The settings of an HDFS store, read from `hdfs.*` keys. Its `Debug` never shows pass-through values.
#[derive(Clone, PartialEq, Eq)]
pub struct HdfsConfig {
    /// `hdfs.namenode.url` without its path: `hdfs://host:port`, `hdfs://nameservice`, `viewfs://cluster`.
    /// `None` uses `fs.defaultFS` from the Hadoop configuration.
    pub namenode_url: Option<String>,
    /// `hdfs.conf.dir`: a Hadoop configuration directory (`None`: `$HADOOP_CONF_DIR`, then `$HADOOP_HOME/etc/hadoop`).
    pub conf_dir: Option<PathBuf>,
    /// `hdfs.core-site.path` and `hdfs.hdfs-site.path`: single Hadoop XML files, read in this order.
    pub site_files: Vec<PathBuf>,
    /// `hdfs.conf.*`: Hadoop client settings that override the files.
    pub hadoop: BTreeMap<String, String>,
    /// `hdfs.root`: the absolute directory holding the objects, without a trailing `/` (except `/` itself).
    pub root: String,
    /// `hdfs.user`: the effective user.
    pub user: Option<String>,
    /// `hdfs.auth.kerberos.principal`.
    pub kerberos_principal: Option<String>,
    /// `hdfs.auth.kerberos.keytab`.
    pub kerberos_keytab: Option<PathBuf>,
    /// `hdfs.upload.buffer.size`: bytes per piece read from a local file.
    pub upload_piece: usize,
}

impl fmt::Debug for HdfsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HdfsConfig")
            .field("namenode_url", &self.namenode_url)
            .field("conf_dir", &self.conf_dir)
            .field("site_files", &self.site_files)
            .field("hadoop_keys", &self.hadoop.keys().collect::<Vec<_>>())
            .field("root", &self.root)
            .field("user", &self.user)
            .field("kerberos_principal", &self.kerberos_principal)
            .field("kerberos_keytab", &self.kerberos_keytab)
            .field("upload_piece", &self.upload_piece)
            .finish()
    }
}

impl Default for HdfsConfig {
    fn default() -> Self {
        HdfsConfig {
            namenode_url: None,
            conf_dir: None,
            site_files: Vec::new(),
            hadoop: BTreeMap::new(),
            root: "/".to_string(),
            user: None,
            kerberos_principal: None,
            kerberos_keytab: None,
            upload_piece: 1 << 20,
        }
    }
}

/// A store URL or `hdfs.namenode.url` split into the name node part and the path.
fn split_url(key: &str, url: &str) -> Result<(String, Option<String>)> {
    let bad = |why: &str| Error::config(key, format!("`{}`: {why}", redact_url(url)));
    let rest = ["hdfs://", "viewfs://"].iter().find_map(|s| url.strip_prefix(s).map(|rest| (&url[..s.len()], rest)));
    let Some((scheme, rest)) = rest else {
        return Err(bad("expected hdfs://host:port, hdfs://nameservice or viewfs://cluster"));
    };
    if rest.contains(['?', '#']) {
        return Err(bad("a query or fragment is not allowed"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    if authority.is_empty() {
        return Err(bad("no host or name service"));
    }
    // HDFS takes no credentials in URLs; refusing them keeps a password out of Debug and messages.
    if authority.contains('@') {
        return Err(bad("a user in the URL is not supported (set hdfs.user)"));
    }
    let path = path.filter(|p| *p != "/").map(str::to_string);
    Ok((format!("{scheme}{authority}"), path))
}

/// The URL with any `user:password@` part hidden.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://****@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

/// Checks and normalises an HDFS root directory.
fn normalize_root(key: &str, root: &str) -> Result<String> {
    if !root.starts_with('/') {
        return Err(Error::config(key, format!("`{root}` is not an absolute path")));
    }
    let trimmed = root.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok("/".to_string());
    }
    if trimmed[1..].split('/').any(|p| p.is_empty() || p == "." || p == ".." || p.contains(':')) {
        return Err(Error::config(key, format!("`{root}` has an empty, `.`, `..` or `:` part")));
    }
    Ok(trimmed.to_string())
}

/// Reads the `<property><name/><value/></property>` pairs of a Hadoop XML configuration file.
fn read_site_file(key: &str, path: &Path) -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(key, format!("cannot read {}: {e}", path.display())))?;
    let doc = roxmltree::Document::parse(&text)
        .map_err(|e| Error::config(key, format!("{} is not XML: {e}", path.display())))?;
    let mut out = BTreeMap::new();
    for prop in doc.descendants().filter(|n| n.has_tag_name("property")) {
        let child = |tag: &str| {
            prop.children().find(|c| c.has_tag_name(tag)).map(|c| c.text().unwrap_or("").trim().to_string())
        };
        if let (Some(name), Some(value)) = (child("name"), child("value")) {
            out.insert(name, value);
        }
    }
    Ok(out)
}

impl HdfsConfig {
    /// Reads the `hdfs.*` settings (see the crate's documentation).
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        Self::read_with_url(r, None)
    }

    /// Reads the settings, with the name node and root taken from a store URL when one is given. A
    /// `hdfs.namenode.url` or `hdfs.root` setting that disagrees with the URL is an error.
    pub fn read_with_url(r: &mut ConfigReader<'_>, store_url: Option<&str>) -> Result<Self> {
        const URL: &str = "hdfs.namenode.url";
        const ROOT: &str = "hdfs.root";
        let mut c = HdfsConfig::default();

        let from_setting = r.string(URL).map(|u| split_url(URL, u)).transpose()?;
        let root_setting = r.string(ROOT).map(|p| normalize_root(ROOT, p)).transpose()?;
        match store_url {
            Some(url) => {
                let (nn, path) = split_url("store", url)?;
                let root = normalize_root("store", path.as_deref().unwrap_or("/"))?;
                if let Some((set, _)) = &from_setting
                    && *set != nn
                {
                    return Err(Error::config(
                        URL,
                        format!("`{}` differs from the store URL `{}`", redact_url(set), redact_url(&nn)),
                    ));
                }
                if let Some(set) = &root_setting
                    && *set != root
                {
                    return Err(Error::config(ROOT, format!("`{set}` differs from the store URL's path `{root}`")));
                }
                c.namenode_url = Some(nn);
                c.root = root;
            }
            None => {
                let url_root = match &from_setting {
                    Some((nn, path)) => {
                        c.namenode_url = Some(nn.clone());
                        path.as_deref().map(|p| normalize_root(URL, p)).transpose()?
                    }
                    None => None,
                };
                c.root = match (url_root, root_setting) {
                    (Some(u), Some(s)) if u != s => {
                        return Err(Error::config(ROOT, format!("`{s}` differs from the path `{u}` of {URL}")));
                    }
                    (u, s) => s.or(u).unwrap_or_else(|| "/".to_string()),
                };
            }
        }

        if let Some(dir) = r.string("hdfs.conf.dir") {
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                return Err(Error::config("hdfs.conf.dir", format!("{} is not a directory", dir.display())));
            }
            c.conf_dir = Some(dir);
        }
        let mut hadoop = BTreeMap::new();
        for key in ["hdfs.core-site.path", "hdfs.hdfs-site.path"] {
            if let Some(p) = r.string(key) {
                let p = PathBuf::from(p);
                hadoop.extend(read_site_file(key, &p)?);
                c.site_files.push(p);
            }
        }
        // `hdfs.conf.dir` shares the pass-through namespace; it is ours, not a Hadoop key.
        let mut pass = r.with_prefix("hdfs.conf.");
        pass.remove("dir");
        for (k, v) in pass {
            if k.is_empty() {
                return Err(Error::config("hdfs.conf.", "a Hadoop setting needs a name"));
            }
            hadoop.insert(k, v.trim().to_string());
        }

        c.user = r.string("hdfs.user").map(str::to_string);
        let auth = r.bool("hdfs.auth.enabled", false)?;
        c.kerberos_principal = r.string("hdfs.auth.kerberos.principal").map(str::to_string);
        c.kerberos_keytab = r.string("hdfs.auth.kerberos.keytab").map(PathBuf::from);
        if c.kerberos_keytab.is_some() && c.kerberos_principal.is_none() {
            return Err(Error::config(
                "hdfs.auth.kerberos.principal",
                "is required when hdfs.auth.kerberos.keytab is set",
            ));
        }
        if auth {
            if c.kerberos_principal.is_none() {
                return Err(Error::config(
                    "hdfs.auth.kerberos.principal",
                    "is required when hdfs.auth.enabled is true",
                ));
            }
            if c.kerberos_keytab.is_none() {
                return Err(Error::config("hdfs.auth.kerberos.keytab", "is required when hdfs.auth.enabled is true"));
            }
            hadoop.entry("hadoop.security.authentication".to_string()).or_insert_with(|| "kerberos".to_string());
        }
        c.hadoop = hadoop;
        c.upload_piece = r.int_in("hdfs.upload.buffer.size", c.upload_piece, 4096..=64 << 20)?;

        if c.namenode_url.is_none()
            && c.conf_dir.is_none()
            && !c.hadoop.contains_key("fs.defaultFS")
            && std::env::var_os("HADOOP_CONF_DIR").is_none()
            && std::env::var_os("HADOOP_HOME").is_none()
        {
            return Err(Error::config(
                URL,
                "is required (or fs.defaultFS through hdfs.conf.dir, a site file or hdfs.conf.fs.defaultFS)",
            ));
        }
        Ok(c)
    }

    /// Connects a client with these settings (no request is sent until the first operation).
    pub fn build(&self) -> Result<HdfsBackend> {
        let mut b = ClientBuilder::new().with_config(self.hadoop.clone());
        if let Some(url) = &self.namenode_url {
            b = b.with_url(url.clone());
        }
        if let Some(dir) = &self.conf_dir {
            b = b.with_config_dir(dir.to_string_lossy().into_owned());
        }
        if let Some(user) = &self.user {
            b = b.with_user(user.clone());
        }
        if let Some(p) = &self.kerberos_principal {
            b = b.with_kerberos_principal(p.clone());
        }
        if let Some(k) = &self.kerberos_keytab {
            b = b.with_kerberos_keytab(k.to_string_lossy().into_owned());
        }
        let client = b.build().map_err(|e| {
            let key = match &e {
                HdfsError::XmlParseError(_) | HdfsError::IOError(_) => "hdfs.conf.dir",
                HdfsError::InvalidArgument(m) if m.contains("Kerberos") => "hdfs.auth.kerberos.principal",
                _ => "hdfs.namenode.url",
            };
            Error::config(key, format!("cannot build the HDFS client: {e}"))
        })?;
        Ok(HdfsBackend {
            client,
            root: self.root.clone(),
            upload_piece: self.upload_piece,
            config: Arc::new(self.clone()),
        })
    }
}

/// Builds a backend from the `hdfs.*` settings in `r`.
pub fn from_config(r: &mut ConfigReader<'_>) -> Result<HdfsBackend> {
    HdfsConfig::read(r)?.build()
}

/// Builds a backend from a store URL `hdfs://host:port/path` (or `hdfs://nameservice/path`,
/// `viewfs://cluster/path`) and the other `hdfs.*` settings in `r`. The URL's path is the root directory
/// of the store, so the key prefix returned is always empty.
pub fn from_url(url: &str, r: &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)> {
    let backend = HdfsConfig::read_with_url(r, Some(url))?.build()?;
    Ok((Arc::new(backend), String::new()))
}

/// A store of objects as files under a root directory of an HDFS cluster.
#[derive(Clone)]
pub struct HdfsBackend {
    client: Client,
    root: String,
    upload_piece: usize,
    config: Arc<HdfsConfig>,
}

impl fmt::Debug for HdfsBackend {
    // The client's own Debug prints its whole Hadoop configuration, values included: never show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HdfsBackend").field("config", &self.config).finish_non_exhaustive()
    }
}

/// Whether a Java exception class a NameNode returned means "try again later".
fn retriable_exception(class: &str) -> bool {
    const RETRIABLE: [&str; 10] = [
        "StandbyException",
        "RetriableException",
        "SafeModeException",
        "NotReplicatedYetException",
        "ObserverRetryOnActiveException",
        "CallQueueOverflowException",
        "ServerTooBusyException",
        "ConnectException",
        "SocketTimeoutException",
        "InterruptedIOException",
    ];
    let simple = class.rsplit(['.', '$']).next().unwrap_or(class);
    RETRIABLE.contains(&simple)
}

/// Classifies an HDFS client error met while doing `what` (which names the key and the path).
fn classify(what: &str, e: HdfsError) -> Error {
    use std::io::ErrorKind as K;
    match e {
        HdfsError::FileNotFound(_) => Error::not_found(what.to_string()),
        HdfsError::RPCError(ref class, _) if class == "java.io.FileNotFoundException" => {
            Error::not_found(what.to_string())
        }
        HdfsError::RPCError(ref class, _) | HdfsError::FatalRPCError(ref class, _) if retriable_exception(class) => {
            Error::retriable(what.to_string(), e)
        }
        HdfsError::RPCError(ref class, _)
            if class.ends_with("InvalidPathException") || class.ends_with("HadoopIllegalArgumentException") =>
        {
            Error::invalid(format!("{what}: {e}"))
        }
        HdfsError::InvalidPath(_) => Error::invalid(format!("{what}: {e}")),
        HdfsError::IOError(ref io) => match io.kind() {
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::TimedOut
            | K::BrokenPipe
            | K::UnexpectedEof
            | K::Interrupted
            | K::WouldBlock
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown
            | K::AddrNotAvailable => Error::retriable(what.to_string(), e),
            _ => Error::storage(what.to_string(), e),
        },
        HdfsError::DataTransferError(_) | HdfsError::BlocksNotFound(_) => Error::retriable(what.to_string(), e),
        HdfsError::OperationFailed(ref m) if m.contains("in time") => Error::retriable(what.to_string(), e),
        HdfsError::ChecksumError => Error::corrupt(format!("{what}: {e}")),
        e => Error::storage(what.to_string(), e),
    }
}

fn system_time(ms: u64) -> Option<SystemTime> {
    (ms > 0).then(|| SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
}

/// The parent directory of an absolute HDFS path (`/a/b` -> `/a`, `/a` -> `/`).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl HdfsBackend {
    /// The settings this backend was built from.
    pub fn config(&self) -> &HdfsConfig {
        &self.config
    }

    /// The underlying client, for tests and tools that need raw HDFS calls.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The root directory.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The HDFS path of a key (checked).
    pub fn path(&self, key: &str) -> Result<String> {
        validate_key(key)?;
        Ok(self.join(key))
    }

    fn join(&self, rel: &str) -> String {
        if self.root == "/" {
            format!("/{rel}")
        } else if rel.is_empty() {
            self.root.clone()
        } else {
            format!("{}/{rel}", self.root)
        }
    }

    /// The key of an HDFS path under the root, if it is under it.
    fn key_of<'p>(&self, path: &'p str) -> Option<&'p str> {
        if self.root == "/" { path.strip_prefix('/') } else { path.strip_prefix(self.root.as_str())?.strip_prefix('/') }
    }

    fn what(key: &str, path: &str) -> String {
        format!("object {key} (hdfs path {path})")
    }

    /// Creates the temporary file beside `target`.
    async fn create_tmp(&self, key: &str, target: &str) -> Result<(String, FileWriter)> {
        let name = target.rsplit('/').next().unwrap_or_default();
        let tmp = format!("{}/{TMP_PREFIX}{name}.{}", parent(target).trim_end_matches('/'), rsm_core::Uuid::random());
        let opts = WriteOptions::default().overwrite(false).create_parent(true);
        let writer = self
            .client
            .create(&tmp, opts)
            .await
            .map_err(|e| classify(&format!("creating {}", Self::what(key, &tmp)), e))?;
        Ok((tmp, writer))
    }

    /// Closes the temporary file and renames it over the target if `written` succeeded; otherwise (or if
    /// that fails) deletes the temporary file and returns the first error.
    async fn commit(
        &self,
        key: &str,
        target: &str,
        tmp: &str,
        mut writer: FileWriter,
        written: Result<()>,
    ) -> Result<()> {
        let result = match written {
            Ok(()) => match writer.close().await {
                Ok(()) => self
                    .client
                    .rename(tmp, target, true)
                    .await
                    .map_err(|e| classify(&format!("renaming {tmp} over {}", Self::what(key, target)), e)),
                Err(e) => Err(classify(&format!("closing {}", Self::what(key, tmp)), e)),
            },
            Err(e) => Err(e),
        };
        if result.is_err() {
            drop(writer);
            if let Err(e) = self.client.delete(tmp, false).await {
                tracing::warn!(key, tmp, error = %e, "could not delete the temporary file of a failed upload");
            }
        }
        result
    }

    async fn write_file(&self, writer: &mut FileWriter, key: &str, tmp: &str, src: &Path, len: u64) -> Result<()> {
        let mut file = tokio::fs::File::open(src).await.map_err(|e| Error::from_io(src.display(), e))?;
        let mut left = len;
        while left > 0 {
            let n = left.min(self.upload_piece as u64) as usize;
            let mut piece = BytesMut::zeroed(n);
            file.read_exact(&mut piece)
                .await
                .map_err(|e| Error::from_io(format!("{} (uploading {key})", src.display()), e))?;
            writer
                .write_bytes(piece.freeze())
                .await
                .map_err(|e| classify(&format!("writing {}", Self::what(key, tmp)), e))?;
            left -= n as u64;
        }
        Ok(())
    }

    async fn write_stream(&self, writer: &mut FileWriter, key: &str, tmp: &str, mut data: ByteStream) -> Result<()> {
        while let Some(item) = data.next().await {
            let bytes = item?;
            if bytes.is_empty() {
                continue;
            }
            writer.write_bytes(bytes).await.map_err(|e| classify(&format!("writing {}", Self::what(key, tmp)), e))?;
        }
        Ok(())
    }

    /// A ranged read: open the file (one `getBlockLocations`), check the range, read the blocks it
    /// touches. A DataNode transfer failure is retried after re-opening the file: a replica may have
    /// moved, or the file been replaced or deleted between open and read (a deleted file is then not
    /// found, a replaced one is read whole from its new blocks). Failures to reach the NameNode are not
    /// retried here: the client already fails over and backs off.
    async fn read(&self, key: &str, path: &str, range: Range<u64>) -> Result<Bytes> {
        let mut attempt = 0;
        loop {
            let reader = self.client.read(path).await.map_err(|e| classify(&Self::what(key, path), e))?;
            let r = clamp_range(key, range.clone(), reader.file_length() as u64)?;
            if r.is_empty() {
                return Ok(Bytes::new());
            }
            match reader.read_range(r.start as usize, (r.end - r.start) as usize).await {
                Ok(bytes) => return Ok(bytes),
                Err(e) => {
                    let e = classify(&format!("reading {}", Self::what(key, path)), e);
                    if attempt == READ_RETRIES || !e.is_transient() {
                        return Err(e);
                    }
                    tracing::debug!(key, error = %e.full_message(), "ranged read failed; re-opening");
                    attempt += 1;
                }
            }
        }
    }

    /// Deletes one file; `Ok(true)` if it was there. A key that names a non-empty directory (other keys
    /// extend it) is no object, so there is nothing to delete.
    async fn delete_path(&self, key: &str, path: &str) -> Result<bool> {
        match self.client.delete(path, false).await {
            Ok(existed) => Ok(existed),
            Err(HdfsError::RPCError(class, _)) if class.ends_with("PathIsNotEmptyDirectoryException") => Ok(false),
            Err(e) => match classify(&format!("deleting {}", Self::what(key, path)), e) {
                e if e.kind() == rsm_core::ErrorKind::NotFound => Ok(false),
                e => Err(e),
            },
        }
    }

    /// Removes the directories among `dirs` (and their ancestors) that are empty, deepest first, never
    /// the root. HDFS refuses to delete a non-empty directory without `recursive`, so a directory a
    /// concurrent upload is writing into stays; one refusal ends that branch. Failures are only untidiness.
    async fn prune(&self, dirs: BTreeSet<String>) {
        let mut pending = dirs;
        while let Some(dir) = pending.iter().max_by_key(|d| d.len()).cloned() {
            pending.remove(&dir);
            if dir.len() <= self.root.len() || self.key_of(&dir).is_none() {
                continue;
            }
            match self.client.delete(&dir, false).await {
                Ok(_) => {
                    pending.insert(parent(&dir).to_string());
                }
                Err(e) => tracing::trace!(dir, error = %e, "directory kept"),
            }
        }
    }

    /// One directory's entries (files and directories), or none if it does not exist.
    async fn list_dir(&self, dir: String) -> Result<Vec<FileStatus>> {
        match self.client.list_status(&dir, false).await {
            Ok(v) => Ok(v),
            Err(e) => match classify(&format!("listing {dir}"), e) {
                e if e.kind() == rsm_core::ErrorKind::NotFound => Ok(Vec::new()),
                e => Err(e),
            },
        }
    }
}

#[async_trait]
impl StorageBackend for HdfsBackend {
    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        let target = self.path(key)?;
        let size = tokio::fs::metadata(path).await.map_err(|e| Error::from_io(path.display(), e))?.len();
        if size < len {
            return Err(Error::invalid(format!(
                "{}: {size} bytes, expected at least {len} (uploading {key})",
                path.display()
            )));
        }
        let (tmp, mut writer) = self.create_tmp(key, &target).await?;
        let written = self.write_file(&mut writer, key, &tmp, path, len).await;
        self.commit(key, &target, &tmp, writer, written).await
    }

    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        let target = self.path(key)?;
        let (tmp, mut writer) = self.create_tmp(key, &target).await?;
        let written = self.write_stream(&mut writer, key, &tmp, data).await;
        self.commit(key, &target, &tmp, writer, written).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path(key)?;
        self.read(key, &path, range).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        if self.delete_path(key, &path).await? {
            self.prune(BTreeSet::from([parent(&path).to_string()])).await;
        }
        Ok(())
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let paths =
            keys.iter().map(|k| self.path(k).map(|p| (k.clone(), p))).collect::<Result<Vec<(String, String)>>>()?;
        let results: Vec<Result<Option<String>>> = stream::iter(paths)
            .map(|(key, path)| {
                let this = self.clone();
                async move {
                    let existed = this.delete_path(&key, &path).await?;
                    Ok(existed.then(|| parent(&path).to_string()))
                }
            })
            .buffer_unordered(DELETE_CONCURRENCY)
            .collect()
            .await;
        let mut dirs = BTreeSet::new();
        let mut first_err = None;
        for r in results {
            match r {
                Ok(Some(d)) => {
                    dirs.insert(d);
                }
                Ok(None) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.prune(dirs).await;
        first_err.map_or(Ok(()), Err)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        // Walk from the deepest directory the prefix names, descending only into directories that can
        // hold keys with the prefix, a level at a time with several listings in flight.
        let dir_part = prefix.rfind('/').map(|i| &prefix[..i]).unwrap_or("");
        if !dir_part.is_empty() {
            validate_key(dir_part)?;
        }
        let mut out = Vec::new();
        let mut level = vec![self.join(dir_part)];
        while !level.is_empty() {
            let listings: Vec<Result<Vec<FileStatus>>> =
                stream::iter(level).map(|d| self.list_dir(d)).buffer_unordered(LIST_CONCURRENCY).collect().await;
            let mut next = Vec::new();
            for status in listings.into_iter().collect::<Result<Vec<_>>>()?.into_iter().flatten() {
                let Some(rel) = self.key_of(&status.path) else {
                    continue;
                };
                let name = rel.rsplit('/').next().unwrap_or(rel);
                if name.starts_with(TMP_PREFIX) {
                    continue;
                }
                if status.isdir {
                    let as_dir = format!("{rel}/");
                    if as_dir.starts_with(prefix) || prefix.starts_with(&as_dir) {
                        next.push(status.path.clone());
                    }
                } else if rel.starts_with(prefix) {
                    out.push(ObjectMeta {
                        key: rel.to_string(),
                        size: status.length as u64,
                        last_modified: system_time(status.modification_time),
                    });
                }
            }
            level = next;
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::ErrorKind;
    use rsm_core::config::props;

    fn read(pairs: &[(&str, &str)]) -> Result<HdfsConfig> {
        let p = props(pairs.iter().copied());
        let mut r = ConfigReader::new(&p);
        let c = HdfsConfig::read(&mut r)?;
        r.finish()?;
        Ok(c)
    }

    #[test]
    fn settings_name_the_key() {
        let c = read(&[("hdfs.namenode.url", "hdfs://127.0.0.1:9000"), ("hdfs.root", "/kafka/tiered/")]).unwrap();
        assert_eq!(c.namenode_url.as_deref(), Some("hdfs://127.0.0.1:9000"));
        assert_eq!(c.root, "/kafka/tiered");

        let e = read(&[("hdfs.namenode.url", "hdfs://nn:9000"), ("hdfs.rooot", "/x")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.rooot`: unknown setting"), "{e}");

        let e = read(&[("hdfs.namenode.url", "s3://bucket")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.namenode.url`"), "{e}");

        let e = read(&[("hdfs.namenode.url", "hdfs://nn:9000"), ("hdfs.root", "relative")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.root`"), "{e}");

        let e = read(&[("hdfs.namenode.url", "hdfs://nn:9000"), ("hdfs.conf.dir", "/nonexistent/conf")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.conf.dir`"), "{e}");

        let e = read(&[("hdfs.namenode.url", "hdfs://nn"), ("hdfs.auth.enabled", "true")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.auth.kerberos.principal`"), "{e}");

        let e = read(&[("hdfs.namenode.url", "hdfs://nn"), ("hdfs.upload.buffer.size", "1")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.upload.buffer.size`"), "{e}");
    }

    #[test]
    fn namenode_url_is_required_without_hadoop_config() {
        if std::env::var_os("HADOOP_CONF_DIR").is_some() || std::env::var_os("HADOOP_HOME").is_some() {
            return; // fs.defaultFS may come from there
        }
        let e = read(&[("hdfs.root", "/x")]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.to_string().contains("`hdfs.namenode.url`"), "{e}");
        // fs.defaultFS through the pass-through is enough.
        let c = read(&[("hdfs.conf.fs.defaultFS", "hdfs://nn:8020")]).unwrap();
        assert_eq!(c.namenode_url, None);
        assert_eq!(c.hadoop.get("fs.defaultFS").map(String::as_str), Some("hdfs://nn:8020"));
        c.build().unwrap();
    }

    #[test]
    fn url_path_is_the_root_and_must_agree() {
        let c = read(&[("hdfs.namenode.url", "hdfs://ns1/kafka/")]).unwrap();
        assert_eq!((c.namenode_url.as_deref(), c.root.as_str()), (Some("hdfs://ns1"), "/kafka"));
        let e = read(&[("hdfs.namenode.url", "hdfs://ns1/kafka"), ("hdfs.root", "/other")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.root`"), "{e}");

        let p = props([("hdfs.root", "/elsewhere")]);
        let e = HdfsConfig::read_with_url(&mut ConfigReader::new(&p), Some("hdfs://nn:9000/tiered")).unwrap_err();
        assert!(e.to_string().contains("`hdfs.root`"), "{e}");
        let p = props([("hdfs.namenode.url", "hdfs://other:9000")]);
        let e = HdfsConfig::read_with_url(&mut ConfigReader::new(&p), Some("hdfs://nn:9000/tiered")).unwrap_err();
        assert!(e.to_string().contains("`hdfs.namenode.url`"), "{e}");
        let p = props([("hdfs.namenode.url", "hdfs://nn:9000"), ("hdfs.root", "/tiered")]);
        let c = HdfsConfig::read_with_url(&mut ConfigReader::new(&p), Some("hdfs://nn:9000/tiered/")).unwrap();
        assert_eq!(c.root, "/tiered");
    }

    #[test]
    fn from_url_roots_the_store_at_the_path() {
        let p = props([("hdfs.conf.dfs.client.socket-timeout", "30000")]);
        let mut r = ConfigReader::new(&p);
        let (b, prefix) = from_url("hdfs://127.0.0.1:9000/kafka/tiered", &mut r).unwrap();
        r.finish().unwrap();
        assert_eq!(prefix, "");
        let dbg = format!("{b:?}");
        assert!(dbg.contains("/kafka/tiered") && dbg.contains("hdfs://127.0.0.1:9000"), "{dbg}");
        let e = from_url("hdfs:///no-host", &mut ConfigReader::new(&props::<[(&str, &str); 0], _, _>([]))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
    }

    #[test]
    fn debug_shows_no_setting_values_that_may_be_secret() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("core-site.xml");
        std::fs::write(
            &site,
            "<configuration><property><name>fs.s3a.secret.key</name><value>site-secret-1</value></property></configuration>",
        )
        .unwrap();
        let e = read(&[("hdfs.namenode.url", "hdfs://alice:url-secret-2@nn:9000/root")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.namenode.url`"), "{e}");
        assert!(!e.to_string().contains("url-secret-2"), "{e}");
        let c = read(&[
            ("hdfs.namenode.url", "hdfs://nn:9000/root"),
            ("hdfs.core-site.path", site.to_str().unwrap()),
            ("hdfs.conf.hadoop.security.credstore.java-keystore-provider.password", "conf-secret-3"),
            ("hdfs.auth.kerberos.principal", "kafka/broker@EXAMPLE.COM"),
            ("hdfs.auth.kerberos.keytab", "/etc/security/kafka.keytab"),
        ])
        .unwrap();
        let b = c.build().unwrap();
        for shown in [format!("{c:?}"), format!("{b:?}"), format!("{b:#?}")] {
            for secret in ["site-secret-1", "url-secret-2", "conf-secret-3"] {
                assert!(!shown.contains(secret), "{secret} leaked: {shown}");
            }
            // Names are fine and help operators: the keys, the principal and the keytab's path.
            assert!(shown.contains("hadoop.security.credstore"), "{shown}");
            assert!(shown.contains("kafka/broker@EXAMPLE.COM"), "{shown}");
        }
        let e = read(&[("hdfs.namenode.url", "ftp://bob:url-secret-4@nn")]).unwrap_err();
        assert!(!e.to_string().contains("url-secret-4"), "{e}");
    }

    #[test]
    fn site_files_and_pass_through_layer() {
        let dir = tempfile::tempdir().unwrap();
        let core = dir.path().join("core.xml");
        let hdfs = dir.path().join("hdfs.xml");
        std::fs::write(
            &core,
            r#"<?xml version="1.0"?><configuration>
                 <property><name>fs.defaultFS</name><value> hdfs://ns </value></property>
                 <property><name>a</name><value>core</value></property></configuration>"#,
        )
        .unwrap();
        std::fs::write(
            &hdfs,
            "<configuration><property><name>a</name><value>hdfs</value></property>\
             <property><name>b</name><value>hdfs</value></property></configuration>",
        )
        .unwrap();
        let c = read(&[
            ("hdfs.core-site.path", core.to_str().unwrap()),
            ("hdfs.hdfs-site.path", hdfs.to_str().unwrap()),
            ("hdfs.conf.b", "flag"),
        ])
        .unwrap();
        let get = |k: &str| c.hadoop.get(k).map(String::as_str);
        assert_eq!((get("fs.defaultFS"), get("a"), get("b")), (Some("hdfs://ns"), Some("hdfs"), Some("flag")));
        let e = read(&[("hdfs.namenode.url", "hdfs://nn"), ("hdfs.core-site.path", "/nonexistent.xml")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.core-site.path`"), "{e}");
    }

    #[test]
    fn errors_are_classified() {
        let io = |k| HdfsError::IOError(std::io::Error::from(k));
        let kind = |e| {
            let e = classify("object k (hdfs path /k)", e);
            (e.kind(), e.is_transient())
        };
        assert_eq!(kind(HdfsError::FileNotFound("/k".into())), (ErrorKind::NotFound, false));
        assert_eq!(
            kind(HdfsError::RPCError("java.io.FileNotFoundException".into(), "File does not exist".into())),
            (ErrorKind::NotFound, false)
        );
        assert_eq!(kind(io(std::io::ErrorKind::ConnectionRefused)), (ErrorKind::Storage, true));
        assert_eq!(kind(io(std::io::ErrorKind::TimedOut)), (ErrorKind::Storage, true));
        assert_eq!(
            kind(HdfsError::RPCError("org.apache.hadoop.ipc.StandbyException".into(), "standby".into())),
            (ErrorKind::Storage, true)
        );
        assert_eq!(
            kind(HdfsError::RPCError(
                "org.apache.hadoop.hdfs.server.namenode.SafeModeException".into(),
                "safe mode".into()
            )),
            (ErrorKind::Storage, true)
        );
        assert_eq!(kind(HdfsError::DataTransferError("dn".into())), (ErrorKind::Storage, true));
        assert_eq!(kind(HdfsError::ChecksumError), (ErrorKind::Corrupt, false));
        assert_eq!(
            kind(HdfsError::RPCError("org.apache.hadoop.security.AccessControlException".into(), "denied".into())),
            (ErrorKind::Storage, false)
        );
        let e = classify("object k (hdfs path /k)", io(std::io::ErrorKind::ConnectionRefused));
        assert!(e.full_message().contains("object k"), "{}", e.full_message());
    }

    #[test]
    fn paths_and_keys() {
        let at = |root: &str| {
            HdfsConfig { namenode_url: Some("hdfs://nn:9000".into()), root: root.into(), ..HdfsConfig::default() }
                .build()
                .unwrap()
        };
        let b = at("/");
        assert_eq!(b.path("a/b").unwrap(), "/a/b");
        assert_eq!(b.key_of("/a/b"), Some("a/b"));
        let b = at("/r/s");
        assert_eq!(b.path("a/b").unwrap(), "/r/s/a/b");
        assert_eq!(b.key_of("/r/s/a/b"), Some("a/b"));
        assert_eq!(b.key_of("/r/st/a"), None);
        assert_eq!(b.path("../x").unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(parent("/r/s/a"), "/r/s");
        assert_eq!(parent("/a"), "/");
    }

    #[tokio::test]
    async fn a_name_node_that_refuses_connections_is_retriable() {
        // Nothing listens on port 1; one attempt only, so the test is quick.
        let p =
            props([("hdfs.namenode.url", "hdfs://127.0.0.1:1"), ("hdfs.conf.dfs.client.failover.max.attempts", "0")]);
        let b = from_config(&mut ConfigReader::new(&p)).unwrap();
        let e = b.get_range("t/k", 0..10).await.unwrap_err();
        assert!(e.is_transient(), "{}", e.full_message());
        assert!(e.to_string().contains("t/k"), "{e}");
        let e = b.put_bytes("t/k", Bytes::from_static(b"x")).await.unwrap_err();
        assert!(e.is_transient(), "{}", e.full_message());
    }
}
