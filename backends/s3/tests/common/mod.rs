//! The moto test server, from the variables `tools/servers/moto.sh start` exports.

use rsm_backend_object_store::testing::Source::Var;
use rsm_backend_object_store::testing::TestServer;
use rsm_backend_s3::S3Config;

/// moto: `RSM_TEST_S3_ENDPOINT`, `_BUCKET`, `_REGION`, `_ACCESS_KEY` and `_SECRET_KEY`.
pub const SERVER: TestServer<S3Config> = TestServer::new(
    "tools/servers/moto.sh",
    "s3.multipart.upload.part.size",
    &[
        ("s3.region", Var("REGION")),
        ("aws.access.key.id", Var("ACCESS_KEY")),
        ("aws.secret.access.key", Var("SECRET_KEY")),
    ],
);
