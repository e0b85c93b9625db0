//! The fake-gcs-server test server, from the variables `tools/servers/fake-gcs.sh start` exports.

use rsm_backend_gcs::GcsConfig;
use rsm_backend_object_store::testing::Source::Value;
use rsm_backend_object_store::testing::TestServer;

/// fake-gcs-server, anonymous (it checks no credentials): `RSM_TEST_GCS_ENDPOINT` and `_BUCKET`. Its
/// contract backend has 5 MiB chunks, so large objects go in resumable uploads of several chunks.
pub const SERVER: TestServer<GcsConfig> = TestServer::new(
    "tools/servers/fake-gcs.sh",
    "gcs.resumable.upload.chunk.size",
    &[("gcs.credentials.default", Value("false"))],
);
