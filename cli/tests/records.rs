//! `rsm read` against an independent writer and decoder: the partitions of `tests/data/records/` were
//! written by kafka-python's record builders (every codec, legacy v0/v1 wrappers with create and
//! log-append time, transactional producers with commits and aborts, keys, null values and headers) and
//! their expected records read back by kafka-python's own reader, one JSON object a line per isolation
//! level (`tools/record-fixtures.py`). Each partition is tiered with `rsm tier`; then `rsm read --json`
//! must print exactly the expected records of the copied segments, whole and from a sample of offsets,
//! under `read_uncommitted` and `read_committed`; and `rsm read --follow` prints the segments tiered while
//! it runs.

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
    tier_in(t, dir)
}

fn tier_in(t: tempfile::TempDir, dir: PathBuf) -> Tiered {
    std::fs::create_dir(t.path().join("store")).unwrap();
    let args = vec![
        "--store".to_string(),
        format!("file://{}", t.path().join("store").display()),
        "--metadata-dir".to_string(),
        t.path().join("metadata").display().to_string(),
    ];
    let dir_s = dir.display().to_string();
    let tiered = Tiered { _t: t, dir: dir_s, args, remote_end: active_base(&dir) };
    tiered.tier();
    tiered
}

impl Tiered {
    fn tier(&self) -> String {
        let mut a = vec!["tier", self.dir.as_str(), "--set", "retention.ms=-1"];
        a.extend(self.args.iter().map(String::as_str));
        let out = ok(&a);
        assert!(out.contains("copied"), "{out}");
        out
    }

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

/// `rsm read --follow` reads to the end of the remote log, waits, and prints what `rsm tier` copies while
/// it waits, in offset order, then stops at `--max-records`.
#[test]
fn rsm_read_follow_prints_segments_tiered_while_it_runs() {
    let name = "codecs-0";
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join(name);
    copy_dir(&data().join(name), &dir);
    // Only the first two segments at first: the rest wait beside the directory.
    let held = t.path().join("held");
    std::fs::create_dir(&held).unwrap();
    let bases = {
        let mut b: Vec<i64> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".log")?.parse().ok())
            .collect();
        b.sort();
        b
    };
    assert!(bases.len() >= 4, "{bases:?}");
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        let base = e.file_name().to_str().and_then(|n| n.split('.').next()?.parse::<i64>().ok());
        if base.is_some_and(|b| b > bases[2]) {
            std::fs::rename(e.path(), held.join(e.file_name())).unwrap();
        }
    }
    let p = tier_in(t, dir.clone());
    assert_eq!(p.remote_end, bases[2]);
    let text = std::fs::read_to_string(data().join(format!("{name}.read_uncommitted.jsonl"))).unwrap();
    let final_end = *bases.last().unwrap();
    let expected: Vec<Value> = lines(&text).into_iter().filter(|r| r["offset"].as_i64().unwrap() < final_end).collect();
    let before = expected.iter().filter(|r| r["offset"].as_i64().unwrap() < bases[2]).count();

    let max = expected.len().to_string();
    let mut args = vec!["read", p.dir.as_str(), "--offset", "0", "--json", "--follow", "--follow-interval-ms", "100"];
    args.extend(["--max-records", &max]);
    args.extend(p.args.iter().map(String::as_str));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rsm"))
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout).lines().map(Result::unwrap).collect::<Vec<String>>()
    });
    // Time for the first round (to the end of what is tiered) and a look or two more; then tier the rest.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(child.try_wait().unwrap().is_none(), "--follow stopped before the rest was tiered");
    for e in std::fs::read_dir(&held).unwrap() {
        let e = e.unwrap();
        std::fs::rename(e.path(), dir.join(e.file_name())).unwrap();
    }
    p.tier();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("--follow did not print the newly tiered records within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let out: Vec<Value> = reader.join().unwrap().iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(status.success(), "{status}");
    assert!(out.len() > before, "only {} records, {before} before the second tier", out.len());
    assert_eq!(out, expected);
}

/// A partition directory whose log ends inside open transactions (txn-0 as it stood at the roll to 764: the
/// segments below it, 614 the active one). The producer snapshot the fixture's writer stored at 764 keeps
/// three transactions open there, the earliest from offset 584 (its producer 4002 writes no marker before
/// 764): that is the last stable offset. `offsets` shows it as Ly, and `tier` copies no segment reaching it,
/// as Kafka copies only segments wholly below the last stable offset: 0, 148 and 304 go, 447 (to 613) stays.
#[test]
fn a_transaction_left_open_holds_back_the_copy_at_the_last_stable_offset() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("txn-0");
    std::fs::create_dir(&dir).unwrap();
    for e in std::fs::read_dir(data().join("txn-0")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        if name.split('.').next().unwrap().parse::<i64>().is_ok_and(|b| b >= 764) {
            continue;
        }
        std::fs::copy(e.path(), dir.join(&name)).unwrap();
    }
    std::fs::create_dir(t.path().join("store")).unwrap();
    let store = format!("file://{}", t.path().join("store").display());
    let meta = t.path().join("metadata").display().to_string();
    let d = dir.display().to_string();
    let out = ok(&["tier", &d, "--set", "retention.ms=-1", "--store", &store, "--metadata-dir", &meta]);
    assert!(out.contains("not stable from offset 447"), "{out}");
    let offsets = ok(&["offsets", &d, "--store", &store, "--metadata-dir", &meta]);
    let row: Vec<&str> = offsets.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[1..4], ["0", "584", "764"], "Lx Ly Lz: {offsets}");

    let ls: Value = serde_json::from_str(&ok(&["ls", "--store", &store, "--json"])).unwrap();
    let mut copied: Vec<(i64, i64)> = ls["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["start_offset"].as_i64().unwrap(), s["end_offset"].as_i64().unwrap()))
        .collect();
    copied.sort();
    assert_eq!(copied, [(0, 147), (148, 303), (304, 446)], "{out}");
}
