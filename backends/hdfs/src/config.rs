//! The settings of an HDFS store: the `hdfs.*` keys, the store URL split into the name node and the root,
//! Hadoop site files and pass-through settings layered in order, and the client built from them.

use crate::backend::HdfsBackend;
use hdfs_native::{ClientBuilder, HdfsError};
use rsm_core::config::{ConfigReader, STORE_URL_KEY};
use rsm_core::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

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
    /// `hdfs.connect.timeout` (ms): resolving and connecting to a `host:port` name node, checked before
    /// the store's first call, so an unreachable or misspelt name node fails in this time rather than
    /// after the client's failover loop (minutes).
    pub connect_timeout: std::time::Duration,
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
            .field("connect_timeout", &self.connect_timeout)
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
            connect_timeout: std::time::Duration::from_secs(20),
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
                let (nn, path) = split_url(STORE_URL_KEY, url)?;
                let root = normalize_root(STORE_URL_KEY, path.as_deref().unwrap_or("/"))?;
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
        let connect_ms = r.int_in("hdfs.connect.timeout", c.connect_timeout.as_millis() as u64, 1..=3_600_000)?;
        c.connect_timeout = std::time::Duration::from_millis(connect_ms);

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
        Ok(HdfsBackend::new(client, self.clone()))
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

        let e = read(&[("hdfs.namenode.url", "hdfs://nn"), ("hdfs.connect.timeout", "0")]).unwrap_err();
        assert!(e.to_string().contains("`hdfs.connect.timeout`"), "{e}");
        let c = read(&[("hdfs.namenode.url", "hdfs://nn"), ("hdfs.connect.timeout", "1500")]).unwrap();
        assert_eq!(c.connect_timeout, std::time::Duration::from_millis(1500));
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
}
