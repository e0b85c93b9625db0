//! The HDFS backend passes the backend and RemoteStorageManager contract suites on a real MiniDFS cluster
//! (`RSM_TEST_HDFS_URL`, started by `tools/servers/minidfs.sh start`).
//!
//! Each generated test builds a fresh backend, wrapped as the facade wraps every HDFS store: under the retry
//! layer, since the HDFS client does not retry by itself (a read that races the replacement of its file can
//! fail transiently and is retried). The `return` in the expression below leaves the test (skipped) when the
//! cluster is explicitly not wanted, see `common::hdfs_url`.

mod common;

mod backend {
    use super::common;
    rsm_core::backend_contract_tests!({
        let Some(url) = common::hdfs_url() else {
            return;
        };
        common::make_retried(url)
    });
}

mod rsm {
    use super::common;
    rsm_core::rsm_contract_tests!({
        let Some(url) = common::hdfs_url() else {
            return;
        };
        common::make_retried(url)
    });
}
