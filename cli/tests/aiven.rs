//! `rsm ls`, `verify` and `fetch` over segments Aiven's plugin stored (`aiven.read.enabled`), beside ours in
//! the same store: listed with how they are stored, verified whole, fetched by position, offset and index,
//! each byte compared with the source files (real Kafka partitions kafka-python wrote). The segments are
//! written by the fixture writer (`rsm_core::testkit::aiven_writer`) with the test key pair of
//! `tests/data/aiven`.

use rsm_core::crypto::AivenKeyPairs;
use rsm_core::format::aiven::AivenKeys;
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::aiven_writer::{AivenWriteSpec, write_aiven_segment};
use rsm_facade::{Store, runtime};
use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{ok, rsm};

#[test]
fn ls_verify_and_fetch_read_aiven_segments_beside_ours() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let key = data.join("aiven/key1-private.pem");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    std::fs::create_dir(&root).unwrap();
    let url = format!("file://{}", root.display());
    let store = Store::open(&url, &BTreeMap::new()).unwrap();
    let mut pairs = AivenKeyPairs::default();
    pairs.add_pem("key1", &std::fs::read_to_string(&key).unwrap(), "test").unwrap();
    let spec = AivenWriteSpec {
        key_prefix: "aiven/".into(),
        chunk_size: 4096,
        compression: true,
        encryption: Some(("key1".into(), pairs)),
        custom_metadata: true,
    };
    // Aiven's: every closed segment of codecs-0; ours: legacy-0's, copied by `rsm copy`.
    let codecs = LocalPartition::open(&data.join("records/codecs-0")).unwrap();
    let mut aiven = Vec::new();
    for s in codecs.closed_segments() {
        let md = codecs.segment_metadata(s, 0, 1_700_000_000_000).unwrap();
        let backend = store.storage().backend().clone();
        runtime().block_on(write_aiven_segment(&*backend, &md, &codecs.segment_data(s).unwrap(), &spec)).unwrap();
        aiven.push((md, s.log.clone()));
    }
    let legacy = data.join("records/legacy-0");
    ok(&["copy", "--dir", legacy.to_str().unwrap(), "--store", &url]);

    let key_file = format!("aiven.encryption.key.pairs.key1.private.key.file={}", key.display());
    let settings = [
        "--set",
        "aiven.read.enabled=true",
        "--set",
        "aiven.key.prefix=aiven/",
        "--set",
        "aiven.encryption.key.pairs=key1",
        "--set",
        &key_file,
    ];
    let with = |args: &[&str]| -> Vec<String> { args.iter().chain(&settings).map(|s| s.to_string()).collect() };
    let run = |args: &[&str]| ok(&with(args).iter().map(String::as_str).collect::<Vec<_>>());

    // ls: ours and Aiven's, in the totals; JSON says which is which.
    let table = run(&["ls", "--store", &url]);
    for (md, _) in &aiven {
        let id = md.remote_log_segment_id.id.to_string();
        let line = table.lines().find(|l| l.contains(&id)).unwrap_or_else(|| panic!("{id} not listed:\n{table}"));
        assert!(line.contains("(Aiven's, compressed, encrypted)"), "{line}");
    }
    let ours = LocalPartition::open(&legacy).unwrap().closed_segments().len();
    assert!(table.contains(&format!("total: {} segments", aiven.len() + ours)), "{table}");
    let doc: serde_json::Value = serde_json::from_str(&run(&["ls", "--store", &url, "--json"])).unwrap();
    let formats: Vec<&str> = doc["segments"].as_array().unwrap().iter().filter_map(|s| s["format"].as_str()).collect();
    assert_eq!(formats.len(), aiven.len());
    // Without the setting, they are not ours to list (and not leftovers either).
    let plain = ok(&["ls", "--store", &url]);
    assert!(plain.contains(&format!("total: {ours} segments")), "{plain}");

    // verify: every segment read whole and checked.
    let verified = run(&["verify", "--store", &url]);
    assert!(verified.contains(&format!("verified {} segments", aiven.len() + ours)), "{verified}");

    // fetch: whole, from an offset, an index; each compared with the source.
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    for (md, log) in &aiven {
        let id = md.remote_log_segment_id.id.to_string();
        run(&["fetch", "--store", &url, "--segment", &id, "-o", o]);
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(log).unwrap(), "{id}");
        std::fs::remove_file(&out).unwrap();
        let index = log.with_extension("index");
        run(&["fetch", "--store", &url, "--segment", &id, "--index", "OFFSET", "-o", o]);
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(index).unwrap(), "{id}");
        std::fs::remove_file(&out).unwrap();
        run(&["fetch", "--store", &url, "--segment", &id, "--offset", &md.end_offset.to_string(), "-o", o]);
        let tail = std::fs::read(&out).unwrap();
        let whole = std::fs::read(log).unwrap();
        assert!(!tail.is_empty() && whole.ends_with(&tail) && tail.len() < whole.len(), "{id}");
        std::fs::remove_file(&out).unwrap();
    }

    // A damaged Aiven log fails verify, naming the segment; the others still verify.
    let (md, _) = &aiven[1];
    let log = root.join(AivenKeys::of("aiven/", md, None).log);
    let mut bytes = std::fs::read(&log).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&log, bytes).unwrap();
    let failed = rsm(&with(&["verify", "--store", &url]).iter().map(String::as_str).collect::<Vec<_>>());
    let stdout = String::from_utf8_lossy(&failed.stdout);
    let id = md.remote_log_segment_id.id.to_string();
    assert!(!failed.status.success(), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("FAILED") && l.contains(&id) && l.contains("AES-GCM")), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("ok")).count(), aiven.len() + ours - 1, "{stdout}");
}
