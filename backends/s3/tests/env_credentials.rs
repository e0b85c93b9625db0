//! Without static keys, credentials come from object_store's default chain; its first link, the
//! `AWS_*` environment variables, works against the moto server. (This binary holds one test, so setting
//! the environment before any thread starts is safe.)

mod common;

use bytes::Bytes;
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;

#[test]
fn environment_credentials() {
    let e = common::SERVER.env();
    // SAFETY: the only test of this binary, before its runtime starts any thread.
    unsafe {
        std::env::set_var("AWS_ACCESS_KEY_ID", &e["RSM_TEST_S3_ACCESS_KEY"]);
        std::env::set_var("AWS_SECRET_ACCESS_KEY", &e["RSM_TEST_S3_SECRET_KEY"]);
    }
    let mut p = common::SERVER.settings(&[]);
    p.remove("aws.access.key.id");
    p.remove("aws.secret.access.key");
    let mut r = ConfigReader::new(&p);
    let b = rsm_backend_s3::from_config(&mut r).unwrap();
    r.finish().unwrap();
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
        let key = format!("env-creds/{}", rsm_core::Uuid::random());
        b.put_bytes(&key, Bytes::from_static(b"hi")).await.unwrap();
        assert_eq!(&b.get_range(&key, 0..2).await.unwrap()[..], b"hi");
        b.delete(&key).await.unwrap();
    });
}
