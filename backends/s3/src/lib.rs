//! Amazon S3 (and S3-compatible stores) for rsm, over object_store's AWS client.
//!
//! Settings (the keys a broker passes under `rsm.config.`, named after Aiven's tiered-storage plugin):
//!
//! <!-- settings:s3:begin -->
//! | key | default | meaning |
//! |---|---|---|
//! | `s3.bucket.name` | (none) | bucket (or from an `s3://bucket/prefix` URL) (required unless the store URL names the bucket; the two must agree) |
//! | `s3.region` | `us-east-1` | region |
//! | `s3.endpoint.url` | AWS | endpoint of an S3-compatible store; plain HTTP only when it says `http://` (an `http://` or `https://` URL) |
//! | `s3.path.style.access.enabled` | `true` with an endpoint, else `false` | path-style requests (`endpoint/bucket/key`) instead of virtual hosts |
//! | `aws.access.key.id` | the default chain: environment, web identity, ECS, instance metadata | static credentials: the access key id (secret) (with `aws.secret.access.key`) |
//! | `aws.secret.access.key` | (none) | static credentials: the secret access key (secret) (with `aws.access.key.id`) |
//! | `aws.session.token` | (none) | static credentials: a session token (secret) (with `aws.access.key.id` and `aws.secret.access.key`) |
//! | `s3.multipart.upload.part.size` | 25 MiB (26214400) | part size in bytes; objects up to one part go in one PUT ([5 MiB (5242880), 1 GiB (1073741824)]) |
//! | `s3.multipart.upload.parts.in.flight` | 4 | parts uploaded at once per object ([1, 32]) |
//! | `s3.storage.class` | the bucket's | storage class of every object (`STANDARD`, `STANDARD_IA`, ...) |
//! | `s3.sse` | `none` | server-side encryption of every object written: `none` sends no header (the bucket's default encryption applies), `AES256` is SSE-S3, `aws:kms` is SSE-KMS under `s3.sse.kms.key.id` (`aws:kms` needs `s3.sse.kms.key.id`) |
//! | `s3.sse.kms.key.id` | (none) | the KMS key (key id, key ARN or alias ARN) objects are encrypted under with `s3.sse=aws:kms` (required with `s3.sse=aws:kms`, refused otherwise) |
//! | `s3.topic.<topic>.sse.kms.key.id` | `s3.sse` and `s3.sse.kms.key.id` | the KMS key the objects of topic `<topic>` are written under (SSE-KMS, whatever `s3.sse` says); reads, listings and deletes need no key (the topic is what lies between `s3.topic.` and `.sse.kms.key.id`) |
//! | `s3.topic.<topic>.storage.class` | `s3.storage.class` | storage class of the objects of topic `<topic>` (the topic is what lies between `s3.topic.` and `.storage.class`) |
//! | `s3.checksum.algorithm` | `none` | a checksum S3 checks each upload against: `SHA256` sends each PUT's and each part's SHA-256 (`x-amz-checksum-sha256`) and S3 refuses bytes that do not match it |
//! | `aws.credentials.file` | (none) | credentials from a file in the AWS shared-credentials format (`aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`), read again when it changes (looked at, by its modification time and length, at most once a second as requests need credentials): requests keep the credentials in use until the new file reads completely; a file that does not read is logged once (never its secrets) and the previous credentials kept. Write it by renaming a new file over it (not with `aws.access.key.id`; must hold the profile when the store opens) |
//! | `aws.credentials.profile` | `default` | the profile (`[name]` or `[profile name]` section) of `aws.credentials.file` (only with `aws.credentials.file`) |
//! | `aws.sts.endpoint.url` | `AWS_ENDPOINT_URL_STS`, else `https://sts.<region>.amazonaws.com` | the STS endpoint of web identity credentials (the default chain's `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`, as on EKS): AssumeRoleWithWebIdentity is sent there (an `https://` URL) |
//! | `<p>.api.call.timeout` | 30 s (30000 ms) | (cloud stores) ms for a whole request, retries included (a broker's default: a store that does not answer frees the calling thread in seconds; the broker retries a failed copy or fetch itself) ([1 ms, 1 d (86400000 ms)]) |
//! | `<p>.api.call.attempt.timeout` | 30 s (30000 ms) | (cloud stores) ms for one HTTP request ([1 ms, 1 d (86400000 ms)]) |
//! | `s3.connect.timeout`, `azure.connect.timeout`, `gcs.connect.timeout` | 5 s (5000 ms) | (cloud stores) ms to open one connection ([1 ms, 1 h (3600000 ms)]) |
//! | `<p>.max.retries` | 3 | (cloud stores) retries of a request (timeouts, connection errors, 5xx, 429) after the first attempt, with exponential backoff and jitter (as the AWS SDKs' standard mode); more retries add load to a store that is throttling ([0, 100]) |
//! | `<p>.retry.budget.burst` | 50 | (cloud stores) retries the store's requests may spend ahead of their successes, shared by all calls; once spent, a failure is not retried (the broker retries the call later) until successes earn retries back, so a store that is down or throttling sees about one request per call ([0, 100000]) |
//! | `<p>.retry.budget.percent` | 10 | (cloud stores) the share of one retry each successful request earns back: beyond the burst, retries are at most this share of requests ([0, 100]) |
//! | `<p>.throttle.backoff.ms` | 50 ms | (cloud stores) after a throttled answer (429, or 503 such as S3's SlowDown and Azure's ServerBusy), the store gets no request (a retry or another call's) for this long less a random part of up to half, doubled for each throttled answer in a row, on top of the client's own backoff; requests dropped while they wait (a fetch past `fetch.timeout.ms`) do not prolong it; any other answer ends it ([0, 10 min (600000 ms)]) |
//! | `<p>.throttle.backoff.max.ms` | 200 ms | (cloud stores) the longest pause of a throttling store; keep it well below `fetch.timeout.ms`: a fetch that outlives its wait while paused counts as a failure of the store for the circuit breaker, and kept it open long after the store recovered (the retry budget and the breaker are what cut the requests to a throttling store) ([0, 1 h (3600000 ms)]) |
//! <!-- settings:s3:end -->
//!
//! `<p>` is `s3` in the cloud client's settings ([`ClientSettings`]).
//!
//! Deletes of many keys go in batches of at most 1000 keys a request (S3's `DeleteObjects`).
//!
//! Incomplete multipart uploads (what a crash mid-upload leaves: invisible, billed) are listed with
//! ListMultipartUploads and ListParts and aborted with AbortMultipartUpload ([`uploads`]), for `rsm audit`
//! and `rsm sweep`.
//!
//! Server-side encryption (`s3.sse`) and the checksum (`s3.checksum.algorithm`) are object_store's own
//! builder settings. A topic's own KMS key or storage class (`s3.topic.<topic>.*`) is applied by
//! [`topics::TopicRouter`], which sends each upload to a client of its topic's KMS key, the topic read from
//! the object's key. Credentials come from the static keys, from `aws.credentials.file`
//! ([`credentials_file::FileCredentials`], read again when the file changes), or from object_store's
//! default chain, whose web identity link (`AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`) asks STS at
//! `aws.sts.endpoint.url` (HTTPS only).

#![warn(missing_docs)]

pub mod config;
pub mod credentials_file;
pub mod kms;
pub mod topics;
pub mod uploads;

use credentials_file::FileCredentials;
use object_store::aws::{AmazonS3Builder, Checksum};
use object_store::client::HttpConnector;
use object_store::{Attribute, Attributes};
use rsm_backend_object_store::{CloudKind, CloudStores, CountingConnector, Redactor, UploadSettings};
use rsm_core::config::{ConfigReader, Secret};
use rsm_core::{Error, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use topics::{TopicRouter, TopicSettings};

pub use rsm_backend_object_store::{ClientSettings, CloudStore, CountSnapshot, Op};

rsm_backend_object_store::cloud_constructors!(S3Config, "s3://bucket/prefix");

pub use config::MIN_PART_SIZE;

/// The settings of an S3 store. `Debug` never shows the credentials (a [`Secret`] shows as `****`).
#[derive(Clone, Debug)]
pub struct S3Config {
    /// `s3.bucket.name`.
    pub bucket: String,
    /// `s3.region`.
    pub region: String,
    /// `s3.endpoint.url`.
    pub endpoint: Option<String>,
    /// `s3.path.style.access.enabled`.
    pub path_style: bool,
    /// `aws.access.key.id`.
    pub access_key_id: Option<Secret>,
    /// `aws.secret.access.key`.
    pub secret_access_key: Option<Secret>,
    /// `aws.session.token`.
    pub session_token: Option<Secret>,
    /// `s3.multipart.upload.part.size` and `s3.multipart.upload.parts.in.flight`.
    pub upload: UploadSettings,
    /// `s3.storage.class`.
    pub storage_class: Option<String>,
    /// `s3.sse` and `s3.sse.kms.key.id`.
    pub sse: Sse,
    /// The `s3.topic.<topic>.*` settings, by topic.
    pub topics: BTreeMap<String, TopicSettings>,
    /// `s3.checksum.algorithm`: SHA-256 checksums on uploads.
    pub checksum_sha256: bool,
    /// `aws.credentials.file` (with `aws.credentials.profile`), read when the settings are.
    pub credentials_file: Option<Arc<FileCredentials>>,
    /// `aws.sts.endpoint.url`.
    pub sts_endpoint: Option<String>,
    /// Timeouts and retries (`s3.api.call.timeout`, ...).
    pub client: ClientSettings,
}

/// Server-side encryption of the objects written (`s3.sse`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Sse {
    /// No header: the bucket's default encryption applies.
    #[default]
    None,
    /// `AES256`: SSE-S3.
    Aes256,
    /// `aws:kms`: SSE-KMS under this key id (not a secret: it names the key, it does not open it).
    Kms(String),
}

impl Sse {
    fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let key_id = r.get_string(&config::SSE_KMS_KEY_ID).map(str::trim).filter(|k| !k.is_empty());
        let sse = match r.get_string(&config::SSE).map(str::trim).unwrap_or("none") {
            "none" => Sse::None,
            "AES256" => Sse::Aes256,
            "aws:kms" => {
                let k = key_id
                    .ok_or_else(|| Error::config(config::SSE_KMS_KEY_ID.key, "is required with `s3.sse=aws:kms`"))?;
                return Ok(Sse::Kms(k.to_string()));
            }
            other => {
                return Err(Error::config(
                    config::SSE.key,
                    format!("`{other}` is none of `none`, `AES256`, `aws:kms`"),
                ));
            }
        };
        if key_id.is_some() {
            return Err(Error::config(
                config::SSE_KMS_KEY_ID.key,
                "is set but `s3.sse` is not `aws:kms`: set `s3.sse=aws:kms` to encrypt under the key",
            ));
        }
        Ok(sse)
    }

    /// `b` encrypting as this says.
    fn apply(&self, b: AmazonS3Builder) -> AmazonS3Builder {
        match self {
            Sse::None => b,
            Sse::Aes256 => {
                // object_store names the key's type but does not export it: its text form is public.
                let key = "aws_server_side_encryption".parse().expect("object_store's SSE key");
                b.with_config(key, "AES256")
            }
            Sse::Kms(k) => b.with_sse_kms_encryption(k),
        }
    }
}

impl CloudStore for S3Config {
    const KIND: CloudKind = CloudKind::new("s3", "S3", "s3", "bucket", &config::BUCKET, &config::ENDPOINT);

    /// Reads the settings; `bucket` (from a URL) stands in for `s3.bucket.name` when given.
    fn read(r: &mut ConfigReader<'_>, bucket: Option<&str>) -> Result<Self> {
        let bucket = Self::KIND.read_container(r, bucket)?;
        let region = r.get_string(&config::REGION).unwrap_or(config::REGION.default_text()).to_string();
        let endpoint = Self::KIND.read_endpoint(r)?;
        let path_style = r.get_bool_or(&config::PATH_STYLE, endpoint.is_some())?;
        let access_key_id = r.get_secret(&config::ACCESS_KEY_ID);
        let secret_access_key = r.get_secret(&config::SECRET_ACCESS_KEY);
        let session_token = r.get_secret(&config::SESSION_TOKEN);
        if access_key_id.is_some() != secret_access_key.is_some() {
            let missing =
                if access_key_id.is_some() { config::SECRET_ACCESS_KEY.key } else { config::ACCESS_KEY_ID.key };
            return Err(Error::config(
                missing,
                "static credentials need both aws.access.key.id and aws.secret.access.key",
            ));
        }
        if session_token.is_some() && access_key_id.is_none() {
            return Err(Error::config(
                config::SESSION_TOKEN.key,
                "a session token needs aws.access.key.id and aws.secret.access.key",
            ));
        }
        let credentials_file = match r.get_string(&config::CREDENTIALS_FILE).map(str::trim) {
            Some(path) => {
                if access_key_id.is_some() {
                    return Err(Error::config(
                        config::CREDENTIALS_FILE.key,
                        "cannot be set together with aws.access.key.id and aws.secret.access.key",
                    ));
                }
                let profile = r.get_string(&config::CREDENTIALS_PROFILE).map(str::trim).unwrap_or("default");
                Some(FileCredentials::open(std::path::Path::new(path), profile, config::CREDENTIALS_FILE.key)?)
            }
            None => {
                if r.get_string(&config::CREDENTIALS_PROFILE).is_some() {
                    return Err(Error::config(config::CREDENTIALS_PROFILE.key, "needs `aws.credentials.file`"));
                }
                None
            }
        };
        let sts_endpoint = r.get_string(&config::STS_ENDPOINT).map(|e| e.trim().trim_end_matches('/').to_string());
        if let Some(e) = &sts_endpoint
            && !e.starts_with("https://")
        {
            return Err(Error::config(config::STS_ENDPOINT.key, format!("`{e}` is not an https:// URL")));
        }
        let checksum_sha256 = match r.get_string(&config::CHECKSUM).map(str::trim).unwrap_or("none") {
            "none" => false,
            "SHA256" => true,
            other => {
                return Err(Error::config(config::CHECKSUM.key, format!("`{other}` is neither `none` nor `SHA256`")));
            }
        };
        let part_size: usize = r.get_int(&config::PART_SIZE)?;
        let parts_in_flight = r.get_int(&config::PARTS_IN_FLIGHT)?;
        Ok(S3Config {
            bucket,
            region,
            endpoint,
            path_style,
            access_key_id,
            secret_access_key,
            session_token,
            upload: UploadSettings { parts_in_flight, ..UploadSettings::with_part_size(part_size) },
            storage_class: r.get_string(&config::STORAGE_CLASS).map(str::to_string),
            sse: Sse::read(r)?,
            topics: topics::read_topics(r)?,
            checksum_sha256,
            credentials_file,
            sts_endpoint,
            client: ClientSettings::read(r, Self::KIND.name)?,
        })
    }

    fn upload(&self) -> UploadSettings {
        self.upload
    }

    fn client(&self) -> &ClientSettings {
        &self.client
    }

    fn redactor(&self) -> Redactor {
        let file = self.credentials_file.iter().flat_map(|f| f.initial_secrets());
        Redactor::new(
            [&self.access_key_id, &self.secret_access_key, &self.session_token]
                .into_iter()
                .flatten()
                .cloned()
                .chain(file),
        )
    }

    fn attributes(&self) -> Attributes {
        let mut attributes = Attributes::new();
        if let Some(c) = &self.storage_class {
            attributes.insert(Attribute::StorageClass, c.clone().into());
        }
        attributes
    }

    fn stores(&self, http: CountingConnector) -> object_store::Result<CloudStores> {
        let allow_http = self.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
        let default = Arc::new(self.builder(&http, allow_http).build()?);
        // One client more per distinct topic KMS key: object_store sends one SSE setting per client.
        let router = TopicRouter::new(default.clone(), &self.topics, |kms_key_id| {
            self.builder(&http, allow_http).with_sse_kms_encryption(kms_key_id).build()
        })?;
        // The listings object_store lacks go through the same connector (counted) and client options.
        let client = http.connect(&self.client.client_options(allow_http))?;
        let uploads = uploads::S3Uploads::new((*default).clone(), client, self.client, self.redactor());
        Ok(CloudStores { objects: Arc::new(router), lister: default, uploads: Some(Arc::new(uploads)) })
    }
}

impl S3Config {
    /// The builder of a client with these settings (the default SSE; a topic's client changes it).
    fn builder(&self, http: &CountingConnector, allow_http: bool) -> AmazonS3Builder {
        // Static keys, the credentials file, else object_store's default chain (environment, web identity,
        // ECS, instance metadata): `from_env` reads the AWS_* variables that chain needs.
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(&self.bucket)
            .with_region(&self.region)
            .with_virtual_hosted_style_request(!self.path_style)
            .with_client_options(self.client.client_options(allow_http))
            .with_retry(self.client.retry_config())
            .with_http_connector(http.clone());
        if let Some(e) = &self.endpoint {
            b = b.with_endpoint(e).with_allow_http(allow_http);
        }
        if let (Some(id), Some(secret)) = (&self.access_key_id, &self.secret_access_key) {
            b = b.with_access_key_id(id.expose()).with_secret_access_key(secret.expose());
            if let Some(t) = &self.session_token {
                b = b.with_token(t.expose());
            }
        }
        if let Some(f) = &self.credentials_file {
            b = b.with_credentials(f.clone());
        }
        if let Some(e) = &self.sts_endpoint {
            b = b.with_config(object_store::aws::AmazonS3ConfigKey::StsEndpoint, e);
        }
        if self.checksum_sha256 {
            b = b.with_checksum_algorithm(Checksum::SHA256);
        }
        self.sse.apply(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_backend_object_store::testing;
    use rsm_core::config::props;

    /// The bucket is required, unknown keys fail, and a URL gives the bucket and the prefix.
    #[test]
    fn constructors_check_settings() {
        testing::constructors_check_settings::<S3Config>(
            &[("s3.endpoint.url", "http://127.0.0.1:1")],
            "s3.bukcet.name",
        );
    }

    #[test]
    fn part_size_has_a_floor() {
        let p = props([("s3.bucket.name", "b"), ("s3.multipart.upload.part.size", "1000")]);
        let e = from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`s3.multipart.upload.part.size`"), "{e}");
    }

    #[test]
    fn half_credentials_fail() {
        let p = props([("s3.bucket.name", "b"), ("aws.access.key.id", "AKIA")]);
        let e = from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`aws.secret.access.key`"), "{e}");
    }

    fn read_error(pairs: &[(&str, &str)]) -> String {
        let mut all = vec![("s3.bucket.name", "b")];
        all.extend_from_slice(pairs);
        let p = props(all);
        S3Config::read(&mut ConfigReader::new(&p), None).unwrap_err().to_string()
    }

    /// Each new setting's refusals name the key at fault.
    #[test]
    fn new_settings_refuse_what_does_not_fit() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("s3.sse", "aws:kms")], "`s3.sse.kms.key.id`"),
            (&[("s3.sse.kms.key.id", "k")], "`s3.sse.kms.key.id`"),
            (&[("s3.sse", "AES256"), ("s3.sse.kms.key.id", "k")], "`s3.sse.kms.key.id`"),
            (&[("s3.sse", "aes256")], "`s3.sse`"),
            (&[("s3.checksum.algorithm", "MD5")], "`s3.checksum.algorithm`"),
            (&[("aws.credentials.profile", "p")], "`aws.credentials.profile`"),
            (&[("aws.credentials.file", "/nonexistent/rsm-credentials")], "`aws.credentials.file`"),
            (
                &[("aws.credentials.file", "/x"), ("aws.access.key.id", "A"), ("aws.secret.access.key", "S")],
                "`aws.credentials.file`",
            ),
            (&[("aws.sts.endpoint.url", "http://127.0.0.1:1")], "`aws.sts.endpoint.url`"),
            (&[("s3.topic.orders.storage.clas", "X")], "`s3.topic.orders.storage.clas`"),
        ];
        for (pairs, key) in cases {
            let e = read_error(pairs);
            assert!(e.contains(key), "{pairs:?}: {e}");
        }
    }

    #[test]
    fn sse_reads() {
        let read = |pairs: &[(&str, &str)]| {
            let mut all = vec![("s3.bucket.name", "b")];
            all.extend_from_slice(pairs);
            let p = props(all);
            let mut r = ConfigReader::new(&p);
            let c = S3Config::read(&mut r, None).unwrap();
            r.finish().unwrap();
            c.sse
        };
        assert_eq!(read(&[]), Sse::None);
        assert_eq!(read(&[("s3.sse", "none")]), Sse::None);
        assert_eq!(read(&[("s3.sse", "AES256")]), Sse::Aes256);
        assert_eq!(read(&[("s3.sse", "aws:kms"), ("s3.sse.kms.key.id", "arn:k")]), Sse::Kms("arn:k".into()));
    }
}
