//! One adapter from any [`object_store::ObjectStore`] to rsm's [`StorageBackend`](rsm_core::backend::StorageBackend), shared by the S3, Azure
//! Blob and GCS backends, so each of those crates only reads its settings and builds its store.
//!
//! What the adapter adds over object_store:
//! - **Uploads with bounded memory.** An object of at most the multipart threshold goes in one PUT;
//!   a larger one goes multipart, read part by part with at most [`UploadSettings::parts_in_flight`] parts
//!   in flight (memory is parts in flight x part size). Any failure aborts the multipart upload, so a
//!   failed upload never leaves an object, and never clobbers an earlier one; so does an upload dropped
//!   before it completed (its future cancelled by a timeout, or by the failure of an upload beside it):
//!   the abort is sent in the background.
//! - **Incomplete multipart uploads** listed and aborted, for a store whose crate supplies
//!   [`MultipartUploads`] (object_store lists none): what a crash mid-upload leaves, invisible and billed.
//! - **Our range contract.** A range past the end is cut; a range starting at the end is empty; one
//!   starting past it is an invalid argument; a missing key is not found. A read that asks for bytes costs
//!   one GET; a HEAD is added only for empty ranges and for reads the server answered with 416.
//! - **Listing by raw prefix**, sorted, with sizes and times (object_store's own `list` only matches
//!   whole path segments).
//! - **Error kinds**: not found, retriable (timeouts, connection failures, 5xx, 429, 408) or permanent;
//!   every message names the key and is scrubbed of secrets (see [`Redactor`]).
//! - **An HTTP request counter** ([`CountingConnector`], into [`RequestCounts`]) below object_store, counting
//!   every real request by method.
//! - **A retry budget per store** ([`BudgetConnector`], under the counter): retries are a share of
//!   successes beyond a burst, and a throttled answer waits longer before its retry.
//! - **Reads that go on**: an answer that breaks off is read on from the byte it reached, a read that
//!   stops before its end (given up at its caller's deadline) leaves its bytes for the same read asked
//!   again to go on from, and the same read asked twice at once is sent once.
//!
//! The cloud crates describe their settings and client with a [`CloudStore`]; [`cloud`] assembles the
//! backend and gives each crate its constructors, so none of them writes that code again.

#![warn(missing_docs)]

mod backend;
mod budget;
pub mod cloud;
mod counter;
mod errors;
mod read;
mod settings;
#[cfg(feature = "testing")]
pub mod testing;
mod unfinished;
mod upload;

pub use backend::{MultipartUploads, ObjectStoreBackend, UploadSettings};
pub use budget::{BudgetConnector, RetryBudget, RetryBudgetSettings, RetryBudgetSpent, retry_budget_spent};
pub use cloud::{CloudKind, CloudStore, CloudStores};
pub use counter::CountingConnector;
pub use errors::{Class, Redactor, ScrubbedCause, StatusError, classify, map_error, percent_encode};
pub use rsm_core::backend::{CountSnapshot, Op, OpCount, RequestCounts};
pub use settings::{ClientSettings, split_store_url};

/// What the exported macros name; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use rsm_core;
    pub use rsm_core::Result;
    pub use rsm_core::backend::StorageBackend;
    pub use rsm_core::config::ConfigReader;
    pub use std::sync::Arc;
}
