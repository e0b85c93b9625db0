//! Envelope encryption (`encryption.*`), end to end: segments copied with no transform, compression,
//! encryption, and both, read back byte for byte through every path (a whole fetch, ranges, by offset, by
//! timestamp, `verify`) with the chunk cache off and on; a store mixing encrypted and plain segments reads
//! back; chunks swapped, moved between segments or damaged, and a wrapped key taken from another segment,
//! read as corrupt, never as other bytes; every byte of an encrypted chunk and of its manifest damaged in
//! turn reads as corrupt; an older manifest put back does not read; a wrong key or a missing key id is an
//! error naming the key.

use bytes::Bytes;
use rsm_core::backend::{MemoryBackend, StorageBackend};
use rsm_core::config::{ConfigReader, props};
use rsm_core::format::chunk::Transform;
use rsm_core::format::manifest::Manifest;
use rsm_core::testkit::LogSegment;
use rsm_core::testkit::log_writer::{Record, encode_batch};
use rsm_core::testkit::rsm_contract::collect;
use rsm_core::{ErrorKind, RemoteStorageManager, TieredConfig, TieredStorage, TopicIdPartition, TopicPartition, Uuid};
use std::sync::Arc;

const FIRST_TS: i64 = 1_700_000_000_000;
const HEX_1: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const HEX_2: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";
const HEX_OTHER: &str = "1111111111111111111111111111111111111111111111111111111111111111";

/// A segment of about `bytes` bytes of JSON-like batches from `start_offset`.
fn segment(tp: &TopicIdPartition, start_offset: i64, bytes: usize) -> LogSegment {
    let mut log = Vec::new();
    let mut offset = start_offset;
    while log.len() < bytes {
        let recs: Vec<Record> = (0..20)
            .map(|i| Record {
                key: Some(format!("k{}", (offset + i) % 50).into_bytes()),
                value: Some(
                    format!(r#"{{"id":{},"path":"/products/{}/reviews","ms":{}}}"#, offset + i, i % 13, i * 7)
                        .into_bytes(),
                ),
                headers: vec![],
                timestamp: FIRST_TS + (offset + i) * 3,
            })
            .collect();
        log.extend(encode_batch(offset, 0, &recs));
        offset += 20;
    }
    LogSegment::write(tp, start_offset, log, FIRST_TS)
}

fn partition() -> TopicIdPartition {
    TopicIdPartition::new(Uuid::random(), TopicPartition::new("secrets", 0))
}

/// Key files in a directory of their own.
struct Keys {
    dir: tempfile::TempDir,
}

impl Keys {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (id, hex) in [("k1", HEX_1), ("k2", HEX_2), ("other", HEX_OTHER)] {
            std::fs::write(dir.path().join(id), format!("{hex}\n")).unwrap();
        }
        Keys { dir }
    }

    /// Settings with small chunks and blocks, `compression` (in frames of 64 KiB, at most a chunk), and the
    /// keyring `keys` as `(id, key file)`, encrypting under `active` when given.
    fn config(&self, compression: bool, active: Option<&str>, keys: &[(&str, &str)]) -> TieredConfig {
        self.config_with(compression, active, keys, &[])
    }

    /// [`Keys::config`] with `extra` settings.
    fn config_with(
        &self,
        compression: bool,
        active: Option<&str>,
        keys: &[(&str, &str)],
        extra: &[(&str, &str)],
    ) -> TieredConfig {
        let mut pairs: Vec<(String, String)> = vec![
            ("chunk.size".into(), (64 << 10).to_string()),
            ("chunk.block.size".into(), (4 << 10).to_string()),
            ("compression.enabled".into(), compression.to_string()),
        ];
        if !keys.is_empty() {
            let ids: Vec<&str> = keys.iter().map(|k| k.0).collect();
            pairs.push(("encryption.keys".into(), ids.join(",")));
            for (id, file) in keys {
                pairs.push((format!("encryption.key.{id}.file"), self.dir.path().join(file).display().to_string()));
            }
        }
        if let Some(a) = active {
            pairs.push(("encryption.enabled".into(), "true".into()));
            pairs.push(("encryption.key.id".into(), a.into()));
        }
        pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let p = props(pairs);
        let mut r = ConfigReader::new(&p);
        let c = TieredConfig::read(&mut r).unwrap();
        r.finish().unwrap();
        c
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_path_round_trips_for_none_compression_encryption_and_both() {
    let keys = Keys::new();
    let tp = partition();
    const ONE_FRAME: &[(&str, &str)] = &[("compression.frame.size", "0")];
    // (case, compression, encryption, extra settings, the transform of every chunk, manifest version)
    let cases = [
        ("none", false, false, &[][..], Transform::None, 2),
        ("compression", true, false, &[], Transform::ZstdFrames, 5),
        ("compression, one frame a chunk", true, false, ONE_FRAME, Transform::Zstd, 3),
        ("encryption", false, true, &[], Transform::Aes256Gcm, 4),
        ("both", true, true, &[], Transform::ZstdFramesAes256Gcm, 5),
        ("both, one frame a chunk", true, true, ONE_FRAME, Transform::ZstdAes256Gcm, 4),
    ];
    for (i, (case, compression, encryption, extra, transform, version)) in cases.into_iter().enumerate() {
        let s = segment(&tp, i as i64 * 100_000, 400_000);
        let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let active = encryption.then_some("k1");
        let writer = TieredStorage::new(backend.clone(), keys.config_with(compression, active, &[("k1", "k1")], extra));
        writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        let keys_of = writer.keys(&s.md);
        let manifest = backend.get_range(&keys_of.manifest, 0..u64::MAX).await.unwrap();
        assert_eq!(u16::from_be_bytes([manifest[4], manifest[5]]), version, "{case}");
        let m = Manifest::decode(&manifest, "m").unwrap();
        assert!(m.chunks.iter().all(|c| c.rdi.transform == transform), "{case}: {:?}", m.chunks[0].rdi.transform);
        assert_eq!(m.encryption.as_ref().map(|e| e.kek_id.as_str()), active, "{case}");
        let object = backend.get_range(&keys_of.log, 0..u64::MAX).await.unwrap();
        if transform == Transform::Aes256Gcm {
            let blocks: usize = m.chunks.iter().map(|c| (c.data_length as usize).div_ceil(m.block_size as usize)).sum();
            assert_eq!(object.len(), s.log.len() + 28 * blocks, "{case}: a nonce and a tag a block");
            // No chunk's plaintext appears in the object.
            let probe = &s.log[100..164];
            assert!(!object.windows(probe.len()).any(|w| w == probe), "{case}: plaintext stored");
        }
        for cache in [0, 64 << 20] {
            // The reader needs the keys, not encryption on.
            let mut rc = keys.config(false, None, &[("k1", "k1")]);
            rc.fetch_cache_bytes = cache;
            let reader = TieredStorage::open(backend.clone(), rc, &format!("mem://{case}/{cache}")).unwrap();
            let m = reader.manifest(&s.md).await.unwrap();
            s.assert_reads_back(&reader, &m, &format!("{case}, cache {cache}")).await;
        }
    }
}

#[tokio::test]
async fn a_store_mixing_encrypted_and_plain_segments_reads_back() {
    let keys = Keys::new();
    let tp = partition();
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    // (compression, active key)
    let written = [(false, None), (false, Some("k1")), (true, Some("k2")), (true, None), (true, Some("k1"))];
    let mut segments = Vec::new();
    for (i, (compression, active)) in written.into_iter().enumerate() {
        let s = segment(&tp, i as i64 * 100_000, 300_000);
        let w = TieredStorage::new(backend.clone(), keys.config(compression, active, &[("k1", "k1"), ("k2", "k2")]));
        w.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        segments.push(s);
    }
    let reader = TieredStorage::new(backend.clone(), keys.config(false, None, &[("k1", "k1"), ("k2", "k2")]));
    let listed = reader.list_segments(Some(&tp)).await.unwrap();
    let mut ids: Vec<Option<String>> = listed.iter().map(|m| m.encryption.as_ref().map(|e| e.kek_id.clone())).collect();
    ids.sort();
    assert_eq!(ids, [None, None, Some("k1".into()), Some("k1".into()), Some("k2".into())]);
    for (i, s) in segments.iter().enumerate() {
        let m = reader.manifest(&s.md).await.unwrap();
        s.assert_reads_back(&reader, &m, &format!("segment {i}")).await;
    }
    // Without a keyring the plain segments still read; the encrypted ones name their key.
    let plain = TieredStorage::new(backend.clone(), keys.config(false, None, &[]));
    let m = plain.manifest(&segments[0].md).await.unwrap();
    segments[0].assert_reads_back(&plain, &m, "plain, no keyring").await;
    let e = collect(plain.fetch_log_segment(&segments[2].md, 0, None).await.unwrap()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(e.full_message().contains("`k2`"), "{e}");
}

/// Every read of `s` through `rsm` fails with `kind` and a message containing `says`; none returns bytes.
async fn every_read_fails(rsm: &TieredStorage, s: &LogSegment, kind: ErrorKind, says: &str, case: &str) {
    let m = rsm.manifest(&s.md).await.unwrap();
    // Chunk 1 whole (a chunk only encrypted is read block by block: a read of some of its blocks checks
    // those; see a_read_of_part_of_an_encrypted_chunk_decrypts_only_its_blocks).
    let (from, to) = (m.chunks[1].original_position() as i64, m.chunks[1].end() as i64 - 1);
    let offset = m.chunks[1].first_offset + 1;
    let results = [
        collect(rsm.fetch_log_segment(&s.md, 0, None).await.unwrap()).await.map(|_| ()),
        collect(rsm.fetch_log_segment(&s.md, from, Some(to)).await.unwrap()).await.map(|_| ()),
        rsm.position_of_offset(&s.md, offset).await.map(|_| ()),
        rsm.verify(&s.md).await.map(|_| ()),
    ];
    for (path, r) in results.into_iter().enumerate() {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), kind, "{case}, path {path}: {e}");
        assert!(e.full_message().contains(says), "{case}, path {path}: {}", e.full_message());
        assert!(!e.full_message().contains(&HEX_1[..16]), "{case}: a key in an error");
    }
}

/// Writes `m` as the manifest of `s` (new CRCs: only the encryption can tell).
async fn put_manifest(backend: &Arc<dyn StorageBackend>, rsm: &TieredStorage, s: &LogSegment, m: &Manifest) {
    backend.put_bytes(&rsm.keys(&s.md).manifest, Bytes::from(m.encode())).await.unwrap();
}

/// A memory store, settings encrypting under k1 (and compressing with `compression`), and a writer with them.
fn encrypting_under_k1(keys: &Keys, compression: bool) -> (Arc<dyn StorageBackend>, TieredConfig, TieredStorage) {
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let config = keys.config(compression, Some("k1"), &[("k1", "k1")]);
    let writer = TieredStorage::new(backend.clone(), config.clone());
    (backend, config, writer)
}

#[tokio::test]
async fn tampered_chunks_and_keys_read_as_corrupt_never_as_other_bytes() {
    let keys = Keys::new();
    let tp = partition();
    for compression in [false, true] {
        let (backend, config, writer) = encrypting_under_k1(&keys, compression);
        // Two segments of the same bytes and offsets: their chunks line up.
        let a = segment(&tp, 0, 300_000);
        let b = segment(&tp, 0, 300_000);
        assert!(a.log == b.log && a.md.remote_log_segment_id != b.md.remote_log_segment_id);
        for s in [&a, &b] {
            writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        }
        let fresh = || TieredStorage::new(backend.clone(), config.clone());
        let ma = (*writer.manifest(&a.md).await.unwrap()).clone();
        let mb = (*writer.manifest(&b.md).await.unwrap()).clone();
        let (ka, kb) = (writer.keys(&a.md), writer.keys(&b.md));
        let obj_a = backend.get_range(&ka.log, 0..u64::MAX).await.unwrap();
        let obj_b = backend.get_range(&kb.log, 0..u64::MAX).await.unwrap();
        let stored = |o: &Bytes, m: &Manifest, i: usize| {
            let r = m.chunks[i].stored_range();
            o[r.start as usize..r.end as usize].to_vec()
        };
        let restore = || async {
            backend.put_bytes(&ka.log, obj_a.clone()).await.unwrap();
            backend.put_bytes(&kb.log, obj_b.clone()).await.unwrap();
            put_manifest(&backend, &writer, &a, &ma).await;
            put_manifest(&backend, &writer, &b, &mb).await;
        };
        let case = |what: &str| format!("{what}, compression {compression}");

        // Chunks 1 and 2 exchanged in the object, the manifest kept.
        let (c1, c2) = (stored(&obj_a, &ma, 1), stored(&obj_a, &ma, 2));
        let mut swapped = obj_a[..ma.chunks[1].stored_range().start as usize].to_vec();
        swapped.extend_from_slice(&c2);
        swapped.extend_from_slice(&c1);
        swapped.extend_from_slice(&obj_a[ma.chunks[2].stored_range().end as usize..]);
        backend.put_bytes(&ka.log, Bytes::from(swapped.clone())).await.unwrap();
        every_read_fails(&fresh(), &a, ErrorKind::Corrupt, "chunk", &case("swapped, manifest kept")).await;
        // The same, with entry 1 pointed at chunk 2's bytes and entry 2 at chunk 1's, stored lengths and
        // CRCs to match (a reorder): only the encryption tells.
        let mut m = ma.clone();
        let s1 = m.chunks[1].stored_range().start;
        let (e1, e2) = (m.chunks[1].rdi, m.chunks[2].rdi);
        m.chunks[1].rdi = rsm_core::format::chunk::Rdi {
            stored_position: s1,
            stored_length: e2.stored_length,
            stored_crc32c: e2.stored_crc32c,
            ..e1
        };
        m.chunks[2].rdi = rsm_core::format::chunk::Rdi {
            stored_position: s1 + c2.len() as u64,
            stored_length: e1.stored_length,
            stored_crc32c: e1.stored_crc32c,
            ..e2
        };
        if let Some(t) = m.frames.as_mut() {
            // Chunks of one frame each (64 KiB frames): their frame tables swap as well.
            t.chunks.swap(1, 2);
        }
        put_manifest(&backend, &writer, &a, &m).await;
        every_read_fails(&fresh(), &a, ErrorKind::Corrupt, "does not decrypt", &case("reordered")).await;
        restore().await;

        // Chunk 1 of segment A put in place of chunk 1 of segment B, B's entry made to match.
        let a1 = stored(&obj_a, &ma, 1);
        let r = mb.chunks[1].stored_range();
        let mut moved = obj_b[..r.start as usize].to_vec();
        moved.extend_from_slice(&a1);
        moved.extend_from_slice(&obj_b[r.end as usize..]);
        let shift = a1.len() as i64 - (r.end - r.start) as i64;
        let mut m = mb.clone();
        m.chunks[1].rdi.stored_length = a1.len() as u32;
        m.chunks[1].rdi.stored_crc32c = rsm_core::checksum::crc32c(&a1);
        if let (Some(t), Some(ta)) = (m.frames.as_mut(), ma.frames.as_ref()) {
            t.chunks[1] = ta.chunks[1].clone();
        }
        for c in m.chunks.iter_mut().skip(2) {
            c.rdi.stored_position = (c.rdi.stored_position as i64 + shift) as u64;
        }
        backend.put_bytes(&kb.log, Bytes::from(moved)).await.unwrap();
        put_manifest(&backend, &writer, &b, &m).await;
        every_read_fails(&fresh(), &b, ErrorKind::Corrupt, "does not decrypt", &case("moved between segments")).await;
        restore().await;

        // One bit flipped in a stored chunk (its nonce, body, tag), with and without the stored CRC fixed.
        let r = ma.chunks[1].stored_range();
        for at in [r.start, r.start + 12, (r.start + r.end) / 2, r.end - 1] {
            let mut bad = obj_a.to_vec();
            bad[at as usize] ^= 0x04;
            backend.put_bytes(&ka.log, Bytes::from(bad.clone())).await.unwrap();
            every_read_fails(&fresh(), &a, ErrorKind::Corrupt, "chunk", &case(&format!("bit at {at}"))).await;
            let mut m = ma.clone();
            m.chunks[1].rdi.stored_crc32c = rsm_core::checksum::crc32c(&bad[r.start as usize..r.end as usize]);
            if let Some(t) = m.frames.as_mut() {
                // The frame holding the flipped bit gets its CRC fixed too.
                let mut start = r.start;
                for f in t.chunks[1].iter_mut() {
                    let end = start + f.stored_length as u64;
                    f.stored_crc32c = rsm_core::checksum::crc32c(&bad[start as usize..end as usize]);
                    start = end;
                }
            }
            put_manifest(&backend, &writer, &a, &m).await;
            every_read_fails(
                &fresh(),
                &a,
                ErrorKind::Corrupt,
                "does not decrypt",
                &case(&format!("bit at {at}, CRC fixed")),
            )
            .await;
            restore().await;
        }

        // Segment B's wrapped key in segment A's manifest.
        let m = Manifest { encryption: mb.encryption.clone(), ..ma.clone() };
        put_manifest(&backend, &writer, &a, &m).await;
        every_read_fails(&fresh(), &a, ErrorKind::Corrupt, "does not unwrap", &case("another segment's key")).await;
        restore().await;

        // Untampered, everything reads.
        let m = fresh().manifest(&a.md).await.unwrap();
        a.assert_reads_back(&fresh(), &m, &case("restored")).await;

        // The key `k1` with other bytes; a keyring without `k1`.
        let wrong = TieredStorage::new(backend.clone(), keys.config(false, None, &[("k1", "other")]));
        every_read_fails(
            &wrong,
            &a,
            ErrorKind::Corrupt,
            "does not unwrap with key encryption key `k1`",
            &case("wrong key"),
        )
        .await;
        let missing = TieredStorage::new(backend.clone(), keys.config(false, None, &[("k2", "k2")]));
        every_read_fails(&missing, &a, ErrorKind::Config, "`k1` is not in the keyring", &case("missing key")).await;
    }
}

#[test]
fn settings_and_keyrings_never_print_a_key() {
    let keys = Keys::new();
    let c = keys.config(true, Some("k1"), &[("k1", "k1"), ("k2", "k2")]);
    for text in [format!("{c:?}"), format!("{:?}", c.encryption), format!("{c:#?}")] {
        for hex in [HEX_1, HEX_2] {
            assert!(!text.contains(&hex[..8]) && !text.to_lowercase().contains(&hex[8..24]), "{text}");
        }
        assert!(text.contains("[redacted]"), "{text}");
    }
    let e = c.encryption.unwrap();
    assert!(e.encrypt);
    assert_eq!(e.keyring.ids().collect::<Vec<_>>(), ["k1", "k2"]);
}

#[tokio::test]
async fn rewrap_segment_moves_a_segment_to_another_key_rewriting_only_its_manifest() {
    let keys = Keys::new();
    let tp = partition();
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let both = keys.config(false, Some("k1"), &[("k1", "k1"), ("k2", "k2")]);
    let writer = TieredStorage::new(backend.clone(), both.clone());
    let s = segment(&tp, 0, 300_000);
    writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let k = writer.keys(&s.md);
    let object = backend.get_range(&k.log, 0..u64::MAX).await.unwrap();
    let keyring = both.encryption.as_ref().unwrap().keyring.clone();
    assert!(writer.rewrap_segment(&k.manifest, &keyring, "k2").await.unwrap(), "rewrapped");
    assert!(!writer.rewrap_segment(&k.manifest, &keyring, "k2").await.unwrap(), "a rerun skips it");
    assert!(backend.get_range(&k.log, 0..u64::MAX).await.unwrap() == object, "the chunks are untouched");
    let only_k2 = TieredStorage::new(backend.clone(), keys.config(false, None, &[("k2", "k2")]));
    let m = only_k2.manifest(&s.md).await.unwrap();
    assert_eq!(m.encryption.as_ref().unwrap().kek_id, "k2");
    s.assert_reads_back(&only_k2, &m, "under k2 only").await;
    let e = only_k2.rewrap_segment(&k.manifest, &keyring, "k9").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(e.full_message().contains("`k9`"), "{e}");
}

/// A fetch of the whole of `s` must fail as corrupt, returning no byte at all (`s` is one chunk).
async fn whole_fetch_is_corrupt(rsm: &TieredStorage, s: &LogSegment, case: &str) {
    let r = match rsm.fetch_log_segment(&s.md, 0, None).await {
        Ok(stream) => collect(stream).await,
        Err(e) => Err(e),
    };
    match r {
        Ok(bytes) => panic!("{case}: {} bytes returned from a damaged segment", bytes.len()),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{case}: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_byte_of_an_encrypted_segment_damaged_reads_as_corrupt() {
    let keys = Keys::new();
    let tp = partition();
    for compression in [false, true] {
        let (backend, config, writer) = encrypting_under_k1(&keys, compression);
        // One chunk of three 4 KiB blocks.
        let s = segment(&tp, 0, 12_000);
        writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
        let k = writer.keys(&s.md);
        let reader = TieredStorage::new(backend.clone(), config.clone());
        let m = reader.manifest(&s.md).await.unwrap();
        assert_eq!(m.chunks.len(), 1, "compression {compression}");
        let object = backend.get_range(&k.log, 0..u64::MAX).await.unwrap();
        let manifest = backend.get_range(&k.manifest, 0..u64::MAX).await.unwrap();
        // Every byte of the stored chunk (nonce, ciphertext, tag), one at a time; the manifest is cached,
        // so only the chunk is read again.
        for at in 0..object.len() {
            let mut bad = object.to_vec();
            bad[at] ^= 0x01;
            backend.put_bytes(&k.log, Bytes::from(bad)).await.unwrap();
            whole_fetch_is_corrupt(&reader, &s, &format!("chunk byte {at}, compression {compression}")).await;
        }
        backend.put_bytes(&k.log, object.clone()).await.unwrap();
        // Every byte of the manifest (its wrapped data key among them), read by a manager that has not
        // cached it.
        for at in 0..manifest.len() {
            let mut bad = manifest.to_vec();
            bad[at] ^= 0x01;
            backend.put_bytes(&k.manifest, Bytes::from(bad)).await.unwrap();
            let fresh = TieredStorage::new(backend.clone(), config.clone());
            whole_fetch_is_corrupt(&fresh, &s, &format!("manifest byte {at}, compression {compression}")).await;
        }
        backend.put_bytes(&k.manifest, manifest).await.unwrap();
        let fresh = TieredStorage::new(backend.clone(), config.clone());
        let got = collect(fresh.fetch_log_segment(&s.md, 0, None).await.unwrap()).await.unwrap();
        assert!(got == s.log, "compression {compression}: restored, the segment reads");
    }
}

#[tokio::test]
async fn an_older_manifest_put_back_does_not_read() {
    let keys = Keys::new();
    let tp = partition();
    let backend: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
    let config = keys.config(false, Some("k1"), &[("k1", "k1"), ("k2", "k2")]);
    let writer = TieredStorage::new(backend.clone(), config.clone());
    let s = segment(&tp, 0, 300_000);
    let k = writer.keys(&s.md);

    // The same segment copied twice (a retried copy): the second copy has a data key of its own, so the
    // first copy's manifest, put back over the second's, describes chunks that are not there (their stored
    // CRCs differ first; with them matched, its data key would decrypt none of them).
    writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let first = backend.get_range(&k.manifest, 0..u64::MAX).await.unwrap();
    writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let second = backend.get_range(&k.manifest, 0..u64::MAX).await.unwrap();
    assert!(first != second, "each copy wraps a data key of its own");
    backend.put_bytes(&k.manifest, first).await.unwrap();
    every_read_fails(
        &TieredStorage::new(backend.clone(), config.clone()),
        &s,
        ErrorKind::Corrupt,
        "chunk",
        "first copy's manifest",
    )
    .await;
    backend.put_bytes(&k.manifest, second.clone()).await.unwrap();

    // After a rotation to k2 and k1's removal, the manifest from before the rotation put back names k1, which
    // is gone: an error naming the key, not bytes.
    let keyring = config.encryption.as_ref().unwrap().keyring.clone();
    assert!(writer.rewrap_segment(&k.manifest, &keyring, "k2").await.unwrap());
    backend.put_bytes(&k.manifest, second).await.unwrap();
    let only_k2 = TieredStorage::new(backend.clone(), keys.config(false, None, &[("k2", "k2")]));
    every_read_fails(
        &only_k2,
        &s,
        ErrorKind::Config,
        "`k1` is not in the keyring",
        "manifest from before the rotation",
    )
    .await;
}

#[tokio::test]
async fn a_read_of_part_of_an_encrypted_chunk_decrypts_only_its_blocks() {
    let keys = Keys::new();
    let tp = partition();
    let (backend, config, writer) = encrypting_under_k1(&keys, false);
    let s = segment(&tp, 0, 300_000);
    writer.copy_log_segment_data(&s.md, &s.data).await.unwrap();
    let m = writer.manifest(&s.md).await.unwrap();
    let (c, block) = (m.chunks[1], m.block_size as u64);
    assert!(c.data_length as u64 > 4 * block, "a chunk of several blocks");
    let k = writer.keys(&s.md);
    let object = backend.get_range(&k.log, 0..u64::MAX).await.unwrap();
    // One bit flipped in the last block of chunk 1.
    let mut bad = object.to_vec();
    bad[c.stored_range().end as usize - 20] ^= 0x08;
    backend.put_bytes(&k.log, Bytes::from(bad)).await.unwrap();
    let counting = Arc::new(rsm_core::backend::layers::CountingLayer::new(backend.clone()));
    let reader = TieredStorage::new(counting.clone(), config.clone());
    reader.manifest(&s.md).await.unwrap();
    // Bytes in chunk 1's first block: read (its stored block only) and returned as they are.
    let (a, b) = (c.original_position() + 10, c.original_position() + 500);
    let before = counting.counts().snapshot();
    let got = collect(reader.fetch_log_segment(&s.md, a as i64, Some(b as i64)).await.unwrap()).await.unwrap();
    assert!(got[..] == s.log[a as usize..=b as usize], "the first block's bytes");
    let read = counting.counts().snapshot().since(&before);
    let get = read.get(rsm_core::backend::Op::Get);
    assert_eq!((get.requests, get.bytes_received), (1, block + 28), "one sealed block read: {read}");
    // Bytes in its last block: corrupt, naming the block.
    let last = c.end() - 5;
    let e =
        collect(reader.fetch_log_segment(&s.md, last as i64, Some(last as i64 + 1)).await.unwrap()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("does not decrypt"), "{e}");
}
