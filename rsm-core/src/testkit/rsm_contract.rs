//! The RemoteStorageManager contract over [`TieredStorage`], run on any backend with real Kafka segments, in
//! each segment layout (`segment.layout`: three objects, or one).

use super::{fixture_partition, unique_prefix};
use crate::backend::Op;
use crate::backend::layers::{Fault, FaultLayer, FaultRule};
use crate::backend::{ByteStream, StorageBackend};
use crate::config::{ConfigReader, props};
use crate::error::{Error, ErrorKind};
use crate::format::batch::BatchIter;
use crate::format::chunk::Transform;
use crate::format::partition::{LocalPartition, LocalSegment};
use crate::model::{IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use crate::rsm::RemoteStorageManager;
use crate::storage::{SegmentLayout, TieredConfig, TieredStorage, Trailer, partition_prefix, placement};
use bytes::Bytes;
use futures::StreamExt;
use std::sync::Arc;

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
    let n = log.len() as i32;
    let chunk = f.config.chunk_size as i32;
    let mut cases: Vec<(i32, Option<i32>)> = vec![
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
        let s = rng.below(n as u64) as i32;
        let e = s + rng.below(4 * chunk as u64) as i32;
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
            f.rsm.position_of_timestamp(&md, max_ts).await.unwrap().map(u64::from),
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
    let n = md.segment_size_in_bytes;
    for (s, e) in [(-1, None), (n, None), (n + 5, Some(n + 10)), (10, Some(9))] {
        let err = f.rsm.fetch_log_segment(&md, s, e).await.err().expect("invalid");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{s}..={e:?}");
        assert!(err.to_string().contains(&format!("position {}", if s == 10 { 9 } else { s })), "{err}");
    }
}

/// Damaged objects are reported as corrupt; no damaged byte of a chunk read whole in one read is returned.
/// In the single layout the same damage is done to the one object's log, index and manifest parts, and a
/// truncated object is refused by its trailer, naming the key.
pub async fn corruption_is_never_returned(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b.clone(), "corruption", layout);
    let (_, md, data) = f.segment(0);
    let custom = f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let keys = f.rsm.keys(&md);
    let at = placement(&f.config.key_prefix, &f.fresh_rsm().manifest(&md).await.unwrap());
    let original = b.get_range(&at.log, 0..u64::MAX).await.unwrap();
    let log = file(&data.log_segment);
    let chunk = f.config.chunk_size as usize;
    let flipped = |at: usize, bits: u8| {
        let mut d = original.to_vec();
        d[at] ^= bits;
        Bytes::from(d)
    };

    // One flipped byte in the third chunk of the log (the stored log starts the object in both layouts).
    let at_byte = 2 * chunk + chunk / 2;
    b.put_bytes(&at.log, flipped(at_byte, 0x80)).await.unwrap();
    let mut s = f.fresh_rsm().fetch_log_segment(&md, 0, None).await.unwrap();
    let mut good = 0usize;
    let err = loop {
        match s.next().await {
            Some(Ok(bytes)) => {
                assert!(bytes[..] == log[good..good + bytes.len()], "returned bytes must be the original ones");
                good += bytes.len();
            }
            Some(Err(e)) => break e,
            None => panic!("a damaged chunk was returned"),
        }
    };
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert!(good <= at_byte, "bytes up to the damage only ({good} > {at_byte})");
    assert!(err.to_string().contains(&at.log), "names the object: {err}");

    // A short object: the split layout's log, or the one object (whose trailer then is not at its end).
    b.put_bytes(&at.log, original.slice(..original.len() - 10)).await.unwrap();
    let e = match f.fresh_rsm().fetch_log_segment(&md, 0, None).await {
        Ok(s) => collect(s).await.unwrap_err(),
        Err(e) => e,
    };
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    if layout == SegmentLayout::Single {
        assert!(e.to_string().contains(&keys.segment), "names the object: {e}");
        // Read with the trailer the metadata carries: the exact read comes back short.
        let mut tagged = md.clone();
        tagged.custom_metadata = custom.clone();
        let e = f.fresh_rsm().fetch_log_segment(&tagged, 0, None).await.err().expect("refused");
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        assert!(e.to_string().contains(&keys.segment), "names the object: {e}");
    }
    b.put_bytes(&at.log, original.clone()).await.unwrap();

    // A damaged index bundle.
    let idx = b.get_range(&at.indexes, 0..u64::MAX).await.unwrap();
    let mut damaged = idx.to_vec();
    damaged[at.indexes_base as usize + 3] ^= 0xff;
    b.put_bytes(&at.indexes, Bytes::from(damaged)).await.unwrap();
    assert_eq!(f.fresh_rsm().fetch_index(&md, IndexType::Offset).await.unwrap_err().kind(), ErrorKind::Corrupt);
    b.put_bytes(&at.indexes, idx).await.unwrap();

    // A damaged manifest.
    let (key, mid) = match layout {
        SegmentLayout::Split => {
            let man = b.get_range(&keys.manifest, 0..u64::MAX).await.unwrap();
            (keys.manifest.clone(), man.len() / 2)
        }
        SegmentLayout::Single => {
            let mut tagged = md.clone();
            tagged.custom_metadata = custom.clone();
            let t = Trailer::of_metadata(&tagged).expect("a trailer");
            (keys.segment.clone(), (t.manifest_position + t.manifest_length as u64 / 2) as usize)
        }
    };
    let mut man = b.get_range(&key, 0..u64::MAX).await.unwrap().to_vec();
    man[mid] ^= 0x10;
    b.put_bytes(&key, Bytes::from(man)).await.unwrap();
    let e = f.fresh_rsm().fetch_log_segment(&md, 0, None).await.err().expect("corrupt manifest");
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.to_string().contains(&key), "{e}");
}

/// A segment's three objects copied over another segment's keys (an operator's restore gone wrong, a
/// bucket sync) are refused on every read path as corrupt, naming both segments: by range, offset,
/// timestamp and index, `verify`, the listing (`scan_segments`, which keeps the other segments), and a
/// lookup by id. Copied alone, the other segment's manifest (over a cached or a cold reader) and its `.log`
/// are refused too.
pub async fn another_segments_objects_are_refused(b: B, layout: SegmentLayout) {
    let f = Fixture::in_layout(b.clone(), "swapped", layout);
    let (_, a, a_data) = f.segment(0);
    let (_, other, other_data) = f.segment(1);
    f.rsm.copy_log_segment_data(&a, &a_data).await.unwrap();
    f.rsm.copy_log_segment_data(&other, &other_data).await.unwrap();
    // Warm the first manager's caches with A, as a broker's would be.
    assert_eq!(collect(f.rsm.fetch_log_segment(&a, 0, None).await.unwrap()).await.unwrap(), file(&a_data.log_segment));
    let (ka, kb) = (f.rsm.keys(&a), f.rsm.keys(&other));
    let get = |k: String| {
        let b = b.clone();
        async move { b.get_range(&k, 0..u64::MAX).await.unwrap() }
    };
    let swapped = match layout {
        SegmentLayout::Split => vec![(&kb.manifest, &ka.manifest), (&kb.log, &ka.log), (&kb.indexes, &ka.indexes)],
        SegmentLayout::Single => vec![(&kb.segment, &ka.segment)],
    };
    let (a_listed, other_listed) = match layout {
        SegmentLayout::Split => (&ka.manifest, &kb.manifest),
        SegmentLayout::Single => (&ka.segment, &kb.segment),
    };
    for (from, to) in swapped {
        b.put_bytes(to, get(from.clone()).await).await.unwrap();
    }
    let a_id = a.remote_log_segment_id.id.to_string();
    let other_id = other.remote_log_segment_id.id.to_string();
    let refused = |what: &str, e: &Error| {
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}");
        let text = e.full_message();
        assert!(text.contains(&a_id) && text.contains(&other_id), "{what} names both segments: {text}");
    };
    let rsm = f.fresh_rsm();
    refused("fetch by range", &rsm.fetch_log_segment(&a, 0, None).await.err().expect("refused"));
    refused("offset", &rsm.position_of_offset(&a, a.start_offset).await.unwrap_err());
    refused("timestamp", &rsm.position_of_timestamp(&a, 0).await.unwrap_err());
    refused("index", &rsm.fetch_index(&a, IndexType::Offset).await.unwrap_err());
    refused("verify", &rsm.verify(&a).await.unwrap_err());
    refused("find", &rsm.find_segment(&a.remote_log_segment_id.id).await.unwrap_err());
    let listed = rsm.scan_segments(Some(&a.remote_log_segment_id.topic_id_partition)).await.unwrap();
    let at_a = listed.iter().find(|s| &s.manifest_key == a_listed).expect("A's key is listed");
    refused("listing", at_a.manifest.as_ref().expect_err("A's listing is damaged"));
    let at_other = listed.iter().find(|s| &s.manifest_key == other_listed).expect("the other segment is listed");
    assert!(at_other.manifest.as_ref().is_ok_and(|m| m.metadata.remote_log_segment_id == other.remote_log_segment_id));
    // The other segment itself still reads.
    assert_eq!(
        collect(rsm.fetch_log_segment(&other, 0, None).await.unwrap()).await.unwrap(),
        file(&other_data.log_segment)
    );

    if layout == SegmentLayout::Single {
        // One object: there is no manifest or log to swap alone.
        return;
    }
    // Only the manifest put back: A's own `.log` over the other's, under a warm cache and a cold one.
    b.put_bytes(&ka.manifest, get(kb.manifest.clone()).await).await.unwrap();
    b.put_bytes(&ka.log, Bytes::from(file(&a_data.log_segment))).await.unwrap();
    // A warm reader may still hold A's own manifest: then it serves A's bytes, never the other's.
    match f.rsm.fetch_log_segment(&a, 0, None).await {
        Ok(s) => assert_eq!(collect(s).await.unwrap(), file(&a_data.log_segment), "warm reader"),
        Err(e) => refused("warm reader", &e),
    }
    refused("cold reader", &f.fresh_rsm().fetch_log_segment(&a, 0, None).await.err().expect("refused"));

    // Only the other segment's `.log` over A's, A's own manifest in place.
    f.rsm.copy_log_segment_data(&a, &a_data).await.unwrap();
    b.put_bytes(&ka.log, get(kb.log.clone()).await).await.unwrap();
    let r = collect(f.fresh_rsm().fetch_log_segment(&a, 0, None).await.unwrap()).await;
    assert_eq!(r.unwrap_err().kind(), ErrorKind::Corrupt, "another segment's .log under A's manifest");
}

/// Every transform (none, compression in frames and as one frame a chunk, encryption, both in frames and as
/// one frame) round trips on the store: each chunk stored as its settings say (the compression heuristic
/// off, so even chunks that would not shrink are compressed),
/// no plaintext in an encrypted object, and the log read back byte for byte whole, in ranges across chunks,
/// by offset and by timestamp, by `verify`, and through the chunk cache, by a manager that only holds the
/// keys; the indexes byte-identical.
pub async fn transforms_round_trip(b: B, layout: SegmentLayout) {
    // (case, compression, encryption, `compression.frame.size`, the transform of every chunk)
    let cases = [
        ("none", false, false, None, Transform::None),
        ("compression", true, false, None, Transform::ZstdFrames),
        ("compression-one-frame", true, false, Some("0"), Transform::Zstd),
        ("encryption", false, true, None, Transform::Aes256Gcm),
        ("both", true, true, None, Transform::ZstdFramesAes256Gcm),
        ("both-one-frame", true, true, Some("0"), Transform::ZstdAes256Gcm),
    ];
    for (case, compression, encryption, frame_size, transform) in cases {
        // The writer's settings transform new copies; a reader's only hold the key.
        let settings = |dir: &std::path::Path, writer: bool, cache: u64| {
            let key_file = dir.join("kek-a");
            std::fs::write(&key_file, format!("{}\n", "5c".repeat(32))).unwrap();
            let mut v: Vec<(String, String)> = vec![
                ("compression.enabled".into(), (compression && writer).to_string()),
                ("compression.heuristic.enabled".into(), "false".into()),
                ("encryption.keys".into(), "kek-a".into()),
                ("encryption.key.kek-a.file".into(), key_file.display().to_string()),
                ("fetch.cache.bytes".into(), cache.to_string()),
            ];
            if let Some(f) = frame_size {
                v.push(("compression.frame.size".into(), f.into()));
            }
            if encryption && writer {
                v.push(("encryption.enabled".into(), "true".into()));
                v.push(("encryption.key.id".into(), "kek-a".into()));
            }
            v
        };
        let f = Fixture::with_settings(b.clone(), &format!("transforms-{case}"), |dir| {
            let mut v = settings(dir, true, 0);
            v.push(("segment.layout".into(), layout_word(layout).into()));
            v
        });
        let (_, md, data) = f.segment(1);
        f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        let log = file(&data.log_segment);
        let m = f.fresh_rsm().manifest(&md).await.unwrap();
        assert!(m.chunks.len() >= 8, "{case}: {} chunks", m.chunks.len());
        assert!(m.chunks.iter().all(|c| c.rdi.transform == transform), "{case}: {:?}", m.chunks[0].rdi.transform);
        assert_eq!(m.encryption.is_some(), encryption, "{case}");
        let at = placement(&f.config.key_prefix, &m);
        let object = b.get_range(&at.log, 0..u64::MAX).await.unwrap();
        // The stored log: all of a `.log` object, or a one-object segment's bytes before its indexes.
        let object = if at.indexes == at.log { object.slice(..at.indexes_base as usize) } else { object };
        let stored: u64 = m.chunks.iter().map(|c| c.stored_range().end - c.stored_range().start).sum();
        assert_eq!(object.len() as u64, stored, "{case}: the object is its chunks' stored bytes");
        if encryption {
            let probe = &log[1000..1064];
            assert!(!object.windows(probe.len()).any(|w| w == probe), "{case}: plaintext in the object");
        }
        for cache in [0, 16 << 20] {
            // A reader with new copies untransformed: it needs the keys only.
            let extra = settings(f.tmp.path(), false, cache);
            let mut pairs = vec![
                ("chunk.size".to_string(), "65536".to_string()),
                ("key.prefix".into(), f.config.key_prefix.clone()),
            ];
            pairs.extend(extra);
            let p = props(pairs);
            let mut r = ConfigReader::new(&p);
            let config = TieredConfig::read(&mut r).unwrap();
            r.finish().unwrap();
            let reader = TieredStorage::new(b.clone(), config);
            let what = format!("{case}, cache {cache}");
            let got = collect(reader.fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap();
            assert!(got == log, "{what}: whole fetch differs");
            let c = &m.chunks;
            let n = log.len() as u64;
            for (s, e) in [
                (0, 0),
                (c[1].original_position() + 5, c[3].original_position() + 9),
                (c[2].end() - 1, c[2].end()),
                (n - 7, n - 1),
            ] {
                let got =
                    collect(reader.fetch_log_segment(&md, s as i32, Some(e as i32)).await.unwrap()).await.unwrap();
                assert!(got[..] == log[s as usize..=e as usize], "{what}: range {s}..={e} differs");
            }
            let batches: Vec<_> = BatchIter::new(&log, 0, false).map(|b| b.unwrap()).collect();
            for bt in [&batches[0], &batches[batches.len() / 2], &batches[batches.len() - 1]] {
                let p = reader.position_of_offset(&md, bt.last_offset()).await.unwrap();
                assert_eq!(p as u64, bt.position(), "{what}: by offset {}", bt.last_offset());
                let t = reader.position_of_timestamp(&md, bt.max_timestamp()).await.unwrap();
                let first = batches.iter().find(|x| x.max_timestamp() >= bt.max_timestamp()).unwrap().position();
                assert_eq!(t.map(u64::from), Some(first), "{what}: by timestamp {}", bt.max_timestamp());
            }
            let report = reader.verify(&md).await.unwrap();
            assert_eq!((report.chunks, report.bytes), (c.len(), n), "{what}: verify");
            for (t, want) in
                [(IndexType::Offset, file(&data.offset_index)), (IndexType::Timestamp, file(&data.time_index))]
            {
                assert_eq!(reader.fetch_index(&md, t).await.unwrap().to_vec(), want, "{what}: index {t}");
            }
        }
        f.rsm.delete_log_segment_data(&md).await.unwrap();
    }
}
