//! `rsm read` against an independent writer and decoder: the partitions of `tests/data/records/` were
//! written by kafka-python's record builders (every codec, legacy v0/v1 wrappers with create and
//! log-append time, transactional producers with commits and aborts, keys, null values and headers) and
//! their expected records read back by kafka-python's own reader, one JSON object a line per isolation
//! level (`tools/record-fixtures.py`). Each partition is tiered with `rsm tier`; then `rsm read --json`
//! must print exactly the expected records of the copied segments, whole and from a sample of offsets,
//! under `read_uncommitted` and `read_committed`.

mod common;
use common::ok;
use serde_json::Value;
use std::path::{Path, PathBuf};

const PARTITIONS: &[&str] = &["codecs-0", "legacy-0", "txn-0"];
const LEVELS: &[&str] = &["read_uncommitted", "read_committed"];

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/records")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// The base offset of the active (last) segment: records from it on are not tiered.
fn active_base(dir: &Path) -> i64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".log")?.parse::<i64>().ok())
        .max()
        .unwrap()
}

fn lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

struct Tiered {
    _t: tempfile::TempDir,
    dir: String,
    args: Vec<String>,
    /// Offsets below it were copied.
    remote_end: i64,
}

fn tiered(name: &str) -> Tiered {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join(name);
    copy_dir(&data().join(name), &dir);
    std::fs::create_dir(t.path().join("store")).unwrap();
    let args = vec![
        "--store".to_string(),
        format!("file://{}", t.path().join("store").display()),
        "--metadata-dir".to_string(),
        t.path().join("metadata").display().to_string(),
    ];
    let dir_s = dir.display().to_string();
    let mut a = vec!["tier", dir_s.as_str(), "--set", "retention.ms=-1"];
    a.extend(args.iter().map(String::as_str));
    let out = ok(&a);
    assert!(out.contains("copied"), "{out}");
    let remote_end = active_base(&dir);
    Tiered { _t: t, dir: dir_s, args, remote_end }
}

impl Tiered {
    fn read(&self, offset: i64, level: &str, max: usize) -> Vec<Value> {
        let (o, m) = (offset.to_string(), max.to_string());
        let mut a = vec!["read", &self.dir, "--offset", &o, "--isolation", level, "--max-records", &m, "--json"];
        a.extend(self.args.iter().map(String::as_str));
        lines(&ok(&a))
    }
}

#[test]
fn rsm_read_matches_kafka_python_for_every_codec_format_and_isolation_level() {
    for name in PARTITIONS {
        let p = tiered(name);
        for level in LEVELS {
            let file = data().join(format!("{name}.{level}.jsonl"));
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let expected: Vec<Value> =
                lines(&text).into_iter().filter(|r| r["offset"].as_i64().unwrap() < p.remote_end).collect();
            assert!(expected.len() > 50, "{name} {level}: only {} expected records", expected.len());
            let first = expected[0]["offset"].as_i64().unwrap();
            // The whole remote log at once, in offset order.
            let got = p.read(first, level, expected.len() + 100);
            assert_eq!(got.len(), expected.len(), "{name} {level}: record count");
            for (g, e) in got.iter().zip(&expected) {
                assert_eq!(g, e, "{name} {level}");
            }
            // From a sample of offsets (inside compressed batches and wrappers, on aborted records,
            // on control records), a few records each: the expected ones at or after it.
            for offset in (first..p.remote_end).step_by(7) {
                let got = p.read(offset, level, 3);
                let want: Vec<&Value> =
                    expected.iter().filter(|r| r["offset"].as_i64().unwrap() >= offset).take(3).collect();
                assert_eq!(got.iter().collect::<Vec<_>>(), want, "{name} {level} from offset {offset}");
            }
        }
    }
}
