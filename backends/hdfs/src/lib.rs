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
//! <!-- settings:hdfs:begin -->
//! | key | default | meaning |
//! |---|---|---|
//! | `hdfs.namenode.url` | `fs.defaultFS` | `hdfs://host:port`, an HA name service `hdfs://ns`, or `viewfs://cluster`; a path in it is the root |
//! | `hdfs.conf.dir` | `$HADOOP_CONF_DIR` | a Hadoop configuration directory; its `core-site.xml` and `hdfs-site.xml` are read (HA, Kerberos, timeouts) |
//! | `hdfs.core-site.path` | (none) | a single Hadoop XML file, read after the directory (the leading plugin's key) |
//! | `hdfs.hdfs-site.path` | (none) | a single Hadoop XML file, read after `hdfs.core-site.path` (the leading plugin's key) |
//! | `hdfs.conf.<hadoop key>` | (none) | any Hadoop client setting, overriding the files: `hdfs.conf.dfs.client.socket-timeout=30000` |
//! | `hdfs.root` | `/` | absolute directory that holds the objects |
//! | `hdfs.user` | `$HADOOP_USER_NAME` or the OS user | effective user (simple authentication) |
//! | `hdfs.auth.enabled` | false | Kerberos: requires the principal and keytab and sets `hadoop.security.authentication=kerberos` |
//! | `hdfs.auth.kerberos.principal` | (none) | Kerberos client principal (required with `hdfs.auth.enabled` or the keytab) |
//! | `hdfs.auth.kerberos.keytab` | (none) | Kerberos client keytab path (required with `hdfs.auth.enabled`) |
//! | `hdfs.upload.buffer.size` | 1 MiB (1048576) | bytes read from a local file per piece while uploading (memory per upload) ([4 KiB (4096), 64 MiB (67108864)]) |
//! | `hdfs.connect.timeout` | 20 s (20000 ms) | (HDFS store) ms to resolve and connect to a `hdfs://host:port` name node, checked before the store's first call: a host that does not resolve fails at once, one that does not answer fails (retriable) after this time (without it the client's failover loop is silent for minutes) ([1 ms, 1 h (3600000 ms)]) |
//! <!-- settings:hdfs:end -->
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
//! Every operation makes one attempt: the backend does not retry a retriable error itself (the client
//! only fails over between NameNodes and backs off). Retries are the caller's layer, the one applied to
//! every store that does not retry by itself.
//!
//! # Runtime
//! The client spawns its connection and lease-renewal tasks on the tokio runtime current when the backend
//! is built (or, outside any runtime, on a runtime of its own). Build it on the runtime that will use it.

#![warn(missing_docs)]

mod backend;
pub mod config;
mod errors;

pub use backend::{HdfsBackend, TMP_PREFIX};
pub use config::HdfsConfig;

use rsm_core::Result;
use rsm_core::backend::StorageBackend;
use rsm_core::config::ConfigReader;
use std::sync::Arc;

/// Builds a backend from the `hdfs.*` settings in `r`.
pub fn from_config(r: &mut ConfigReader<'_>) -> Result<HdfsBackend> {
    HdfsBackend::connect(&HdfsConfig::read(r)?)
}

/// Builds a backend from a store URL `hdfs://host:port/path` (or `hdfs://nameservice/path`,
/// `viewfs://cluster/path`) and the other `hdfs.*` settings in `r`. The URL's path is the root directory
/// of the store, so the key prefix returned is always empty.
pub fn from_url(url: &str, r: &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)> {
    let backend = HdfsBackend::connect(&HdfsConfig::read_with_url(r, Some(url))?)?;
    Ok((Arc::new(backend), String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::ErrorKind;
    use rsm_core::config::props;

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
}
