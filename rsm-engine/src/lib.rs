//! The tiering engine: the seeds' remote log manager for hosts without a JVM broker.
//!
//! It runs the rules of `rsm-tiering` over real Kafka partition directories, a
//! [`RemoteStorageManager`](rsm_core::rsm::RemoteStorageManager) and a
//! [`RemoteLogMetadataManager`](rsm_metadata::RemoteLogMetadataManager).
//!
//! | module | job |
//! |---|---|
//! | [`scheduler`] | the queue of partitions by next run time, backoff on failure, a fixed pool of workers |
//! | [`reader`] | the reader pool: a fixed number of readers, a bounded queue (backpressure), remote reads by offset |
#![warn(missing_docs)]

pub mod reader;
pub mod scheduler;
