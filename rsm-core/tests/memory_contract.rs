//! The in-memory backend passes the backend and RemoteStorageManager contract suites.

use rsm_core::StorageBackend;
use rsm_core::backend::MemoryBackend;
use std::sync::Arc;

async fn make() -> Arc<dyn StorageBackend> {
    Arc::new(MemoryBackend::new())
}

mod backend {
    rsm_core::backend_contract_tests!(super::make());
}

mod rsm {
    rsm_core::rsm_contract_tests!(super::make());
}
