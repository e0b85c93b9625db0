//! # rsm-tiering
//!
//! The broker-side rules of the seeds as pure, deterministic logic (no I/O; time is passed in):
//! settings, copy eligibility with delayed upload, remote retention, offsets, followers, DeleteRecords
//! and ListOffsets. A host without Kafka's own RemoteLogManager (a native broker, the CLI) runs these;
//! Kafka's own broker does not need them. Errors and the settings reader come from
//! [`rsm_core`].
//!
//! | rule | module |
//! |---|---|
//! | SR-1 … SR-12, delayed-upload settings | [`settings`] |
//! | SR-16 copy eligibility, delayed upload (KIP-1241) | [`copy`] |
//! | SR-17 remote retention | [`retention`] |
//! | SR-20 offset constraints | [`offsets`] |
//! | SR-21 follower local deletion, SR-17 follower log start | [`follower`] |
//! | SR-25 DeleteRecords | [`mod@delete_records`] |
//! | SR-26, SR-27 ListOffsets | [`list_offsets`] |
//!
//! The segment shapes they take are in [`segments`]. `docs/tiering-rules.md` states each rule in plain
//! words; `docs/settings.md` lists every setting.

#![warn(missing_docs)]

pub mod copy;
pub mod delete_records;
pub mod follower;
pub mod list_offsets;
pub mod offsets;
pub mod retention;
pub mod segments;
pub mod settings;

pub use copy::{CopyCandidate, CopyInput, CopyPlan, CopyStop, segments_to_copy};
pub use delete_records::{DELETE_TO_HIGH_WATERMARK, DeleteRecordsOutcome, delete_records};
pub use follower::{
    LocalDeletion, LocalDeletionPlan, LocalDeletionReason, LocalRetentionInput, follower_log_start,
    local_segments_to_delete, log_start_past_retention,
};
pub use list_offsets::{Isolation, LogOffsets, OffsetAnswer, OffsetSpec, TimestampAndOffset, list_offset};
pub use offsets::{
    LogStartMoved, OffsetRange, PartitionOffsets, RemoteCoverage, Transition, check_offsets, local_segment_deletable,
    log_gaps, remote_coverage, uncovered,
};
pub use retention::{Expired, ExpiryReason, RetentionInput, RetentionPlan, expired_remote_segments};
pub use segments::{LocalSegmentSummary, RemoteSegment};
pub use settings::{
    BrokerSettings, CleanupPolicy, CopyLag, Lag, Limit, RemoteRetention, RetentionLimits, SizeScope, TopicDefaults,
    TopicPolicy, TopicSettings, validate_alter, validate_create,
};
