//! No secret (a service account key, as JSON text or in a file) appears in the Debug of the settings or
//! the backend, nor in the errors of failing requests against fake-gcs-server; and both credential
//! forms work there (`disable_oauth`, as emulators take them).

mod common;

use bytes::Bytes;
use rsm_backend_gcs::{CloudStore, GcsConfig};
use rsm_backend_object_store::testing::{assert_hidden, error_text};
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;

const PRIVATE: &str = "RSMSECRETPRIVATEKEYMATERIALxyz";

fn key_json() -> String {
    format!(
        r#"{{"type":"service_account","disable_oauth":true,"client_email":"rsm@test.invalid","private_key_id":"rsmsecretkeyid","private_key":"-----BEGIN PRIVATE KEY-----\n{PRIVATE}\n-----END PRIVATE KEY-----\n"}}"#
    )
}

fn assert_clean(what: &str, text: &str) {
    assert_hidden(what, text, &[PRIVATE, "rsmsecretkeyid"]);
}

async fn round_trip(b: &dyn StorageBackend) {
    let key = format!("secrets/{}", rsm_core::Uuid::random());
    b.put_bytes(&key, Bytes::from_static(b"hello")).await.unwrap();
    assert_eq!(&b.get_range(&key, 1..3).await.unwrap()[..], b"el");
    b.delete(&key).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_json_never_appears() {
    let json = key_json();
    let mut p = common::SERVER.settings(&[("gcs.credentials.json", &json)]);
    p.remove("gcs.credentials.default");
    let (config, b) = common::SERVER.config_and_backend(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"));
    assert_clean("the backend's Debug", &format!("{b:?}"));
    round_trip(&b).await;

    p.insert("gcs.bucket.name".into(), "rsm-no-such-bucket".into());
    let b = GcsConfig::read(&mut ConfigReader::new(&p), None).unwrap().build().unwrap();
    let e = b.put_bytes("secrets/obj", Bytes::from_static(b"x")).await.unwrap_err();
    assert!(e.to_string().contains("secrets/obj"), "{e}");
    assert_clean("an upload error", &error_text(&e));
    let e = b.get_range("secrets/obj", 0..1).await.unwrap_err();
    assert_clean("a read error", &error_text(&e));

    p.insert("gcs.endpoint.url".into(), "ftp://nowhere".into());
    let e = GcsConfig::read(&mut ConfigReader::new(&p), None).unwrap_err();
    assert_clean("a settings error", &error_text(&e));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_file_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key.json");
    std::fs::write(&path, key_json()).unwrap();
    let mut p = common::SERVER.settings(&[("gcs.credentials.path", path.to_str().unwrap())]);
    p.remove("gcs.credentials.default");
    let (_, b) = common::SERVER.config_and_backend(&p);
    assert_clean("the backend's Debug", &format!("{b:?}"));
    round_trip(&b).await;
}
