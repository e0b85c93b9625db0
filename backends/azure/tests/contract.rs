//! The Azure backend passes the backend and RemoteStorageManager contract suites against a real Azurite
//! server (`eval "$(tools/servers/azurite.sh start)"`), shared-key signed, with 5 MiB blocks so large
//! objects go in several blocks.

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
