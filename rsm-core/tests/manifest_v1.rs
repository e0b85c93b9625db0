//! A segment committed by the previous release (manifest version 1, written by `rsm demo` before chunk
//! entries kept original and stored positions apart) still reads: its known facts, as `rsm ls` of that
//! release printed them, and every byte through today's fetch path.

use bytes::Bytes;
use futures::StreamExt;
use rsm_core::backend::{MemoryBackend, StorageBackend};
use rsm_core::format::manifest::Manifest;
use rsm_core::{RemoteStorageManager, TieredConfig, TieredStorage};
use std::sync::Arc;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/manifest-v1");

fn read(ext: &str) -> Bytes {
    Bytes::from(std::fs::read(format!("{DIR}/segment.{ext}")).unwrap())
}

#[tokio::test]
async fn a_version_1_segment_reads_byte_for_byte() {
    let bytes = read("manifest");
    assert_eq!(&bytes[..6], b"RSMM\0\x01", "the fixture is a version-1 manifest");
    let m = Manifest::decode(&bytes, "fixture").unwrap();
    // What `rsm ls` of the release that wrote it printed.
    let id = &m.metadata.remote_log_segment_id;
    assert_eq!(id.topic_id_partition.topic_partition.topic, "demo-orders");
    assert_eq!(id.topic_id_partition.topic_partition.partition, 0);
    assert_eq!(id.id.to_string(), "wMRZBkFDTZeWds4QiULrXg");
    assert_eq!((m.metadata.start_offset, m.metadata.end_offset), (0, 1951));
    assert_eq!((m.log_length, m.chunks.len(), m.metadata.max_timestamp_ms), (1_047_918, 5, 1_796_113_037_185));
    for c in &m.chunks {
        assert_eq!(c.stored_range(), c.original_position()..c.end(), "version 1 stores chunks in place");
    }
    // Written again it is version 2, and the same manifest.
    let again = m.encode();
    assert_eq!(&again[..6], b"RSMM\0\x02");
    assert_eq!(Manifest::decode(&again, "re-encoded").unwrap(), m);

    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let rsm = TieredStorage::new(backend.clone(), TieredConfig::default());
    let keys = rsm.keys(&m.metadata);
    for (key, ext) in [(&keys.log, "log"), (&keys.indexes, "indexes"), (&keys.manifest, "manifest")] {
        backend.put_bytes(key, read(ext)).await.unwrap();
    }
    let log = read("log");
    let mut got = Vec::new();
    let mut s = rsm.fetch_log_segment(&m.metadata, 0, None).await.unwrap();
    while let Some(b) = s.next().await {
        got.extend_from_slice(&b.unwrap());
    }
    assert!(got == log, "every byte, every chunk checked");
    let report = rsm.verify(&m.metadata).await.unwrap();
    assert_eq!((report.bytes, report.indexes), (1_047_918, 4));
    let at = rsm.position_of_offset(&m.metadata, 1000).await.unwrap();
    assert!(m.chunks.iter().any(|c| c.original_position() <= at as u64 && (at as u64) < c.end()));
}
