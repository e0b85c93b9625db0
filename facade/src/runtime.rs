//! The one tokio runtime of the process, on which every blocking call of a [`crate::Store`] runs its async
//! core: the faces (CLI, C ABI, JNI) call in from threads of their own.

use std::sync::OnceLock;
use tokio::runtime::Runtime;

/// The process-wide runtime all blocking calls run on.
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8))
            .thread_name("rsm-io")
            .enable_all()
            .build()
            .expect("the tokio runtime starts")
    })
}
