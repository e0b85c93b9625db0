//! What the tiering tests share: a partition of 600 records written as Kafka writes it, and a store and
//! metadata directory beside it with `rsm` run on them.

use super::ok;
use rsm_core::model::Uuid;
use rsm_core::testkit::log_writer::{PartitionWriter, Record};
use std::path::Path;

pub const T0: i64 = 1_700_000_000_000;

/// A partition of 600 records in batches of 10, offset `o` with key `k{o}`, value `value-{o}`, a header
/// `n={o}` and timestamp T0 + o.
pub fn partition(dir: &Path) {
    let mut w = PartitionWriter::create(dir, Uuid::random(), 4 * 1024, 1024).unwrap();
    for b in 0..60 {
        let records: Vec<Record> = (0..10)
            .map(|i| {
                let o = b * 10 + i;
                Record {
                    key: Some(format!("k{o}").into_bytes()),
                    value: Some(format!("value-{o}").into_bytes()),
                    headers: vec![("n".to_string(), o.to_string().into_bytes())],
                    timestamp: T0 + o,
                }
            })
            .collect();
        w.append(&records).unwrap();
    }
    w.finish().unwrap();
}

pub struct Setup {
    pub _t: tempfile::TempDir,
    pub dir: String,
    pub args: Vec<String>,
}

impl Setup {
    pub fn new() -> Self {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("orders-0");
        partition(&dir);
        std::fs::create_dir(t.path().join("store")).unwrap();
        let args = vec![
            "--store".to_string(),
            format!("file://{}", t.path().join("store").display()),
            "--metadata-dir".to_string(),
            t.path().join("metadata").display().to_string(),
        ];
        Setup { dir: dir.display().to_string(), args, _t: t }
    }

    pub fn run(&self, cmd: &[&str]) -> String {
        let mut a: Vec<&str> = cmd.to_vec();
        a.extend(self.args.iter().map(String::as_str));
        ok(&a)
    }

    pub fn closed(&self) -> usize {
        std::fs::read_dir(&self.dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".log"))
            .count()
            - 1
    }
}

/// The count of segments copied, from `rsm tier`'s line saying so.
pub fn copied_count(out: &str) -> usize {
    let at = out.find("copied ").unwrap() + 7;
    out[at..].split(' ').next().unwrap().parse().unwrap()
}
