//! [`StoreBuilder`]: how a [`Store`] is opened. The backend comes from the URL's kind of store, the layer
//! stack goes over it, and the storage manager over that.
//!
//! The default stack, the one every [`Store::open`] gets: the store, then [`Counting`] (requests and bytes,
//! [`Store::counts`]), then [`RetryConfig`] (a [`rsm_core::backend::layers::RetryLayer`]) unless the
//! store's own client retries (`retry.*` settings), then [`Tracing`], then, for a store across a network,
//! [`ParallelReads`] (long reads in parts at once, `fetch.part.size`), then with
//! `upload.rate.limit.bytes.per.second` an [`UploadRateLimit`] (one per store opened, so one per storage
//! manager, shared by all its copies). A host's layers
//! ([`StoreBuilder::layer`]) go over that, in the order added: the last one added is the outermost, so it
//! sees every call first and every result last, errors already carrying the operation and key.

use crate::registry::{Registry, scheme_of};
use crate::runtime::runtime;
use crate::store::Store;
use rsm_core::backend::layers::{
    self, BreakerConfig, BreakerStats, Counting, Layer, ParallelReads, RetryConfig, Tracing, UploadRateLimit,
};
use rsm_core::backend::{RequestCounts, StorageBackend};
use rsm_core::config::{ConfigReader, STORE_URL_KEY};
use rsm_core::crypto::KmsConnector;
use rsm_core::{Error, Result, TieredConfig, TieredStorage};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Opens a [`Store`] by URL with its settings, with the default layer stack and the host's layers over
/// it (see the [module](self)).
///
/// ```
/// # use rsm_facade::StoreBuilder;
/// # use rsm_core::backend::layers::RetryConfig;
/// let settings = std::collections::BTreeMap::new();
/// // One more retry layer, over the default stack.
/// let store = StoreBuilder::new("memory:", &settings).layer(RetryConfig::default()).open()?;
/// # let _ = store;
/// # Ok::<(), rsm_core::Error>(())
/// ```
pub struct StoreBuilder<'a> {
    url: &'a str,
    settings: &'a BTreeMap<String, String>,
    registry: Option<&'a Registry>,
    layers: Vec<Box<dyn Layer>>,
    kms_connector: Option<Arc<dyn KmsConnector>>,
}

impl<'a> StoreBuilder<'a> {
    /// A store at `url` with `settings` (unknown settings fail at [`StoreBuilder::open`], naming the key),
    /// of the kinds of store of [`Registry::builtin`], with the default layers only.
    pub fn new(url: &'a str, settings: &'a BTreeMap<String, String>) -> Self {
        StoreBuilder { url, settings, registry: None, layers: Vec::new(), kms_connector: default_kms_connector() }
    }

    /// The store the settings name with `store.url` (how a broker, the C ABI and JNI name it), with the
    /// other settings as its own; a config error naming `store.url` when it is missing or blank.
    pub fn from_settings(settings: &'a BTreeMap<String, String>) -> Result<Self> {
        let url = settings.get(STORE_URL_KEY).map(|u| u.trim()).filter(|u| !u.is_empty()).ok_or_else(|| {
            Error::config(
                STORE_URL_KEY,
                "is required but not set (for example rsm.config.store.url=file:///var/lib/kafka/tiered)",
            )
        })?;
        Ok(Self::new(url, settings))
    }

    /// Opens the URL with the kinds of store of `registry` instead of the built-in ones.
    pub fn registry(mut self, registry: &'a Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Adds `layer` over the stack so far (the default one and the layers added before).
    pub fn layer(mut self, layer: impl Layer + 'static) -> Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// Reaches the KMS keys of the settings (`encryption.key.<id>.kms.key.id`) through `connector` instead
    /// of the default one (AWS KMS's, `rsm_backend_s3::kms::AwsKms`, in a build with the `s3` feature; none
    /// without). With none, a KMS key fails [`StoreBuilder::open`] with a config error naming its setting.
    pub fn kms_connector(mut self, connector: Option<Arc<dyn KmsConnector>>) -> Self {
        self.kms_connector = connector;
        self
    }

    /// Opens the store.
    pub fn open(self) -> Result<Store> {
        let builtin;
        let registry = match self.registry {
            Some(r) => r,
            None => {
                builtin = Registry::builtin();
                &builtin
            }
        };
        let url = self.url.trim();
        let mut r = ConfigReader::new(self.settings);
        r.ignore("broker.id");
        r.ignore(STORE_URL_KEY);
        let Layered { backend, counts, prefix: url_prefix, breaker } =
            open_layered(registry, url, &mut r, &self.layers)?;
        let mut config = TieredConfig::read_with_kms(&mut r, self.kms_connector.as_deref())?;
        config.key_prefix = format!("{url_prefix}{}", config.key_prefix);
        let prices = crate::cost::PriceTable::read(&mut r)?;
        r.finish()?;
        // A memory store is one per opening: its cache entries must not meet another's.
        static MEMORY_STORES: AtomicU64 = AtomicU64::new(0);
        let scope = match scheme_of(url) {
            "memory" => format!("{url}#{}", MEMORY_STORES.fetch_add(1, Ordering::Relaxed)),
            _ => url.to_string(),
        };
        Ok(Store {
            storage: Arc::new(TieredStorage::open(backend, config, &scope)?),
            counts,
            prices,
            breaker,
            timeouts: Arc::default(),
        })
    }
}

/// The KMS client a store's builder starts with: KMS keys (`encryption.key.<id>.kms.key.id`) are AWS KMS
/// keys, and the S3 backend's crate has the client.
#[cfg(feature = "s3")]
fn default_kms_connector() -> Option<Arc<dyn KmsConnector>> {
    Some(Arc::new(rsm_backend_s3::kms::AwsKms))
}

/// The KMS client a store's builder starts with: none in a build without the S3 backend, whose crate has
/// the AWS KMS client.
#[cfg(not(feature = "s3"))]
fn default_kms_connector() -> Option<Arc<dyn KmsConnector>> {
    None
}

/// A store's layered backend, as [`open_layered`] builds it.
pub(crate) struct Layered {
    /// The stack.
    pub backend: Arc<dyn StorageBackend>,
    /// Its request counts.
    pub counts: Arc<RequestCounts>,
    /// The key prefix the URL names.
    pub prefix: String,
    /// The circuit breaker's counters, when it is on.
    pub breaker: Option<Arc<BreakerStats>>,
}

/// [`crate::open_backend`] with `host` layers over the default stack, and the circuit breaker's counters
/// when it is on.
pub(crate) fn open_layered(
    registry: &Registry,
    url: &str,
    r: &mut ConfigReader<'_>,
    host: &[Box<dyn Layer>],
) -> Result<Layered> {
    let kind = registry.kind_of(url)?;
    let (raw, prefix) = {
        let _inside = runtime().enter();
        (kind.open)(url, r)?
    };
    let can = raw.capabilities();
    let retry = if can.retries_itself {
        for key in RetryConfig::KEYS {
            if r.string(key).is_some() {
                return Err(Error::config(
                    key,
                    format!("`{}` stores retry in their own client; set its retry settings instead", scheme_of(url)),
                ));
            }
        }
        None
    } else {
        Some(RetryConfig::read(r)?)
    };
    let counting = Counting::new(RequestCounts::new());
    let mut stack: Vec<&dyn Layer> = vec![&counting];
    if let Some(retry) = &retry {
        stack.push(retry);
    }
    stack.push(&Tracing);
    // Read (and so checked) for every store; stacked only over one across a network.
    let concurrency = r.get_int(&rsm_core::storage::settings::FETCH_CONCURRENCY)?;
    let parallel = ParallelReads::read(r, concurrency)?;
    if can.remote {
        stack.push(&parallel);
    }
    let rate_limit = UploadRateLimit::read(r)?;
    if let Some(limit) = &rate_limit {
        stack.push(limit);
    }
    // Read (and so checked) for every store; stacked unless `store.breaker.failures` is 0. Over every other
    // default layer: it judges whole calls, after their retries and whatever parts a read was split into,
    // and a call it refuses is neither sent, counted, nor paced.
    let breaker = BreakerConfig::read(r)?.for_store(url);
    if breaker.enabled() {
        stack.push(&breaker);
    }
    stack.extend(host.iter().map(|l| l.as_ref()));
    let stats = breaker.enabled().then(|| breaker.stats());
    Ok(Layered { backend: layers::stack(raw, stack), counts: counting.counts(), prefix, breaker: stats })
}

/// The ways to open a [`Store`] without a builder in hand: each builds one with the defaults.
impl Store {
    /// Opens `url` with `settings`; unknown settings fail, naming the key. The default layer stack; a
    /// [`StoreBuilder`] adds a host's layers.
    pub fn open(url: &str, settings: &BTreeMap<String, String>) -> Result<Self> {
        StoreBuilder::new(url, settings).open()
    }

    /// Opens the store the settings name with `store.url` (how a broker, the C ABI and JNI name it); the
    /// other settings are the store's.
    pub fn open_settings(settings: &BTreeMap<String, String>) -> Result<Self> {
        StoreBuilder::from_settings(settings)?.open()
    }

    /// [`Store::open`] with the kinds of store of `registry`.
    pub fn open_in(registry: &Registry, url: &str, settings: &BTreeMap<String, String>) -> Result<Self> {
        StoreBuilder::new(url, settings).registry(registry).open()
    }
}

#[cfg(test)]
mod tests;
