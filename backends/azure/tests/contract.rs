//! The Azure backend passes the backend and RemoteStorageManager contract suites against a real Azurite
//! server (`eval "$(tools/servers/azurite.sh start)"`), shared-key signed, with 5 MiB blocks so large
//! objects go in several blocks.

mod common;

rsm_backend_object_store::cloud_contract_tests!(common::SERVER.backend());
