//! What the CLI's test files share: running the built `rsm` binary, and listing a store's files.
// Each test file uses its own subset.
#![allow(dead_code)]

pub mod tiering;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the built `rsm` with `args`.
pub fn rsm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rsm")).args(args).output().expect("run rsm")
}

/// Runs `rsm args`, which must succeed; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = rsm(args);
    assert!(out.status.success(), "rsm {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Every file under `dir`, sorted.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(files(&p)) } else { out.push(p) }
    }
    out.sort();
    out
}

/// A small xorshift generator: spread-out choices and delays, not cryptographic randomness.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Mix the seed so that neighbouring seeds start far apart (and 0 is not a fixed point).
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03);
        for _ in 0..8 {
            r.next();
        }
        r
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True with probability `pct` percent.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len() as u64) as usize]
    }
}
