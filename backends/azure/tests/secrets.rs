//! No secret (account key, SAS token, connection string) appears in the Debug of the settings or the
//! backend, nor in the errors of requests Azurite refuses; and a connection string works.

mod common;

use bytes::Bytes;
use rsm_backend_object_store::testing::{assert_hidden as assert_clean, error_text};
use rsm_core::{ErrorKind, StorageBackend};

/// A wrong key (valid base64) that Azurite refuses.
const BAD_KEY: &str = "UlNNU0VDUkVUS0VZUlNNU0VDUkVUS0VZUlNNU0VDUkVUS0VZ";
const SAS_SIG: &str = "RSMSECRETSIGNATURExyz%2Fabc%3D";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_key_never_appears() {
    let p = common::SERVER.settings(&[("azure.account.key", BAD_KEY)]);
    let (config, b) = common::SERVER.config_and_backend(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"), &[BAD_KEY]);
    assert_clean("the backend's Debug", &format!("{b:?}"), &[BAD_KEY]);
    let e = b.put_bytes("secrets/obj", Bytes::from_static(b"x")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Storage, "{}", e.full_message());
    assert!(e.to_string().contains("secrets/obj"), "{e}");
    assert_clean("a refused request", &error_text(&e), &[BAD_KEY]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sas_token_never_appears() {
    let sas = format!(
        "?sv=2021-08-06&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00:00:00Z&st=2020-01-01T00:00:00Z&spr=http&sig={SAS_SIG}"
    );
    let mut p = common::SERVER.settings(&[("azure.sas.token", &sas)]);
    p.remove("azure.account.key");
    let (config, b) = common::SERVER.config_and_backend(&p);
    let secrets = [SAS_SIG, "RSMSECRETSIGNATURE"];
    assert_clean("the settings' Debug", &format!("{config:?}"), &secrets);
    assert_clean("the backend's Debug", &format!("{b:?}"), &secrets);
    let e = b.get_range("secrets/obj", 0..1).await.unwrap_err();
    assert_clean("a refused read", &error_text(&e), &secrets);
    let e = b.put_bytes("secrets/obj", Bytes::from_static(b"x")).await.unwrap_err();
    assert_clean("a refused upload", &error_text(&e), &secrets);
    let e = b.list("secrets/").await.unwrap_err();
    assert_clean("a refused listing", &error_text(&e), &secrets);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_string_works_and_never_appears() {
    let env = common::SERVER.env();
    let good = format!(
        "DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={};",
        env["RSM_TEST_AZURE_ACCOUNT"], env["RSM_TEST_AZURE_KEY"], env["RSM_TEST_AZURE_ENDPOINT"]
    );
    let mut p = common::SERVER.settings(&[("azure.connection.string", &good)]);
    for k in ["azure.account.key", "azure.account.name", "azure.endpoint.url"] {
        p.remove(k);
    }
    let (config, b) = common::SERVER.config_and_backend(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"), &[&good]);
    let key = format!("secrets/cs-{}", rsm_core::Uuid::random());
    b.put_bytes(&key, Bytes::from_static(b"hello")).await.unwrap();
    assert_eq!(&b.get_range(&key, 1..3).await.unwrap()[..], b"el");
    b.delete(&key).await.unwrap();

    let bad = good.replace(env["RSM_TEST_AZURE_KEY"].as_str(), BAD_KEY);
    p.insert("azure.connection.string".into(), bad.clone());
    let (config, b) = common::SERVER.config_and_backend(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"), &[&bad, BAD_KEY]);
    assert_clean("the backend's Debug", &format!("{b:?}"), &[&bad, BAD_KEY]);
    let e = b.put_bytes(&key, Bytes::from_static(b"x")).await.unwrap_err();
    assert_clean("a refused request", &error_text(&e), &[&bad, BAD_KEY]);
}
