//! The S3 backend passes the backend and RemoteStorageManager contract suites against a real moto
//! server (`eval "$(tools/servers/moto.sh start)"`), with 5 MiB parts so large objects go multipart.

mod common;

rsm_backend_object_store::cloud_contract_tests!(common::SERVER.backend());
