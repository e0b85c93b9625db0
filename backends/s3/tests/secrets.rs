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

/// Credentials from `aws.credentials.file` show nowhere either: not in the settings' or the backend's
/// `Debug`, nor in the errors of failing requests, nor in a settings error about the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_credentials_never_appear() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("credentials");
    std::fs::write(
        &file,
        format!("[default]\naws_access_key_id = {ID}\naws_secret_access_key = {KEY}\naws_session_token = {TOKEN}\n"),
    )
    .unwrap();
    let mut p = common::SERVER.settings(&[("aws.credentials.file", file.to_str().unwrap())]);
    p.remove("aws.access.key.id");
    p.remove("aws.secret.access.key");
    let (config, b) = common::SERVER.config_and_backend(&p);
    assert_clean("the settings' Debug", &format!("{config:?}"));
    assert_clean("the backend's Debug", &format!("{b:?}"));
    let e = b.get_range("secrets/missing", 0..10).await.unwrap_err();
    assert_clean("a not-found error", &error_text(&e));

    p.insert("aws.credentials.profile".into(), "missing".into());
    let e = S3Config::read(&mut ConfigReader::new(&p), None).unwrap_err();
    assert!(e.to_string().contains("no profile `missing`"), "{e}");
    assert_clean("a settings error", &error_text(&e));
    std::fs::write(&file, format!("[default]\naws_access_key_id {ID}\n")).unwrap();
    p.remove("aws.credentials.profile");
    let e = S3Config::read(&mut ConfigReader::new(&p), None).unwrap_err();
    assert!(e.to_string().contains("`aws.credentials.file`") && e.to_string().contains("line 2"), "{e}");
    assert_clean("a settings error of a file that does not read", &error_text(&e));
}
