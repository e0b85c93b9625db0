//! The Azurite test server, from the variables `tools/servers/azurite.sh start` exports.

use rsm_backend_azure::AzureConfig;
use rsm_backend_object_store::testing::Source::Var;
use rsm_backend_object_store::testing::TestServer;

/// Azurite, shared-key signed: `RSM_TEST_AZURE_ENDPOINT`, `_CONTAINER`, `_ACCOUNT` and `_KEY`.
pub const SERVER: TestServer<AzureConfig> = TestServer::new(
    "tools/servers/azurite.sh",
    "azure.upload.block.size",
    &[("azure.account.name", Var("ACCOUNT")), ("azure.account.key", Var("KEY"))],
);
