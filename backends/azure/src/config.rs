//! The Azure Blob store's settings, declared once: [`AzureConfig`](crate::AzureConfig) reads them through
//! these declarations and the crate documentation's table is generated from [`SETTINGS`] (with the cloud
//! client's timeouts and retries, `ClientSettings`).

use rsm_core::config::{Kind, Setting, Unit};

/// `azure.container.name`.
pub const CONTAINER: Setting = Setting::of("azure.container.name", Kind::String)
    .with_checks("required unless the store URL names the container; the two must agree")
    .with_doc("container (or from an `az://container/prefix` URL)");
/// `azure.account.name`.
pub const ACCOUNT: Setting = Setting::of("azure.account.name", Kind::String)
    .with_described_default("from the connection string")
    .with_checks("required (here or in `azure.connection.string`)")
    .with_doc("storage account");
/// `azure.account.key`.
pub const ACCOUNT_KEY: Setting = Setting::of("azure.account.key", Kind::Secret)
    .with_checks("not with `azure.sas.token`")
    .with_doc("shared key (secret)");
/// `azure.sas.token`.
pub const SAS_TOKEN: Setting =
    Setting::of("azure.sas.token", Kind::Secret).with_doc("SAS token, with or without the leading `?` (secret)");
/// `azure.connection.string`.
pub const CONNECTION_STRING: Setting = Setting::of("azure.connection.string", Kind::Secret).with_doc(
    "`AccountName=..;AccountKey=..;BlobEndpoint=..` or with `SharedAccessSignature=..` (secret); the other \
     settings win over its parts",
);
/// `azure.endpoint.url`.
pub const ENDPOINT: Setting = Setting::of("azure.endpoint.url", Kind::String)
    .with_described_default("`https://{account}.blob.core.windows.net`")
    .with_checks("an `http://` or `https://` URL")
    .with_doc(
        "blob endpoint including the account for Azurite (`http://127.0.0.1:10000/devstoreaccount1`); plain HTTP \
         only when it says `http://`",
    );
/// `azure.client.id`.
pub const CLIENT_ID: Setting = Setting::of("azure.client.id", Kind::String).with_doc(
    "an Entra ID application (with `azure.tenant.id` and `azure.client.secret`) or a user-assigned managed identity",
);
/// `azure.tenant.id`.
pub const TENANT_ID: Setting =
    Setting::of("azure.tenant.id", Kind::String).with_doc("the Entra ID tenant of `azure.client.id`");
/// `azure.client.secret`.
pub const CLIENT_SECRET: Setting = Setting::of("azure.client.secret", Kind::Secret)
    .with_doc("the secret of the application `azure.client.id` (secret)");
/// `azure.federated.token.file`.
pub const FEDERATED_TOKEN_FILE: Setting = Setting::of("azure.federated.token.file", Kind::Path)
    .with_described_default("`AZURE_FEDERATED_TOKEN_FILE`")
    .with_doc("workload identity token file (with client and tenant id)");
/// `azure.msi.endpoint`.
pub const MSI_ENDPOINT: Setting = Setting::of("azure.msi.endpoint", Kind::String)
    .with_described_default("the instance metadata service")
    .with_doc("managed identity endpoint");
/// `azure.upload.block.size`.
pub const BLOCK_SIZE: Setting = Setting::int("azure.upload.block.size", 64 << 10, 1 << 30)
    .with_default(25 << 20)
    .with_unit(Unit::Bytes)
    .with_doc("block size in bytes; blobs up to one block go in one PUT");
/// `azure.upload.blocks.in.flight`.
pub const BLOCKS_IN_FLIGHT: Setting =
    Setting::int("azure.upload.blocks.in.flight", 1, 32).with_default(4).with_doc("blocks uploaded at once per blob");

/// The settings of the Azure store, in the order the documentation lists them.
pub const SETTINGS: &[&Setting] = &[
    &CONTAINER,
    &ACCOUNT,
    &ACCOUNT_KEY,
    &SAS_TOKEN,
    &CONNECTION_STRING,
    &ENDPOINT,
    &CLIENT_ID,
    &TENANT_ID,
    &CLIENT_SECRET,
    &FEDERATED_TOKEN_FILE,
    &MSI_ENDPOINT,
    &BLOCK_SIZE,
    &BLOCKS_IN_FLIGHT,
];
