//! No secret (account key, SAS token, connection string) appears in the Debug of the settings or the
//! backend, nor in the errors of requests Azurite refuses; and a connection string works.

mod common;

use bytes::Bytes;
use rsm_backend_azure::AzureConfig;
use rsm_core::config::ConfigReader;
use rsm_core::{ErrorKind, StorageBackend};

/// A wrong key (valid base64) that Azurite refuses.
const BAD_KEY: &str = "UlNNU0VDUkVUS0VZUlNNU0VDUkVUS0VZUlNNU0VDUkVUS0VZ";
const SAS_SIG: &str = "RSMSECRETSIGNATURExyz%2Fabc%3D";

fn assert_clean(what: &str, text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "{what} shows a secret ({s}): {text}");
    }
}

fn all_of(e: &rsm_core::Error) -> String {
    format!("{e} | {} | {e:?}", e.full_message())
}

fn build(
    p: &std::collections::BTreeMap<String, String>,
) -> (AzureConfig, rsm_backend_object_store::ObjectStoreBackend) {
    let mut r = ConfigReader::new(p);
    let config = AzureConfig::read(&mut r, None).unwrap();
    r.finish().unwrap();
    let b = config.build().unwrap();
    (config, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_key_never_appears() {
    let p = common::settings(&[("azure.account.key", BAD_KEY)]);
    let (config, b) = build(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"), &[BAD_KEY]);
    assert_clean("the backend's Debug", &format!("{b:?}"), &[BAD_KEY]);
    let e = b.put_bytes("secrets/obj", Bytes::from_static(b"x")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Storage, "{}", e.full_message());
    assert!(e.to_string().contains("secrets/obj"), "{e}");
    assert_clean("a refused request", &all_of(&e), &[BAD_KEY]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sas_token_never_appears() {
    let sas = format!(
        "?sv=2021-08-06&ss=b&srt=sco&sp=rwdlac&se=2030-01-01T00:00:00Z&st=2020-01-01T00:00:00Z&spr=http&sig={SAS_SIG}"
    );
    let mut p = common::settings(&[("azure.sas.token", &sas)]);
    p.remove("azure.account.key");
    let (config, b) = build(&p);
    let secrets = [SAS_SIG, "RSMSECRETSIGNATURE"];
    assert_clean("the settings' Debug", &format!("{config:?}"), &secrets);
    assert_clean("the backend's Debug", &format!("{b:?}"), &secrets);
    let e = b.get_range("secrets/obj", 0..1).await.unwrap_err();
    assert_clean("a refused read", &all_of(&e), &secrets);
    let e = b.put_bytes("secrets/obj", Bytes::from_static(b"x")).await.unwrap_err();
    assert_clean("a refused upload", &all_of(&e), &secrets);
    let e = b.list("secrets/").await.unwrap_err();
    assert_clean("a refused listing", &all_of(&e), &secrets);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_string_works_and_never_appears() {
    let env = common::env();
    let good = format!(
        "DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={};",
        env["RSM_TEST_AZURE_ACCOUNT"], env["RSM_TEST_AZURE_KEY"], env["RSM_TEST_AZURE_ENDPOINT"]
    );
    let mut p = common::settings(&[("azure.connection.string", &good)]);
    for k in ["azure.account.key", "azure.account.name", "azure.endpoint.url"] {
        p.remove(k);
    }
    let (config, b) = build(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"), &[&good]);
    let key = format!("secrets/cs-{}", rsm_core::Uuid::random());
    b.put_bytes(&key, Bytes::from_static(b"hello")).await.unwrap();
    assert_eq!(&b.get_range(&key, 1..3).await.unwrap()[..], b"el");
    b.delete(&key).await.unwrap();

    let bad = good.replace(env["RSM_TEST_AZURE_KEY"].as_str(), BAD_KEY);
    p.insert("azure.connection.string".into(), bad.clone());
    let (config, b) = build(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"), &[&bad, BAD_KEY]);
    assert_clean("the backend's Debug", &format!("{b:?}"), &[&bad, BAD_KEY]);
    let e = b.put_bytes(&key, Bytes::from_static(b"x")).await.unwrap_err();
    assert_clean("a refused request", &all_of(&e), &[&bad, BAD_KEY]);
}
