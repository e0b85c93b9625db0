//! `Store::fetch` on a filesystem store reads a plain segment straight into the caller's buffer
//! (`SegmentReader::is_local`), with the bytes of the segment, and keeps the contract of every stream: a read
//! that fails (a damaged block) reports the error once, then the reader reads as ended. In both segment
//! layouts: a one-object segment's log is read from its `.segment` object the same way.

use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::{ErrorKind, Uuid};
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::io::Read;

#[test]
fn a_local_read_serves_the_segment_and_a_failed_one_ends_the_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::random(),
        segment_bytes: 300 << 10,
        records: 4000,
        records_per_batch: 8,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 0,
        seed: 5,
        compression: None,
    };
    let partition = LocalPartition::open(&generate_partition(&tmp.path().join("t-0"), &spec).unwrap()).unwrap();
    let seg = partition.closed_segments()[0].clone();
    let md = partition.segment_metadata(&seg, 1, 0).unwrap();
    let data = partition.segment_data(&seg).unwrap();
    let log = std::fs::read(&data.log_segment).unwrap();
    for (layout, extension) in [("split", "log"), ("single", "segment")] {
        let root = tmp.path().join(format!("store-{layout}"));
        std::fs::create_dir(&root).unwrap();
        let settings = BTreeMap::from([("segment.layout".to_string(), layout.to_string())]);
        let store = Store::open(&format!("file://{}", root.display()), &settings).unwrap();
        store.copy(&md, &data).unwrap();

        let mut r = store.fetch(&md, 0, None).unwrap();
        assert!(r.is_local(), "{layout}: a plain segment on a filesystem store without a chunk cache");
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert!(got == log, "{layout}: {} bytes, want {}", got.len(), log.len());

        // Damage the middle of the stored log: the read that reaches it fails once, then the reader has ended.
        let stored = rsm_core::testkit::files_under(&root)
            .into_iter()
            .find(|p| p.extension().is_some_and(|e| e == extension))
            .unwrap();
        let mut bytes = std::fs::read(&stored).unwrap();
        let middle = log.len() / 2;
        bytes[middle] ^= 1;
        std::fs::write(&stored, &bytes).unwrap();
        let mut r = store.fetch(&md, 0, None).unwrap();
        let mut buf = vec![0u8; 64 << 10];
        let mut served = 0;
        let e = loop {
            match r.read_into(&mut buf) {
                Ok(0) => panic!("{layout}: the end before the damaged block"),
                Ok(n) => served += n,
                Err(e) => break e,
            }
        };
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{layout}: {e}");
        assert!(served <= middle, "{layout}: nothing of the damaged block served: {served}");
        assert_eq!(r.read_into(&mut buf).unwrap(), 0, "{layout}: a failed reader reads as ended");
    }
}
