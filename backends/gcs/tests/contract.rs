//! The GCS backend passes the backend and RemoteStorageManager contract suites against a real
//! fake-gcs-server (`eval "$(tools/servers/fake-gcs.sh start)"`), with 5 MiB chunks so large objects go
//! in resumable uploads of several chunks.

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
