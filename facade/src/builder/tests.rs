use super::*;
use crate::registry::StoreKind;
use rsm_core::ErrorKind;
use rsm_core::backend::Op;
use rsm_core::backend::layers::{Fault, FaultLayer, FaultRule};
use std::sync::Mutex;

/// A host's layer for the tests: a [`FaultLayer`] with `rules`, kept where the test can ask it what it saw.
#[derive(Clone, Debug, Default)]
struct Watched {
    rules: Vec<FaultRule>,
    made: Arc<Mutex<Vec<Arc<FaultLayer>>>>,
}

impl Watched {
    fn calls(&self, op: Op) -> usize {
        self.made.lock().unwrap().iter().map(|f| f.calls(op)).sum()
    }
}

impl Layer for Watched {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        let faults = Arc::new(FaultLayer::new(inner));
        for rule in &self.rules {
            faults.add_rule(rule.clone());
        }
        self.made.lock().unwrap().push(faults.clone());
        faults
    }
}

/// Where each name first shows in the stack's `Debug` form: outer layers first.
fn positions(store: &Store, names: &[&str]) -> Vec<usize> {
    let shown = format!("{:?}", store.storage().backend());
    names.iter().map(|n| shown.find(n).unwrap_or_else(|| panic!("no {n} in {shown}"))).collect()
}

#[test]
fn the_default_stack_is_store_counting_retry_tracing() {
    let settings = BTreeMap::new();
    let store = StoreBuilder::new("memory:", &settings).open().unwrap();
    let at = positions(&store, &["TracingLayer", "RetryLayer", "CountingLayer", "MemoryBackend"]);
    assert!(at.is_sorted(), "tracing over retry over counting over the store: {at:?}");
    let opened = Store::open("memory:", &settings).unwrap();
    assert_eq!(
        format!("{:?}", opened.storage().backend()),
        format!("{:?}", store.storage().backend()),
        "Store::open is the builder's default stack"
    );
}

#[cfg(feature = "s3")]
#[test]
fn a_store_that_retries_itself_gets_no_retry_layer() {
    let settings = rsm_core::config::props([("s3.endpoint.url", "http://127.0.0.1:1")]);
    let store = StoreBuilder::new("s3://bucket/prefix", &settings).open().unwrap();
    let shown = format!("{:?}", store.storage().backend());
    assert!(!shown.contains("RetryLayer"), "{shown}");
    let at = positions(&store, &["ParallelReadLayer", "TracingLayer", "CountingLayer"]);
    assert!(at.is_sorted(), "long reads are split over the rest, each part counted and traced: {at:?}");
    assert!(shown.contains("part_size: 1048576, concurrency: 4"), "the defaults: {shown}");
}

#[test]
fn long_reads_are_split_only_over_a_store_across_a_network_and_the_setting_is_checked_everywhere() {
    let settings = BTreeMap::new();
    let shown = format!("{:?}", Store::open("memory:", &settings).unwrap().storage().backend());
    assert!(!shown.contains("ParallelReadLayer"), "{shown}");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let shown = format!("{:?}", Store::open(&url, &settings).unwrap().storage().backend());
    assert!(!shown.contains("ParallelReadLayer"), "{shown}");
    let bad = rsm_core::config::props([("fetch.part.size", "-1")]);
    let e = Store::open(&url, &bad).unwrap_err();
    assert!(e.to_string().contains("fetch.part.size"), "{e}");
}

#[test]
fn an_upload_rate_limit_paces_every_store_when_set() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let shown = format!("{:?}", Store::open(&url, &BTreeMap::new()).unwrap().storage().backend());
    assert!(!shown.contains("RateLimitLayer"), "off by default: {shown}");
    let on = rsm_core::config::props([("upload.rate.limit.bytes.per.second", "1048576")]);
    let store = Store::open(&url, &on).unwrap();
    let shown = format!("{:?}", store.storage().backend());
    assert!(shown.contains("rate: 1048576"), "{shown}");
    let at = positions(&store, &["RateLimitLayer", "TracingLayer", "CountingLayer", "FsBackend"]);
    assert!(at.is_sorted(), "over the default stack: {at:?}");
}

#[test]
fn a_host_layer_goes_over_the_default_stack_and_sees_the_calls() {
    let settings = BTreeMap::new();
    let broken_gets = FaultRule { op: Some(Op::Get), key: "*".into(), fault: Fault::transient(), times: None };
    let host = Watched { rules: vec![broken_gets], ..Watched::default() };
    let store = StoreBuilder::new("memory:", &settings).layer(host.clone()).open().unwrap();
    let at = positions(&store, &["FaultLayer", "TracingLayer", "RetryLayer", "CountingLayer", "MemoryBackend"]);
    assert!(at.is_sorted(), "the host's layer is the outermost: {at:?}");

    assert!(store.list_segments(None).unwrap().is_empty());
    assert_eq!(host.calls(Op::List), 1, "the host's layer sees the call");
    assert_eq!(store.counts().get(Op::List).requests, 1, "and the default layers below it too");

    // A failure the host's layer makes starts above the default stack: not retried, not counted, and
    // without the operation the tracing layer would have added.
    let e = store.read_manifest("no/such/manifest").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    assert!(e.is_transient(), "{e}");
    assert_eq!(e.operation(), None, "{e}");
    assert_eq!(host.calls(Op::Get), 1, "tried once");
    assert_eq!(store.counts().get(Op::Get).requests, 0, "it never reached the counting layer");
}

#[test]
fn host_layers_stack_in_the_order_added() {
    let settings = BTreeMap::new();
    let (first, second) = (Watched::default(), Watched::default());
    let store = StoreBuilder::new("memory:", &settings)
        .registry(&Registry::builtin())
        .layer(first.clone())
        .layer(second.clone())
        .layer(RetryConfig::default())
        .open()
        .unwrap();
    let shown = format!("{:?}", store.storage().backend());
    let faults: Vec<usize> = shown.match_indices("FaultLayer").map(|(i, _)| i).collect();
    assert_eq!(faults.len(), 2, "{shown}");
    assert!(shown.find("RetryLayer").unwrap() < faults[0], "the last added is the outermost: {shown}");
    assert!(faults[1] < shown.find("TracingLayer").unwrap(), "the first added is over the default stack: {shown}");
    assert!(store.list_segments(None).unwrap().is_empty());
    assert_eq!((first.calls(Op::List), second.calls(Op::List)), (1, 1));
}

#[test]
fn the_breaker_goes_over_the_default_stack_unless_off_and_its_settings_are_checked() {
    let store = Store::open("memory:", &BTreeMap::new()).unwrap();
    let at = positions(&store, &["BreakerLayer", "TracingLayer", "RetryLayer", "CountingLayer", "MemoryBackend"]);
    assert!(at.is_sorted(), "on by default, over the default stack: {at:?}");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let limited = rsm_core::config::props([("upload.rate.limit.bytes.per.second", "1048576")]);
    let store = Store::open(&url, &limited).unwrap();
    let at = positions(&store, &["BreakerLayer", "RateLimitLayer", "TracingLayer", "CountingLayer"]);
    assert!(at.is_sorted(), "a refused upload is not paced: {at:?}");

    let off = rsm_core::config::props([("store.breaker.failures", "0")]);
    let shown = format!("{:?}", Store::open("memory:", &off).unwrap().storage().backend());
    assert!(!shown.contains("BreakerLayer"), "{shown}");
    let bad = rsm_core::config::props([("store.breaker.failures", "0"), ("store.breaker.open.max.ms", "10")]);
    let e = Store::open("memory:", &bad).unwrap_err();
    assert_eq!(e.config_key(), Some("store.breaker.open.max.ms"), "checked even when off: {e}");
}

/// A memory store whose every read fails transiently, as a dead store's.
fn open_flaky(_url: &str, _r: &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)> {
    let broken_gets = FaultRule { op: Some(Op::Get), key: "*".into(), fault: Fault::transient(), times: None };
    let store = FaultLayer::new(Arc::new(rsm_core::backend::MemoryBackend::new())).with_rule(broken_gets);
    Ok((Arc::new(RetriesItself(Arc::new(store))), String::new()))
}

/// A store whose client retries by itself, as a cloud store's does: the facade stacks no retry layer.
#[derive(Debug)]
struct RetriesItself(Arc<dyn StorageBackend>);

impl rsm_core::backend::LayeredBackend for RetriesItself {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.0
    }

    fn capabilities(&self) -> rsm_core::backend::Capabilities {
        rsm_core::backend::Capabilities { retries_itself: true, ..self.0.capabilities() }
    }
}

#[test]
fn a_failing_store_is_refused_at_once_and_refused_calls_are_not_counted() {
    let mut registry = Registry::builtin();
    registry.register(StoreKind { schemes: &["flaky"], open: open_flaky });
    // (settings, reads of 8 that reach the counting layer)
    let cases = [(BTreeMap::new(), 5), (rsm_core::config::props([("store.breaker.failures", "0")]), 8)];
    for (settings, counted) in cases {
        let store = Store::open_in(&registry, "flaky:", &settings).unwrap();
        let backend = store.storage().backend().clone();
        let errors: Vec<Error> = runtime().block_on(async {
            let mut errors = Vec::new();
            for _ in 0..8 {
                errors.push(backend.get_range("k", 0..1).await.unwrap_err());
            }
            errors
        });
        assert!(errors.iter().all(|e| e.is_transient()), "{errors:?}");
        assert_eq!(store.counts().get(Op::Get).requests, counted, "{settings:?}");
        let refused = errors.iter().filter(|e| e.message().contains("store flaky: is failing")).count();
        assert_eq!(refused, 8 - counted as usize, "{settings:?}: {errors:?}");
        // The breaker's counters, as a host publishes them: open, once, 3 calls refused (all 0 when off).
        let metric = |name: &str| store.cache_metrics()[crate::CACHE_METRICS.iter().position(|n| *n == name).unwrap()];
        let on = counted == 5;
        assert_eq!(
            [metric("store-breaker-state"), metric("store-breaker-opened"), metric("store-breaker-refused")],
            if on { [1, 1, 3] } else { [0, 0, 0] },
            "{settings:?}"
        );
        // Down since it opened (0 when off): the time grows while it stays open.
        let down = metric("store-breaker-down-ms");
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(metric("store-breaker-down-ms") > down, on, "{settings:?}: {down}");
    }
}

/// A KMS client for the tests that refuses every key, naming it.
struct RefusingKms;

impl KmsConnector for RefusingKms {
    fn connect(
        &self,
        _settings: &rsm_core::crypto::KmsSettings,
        setting: &str,
        key_id: &str,
    ) -> Result<Arc<dyn rsm_core::crypto::KeyEncryptionKey>> {
        Err(Error::config(setting, format!("the test's KMS client refuses `{key_id}`")))
    }
}

/// KMS keys are reached through the builder's KMS client: AWS KMS's by default (with the S3 backend), the
/// host's when it passes one, and with none a KMS key is the config error naming its setting that a build
/// without a KMS client gives.
#[test]
fn kms_keys_are_reached_through_the_builders_kms_client() {
    let settings =
        rsm_core::config::props([("encryption.kms.key.id", "alias/rsm"), ("encryption.kms.region", "eu-west-1")]);
    let e = StoreBuilder::new("memory:", &settings).kms_connector(None).open().unwrap_err();
    assert_eq!(e.config_key(), Some("encryption.key.kms.kms.key.id"), "{e}");
    assert_eq!(
        e.to_string(),
        "invalid configuration `encryption.key.kms.kms.key.id`: names AWS KMS key `alias/rsm`, and the store was opened \
         without a KMS client (rsm_facade::StoreBuilder passes rsm_backend_s3::kms::AwsKms in a build with \
         S3)"
    );
    let e = StoreBuilder::new("memory:", &settings).kms_connector(Some(Arc::new(RefusingKms))).open().unwrap_err();
    assert_eq!(e.config_key(), Some("encryption.key.kms.kms.key.id"), "{e}");
    assert!(e.to_string().contains("the test's KMS client refuses `alias/rsm`"), "{e}");
    // AWS KMS's client asks nothing of KMS before a data key is wanted, so the store opens.
    #[cfg(feature = "s3")]
    StoreBuilder::new("memory:", &settings).open().unwrap();
}
