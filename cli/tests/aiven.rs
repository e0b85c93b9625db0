//! `rsm ls`, `verify`, `fetch`, `rebuild-metadata` and `read` over segments Aiven's plugin stored (`aiven.read.enabled`), beside ours in
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
fn the_operator_commands_read_aiven_segments_beside_ours() {
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
    // Each line says how a segment was checked: Aiven's (encrypted here) by their tags, ours as always.
    let by_tag = verified.lines().filter(|l| l.starts_with("ok\t") && l.ends_with("by its AES-GCM tag")).count();
    assert_eq!(by_tag, aiven.len(), "{verified}");

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

    // rebuild-metadata names them too, and read decodes their records through the engine, from a partition
    // directory whose closed segments local retention removed: exactly what a consumer reads (the jsonl).
    let md_dir = tmp.path().join("md");
    let rebuilt = run(&["rebuild-metadata", "--store", &url, "--metadata-dir", md_dir.to_str().unwrap()]);
    assert!(rebuilt.contains(&format!("with {} segments", aiven.len() + ours)), "{rebuilt}");
    let local = tmp.path().join("codecs-0");
    std::fs::create_dir(&local).unwrap();
    for e in std::fs::read_dir(data.join("records/codecs-0")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let closed = aiven.iter().any(|(m, _)| name.starts_with(&format!("{:020}.", m.start_offset)));
        if !closed {
            std::fs::copy(e.path(), local.join(&name)).unwrap();
        }
    }
    let end = aiven.last().unwrap().0.end_offset;
    let read = run(&[
        "read",
        local.to_str().unwrap(),
        "--store",
        &url,
        "--metadata-dir",
        md_dir.to_str().unwrap(),
        "--offset",
        "0",
        "--max-records",
        "100000",
        "--json",
    ]);
    let want: Vec<serde_json::Value> = std::fs::read_to_string(data.join("records/codecs-0.read_uncommitted.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["offset"].as_i64().unwrap() <= end)
        .collect();
    let got: Vec<serde_json::Value> = read
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["offset"].as_i64().unwrap() <= end)
        .collect();
    assert!(want.len() > 500);
    assert_eq!(got, want, "rsm read over Aiven's segments");

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

/// `rsm migrate` killed (SIGKILL) at random moments, at least 30 times over several stores (10 of them with
/// some segments moved and some not): after each kill
/// every segment reads back whole and exact (in one format or the other) through the metadata Kafka holds for
/// it (Aiven's custom metadata included); a run left alone finishes, and then each segment is in our format
/// only, and nothing is left for an orphan sweep. Both ways ours can be written: under another prefix (ours
/// split, Aiven's objects deleted after), and under the same prefix (ours as one `.segment` object, so no
/// object of Aiven's is overwritten while its manifest names it).
#[test]
fn migrate_killed_anywhere_leaves_every_segment_readable() {
    use common::Rng;
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let key = data.join("aiven/key1-private.pem");
    let key_file = format!("aiven.encryption.key.pairs.key1.private.key.file={}", key.display());
    let mut rng = Rng::new(std::env::var("RSM_MIGRATE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(42));
    let (mut kills, mut rounds, mut midway) = (0, 0, 0);
    while kills < 30 || midway < 10 || rounds < 4 {
        rounds += 1;
        let same_prefix = rounds % 2 == 0;
        let (ours, theirs) = if same_prefix { ("shared/", "shared/") } else { ("ours/", "old/") };
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("store");
        std::fs::create_dir(&root).unwrap();
        let url = format!("file://{}", root.display());
        let settings: BTreeMap<String, String> = [
            ("aiven.read.enabled", "true".to_string()),
            ("aiven.key.prefix", theirs.into()),
            ("aiven.encryption.key.pairs", "key1".into()),
            ("aiven.encryption.key.pairs.key1.private.key.file", key.display().to_string()),
            ("key.prefix", ours.into()),
            ("chunk.size", "65536".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let store = Store::open(&url, &settings).unwrap();
        let mut pairs = AivenKeyPairs::default();
        pairs.add_pem("key1", &std::fs::read_to_string(&key).unwrap(), "test").unwrap();
        let spec = AivenWriteSpec {
            key_prefix: theirs.into(),
            chunk_size: 4096,
            compression: rounds % 3 != 0,
            encryption: (rounds % 4 < 2).then(|| ("key1".to_string(), pairs)),
            custom_metadata: rounds % 2 == 1,
        };
        // The segments as Kafka's metadata holds them, and their source logs.
        let mut segments = Vec::new();
        for name in ["codecs-0", "txn-0"] {
            let p = LocalPartition::open(&data.join("records").join(name)).unwrap();
            for s in p.closed_segments() {
                let mut md = p.segment_metadata(s, 0, 1_700_000_000_000).unwrap();
                let backend = store.storage().backend().clone();
                let files = p.segment_data(s).unwrap();
                md.custom_metadata = runtime().block_on(write_aiven_segment(&*backend, &md, &files, &spec)).unwrap();
                segments.push((md, std::fs::read(&s.log).unwrap()));
            }
        }
        let args = [
            "migrate",
            "--store",
            &url,
            "--set",
            "aiven.read.enabled=true",
            "--set",
            &format!("aiven.key.prefix={theirs}"),
            "--set",
            "aiven.encryption.key.pairs=key1",
            "--set",
            &key_file,
            "--set",
            &format!("key.prefix={ours}"),
        ];
        // Each segment whole and exact, read through a store opened afresh (no cache from before).
        let all_readable = |when: &str| {
            let fresh = Store::open(&url, &settings).unwrap();
            for (md, log) in &segments {
                let mut got = Vec::new();
                let read = fresh.fetch(md, 0, None).and_then(|mut r| {
                    std::io::Read::read_to_end(&mut r, &mut got).map_err(|e| rsm_core::Error::corrupt(e.to_string()))
                });
                assert!(
                    read.is_ok() && &got == log,
                    "{when}: segment {} unreadable: {read:?}",
                    md.remote_log_segment_id
                );
            }
        };
        let mut est = std::time::Duration::from_millis(300);
        loop {
            let started = std::time::Instant::now();
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rsm"))
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_micros(rng.below(est.as_micros() as u64 + 1)));
            let killed = child.try_wait().unwrap().is_none() && child.kill().is_ok();
            let status = child.wait().unwrap();
            if !killed {
                assert!(status.success(), "round {rounds}: migrate failed: {status:?}");
                est = started.elapsed();
                break;
            }
            kills += 1;
            all_readable(&format!("round {rounds}, after kill {kills}"));
            let fresh = Store::open(&url, &settings).unwrap();
            let moved = segments.iter().filter(|(md, _)| fresh.manifest(md).is_ok()).count();
            if moved > 0 && moved < segments.len() {
                midway += 1;
            }
        }
        // Once more: nothing left to do; every segment ours only, nothing for a sweep.
        let again = ok(&args);
        assert!(again.contains("migrated 0 segments"), "{again}");
        all_readable(&format!("round {rounds}, at the end"));
        for (md, _) in &segments {
            assert!(store.manifest(md).is_ok(), "round {rounds}: {} is not ours", md.remote_log_segment_id);
            for k in AivenKeys::of(theirs, md, None).all() {
                assert!(!root.join(&k).exists(), "round {rounds}: Aiven's {k} is left beside ours");
            }
        }
        let orphans = store.orphans(None, std::time::Duration::ZERO).unwrap();
        assert!(orphans.is_empty(), "round {rounds}: {:?}", orphans.keys());
    }
    eprintln!("migrate: {kills} kills ({midway} with some segments moved and some not) in {rounds} rounds");
}
