//! # rsm-core
//!
//! The core of a Kafka tiered-storage (KIP-405) SDK:
//! - [`model`]: Kafka's plugin types (segment ids, metadata, `LogSegmentData`, index types);
//! - [`format`](mod@format): Kafka's on-disk formats (record batches, `.index`, `.timeindex`) and ours (the manifest,
//!   the SR-32 remote log index files);
//! - [`backend`]: the [`StorageBackend`] contract every store implements, an in-memory store, the request
//!   accounting type and the layers (counting, retry, fault injection, tracing) that wrap any store;
//! - [`rsm`]: the [`RemoteStorageManager`] contract Kafka's broker calls;
//! - [`storage`]: [`TieredStorage`], the one implementation of that contract over any backend, split by job
//!   (remote layout, copy, the fetch planner, the chunk source seam, caches);
//! - [`config`]: typed settings read from string maps;
//! - [`checksum`]: CRC-32C, the check of every byte stored and served;
//! - [`crypto`]: envelope encryption of chunks (AES-256-GCM, per-segment data keys wrapped by a [`crypto::KeyRing`]);
//! - `testkit` (feature): the contract suites every backend runs, and fixture partitions; with the feature
//!   `log-writer` alone, only its Kafka log writer (record batches and partition directories) and the helpers
//!   that need nothing more.

#![warn(missing_docs)]

pub mod backend;
pub mod blocking;
pub mod checksum;
pub mod config;
pub mod crypto;
pub mod dir_lock;
pub mod error;
pub mod format;
pub mod model;
pub mod partition_dir;
pub mod rsm;
pub mod single_flight;
pub mod storage;
#[cfg(any(feature = "testkit", feature = "log-writer"))]
pub mod testkit;

pub use backend::StorageBackend;
pub use error::{Error, ErrorKind, Result};
pub use model::*;
pub use rsm::RemoteStorageManager;
pub use storage::{TieredConfig, TieredStorage};
