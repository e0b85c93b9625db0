//! The fixture, parsed independently of the code under test: the original segment files and the records a
//! consumer reads from them (`.jsonl`).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One v2 record batch of an original segment file.
#[derive(Clone, Debug)]
pub(super) struct Batch {
    pub(super) pos: usize,
    pub(super) end: usize,
    pub(super) first: i64,
    pub(super) last: i64,
    pub(super) max_ts: i64,
}

/// One original segment.
pub(super) struct Segment {
    pub(super) base: i64,
    /// One past its last offset (the next segment's base offset).
    pub(super) next: i64,
    pub(super) log: Vec<u8>,
    pub(super) batches: Vec<Batch>,
    pub(super) max_ts: i64,
}

/// A partition as kafka-python wrote it, and what a consumer reads from it.
pub(super) struct Fixture {
    pub(super) name: &'static str,
    pub(super) dir: PathBuf,
    pub(super) segments: Vec<Segment>,
    pub(super) records: BTreeMap<i64, Value>,
    pub(super) committed: BTreeMap<i64, Value>,
}

pub(super) fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

pub(super) fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

pub(super) fn parse_batches(log: &[u8]) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 61 <= log.len() {
        let first = be_i64(log, pos);
        let len = be_i32(log, pos + 8) as usize;
        assert_eq!(log[pos + 16], 2, "the fixtures hold v2 batches only");
        let last = first + be_i32(log, pos + 23) as i64;
        let max_ts = be_i64(log, pos + 35);
        out.push(Batch { pos, end: pos + 12 + len, first, last, max_ts });
        pos += 12 + len;
    }
    assert_eq!(pos, log.len(), "whole batches");
    out
}

pub(super) fn jsonl(path: &Path) -> BTreeMap<i64, Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["offset"].as_i64().unwrap(), v)
        })
        .collect()
}

impl Fixture {
    pub(super) fn load(name: &'static str) -> Fixture {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/records");
        let dir = data.join(name);
        let mut bases: Vec<i64> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".log")?.parse().ok())
            .collect();
        bases.sort();
        let mut segments: Vec<Segment> = bases
            .iter()
            .map(|&base| {
                let log = std::fs::read(dir.join(format!("{base:020}.log"))).unwrap();
                let batches = parse_batches(&log);
                let next = batches.last().unwrap().last + 1;
                let max_ts = batches.iter().map(|b| b.max_ts).max().unwrap();
                Segment { base, next, log, batches, max_ts }
            })
            .collect();
        for i in 0..segments.len() - 1 {
            assert_eq!(segments[i].next, segments[i + 1].base, "{name}: gapless offsets");
            segments[i].next = segments[i + 1].base;
        }
        let records = jsonl(&data.join(format!("{name}.read_uncommitted.jsonl")));
        let committed = jsonl(&data.join(format!("{name}.read_committed.jsonl")));
        Fixture { name, dir, segments, records, committed }
    }

    pub(super) fn active_base(&self) -> i64 {
        self.segments.last().unwrap().base
    }

    pub(super) fn closed(&self) -> &[Segment] {
        &self.segments[..self.segments.len() - 1]
    }

    /// The original range `[start, next)` of the segment starting at `start` (a remote segment is a copy of
    /// one, perhaps truncated).
    pub(super) fn range_from(&self, start: i64) -> (i64, i64) {
        let next = self.segments.iter().find(|s| s.base > start).map_or(self.active_base(), |s| s.base);
        (start, next)
    }

    pub(super) fn segment_of(&self, offset: i64) -> Option<&Segment> {
        self.segments.iter().find(|s| s.base <= offset && offset < s.next)
    }

    /// Record offsets in `[a, b)`.
    pub(super) fn records_in(&self, a: i64, b: i64) -> impl Iterator<Item = i64> + '_ {
        self.records.range(a..b).map(|(o, _)| *o)
    }
}
