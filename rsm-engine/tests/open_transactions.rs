//! The last stable offset a partition directory shows (`LocalLog::first_open_transaction`), against the
//! producer state the writer of `tests/data/records/txn-0` stored beside it: at each segment roll the broker
//! side writes a producer snapshot (`<base>.snapshot`, version 1) whose entries keep each producer's
//! `currentTxnFirstOffset`, the first offset of its transaction still open at that offset (-1 when none).
//! The earliest of them is Kafka's last stable offset there; the log cut at that offset must show the same.

use rsm_engine::local_log::LocalLog;
use std::path::{Path, PathBuf};

fn txn0() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/records/txn-0")
}

/// The open transactions' first offsets a producer snapshot file keeps (version 1: version i16, crc u32,
/// count i32, then 46-byte entries ending with currentTxnFirstOffset i64).
fn snapshot_open_firsts(bytes: &[u8]) -> Vec<i64> {
    assert_eq!(i16::from_be_bytes([bytes[0], bytes[1]]), 1, "snapshot version");
    let count = i32::from_be_bytes(bytes[6..10].try_into().unwrap()) as usize;
    assert_eq!(bytes.len(), 10 + 46 * count, "snapshot length");
    let mut out: Vec<i64> = (0..count)
        .map(|i| i64::from_be_bytes(bytes[10 + 46 * i + 38..10 + 46 * (i + 1)].try_into().unwrap()))
        .filter(|&o| o >= 0)
        .collect();
    out.sort();
    out
}

/// A copy of txn-0 holding only the segments below `base`, the last of them made the active one: the log as
/// it stood when the broker rolled to `base`.
fn cut_at(base: i64, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(txn0()).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let keep = match name.split('.').next().unwrap().parse::<i64>() {
            Ok(b) => b < base && !name.ends_with(".snapshot"),
            Err(_) => true,
        };
        if keep {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

#[test]
fn the_first_open_transaction_matches_the_producer_snapshots() {
    let mut bases: Vec<i64> = std::fs::read_dir(txn0())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".snapshot")?.parse().ok())
        .collect();
    bases.sort();
    assert!(bases.len() >= 5, "txn-0's snapshots: {bases:?}");
    let t = tempfile::tempdir().unwrap();
    let mut open_somewhere = 0;
    for base in bases {
        let want = snapshot_open_firsts(&std::fs::read(txn0().join(format!("{base:020}.snapshot"))).unwrap());
        let dir = t.path().join(format!("txn-{base}"));
        cut_at(base, &dir);
        let log = LocalLog::open_read_only(&dir).unwrap();
        let got = log.first_open_transaction(0).unwrap();
        assert_eq!(got, want.first().copied(), "at the roll to {base}: snapshot says {want:?}");
        open_somewhere += usize::from(got.is_some());
    }
    assert!(open_somewhere > 0, "no snapshot of txn-0 has an open transaction: the test compares nothing open");
}
