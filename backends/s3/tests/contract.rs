//! The S3 backend passes the backend and RemoteStorageManager contract suites against a real moto
//! server (`eval "$(tools/servers/moto.sh start)"`), with 5 MiB parts so large objects go multipart.

mod common;

use rsm_core::StorageBackend;
use std::sync::Arc;

async fn make() -> Arc<dyn StorageBackend> {
    common::backend()
}

mod backend {
    rsm_core::backend_contract_tests!(super::make());
}

mod rsm {
    rsm_core::rsm_contract_tests!(super::make());
}
