//! What the tests over the kafka-python legacy segments share (`tests/data/legacy`, written by
//! `tools/legacy-segments.py`): the cases, and each batch as kafka-python read it (`<name>.batches`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The legacy segments, by name.
pub const CASES: &[&str] = &[
    "v0-none",
    "v0-gzip",
    "v0-snappy",
    "v0-lz4",
    "v1-none",
    "v1-gzip",
    "v1-snappy",
    "v1-lz4",
    "v1-gzip-log-append-time",
    "mixed-v0-v1-v2",
];

/// One batch as kafka-python read it: a line of `<name>.batches`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    pub position: u64,
    pub size: usize,
    pub magic: u8,
    pub offset_field: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub records: i32,
    pub max_timestamp: i64,
    pub compression: u8,
}

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/legacy")
}

/// The batches of segment `name` as kafka-python read them.
pub fn expected(name: &str) -> Vec<Expected> {
    let text = std::fs::read_to_string(data_dir().join(format!("{name}.batches"))).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<i64> = l.split(' ').map(|v| v.parse().unwrap()).collect();
            Expected {
                position: f[0] as u64,
                size: f[1] as usize,
                magic: f[2] as u8,
                offset_field: f[3],
                first_offset: f[4],
                last_offset: f[5],
                records: f[6] as i32,
                max_timestamp: f[7],
                compression: f[8] as u8,
            }
        })
        .collect()
}

/// The `.log` bytes of segment `name`.
pub fn log(name: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(format!("{name}.log"))).unwrap()
}
