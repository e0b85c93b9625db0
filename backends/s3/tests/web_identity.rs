//! Web identity credentials (as on EKS: `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`, object_store's
//! default chain) against moto's STS, its endpoint set by `aws.sts.endpoint.url`: the store sends
//! AssumeRoleWithWebIdentity with the token file's token and the role, and signs its S3 requests with the
//! access key id STS issued. object_store sends the STS request over HTTPS only, so it goes to a recording
//! proxy serving a test certificate (trusted through `SSL_CERT_FILE`) that passes it on to moto; moto routes
//! an unsigned request by its body, and object_store puts the request in the query, so the proxy adds a
//! routing signature (moto checks none). The S3 requests go through a plain recording proxy.
//! The environment is process-wide: this binary holds this one test, which sets it before any thread starts.

mod common;
#[path = "support/recorder.rs"]
mod recorder;

use bytes::Bytes;
use rsm_core::StorageBackend;
use rsm_core::config::ConfigReader;
use std::path::Path;
use std::process::Command;

const ROLE: &str = "arn:aws:iam::123456789012:role/rsm-tiered-storage";
const TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.rsm-web-identity-test-token.c2ln";

/// A test CA and a certificate for 127.0.0.1 it signed, by the `openssl` command: (CA PEM, cert PEM, key PEM).
fn certificates(dir: &Path) -> (std::path::PathBuf, Vec<u8>, Vec<u8>) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("the `openssl` command is needed to make the test certificate: {e}"));
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    run(&[
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=rsm test CA"],
    ]
    .concat());
    run(&[&["req", "-new"][..], &ec, &["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1"]].concat());
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    (dir.join("ca.pem"), std::fs::read(dir.join("leaf.pem")).unwrap(), std::fs::read(dir.join("leaf.key")).unwrap())
}

/// The text of the first `<name>` element of `xml`.
fn element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{name}>"))? + name.len() + 2;
    Some(&xml[start..start + xml[start..].find('<')?])
}

#[test]
fn web_identity_through_moto_sts() {
    let env = common::SERVER.env();
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(dir.path());
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    // SAFETY: the only test of this binary, before any thread starts.
    unsafe {
        for var in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_STS"] {
            std::env::remove_var(var);
        }
        std::env::set_var("AWS_WEB_IDENTITY_TOKEN_FILE", &token_file);
        std::env::set_var("AWS_ROLE_ARN", ROLE);
        std::env::set_var("AWS_ROLE_SESSION_NAME", "rsm-web-identity-test");
        std::env::set_var("SSL_CERT_FILE", &ca);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let moto = &env["RSM_TEST_S3_ENDPOINT"];
        let sts = recorder::Recorder::tls(moto, &cert, &key, "sts").await;
        let s3 = recorder::Recorder::plain(moto).await;
        let (s3_url, sts_url) = (s3.url("http"), sts.url("https"));
        let mut p = common::SERVER
            .settings(&[("s3.endpoint.url", s3_url.as_str()), ("aws.sts.endpoint.url", sts_url.as_str())]);
        p.remove("aws.access.key.id");
        p.remove("aws.secret.access.key");
        let mut r = ConfigReader::new(&p);
        let b = rsm_backend_s3::from_config(&mut r).unwrap();
        r.finish().unwrap();

        let key = format!("web-identity/{}", rsm_core::Uuid::random());
        b.put_bytes(&key, Bytes::from_static(b"assumed")).await.unwrap();
        assert_eq!(&b.get_range(&key, 0..7).await.unwrap()[..], b"assumed");
        assert_eq!(b.list("web-identity/").await.unwrap().iter().filter(|o| o.key == key).count(), 1);
        b.delete(&key).await.unwrap();

        // One AssumeRoleWithWebIdentity, with the role and the token file's token, answered by moto's STS.
        let calls = sts.settled().await;
        assert_eq!(calls.len(), 1, "{calls:?}");
        let call = &calls[0];
        assert_eq!(call.method, "POST");
        for part in [
            "Action=AssumeRoleWithWebIdentity",
            "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Frsm-tiered-storage",
        ] {
            assert!(call.target.contains(part), "{part} in {}", call.target);
        }
        assert!(call.target.contains(&format!("WebIdentityToken={TOKEN}")), "{}", call.target);
        let answer = String::from_utf8_lossy(&call.answer);
        assert_eq!(call.status, Some(200), "{answer}");
        let issued = element(&answer, "AccessKeyId").unwrap_or_else(|| panic!("no key in {answer}")).to_string();
        assert!(element(&answer, "SessionToken").is_some(), "{answer}");

        // Every S3 request signed with the key STS issued, and answered with success.
        let requests = s3.settled().await;
        assert!(requests.len() >= 4, "{requests:?}");
        for r in &requests {
            assert_eq!(r.key_id.as_deref(), Some(issued.as_str()), "{} {}", r.method, r.target);
            assert!(r.status.is_some_and(|c| (200..300).contains(&c)), "{r:?}");
        }
        println!("{} S3 requests signed with {issued}, the key moto's STS issued for {ROLE}", requests.len());
    });
}
