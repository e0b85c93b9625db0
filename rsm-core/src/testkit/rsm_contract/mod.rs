//! The RemoteStorageManager contract over [`TieredStorage`], run on any backend with real Kafka segments, in
//! each segment layout (`segment.layout`: three objects, or one).

use super::{fixture_partition, unique_prefix};
use crate::backend::Op;
use crate::backend::layers::{Fault, FaultLayer, FaultRule};
use crate::backend::{ByteStream, StorageBackend};
use crate::config::{ConfigReader, props};
use crate::error::{Error, ErrorKind};
use crate::format::batch::BatchIter;
use crate::format::partition::{LocalPartition, LocalSegment};
use crate::model::{IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use crate::rsm::RemoteStorageManager;
use crate::storage::{SegmentLayout, TieredConfig, TieredStorage, Trailer, partition_prefix};
use futures::StreamExt;
use std::sync::Arc;

mod damage;

pub use damage::{another_segments_objects_are_refused, corruption_is_never_returned, transforms_round_trip};

type B = Arc<dyn StorageBackend>;

/// A fixture: a partition of real segments in a temp dir, and a storage manager with 64 KiB chunks under a
/// unique prefix.
pub struct Fixture {
    /// Holds the partition directory.
    pub tmp: tempfile::TempDir,
    /// The partition.
    pub partition: LocalPartition,
    /// The storage manager.
    pub rsm: TieredStorage,
    /// Its settings.
    pub config: TieredConfig,
}

impl Fixture {
    /// A fixture over `backend` (about four 1 MiB segments of about sixteen chunks each).
    pub fn new(backend: B, name: &str) -> Self {
        Self::with_settings(backend, name, |_| Vec::new())
    }

    /// A fixture whose copies store segments in `layout`.
    pub fn in_layout(backend: B, name: &str, layout: SegmentLayout) -> Self {
        Self::with_settings(backend, name, |_| vec![("segment.layout".into(), layout_word(layout).into())])
    }

    /// A fixture whose settings also hold those `extra` gives for its temp dir (key files, say).
    pub fn with_settings(
        backend: B,
        name: &str,
        extra: impl FnOnce(&std::path::Path) -> Vec<(String, String)>,
    ) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let partition = fixture_partition(tmp.path(), 1 << 20, 20_000);
        assert!(partition.closed_segments().len() >= 3, "fixture too small");
        let mut pairs =
            vec![("chunk.size".to_string(), "65536".to_string()), ("key.prefix".into(), unique_prefix(name))];
        pairs.extend(extra(tmp.path()));
        let p = props(pairs);
        let mut r = ConfigReader::new(&p);
        let config = TieredConfig::read(&mut r).unwrap();
        r.finish().unwrap();
        let rsm = TieredStorage::new(backend, config.clone());
        Fixture { tmp, partition, rsm, config }
    }

    /// Metadata and data of closed segment `i`.
    pub fn segment(&self, i: usize) -> (LocalSegment, RemoteLogSegmentMetadata, LogSegmentData) {
        let seg = self.partition.closed_segments()[i].clone();
        let md = self.partition.segment_metadata(&seg, 1, 1_700_000_000_000).unwrap();
        let data = self.partition.segment_data(&seg).unwrap();
        (seg, md, data)
    }

    /// A second manager on the same backend and settings, with a cold manifest cache.
    pub fn fresh_rsm(&self) -> TieredStorage {
        TieredStorage::new(self.rsm.backend().clone(), self.config.clone())
    }
}

/// The `segment.layout` value of `layout`.
pub fn layout_word(layout: SegmentLayout) -> &'static str {
    match layout {
        SegmentLayout::Split => "split",
        SegmentLayout::Single => "single",
    }
}

/// Checks what a copy returned: no custom metadata for a split segment; a one-object segment's trailer,
/// which is the last 32 bytes of its object.
async fn check_custom(
    f: &Fixture,
    md: &RemoteLogSegmentMetadata,
    layout: SegmentLayout,
    custom: Option<crate::model::CustomMetadata>,
) {
    match layout {
        SegmentLayout::Split => assert!(custom.is_none(), "{custom:?}"),
        SegmentLayout::Single => {
            let custom = custom.expect("a one-object copy returns its trailer");
            assert_eq!(custom.0.len(), 33, "one tag byte and the trailer");
            let mut tagged = md.clone();
            tagged.custom_metadata = Some(custom);
            let t = Trailer::of_metadata(&tagged).expect("the custom metadata carries a trailer");
            let (tail, size) = f.rsm.backend().get_tail(&f.rsm.keys(md).segment, 32).await.unwrap();
            assert_eq!(size, t.object_size());
            assert_eq!(&tail[..], &t.encode()[..]);
        }
    }
}

/// Collects a stream.
pub async fn collect(mut s: ByteStream) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    while let Some(b) = s.next().await {
        out.extend_from_slice(&b?);
    }
    Ok(out)
}

fn file(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Every segment copied, then read back whole and every index byte-identical; the absent transaction
/// index is not found.
pub async fn copy_then_fetch_everything(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b, "copy-fetch", layout);
    for i in 0..f.partition.closed_segments().len() {
        let (_, md, data) = f.segment(i);
        let custom = f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        check_custom(&f, &md, layout, custom.clone()).await;
        let log = file(&data.log_segment);
        let m = f.fresh_rsm().manifest(&md).await.unwrap();
        assert!(m.chunks.len() >= 8, "segment {i}: {} chunks", m.chunks.len());
        // Read as the broker does, with the metadata the copy's custom metadata went into, and without it.
        let mut tagged = md.clone();
        tagged.custom_metadata = custom;
        for md in [&md, &tagged] {
            let got = collect(f.fresh_rsm().fetch_log_segment(md, 0, None).await.unwrap()).await.unwrap();
            assert!(got == log, "segment {i}: fetched log differs from the file");
            let fresh = f.fresh_rsm();
            let index = fresh.fetch_index(md, IndexType::Offset).await.unwrap();
            assert_eq!(index.to_vec(), file(&data.offset_index), "segment {i}: a cold index read");
        }
        let wants = [
            (IndexType::Offset, Some(file(&data.offset_index))),
            (IndexType::Timestamp, Some(file(&data.time_index))),
            (IndexType::ProducerSnapshot, Some(file(&data.producer_snapshot_index))),
            (IndexType::LeaderEpoch, Some(data.leader_epoch_index.to_vec())),
            (IndexType::Transaction, None),
        ];
        for (t, want) in wants {
            let r = f.rsm.fetch_index(&md, t).await;
            match want {
                Some(w) => assert_eq!(r.unwrap().to_vec(), w, "segment {i} index {t}"),
                None => assert_eq!(r.unwrap_err().kind(), ErrorKind::NotFound, "segment {i} index {t}"),
            }
        }
        assert!(!file(&data.offset_index).is_empty(), "the fixture has offset index entries");
    }
}

/// Many ranges, both ends inclusive, compared with the file.
pub async fn fetch_ranges(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b, "ranges", layout);
    let (_, md, data) = f.segment(1);
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let log = file(&data.log_segment);
    let n = log.len() as i64;
    let chunk = f.config.chunk_size as i64;
    let mut cases: Vec<(i64, Option<i64>)> = vec![
        (0, Some(0)),
        (0, Some(16)),
        (n - 1, None),
        (n - 1, Some(n - 1)),
        (n - 10, Some(n + 1000)),
        (0, Some(n - 1)),
        (chunk - 5, Some(chunk + 5)),
        (100, Some(3 * chunk + 7)),
    ];
    let mut rng = crate::testkit::log_writer::Rng::new(9);
    for _ in 0..40 {
        let s = rng.below(n as u64) as i64;
        let e = s + rng.below(4 * chunk as u64) as i64;
        cases.push((s, Some(e)));
        cases.push((s, None));
    }
    for (s, e) in cases {
        let got = collect(f.rsm.fetch_log_segment(&md, s, e).await.unwrap()).await.unwrap();
        let end = e.map(|e| (e + 1).min(n)).unwrap_or(n);
        assert!(got == log[s as usize..end as usize], "range {s}..={e:?} differs");
    }
}

/// Positions found by offset and by timestamp match an independent walk of the local file.
pub async fn fetch_by_offset_and_timestamp(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b, "lookups", layout);
    let (_, md, data) = f.segment(2);
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let log = file(&data.log_segment);
    let batches: Vec<(i64, i64, i64, u64)> = BatchIter::new(&log, 0, true)
        .map(|b| b.unwrap())
        .map(|b| (b.base_offset(), b.last_offset(), b.max_timestamp(), b.position()))
        .collect();
    for (k, &(base, last, max_ts, pos)) in batches.iter().enumerate().step_by(7) {
        for o in [base, (base + last) / 2, last] {
            assert_eq!(f.rsm.position_of_offset(&md, o).await.unwrap() as u64, pos, "offset {o}");
        }
        let first_at_or_after = batches.iter().find(|b| b.2 >= max_ts).unwrap().3;
        assert_eq!(
            f.rsm.position_of_timestamp(&md, max_ts).await.unwrap(),
            Some(first_at_or_after),
            "timestamp of batch {k}"
        );
    }
    assert_eq!(f.rsm.position_of_timestamp(&md, i64::MAX).await.unwrap(), None);
    // Outside the segment, below its start as past its end: refused alike, naming the offset.
    for outside in [md.end_offset + 1, i64::MAX, md.start_offset - 1, -1, i64::MIN] {
        let e = f.rsm.position_of_offset(&md, outside).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{outside}: {e}");
        assert!(e.to_string().contains(&format!("`offset` {outside} is outside segment")), "{e}");
    }
}

fn count_segment_objects(list: &[crate::backend::ObjectMeta], md: &RemoteLogSegmentMetadata) -> usize {
    let id = md.remote_log_segment_id.id.to_string();
    list.iter().filter(|o| o.key.contains(&id)).count()
}

/// Copying the same segment id twice overwrites: still three objects (one in the single layout), same bytes.
pub async fn copy_twice(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b.clone(), "copy-twice", layout);
    let (_, md, data) = f.segment(0);
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let prefix = partition_prefix(&f.config.key_prefix, &md.remote_log_segment_id.topic_id_partition);
    let list = b.list(&prefix).await.unwrap();
    let objects = match layout {
        SegmentLayout::Split => 3,
        SegmentLayout::Single => 1,
    };
    assert_eq!(count_segment_objects(&list, &md), objects, "{list:?}");
    let got = collect(f.fresh_rsm().fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap();
    assert!(got == file(&data.log_segment));
}

/// After a delete the segment and its indexes are not found; deleting again succeeds; no object is left.
pub async fn delete_then_not_found(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b.clone(), "delete", layout);
    let (_, md, data) = f.segment(0);
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    f.rsm.fetch_index(&md, IndexType::Offset).await.unwrap();
    f.rsm.delete_log_segment_data(&md).await.unwrap();
    let e = f.rsm.fetch_log_segment(&md, 0, None).await.err().expect("fetch after delete fails");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains(&md.remote_log_segment_id.id.to_string()), "names the segment: {e}");
    assert_eq!(f.rsm.fetch_index(&md, IndexType::Timestamp).await.unwrap_err().kind(), ErrorKind::NotFound);
    f.rsm.delete_log_segment_data(&md).await.unwrap();
    let prefix = partition_prefix(&f.config.key_prefix, &md.remote_log_segment_id.topic_id_partition);
    assert!(b.list(&prefix).await.unwrap().is_empty());
}

/// A copy whose index or manifest upload fails reports the failure and leaves no segment and no object.
pub async fn failed_copy_leaves_no_segment(b: B, layout: SegmentLayout) {
    let suffixes: &[&str] = match layout {
        SegmentLayout::Split => &[".manifest", ".indexes", ".log"],
        SegmentLayout::Single => &[".segment"],
    };
    for &suffix in suffixes {
        let f = Fixture::in_layout(b.clone(), "failed-copy", layout);
        let rule = FaultRule { op: Some(Op::Put), key: format!("*{suffix}"), fault: Fault::transient(), times: None };
        let failing = Arc::new(FaultLayer::new(b.clone()).with_rule(rule));
        let rsm = TieredStorage::new(failing.clone(), f.config.clone());
        let (_, md, data) = f.segment(0);
        let e = rsm.copy_log_segment_data(&md, &data).await.unwrap_err();
        assert!(e.is_transient(), "{suffix}: {e}");
        assert!(e.to_string().contains(&md.remote_log_segment_id.to_string()), "{suffix}: names the segment: {e}");
        assert_eq!(failing.injected(), 1, "{suffix}");
        let fetch = f.rsm.fetch_log_segment(&md, 0, None).await.err().expect("no visible segment");
        assert_eq!(fetch.kind(), ErrorKind::NotFound, "{suffix}");
        let prefix = partition_prefix(&f.config.key_prefix, &md.remote_log_segment_id.topic_id_partition);
        assert!(b.list(&prefix).await.unwrap().is_empty(), "{suffix}: the failed attempt's objects are gone");
        // A retry with a healthy backend succeeds.
        f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        assert!(
            collect(f.rsm.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap() == file(&data.log_segment)
        );
    }
}

/// A batch with a bad CRC fails the copy as corrupt, naming the offset; with checking off it copies.
pub async fn corrupt_batch_fails_copy(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b.clone(), "corrupt-copy", layout);
    let (_, md, mut data) = f.segment(0);
    let mut log = file(&data.log_segment);
    let batches: Vec<(i64, u64)> =
        BatchIter::new(&log, 0, true).map(|b| b.unwrap()).map(|b| (b.base_offset(), b.position())).collect();
    let (bad_offset, bad_pos) = batches[batches.len() / 2];
    log[bad_pos as usize + 100] ^= 0x01;
    let bad = f.tmp.path().join("bad.log");
    std::fs::write(&bad, &log).unwrap();
    data.log_segment = bad;
    let e = f.rsm.copy_log_segment_data(&md, &data).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains(&format!("offset {bad_offset}")), "names the offset: {e}");
    let prefix = partition_prefix(&f.config.key_prefix, &md.remote_log_segment_id.topic_id_partition);
    assert!(b.list(&prefix).await.unwrap().is_empty());

    let cfg = TieredConfig { verify_checksums: false, ..f.config.clone() };
    let lenient = TieredStorage::new(b.clone(), cfg);
    lenient.copy_log_segment_data(&md, &data).await.unwrap();
    assert!(collect(lenient.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap() == log);

    // A truncated offset index is corrupt too.
    let (_, md2, mut data2) = f.segment(1);
    let idx = file(&data2.offset_index);
    let short = f.tmp.path().join("short.index");
    std::fs::write(&short, &idx[..idx.len() - 3]).unwrap();
    data2.offset_index = short;
    let e = f.rsm.copy_log_segment_data(&md2, &data2).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("short.index"), "{e}");
}

/// Positions outside the segment are invalid arguments; an unknown segment is not found.
pub async fn bad_positions_are_invalid(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b, "bad-positions", layout);
    let (_, md, data) = f.segment(0);
    let e = f.rsm.fetch_log_segment(&md, 0, None).await.err().expect("not copied yet");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let n = md.segment_size_in_bytes as i64;
    for (s, e) in [(-1, None), (n, None), (n + 5, Some(n + 10)), (10, Some(9)), (i64::MIN, None), (1 << 40, None)] {
        let err = f.rsm.fetch_log_segment(&md, s, e).await.err().expect("invalid");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{s}..={e:?}");
        assert!(err.to_string().contains(&format!("position {}", if s == 10 { 9 } else { s })), "{err}");
    }
}
