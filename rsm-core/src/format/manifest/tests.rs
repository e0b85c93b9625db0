//! The manifest's tests: round trips of every version written, the lookups and block checks, and every
//! damage and misdescription refused.

use super::*;
use crate::crypto::{CHUNK_OVERHEAD, MAX_PROVIDER_BLOB_LEN, Wrapped};
use crate::format::chunk::{Rdi, RdiObject, Transform};
use crate::model::{CustomMetadata, RemoteLogSegmentId, TopicIdPartition, TopicPartition, Uuid};
use std::collections::BTreeMap;

pub(crate) fn sample() -> Manifest {
    let id = RemoteLogSegmentId::new(
        TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new("orders", 3)),
        Uuid::new(3, 4),
    );
    let mut metadata =
        RemoteLogSegmentMetadata::new(id, 100, 299, 5_000, 7, 6_000, 2_000, BTreeMap::from([(0, 100), (2, 250)]))
            .unwrap();
    metadata.custom_metadata = Some(CustomMetadata(vec![1, 2, 3]));
    let chunk = |p: u64, len: u32, first: i64, last: i64| ChunkEntry {
        first_offset: first,
        last_offset: last,
        first_timestamp: first * 10,
        last_timestamp: last * 10,
        data_length: len,
        rdi: Rdi {
            object: RdiObject::Log,
            transform: Transform::None,
            segment_start_offset: 100,
            segment_id: Uuid::new(3, 4),
            stored_position: p,
            stored_length: len,
            crc32c: 9,
            original_position: p,
            stored_crc32c: 9,
        },
    };
    Manifest {
        metadata,
        log_length: 2_000,
        chunk_target: 1_000,
        indexes: [
            Some(IndexLocation { position: 0, length: 80, crc32c: 1 }),
            Some(IndexLocation { position: 80, length: 120, crc32c: 2 }),
            Some(IndexLocation { position: 200, length: 10, crc32c: 3 }),
            None,
            Some(IndexLocation { position: 210, length: 12, crc32c: 4 }),
        ],
        chunks: vec![chunk(0, 1_000, 100, 199), chunk(1_000, 1_000, 200, 299)],
        block_size: 300,
        block_crcs: (11..19).collect(),
        encryption: None,
        frames: None,
        stored_as: StoredAs::Split,
    }
}

/// `sample()` over real bytes: its block (or, without blocks, chunk) CRCs are those of `log`.
fn with_true_crcs(mut m: Manifest, log: &[u8]) -> Manifest {
    for c in m.chunks.iter_mut() {
        c.rdi.crc32c = crate::checksum::crc32c(&log[c.original_position() as usize..c.end() as usize]);
    }
    m.block_crcs.clear();
    for c in &m.chunks {
        for b in log[c.original_position() as usize..c.end() as usize].chunks(m.block_size.max(1) as usize) {
            m.block_crcs.push(crate::checksum::crc32c(b));
        }
    }
    if m.block_size == 0 {
        m.block_crcs.clear();
    }
    m
}

#[test]
fn reads_align_to_blocks_and_every_block_is_checked() {
    let log: Vec<u8> = (0..2_000u32).map(|i| (i * 7) as u8).collect();
    // Blocks of 300 from each chunk's start: 0..300, …, 900..1000, 1000..1300, …, 1900..2000.
    let m = with_true_crcs(sample(), &log);
    let cases =
        [(0..1, 0..300), (299..301, 0..600), (950..1050, 900..1300), (1950..5000, 1900..2000), (700..700, 700..700)];
    for (want, aligned) in cases {
        let got = m.align(want.clone());
        assert_eq!(got, aligned, "{want:?}");
        m.check_blocks(got.clone(), &log[got.start as usize..got.end as usize], "k").unwrap();
    }
    let e = m.check_blocks(10..300, &log[10..300], "k").unwrap_err();
    assert!(e.to_string().contains("not aligned"), "{e}");
    let mut bad = log[900..1300].to_vec();
    bad[150] ^= 1;
    let e = m.check_blocks(900..1300, &bad, "t/0/x.log").unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt);
    assert!(e.to_string().contains("t/0/x.log: block 1000..1300"), "{e}");
    // Without block CRCs (version 1) the blocks are the chunks.
    let v1 = with_true_crcs(Manifest { block_size: 0, ..sample() }, &log);
    assert_eq!(v1.align(950..1050), 0..2_000);
    assert_eq!(v1.align(1500..1501), 1_000..2_000);
    let mut bad = log[1000..2000].to_vec();
    bad[999] ^= 1;
    assert_eq!(v1.check_blocks(1000..2000, &bad, "k").unwrap_err().kind(), crate::error::ErrorKind::Corrupt);
}

#[test]
fn round_trip_and_lookups() {
    let m = sample();
    let bytes = m.encode();
    assert_eq!(&bytes[..6], b"RSMM\0\x02");
    let d = Manifest::decode(&bytes, "k").unwrap();
    assert_eq!(d, m);
    assert_eq!(d.chunk_at_position(0), Some(0));
    assert_eq!(d.chunk_at_position(999), Some(0));
    assert_eq!(d.chunk_at_position(1_000), Some(1));
    assert_eq!(d.chunk_at_position(2_000), None);
    assert_eq!(d.chunk_for_offset(150), Some(0));
    assert_eq!(d.chunk_for_offset(200), Some(1));
    assert_eq!(d.chunk_for_offset(300), None);
    assert_eq!(d.chunk_for_timestamp(1_995), Some(1));
    assert_eq!(d.index(IndexType::Transaction), None);
}

/// `sample()` with its second chunk compressed (stored in 400 bytes after the first).
fn compressed_sample() -> Manifest {
    let mut m = sample();
    let c = &mut m.chunks[1].rdi;
    (c.transform, c.stored_length, c.stored_crc32c) = (Transform::Zstd, 400, 77);
    m
}

#[test]
fn a_transformed_chunk_makes_version_3_and_is_checked_by_block() {
    let m = compressed_sample();
    let bytes = m.encode();
    assert_eq!(&bytes[..6], b"RSMM\0\x03");
    assert_eq!(bytes.len(), sample().encode().len() + 4, "one RDI 4 bytes longer");
    assert_eq!(Manifest::decode(&bytes, "k").unwrap(), m);
    // Both chunks keep their blocks: the compressed one is read whole but checked, and so aligned, by block.
    assert_eq!(m.align(950..960), 900..1_000);
    assert_eq!(m.align(1_500..1_501), 1_300..1_600);
    assert_eq!(m.align(950..1_050), 900..1_300);
    // A version-2 manifest cannot hold a transformed chunk.
    let mut v2 = bytes.clone();
    v2[5] = 2;
    let body = v2.len() - 4;
    let crc = crate::checksum::crc32c(&v2[..body]);
    v2[body..].copy_from_slice(&crc.to_be_bytes());
    let e = Manifest::decode(&v2, "seg.manifest").unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt);
    assert!(e.to_string().contains("chunk 1 is transformed (Zstd), which manifest version 2"), "{e}");
}

/// `sample()` encrypted: both chunks, the second compressed too, a wrapped key under `kek-1`.
fn encrypted_sample() -> Manifest {
    let mut m = sample();
    m.chunks[0].rdi.transform = Transform::Aes256Gcm;
    m.chunks[1].rdi.transform = Transform::ZstdAes256Gcm;
    m.encryption =
        Some(KeyEnvelope { kek_id: "kek-1".into(), wrapped: Wrapped::Local { nonce: [7; 12], wrapped: [9; 48] } });
    m
}

#[test]
fn an_encrypted_segment_makes_version_4_with_its_wrapped_key() {
    let m = encrypted_sample();
    let bytes = m.encode();
    assert_eq!(&bytes[..6], b"RSMM\0\x04");
    assert_eq!(bytes.len(), sample().encode().len() + 8 + 1 + 5 + 12 + 48, "two RDIs v2 and the block");
    assert_eq!(Manifest::decode(&bytes, "k").unwrap(), m);
    // Version 3 cannot hold an encrypted chunk; version 4 holds only encrypted ones.
    let reseal = |mut b: Vec<u8>| {
        let body = b.len() - 4;
        let crc = crate::checksum::crc32c(&b[..body]);
        b[body..].copy_from_slice(&crc.to_be_bytes());
        b
    };
    let mut v3 = bytes[..bytes.len() - 4 - 66].to_vec();
    v3[5] = 3;
    v3.extend_from_slice(&[0; 4]);
    let e = Manifest::decode(&reseal(v3), "seg.manifest").unwrap_err();
    assert!(e.to_string().contains("chunk 0 is encrypted (Aes256Gcm), which manifest version 3"), "{e}");
    let mut plain = encrypted_sample();
    plain.chunks[0].rdi.transform = Transform::Zstd;
    let e = Manifest::decode(&plain.encode(), "k").unwrap_err();
    assert!(e.to_string().contains("chunk 0 of an encrypted segment"), "{e}");
}

#[test]
fn every_corruption_is_detected() {
    for m in [sample(), compressed_sample(), encrypted_sample(), framed_sample(false), framed_sample(true)] {
        every_corruption_is_detected_in(m);
    }
}

/// `sample()` with its second chunk stored in frames of 600 bytes (two blocks of 300): two frames, of 150
/// and 250 stored bytes (with `encrypted`, sealed: 28 bytes more each, and the first chunk encrypted block
/// by block, under a wrapped key).
fn framed_sample(encrypted: bool) -> Manifest {
    let mut m = sample();
    let overhead = if encrypted { CHUNK_OVERHEAD as u32 } else { 0 };
    let frames = vec![
        StoredFrame { stored_length: 150 + overhead, stored_crc32c: 0x1111 },
        StoredFrame { stored_length: 250 + overhead, stored_crc32c: 0x2222 },
    ];
    let c = &mut m.chunks[1].rdi;
    c.transform = if encrypted { Transform::ZstdFramesAes256Gcm } else { Transform::ZstdFrames };
    (c.stored_length, c.stored_crc32c) = (400 + 2 * overhead, 77);
    m.frames = Some(FrameTable { frame_size: 600, chunks: vec![Vec::new(), frames] });
    if encrypted {
        m.chunks[0].rdi.transform = Transform::Aes256Gcm;
        m.encryption =
            Some(KeyEnvelope { kek_id: "kek-1".into(), wrapped: Wrapped::Local { nonce: [7; 12], wrapped: [9; 48] } });
    }
    m
}

/// `bytes` with its CRC made right again (a test's edit, which the CRC no longer tells).
fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let body = bytes.len() - 4;
    let crc = crate::checksum::crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_be_bytes());
    bytes
}

#[test]
fn a_chunk_in_frames_makes_version_5_with_its_frame_table() {
    for encrypted in [false, true] {
        let m = framed_sample(encrypted);
        let bytes = m.encode();
        assert_eq!(&bytes[..6], b"RSMM\0\x05", "encrypted {encrypted}");
        // Version 2's bytes, a version-2 RDI (4 bytes), the frame size (4), two frames (8 each), the flag
        // (1); encrypted, a version-2 RDI more and the key block (1 + 5 + 12 + 48).
        let more = if encrypted { 4 + 66 } else { 0 };
        assert_eq!(bytes.len(), sample().encode().len() + 4 + 4 + 16 + 1 + more, "encrypted {encrypted}");
        // The frame table as written: frame size 600, then (150, 0x1111), (250, 0x2222), then the flag.
        let at = sample().encode().len() - 4 + 4 + if encrypted { 4 } else { 0 };
        let overhead = if encrypted { 28u32 } else { 0 };
        let mut want = 600u32.to_be_bytes().to_vec();
        for (len, crc) in [(150 + overhead, 0x1111u32), (250 + overhead, 0x2222)] {
            want.extend_from_slice(&len.to_be_bytes());
            want.extend_from_slice(&crc.to_be_bytes());
        }
        want.push(encrypted as u8);
        assert_eq!(&bytes[at..at + want.len()], &want[..], "encrypted {encrypted}");
        let d = Manifest::decode(&bytes, "k").unwrap();
        assert_eq!(d, m);
        assert_eq!(d.frames_of(1).map(|(s, f)| (s, f.len())), Some((600, 2)));
        assert_eq!(d.frames_of(0), None, "chunk 0 is not in frames");
    }
    // Without a chunk in frames the manifest stays what it was: versions 2 to 4, no frame table.
    for (m, version) in [(sample(), 2), (compressed_sample(), 3), (encrypted_sample(), 4)] {
        let with_table = Manifest { frames: framed_sample(false).frames, ..m.clone() };
        assert_eq!((with_table.version(), with_table.encode()), (version, m.encode()));
    }
}

#[test]
fn a_frame_table_that_does_not_fit_its_chunks_is_corrupt() {
    type Edit = fn(&mut Manifest);
    fn table(m: &mut Manifest) -> &mut FrameTable {
        m.frames.as_mut().unwrap()
    }
    // (case, encrypted, the edit, a piece of the error)
    let cases: [(&str, bool, Edit, &str); 10] = [
        (
            "a frame size not a multiple of the block size",
            false,
            |m| table(m).frame_size = 500,
            "not a non-zero multiple",
        ),
        ("a frame size of 0", false, |m| table(m).frame_size = 0, "not a non-zero multiple"),
        (
            "a frame one byte longer",
            false,
            |m| table(m).chunks[1][0].stored_length += 1,
            "frames hold 401 stored bytes",
        ),
        ("a frame one byte shorter", false, |m| table(m).chunks[1][1].stored_length -= 1, "frames hold 399"),
        (
            "a frame more than the chunk holds",
            false,
            |m| table(m).chunks[1].push(StoredFrame { stored_length: 10, stored_crc32c: 0 }),
            "trailing bytes",
        ),
        (
            "a frame fewer",
            false,
            |m| {
                table(m).chunks[1].pop();
            },
            "",
        ),
        ("frames of half the size: four frames, the table holds two", false, |m| table(m).frame_size = 300, "exceeds"),
        (
            "a frame of no bytes",
            false,
            |m| {
                let f = &mut table(m).chunks[1];
                (f[0].stored_length, f[1].stored_length) = (0, 400);
            },
            "frame 0 has 0 stored bytes",
        ),
        (
            "a sealed frame shorter than its nonce and tag",
            true,
            |m| {
                let f = &mut table(m).chunks[1];
                (f[0].stored_length, f[1].stored_length) = (28, 428);
            },
            "frame 0 has 28 stored bytes, fewer than 29",
        ),
        ("an encrypted chunk in a segment not encrypted", true, |m| m.encryption = None, "is encrypted"),
    ];
    for (case, encrypted, edit, says) in cases {
        let mut m = framed_sample(encrypted);
        edit(&mut m);
        let e = Manifest::decode(&m.encode(), "t/0/seg.manifest").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "{case}: {e}");
        assert!(e.to_string().contains("manifest t/0/seg.manifest") && e.to_string().contains(says), "{case}: {e}");
    }
    // Edits of the bytes: a chunk in frames under an older version; version 5 with no chunk in frames;
    // an encryption flag neither 0 nor 1.
    let bytes = framed_sample(false).encode();
    let mut v3 = bytes[..bytes.len() - 4 - 4 - 16 - 1].to_vec();
    v3[5] = 3;
    v3.extend_from_slice(&[0; 4]);
    let e = Manifest::decode(&resealed(v3), "k").unwrap_err();
    assert!(e.to_string().contains("chunk 1 is stored in frames (ZstdFrames), which manifest version 3"), "{e}");
    let mut v5 = compressed_sample().encode();
    v5.truncate(v5.len() - 4);
    v5[5] = 5;
    v5.extend_from_slice(&600u32.to_be_bytes());
    v5.extend_from_slice(&[0, 0, 0, 0, 0]);
    let e = Manifest::decode(&resealed(v5), "k").unwrap_err();
    assert!(e.to_string().contains("version 5 with no chunk stored in frames"), "{e}");
    let mut flag = bytes.clone();
    let at = flag.len() - 5;
    flag[at] = 2;
    let e = Manifest::decode(&resealed(flag), "k").unwrap_err();
    assert!(e.to_string().contains("encryption flag 2"), "{e}");
}

#[test]
fn a_manifest_cut_anywhere_in_its_frame_section_is_corrupt() {
    for encrypted in [false, true] {
        let bytes = framed_sample(encrypted).encode();
        // The section: frame size, two frames, the flag, and the key block when encrypted.
        let section = 4 + 16 + 1 + if encrypted { 66 } else { 0 };
        let body = bytes.len() - 4;
        for cut in body - section..body {
            let mut b = bytes[..cut].to_vec();
            b.extend_from_slice(&[0; 4]);
            let e = Manifest::decode(&resealed(b), "t/0/seg.manifest").unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "cut at {cut}: {e}");
            assert!(e.to_string().contains("manifest t/0/seg.manifest"), "cut at {cut}: {e}");
        }
    }
}

/// `m` with its data key wrapped by a KEK provider: a blob of `n` bytes.
fn provider_keyed(mut m: Manifest, n: usize) -> Manifest {
    m.encryption = Some(KeyEnvelope { kek_id: "kms".into(), wrapped: Wrapped::Provider(vec![0xb1; n]) });
    m
}

#[test]
fn a_key_wrapped_by_a_provider_makes_version_6_and_only_it() {
    // Key files keep versions 4 and 5 byte for byte; a provider's blob is version 6, with frames or not.
    assert_eq!(&encrypted_sample().encode()[..6], b"RSMM\0\x04");
    assert_eq!(&framed_sample(true).encode()[..6], b"RSMM\0\x05");
    for (m, section) in [
        (provider_keyed(encrypted_sample(), 180), 4 + 1 + 1 + 3 + 2 + 180),
        (provider_keyed(framed_sample(true), 1), 4 + 16 + 1 + 1 + 3 + 2 + 1),
        (provider_keyed(framed_sample(true), MAX_PROVIDER_BLOB_LEN), 4 + 16 + 1 + 1 + 3 + 2 + MAX_PROVIDER_BLOB_LEN),
    ] {
        let bytes = m.encode();
        assert_eq!(&bytes[..6], b"RSMM\0\x06");
        assert_eq!(Manifest::decode(&bytes, "k").unwrap(), m);
        every_corruption_is_detected_in(m.clone());
        let body = bytes.len() - 4;
        for cut in body - section..body {
            let mut b = bytes[..cut].to_vec();
            b.extend_from_slice(&[0; 4]);
            let e = Manifest::decode(&resealed(b), "k").unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "cut at {cut}: {e}");
        }
    }
    // A blob's length out of bounds, and a version-6 flag other than 2, are corrupt (nothing allocated).
    for n in [0u16, MAX_PROVIDER_BLOB_LEN as u16 + 1, u16::MAX] {
        let mut b = provider_keyed(encrypted_sample(), 1).encode();
        let at = b.len() - 4 - 1 - 2;
        b[at..at + 2].copy_from_slice(&n.to_be_bytes());
        let e = Manifest::decode(&resealed(b), "k").unwrap_err();
        assert!(e.to_string().contains(&format!("a wrapped key of {n} bytes")), "{e}");
    }
    let mut b = provider_keyed(encrypted_sample(), 1).encode();
    let at = b.len() - 4 - 1 - 2 - 3 - 1 - 1;
    b[at] = 1;
    let e = Manifest::decode(&resealed(b), "k").unwrap_err();
    assert!(e.to_string().contains("encryption flag 1, not 2"), "{e}");
    // A chunk in frames with a frame size of 0.
    let mut b = provider_keyed(framed_sample(true), 1).encode();
    let at = b.len() - 4 - (4 + 16 + 1 + 1 + 3 + 2 + 1);
    b[at..at + 4].copy_from_slice(&[0; 4]);
    let e = Manifest::decode(&resealed(b), "k").unwrap_err();
    assert!(e.to_string().contains("frame size is 0"), "{e}");
}

fn every_corruption_is_detected_in(m: Manifest) {
    let bytes = m.encode();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x40;
        let e = Manifest::decode(&b, "seg.manifest").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt, "byte {i}");
        assert!(e.to_string().contains("manifest seg.manifest"), "byte {i}: {e}");
    }
    for len in [0, 5, bytes.len() - 1] {
        assert_eq!(Manifest::decode(&bytes[..len], "k").unwrap_err().kind(), crate::error::ErrorKind::Corrupt);
    }
}
