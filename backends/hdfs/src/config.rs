//! The settings of an HDFS store: the `hdfs.*` keys, the store URL split into the name node and the root,
//! Hadoop site files and pass-through settings layered in order. Plain data: the backend is built from it
//! ([`HdfsBackend::connect`](crate::HdfsBackend::connect)).

use rsm_core::config::{ConfigReader, Kind, STORE_URL_KEY, Setting, Unit};
use rsm_core::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// `hdfs.namenode.url`.
pub const NAMENODE_URL: Setting = Setting::of("hdfs.namenode.url", Kind::String)
    .with_described_default("`fs.defaultFS`")
    .with_doc("`hdfs://host:port`, an HA name service `hdfs://ns`, or `viewfs://cluster`; a path in it is the root");
/// `hdfs.conf.dir`.
pub const CONF_DIR: Setting =
    Setting::of("hdfs.conf.dir", Kind::Path).with_described_default("`$HADOOP_CONF_DIR`").with_doc(
        "a Hadoop configuration directory; its `core-site.xml` and `hdfs-site.xml` are read (HA, Kerberos, timeouts)",
    );
/// `hdfs.core-site.path`.
pub const CORE_SITE_PATH: Setting = Setting::of("hdfs.core-site.path", Kind::Path)
    .with_doc("a single Hadoop XML file, read after the directory (the leading plugin's key)");
/// `hdfs.hdfs-site.path`.
pub const HDFS_SITE_PATH: Setting = Setting::of("hdfs.hdfs-site.path", Kind::Path)
    .with_doc("a single Hadoop XML file, read after `hdfs.core-site.path` (the leading plugin's key)");
/// `hdfs.conf.<hadoop key>`: the pass-through namespace.
pub const CONF_PREFIX: Setting = Setting::of("hdfs.conf.", Kind::PassThrough)
    .shown_as("`hdfs.conf.<hadoop key>`")
    .with_doc("any Hadoop client setting, overriding the files: `hdfs.conf.dfs.client.socket-timeout=30000`");
/// `hdfs.root`.
pub const ROOT: Setting =
    Setting::of("hdfs.root", Kind::Path).with_text_default("/").with_doc("absolute directory that holds the objects");
/// `hdfs.user`.
pub const USER: Setting = Setting::of("hdfs.user", Kind::String)
    .with_described_default("`$HADOOP_USER_NAME` or the OS user")
    .with_doc("effective user (simple authentication)");
/// `hdfs.auth.enabled`.
pub const AUTH_ENABLED: Setting = Setting::bool("hdfs.auth.enabled", false)
    .with_doc("Kerberos: requires the principal and keytab and sets `hadoop.security.authentication=kerberos`");
/// `hdfs.auth.kerberos.principal`.
pub const KERBEROS_PRINCIPAL: Setting = Setting::of("hdfs.auth.kerberos.principal", Kind::String)
    .with_checks("required with `hdfs.auth.enabled` or the keytab")
    .with_doc("Kerberos client principal");
/// `hdfs.auth.kerberos.keytab`.
pub const KERBEROS_KEYTAB: Setting = Setting::of("hdfs.auth.kerberos.keytab", Kind::Path)
    .with_checks("required with `hdfs.auth.enabled`")
    .with_doc("Kerberos client keytab path");
/// `hdfs.upload.buffer.size`.
pub const UPLOAD_BUFFER_SIZE: Setting = Setting::int("hdfs.upload.buffer.size", 4096, 64 << 20)
    .with_default(1 << 20)
    .with_unit(Unit::Bytes)
    .with_doc("bytes read from a local file per piece while uploading (memory per upload)");
/// `hdfs.connect.timeout`.
pub const CONNECT_TIMEOUT: Setting =
    Setting::long("hdfs.connect.timeout", 1, 3_600_000).with_default(20_000).with_unit(Unit::Millis).with_doc(
        "(HDFS store) ms to resolve and connect to a `hdfs://host:port` name node, checked before the store's \
         first call: a host that does not resolve fails at once, one that does not answer fails (retriable) after \
         this time (without it the client's failover loop is silent for minutes)",
    );

/// The settings [`HdfsConfig::read`] reads, in the order the crate documentation lists them.
pub const SETTINGS: &[&Setting] = &[
    &NAMENODE_URL,
    &CONF_DIR,
    &CORE_SITE_PATH,
    &HDFS_SITE_PATH,
    &CONF_PREFIX,
    &ROOT,
    &USER,
    &AUTH_ENABLED,
    &KERBEROS_PRINCIPAL,
    &KERBEROS_KEYTAB,
    &UPLOAD_BUFFER_SIZE,
    &CONNECT_TIMEOUT,
];

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
            root: "/".to_string(), // ROOT's default
            user: None,
            kerberos_principal: None,
            kerberos_keytab: None,
            upload_piece: UPLOAD_BUFFER_SIZE.default_int(),
            connect_timeout: std::time::Duration::from_millis(CONNECT_TIMEOUT.default_int()),
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
        const URL: &str = NAMENODE_URL.key;
        const ROOT_KEY: &str = ROOT.key;
        let mut c = HdfsConfig::default();

        let from_setting = r.string(URL).map(|u| split_url(URL, u)).transpose()?;
        let root_setting = r.string(ROOT_KEY).map(|p| normalize_root(ROOT_KEY, p)).transpose()?;
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
                    return Err(Error::config(ROOT_KEY, format!("`{set}` differs from the store URL's path `{root}`")));
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
                        return Err(Error::config(ROOT_KEY, format!("`{s}` differs from the path `{u}` of {URL}")));
                    }
                    (u, s) => s.or(u).unwrap_or_else(|| "/".to_string()),
                };
            }
        }

        if let Some(dir) = r.get_string(&CONF_DIR) {
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                return Err(Error::config(CONF_DIR.key, format!("{} is not a directory", dir.display())));
            }
            c.conf_dir = Some(dir);
        }
        let mut hadoop = BTreeMap::new();
        for key in [CORE_SITE_PATH.key, HDFS_SITE_PATH.key] {
            if let Some(p) = r.string(key) {
                let p = PathBuf::from(p);
                hadoop.extend(read_site_file(key, &p)?);
                c.site_files.push(p);
            }
        }
        // `hdfs.conf.dir` shares the pass-through namespace; it is ours, not a Hadoop key.
        let mut pass = r.with_prefix(CONF_PREFIX.key);
        pass.remove("dir");
        for (k, v) in pass {
            if k.is_empty() {
                return Err(Error::config(CONF_PREFIX.key, "a Hadoop setting needs a name"));
            }
            hadoop.insert(k, v.trim().to_string());
        }

        c.user = r.get_string(&USER).map(str::to_string);
        let auth = r.get_bool(&AUTH_ENABLED)?;
        c.kerberos_principal = r.get_string(&KERBEROS_PRINCIPAL).map(str::to_string);
        c.kerberos_keytab = r.get_string(&KERBEROS_KEYTAB).map(PathBuf::from);
        if c.kerberos_keytab.is_some() && c.kerberos_principal.is_none() {
            return Err(Error::config(KERBEROS_PRINCIPAL.key, "is required when hdfs.auth.kerberos.keytab is set"));
        }
        if auth {
            if c.kerberos_principal.is_none() {
                return Err(Error::config(KERBEROS_PRINCIPAL.key, "is required when hdfs.auth.enabled is true"));
            }
            if c.kerberos_keytab.is_none() {
                return Err(Error::config(KERBEROS_KEYTAB.key, "is required when hdfs.auth.enabled is true"));
            }
            hadoop.entry("hadoop.security.authentication".to_string()).or_insert_with(|| "kerberos".to_string());
        }
        c.hadoop = hadoop;
        c.upload_piece = r.get_int(&UPLOAD_BUFFER_SIZE)?;
        c.connect_timeout = std::time::Duration::from_millis(r.get_int(&CONNECT_TIMEOUT)?);

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
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rsm_core::config::props;

    /// The settings `pairs` read as `HdfsConfig::read` reads them, every key known.
    pub(crate) fn read(pairs: &[(&str, &str)]) -> Result<HdfsConfig> {
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
