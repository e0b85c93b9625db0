//! What every HDFS test shares: the cluster's URL from `RSM_TEST_HDFS_URL`, and a backend on it.
//!
//! Start a cluster with `eval "$(tools/servers/minidfs.sh start)"`. Without the variable the tests fail,
//! unless a developer says `RSM_SKIP_HDFS=1` outside CI (`CI` is not `true`): then each prints that it
//! skipped.

#![allow(dead_code)]

use rsm_backend_hdfs::{HdfsBackend, HdfsConfig};
use rsm_core::StorageBackend;
use std::sync::Arc;

/// The root directory of the test stores; every check works under its own unique prefix below it.
pub const ROOT: &str = "/rsm-tests";

/// The cluster's URL, or `None` when HDFS tests are explicitly skipped.
pub fn hdfs_url() -> Option<String> {
    rsm_core::testkit::test_server("RSM_TEST_HDFS_URL", "RSM_SKIP_HDFS", "eval \"$(tools/servers/minidfs.sh start)\"")
}

/// The backend's settings for the test cluster at `url`.
pub fn config(url: &str) -> HdfsConfig {
    HdfsConfig { namenode_url: Some(url.to_string()), root: ROOT.to_string(), ..HdfsConfig::default() }
}

/// A backend on the test cluster, built on the calling test's runtime.
pub fn backend(url: &str) -> HdfsBackend {
    HdfsBackend::connect(&config(url)).expect("build the HDFS backend")
}

/// The same, as the contract suites take it.
pub async fn make(url: String) -> Arc<dyn StorageBackend> {
    Arc::new(backend(&url))
}

/// [`make`] under the retry layer with its default policy, as the facade stacks an HDFS store.
pub async fn make_retried(url: String) -> Arc<dyn StorageBackend> {
    use rsm_core::backend::layers::{RetryConfig, RetryLayer};
    Arc::new(RetryLayer::new(make(url).await, RetryConfig::default()))
}

/// A test's body starts with this: the cluster URL, or return (skipped) from the test.
#[macro_export]
macro_rules! url_or_skip {
    () => {
        match common::hdfs_url() {
            Some(url) => url,
            None => return,
        }
    };
}

/// Counters from a Hadoop daemon's `/jmx` servlet: every `"<Name>NumOps" : n` of the beans matching
/// `query`, summed by name (`Deferred…` RPC variants left out). Plain HTTP/1.0 on loopback.
pub fn jmx_counts(addr: &str, query: &str) -> std::collections::BTreeMap<String, u64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the /jmx servlet");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    write!(s, "GET /jmx?qry={query} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).expect("read /jmx");
    let mut out = std::collections::BTreeMap::new();
    for line in body.lines() {
        let Some((name, value)) = line.trim().trim_end_matches(',').split_once(" : ") else {
            continue;
        };
        let name = name.trim_matches('"');
        if let (Some(op), Ok(n)) = (name.strip_suffix("NumOps"), value.parse::<u64>())
            && !op.starts_with("Deferred")
        {
            *out.entry(op.to_string()).or_default() += n;
        }
    }
    out
}

/// Requests counted by the servers themselves: client RPCs at the NameNode by method, and block
/// operations at the DataNodes. Available when the start script exported the HTTP addresses.
#[derive(Debug, Clone, Default)]
pub struct ServerCounts {
    /// NameNode client-protocol calls by method.
    pub namenode: std::collections::BTreeMap<String, u64>,
    /// DataNode operations (ReadBlockOp, WriteBlockOp, ...), summed over the DataNodes (each replica
    /// in a write pipeline counts its own WriteBlockOp).
    pub datanode: std::collections::BTreeMap<String, u64>,
}

/// The DataNode-to-NameNode protocol, which is not the client's traffic.
const DATANODE_PROTOCOL: [&str; 9] = [
    "SendHeartbeat",
    "SendLifeline",
    "BlockReceivedAndDeleted",
    "BlockReport",
    "CacheReport",
    "RegisterDatanode",
    "VersionRequest",
    "ErrorReport",
    "ReportBadBlocks",
];

impl ServerCounts {
    /// A reading of the counters, or `None` without `RSM_TEST_HDFS_NN_HTTP`.
    pub fn read(url: &str) -> Option<Self> {
        let nn = std::env::var("RSM_TEST_HDFS_NN_HTTP").ok().filter(|s| !s.is_empty())?;
        let port = url.rsplit(':').next().unwrap_or_default();
        let namenode = jmx_counts(&nn, &format!("Hadoop:service=NameNode,name=RpcDetailedActivityForPort{port}"))
            .into_iter()
            // `Overall…` repeats each method's count across ports; `…Exception` counts failed calls, which
            // the method's own count leaves out: keep those.
            .filter(|(k, _)| !DATANODE_PROTOCOL.contains(&k.as_str()) && !k.starts_with("Overall"))
            .collect();
        // Every DataNode of a MiniDFS cluster lives in one JVM, whose /jmx (any of them) shows all their
        // DataNodeActivity beans: read one, or each DataNode would be counted once per address.
        let mut datanode = std::collections::BTreeMap::new();
        let dn_http = std::env::var("RSM_TEST_HDFS_DN_HTTP").unwrap_or_default();
        if let Some(dn) = dn_http.split(',').find(|s| !s.is_empty()) {
            for (k, v) in jmx_counts(dn, "Hadoop:service=DataNode,name=DataNodeActivity*") {
                if k.ends_with("BlockOp") {
                    *datanode.entry(k).or_insert(0) += v;
                }
            }
        }
        Some(ServerCounts { namenode, datanode })
    }

    /// What happened between `before` and `self`, as `Method=n` pairs, zeros left out.
    pub fn since(&self, before: &ServerCounts) -> String {
        let diff = |now: &std::collections::BTreeMap<String, u64>, then: &std::collections::BTreeMap<String, u64>| {
            now.iter()
                .filter_map(|(k, v)| {
                    let d = v - then.get(k).copied().unwrap_or(0);
                    (d > 0).then(|| format!("{k}={d}"))
                })
                .collect::<Vec<_>>()
        };
        let nn = diff(&self.namenode, &before.namenode);
        let dn = diff(&self.datanode, &before.datanode);
        format!("namenode [{}] datanode [{}]", nn.join(" "), dn.join(" "))
    }
}

/// Server-side metrics refresh once a second (the launcher's hadoop-metrics2.properties): wait that long
/// before reading them after an operation.
pub async fn settle_metrics() {
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
}
