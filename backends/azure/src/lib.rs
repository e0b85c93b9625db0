//! Azure Blob Storage for rsm, over object_store's Azure client (shared key, SAS, managed and workload
//! identity; Azurite through an endpoint URL).
//!
//! Settings (the keys a broker passes under `rsm.config.`, named after Aiven's tiered-storage plugin):
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `azure.container.name` | container (required; or from an `az://container/prefix` URL) | |
//! | `azure.account.name` | storage account | from the connection string |
//! | `azure.account.key` | shared key (secret) | |
//! | `azure.sas.token` | SAS token, with or without the leading `?` (secret) | |
//! | `azure.connection.string` | `AccountName=..;AccountKey=..;BlobEndpoint=..` or with `SharedAccessSignature=..` (secret) | |
//! | `azure.endpoint.url` | blob endpoint including the account for Azurite (`http://127.0.0.1:10000/devstoreaccount1`); plain HTTP only when it says `http://` | `https://{account}.blob.core.windows.net` |
//! | `azure.client.id`, `azure.tenant.id` | an Entra ID application (with `azure.client.secret`, secret) or a user-assigned managed identity | |
//! | `azure.federated.token.file` | workload identity token file (with client and tenant id) | `AZURE_FEDERATED_TOKEN_FILE` |
//! | `azure.msi.endpoint` | managed identity endpoint | the instance metadata service |
//! | `azure.upload.block.size` | block size in bytes, 64 KiB to 1 GiB; blobs up to one block go in one PUT | 25 MiB |
//! | `azure.upload.blocks.in.flight` | blocks uploaded at once per blob, 1 to 32 | 4 |
//! | `azure.api.call.timeout`, `azure.api.call.attempt.timeout`, `azure.connect.timeout`, `azure.max.retries` | as for S3 | 180000, 30000, 5000, 10 |
//!
//! With no key, SAS or client secret, the credential is found as object_store's builder does from the
//! environment: workload identity (`AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`, `AZURE_TENANT_ID`),
//! else managed identity.

#![warn(missing_docs)]

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
    const KEY: &str = "azure.connection.string";
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
    const KIND: CloudKind = CloudKind::new("azure", "Azure", "az", "container");

    /// Reads the settings; `container` (from a URL) stands in for `azure.container.name` when given.
    fn read(r: &mut ConfigReader<'_>, container: Option<&str>) -> Result<Self> {
        let container = Self::KIND.read_container(r, container)?;
        let connection_string = r.secret("azure.connection.string");
        let cs = match &connection_string {
            Some(s) => parse_connection_string(s)?,
            None => ConnectionString::default(),
        };
        let account = r.string("azure.account.name").map(str::to_string).or(cs.account);
        let account_key = r.secret("azure.account.key").or(cs.key);
        let sas_token = r.secret("azure.sas.token").map(|s| Secret::new(s.expose().trim_start_matches('?'))).or(cs.sas);
        let endpoint = Self::KIND.read_endpoint(r)?.or(cs.endpoint);
        if account_key.is_some() && sas_token.is_some() {
            return Err(Error::config("azure.sas.token", "set either an account key or a SAS token, not both"));
        }
        let client_id = r.string("azure.client.id").map(str::to_string);
        let tenant_id = r.string("azure.tenant.id").map(str::to_string);
        let client_secret = r.secret("azure.client.secret");
        let federated_token_file = r.string("azure.federated.token.file").map(str::to_string);
        let msi_endpoint = r.string("azure.msi.endpoint").map(str::to_string);
        if account.is_none() {
            return Err(Error::config(
                "azure.account.name",
                "is required (or an azure.connection.string with AccountName)",
            ));
        }
        let block = r.int_in("azure.upload.block.size", 25usize << 20, 64 << 10..=1 << 30)?;
        let in_flight = r.int_in("azure.upload.blocks.in.flight", 4usize, 1..=32)?;
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
