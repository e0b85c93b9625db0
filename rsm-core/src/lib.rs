//! # rsm-core
//!
//! The core of a Kafka tiered-storage (KIP-405) SDK:
//! - [`model`]: Kafka's plugin types (segment ids, metadata, `LogSegmentData`, index types);
//! - [`format`]: Kafka's on-disk formats (record batches, `.index`, `.timeindex`) and ours (the manifest,
//!   the SR-32 remote log index files);
//! - [`backend`]: the [`StorageBackend`] contract every store implements, with an in-memory store and a
//!   request-counting wrapper;
//! - [`rsm`]: the [`RemoteStorageManager`] contract Kafka's broker calls;
//! - [`tiered`]: [`TieredStorage`], the one implementation of that contract over any backend;
//! - [`config`]: typed settings read from string maps;
//! - `testkit` (feature): the contract suites every backend runs, and fixture partitions.

#![warn(missing_docs)]

pub mod backend;
pub mod config;
pub mod error;
pub mod format;
pub mod model;
pub mod rsm;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod tiered;

pub use backend::StorageBackend;
pub use error::{Error, ErrorKind, Result};
pub use model::*;
pub use rsm::RemoteStorageManager;
pub use tiered::{TieredConfig, TieredStorage};
