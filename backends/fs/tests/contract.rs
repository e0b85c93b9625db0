//! The filesystem backend passes the backend and RemoteStorageManager contract suites, on a real
//! directory with fsync on.

use rsm_backend_fs::FsBackend;
use rsm_core::StorageBackend;
use std::sync::{Arc, OnceLock};

fn root() -> &'static tempfile::TempDir {
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    ROOT.get_or_init(|| tempfile::tempdir().unwrap())
}

async fn make() -> Arc<dyn StorageBackend> {
    Arc::new(FsBackend::create(root().path().join("store"), true).unwrap())
}

mod backend {
    rsm_core::backend_contract_tests!(super::make());
}

mod rsm {
    rsm_core::rsm_contract_tests!(super::make());
}
