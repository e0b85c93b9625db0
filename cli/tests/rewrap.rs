//! `rsm rewrap`: segments copied encrypted under key k1 are rewrapped under k2 by rewriting manifests only;
//! afterwards k1 can leave the keyring and everything reads; a rerun rewraps nothing; a key the keyring lacks
//! is an error naming it.

mod common;
use common::{files, ok, rsm};
use rsm_core::format::writer::{PartitionSpec, generate_partition};
use rsm_core::model::Uuid;

#[test]
fn rewrap_moves_every_segment_to_the_new_key_and_the_old_one_can_go() {
    let t = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 64 * 1024,
        records: 4_000,
        records_per_batch: 10,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 3,
    };
    let dir = generate_partition(&t.path().join("secret-0"), &spec).unwrap();
    std::fs::create_dir(t.path().join("store")).unwrap();
    let store = format!("file://{}", t.path().join("store").display());
    let key = |id: &str, byte: u8| {
        let p = t.path().join(format!("{id}.key"));
        std::fs::write(&p, format!("{byte:02x}").repeat(32)).unwrap();
        format!("encryption.key.{id}.file={}", p.display())
    };
    let (k1, k2) = (key("k1", 0x11), key("k2", 0x22));
    let with = |extra: &[&str]| -> Vec<String> {
        let mut v = vec!["--store".to_string(), store.clone()];
        for s in extra {
            v.push("--set".into());
            v.push(s.to_string());
        }
        v
    };
    let run = |cmd: &[&str], extra: &[&str]| {
        let mut a: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        a.extend(with(extra));
        rsm(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let dir_s = dir.display().to_string();
    let copy = run(
        &["copy", "--dir", &dir_s],
        &["encryption.enabled=true", "encryption.key.id=k1", "encryption.keys=k1", &k1],
    );
    assert!(copy.status.success(), "{}", String::from_utf8_lossy(&copy.stderr));
    let segments = ok(&["ls", "--store", &store]).lines().filter(|l| l.contains("secret-0")).count();
    assert!(segments >= 3);
    let logs_before: Vec<(std::path::PathBuf, Vec<u8>)> = files(&t.path().join("store"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();

    // A key the keyring lacks: an error naming it, nothing rewritten.
    let out = run(&["rewrap", "--key", "k3"], &["encryption.keys=k1,k2", &k1, &k2]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("k3"), "{}", String::from_utf8_lossy(&out.stderr));

    let out = run(&["rewrap", "--key", "k2"], &["encryption.keys=k1,k2", &k1, &k2]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("rewrapped {segments} segments under k2; 0 were under it already")), "{text}");
    for (p, bytes) in &logs_before {
        assert_eq!(&std::fs::read(p).unwrap(), bytes, "{}: data rewritten", p.display());
    }
    let again = run(&["rewrap", "--key", "k2"], &["encryption.keys=k1,k2", &k1, &k2]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains(&format!("rewrapped 0 segments under k2; {segments} were under it already")), "{text}");

    // k1 leaves the keyring: everything still reads, checked against the local files.
    let verify = run(&["verify", "--dir", &dir_s], &["encryption.keys=k2", &k2]);
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    // And without k2 nothing reads: the data really is under k2.
    let verify = run(&["verify"], &["encryption.keys=k1", &k1]);
    assert!(!verify.status.success());
}
