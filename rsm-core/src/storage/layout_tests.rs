//! The two segment layouts side by side (`segment.layout`): each reads whatever the setting says, with and
//! without the custom metadata a copy returns; what each costs in requests; a damaged trailer; the
//! maintenance paths over one-object segments.

use super::*;
use crate::backend::{CountingLayer, MemoryBackend, Op};
use crate::config::{ConfigReader, props};
use crate::testkit::rsm_contract::{Fixture, collect, layout_word};

fn config(f: &Fixture, layout: SegmentLayout) -> TieredConfig {
    TieredConfig { segment_layout: layout, ..f.config.clone() }
}

/// A segment written in one layout reads with either layout configured, with its custom metadata and
/// without, whole and by index; the manifest costs exactly the reads the order of keys implies.
#[tokio::test]
async fn segments_of_either_layout_read_whatever_the_setting_says() {
    use SegmentLayout::{Single, Split};
    // (written, read with, metadata tagged, GETs for the manifest: the keys tried)
    let cases = [
        (Split, Split, false, 1),
        (Split, Single, false, 2),  // `.segment` not found, then `.manifest`
        (Single, Single, false, 1), // the object's tail holds the trailer and the manifest
        (Single, Split, false, 2),  // `.manifest` not found, then the tail
        (Single, Single, true, 1),  // one exact ranged read
        (Single, Split, true, 1),
        (Split, Single, true, 2), // a split copy returns no tag: as untagged
    ];
    for (written, read, tagged, manifest_gets) in cases {
        let what = format!("written {written:?}, read with {read:?}, tagged {tagged}");
        let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
        let f = Fixture::in_layout(counting.clone(), "either-layout", written);
        let (_, mut md, data) = f.segment(1);
        let custom = f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        assert_eq!(custom.is_some(), written == Single, "{what}");
        if tagged {
            md.custom_metadata = custom;
        }
        let reader = TieredStorage::new(counting.clone(), config(&f, read));
        let gets = || counting.counts().snapshot().get(Op::Get).requests;
        let before = gets();
        reader.manifest(&md).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(gets() - before, manifest_gets, "{what}: GETs for the manifest");
        let before = gets();
        let got = collect(reader.fetch_log_segment(&md, 0, Some(99)).await.unwrap()).await.unwrap();
        assert_eq!(got[..], std::fs::read(&data.log_segment).unwrap()[..100], "{what}");
        assert_eq!(gets() - before, 1, "{what}: a small fetch after the manifest is one read");
        let before = gets();
        let index = reader.fetch_index(&md, IndexType::Timestamp).await.unwrap();
        assert_eq!(index.to_vec(), std::fs::read(&data.time_index).unwrap(), "{what}");
        assert_eq!(gets() - before, 1, "{what}: an index is one read");
        let whole = collect(f.fresh_rsm().fetch_log_segment(&md, 0, None).await.unwrap()).await.unwrap();
        assert!(whole == std::fs::read(&data.log_segment).unwrap(), "{what}: whole log");
        // A delete removes every object of the segment, whichever layout the deleter is set to.
        reader.delete_log_segment_data(&md).await.unwrap();
        let prefix = partition_prefix(&f.config.key_prefix, &md.remote_log_segment_id.topic_id_partition);
        let left = counting.list(&prefix).await.unwrap();
        assert!(left.is_empty(), "{what}: {left:?}");
        let e = reader.fetch_log_segment(&md, 0, None).await.err().expect("deleted");
        assert_eq!(e.kind(), ErrorKind::NotFound, "{what}: {e}");
    }
}

/// Requests per segment for a copy and a delete in each layout, with and without the tag.
#[tokio::test]
async fn a_one_object_segment_is_one_put_and_one_delete() {
    use SegmentLayout::{Single, Split};
    // (layout, delete with the tag, PUTs for the copy, DELETE requests for the delete)
    let cases = [(Split, false, 3, 2), (Single, true, 1, 1), (Single, false, 1, 2)];
    for (layout, tagged, puts, deletes) in cases {
        let what = format!("{layout:?}, tagged {tagged}");
        let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
        let counts = counting.counts();
        let f = Fixture::in_layout(counting.clone(), "requests", layout);
        let (_, mut md, data) = f.segment(0);
        let before = counts.snapshot();
        let custom = f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
        let after = counts.snapshot();
        assert_eq!(after.get(Op::Put).requests - before.get(Op::Put).requests, puts, "{what}: PUTs");
        assert_eq!(after.get(Op::Get).requests, before.get(Op::Get).requests, "{what}: a copy reads nothing");
        if tagged {
            md.custom_metadata = custom;
        }
        let before = counts.snapshot();
        f.fresh_rsm().delete_log_segment_data(&md).await.unwrap();
        let after = counts.snapshot();
        assert_eq!(after.get(Op::Delete).requests - before.get(Op::Delete).requests, deletes, "{what}: DELETEs");
    }
}

/// A damaged trailer, or an object cut short or appended to, is refused as corrupt naming the key, with
/// the metadata's tag and without.
#[tokio::test]
async fn a_damaged_one_object_segment_is_refused_naming_its_key() {
    let memory: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let f = Fixture::in_layout(memory.clone(), "damaged-trailer", SegmentLayout::Single);
    let (_, md, data) = f.segment(0);
    let custom = f.rsm.copy_log_segment_data(&md, &data).await.unwrap();
    let key = f.rsm.keys(&md).segment;
    let good = memory.get_range(&key, 0..u64::MAX).await.unwrap();
    let n = good.len();
    let edit = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = good.to_vec();
        f(&mut v);
        Bytes::from(v)
    };
    // (case, the object stored, what the untagged reader's error says, whether a reader with the tag, which
    // reads exactly the manifest and trailer where the copy put them, refuses it too)
    let cases: Vec<(&str, Bytes, &str, bool)> = vec![
        ("magic", edit(&|v| v[n - 32] ^= 1), "lacks its magic", true),
        ("CRC", edit(&|v| v[n - 1] ^= 1), "fails its CRC-32C", true),
        ("a position", edit(&|v| v[n - 20] ^= 1), "fails its CRC-32C", true),
        ("cut short", good.slice(..n - 1), "lacks its magic", true),
        // Every byte the copy wrote is in place: the tagged reader never reads past them.
        ("appended to", edit(&|v| v.extend_from_slice(&good[n - 32..])), "object is", false),
        ("shorter than a trailer", good.slice(..20), "too short", true),
        ("empty", Bytes::new(), "too short", true),
    ];
    let mut tagged = md.clone();
    tagged.custom_metadata = custom;
    for (case, object, says, tagged_refuses) in cases {
        memory.put_bytes(&key, object).await.unwrap();
        for (md, says) in [(&md, says), (&tagged, "")] {
            let r = f.fresh_rsm().fetch_log_segment(md, 0, None).await;
            if md.custom_metadata.is_some() && !tagged_refuses {
                assert!(collect(r.unwrap()).await.is_ok(), "{case}, tagged");
                continue;
            }
            let e = r.err().expect("refused");
            let text = e.to_string();
            let tag = md.custom_metadata.is_some();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{case}, tagged {tag}: {text}");
            assert!(text.contains(&key) && text.contains(says), "{case}, tagged {tag}: {text}");
        }
    }
    memory.put_bytes(&key, good).await.unwrap();
    assert!(collect(f.fresh_rsm().fetch_log_segment(&tagged, 0, None).await.unwrap()).await.is_ok());
}

/// Listing, finding, verifying, orphans and rewrap over one-object segments beside split ones.
#[tokio::test]
async fn maintenance_knows_one_object_segments() {
    let memory: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let f = Fixture::in_layout(memory.clone(), "maintenance", SegmentLayout::Single);
    let (_, single, single_data) = f.segment(0);
    let (_, split, split_data) = f.segment(1);
    f.rsm.copy_log_segment_data(&single, &single_data).await.unwrap();
    TieredStorage::new(memory.clone(), config(&f, SegmentLayout::Split))
        .copy_log_segment_data(&split, &split_data)
        .await
        .unwrap();
    let tp = single.remote_log_segment_id.topic_id_partition.clone();
    let listed = f.rsm.scan_segments(Some(&tp)).await.unwrap();
    let keys: Vec<(&str, bool)> =
        listed.iter().map(|s| (s.manifest_key.as_str(), s.missing.is_empty() && s.manifest.is_ok())).collect();
    let (ks, kp) = (f.rsm.keys(&single), f.rsm.keys(&split));
    assert_eq!(keys, vec![(ks.segment.as_str(), true), (kp.manifest.as_str(), true)]);
    let found = f.rsm.find_segment(&single.remote_log_segment_id.id).await.unwrap();
    assert_eq!(found.metadata, single);
    let report = f.fresh_rsm().verify(&single).await.unwrap();
    assert_eq!(report.bytes, single.segment_size_in_bytes as u64);
    // A one-object segment is never an orphan, however old; a split segment's data without its manifest is.
    memory.delete(&kp.manifest).await.unwrap();
    let orphans = f.rsm.orphans(Some(&tp), std::time::Duration::ZERO).await.unwrap();
    let names: Vec<&str> = orphans.uncommitted.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, vec![kp.indexes.as_str(), kp.log.as_str()]);
    // Rewrapping would rewrite the whole object: refused, naming the segment.
    let ring = crate::crypto::KeyRing::from_keys(None, Vec::new()).unwrap();
    let e = f.rsm.rewrap_segment(&ks.segment, &ring, "new").await.unwrap_err();
    let text = e.to_string();
    assert!(text.contains(&single.remote_log_segment_id.id.to_string()) && text.contains("whole object"), "{text}");
}

/// `segment.layout` takes `split` or `single` in any case, and refuses anything else naming the key.
#[test]
fn the_layout_setting() {
    for (value, want) in [
        (None, Ok(SegmentLayout::Split)),
        (Some("split"), Ok(SegmentLayout::Split)),
        (Some("SINGLE"), Ok(SegmentLayout::Single)),
        (Some("one"), Err("`one` is neither `split` nor `single`")),
        (Some(""), Ok(SegmentLayout::Split)),
    ] {
        let p = props(value.map(|v| ("segment.layout", v)));
        let got = TieredConfig::read(&mut ConfigReader::new(&p)).map(|c| c.segment_layout);
        match (got, want) {
            (Ok(l), Ok(w)) => assert_eq!(l, w, "{value:?}"),
            (Err(e), Err(says)) => {
                let text = e.to_string();
                assert!(text.contains("segment.layout") && text.contains(says), "{value:?}: {text}");
            }
            (got, want) => panic!("{value:?}: {got:?}, wanted {want:?}"),
        }
    }
    assert_eq!(layout_word(SegmentLayout::Single), "single");
}

/// A sequential reader nearing a one-object segment's end gets the next one's manifest (found by a listing
/// of `.segment` keys) and first chunk ahead, so its first fetch of the next segment reads nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_one_object_segment_is_read_ahead() {
    let counting = Arc::new(CountingLayer::new(Arc::new(MemoryBackend::new())));
    let counts = counting.counts();
    let f = Fixture::in_layout(counting.clone(), "next-single", SegmentLayout::Single);
    let (_, first, first_data) = f.segment(0);
    let (_, second, second_data) = f.segment(1);
    f.rsm.copy_log_segment_data(&first, &first_data).await.unwrap();
    f.rsm.copy_log_segment_data(&second, &second_data).await.unwrap();
    let cfg =
        TieredConfig { fetch_cache_bytes: 8 << 20, fetch_prefetch_chunks: 2, ..config(&f, SegmentLayout::Single) };
    let reader = TieredStorage::new(counting.clone(), cfg);
    let len = first.segment_size_in_bytes as i64;
    let mut pos = 0;
    while pos < len {
        collect(reader.fetch_log_segment(&first, pos, Some(pos + 40_000)).await.unwrap()).await.unwrap();
        pos += 40_001;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(counts.snapshot().get(Op::List).requests, 1, "one listing finds the next segment");
    let gets = counts.snapshot().get(Op::Get).requests;
    let next = reader.manifest(&second).await.unwrap();
    let chunk = next.chunks[0].data_length as i64;
    let got = collect(reader.fetch_log_segment(&second, 0, Some(chunk - 1)).await.unwrap()).await.unwrap();
    assert!(got[..] == std::fs::read(&second_data.log_segment).unwrap()[..chunk as usize]);
    assert_eq!(counts.snapshot().get(Op::Get).requests, gets, "no cold read at the segment boundary");
}
