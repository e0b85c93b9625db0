//! What the CLI's test files share: running the built `rsm` binary, and listing a store's files.
// Each test file uses its own subset.
#![allow(dead_code)]

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
