//! The S3 store's settings, declared once: [`S3Config`](crate::S3Config) reads them through these
//! declarations and the crate documentation's table is generated from [`SETTINGS`] (with the cloud
//! client's timeouts and retries, [`ClientSettings`](crate::ClientSettings)).

use rsm_core::config::{Kind, Setting, Unit};

/// Smallest part S3 accepts (except the last).
pub const MIN_PART_SIZE: usize = 5 << 20;

/// `s3.bucket.name`.
pub const BUCKET: Setting = Setting::of("s3.bucket.name", Kind::String)
    .with_checks("required unless the store URL names the bucket; the two must agree")
    .with_doc("bucket (or from an `s3://bucket/prefix` URL)");
/// `s3.region`.
pub const REGION: Setting = Setting::of("s3.region", Kind::String).with_text_default("us-east-1").with_doc("region");
/// `s3.endpoint.url`.
pub const ENDPOINT: Setting = Setting::of("s3.endpoint.url", Kind::String)
    .with_described_default("AWS")
    .with_checks("an `http://` or `https://` URL")
    .with_doc("endpoint of an S3-compatible store; plain HTTP only when it says `http://`");
/// `s3.path.style.access.enabled`.
pub const PATH_STYLE: Setting = Setting::of("s3.path.style.access.enabled", Kind::Bool)
    .with_described_default("`true` with an endpoint, else `false`")
    .with_doc("path-style requests (`endpoint/bucket/key`) instead of virtual hosts");
/// `aws.access.key.id`.
pub const ACCESS_KEY_ID: Setting = Setting::of("aws.access.key.id", Kind::Secret)
    .with_described_default("the default chain: environment, web identity, ECS, instance metadata")
    .with_checks("with `aws.secret.access.key`")
    .with_doc("static credentials: the access key id (secret)");
/// `aws.secret.access.key`.
pub const SECRET_ACCESS_KEY: Setting = Setting::of("aws.secret.access.key", Kind::Secret)
    .with_checks("with `aws.access.key.id`")
    .with_doc("static credentials: the secret access key (secret)");
/// `aws.session.token`.
pub const SESSION_TOKEN: Setting = Setting::of("aws.session.token", Kind::Secret)
    .with_checks("with `aws.access.key.id` and `aws.secret.access.key`")
    .with_doc("static credentials: a session token (secret)");
/// `s3.multipart.upload.part.size`.
pub const PART_SIZE: Setting = Setting::int("s3.multipart.upload.part.size", MIN_PART_SIZE as i128, 1 << 30)
    .with_default(25 << 20)
    .with_unit(Unit::Bytes)
    .with_doc("part size in bytes; objects up to one part go in one PUT");
/// `s3.multipart.upload.parts.in.flight`.
pub const PARTS_IN_FLIGHT: Setting = Setting::int("s3.multipart.upload.parts.in.flight", 1, 32)
    .with_default(4)
    .with_doc("parts uploaded at once per object");
/// `s3.storage.class`.
pub const STORAGE_CLASS: Setting = Setting::of("s3.storage.class", Kind::String)
    .with_described_default("the bucket's")
    .with_doc("storage class of every object (`STANDARD`, `STANDARD_IA`, ...)");

/// The settings of the S3 store, in the order the documentation lists them.
pub const SETTINGS: &[&Setting] = &[
    &BUCKET,
    &REGION,
    &ENDPOINT,
    &PATH_STYLE,
    &ACCESS_KEY_ID,
    &SECRET_ACCESS_KEY,
    &SESSION_TOKEN,
    &PART_SIZE,
    &PARTS_IN_FLIGHT,
    &STORAGE_CLASS,
];
