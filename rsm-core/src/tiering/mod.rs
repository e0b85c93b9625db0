//! The broker-side rules of the seeds as pure, deterministic logic (no I/O; time is passed in):
//! settings, copy eligibility with delayed upload, remote retention, offsets, followers, DeleteRecords
//! and ListOffsets.

pub mod copy;
pub mod retention;
pub mod segments;
pub mod settings;

pub use segments::{LocalSegment, RemoteSegment};
pub use settings::{
    BrokerSettings, CleanupPolicy, CopyLag, Lag, Limit, RemoteRetention, RetentionLimits,
    SizeScope, TopicDefaults, TopicPolicy, TopicSettings, validate_alter, validate_create,
};
