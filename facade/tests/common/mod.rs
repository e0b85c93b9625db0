//! What the S3 facade tests share: small partitions of named topics, copied whole.

use rsm_core::RemoteLogSegmentMetadata;
use rsm_core::format::partition::LocalPartition;
use rsm_facade::Store;

/// A partition of `topic` with a few closed segments, written under `dir`.
pub fn partition(dir: &std::path::Path, topic: &str, seed: u64) -> LocalPartition {
    rsm_core::testkit::small_topic_partition(dir, topic, seed)
}

/// Copies every closed segment of `p`: their metadata and `.log` bytes.
pub fn copy_all(store: &Store, p: &LocalPartition) -> Vec<(RemoteLogSegmentMetadata, Vec<u8>)> {
    let closed = p.closed_segments();
    assert!(closed.len() >= 2, "{} closed segments", closed.len());
    closed
        .iter()
        .map(|s| {
            let md = p.segment_metadata(s, 1, 1_700_000_000_000).unwrap();
            let data = p.segment_data(s).unwrap();
            store.copy(&md, &data).unwrap();
            (md, std::fs::read(&data.log_segment).unwrap())
        })
        .collect()
}
