//! The GCS store's settings, declared once: [`GcsConfig`](crate::GcsConfig) reads them through these
//! declarations and the crate documentation's table is generated from [`SETTINGS`] (with the cloud
//! client's timeouts and retries, `ClientSettings`).

use crate::uploads::CHUNK_GRANULARITY;
use rsm_core::config::{Kind, Setting, Unit};

/// `gcs.bucket.name`.
pub const BUCKET: Setting = Setting::of("gcs.bucket.name", Kind::String)
    .with_checks("required unless the store URL names the bucket; the two must agree")
    .with_doc("bucket (or from a `gs://bucket/prefix` URL)");
/// `gcs.credentials.json`.
pub const CREDENTIALS_JSON: Setting = Setting::of("gcs.credentials.json", Kind::Secret)
    .with_checks("not with `gcs.credentials.path`")
    .with_doc("a service account key, as JSON text (secret)");
/// `gcs.credentials.path`.
pub const CREDENTIALS_PATH: Setting =
    Setting::of("gcs.credentials.path", Kind::Path).with_doc("a service account key file");
/// `gcs.credentials.default`.
pub const CREDENTIALS_DEFAULT: Setting = Setting::of("gcs.credentials.default", Kind::Bool)
    .with_described_default("`true` unless a JSON or path is set")
    .with_checks("not `true` with a JSON or path")
    .with_doc(
        "`true`: application default credentials (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file, the metadata \
         server); `false` with neither of the above: anonymous requests (public buckets, emulators)",
    );
/// `gcs.endpoint.url`.
pub const ENDPOINT: Setting = Setting::of("gcs.endpoint.url", Kind::String)
    .with_described_default("Google")
    .with_checks("an `http://` or `https://` URL")
    .with_doc("endpoint (fake-gcs-server: `http://127.0.0.1:4443`); plain HTTP only when it says `http://`");
/// `gcs.resumable.upload.chunk.size`.
pub const CHUNK_SIZE: Setting = Setting::int("gcs.resumable.upload.chunk.size", CHUNK_GRANULARITY as i128, 1 << 30)
    .with_default(25 << 20)
    .with_unit(Unit::Bytes)
    .with_checks("a multiple of 256 KiB")
    .with_doc("chunk size in bytes; objects up to one chunk go in one media upload, larger ones in a resumable upload");

/// The settings of the GCS store, in the order the documentation lists them.
pub const SETTINGS: &[&Setting] =
    &[&BUCKET, &CREDENTIALS_JSON, &CREDENTIALS_PATH, &CREDENTIALS_DEFAULT, &ENDPOINT, &CHUNK_SIZE];
