//! `rsm rewrap`: segments copied encrypted under key k1 are rewrapped under k2 by rewriting manifests only;
//! afterwards k1 can leave the keyring and everything reads; a rerun rewraps nothing; a key the keyring lacks
//! is an error naming it; a rewrap killed with SIGKILL halfway leaves every manifest whole under one key or
//! the other, and a rerun finishes it; a rewrap moves segments between a key file and an AWS KMS key (moto) both ways.

mod common;
use common::{files, ok, rsm};
use rsm_core::model::Uuid;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

/// A partition of encrypted segments copied under k1 to a filesystem store, and the key files k1 and k2.
struct Setup {
    t: tempfile::TempDir,
    dir: String,
    store: String,
    k1: String,
    k2: String,
    segments: usize,
}

impl Setup {
    fn new(segment_bytes: usize, records: u64) -> Self {
        let t = tempfile::tempdir().unwrap();
        let spec = PartitionSpec {
            topic_id: Uuid::random(),
            segment_bytes,
            records,
            records_per_batch: 10,
            value_bytes: 100,
            first_timestamp: 1_700_000_000_000,
            epoch_every_batches: 0,
            seed: 3,
            compression: None,
        };
        let dir = generate_partition(&t.path().join("secret-0"), &spec).unwrap().display().to_string();
        std::fs::create_dir(t.path().join("store")).unwrap();
        let store = format!("file://{}", t.path().join("store").display());
        let key = |id: &str, byte: u8| {
            let p = t.path().join(format!("{id}.key"));
            std::fs::write(&p, format!("{byte:02x}").repeat(32)).unwrap();
            format!("encryption.key.{id}.file={}", p.display())
        };
        let (k1, k2) = (key("k1", 0x11), key("k2", 0x22));
        let mut s = Setup { t, dir, store, k1, k2, segments: 0 };
        let k1 = s.k1.clone();
        let copy = s.run(
            &["copy", "--dir", &s.dir.clone()],
            &["encryption.enabled=true", "encryption.key.id=k1", "encryption.keys=k1", &k1],
        );
        assert!(copy.status.success(), "{}", String::from_utf8_lossy(&copy.stderr));
        s.segments = ok(&["ls", "--store", &s.store]).lines().filter(|l| l.contains("secret-0")).count();
        s
    }

    /// `cmd` on the store with `--set` for each of `extra`.
    fn args(&self, cmd: &[&str], extra: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        v.extend(["--store".to_string(), self.store.clone()]);
        for s in extra {
            v.push("--set".into());
            v.push(s.to_string());
        }
        v
    }

    fn run(&self, cmd: &[&str], extra: &[&str]) -> std::process::Output {
        let a = self.args(cmd, extra);
        rsm(&a.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// The key id each segment's manifest is wrapped under, read with both keys (every manifest must decode).
    fn key_ids(&self) -> BTreeMap<String, usize> {
        let file = |k: &str| k.split_once('=').unwrap().1.to_string();
        let settings = BTreeMap::from([
            ("encryption.keys".to_string(), "k1,k2".to_string()),
            ("encryption.key.k1.file".to_string(), file(&self.k1)),
            ("encryption.key.k2.file".to_string(), file(&self.k2)),
        ]);
        let store = rsm_facade::Store::open(&self.store, &settings).unwrap();
        let mut by_key = BTreeMap::new();
        for s in store.scan_segments(None).unwrap() {
            let m = s.manifest.unwrap_or_else(|e| panic!("{}: {e}", s.manifest_key));
            assert!(s.missing.is_empty(), "{} lacks {:?}", s.manifest_key, s.missing);
            *by_key.entry(m.encryption.expect("encrypted").kek_id).or_insert(0) += 1;
        }
        by_key
    }
}

#[test]
fn rewrap_moves_every_segment_to_the_new_key_and_the_old_one_can_go() {
    let su = Setup::new(64 * 1024, 4_000);
    let (t, dir_s, k1, k2, segments) = (&su.t, &su.dir, &su.k1, &su.k2, su.segments);
    assert!(segments >= 3);
    let run = |cmd: &[&str], extra: &[&str]| su.run(cmd, extra);
    let logs_before: Vec<(std::path::PathBuf, Vec<u8>)> = files(&t.path().join("store"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();

    // A key the keyring lacks: an error naming it, nothing rewritten.
    let out = run(&["rewrap", "--key", "k3"], &["encryption.keys=k1,k2", k1, k2]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("k3"), "{}", String::from_utf8_lossy(&out.stderr));

    let out = run(&["rewrap", "--key", "k2"], &["encryption.keys=k1,k2", k1, k2]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("rewrapped {segments} segments under k2; 0 were under it already")), "{text}");
    for (p, bytes) in &logs_before {
        assert_eq!(&std::fs::read(p).unwrap(), bytes, "{}: data rewritten", p.display());
    }
    let again = run(&["rewrap", "--key", "k2"], &["encryption.keys=k1,k2", k1, k2]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains(&format!("rewrapped 0 segments under k2; {segments} were under it already")), "{text}");

    // k1 leaves the keyring: everything still reads, checked against the local files.
    let verify = run(&["verify", "--dir", dir_s], &["encryption.keys=k2", k2]);
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    // And without k2 nothing reads: the data really is under k2. That is a key missing from this run's
    // settings, reported as segments that cannot be checked, not as damage.
    let verify = run(&["verify"], &["encryption.keys=k1", k1]);
    assert!(!verify.status.success());
    let text = String::from_utf8_lossy(&verify.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with("UNVERIFIED\t")).count(), segments, "{text}");
    assert!(
        !text.contains("FAILED")
            && text.contains(&format!("0 damaged or incomplete, 0 missing, {segments} cannot be checked")),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&verify.stderr).contains("cannot be checked without a key"), "{text}");
}

#[test]
fn rewrap_killed_halfway_leaves_whole_manifests_and_a_rerun_finishes() {
    let su = Setup::new(8 * 1024, 7_000);
    let n = su.segments;
    assert!(n >= 80, "{n} segments");
    let keys = ["encryption.keys=k1,k2", su.k1.as_str(), su.k2.as_str()];
    let mut child = Command::new(env!("CARGO_BIN_EXE_rsm"))
        .args(su.args(&["rewrap", "--key", "k2"], &keys))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    // A pipe of one page: once this test stops reading, the child blocks within a few dozen segments, so the
    // kill lands halfway however fast the machine.
    let page = unsafe { libc::fcntl(out.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(page >= 4096, "F_SETPIPE_SZ: {}", std::io::Error::last_os_error());
    let mut lines = std::io::BufReader::new(out).lines();
    let seen = 5;
    for _ in 0..seen {
        let l = lines.next().expect("a progress line").unwrap();
        assert!(l.starts_with("rewrapped ") && l.contains(".manifest ("), "{l}");
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());

    // Every manifest decodes, under k1 or k2; the run stopped partway.
    let by_key = su.key_ids();
    let done = by_key.get("k2").copied().unwrap_or(0);
    assert!(done >= seen && done < n, "{done} of {n} under k2 after the kill: {by_key:?}");
    assert_eq!(by_key.values().sum::<usize>(), n, "{by_key:?}");

    // What a kill during a manifest's rewrite leaves (whether this kill did or not): a temporary file beside
    // a committed manifest.
    let store_dir = su.t.path().join("store");
    let manifest = common::files(&store_dir).into_iter().find(|f| f.to_string_lossy().ends_with(".manifest")).unwrap();
    let name = manifest.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(manifest.with_file_name(format!(".rsm-tmp-{name}.killed")), b"half a manifest").unwrap();
    let temporary = |d: &std::path::Path| {
        common::files(d).into_iter().filter(|f| f.to_string_lossy().contains(".rsm-tmp-")).count()
    };
    let left = temporary(&store_dir);
    assert!(left >= 1);

    let again = su.run(&["rewrap", "--key", "k2"], &keys);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{text}{}", String::from_utf8_lossy(&again.stderr));
    assert!(
        text.contains(&format!("rewrapped {} segments under k2; {done} were under it already", n - done)),
        "{text}"
    );
    assert!(text.contains(&format!("removed {left} temporary manifests")), "{text}");
    assert_eq!(temporary(&store_dir), 0, "the rerun left temporary manifests");
    assert_eq!(su.key_ids(), BTreeMap::from([("k2".to_string(), n)]));

    // k1 leaves the keyring: every segment verifies against the local files.
    let verify = su.run(&["verify", "--dir", &su.dir], &["encryption.keys=k2", &su.k2]);
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// Between providers: segments under the key file k1 are rewrapped under an AWS KMS key (moto's KMS), k1
/// leaves and everything verifies; then back under the key file k2, the KMS key leaves and everything
/// verifies again. Needs moto (`eval "$(tools/servers/moto.sh start)"`), unless `RSM_SKIP_S3=1` outside CI.
#[test]
fn rewrap_moves_segments_from_a_key_file_to_a_kms_key_and_back() {
    let vars = ["RSM_TEST_S3_ENDPOINT", "RSM_TEST_S3_REGION"];
    let how = "eval \"$(tools/servers/moto.sh start)\"";
    let Some(v) = rsm_core::testkit::test_server_vars(&vars, "RSM_SKIP_S3", how) else { return };
    let endpoint = v["RSM_TEST_S3_ENDPOINT"].trim_end_matches('/').to_string();
    let kms_key = rsm_core::testkit::kms_test_key(&endpoint);
    let kms = [
        format!("encryption.key.kv.kms.key.id={kms_key}"),
        format!("encryption.kms.endpoint={endpoint}"),
        format!("encryption.kms.region={}", v["RSM_TEST_S3_REGION"]),
        "encryption.kms.access.key.id=rsm-test".to_string(),
        "encryption.kms.secret.access.key=rsm-test-secret".to_string(),
    ];
    let su = Setup::new(64 * 1024, 4_000);
    let n = su.segments;
    assert!(n >= 3);
    let with = |extra: &[&str]| -> Vec<String> { extra.iter().map(|s| s.to_string()).chain(kms.clone()).collect() };
    let run = |cmd: &[&str], settings: &[String]| {
        let out = su.run(cmd, &settings.iter().map(String::as_str).collect::<Vec<_>>());
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "rsm {cmd:?}: {text}");
        text
    };

    let text = run(&["rewrap", "--key", "kv"], &with(&["encryption.keys=k1,kv", &su.k1]));
    assert!(text.contains(&format!("rewrapped {n} segments under kv; 0 were under it already")), "{text}");
    assert_eq!(su.key_ids(), BTreeMap::from([("kv".to_string(), n)]));
    run(&["verify", "--dir", &su.dir], &with(&["encryption.keys=kv"]));

    let text = run(&["rewrap", "--key", "k2"], &with(&["encryption.keys=kv,k2", &su.k2]));
    assert!(text.contains(&format!("rewrapped {n} segments under k2; 0 were under it already")), "{text}");
    assert_eq!(su.key_ids(), BTreeMap::from([("k2".to_string(), n)]));
    run(&["verify", "--dir", &su.dir], &["encryption.keys=k2".to_string(), su.k2.clone()]);
}
