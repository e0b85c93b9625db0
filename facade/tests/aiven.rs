//! Segments stored by Aiven's plugin read through the store (`aiven.read.enabled`), on the filesystem store.
//!
//! The segments are real Kafka partitions an independent writer made (`tests/data/records/codecs-0` and
//! `txn-0`, kafka-python), stored in Aiven's format by the fixture writer
//! (`rsm_core::testkit::aiven_writer`, checked by hand against segments Aiven's plugin 1.1.1 wrote: same
//! manifests, chunk indexes and object sizes), with the test key pairs of `tests/data/aiven`. Every byte a
//! fetch returns is compared with the source files; damage is refused, never served.

use rsm_core::ErrorKind;
use rsm_core::crypto::AivenKeyPairs;
use rsm_core::format::aiven::AivenKeys;
use rsm_core::format::batch::BatchIter;
use rsm_core::format::partition::LocalPartition;
use rsm_core::model::{IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use rsm_core::testkit::aiven_writer::{AivenWriteSpec, write_aiven_segment};
use rsm_facade::{Store, runtime};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

fn key_file(id: &str) -> String {
    data_dir().join(format!("aiven/{id}-private.pem")).display().to_string()
}

fn key_pairs(ids: &[&str]) -> AivenKeyPairs {
    let mut pairs = AivenKeyPairs::default();
    for id in ids {
        pairs.add_pem(id, &std::fs::read_to_string(key_file(id)).unwrap(), "test").unwrap();
    }
    pairs
}

/// One closed segment of a fixture partition: its metadata (with Aiven's custom metadata when written with
/// it) and its files.
struct Segment {
    md: RemoteLogSegmentMetadata,
    data: LogSegmentData,
}

/// Writes every closed segment of the fixture partitions into `store` as Aiven's plugin would with `spec`.
fn write_fixtures(store: &Store, spec: &AivenWriteSpec) -> Vec<Segment> {
    let mut out = Vec::new();
    for name in ["codecs-0", "txn-0"] {
        let p = LocalPartition::open(&data_dir().join("records").join(name)).unwrap();
        for s in p.closed_segments() {
            let mut md = p.segment_metadata(s, 0, 1_700_000_000_000).unwrap();
            let data = p.segment_data(s).unwrap();
            let backend = store.storage().backend().clone();
            md.custom_metadata = runtime().block_on(write_aiven_segment(&*backend, &md, &data, spec)).unwrap();
            out.push(Segment { md, data });
        }
    }
    out
}

fn open(dir: &Path, settings: &[(&str, String)]) -> rsm_core::Result<Store> {
    let s: BTreeMap<String, String> = settings.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    Store::open(&format!("file://{}", dir.display()), &s)
}

fn reading(prefix: &str) -> Vec<(&'static str, String)> {
    vec![
        ("aiven.read.enabled", "true".into()),
        ("aiven.key.prefix", prefix.into()),
        ("aiven.encryption.key.pairs", "key1,key2".into()),
        ("aiven.encryption.key.pairs.key1.private.key.file", key_file("key1")),
        ("aiven.encryption.key.pairs.key2.private.key.file", key_file("key2")),
        ("key.prefix", "ours/".into()),
        ("fs.fsync", "false".into()),
    ]
}

fn fetch(store: &Store, md: &RemoteLogSegmentMetadata, start: i64, end: Option<i64>) -> rsm_core::Result<Vec<u8>> {
    let mut got = Vec::new();
    store.fetch(md, start, end)?.read_to_end(&mut got).map_err(|e| rsm_core::Error::corrupt(e.to_string()))?;
    Ok(got)
}

/// Every layout Aiven's plugin writes: stored as is, compressed (a variable chunk index), encrypted (fixed,
/// each chunk 28 bytes longer), both; one chunk per segment or several; with its custom metadata naming prefix
/// and key, or without. Each segment reads back whole and from each batch, and its indexes exactly.
#[test]
fn every_stored_form_reads_back_exactly() {
    let cases = [
        ("plain, chunks of 4 KiB, custom metadata", false, false, 4096, true),
        ("plain, one chunk", false, false, 1 << 20, false),
        ("compressed, chunks of 4 KiB", true, false, 4096, true),
        ("compressed, one chunk", true, false, 1 << 20, false),
        ("encrypted, chunks of 4 KiB", false, true, 4096, false),
        ("compressed and encrypted, chunks of 4 KiB, custom metadata", true, true, 4096, true),
        ("compressed and encrypted, one chunk", true, true, 1 << 20, false),
    ];
    for (name, compression, encrypted, chunk_size, custom_metadata) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), &reading("aiven/")).unwrap();
        let spec = AivenWriteSpec {
            key_prefix: "aiven/".into(),
            chunk_size,
            compression,
            encryption: encrypted.then(|| ("key2".to_string(), key_pairs(&["key2"]))),
            custom_metadata,
        };
        let segments = write_fixtures(&store, &spec);
        assert!(segments.len() >= 6, "{name}");
        let mut batches_read = 0;
        for Segment { md, data } in &segments {
            let id = &md.remote_log_segment_id;
            let log = std::fs::read(&data.log_segment).unwrap();
            assert_eq!(fetch(&store, md, 0, None).unwrap(), log, "{name}: {id} whole");
            let starts: Vec<u64> = BatchIter::new(&log, 0, true).map(|b| b.unwrap().position()).collect();
            for (i, &s) in starts.iter().enumerate() {
                // To the end of the segment, and (inclusive) to a byte inside a later batch.
                assert_eq!(fetch(&store, md, s as i64, None).unwrap(), &log[s as usize..], "{name}: {id} from {s}");
                let e = starts.get(i + 2).map_or(log.len() as u64 - 1, |&n| n + 7).min(log.len() as u64 - 1);
                let got = fetch(&store, md, s as i64, Some(e as i64)).unwrap();
                assert_eq!(got, &log[s as usize..=e as usize], "{name}: {id} {s}..={e}");
                batches_read += 1;
            }
            let files = [
                (IndexType::Offset, Some(data.offset_index.clone())),
                (IndexType::Timestamp, Some(data.time_index.clone())),
                (IndexType::ProducerSnapshot, Some(data.producer_snapshot_index.clone())),
                (IndexType::Transaction, data.transaction_index.clone()),
            ];
            for (t, file) in files {
                match file {
                    Some(f) => assert_eq!(&store.fetch_index(md, t).unwrap()[..], &std::fs::read(f).unwrap()[..]),
                    None => assert_eq!(store.fetch_index(md, t).unwrap_err().kind(), ErrorKind::NotFound),
                }
            }
            assert_eq!(&store.fetch_index(md, IndexType::LeaderEpoch).unwrap()[..], &data.leader_epoch_index[..]);
            let e = fetch(&store, md, log.len() as i64, None).unwrap_err().to_string();
            assert!(e.contains("outside segment"), "{e}");
        }
        assert!(segments.iter().any(|s| s.data.transaction_index.is_some()), "a transaction index is read");
        assert!(batches_read > 50, "{name}: {batches_read}");
    }
}

/// Damage is refused, never served: a flipped byte of the log (caught by the AES-GCM tag, or by the batch's
/// CRC when not encrypted), a fetch that starts inside a batch of a segment not encrypted, a manifest of
/// another segment, a key pair not listed.
#[test]
fn damage_and_wrong_keys_are_refused_naming_what() {
    for encrypted in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), &reading("")).unwrap();
        let spec = AivenWriteSpec {
            key_prefix: String::new(),
            chunk_size: 4096,
            compression: false,
            encryption: encrypted.then(|| ("key1".to_string(), key_pairs(&["key1"]))),
            custom_metadata: false,
        };
        let segments = write_fixtures(&store, &spec);
        let (a, b) = (&segments[1].md, &segments[2].md);
        let keys = |md: &RemoteLogSegmentMetadata| AivenKeys::of("", md, None);

        let log = dir.path().join(&keys(a).log);
        let mut bytes = std::fs::read(&log).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x10;
        std::fs::write(&log, &bytes).unwrap();
        let e = fetch(&store, a, 0, None).unwrap_err().to_string();
        let needle = if encrypted { "AES-GCM tag" } else { "CRC" };
        assert!(e.contains(needle), "encrypted {encrypted}: {e}");

        if !encrypted {
            let e = fetch(&store, b, 5, None).unwrap_err().to_string();
            assert!(e.contains("starts on a batch"), "{e}");
            // The producer snapshot is checked by its own CRC-32C: its last byte flipped in the `.indexes`.
            let c = &segments[3].md;
            let snapshot = store.fetch_index(c, IndexType::ProducerSnapshot).unwrap();
            assert!(snapshot.len() >= 10, "a snapshot to damage: {} bytes", snapshot.len());
            let indexes = dir.path().join(&keys(c).indexes);
            let mut all = std::fs::read(&indexes).unwrap();
            let at = all.windows(snapshot.len()).position(|w| w == &snapshot[..]).expect("the snapshot's bytes");
            all[at + snapshot.len() - 1] ^= 1;
            std::fs::write(&indexes, &all).unwrap();
            let fresh = open(dir.path(), &reading("")).unwrap();
            let e = fresh.fetch_index(c, IndexType::ProducerSnapshot).unwrap_err().to_string();
            assert!(e.contains("CRC-32C") && e.contains("PRODUCER_SNAPSHOT index of Aiven segment"), "{e}");
        }

        // A segment in neither format: not found, naming where each was looked for.
        let mut gone = a.clone();
        gone.remote_log_segment_id.id = rsm_core::model::Uuid::random();
        let e = fetch(&store, &gone, 0, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains(&format!("nor Aiven's manifest {}", keys(&gone).manifest)), "{e}");

        std::fs::copy(dir.path().join(&keys(a).manifest), dir.path().join(&keys(b).manifest)).unwrap();
        let fresh = open(dir.path(), &reading("")).unwrap();
        let e = fetch(&fresh, b, 0, None).unwrap_err().to_string();
        assert!(e.contains("describes segment") && e.contains(&a.remote_log_segment_id.id.to_string()), "{e}");

        if encrypted {
            let c = &segments[3].md;
            let mut without: Vec<(&str, String)> = reading("");
            without.retain(|(k, _)| !k.starts_with("aiven.encryption"));
            let e = fetch(&open(dir.path(), &without).unwrap(), c, 0, None).unwrap_err();
            assert_eq!(e.config_key(), Some("aiven.encryption.key.pairs"), "{e}");
            assert!(e.to_string().contains("`key1`"), "{e}");
        }
    }
}

/// Aiven's objects are committed segments to every maintenance path: no orphan sweep takes them for an
/// interrupted copy's leftovers; a delete (retention, topic deletion) removes all three; without
/// `aiven.read.enabled` they are not read; a segment copied now is ours and reads beside them.
#[test]
fn maintenance_keeps_them_deletes_them_and_new_copies_are_ours() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = reading("");
    settings.retain(|(k, _)| *k != "key.prefix");
    let store = open(dir.path(), &settings).unwrap();
    let spec = AivenWriteSpec {
        key_prefix: String::new(),
        chunk_size: 4096,
        compression: true,
        encryption: None,
        custom_metadata: true,
    };
    let segments = write_fixtures(&store, &spec);
    let orphans = store.orphans(None, std::time::Duration::ZERO).unwrap();
    assert!(orphans.is_empty(), "{:?}", orphans.keys());

    let gone = &segments[0].md;
    let keys = AivenKeys::of("", gone, None);
    store.delete(gone).unwrap();
    for k in keys.all() {
        assert!(!dir.path().join(&k).exists(), "{k} is left after the delete");
    }
    assert_eq!(store.fetch(gone, 0, None).unwrap_err().kind(), ErrorKind::NotFound);
    store.delete(gone).unwrap();

    let kept = &segments[1];
    let off = open(dir.path(), &[("fs.fsync", "false".into())]).unwrap();
    assert_eq!(off.fetch(&kept.md, 0, None).unwrap_err().kind(), ErrorKind::NotFound);
    let e = open(dir.path(), &[("aiven.key.prefix", "x/".into())]).unwrap_err();
    assert_eq!(e.config_key(), Some("aiven.read.enabled"), "{e}");

    // A new copy of another segment, in our format, beside them.
    let p = LocalPartition::open(&data_dir().join("records/legacy-0")).unwrap();
    let s = &p.closed_segments()[0];
    let mut md = p.segment_metadata(s, 0, 1_700_000_000_000).unwrap();
    md.custom_metadata = store.copy(&md, &p.segment_data(s).unwrap()).unwrap();
    assert!(store.manifest(&md).is_ok(), "the new copy is ours");
    assert_eq!(fetch(&store, &md, 0, None).unwrap(), std::fs::read(&s.log).unwrap());
    assert_eq!(fetch(&store, &kept.md, 0, None).unwrap(), std::fs::read(&kept.data.log_segment).unwrap());
    assert!(store.orphans(None, std::time::Duration::ZERO).unwrap().is_empty());
}

/// The audit over a store holding Aiven's segments under their own prefix and ours under ours: every segment
/// the metadata names is found in its format and verified whole (0 lost), the ones it does not name are
/// kept as unreferenced, not orphans; a damaged Aiven log is lost, and what an interrupted Aiven upload left
/// (objects without its `.rsm-manifest`) is an orphan.
#[test]
fn the_audit_finds_and_checks_them_in_their_own_prefix() {
    use rsm_core::RemoteLogSegmentState;
    use rsm_facade::audit::{AuditOptions, audit};
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &reading("old/")).unwrap();
    for compression in [false, true] {
        let spec = AivenWriteSpec {
            key_prefix: "old/".into(),
            chunk_size: 4096,
            compression,
            encryption: compression.then(|| ("key1".to_string(), key_pairs(&["key1"]))),
            custom_metadata: compression,
        };
        let segments = write_fixtures(&store, &spec);
        let mut metadata: Vec<RemoteLogSegmentMetadata> = segments.iter().map(|s| s.md.clone()).collect();
        for m in &mut metadata {
            m.state = RemoteLogSegmentState::CopySegmentFinished;
        }
        let unnamed = metadata.pop().unwrap();
        let report = audit(&store, &metadata, &AuditOptions::default()).unwrap();
        let parts: Vec<_> = report.partitions.values().collect();
        assert_eq!(parts.iter().map(|p| p.copied).sum::<usize>(), metadata.len());
        for p in &parts {
            assert!(p.lost.is_empty() && p.unverified.is_empty() && p.damaged.is_empty(), "{p:?}");
            assert!(p.orphans.is_empty() && p.gaps.is_empty(), "{p:?}");
        }
        let unreferenced: Vec<String> =
            parts.iter().flat_map(|p| p.unreferenced.iter().map(|u| u.segment_id.clone())).collect();
        assert_eq!(unreferenced, [unnamed.remote_log_segment_id.id.to_string()]);
        assert!(report.left_alone.is_empty(), "{:?}", report.left_alone);

        // Damage and leftovers, then the same audit.
        let damaged = &metadata[1];
        let log = dir.path().join(AivenKeys::of("old/", damaged, None).log);
        let mut bytes = std::fs::read(&log).unwrap();
        let at = bytes.len() - 30;
        bytes[at] ^= 0x40;
        std::fs::write(&log, bytes).unwrap();
        std::fs::remove_file(dir.path().join(AivenKeys::of("old/", &unnamed, None).manifest)).unwrap();
        let report = audit(&store, &metadata, &AuditOptions::default()).unwrap();
        let lost: Vec<_> = report.partitions.values().flat_map(|p| p.lost.iter()).collect();
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(lost[0].segment_id, damaged.remote_log_segment_id.id.to_string());
        let orphans: Vec<_> =
            report.partitions.values().flat_map(|p| p.orphans.iter().map(|o| o.key.clone())).collect();
        let mut want: Vec<String> = AivenKeys::of("old/", &unnamed, None).all()[1..].to_vec();
        want.sort();
        let mut orphans = orphans;
        orphans.sort();
        assert_eq!(orphans, want);
        std::fs::remove_dir_all(dir.path().join("old")).unwrap();
    }
}

/// Offsets and timestamps found as Kafka finds them (the first batch reaching the offset, the first batch
/// with a timestamp at or after the one asked), in every stored form, compared with the source log's batch
/// headers read here.
#[test]
fn offsets_and_timestamps_find_their_batch() {
    for (compression, encrypted) in [(false, false), (true, true)] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), &reading("")).unwrap();
        let spec = AivenWriteSpec {
            key_prefix: String::new(),
            chunk_size: 4096,
            compression,
            encryption: encrypted.then(|| ("key1".to_string(), key_pairs(&["key1"]))),
            custom_metadata: false,
        };
        for Segment { md, data } in write_fixtures(&store, &spec) {
            let log = std::fs::read(&data.log_segment).unwrap();
            // (position, base offset, last offset, max timestamp) of each v2 batch, from its header.
            let mut batches = Vec::new();
            let mut at = 0;
            while at < log.len() {
                let be =
                    |from: usize, n: usize| log[at + from..at + from + n].iter().fold(0i64, |a, &b| a << 8 | b as i64);
                let base = be(0, 8);
                batches.push((at as i64, base, base + be(23, 4), be(35, 8)));
                at += 12 + be(8, 4) as usize;
            }
            for o in md.start_offset..=md.end_offset {
                let want = batches.iter().find(|b| b.2 >= o).unwrap().0;
                assert_eq!(store.position_of_offset(&md, o).unwrap(), want, "offset {o}");
            }
            let mut stamps: Vec<i64> = batches.iter().flat_map(|b| [b.3 - 1, b.3, b.3 + 1]).collect();
            stamps.push(0);
            for t in stamps {
                let want = batches.iter().find(|b| b.3 >= t).map(|b| b.0);
                assert_eq!(store.position_of_timestamp(&md, t).unwrap(), want, "timestamp {t}");
            }
        }
    }
}

/// A reader that found a segment as Aiven's before another process migrated it: its next fetch fails (the old
/// objects are gone, never other bytes), and the one after reads the new copy.
#[test]
fn a_reader_finds_a_segment_migrated_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let reader = open(dir.path(), &reading("old/")).unwrap();
    let spec = AivenWriteSpec {
        key_prefix: "old/".into(),
        chunk_size: 4096,
        compression: true,
        encryption: None,
        custom_metadata: true,
    };
    let segments = write_fixtures(&reader, &spec);
    let Segment { md, data } = &segments[1];
    let log = std::fs::read(&data.log_segment).unwrap();
    assert_eq!(fetch(&reader, md, 0, None).unwrap(), log);
    let migrator = open(dir.path(), &reading("old/")).unwrap();
    let work = tempfile::tempdir().unwrap();
    let done = runtime().block_on(migrator.storage().migrate_aiven_segment(md, &work.path().join("w"))).unwrap();
    assert_eq!(done, rsm_core::storage::aiven::Migrated::Copied(log.len() as u64));
    let e = fetch(&reader, md, 0, None).unwrap_err().to_string();
    assert!(e.contains("not found"), "{e}");
    assert_eq!(fetch(&reader, md, 0, None).unwrap(), log);
    assert!(reader.manifest(md).is_ok(), "read as ours now");
}
