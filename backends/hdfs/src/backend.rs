//! The [`HdfsBackend`] and its [`StorageBackend`] operations: uploads to a temporary file renamed over
//! the key, positional ranged reads, deletes that prune the directories they empty, and listings that
//! walk the tree under a prefix.

use crate::config::{self, HdfsConfig};
use crate::errors::classify;
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream;
use hdfs_native::client::FileStatus;
use hdfs_native::file::FileWriter;
use hdfs_native::{Client, ClientBuilder, HdfsError, WriteOptions};
use rsm_core::backend::{ByteStream, ObjectMeta, StorageBackend, TemporaryObject, clamp_range, validate_key};
use rsm_core::{Error, Result};
use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::AsyncReadExt;

/// Prefix of temporary upload files (`.rsm-tmp-{file name}.{random id}`, beside the key): `list` skips them,
/// `list_temporary` lists them.
pub const TMP_PREFIX: &str = ".rsm-tmp-";

/// Directory listings in flight at once while walking a tree.
const LIST_CONCURRENCY: usize = 8;

/// Deletes in flight at once in [`StorageBackend::delete_many`].
const DELETE_CONCURRENCY: usize = 8;

/// A store of objects as files under a root directory of an HDFS cluster.
#[derive(Clone)]
pub struct HdfsBackend {
    client: Client,
    root: String,
    upload_piece: usize,
    config: Arc<HdfsConfig>,
    /// Set once the name node was reached (see [`HdfsBackend::reach_namenode`]).
    reached: Arc<tokio::sync::OnceCell<()>>,
}

impl fmt::Debug for HdfsBackend {
    // The client's own Debug prints its whole Hadoop configuration, values included: never show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HdfsBackend").field("config", &self.config).finish_non_exhaustive()
    }
}

fn system_time(ms: u64) -> Option<SystemTime> {
    (ms > 0).then(|| SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
}

/// The `host:port` of a name node URL with an explicit port (`hdfs://nn:8020` -> `nn:8020`).
fn direct_address(url: &str) -> Option<&str> {
    let authority = url.split_once("://")?.1.split('/').next()?;
    let (_, port) = authority.rsplit_once(':')?;
    port.parse::<u16>().ok().map(|_| authority)
}

/// The parent directory of an absolute HDFS path (`/a/b` -> `/a`, `/a` -> `/`).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl HdfsBackend {
    /// Connects a client with the settings `config` (no request is sent until the first operation).
    pub fn connect(config: &HdfsConfig) -> Result<HdfsBackend> {
        let mut b = ClientBuilder::new().with_config(config.hadoop.clone());
        if let Some(url) = &config.namenode_url {
            b = b.with_url(url.clone());
        }
        if let Some(dir) = &config.conf_dir {
            b = b.with_config_dir(dir.to_string_lossy().into_owned());
        }
        if let Some(user) = &config.user {
            b = b.with_user(user.clone());
        }
        if let Some(p) = &config.kerberos_principal {
            b = b.with_kerberos_principal(p.clone());
        }
        if let Some(k) = &config.kerberos_keytab {
            b = b.with_kerberos_keytab(k.to_string_lossy().into_owned());
        }
        let client = b.build().map_err(|e| {
            let key = match &e {
                HdfsError::XmlParseError(_) | HdfsError::IOError(_) => config::CONF_DIR.key,
                HdfsError::InvalidArgument(m) if m.contains("Kerberos") => config::KERBEROS_PRINCIPAL.key,
                _ => config::NAMENODE_URL.key,
            };
            Error::config(key, format!("cannot build the HDFS client: {e}"))
        })?;
        Ok(HdfsBackend::new(client, config.clone()))
    }

    /// A backend on `client`, storing under the root of `config`.
    fn new(client: Client, config: HdfsConfig) -> Self {
        HdfsBackend {
            client,
            root: config.root.clone(),
            upload_piece: config.upload_piece,
            config: Arc::new(config),
            reached: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// Before the first call: resolves and connects to a `hdfs://host:port` name node within
    /// `hdfs.connect.timeout`, so a misspelt host fails at once and a silent one in that time, instead of
    /// after the client's failover loop. Once reached, never again; a failure is not remembered. A name
    /// service (no port) is left to the client, which knows its name nodes from the Hadoop configuration.
    async fn reach_namenode(&self, key: &str) -> Result<()> {
        let Some(addr) = self.config.namenode_url.as_deref().and_then(direct_address) else { return Ok(()) };
        let timeout = self.config.connect_timeout;
        self.reached
            .get_or_try_init(|| async {
                let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
                let resolved = match tokio::time::timeout(timeout, tokio::net::lookup_host(addr)).await {
                    Err(_) => {
                        return Err(Error::retriable(
                            format!("name node {addr}: {host} did not resolve within hdfs.connect.timeout"),
                            format!("{} ms", timeout.as_millis()),
                        ));
                    }
                    Ok(Err(e)) => {
                        return Err(Error::storage(
                            format!("name node {addr}: host `{host}` does not resolve (check the store URL)"),
                            e,
                        ));
                    }
                    Ok(Ok(addrs)) => addrs.collect::<Vec<_>>(),
                };
                let mut last = None;
                for a in resolved {
                    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(a)).await {
                        Ok(Ok(_)) => return Ok(()),
                        Ok(Err(e)) => {
                            last = Some(Error::retriable(format!("cannot connect to name node {addr} ({a})"), e))
                        }
                        Err(_) => {
                            last = Some(Error::retriable(
                                format!("name node {addr} ({a}) did not answer within hdfs.connect.timeout"),
                                format!("{} ms", timeout.as_millis()),
                            ));
                        }
                    }
                }
                Err(last.unwrap_or_else(|| {
                    Error::storage(format!("name node {addr}"), format!("host `{host}` resolves to no address"))
                }))
            })
            .await
            .map(|_| ())
            .map_err(|e| e.with_field("key", key))
    }

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

    /// A ranged read, in one attempt: open the file (one `getBlockLocations`), check the range, read the
    /// blocks it touches. A DataNode transfer failure (a replica moved, or the file was replaced or
    /// deleted between open and read) is retriable; the next call opens the file again.
    async fn read(&self, key: &str, path: &str, range: Range<u64>) -> Result<Bytes> {
        let reader = self.client.read(path).await.map_err(|e| classify(&Self::what(key, path), e))?;
        let r = clamp_range(key, range, reader.file_length() as u64)?;
        if r.is_empty() {
            return Ok(Bytes::new());
        }
        reader
            .read_range(r.start as usize, (r.end - r.start) as usize)
            .await
            .map_err(|e| classify(&format!("reading {}", Self::what(key, path)), e))
    }

    /// The last `len` bytes of a file and its length: one open (its length comes with the block locations),
    /// then one read.
    async fn read_tail(&self, key: &str, path: &str, len: u64) -> Result<(Bytes, u64)> {
        let reader = self.client.read(path).await.map_err(|e| classify(&Self::what(key, path), e))?;
        let size = reader.file_length() as u64;
        let start = size.saturating_sub(len);
        if start == size {
            return Ok((Bytes::new(), size));
        }
        let bytes = reader
            .read_range(start as usize, (size - start) as usize)
            .await
            .map_err(|e| classify(&format!("reading {}", Self::what(key, path)), e))?;
        Ok((bytes, size))
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

impl HdfsBackend {
    /// The files under the deepest directory `prefix` names whose key starts with `prefix`: the objects
    /// (temporary files skipped), or with `temporary` only the temporary files of uploads to such keys, each
    /// with the key it was for. Walks a level at a time with several listings in flight, descending only into
    /// directories that can hold such keys. Sorted by key.
    async fn walk(&self, prefix: &str, temporary: bool) -> Result<Vec<TemporaryObject>> {
        let dir_part = prefix.rfind('/').map(|i| &prefix[..i]).unwrap_or("");
        if !dir_part.is_empty() {
            validate_key(dir_part)?;
        }
        self.reach_namenode(prefix).await?;
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
                let (dir, name) = rel.rsplit_once('/').map_or(("", rel), |(d, n)| (d, n));
                let tmp_of = name.strip_prefix(TMP_PREFIX).map(|n| n.rsplit_once('.').map_or(n, |(t, _)| t));
                // Only files are told apart: directories are walked in both modes (none is temporary).
                if status.isdir {
                    let as_dir = format!("{rel}/");
                    if tmp_of.is_none() && (as_dir.starts_with(prefix) || prefix.starts_with(&as_dir)) {
                        next.push(status.path.clone());
                    }
                    continue;
                }
                if tmp_of.is_some() != temporary {
                    continue;
                }
                let target = match tmp_of {
                    Some(t) if dir.is_empty() => t.to_string(),
                    Some(t) => format!("{dir}/{t}"),
                    None => rel.to_string(),
                };
                if target.starts_with(prefix) {
                    let meta = ObjectMeta {
                        key: rel.to_string(),
                        size: status.length as u64,
                        last_modified: system_time(status.modification_time),
                    };
                    out.push(TemporaryObject { meta, target });
                }
            }
            level = next;
        }
        out.sort_by(|a, b| a.meta.key.cmp(&b.meta.key));
        Ok(out)
    }
}

#[async_trait]
impl StorageBackend for HdfsBackend {
    /// Across a network; its client does not retry (the facade's retry layer does).
    fn capabilities(&self) -> rsm_core::backend::Capabilities {
        rsm_core::backend::Capabilities { remote: true, ..Default::default() }
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        let target = self.path(key)?;
        self.reach_namenode(key).await?;
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
        self.reach_namenode(key).await?;
        let (tmp, mut writer) = self.create_tmp(key, &target).await?;
        let written = self.write_stream(&mut writer, key, &tmp, data).await;
        self.commit(key, &target, &tmp, writer, written).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let path = self.path(key)?;
        self.reach_namenode(key).await?;
        self.read(key, &path, range).await
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        let path = self.path(key)?;
        self.reach_namenode(key).await?;
        self.read_tail(key, &path, len).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        self.reach_namenode(key).await?;
        if self.delete_path(key, &path).await? {
            self.prune(BTreeSet::from([parent(&path).to_string()])).await;
        }
        Ok(())
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let paths =
            keys.iter().map(|k| self.path(k).map(|p| (k.clone(), p))).collect::<Result<Vec<(String, String)>>>()?;
        if let Some((key, _)) = paths.first() {
            self.reach_namenode(key).await?;
        }
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
        Ok(self.walk(prefix, false).await?.into_iter().map(|t| t.meta).collect())
    }

    /// The `.rsm-tmp-*` files beside the keys that start with `prefix`: an upload's until it is renamed over
    /// its key, or left by a process that died mid-upload. Their keys are their paths under the root.
    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        self.walk(prefix, true).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_config;
    use rsm_core::ErrorKind;
    use rsm_core::config::{ConfigReader, props};

    use crate::config::tests::read;

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
        HdfsBackend::connect(&c).unwrap();
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
        let b = HdfsBackend::connect(&c).unwrap();
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
    fn paths_and_keys() {
        let at = |root: &str| {
            HdfsBackend::connect(&HdfsConfig {
                namenode_url: Some("hdfs://nn:9000".into()),
                root: root.into(),
                ..HdfsConfig::default()
            })
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

    /// A name node host that does not resolve, or that refuses connections, fails the first call at once,
    /// naming the host, instead of after minutes of the client's failover loop. (A host that does not answer
    /// at all fails after `hdfs.connect.timeout`; no address is reliably silent in every test network.)
    #[tokio::test]
    async fn an_unknown_or_silent_name_node_fails_fast() {
        assert_eq!(direct_address("hdfs://nn.example:8020"), Some("nn.example:8020"));
        assert_eq!(direct_address("hdfs://ns1"), None);
        let p = props([("hdfs.namenode.url", "hdfs://no-such-namenode.invalid:8020")]);
        let b = from_config(&mut ConfigReader::new(&p)).unwrap();
        let t = std::time::Instant::now();
        let e = b.list("t/").await.unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
        assert!(e.full_message().contains("host `no-such-namenode.invalid` does not resolve"), "{}", e.full_message());
        assert!(!e.is_transient(), "{}", e.full_message());
        // A name node that refuses connections fails at once too, with the client's failover loop (15
        // attempts with backoff by default) never entered.
        let p = props([("hdfs.namenode.url", "hdfs://127.0.0.1:1"), ("hdfs.connect.timeout", "300")]);
        let b = from_config(&mut ConfigReader::new(&p)).unwrap();
        let t = std::time::Instant::now();
        let e = b.get_range("t/k", 0..1).await.unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(3), "took {:?}", t.elapsed());
        let m = e.full_message();
        assert!(e.is_transient() && m.contains("cannot connect to name node 127.0.0.1:1") && m.contains("t/k"), "{m}");
    }
}
