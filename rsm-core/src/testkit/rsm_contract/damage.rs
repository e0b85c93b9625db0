//! The contract's damage and transform cases: damaged objects reported as corrupt and never returned,
//! another segment's objects refused, and every chunk transform round-tripped, on any backend.

use super::{B, Fixture, collect, file, layout_word};
use crate::config::{ConfigReader, props};
use crate::error::{Error, ErrorKind};
use crate::format::batch::BatchIter;
use crate::format::chunk::Transform;
use crate::model::IndexType;
use crate::rsm::RemoteStorageManager;
use crate::storage::{SegmentLayout, TieredConfig, TieredStorage, Trailer, placement};
use bytes::Bytes;
use futures::StreamExt;

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
                    collect(reader.fetch_log_segment(&md, s as i64, Some(e as i64)).await.unwrap()).await.unwrap();
                assert!(got[..] == log[s as usize..=e as usize], "{what}: range {s}..={e} differs");
            }
            let batches: Vec<_> = BatchIter::new(&log, 0, false).map(|b| b.unwrap()).collect();
            for bt in [&batches[0], &batches[batches.len() / 2], &batches[batches.len() - 1]] {
                let p = reader.position_of_offset(&md, bt.last_offset()).await.unwrap();
                assert_eq!(p as u64, bt.position(), "{what}: by offset {}", bt.last_offset());
                let t = reader.position_of_timestamp(&md, bt.max_timestamp()).await.unwrap();
                let first = batches.iter().find(|x| x.max_timestamp() >= bt.max_timestamp()).unwrap().position();
                assert_eq!(t, Some(first), "{what}: by timestamp {}", bt.max_timestamp());
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
