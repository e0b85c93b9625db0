//! The GCS backend passes the backend and RemoteStorageManager contract suites against a real
//! fake-gcs-server (`eval "$(tools/servers/fake-gcs.sh start)"`), with 5 MiB chunks so large objects go
//! in resumable uploads of several chunks.

mod common;

rsm_backend_object_store::cloud_contract_tests!(common::SERVER.backend());
