//! Google Cloud Storage for rsm, over object_store's GCP client.
//!
//! Settings (the keys a broker passes under `rsm.config.`, named after Aiven's tiered-storage plugin):
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `gcs.bucket.name` | bucket (required; or from a `gs://bucket/prefix` URL) | |
//! | `gcs.credentials.json` | a service account key, as JSON text (secret) | |
//! | `gcs.credentials.path` | a service account key file | |
//! | `gcs.credentials.default` | `true`: application default credentials (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file, the metadata server); `false` with neither of the above: anonymous requests (public buckets, emulators) | `true` unless a JSON or path is set |
//! | `gcs.endpoint.url` | endpoint (fake-gcs-server: `http://127.0.0.1:4443`); plain HTTP only when it says `http://` | Google |
//! | `gcs.resumable.upload.chunk.size` | chunk size in bytes, a multiple of 256 KiB up to 1 GiB; objects up to one chunk go in one media upload, larger ones in a resumable upload | 25 MiB |
//! | `gcs.api.call.timeout`, `gcs.api.call.attempt.timeout`, `gcs.connect.timeout`, `gcs.max.retries` | as for S3 | 180000, 30000, 5000, 10 |
//!
//! Reads, listings and deletes go through object_store's GCS client (the XML API). Uploads go through the
//! JSON API instead ([`uploads`]): one media upload for an object of at most one chunk, else a resumable
//! upload of chunks sent in order, cancelled on failure. object_store's own uploads use XML multipart
//! uploads, which fake-gcs-server lacks; the JSON API's are what GCS documents for large objects and what
//! Aiven's plugin uses. Memory per upload is two chunks (one being sent, one read ahead) plus the last
//! one held until the total size is known.

#![warn(missing_docs)]

pub mod uploads;

use object_store::client::HttpConnector;
use object_store::gcp::{GcpCredential, GoogleCloudStorage, GoogleCloudStorageBuilder};
use rsm_backend_object_store::{
    ClientSettings, CountingConnector, HttpCounter, ObjectStoreBackend, Redactor, UploadSettings, split_store_url,
};
use rsm_core::backend::StorageBackend;
use rsm_core::config::{ConfigReader, Secret};
use rsm_core::{Error, Result};
use std::sync::Arc;

pub use rsm_backend_object_store::{HttpCounts, Method};

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

impl GcsConfig {
    /// Reads the settings; `bucket` (from a URL) stands in for `gcs.bucket.name` when given.
    pub fn read(r: &mut ConfigReader<'_>, bucket: Option<&str>) -> Result<Self> {
        let from_key = r.string("gcs.bucket.name");
        let bucket = match (bucket, from_key) {
            (Some(u), Some(k)) if u != k => {
                return Err(Error::config(
                    "gcs.bucket.name",
                    format!("`{k}` differs from the bucket `{u}` of the store URL"),
                ));
            }
            (Some(u), _) => u.to_string(),
            (None, Some(k)) => k.to_string(),
            (None, None) => r.required("gcs.bucket.name")?.to_string(),
        };
        let json = r.secret("gcs.credentials.json");
        let path = r.string("gcs.credentials.path").map(str::to_string);
        let explicit_default = r.string("gcs.credentials.default").is_some();
        let default = r.bool("gcs.credentials.default", json.is_none() && path.is_none())?;
        let credentials = match (json, path, default) {
            (Some(_), Some(_), _) => {
                return Err(Error::config(
                    "gcs.credentials.path",
                    "set either gcs.credentials.json or gcs.credentials.path, not both",
                ));
            }
            (Some(_), None, true) | (None, Some(_), true) if explicit_default => {
                return Err(Error::config(
                    "gcs.credentials.default",
                    "cannot be true together with gcs.credentials.json or gcs.credentials.path",
                ));
            }
            (Some(j), None, _) => GcsCredentials::Json(j),
            (None, Some(p), _) => GcsCredentials::Path(p),
            (None, None, true) => GcsCredentials::Default,
            (None, None, false) => GcsCredentials::Anonymous,
        };
        let endpoint = r.string("gcs.endpoint.url").map(|e| e.trim_end_matches('/').to_string());
        if let Some(e) = &endpoint
            && !(e.starts_with("http://") || e.starts_with("https://"))
        {
            return Err(Error::config("gcs.endpoint.url", format!("`{e}` is not an http:// or https:// URL")));
        }
        let chunk = r.int_in("gcs.resumable.upload.chunk.size", 25usize << 20, uploads::CHUNK_GRANULARITY..=1 << 30)?;
        if chunk % uploads::CHUNK_GRANULARITY != 0 {
            return Err(Error::config(
                "gcs.resumable.upload.chunk.size",
                format!("{chunk} is not a multiple of 262144 (256 KiB)"),
            ));
        }
        let client = ClientSettings::read(r, "gcs")?;
        Ok(GcsConfig {
            bucket,
            credentials,
            endpoint,
            // Chunks go one after another; a second one is read while the first is sent.
            upload: UploadSettings { parts_in_flight: 2, ..UploadSettings::with_part_size(chunk) },
            client,
        })
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

    /// Builds object_store's client, counting its requests into `counter`.
    pub fn build_store(&self, counter: Arc<HttpCounter>) -> Result<GoogleCloudStorage> {
        let allow_http = self.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
        let mut b = match &self.credentials {
            GcsCredentials::Default => GoogleCloudStorageBuilder::from_env(),
            _ => GoogleCloudStorageBuilder::new(),
        }
        .with_bucket_name(&self.bucket)
        .with_client_options(self.client.client_options(allow_http))
        .with_retry(self.client.retry_config())
        .with_http_connector(CountingConnector::new(counter.clone()));
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
        b.build().map_err(|e| {
            Error::config("gcs.bucket.name", self.redactor().scrub(&format!("cannot build the GCS client: {e}")))
        })
    }

    /// Builds the backend: object_store's client for reads, listings and deletes, JSON API uploads.
    pub fn build(&self) -> Result<ObjectStoreBackend> {
        let counter = HttpCounter::new();
        let gcs = Arc::new(self.build_store(counter.clone())?);
        let allow_http = self.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
        let http = CountingConnector::new(counter.clone())
            .connect(&self.client.client_options(allow_http))
            .map_err(|e| Error::config("gcs.endpoint.url", e.to_string()))?;
        let store = uploads::JsonUploadStore::new(
            gcs.clone(),
            http,
            self.endpoint.clone().unwrap_or_else(|| "https://storage.googleapis.com".to_string()),
            self.bucket.clone(),
            matches!(self.credentials, GcsCredentials::Anonymous),
            self.client,
        );
        Ok(ObjectStoreBackend::new("gcs", Arc::new(store))
            .with_paginated_list(gcs)
            .with_upload(self.upload)
            .with_redactor(self.redactor())
            .with_counter(counter))
    }
}

/// Builds a GCS backend from settings alone (`gcs.bucket.name` required).
pub fn from_config(r: &mut ConfigReader<'_>) -> Result<ObjectStoreBackend> {
    GcsConfig::read(r, None)?.build()
}

/// Opens `gs://bucket/prefix` with settings from `r`, returning the backend and the key prefix
/// (empty, or ending with `/`). The URL's bucket stands for the bucket setting. See [`open_url`] for
/// the concrete backend with its HTTP request counts.
pub fn from_url(url: &str, r: &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)> {
    let (backend, prefix) = open_url(url, r)?;
    Ok((backend, prefix))
}

/// [`from_url`], returning the concrete backend, whose [`ObjectStoreBackend::http_counts`] tells the
/// real HTTP requests made so far by method.
pub fn open_url(url: &str, r: &mut ConfigReader<'_>) -> Result<(Arc<ObjectStoreBackend>, String)> {
    let (bucket, prefix) = split_store_url(url, "gs", "bucket")?;
    let backend = GcsConfig::read(r, Some(&bucket))?.build()?;
    Ok((Arc::new(backend), prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::config::props;

    #[test]
    fn bucket_is_required_and_unknown_keys_fail() {
        let p = props([("gcs.credentials.default", "false")]);
        let e = from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`gcs.bucket.name`"), "{e}");

        let p = props([("gcs.bucket.name", "b"), ("gcs.credentials.default", "false"), ("gcs.endpont.url", "typo")]);
        let mut r = ConfigReader::new(&p);
        from_config(&mut r).unwrap();
        let e = r.finish().unwrap_err();
        assert!(e.to_string().contains("`gcs.endpont.url`"), "{e}");
    }

    #[test]
    fn credentials_conflict() {
        let p = props([("gcs.bucket.name", "b"), ("gcs.credentials.json", "{}"), ("gcs.credentials.path", "/x")]);
        let e = from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`gcs.credentials.path`"), "{e}");
        let p = props([("gcs.bucket.name", "b"), ("gcs.credentials.json", "{}"), ("gcs.credentials.default", "true")]);
        let e = from_config(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`gcs.credentials.default`"), "{e}");
    }
}
