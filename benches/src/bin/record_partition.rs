//! Writes a Kafka partition directory of producer-compressed v2 batches, for `rsm read`'s records-per-second
//! benchmark (benches/README.md): `record_partition DIR CODEC MIB` writes about MIB MiB of `.log` data in
//! 64 MiB segments, batches of 200 records as a producer's 16 KiB batches hold them, each record a key, a
//! JSON-like value of about 200 bytes and one header, compressed with CODEC (gzip, snappy, lz4 or zstd).

use rsm_core::format::records::compression::Codec;
use rsm_core::model::Uuid;
use rsm_core::testkit::log_writer::{BatchOptions, PartitionWriter, Record, Rng};
use std::path::PathBuf;

const RECORDS_PER_BATCH: usize = 200;
const SEGMENT_BYTES: usize = 64 << 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, codec, mib] = args.as_slice() else {
        return Err("usage: record_partition DIR gzip|snappy|lz4|zstd MIB".into());
    };
    let codec = match codec.as_str() {
        "gzip" => Codec::Gzip,
        "snappy" => Codec::Snappy,
        "lz4" => Codec::Lz4,
        "zstd" => Codec::Zstd,
        other => return Err(format!("codec '{other}' is not one of gzip, snappy, lz4, zstd").into()),
    };
    let target = mib.parse::<u64>()? << 20;
    let dir = PathBuf::from(dir);
    let mut w = PartitionWriter::create(&dir, Uuid::random(), SEGMENT_BYTES, 4096)?;
    let options = BatchOptions { compression: Some(codec), ..BatchOptions::default() };
    let words = ["order", "payment", "shipped", "retry", "alpha", "beta", "gamma", "ok", "eu-west", "us-east"];
    let mut rng = Rng::new(7);
    let (mut written, mut records, mut ts) = (0u64, 0u64, 1_700_000_000_000i64);
    while written < target {
        let batch: Vec<Record> = (0..RECORDS_PER_BATCH)
            .map(|_| {
                ts += rng.below(3) as i64;
                let id = rng.below(1_000_000);
                let mut value = format!("{{\"order\":{id},\"qty\":{},\"note\":\"", rng.below(100));
                while value.len() < 190 {
                    value.push_str(words[rng.below(words.len() as u64) as usize]);
                    value.push(' ');
                }
                value.push_str("\"}");
                Record {
                    key: Some(format!("customer-{}", id % 5_000).into_bytes()),
                    value: Some(value.into_bytes()),
                    headers: vec![("trace".to_string(), id.to_le_bytes().to_vec())],
                    timestamp: ts,
                }
            })
            .collect();
        let before = w.next_offset();
        w.append_with(&batch, &options)?;
        records += (w.next_offset() - before) as u64;
        written = dir_bytes(&dir)? + 200 * 64; // the open segment is in memory: count it roughly
        if records % 1_000_000 < RECORDS_PER_BATCH as u64 {
            eprintln!("{records} records, {} MiB on disk", written >> 20);
        }
    }
    // One small active segment: every segment before it is closed, so all are tiered.
    w.roll()?;
    w.append(&[Record { key: None, value: Some(b"end".to_vec()), headers: vec![], timestamp: ts }])?;
    w.finish()?;
    println!("{records} records in {} ({} MiB of .log)", dir.display(), dir_bytes(&dir)? >> 20);
    Ok(())
}

fn dir_bytes(dir: &std::path::Path) -> std::io::Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_name().to_string_lossy().ends_with(".log") {
            n += e.metadata()?.len();
        }
    }
    Ok(n)
}
