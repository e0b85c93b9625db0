//! No secret (access key id, secret key, session token) appears in the Debug of the settings or the
//! backend, nor in the errors of failing requests against the moto server.

mod common;

use bytes::Bytes;
use rsm_backend_s3::S3Config;
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;

const ID: &str = "AKIARSMSECRETIDXYZ42";
const KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYRSMSECRETKEY";
const TOKEN: &str = "FwoGZXIvYXdzRSMSESSIONTOKENSECRET//xyz=";

fn assert_clean(what: &str, text: &str) {
    for s in [ID, KEY, TOKEN] {
        assert!(!text.contains(s), "{what} shows a secret: {text}");
    }
}

fn all_of(e: &rsm_core::Error) -> String {
    format!("{e} | {} | {e:?}", e.full_message())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear() {
    let mut p =
        common::settings(&[("aws.access.key.id", ID), ("aws.secret.access.key", KEY), ("aws.session.token", TOKEN)]);
    let mut r = ConfigReader::new(&p);
    let config = S3Config::read(&mut r, None).unwrap();
    r.finish().unwrap();
    assert_clean("the settings' Debug", &format!("{config:?}"));
    let b = config.build().unwrap();
    assert_clean("the backend's Debug", &format!("{b:?}"));

    // A missing key, then a bucket that does not exist: both fail at the server.
    let e = b.get_range("secrets/missing", 0..10).await.unwrap_err();
    assert_clean("a not-found error", &all_of(&e));
    p.insert("s3.bucket.name".into(), "rsm-no-such-bucket".into());
    let mut r = ConfigReader::new(&p);
    let b = S3Config::read(&mut r, None).unwrap().build().unwrap();
    let e = b.put_bytes("secrets/obj", Bytes::from_static(b"x")).await.unwrap_err();
    assert!(e.to_string().contains("secrets/obj"), "the error names the key: {e}");
    assert_clean("an upload error", &all_of(&e));
    let e = b.list("secrets/").await.unwrap_err();
    assert_clean("a listing error", &all_of(&e));

    // A settings error with secrets present.
    p.insert("s3.endpoint.url".into(), "ftp://nowhere".into());
    let e = S3Config::read(&mut ConfigReader::new(&p), None).unwrap_err();
    assert_clean("a settings error", &all_of(&e));
}
