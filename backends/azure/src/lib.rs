//! Azure Blob Storage for rsm, over object_store's Azure client (shared key, SAS, managed and workload
//! identity; Azurite through an endpoint URL).
//!
//! Settings (the keys a broker passes under `rsm.config.`, named after Aiven's tiered-storage plugin):
//!
//! <!-- settings:azure:begin -->
//! | key | default | meaning |
//! |---|---|---|
//! | `azure.container.name` | (none) | container (or from an `az://container/prefix` URL) (required unless the store URL names the container; the two must agree) |
//! | `azure.account.name` | from the connection string | storage account (required (here or in `azure.connection.string`)) |
//! | `azure.account.key` | (none) | shared key (secret) (not with `azure.sas.token`) |
//! | `azure.sas.token` | (none) | SAS token, with or without the leading `?` (secret) |
//! | `azure.connection.string` | (none) | `AccountName=..;AccountKey=..;BlobEndpoint=..` or with `SharedAccessSignature=..` (secret); the other settings win over its parts |
//! | `azure.endpoint.url` | `https://{account}.blob.core.windows.net` | blob endpoint including the account for Azurite (`http://127.0.0.1:10000/devstoreaccount1`); plain HTTP only when it says `http://` (an `http://` or `https://` URL) |
//! | `azure.client.id` | (none) | an Entra ID application (with `azure.tenant.id` and `azure.client.secret`) or a user-assigned managed identity |
//! | `azure.tenant.id` | (none) | the Entra ID tenant of `azure.client.id` |
//! | `azure.client.secret` | (none) | the secret of the application `azure.client.id` (secret) |
//! | `azure.federated.token.file` | `AZURE_FEDERATED_TOKEN_FILE` | workload identity token file (with client and tenant id) |
//! | `azure.msi.endpoint` | the instance metadata service | managed identity endpoint |
//! | `azure.upload.block.size` | 25 MiB (26214400) | block size in bytes; blobs up to one block go in one PUT ([64 KiB (65536), 1 GiB (1073741824)]) |
//! | `azure.upload.blocks.in.flight` | 4 | blocks uploaded at once per blob ([1, 32]) |
//! | `<p>.api.call.timeout` | 30 s (30000 ms) | (cloud stores) ms for a whole request, retries included (a broker's default: a store that does not answer frees the calling thread in seconds; the broker retries a failed copy or fetch itself) ([1 ms, 1 d (86400000 ms)]) |
//! | `<p>.api.call.attempt.timeout` | 30 s (30000 ms) | (cloud stores) ms for one HTTP request ([1 ms, 1 d (86400000 ms)]) |
//! | `s3.connect.timeout`, `azure.connect.timeout`, `gcs.connect.timeout` | 5 s (5000 ms) | (cloud stores) ms to open one connection ([1 ms, 1 h (3600000 ms)]) |
//! | `<p>.max.retries` | 3 | (cloud stores) retries of a request (timeouts, connection errors, 5xx, 429) after the first attempt, with exponential backoff and jitter (as the AWS SDKs' standard mode); more retries add load to a store that is throttling ([0, 100]) |
//! | `<p>.retry.budget.burst` | 50 | (cloud stores) retries the store's requests may spend ahead of their successes, shared by all calls; once spent, a failure is not retried (the broker retries the call later) until successes earn retries back, so a store that is down or throttling sees about one request per call ([0, 100000]) |
//! | `<p>.retry.budget.percent` | 10 | (cloud stores) the share of one retry each successful request earns back: beyond the burst, retries are at most this share of requests ([0, 100]) |
//! | `<p>.throttle.backoff.ms` | 50 ms | (cloud stores) after a throttled answer (429, or 503 such as S3's SlowDown and Azure's ServerBusy), the store gets no request (a retry or another call's) for this long less a random part of up to half, doubled for each throttled answer in a row, on top of the client's own backoff; requests dropped while they wait (a fetch past `fetch.timeout.ms`) do not prolong it; any other answer ends it ([0, 10 min (600000 ms)]) |
//! | `<p>.throttle.backoff.max.ms` | 200 ms | (cloud stores) the longest pause of a throttling store; keep it well below `fetch.timeout.ms`: a fetch that outlives its wait while paused counts as a failure of the store for the circuit breaker, and kept it open long after the store recovered (the retry budget and the breaker are what cut the requests to a throttling store) ([0, 1 h (3600000 ms)]) |
//! <!-- settings:azure:end -->
//!
//! `<p>` is `azure` in the cloud client's settings (`ClientSettings`).
//!
//! With no key, SAS or client secret, the credential is found as object_store's builder does from the
//! environment: workload identity (`AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`, `AZURE_TENANT_ID`),
//! else managed identity.

#![warn(missing_docs)]

pub mod config;

use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use rsm_backend_object_store::{ClientSettings, CloudKind, CloudStores, CountingConnector, Redactor, UploadSettings};
use rsm_core::config::{ConfigReader, Secret};
use rsm_core::{Error, Result};

pub use rsm_backend_object_store::{CloudStore, CountSnapshot, Op};

rsm_backend_object_store::cloud_constructors!(AzureConfig, "az://container/prefix");

/// The settings of an Azure Blob store. `Debug` never shows a key, SAS, secret or connection string (a
/// [`Secret`] shows as `****`).
#[derive(Clone, Debug)]
pub struct AzureConfig {
    /// `azure.container.name`.
    pub container: String,
    /// `azure.account.name` (or the connection string's `AccountName`).
    pub account: Option<String>,
    /// `azure.account.key` (or the connection string's `AccountKey`).
    pub account_key: Option<Secret>,
    /// `azure.sas.token` (or the connection string's `SharedAccessSignature`).
    pub sas_token: Option<Secret>,
    /// `azure.connection.string`, kept only to scrub it from messages.
    pub connection_string: Option<Secret>,
    /// `azure.endpoint.url` (or the connection string's `BlobEndpoint`).
    pub endpoint: Option<String>,
    /// `azure.client.id`.
    pub client_id: Option<String>,
    /// `azure.tenant.id`.
    pub tenant_id: Option<String>,
    /// `azure.client.secret`.
    pub client_secret: Option<Secret>,
    /// `azure.federated.token.file`.
    pub federated_token_file: Option<String>,
    /// `azure.msi.endpoint`.
    pub msi_endpoint: Option<String>,
    /// `azure.upload.block.size` and `azure.upload.blocks.in.flight`.
    pub upload: UploadSettings,
    /// Timeouts and retries (`azure.api.call.timeout`, ...).
    pub client: ClientSettings,
}

/// The parts of an Azure connection string we use.
#[derive(Default)]
struct ConnectionString {
    account: Option<String>,
    key: Option<Secret>,
    sas: Option<Secret>,
    endpoint: Option<String>,
}

fn parse_connection_string(s: &Secret) -> Result<ConnectionString> {
    const KEY: &str = config::CONNECTION_STRING.key;
    let mut out = ConnectionString::default();
    let mut protocol = "https".to_string();
    let mut suffix = "core.windows.net".to_string();
    for part in s.expose().split(';').map(str::trim).filter(|p| !p.is_empty()) {
        // Values (keys, signatures) may contain `=`: split at the first only. Never quote a value.
        let Some((k, v)) = part.split_once('=') else {
            return Err(Error::config(KEY, "has a part without `=`"));
        };
        match k.trim() {
            "AccountName" => out.account = Some(v.to_string()),
            "AccountKey" => out.key = Some(Secret::new(v)),
            "SharedAccessSignature" => out.sas = Some(Secret::new(v)),
            "BlobEndpoint" => out.endpoint = Some(v.trim_end_matches('/').to_string()),
            "DefaultEndpointsProtocol" => protocol = v.to_string(),
            "EndpointSuffix" => suffix = v.to_string(),
            "UseDevelopmentStorage" if v.eq_ignore_ascii_case("true") => {
                out.account = Some("devstoreaccount1".into());
                out.endpoint = Some("http://127.0.0.1:10000/devstoreaccount1".into());
                out.key = Some(Secret::new(
                    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
                ));
            }
            // Endpoints of the other services (queues, tables, files) do not concern blobs.
            "QueueEndpoint" | "TableEndpoint" | "FileEndpoint" | "UseDevelopmentStorage" => {}
            other => {
                return Err(Error::config(KEY, format!("has an unknown part `{}`", other.escape_debug())));
            }
        }
    }
    if out.endpoint.is_none()
        && let Some(a) = &out.account
    {
        out.endpoint = Some(format!("{protocol}://{a}.blob.{suffix}"));
    }
    if let Some(e) = &out.endpoint
        && !(e.starts_with("http://") || e.starts_with("https://"))
    {
        return Err(Error::config(KEY, "has a blob endpoint that is not an http:// or https:// URL"));
    }
    Ok(out)
}

impl CloudStore for AzureConfig {
    const KIND: CloudKind = CloudKind::new("azure", "Azure", "az", "container", &config::CONTAINER, &config::ENDPOINT);
    /// object_store's Azure client refuses suffix ranges: a tail read is a HEAD and a ranged GET.
    const SUFFIX_READS: bool = false;

    /// Reads the settings; `container` (from a URL) stands in for `azure.container.name` when given.
    fn read(r: &mut ConfigReader<'_>, container: Option<&str>) -> Result<Self> {
        let container = Self::KIND.read_container(r, container)?;
        let connection_string = r.get_secret(&config::CONNECTION_STRING);
        let cs = match &connection_string {
            Some(s) => parse_connection_string(s)?,
            None => ConnectionString::default(),
        };
        let account = r.get_string(&config::ACCOUNT).map(str::to_string).or(cs.account);
        let account_key = r.get_secret(&config::ACCOUNT_KEY).or(cs.key);
        let sas_token =
            r.get_secret(&config::SAS_TOKEN).map(|s| Secret::new(s.expose().trim_start_matches('?'))).or(cs.sas);
        let endpoint = Self::KIND.read_endpoint(r)?.or(cs.endpoint);
        if account_key.is_some() && sas_token.is_some() {
            return Err(Error::config(config::SAS_TOKEN.key, "set either an account key or a SAS token, not both"));
        }
        let client_id = r.get_string(&config::CLIENT_ID).map(str::to_string);
        let tenant_id = r.get_string(&config::TENANT_ID).map(str::to_string);
        let client_secret = r.get_secret(&config::CLIENT_SECRET);
        let federated_token_file = r.get_string(&config::FEDERATED_TOKEN_FILE).map(str::to_string);
        let msi_endpoint = r.get_string(&config::MSI_ENDPOINT).map(str::to_string);
        if account.is_none() {
            return Err(Error::config(
                config::ACCOUNT.key,
                "is required (or an azure.connection.string with AccountName)",
            ));
        }
        let block: usize = r.get_int(&config::BLOCK_SIZE)?;
        let in_flight = r.get_int(&config::BLOCKS_IN_FLIGHT)?;
        let client = ClientSettings::read(r, Self::KIND.name)?;
        Ok(AzureConfig {
            container,
            account,
            account_key,
            sas_token,
            connection_string,
            endpoint,
            client_id,
            tenant_id,
            client_secret,
            federated_token_file,
            msi_endpoint,
            upload: UploadSettings { parts_in_flight: in_flight, ..UploadSettings::with_part_size(block) },
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
        let mut r = Redactor::new(
            [&self.account_key, &self.sas_token, &self.connection_string, &self.client_secret]
                .into_iter()
                .flatten()
                .cloned(),
        );
        // A SAS's signature alone is the secret part; scrub it wherever it appears.
        if let Some(sas) = &self.sas_token {
            for pair in sas.expose().split('&') {
                if let Some(sig) = pair.strip_prefix("sig=") {
                    r.add(Secret::new(sig));
                }
            }
        }
        r
    }

    fn stores(&self, http: CountingConnector) -> object_store::Result<CloudStores> {
        let allow_http = self.endpoint.as_deref().is_some_and(|e| e.starts_with("http://"));
        let mut b = MicrosoftAzureBuilder::from_env()
            .with_container_name(&self.container)
            .with_client_options(self.client.client_options(allow_http))
            .with_retry(self.client.retry_config())
            .with_http_connector(http);
        if let Some(a) = &self.account {
            b = b.with_account(a);
        }
        if let Some(e) = &self.endpoint {
            b = b.with_endpoint(e.clone()).with_allow_http(allow_http);
        }
        if let Some(k) = &self.account_key {
            b = b.with_access_key(k.expose());
        }
        if let Some(s) = &self.sas_token {
            b = b.with_config(AzureConfigKey::SasKey, s.expose());
        }
        if let Some(v) = &self.client_id {
            b = b.with_client_id(v);
        }
        if let Some(v) = &self.tenant_id {
            b = b.with_tenant_id(v);
        }
        if let Some(v) = &self.client_secret {
            b = b.with_client_secret(v.expose());
        }
        if let Some(v) = &self.federated_token_file {
            b = b.with_federated_token_file(v);
        }
        if let Some(v) = &self.msi_endpoint {
            b = b.with_msi_endpoint(v);
        }
        Ok(CloudStores::one(b.build()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_backend_object_store::testing;

    #[test]
    fn connection_strings_parse() {
        let cs = parse_connection_string(&Secret::new(
            "DefaultEndpointsProtocol=http;AccountName=acc;AccountKey=a2V5PT0=;BlobEndpoint=http://127.0.0.1:1/acc/;",
        ))
        .unwrap();
        assert_eq!(cs.account.as_deref(), Some("acc"));
        assert_eq!(cs.key.unwrap().expose(), "a2V5PT0=");
        assert_eq!(cs.endpoint.as_deref(), Some("http://127.0.0.1:1/acc"));
        let e = parse_connection_string(&Secret::new("AccountName=a;BlobEndpoint=ftp://h/a")).err().unwrap();
        assert!(e.to_string().contains("`azure.connection.string`"), "{e}");
        let e = parse_connection_string(&Secret::new("AccountKey=s3cr3t;Bogus=1")).err().unwrap();
        assert!(e.to_string().contains("Bogus"), "{e}");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
    }

    /// The container is required, unknown keys fail, and a URL gives the container and the prefix.
    #[test]
    fn constructors_check_settings() {
        let minimal = [("azure.account.name", "a"), ("azure.account.key", "a2V5")];
        testing::constructors_check_settings::<AzureConfig>(&minimal, "azure.acount.key");
    }
}
