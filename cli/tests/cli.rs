//! The `rsm` binary end to end: copy a generated partition to a filesystem store, list, verify, fetch by
//! position, offset, timestamp and index, and fail clearly on bad input.

use rsm_core::Uuid;
use rsm_core::format::batch::BatchIter;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use std::path::Path;

mod common;
use common::{files, ok, rsm};

fn fails(args: &[&str], message: &str) {
    let out = rsm(args);
    assert!(!out.status.success(), "rsm {args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(message), "rsm {args:?}: stderr {err:?} lacks {message:?}");
}

fn partition(root: &Path) -> std::path::PathBuf {
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 256 * 1024,
        records: 4_000,
        records_per_batch: 10,
        value_bytes: 200,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 5,
        compression: None,
    };
    generate_partition(&root.join("payments-1"), &spec).unwrap()
}

#[test]
fn copy_ls_verify_fetch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = partition(tmp.path());
    let url = format!("file://{}", tmp.path().join("store").display());
    let dir_s = dir.to_str().unwrap();
    let out = ok(&["copy", "--dir", dir_s, "--store", &url, "--create", "--set", "chunk.size=65536"]);
    let ids: Vec<&str> = out.lines().filter(|l| l.contains("..=")).map(|l| l.split('\t').next().unwrap()).collect();
    assert!(ids.len() >= 3, "{out}");
    assert!(out.contains("PUT"), "{out}");

    let ls = ok(&["ls", "--store", &url]);
    for id in &ids {
        assert!(ls.contains(id), "ls lacks {id}: {ls}");
    }
    assert!(ls.contains("payments-1"), "{ls}");

    let v = ok(&["verify", "--store", &url, "--dir", dir_s]);
    assert!(v.contains(&format!("verified {} segments", ids.len())), "{v}");

    // The first segment's file, fetched by position, offset, timestamp and as an index.
    let log = std::fs::read(dir.join("00000000000000000000.log")).unwrap();
    let out_file = tmp.path().join("out.bin");
    let o = out_file.to_str().unwrap();
    ok(&["fetch", "--store", &url, "--segment", ids[0], "-o", o]);
    assert!(std::fs::read(&out_file).unwrap() == log);
    ok(&["fetch", "--store", &url, "--segment", ids[0], "--position", "100", "--bytes", "1000", "-o", o]);
    assert!(std::fs::read(&out_file).unwrap() == log[100..1100]);
    let batches: Vec<_> = BatchIter::new(&log, 0, true).map(|b| b.unwrap()).collect();
    let b = batches[batches.len() / 2];
    ok(&["fetch", "--store", &url, "--segment", ids[0], "--offset", &(b.base_offset() + 3).to_string(), "-o", o]);
    assert!(std::fs::read(&out_file).unwrap() == log[b.position() as usize..]);
    ok(&["fetch", "--store", &url, "--segment", ids[0], "--timestamp", &b.max_timestamp().to_string(), "-o", o]);
    let first_ts = batches.iter().find(|x| x.max_timestamp() >= b.max_timestamp()).unwrap().position() as usize;
    assert!(std::fs::read(&out_file).unwrap() == log[first_ts..]);
    ok(&["fetch", "--store", &url, "--segment", ids[0], "--index", "offset", "-o", o]);
    assert_eq!(std::fs::read(&out_file).unwrap(), std::fs::read(dir.join("00000000000000000000.index")).unwrap());
}

#[test]
fn bad_input_fails_with_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = partition(tmp.path());
    std::fs::create_dir(tmp.path().join("store")).unwrap();
    let url = format!("file://{}", tmp.path().join("store").display());
    let dir_s = dir.to_str().unwrap();
    fails(&["copy", "--dir", dir_s, "--store", &url, "--set", "chunk.sise=1"], "`chunk.sise`: unknown setting");
    fails(
        &["copy", "--dir", dir_s, "--store", &url, "--set", "fetch.concurrency=0"],
        "`fetch.concurrency`: 0 is out of range",
    );
    fails(&["ls", "--store", "nope://x"], "unsupported store URL scheme `nope`");
    fails(
        &["fetch", "--store", &url, "--segment", "AAAAAAAAAAAAAAAAAAAAAQ"],
        "not found: segment AAAAAAAAAAAAAAAAAAAAAQ",
    );
    fails(&["fetch", "--store", &url, "--segment", "xyz"], "`xyz` is not a Kafka Uuid");
    // A corrupted batch: copy fails as corrupt and names the offset.
    let log = dir.join("00000000000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let second = BatchIter::new(&bytes, 0, true).nth(1).unwrap().unwrap();
    let (pos, off) = (second.position() as usize, second.base_offset());
    bytes[pos + 70] ^= 0x20;
    std::fs::write(&log, bytes).unwrap();
    fails(&["copy", "--dir", dir_s, "--store", &url, "--create"], &format!("record batch at offset {off}"));
    let ls = ok(&["ls", "--store", &url]);
    assert_eq!(ls.lines().count(), 2, "nothing visible after the failed copy: {ls}");
    assert!(ls.contains("total: 0 segments"), "{ls}");
}

#[test]
fn demo_runs_and_checks_bytes() {
    let out = ok(&["demo", "--segments", "3", "--segment-mib", "1"]);
    assert!(out.contains("byte-identical") && out.contains("yes"), "{out}");
    let copied = out.lines().find(|l| l.starts_with("segments copied")).unwrap();
    assert!(
        copied.trim_end().ends_with('3') || copied.split_whitespace().last().unwrap().parse::<u32>().unwrap() >= 3,
        "{copied}"
    );
    assert!(out.lines().any(|l| l.starts_with("PUT per segment") && l.trim_end().ends_with("3.00")), "{out}");
}

/// The store URL and `--set` flags of each real server the test command started (HDFS, S3 on moto,
/// Azure on Azurite, GCS on fake-gcs-server); a missing server fails the test unless skipped locally.
fn real_stores() -> Vec<(String, Vec<String>)> {
    use rsm_core::testkit::test_server;
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let run = Uuid::random();
    let mut out = Vec::new();
    let start = |script: &str| format!("eval \"$(tools/servers/{script}.sh start)\"");
    if let Some(u) = test_server("RSM_TEST_HDFS_URL", "RSM_SKIP_HDFS", &start("minidfs")) {
        out.push((format!("{}/rsm-demo-{run}", u.trim_end_matches('/')), vec![]));
    }
    if let Some(endpoint) = test_server("RSM_TEST_S3_ENDPOINT", "RSM_SKIP_S3", &start("moto")) {
        let sets = vec![
            format!("s3.endpoint.url={endpoint}"),
            format!("s3.region={}", var("RSM_TEST_S3_REGION")),
            format!("aws.access.key.id={}", var("RSM_TEST_S3_ACCESS_KEY")),
            format!("aws.secret.access.key={}", var("RSM_TEST_S3_SECRET_KEY")),
        ];
        out.push((format!("s3://{}/rsm-demo-{run}/", var("RSM_TEST_S3_BUCKET")), sets));
    }
    if let Some(endpoint) = test_server("RSM_TEST_AZURE_ENDPOINT", "RSM_SKIP_AZURE", &start("azurite")) {
        let sets = vec![
            format!("azure.endpoint.url={endpoint}"),
            format!("azure.account.name={}", var("RSM_TEST_AZURE_ACCOUNT")),
            format!("azure.account.key={}", var("RSM_TEST_AZURE_KEY")),
        ];
        out.push((format!("az://{}/rsm-demo-{run}/", var("RSM_TEST_AZURE_CONTAINER")), sets));
    }
    if let Some(endpoint) = test_server("RSM_TEST_GCS_ENDPOINT", "RSM_SKIP_GCS", &start("fake-gcs")) {
        let sets = vec![format!("gcs.endpoint.url={endpoint}"), "gcs.credentials.default=false".to_string()];
        out.push((format!("gs://{}/rsm-demo-{run}/", var("RSM_TEST_GCS_BUCKET")), sets));
    }
    out
}

/// `rsm demo --store URL` against every real store, then `rsm ls` and `rsm verify` on what it left.
#[test]
fn demo_runs_against_real_stores() {
    for (url, sets) in real_stores() {
        let mut args = vec!["demo", "--segments", "2", "--segment-mib", "1", "--store", url.as_str()];
        for s in &sets {
            args.extend(["--set", s.as_str()]);
        }
        let out = ok(&args);
        assert!(out.lines().any(|l| l.starts_with("byte-identical") && l.trim_end().ends_with("yes")), "{url}: {out}");
        assert!(out.contains(&url), "{out}");
        let mut verify = vec!["verify", "--store", url.as_str()];
        for s in &sets {
            verify.extend(["--set", s.as_str()]);
        }
        let v = ok(&verify);
        assert!(v.contains("verified 2 segments"), "{url}: {v}");
    }
}

/// One damaged manifest and one missing log: `ls` and `verify` name both and still report the others, and a
/// fetch of a good segment works; both exit non-zero.
#[test]
fn a_damaged_segment_does_not_hide_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = partition(tmp.path());
    let root = tmp.path().join("store");
    let url = format!("file://{}", root.display());
    let out = ok(&["copy", "--dir", dir.to_str().unwrap(), "--store", &url, "--create", "--set", "chunk.size=65536"]);
    let ids: Vec<&str> = out.lines().filter(|l| l.contains("..=")).map(|l| l.split('\t').next().unwrap()).collect();
    assert!(ids.len() >= 3, "{out}");
    let objects: Vec<std::path::PathBuf> = files(&root);
    let find = |id: &str, ext: &str| {
        objects.iter().find(|p| p.to_str().unwrap().ends_with(&format!("-{id}.{ext}"))).unwrap().clone()
    };
    let manifest = find(ids[0], "manifest");
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(&manifest, bytes).unwrap();
    std::fs::remove_file(find(ids[1], "log")).unwrap();

    for cmd in ["ls", "verify"] {
        let o = rsm(&[cmd, "--store", &url]);
        assert!(!o.status.success(), "{cmd} exits non-zero");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("DAMAGED") && stdout.contains(manifest.file_name().unwrap().to_str().unwrap()),
            "{cmd}: {stdout}"
        );
        assert!(stdout.contains(&format!("INCOMPLETE\t{}\tmissing .log", ids[1])), "{cmd}: {stdout}");
        for id in &ids[2..] {
            assert!(stdout.contains(id), "{cmd} still reports {id}: {stdout}");
        }
    }
    let out = tmp.path().join("fetched");
    ok(&["fetch", "--store", &url, "--segment", ids[2], "--bytes", "100", "-o", out.to_str().unwrap()]);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 100, "a good segment still fetches");
}
