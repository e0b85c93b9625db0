//! No secret (access key id, secret key, session token) appears in the Debug of the settings or the
//! backend, nor in the errors of failing requests against the moto server.

mod common;

use bytes::Bytes;
use rsm_backend_object_store::testing::{assert_hidden, error_text};
use rsm_backend_s3::{CloudStore, S3Config};
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;

const ID: &str = "AKIARSMSECRETIDXYZ42";
const KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYRSMSECRETKEY";
const TOKEN: &str = "FwoGZXIvYXdzRSMSESSIONTOKENSECRET//xyz=";

fn assert_clean(what: &str, text: &str) {
    assert_hidden(what, text, &[ID, KEY, TOKEN]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear() {
    let mut p = common::SERVER.settings(&[
        ("aws.access.key.id", ID),
        ("aws.secret.access.key", KEY),
        ("aws.session.token", TOKEN),
    ]);
    let (config, b) = common::SERVER.config_and_backend(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"));
    assert_clean("the backend's Debug", &format!("{b:?}"));

    // A missing key, then a bucket that does not exist: both fail at the server.
    let e = b.get_range("secrets/missing", 0..10).await.unwrap_err();
    assert_clean("a not-found error", &error_text(&e));
    p.insert("s3.bucket.name".into(), "rsm-no-such-bucket".into());
    let mut r = ConfigReader::new(&p);
    let b = S3Config::read(&mut r, None).unwrap().build().unwrap();
    let e = b.put_bytes("secrets/obj", Bytes::from_static(b"x")).await.unwrap_err();
    assert!(e.to_string().contains("secrets/obj"), "the error names the key: {e}");
    assert_clean("an upload error", &error_text(&e));
    let e = b.list("secrets/").await.unwrap_err();
    assert_clean("a listing error", &error_text(&e));

    // A settings error with secrets present.
    p.insert("s3.endpoint.url".into(), "ftp://nowhere".into());
    let e = S3Config::read(&mut ConfigReader::new(&p), None).unwrap_err();
    assert_clean("a settings error", &error_text(&e));
}
