//! The blocking facade: opens a store by URL with its settings, stacks the backend layers, and runs the
//! async core on one shared tokio runtime. The CLI, the C ABI and JNI are thin faces over this crate, so
//! they behave the same; what every face needs lives here:
//! - [`Store`]: open by URL ([`Store::open`]) or from a face's settings map with `store.url` in it
//!   ([`Store::open_settings`]), then Kafka's operations, blocking;
//! - [`Registry`]: the kinds of store by URL scheme, one cargo feature per backend (`fs`, `s3`, `azure`,
//!   `gcs`, `hdfs`; all on by default, so a host can build only the stores it uses);
//! - [`SegmentReader`]: the stream adapter (short reads, skips, pieces without copying);
//! - [`Store::fetch_records`]: the records of one segment a consumer at an isolation level is given;
//! - [`wire`]: the compact metadata encoding a face passes as bytes;
//! - [`ResultCode`]: the code of an error, from its kind and status;
//! - [`audit`]: a store compared with its remote log metadata, the findings by class (lost, gaps, orphans,
//!   unreferenced, damaged, stuck, abandoned copies, incomplete uploads);
//! - requests and bytes by topic ([`Store::requests_by_topic`]) and what they cost ([`cost`]: the optional
//!   price table of the `cost.*` settings).
//!
//! Store URLs: `file:///absolute/path` (the embedded default), `s3://bucket/prefix`, `az://container/prefix`,
//! `gs://bucket/prefix`, `hdfs://namenode:port/path` and `memory:` (tests). Settings are the
//! keys a broker passes under `rsm.config.` (see [`rsm_core::TieredConfig`], [`RetryConfig`] and each
//! backend).
//!
//! Every store is wrapped as: the store, then [`CountingLayer`] (requests and bytes, [`Store::counts`]),
//! then [`RetryLayer`] unless the store's own client retries (`retry.*`), then [`TracingLayer`], then for a
//! store across a network a [`rsm_core::backend::layers::ParallelReadLayer`] (`fetch.part.size`); a host
//! adds its own [`Layer`]s over that with a [`StoreBuilder`] (see [`builder`]).

#![warn(missing_docs)]

pub mod audit;
pub mod builder;
mod code;
pub mod cost;
pub mod handles;
pub mod metrics;
mod partition;
mod reader;
mod records;
mod registry;
pub mod runtime;
mod store;
pub mod wire;

pub use builder::StoreBuilder;
pub use code::{ResultCode, panic_message};
pub use metrics::{CACHE_METRICS, STORE_METRICS};
pub use partition::{CopyProgress, PartitionCopy, open_partition_for_copy};
pub use reader::SegmentReader;
pub use records::{FetchedRecords, RecordsFetch};
pub use registry::{OpenFn, Registry, StoreKind, scheme_of};
pub use runtime::runtime;
pub use store::{CountLevel, Store};

use rsm_core::Result;
#[cfg(doc)]
use rsm_core::backend::layers::{CountingLayer, Layer, RetryConfig, RetryLayer, TracingLayer};
use rsm_core::backend::{RequestCounts, StorageBackend};
use rsm_core::config::ConfigReader;
use std::sync::Arc;

/// Opens the backend `url` names with the kinds of `registry`, reading its settings (and `retry.*`) from
/// `r`, and stacks the layers over it. Returns the stack, the counts of its counting layer, and the key
/// prefix the URL's path names.
///
/// Backends are built inside the shared runtime, because some (HDFS) start background tasks on it.
pub fn open_backend(
    registry: &Registry,
    url: &str,
    r: &mut ConfigReader<'_>,
) -> Result<(Arc<dyn StorageBackend>, Arc<RequestCounts>, String)> {
    builder::open_layered(registry, url, r, &[]).map(|l| (l.backend, l.counts, l.prefix))
}
