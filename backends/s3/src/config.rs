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

/// `s3.sse`.
pub const SSE: Setting = Setting::of("s3.sse", Kind::Choice(&["none", "AES256", "aws:kms"]))
    .with_text_default("none")
    .with_checks("`aws:kms` needs `s3.sse.kms.key.id`")
    .with_doc(
        "server-side encryption of every object written: `none` sends no header (the bucket's default encryption \
         applies), `AES256` is SSE-S3, `aws:kms` is SSE-KMS under `s3.sse.kms.key.id`",
    );
/// `s3.sse.kms.key.id`.
pub const SSE_KMS_KEY_ID: Setting = Setting::of("s3.sse.kms.key.id", Kind::String)
    .with_checks("required with `s3.sse=aws:kms`, refused otherwise")
    .with_doc("the KMS key (key id, key ARN or alias ARN) objects are encrypted under with `s3.sse=aws:kms`");
/// `s3.topic.<topic>.sse.kms.key.id`: a family, see [`topic_setting`].
pub const TOPIC_SSE_KMS_KEY_ID: Setting = Setting::of("s3.topic.<topic>.sse.kms.key.id", Kind::String)
    .with_described_default("`s3.sse` and `s3.sse.kms.key.id`")
    .with_checks("the topic is what lies between `s3.topic.` and `.sse.kms.key.id`")
    .with_doc(
        "the KMS key the objects of topic `<topic>` are written under (SSE-KMS, whatever `s3.sse` says); reads, \
         listings and deletes need no key",
    );
/// `s3.topic.<topic>.storage.class`: a family, see [`topic_setting`].
pub const TOPIC_STORAGE_CLASS: Setting = Setting::of("s3.topic.<topic>.storage.class", Kind::String)
    .with_described_default("`s3.storage.class`")
    .with_checks("the topic is what lies between `s3.topic.` and `.storage.class`")
    .with_doc("storage class of the objects of topic `<topic>`");
/// `aws.credentials.file`.
pub const CREDENTIALS_FILE: Setting = Setting::of("aws.credentials.file", Kind::Path)
    .with_checks("not with `aws.access.key.id`; must hold the profile when the store opens")
    .with_doc(
        "credentials from a file in the AWS shared-credentials format (`aws_access_key_id`, \
         `aws_secret_access_key`, `aws_session_token`), read again when it changes (looked at, by its \
         modification time and length, at most once a second as requests need credentials): requests keep \
         the credentials in use until the new file reads completely; a file that does not read is logged once \
         (never its secrets) and the previous credentials kept. Write it by renaming a new file over it",
    );
/// `aws.credentials.profile`.
pub const CREDENTIALS_PROFILE: Setting = Setting::of("aws.credentials.profile", Kind::String)
    .with_text_default("default")
    .with_checks("only with `aws.credentials.file`")
    .with_doc("the profile (`[name]` or `[profile name]` section) of `aws.credentials.file`");
/// `aws.sts.endpoint.url`.
pub const STS_ENDPOINT: Setting = Setting::of("aws.sts.endpoint.url", Kind::String)
    .with_described_default("`AWS_ENDPOINT_URL_STS`, else `https://sts.<region>.amazonaws.com`")
    .with_checks("an `https://` URL")
    .with_doc(
        "the STS endpoint of web identity credentials (the default chain's `AWS_WEB_IDENTITY_TOKEN_FILE` and \
         `AWS_ROLE_ARN`, as on EKS): AssumeRoleWithWebIdentity is sent there",
    );
/// `s3.checksum.algorithm`.
pub const CHECKSUM: Setting =
    Setting::of("s3.checksum.algorithm", Kind::Choice(&["none", "SHA256"])).with_text_default("none").with_doc(
        "a checksum S3 checks each upload against: `SHA256` sends each PUT's and each part's SHA-256 \
         (`x-amz-checksum-sha256`) and S3 refuses bytes that do not match it",
    );

/// The key of the family `setting` (`s3.topic.<topic>...`) for `topic`.
pub fn topic_setting(setting: &Setting, topic: &str) -> String {
    setting.key.replace("<topic>", topic)
}

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
    &SSE,
    &SSE_KMS_KEY_ID,
    &TOPIC_SSE_KMS_KEY_ID,
    &TOPIC_STORAGE_CLASS,
    &CHECKSUM,
    &CREDENTIALS_FILE,
    &CREDENTIALS_PROFILE,
    &STS_ENDPOINT,
];
