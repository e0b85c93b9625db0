//! KIP-1333: a segment over 2 GiB (3 GiB) round trip on the filesystem store, as a broker after `IBP_4_4_IV1`
//! writes it (12-byte offset index entries): copied, then read by positions past 2 GiB, by offset and by
//! timestamp, whole, and its indexes served byte for byte.
//!
//! An example, not a test of the test command: it writes 3 GiB twice (the partition and the store) and
//! reads them back. Run it with `cargo run --release -p rsm-backend-fs --example big_segment`; it checks as it
//! goes (a mismatch panics, exit status non-zero) and prints the time of each step.

use futures::StreamExt;
use rsm_backend_fs::FsBackend;
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionWriter, Record};
use rsm_core::{
    IndexType, RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteStorageManager, TieredConfig, TieredStorage,
    TopicIdPartition, TopicPartition, Uuid,
};
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;
use std::time::Instant;

const VALUE: usize = 1 << 20;
const BATCHES: i64 = 3 * 1024;
const T0: i64 = 1_700_000_000_000;

/// The batch at `i` holds one record of 1 MiB whose bytes say `i`, stamped `T0 + i`.
fn record(i: i64) -> Record {
    let mut value = vec![(i % 251) as u8; VALUE];
    value[..8].copy_from_slice(&i.to_be_bytes());
    Record { key: None, value: Some(value), headers: vec![], timestamp: T0 + i }
}

fn secs(t: Instant) -> String {
    format!("{:.1} s", t.elapsed().as_secs_f64())
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let topic_id = Uuid::random();
    let mut w = PartitionWriter::create(&tmp.path().join("big-0"), topic_id, 4 << 30, 4096).unwrap();
    w.long_index_entries();
    for i in 0..BATCHES {
        w.append(&[record(i)]).unwrap();
    }
    w.roll().unwrap();
    let partition = LocalPartition::open(&w.finish().unwrap()).unwrap();
    let seg = partition.closed_segments()[0].clone();
    let data = partition.segment_data(&seg).unwrap();
    let log_len = std::fs::metadata(&data.log_segment).unwrap().len();
    assert!(log_len > 3 << 30, "{log_len} bytes");
    println!("wrote a {log_len}-byte segment in {}", secs(t));

    // Kafka's metadata record holds the size as an int32: the copy takes the file's length.
    let tp = TopicIdPartition::new(topic_id, TopicPartition::new("big", 0));
    let id = RemoteLogSegmentId::new(tp, Uuid::random());
    let md =
        RemoteLogSegmentMetadata::new(id, 0, BATCHES - 1, T0 + BATCHES - 1, 1, T0, i32::MAX, [(0, 0)].into()).unwrap();
    let backend = Arc::new(FsBackend::create(tmp.path().join("store"), false).unwrap());
    let rsm = TieredStorage::new(backend, TieredConfig::default());
    let t = Instant::now();
    rsm.copy_log_segment_data(&md, &data).await.unwrap();
    println!("copied in {}", secs(t));

    let mut file = std::fs::File::open(&data.log_segment).unwrap();
    let mut local = |at: u64, n: usize| {
        let mut b = vec![0; n];
        file.seek(SeekFrom::Start(at)).unwrap();
        file.read_exact(&mut b).unwrap();
        b
    };
    let fetch = |start: i64, end: Option<i64>| {
        let rsm = &rsm;
        let md = &md;
        async move {
            let mut s = rsm.fetch_log_segment(md, start, end).await.unwrap();
            let mut out = Vec::new();
            while let Some(b) = s.next().await {
                out.extend_from_slice(&b.unwrap());
            }
            out
        }
    };

    // By position: around 2 GiB (where an int32 turns negative), near 3 GiB, and the last bytes.
    let t = Instant::now();
    for start in [(1u64 << 31) - 10, (1 << 31) + 12_345, 3 << 30, log_len - 100] {
        let end = (start + 2 * VALUE as u64).min(log_len) - 1;
        let got = fetch(start as i64, Some(end as i64)).await;
        assert!(got == local(start, (end + 1 - start) as usize), "bytes {start}..={end}");
    }
    println!("fetched four ranges past 2 GiB in {}", secs(t));

    // By offset and by timestamp: the batch of offset i starts where the local offset index says.
    let index = std::fs::read(&data.offset_index).unwrap();
    let entries = rsm_core::format::index::read_offset_index("big.index", 0, &index, log_len).unwrap();
    assert_eq!(index.len(), entries.len() * 12, "12-byte entries");
    let late = entries.iter().filter(|e| e.position > 1 << 31).nth(5).copied().unwrap();
    let t = Instant::now();
    assert_eq!(rsm.position_of_offset(&md, late.offset).await.unwrap(), late.position);
    assert_eq!(rsm.position_of_timestamp(&md, T0 + late.offset).await.unwrap(), Some(late.position));
    let from = fetch(late.position as i64, Some(late.position as i64 + 200)).await;
    assert_eq!(&from[..8], &late.offset.to_be_bytes(), "the batch of offset {}", late.offset);
    println!("found offset {} at position {} by offset and timestamp in {}", late.offset, late.position, secs(t));

    // The indexes, byte for byte.
    assert_eq!(rsm.fetch_index(&md, IndexType::Offset).await.unwrap(), index);
    assert_eq!(rsm.fetch_index(&md, IndexType::Timestamp).await.unwrap(), std::fs::read(&data.time_index).unwrap());

    // The whole segment, compared block by block with the file.
    let t = Instant::now();
    let mut s = rsm.fetch_log_segment(&md, 0, None).await.unwrap();
    let mut at = 0u64;
    while let Some(b) = s.next().await {
        let b = b.unwrap();
        assert!(b[..] == local(at, b.len())[..], "bytes from {at}");
        at += b.len() as u64;
    }
    assert_eq!(at, log_len);
    println!("read the whole segment back in {}", secs(t));
    println!("a 3 GiB segment round trips");
}
