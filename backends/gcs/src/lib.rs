//! Google Cloud Storage for rsm, over object_store's GCP client.
//!
//! Settings (the keys a broker passes under `rsm.config.`, named after Aiven's tiered-storage plugin):
//!
//! <!-- settings:gcs:begin -->
//! | key | default | meaning |
//! |---|---|---|
//! | `gcs.bucket.name` | (none) | bucket (or from a `gs://bucket/prefix` URL) (required unless the store URL names the bucket; the two must agree) |
//! | `gcs.credentials.json` | (none) | a service account key, as JSON text (secret) (not with `gcs.credentials.path`) |
//! | `gcs.credentials.path` | (none) | a service account key file |
//! | `gcs.credentials.default` | `true` unless a JSON or path is set | `true`: application default credentials (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file, the metadata server); `false` with neither of the above: anonymous requests (public buckets, emulators) (not `true` with a JSON or path) |
//! | `gcs.endpoint.url` | Google | endpoint (fake-gcs-server: `http://127.0.0.1:4443`); plain HTTP only when it says `http://` (an `http://` or `https://` URL) |
//! | `gcs.resumable.upload.chunk.size` | 25 MiB (26214400) | chunk size in bytes; objects up to one chunk go in one media upload, larger ones in a resumable upload ([256 KiB (262144), 1 GiB (1073741824)]; a multiple of 256 KiB) |
//! | `<p>.api.call.timeout` | 30 s (30000 ms) | (cloud stores) ms for a whole request, retries included (a broker's default: a store that does not answer frees the calling thread in seconds; the broker retries a failed copy or fetch itself) ([1 ms, 1 d (86400000 ms)]) |
//! | `<p>.api.call.attempt.timeout` | 30 s (30000 ms) | (cloud stores) ms for one HTTP request ([1 ms, 1 d (86400000 ms)]) |
//! | `s3.connect.timeout`, `azure.connect.timeout`, `gcs.connect.timeout` | 5 s (5000 ms) | (cloud stores) ms to open one connection ([1 ms, 1 h (3600000 ms)]) |
//! | `<p>.max.retries` | 3 | (cloud stores) retries of a request (timeouts, connection errors, 5xx, 429) after the first attempt, with exponential backoff and jitter (as the AWS SDKs' standard mode); more retries add load to a store that is throttling ([0, 100]) |
//! | `<p>.retry.budget.burst` | 50 | (cloud stores) retries the store's requests may spend ahead of their successes, shared by all calls; once spent, a failure is not retried (the broker retries the call later) until successes earn retries back, so a store that is down or throttling sees about one request per call ([0, 100000]) |
//! | `<p>.retry.budget.percent` | 10 | (cloud stores) the share of one retry each successful request earns back: beyond the burst, retries are at most this share of requests ([0, 100]) |
//! | `<p>.throttle.backoff.ms` | 50 ms | (cloud stores) after a throttled answer (429, or 503 such as S3's SlowDown and Azure's ServerBusy), the store gets no request (a retry or another call's) for this long less a random part of up to half, doubled for each throttled answer in a row, on top of the client's own backoff; requests dropped while they wait (a fetch past `fetch.timeout.ms`) do not prolong it; any other answer ends it ([0, 10 min (600000 ms)]) |
//! | `<p>.throttle.backoff.max.ms` | 200 ms | (cloud stores) the longest pause of a throttling store; keep it well below `fetch.timeout.ms`: a fetch that outlives its wait while paused counts as a failure of the store for the circuit breaker, and kept it open long after the store recovered (the retry budget and the breaker are what cut the requests to a throttling store) ([0, 1 h (3600000 ms)]) |
//! <!-- settings:gcs:end -->
//!
//! `<p>` is `gcs` in the cloud client's settings (`ClientSettings`).
//!
//! Reads, listings and deletes go through object_store's GCS client (the XML API). Uploads go through the
//! JSON API instead ([`uploads`]): one media upload for an object of at most one chunk, else a resumable
//! upload of chunks sent in order, cancelled on failure. object_store's own uploads use XML multipart
//! uploads, which fake-gcs-server lacks; the JSON API's are what GCS documents for large objects and what
//! Aiven's plugin uses. Memory per upload is two chunks (one being sent, one read ahead) plus the last
//! one held until the total size is known.

#![warn(missing_docs)]

pub mod config;
pub mod uploads;

use object_store::client::HttpConnector;
use object_store::gcp::{GcpCredential, GoogleCloudStorageBuilder};
use rsm_backend_object_store::{ClientSettings, CloudKind, CloudStores, CountingConnector, Redactor, UploadSettings};
use rsm_core::config::{ConfigReader, Secret};
use rsm_core::{Error, Result};
use std::sync::Arc;

pub use rsm_backend_object_store::{CloudStore, CountSnapshot, Op};

rsm_backend_object_store::cloud_constructors!(GcsConfig, "gs://bucket/prefix");

/// Where credentials come from.
#[derive(Clone, Debug)]
pub enum GcsCredentials {
    /// Application default credentials.
    Default,
    /// A service account key as JSON text (never printed).
    Json(Secret),
    /// A service account key file.
    Path(String),
    /// No credentials: requests are not signed.
    Anonymous,
}

/// The settings of a GCS store. `Debug` never shows a key.
#[derive(Clone, Debug)]
pub struct GcsConfig {
    /// `gcs.bucket.name`.
    pub bucket: String,
    /// `gcs.credentials.*`.
    pub credentials: GcsCredentials,
    /// `gcs.endpoint.url`.
    pub endpoint: Option<String>,
    /// `gcs.resumable.upload.chunk.size`.
    pub upload: UploadSettings,
    /// Timeouts and retries (`gcs.api.call.timeout`, ...).
    pub client: ClientSettings,
}

impl CloudStore for GcsConfig {
    const KIND: CloudKind = CloudKind::new("gcs", "GCS", "gs", "bucket", &config::BUCKET, &config::ENDPOINT);

    /// Reads the settings; `bucket` (from a URL) stands in for `gcs.bucket.name` when given.
    fn read(r: &mut ConfigReader<'_>, bucket: Option<&str>) -> Result<Self> {
        let bucket = Self::KIND.read_container(r, bucket)?;
        let json = r.get_secret(&config::CREDENTIALS_JSON);
        let path = r.get_string(&config::CREDENTIALS_PATH).map(str::to_string);
        let explicit_default = r.get_string(&config::CREDENTIALS_DEFAULT).is_some();
        let default = r.get_bool_or(&config::CREDENTIALS_DEFAULT, json.is_none() && path.is_none())?;
        let credentials = match (json, path, default) {
            (Some(_), Some(_), _) => {
                return Err(Error::config(
                    config::CREDENTIALS_PATH.key,
                    "set either gcs.credentials.json or gcs.credentials.path, not both",
                ));
            }
            (Some(_), None, true) | (None, Some(_), true) if explicit_default => {
                return Err(Error::config(
                    config::CREDENTIALS_DEFAULT.key,
                    "cannot be true together with gcs.credentials.json or gcs.credentials.path",
                ));
            }
            (Some(j), None, _) => GcsCredentials::Json(j),
            (None, Some(p), _) => GcsCredentials::Path(p),
            (None, None, true) => GcsCredentials::Default,
            (None, None, false) => GcsCredentials::Anonymous,
        };
        let endpoint = Self::KIND.read_endpoint(r)?;
        let chunk: usize = r.get_int(&config::CHUNK_SIZE)?;
        if !chunk.is_multiple_of(uploads::CHUNK_GRANULARITY) {
            return Err(Error::config(
                config::CHUNK_SIZE.key,
                format!("{chunk} is not a multiple of 262144 (256 KiB)"),
            ));
        }
        let client = ClientSettings::read(r, Self::KIND.name)?;
        Ok(GcsConfig {
            bucket,
            credentials,
            endpoint,
            // Chunks go one after another; a second one is read while the first is sent.
            upload: UploadSettings { parts_in_flight: 2, ..UploadSettings::with_part_size(chunk) },
            client,
        })
    }

    fn upload(&self) -> UploadSettings {
        self.upload
    }

    fn client(&self) -> &ClientSettings {
        &self.client
    }

    fn redactor(&self) -> Redactor {
        let mut r = Redactor::default();
        if let GcsCredentials::Json(j) = &self.credentials {
            r.add(j.clone());
            // The private key inside the JSON is the secret that matters; scrub it on its own too.
            if let Some(i) = j.expose().find("-----BEGIN") {
                let tail = &j.expose()[i..];
                let end = tail
                    .find("-----END PRIVATE KEY-----")
                    .map(|e| e + "-----END PRIVATE KEY-----".len())
                    .unwrap_or(tail.len());
                r.add(Secret::new(&tail[..end]));
            }
        }
        r
    }

    /// object_store's client for reads, listings and deletes, and JSON API uploads, both through `http`.
    fn stores(&self, http: CountingConnector) -> object_store::Result<CloudStores> {
        let allow_http = self.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
        let options = self.client.client_options(allow_http);
        let mut b = match &self.credentials {
            GcsCredentials::Default => GoogleCloudStorageBuilder::from_env(),
            _ => GoogleCloudStorageBuilder::new(),
        }
        .with_bucket_name(&self.bucket)
        .with_client_options(options.clone())
        .with_retry(self.client.retry_config())
        .with_http_connector(http.clone());
        match &self.credentials {
            GcsCredentials::Default => {}
            GcsCredentials::Json(j) => b = b.with_service_account_key(j.expose()),
            GcsCredentials::Path(p) => b = b.with_service_account_path(p),
            GcsCredentials::Anonymous => {
                // object_store's `skip_signature` is not honoured by every GCS request (deletes ask the
                // credential provider anyway), and the fallback provider is the instance metadata
                // server: give it an empty static token so no request ever looks for one.
                let empty = object_store::StaticCredentialProvider::new(GcpCredential { bearer: String::new() });
                b = b.with_skip_signature(true).with_credentials(Arc::new(empty));
            }
        }
        if let Some(e) = &self.endpoint {
            b = b.with_base_url(e);
        }
        let gcs = Arc::new(b.build()?);
        let uploads = uploads::JsonUploadStore::new(
            gcs.clone(),
            http.connect(&options)?,
            self.endpoint.clone().unwrap_or_else(|| "https://storage.googleapis.com".to_string()),
            self.bucket.clone(),
            matches!(self.credentials, GcsCredentials::Anonymous),
            self.client,
        );
        // Resumable sessions are not listable (GCS expires an unfinished one after a week): no uploads to list.
        Ok(CloudStores { objects: Arc::new(uploads), lister: gcs, uploads: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_backend_object_store::testing;
    use rsm_core::config::props;

    #[test]
    fn credentials_conflict() {
        let p = props([("gcs.bucket.name", "b"), ("gcs.credentials.json", "{}"), ("gcs.credentials.path", "/x")]);
        let e = from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`gcs.credentials.path`"), "{e}");
        let p = props([("gcs.bucket.name", "b"), ("gcs.credentials.json", "{}"), ("gcs.credentials.default", "true")]);
        let e = from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`gcs.credentials.default`"), "{e}");
    }

    /// The bucket is required, unknown keys fail, and a URL gives the bucket and the prefix.
    #[test]
    fn constructors_check_settings() {
        testing::constructors_check_settings::<GcsConfig>(&[("gcs.credentials.default", "false")], "gcs.endpont.url");
    }
}
