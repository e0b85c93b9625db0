//! The tiering engine: the seeds' remote log manager for hosts without a JVM broker.
//!
//! It runs the rules of `rsm-tiering` over real Kafka partition directories, a
//! [`RemoteStorageManager`](rsm_core::rsm::RemoteStorageManager) and a
//! [`RemoteLogMetadataManager`](rsm_metadata::RemoteLogMetadataManager).
//!
//! | module | job |
//! |---|---|
//! | [`manager`] | [`RemoteLogManager`]: the partitions served, their roles, one run of a partition's work |
//! | [`copy`] | the copy task: eligible segments through the storage manager, metadata before and after |
//! | [`expiration`] | the expiration task: remote retention, unfinished deletions and copies, local deletion |
//! | `state` | what the engine, its tasks and its readers share; each partition served (directory, role, totals) |
//! | `lifecycle` | a segment's metadata around each store call: copy started/finished, delete started/finished |
//! | [`index_files`] | SR-32's partition index files, kept beside the partition |
//! | [`local_log`] | a partition directory as the engine works on it |
//! | [`config`] | the engine's settings |
//! | [`scheduler`] | the queue of partitions by next run time, backoff on failure, a fixed pool of workers |
//! | [`reader`] | the reader pool: a fixed number of readers, a bounded queue (backpressure), remote reads by offset |
//! | [`records`] | a consumer's fetch of records (every codec, legacy formats) at an isolation level, through the reader pool |
#![warn(missing_docs)]

pub mod config;
pub mod copy;
pub mod expiration;
pub mod index_files;
mod lifecycle;
pub mod local_log;
pub mod manager;
pub mod reader;
pub mod records;
pub mod scheduler;
mod state;

pub use config::EngineConfig;
pub use expiration::ExpirationPlan;
pub use manager::{CopyListener, DeletionEffect, Offsets, RemoteLogManager, Role, RunPlan, RunReport, Totals};
pub use records::{RecordsRead, RecordsRequest};
