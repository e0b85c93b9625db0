//! A test fixture maker (not a tool for operators): turns every segment of ours in a store into a segment as
//! Aiven's plugin would have stored it, in place, so that a broker test can start from a cluster whose tiered
//! data is all Aiven's (its metadata topic unchanged: the segments keep their ids and offsets).
//!
//! ```text
//! aiven_fixture STORE_URL AIVEN_KEY_PREFIX PRIVATE_KEY_PEM
//! ```
//!
//! Each segment is read back through the store (checked), written with
//! `rsm_core::testkit::aiven_writer` under `AIVEN_KEY_PREFIX`, compressed and encrypted under key pair `key1`
//! (the PEM file), with chunks of 64 KiB; then our objects of it are deleted. Prints a line per segment.

use rsm_core::crypto::AivenKeyPairs;
use rsm_core::model::{IndexType, LogSegmentData};
use rsm_core::testkit::aiven_writer::{AivenWriteSpec, write_aiven_segment};
use rsm_facade::{Store, runtime};
use std::collections::BTreeMap;
use std::io::Read;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, prefix, pem] = args.as_slice() else {
        return Err("usage: aiven_fixture STORE_URL AIVEN_KEY_PREFIX PRIVATE_KEY_PEM".into());
    };
    let store = Store::open(url, &BTreeMap::from([("fs.fsync".to_string(), "false".to_string())]))?;
    if *prefix == store.storage().config().key_prefix {
        // Our delete below would remove the Aiven objects just written under the same keys.
        return Err("AIVEN_KEY_PREFIX must differ from the store's key.prefix".into());
    }
    let mut pairs = AivenKeyPairs::default();
    pairs.add_pem("key1", &std::fs::read_to_string(pem)?, "PRIVATE_KEY_PEM")?;
    let spec = AivenWriteSpec {
        key_prefix: prefix.clone(),
        chunk_size: 64 << 10,
        compression: true,
        encryption: Some(("key1".into(), pairs)),
        custom_metadata: false,
    };
    let work = tempfile::tempdir()?;
    let segments = store.list_segments(None)?;
    for m in &segments {
        let md = &m.metadata;
        let file = |ext: &str| work.path().join(format!("{:020}.{ext}", md.start_offset));
        let mut log = Vec::new();
        store.fetch(md, 0, None)?.read_to_end(&mut log)?;
        std::fs::write(file("log"), &log)?;
        std::fs::write(file("index"), store.fetch_index(md, IndexType::Offset)?)?;
        std::fs::write(file("timeindex"), store.fetch_index(md, IndexType::Timestamp)?)?;
        std::fs::write(file("snapshot"), store.fetch_index(md, IndexType::ProducerSnapshot)?)?;
        let transaction_index = match store.fetch_index(md, IndexType::Transaction) {
            Ok(b) => {
                std::fs::write(file("txnindex"), b)?;
                Some(file("txnindex"))
            }
            Err(_) => None,
        };
        let data = LogSegmentData {
            log_segment: file("log"),
            offset_index: file("index"),
            time_index: file("timeindex"),
            transaction_index,
            producer_snapshot_index: file("snapshot"),
            leader_epoch_index: store.fetch_index(md, IndexType::LeaderEpoch)?,
        };
        let backend = store.storage().backend().clone();
        runtime().block_on(write_aiven_segment(&*backend, md, &data, &spec))?;
        store.delete(md)?;
        println!(
            "{} offsets {}..={}: now Aiven's under {prefix}",
            md.remote_log_segment_id, md.start_offset, md.end_offset
        );
    }
    println!("{} segments rewritten as Aiven's", segments.len());
    Ok(())
}
