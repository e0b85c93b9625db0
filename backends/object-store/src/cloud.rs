//! What the S3, Azure and GCS crates share beyond the adapter: a [`CloudStore`] (a crate's settings and
//! how it builds its object_store client), the one place a backend is assembled from it
//! ([`CloudStore::build`]), and the constructors every cloud crate offers ([`from_config`], [`from_url`],
//! [`open_url`]; each crate gets its own through [`cloud_constructors!`](crate::cloud_constructors)).
//! A cloud crate keeps only what is really its own: its settings keys, its credentials and its builder
//! calls.

use crate::backend::{MultipartUploads, ObjectStoreBackend, UploadSettings};
use crate::budget::{BudgetConnector, RetryBudget};
use crate::counter::CountingConnector;
use crate::errors::Redactor;
use crate::settings::{ClientSettings, split_store_url};
use object_store::client::ReqwestConnector;
use object_store::list::PaginatedListStore;
use object_store::{Attributes, ObjectStore};
use rsm_core::backend::RequestCounts;
use rsm_core::backend::StorageBackend;
use rsm_core::config::{ConfigReader, Setting};
use rsm_core::{Error, Result};
use std::sync::Arc;

/// The names of one kind of cloud store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloudKind {
    /// The backend's name in messages, and the prefix of its settings: `s3`, `azure`, `gcs`.
    pub name: &'static str,
    /// Its name for people: `S3`, `Azure`, `GCS`.
    pub label: &'static str,
    /// The scheme of its store URLs: `s3`, `az`, `gs`.
    pub scheme: &'static str,
    /// What holds its objects, the first part of a store URL: `bucket` or `container`.
    pub container: &'static str,
    /// The setting naming the bucket or container (`s3.bucket.name`), declared by the store's crate.
    pub container_setting: &'static Setting,
    /// The setting of the endpoint URL (`s3.endpoint.url`), declared by the store's crate.
    pub endpoint_setting: &'static Setting,
}

impl CloudKind {
    /// A kind of store from its names (see the fields).
    pub const fn new(
        name: &'static str,
        label: &'static str,
        scheme: &'static str,
        container: &'static str,
        container_setting: &'static Setting,
        endpoint_setting: &'static Setting,
    ) -> Self {
        CloudKind { name, label, scheme, container, container_setting, endpoint_setting }
    }

    /// The key of the setting that names the bucket or container (`s3.bucket.name`).
    pub fn container_setting(&self) -> String {
        self.container_setting.key.to_string()
    }

    /// The bucket or container: the one of a store URL (`from_url`) or the setting, which must agree when
    /// both are given; one of them is required.
    pub fn read_container(&self, r: &mut ConfigReader<'_>, from_url: Option<&str>) -> Result<String> {
        let key = self.container_setting();
        match (from_url, r.get_string(self.container_setting)) {
            (Some(u), Some(k)) if u != k => {
                Err(Error::config(&key, format!("`{k}` differs from the {} `{u}` of the store URL", self.container)))
            }
            (Some(u), _) => Ok(u.to_string()),
            (None, Some(k)) => Ok(k.to_string()),
            (None, None) => Ok(r.required(&key)?.to_string()),
        }
    }

    /// The endpoint setting (`s3.endpoint.url`) without a trailing `/`, which must be an `http://` or
    /// `https://` URL.
    pub fn read_endpoint(&self, r: &mut ConfigReader<'_>) -> Result<Option<String>> {
        let key = self.endpoint_setting.key;
        let endpoint = r.string(key).map(|e| e.trim_end_matches('/').to_string());
        if let Some(e) = &endpoint
            && !(e.starts_with("http://") || e.starts_with("https://"))
        {
            return Err(Error::config(key, format!("`{e}` is not an http:// or https:// URL")));
        }
        Ok(endpoint)
    }
}

/// The object_store stores a cloud crate builds: one for objects, and one for listings by raw prefix
/// (often the same).
pub struct CloudStores {
    /// Reads, uploads and deletes go here.
    pub objects: Arc<dyn ObjectStore>,
    /// Listings go here, one request per page.
    pub lister: Arc<dyn PaginatedListStore>,
    /// Incomplete multipart uploads are listed and aborted here, for a store that has them and lists them
    /// (S3); `None`: the backend lists none.
    pub uploads: Option<Arc<dyn MultipartUploads>>,
}

impl CloudStores {
    /// One store for everything (and no listing of incomplete uploads).
    pub fn one<S: ObjectStore + PaginatedListStore>(store: S) -> Self {
        let store = Arc::new(store);
        CloudStores { objects: store.clone(), lister: store, uploads: None }
    }

    /// Lists and aborts incomplete multipart uploads through `uploads`.
    pub fn with_uploads(mut self, uploads: Arc<dyn MultipartUploads>) -> Self {
        self.uploads = Some(uploads);
        self
    }
}

/// The settings of one kind of cloud store, and how they become object_store's client.
pub trait CloudStore: Sized {
    /// The kind of store: its name, scheme and container word.
    const KIND: CloudKind;

    /// Reads the settings; `container` (from a store URL) stands in for the bucket or container setting
    /// when given (see [`CloudKind::read_container`]).
    fn read(r: &mut ConfigReader<'_>, container: Option<&str>) -> Result<Self>;

    /// How uploads are cut into requests.
    fn upload(&self) -> UploadSettings;

    /// The client's timeouts, retries and retry budget.
    fn client(&self) -> &ClientSettings;

    /// Whether the store's client answers suffix range reads (`bytes=-N`), so an object's tail is one GET;
    /// object_store's Azure client refuses them.
    const SUFFIX_READS: bool = true;

    /// The secrets of these settings, to scrub from every message.
    fn redactor(&self) -> Redactor;

    /// Attributes sent with every upload (none unless a store says so, such as S3's storage class).
    fn attributes(&self) -> Attributes {
        Attributes::new()
    }

    /// Builds the client with these settings, its HTTP requests going through `http`. An error is a
    /// settings error of the bucket or container setting, scrubbed of the secrets.
    fn stores(&self, http: CountingConnector) -> object_store::Result<CloudStores>;

    /// Builds the backend, counting its real HTTP requests (see [`ObjectStoreBackend::http_counts`]).
    fn build(&self) -> Result<ObjectStoreBackend> {
        let kind = Self::KIND;
        let counter = RequestCounts::new();
        let redactor = self.redactor();
        // Counted over the budget: the counter sees every request sent, the budget every answer.
        let budget = RetryBudget::new(self.client().retry_budget, counter.clone());
        let budgeted = BudgetConnector::new(Arc::new(ReqwestConnector::default()), budget);
        let http = CountingConnector::wrapping(Arc::new(budgeted), counter.clone());
        let stores = self.stores(http).map_err(|e| {
            let message = redactor.scrub(&format!("cannot build the {} client: {e}", kind.label));
            Error::config(kind.container_setting(), message)
        })?;
        let backend = ObjectStoreBackend::new(kind.name, stores.objects)
            .with_paginated_list(stores.lister)
            .with_upload(self.upload())
            .with_suffix_reads(Self::SUFFIX_READS)
            .with_attributes(self.attributes())
            .with_redactor(redactor)
            .with_counter(counter);
        Ok(match stores.uploads {
            Some(u) => backend.with_multipart_uploads(u),
            None => backend,
        })
    }
}

/// Builds a backend from settings alone (the bucket or container setting required).
pub fn from_config<C: CloudStore>(r: &mut ConfigReader<'_>) -> Result<ObjectStoreBackend> {
    C::read(r, None)?.build()
}

/// [`from_url`], returning the concrete backend, whose [`ObjectStoreBackend::http_counts`] tells the real
/// HTTP requests made so far by method.
pub fn open_url<C: CloudStore>(url: &str, r: &mut ConfigReader<'_>) -> Result<(Arc<ObjectStoreBackend>, String)> {
    let kind = C::KIND;
    let (container, prefix) = split_store_url(url, kind.scheme, kind.container)?;
    let backend = C::read(r, Some(&container))?.build()?;
    Ok((Arc::new(backend), prefix))
}

/// Opens `{scheme}://{container}/{prefix}` with settings from `r`, returning the backend and the key
/// prefix (empty, or ending with `/`). The URL's bucket or container stands for that setting.
pub fn from_url<C: CloudStore>(url: &str, r: &mut ConfigReader<'_>) -> Result<(Arc<dyn StorageBackend>, String)> {
    let (backend, prefix) = open_url::<C>(url, r)?;
    Ok((backend, prefix))
}

/// Defines a cloud crate's `from_config`, `from_url` and `open_url` over its [`CloudStore`] settings type
/// `$config`, whose store URLs look like `$url` (for the documentation):
/// `rsm_backend_object_store::cloud_constructors!(S3Config, "s3://bucket/prefix");`
#[macro_export]
macro_rules! cloud_constructors {
    ($config:ty, $url:literal) => {
        #[doc = concat!("Builds the backend from settings alone (see [`", stringify!($config), "`]).")]
        pub fn from_config(
            r: &mut $crate::__private::ConfigReader<'_>,
        ) -> $crate::__private::Result<$crate::ObjectStoreBackend> {
            $crate::cloud::from_config::<$config>(r)
        }

        #[doc = concat!(
                    "Opens `", $url, "` with settings from `r`, returning the backend and the key prefix (empty, or ",
                    "ending with `/`). The URL's bucket or container stands for that setting. See [`open_url`] for ",
                    "the concrete backend with its HTTP request counts."
                )]
        pub fn from_url(
            url: &str,
            r: &mut $crate::__private::ConfigReader<'_>,
        ) -> $crate::__private::Result<(
            $crate::__private::Arc<dyn $crate::__private::StorageBackend>,
            ::std::string::String,
        )> {
            $crate::cloud::from_url::<$config>(url, r)
        }

        /// [`from_url`], returning the concrete backend, whose
        /// [`http_counts`](rsm_backend_object_store::ObjectStoreBackend::http_counts) tells the real HTTP
        /// requests made so far by method.
        pub fn open_url(
            url: &str,
            r: &mut $crate::__private::ConfigReader<'_>,
        ) -> $crate::__private::Result<($crate::__private::Arc<$crate::ObjectStoreBackend>, ::std::string::String)> {
            $crate::cloud::open_url::<$config>(url, r)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::config::props;

    const BUCKET: Setting = Setting::of("s3.bucket.name", rsm_core::config::Kind::String);
    const ENDPOINT: Setting = Setting::of("s3.endpoint.url", rsm_core::config::Kind::String);
    const KIND: CloudKind = CloudKind::new("s3", "S3", "s3", "bucket", &BUCKET, &ENDPOINT);

    #[test]
    fn the_container_comes_from_the_url_or_the_setting() {
        let p = props([("s3.bucket.name", "b")]);
        assert_eq!(KIND.read_container(&mut ConfigReader::new(&p), None).unwrap(), "b");
        assert_eq!(KIND.read_container(&mut ConfigReader::new(&p), Some("b")).unwrap(), "b");
        let e = KIND.read_container(&mut ConfigReader::new(&p), Some("other")).unwrap_err();
        assert!(e.to_string().contains("`s3.bucket.name`") && e.to_string().contains("bucket `other`"), "{e}");
        let none = props::<[(&str, &str); 0], _, _>([]);
        assert_eq!(KIND.read_container(&mut ConfigReader::new(&none), Some("u")).unwrap(), "u");
        let e = KIND.read_container(&mut ConfigReader::new(&none), None).unwrap_err();
        assert!(e.to_string().contains("`s3.bucket.name`"), "{e}");
    }

    #[test]
    fn endpoints_are_http_urls() {
        let p = props([("s3.endpoint.url", "http://127.0.0.1:1/")]);
        assert_eq!(KIND.read_endpoint(&mut ConfigReader::new(&p)).unwrap().as_deref(), Some("http://127.0.0.1:1"));
        let p = props([("s3.endpoint.url", "ftp://nowhere")]);
        let e = KIND.read_endpoint(&mut ConfigReader::new(&p)).unwrap_err();
        assert!(e.to_string().contains("`s3.endpoint.url`"), "{e}");
    }
}
