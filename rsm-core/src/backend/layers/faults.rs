//! Injects failures, latency and hangs into chosen calls: the tests' way to prove that a failure leaves
//! nothing visible and that a slow or dead store cannot take its caller down.

use super::LayeredBackend;
use crate::backend::{ByteStream, ObjectMeta, Op, StorageBackend};
use crate::error::{Error, ErrorKind, Result};
use async_trait::async_trait;
use bytes::Bytes;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What an injected fault does to a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fails the call with an error of `kind`, transient or not, without calling the store.
    Fail {
        /// The error's kind.
        kind: ErrorKind,
        /// Whether the error is transient.
        transient: bool,
    },
    /// Waits this long, then makes the call.
    Delay(Duration),
    /// A store across a network: waits `latency`, makes the call, and for a read then waits as long as its
    /// bytes take at `bytes_per_second` (one connection's throughput: each read alone, however many run
    /// at once).
    Network {
        /// The wait before each call (time to first byte).
        latency: Duration,
        /// The bytes a second one read receives.
        bytes_per_second: u64,
    },
    /// Never completes (until the caller gives up and drops the call).
    Hang,
}

impl Fault {
    /// A transient storage failure (a timeout, a refused connection).
    pub fn transient() -> Self {
        Fault::Fail { kind: ErrorKind::Storage, transient: true }
    }

    /// A permanent failure of `kind`.
    pub fn permanent(kind: ErrorKind) -> Self {
        Fault::Fail { kind, transient: false }
    }
}

/// When a fault applies: to calls of `op` (every operation when `None`) on keys matching `key` (a pattern
/// where `*` stands for any run of characters; a listing matches by its prefix, a bulk delete by any of its
/// keys), for the first `times` matching calls (every one when `None`).
#[derive(Clone, Debug)]
pub struct FaultRule {
    /// The operation, or every one.
    pub op: Option<Op>,
    /// The key pattern.
    pub key: String,
    /// What happens.
    pub fault: Fault,
    /// How many matching calls it hits.
    pub times: Option<usize>,
}

/// Whether `key` matches `pattern`, where `*` matches any run of characters (none included).
fn matches(pattern: &str, key: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = key.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Applies [`FaultRule`]s to the calls that pass through; the rest pass on unchanged.
#[derive(Debug)]
pub struct FaultLayer {
    inner: Arc<dyn StorageBackend>,
    rules: Mutex<Vec<FaultRule>>,
    calls: [AtomicUsize; 7],
    injected: AtomicUsize,
}

impl FaultLayer {
    /// Wraps `inner`, with no rule yet.
    pub fn new(inner: Arc<dyn StorageBackend>) -> Self {
        FaultLayer { inner, rules: Mutex::new(Vec::new()), calls: Default::default(), injected: AtomicUsize::new(0) }
    }

    /// Adds a rule (builder form).
    pub fn with_rule(self, rule: FaultRule) -> Self {
        self.add_rule(rule);
        self
    }

    /// Adds a rule; the first rule that matches a call decides.
    pub fn add_rule(&self, rule: FaultRule) {
        self.rules.lock().unwrap_or_else(|p| p.into_inner()).push(rule);
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Calls of `op` that reached this layer, faulted or not.
    pub fn calls(&self, op: Op) -> usize {
        self.calls[op as usize].load(Ordering::SeqCst)
    }

    /// Faults injected so far.
    pub fn injected(&self) -> usize {
        self.injected.load(Ordering::SeqCst)
    }

    /// Counts the call and applies the first matching rule: an error, a delay, or a hang. Returns the
    /// throughput a read's bytes then arrive at, for a [`Fault::Network`].
    async fn apply(&self, op: Op, operation: &str, keys: &[&str]) -> Result<Option<u64>> {
        self.calls[op as usize].fetch_add(1, Ordering::SeqCst);
        let fault = {
            let mut rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
            let hit = rules.iter_mut().find(|r| {
                r.op.is_none_or(|o| o == op) && r.times != Some(0) && keys.iter().any(|k| matches(&r.key, k))
            });
            hit.map(|r| {
                if let Some(t) = r.times.as_mut() {
                    *t -= 1;
                }
                r.fault.clone()
            })
        };
        let Some(fault) = fault else {
            return Ok(None);
        };
        self.injected.fetch_add(1, Ordering::SeqCst);
        let key = keys.first().copied().unwrap_or("");
        match fault {
            Fault::Fail { kind, transient } => {
                let e = Error::new(kind, format!("injected fault: {operation} of {key}"));
                Err(if transient { e.transient() } else { e })
            }
            Fault::Delay(d) => {
                tokio::time::sleep(d).await;
                Ok(None)
            }
            Fault::Network { latency, bytes_per_second } => {
                tokio::time::sleep(latency).await;
                Ok(Some(bytes_per_second.max(1)))
            }
            Fault::Hang => std::future::pending().await,
        }
    }
}

#[async_trait]
impl LayeredBackend for FaultLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.apply(Op::Put, "put_file", &[key]).await?;
        self.inner.put_file(key, path, len).await
    }

    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        self.apply(Op::Put, "put_stream", &[key]).await?;
        self.inner.put_stream(key, data).await
    }

    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.apply(Op::Put, "put_bytes", &[key]).await?;
        self.inner.put_bytes(key, bytes).await
    }

    /// None: every read goes through `get_range`, where the faults are.
    fn open_local(&self, _key: &str) -> Result<Option<Box<dyn crate::backend::LocalObject>>> {
        Ok(None)
    }

    /// The store's, but for its local files, as [`Self::open_local`] opens nothing.
    fn capabilities(&self) -> crate::backend::Capabilities {
        crate::backend::Capabilities { reads_local_files: false, ..self.inner.capabilities() }
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let rate = self.apply(Op::Get, "get_range", &[key]).await?;
        let bytes = self.inner.get_range(key, range).await?;
        if let Some(rate) = rate {
            tokio::time::sleep(Duration::from_secs_f64(bytes.len() as f64 / rate as f64)).await;
        }
        Ok(bytes)
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        let rate = self.apply(Op::Get, "get_tail", &[key]).await?;
        let (bytes, size) = self.inner.get_tail(key, len).await?;
        if let Some(rate) = rate {
            tokio::time::sleep(Duration::from_secs_f64(bytes.len() as f64 / rate as f64)).await;
        }
        Ok((bytes, size))
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.apply(Op::Delete, "delete", &[key]).await?;
        self.inner.delete(key).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        self.apply(Op::Delete, "delete_many", &refs).await?;
        self.inner.delete_many(keys).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.apply(Op::List, "list", &[prefix]).await?;
        self.inner.list(prefix).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemoryBackend;

    #[test]
    fn patterns() {
        let cases = [
            ("*", "a/b.log", true),
            ("*.manifest", "t/0/x.manifest", true),
            ("*.manifest", "t/0/x.log", false),
            ("t/*/x.*", "t/0/x.log", true),
            ("t/*/x.*", "u/0/x.log", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("a*a", "a", false),
            ("a*a", "aa", true),
        ];
        for (pattern, key, want) in cases {
            assert_eq!(matches(pattern, key), want, "{pattern} ~ {key}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn rules_pick_calls_by_operation_key_and_count() {
        let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let f = FaultLayer::new(store)
            .with_rule(FaultRule {
                op: Some(Op::Put),
                key: "*.manifest".into(),
                fault: Fault::permanent(ErrorKind::Storage),
                times: Some(1),
            })
            .with_rule(FaultRule {
                op: Some(Op::Get),
                key: "slow/*".into(),
                fault: Fault::Delay(Duration::from_secs(5)),
                times: None,
            })
            .with_rule(FaultRule { op: Some(Op::List), key: "dead/".into(), fault: Fault::Hang, times: None });
        let b: &dyn StorageBackend = &f;
        let e = b.put_bytes("s.manifest", Bytes::from_static(b"m")).await.unwrap_err();
        assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Storage, false));
        assert!(e.to_string().contains("put_bytes of s.manifest"), "{e}");
        b.put_bytes("s.manifest", Bytes::from_static(b"m")).await.unwrap();
        b.put_bytes("slow/k", Bytes::from_static(b"k")).await.unwrap();
        let t = tokio::time::Instant::now();
        b.get_range("slow/k", 0..1).await.unwrap();
        assert_eq!(t.elapsed(), Duration::from_secs(5));
        let hung = tokio::time::timeout(Duration::from_secs(60), b.list("dead/")).await;
        assert!(hung.is_err(), "a hang never completes");
        assert_eq!(b.list("live/").await.unwrap(), vec![]);
        assert_eq!((f.calls(Op::Put), f.calls(Op::Get), f.calls(Op::List), f.injected()), (3, 1, 2, 3));
        f.clear();
        assert_eq!(b.list("dead/").await.unwrap(), vec![]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_network_store_waits_its_latency_then_the_bytes_at_its_throughput() {
        let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let network = Fault::Network { latency: Duration::from_secs(1), bytes_per_second: 1000 };
        let f = FaultLayer::new(store).with_rule(FaultRule { op: None, key: "*".into(), fault: network, times: None });
        let f: &dyn StorageBackend = &f;
        let t = tokio::time::Instant::now();
        f.put_bytes("k", Bytes::from(vec![1; 5000])).await.unwrap();
        assert_eq!(t.elapsed(), Duration::from_secs(1), "a write: the latency only");
        let t = tokio::time::Instant::now();
        assert_eq!(f.get_range("k", 1000..4000).await.unwrap().len(), 3000);
        assert_eq!(t.elapsed(), Duration::from_secs(4), "1 s, then 3000 bytes at 1000 a second");
    }
}
