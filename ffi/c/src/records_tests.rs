//! `rsm_records_fetch` and its accessors, called as a C host calls them, over the transactional partition
//! of `txn_fixture.rs` copied to a file store: decoding (gzip, snappy, null and empty keys, values and
//! headers, log-append time), both isolation levels (an abort whose marker is in the next segment),
//! paging, and the refusals the header states.

use super::*;
use crate::contract_tests::{c_path, call, invalid, ok};
use crate::handles::as_handle;
use crate::txn_fixture::{self, Rec};
use rsm_core::format::batch::BatchIter;
use rsm_core::format::partition::LocalPartition;
use std::ffi::CString;
use std::ptr::{null, null_mut};

/// A closed segment's C metadata and its files, with their backing storage.
struct Seg {
    c: rsm_segment_metadata,
    files: rsm_segment_files,
    log: std::path::PathBuf,
    _keep: (Vec<rsm_leader_epoch>, Vec<CString>, Vec<u8>),
}

struct Txns {
    _dir: tempfile::TempDir,
    store: *mut rsm_store,
    segs: Vec<Seg>,
    _topic: CString,
}

impl Drop for Txns {
    fn drop(&mut self) {
        rsm_store_close(self.store);
    }
}

fn txns() -> Txns {
    let dir = tempfile::tempdir().unwrap();
    let p = LocalPartition::open(&txn_fixture::write_partition(dir.path()).unwrap()).unwrap();
    let topic = CString::new(p.topic_id_partition.topic_partition.topic.as_str()).unwrap();
    let mut segs = Vec::new();
    for (i, s) in p.closed_segments().iter().enumerate() {
        let md = p.segment_metadata(s, 1, 1_700_000_000_000).unwrap();
        let data = p.segment_data(s).unwrap();
        let epochs: Vec<rsm_leader_epoch> = md
            .segment_leader_epochs
            .iter()
            .map(|(&epoch, &start_offset)| rsm_leader_epoch { epoch, start_offset })
            .collect();
        let paths = vec![
            c_path(&data.log_segment),
            c_path(&data.offset_index),
            c_path(&data.time_index),
            c_path(data.transaction_index.as_deref().expect("every closed segment has a .txnindex")),
            c_path(&data.producer_snapshot_index),
        ];
        let checkpoint = data.leader_epoch_index.to_vec();
        let c = rsm_segment_metadata {
            topic_id_partition: rsm_topic_id_partition {
                topic_id: p.topic_id_partition.topic_id.into(),
                topic: topic.as_ptr(),
                partition: 0,
            },
            segment_id: rsm_uuid { most_significant_bits: 0x5151, least_significant_bits: i as i64 },
            start_offset: md.start_offset,
            end_offset: md.end_offset,
            max_timestamp_ms: md.max_timestamp_ms,
            broker_id: 1,
            event_timestamp_ms: md.event_timestamp_ms,
            segment_size_in_bytes: md.segment_size_in_bytes,
            leader_epochs: epochs.as_ptr(),
            leader_epochs_len: epochs.len(),
            custom_metadata: null(),
            custom_metadata_len: 0,
            state: rsm_segment_state::CopySegmentStarted as i32,
            txn_idx_empty: false,
        };
        let files = rsm_segment_files {
            log: paths[0].as_ptr(),
            offset_index: paths[1].as_ptr(),
            time_index: paths[2].as_ptr(),
            transaction_index: paths[3].as_ptr(),
            producer_snapshot: paths[4].as_ptr(),
            leader_epoch_checkpoint: checkpoint.as_ptr(),
            leader_epoch_checkpoint_len: checkpoint.len(),
        };
        segs.push(Seg { c, files, log: data.log_segment.clone(), _keep: (epochs, paths, checkpoint) });
    }
    assert_eq!(segs.len(), 2, "two closed segments");
    std::fs::create_dir(dir.path().join("store")).unwrap();
    let url = CString::new(format!("file://{}", dir.path().join("store").display())).unwrap();
    let settings = [
        rsm_setting { key: c"store.url".as_ptr(), value: url.as_ptr() },
        rsm_setting { key: c"fs.fsync".as_ptr(), value: c"false".as_ptr() },
    ];
    let mut store = null_mut();
    // SAFETY: valid settings and out-pointers.
    ok(call(|e| unsafe { rsm_store_open(settings.as_ptr(), settings.len(), &mut store, e) }));
    for s in &segs {
        // SAFETY: valid structs pointing into `s`.
        ok(call(|e| unsafe { rsm_copy(store, &s.c, &s.files, null_mut(), e) }));
    }
    Txns { _dir: dir, store, segs, _topic: topic }
}

/// Bytes through a (pointer, length) pair as the header defines them: NULL is null.
fn bytes(p: *const u8, len: usize) -> Option<Vec<u8>> {
    // SAFETY: the library's contract: NULL, or `len` bytes owned by the records.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, len) }.to_vec())
}

/// Every record of `records` through the accessors, and the next offset.
fn read(records: *const rsm_records) -> (Vec<Rec>, i64) {
    let mut out = Vec::new();
    // SAFETY (the block): `records` is a live `rsm_records`; every pointer read is owned by it.
    unsafe {
        for i in 0..rsm_records_len(records) {
            let r = rsm_records_get(records, i);
            assert!(!r.is_null(), "record {i}");
            let (mut kl, mut vl) = (99, 99);
            let key = bytes(rsm_record_key(r, &mut kl), kl);
            let value = bytes(rsm_record_value(r, &mut vl), vl);
            assert!(key.is_some() || kl == 0, "a null key has length 0");
            assert!(value.is_some() || vl == 0, "a null value has length 0");
            let mut headers = Vec::new();
            for h in 0..rsm_record_header_count(r) {
                let (mut k, mut klen, mut v, mut vlen) = (null(), 99, null(), 99);
                assert_eq!(rsm_record_header(r, h, &mut k, &mut klen, &mut v, &mut vlen), rsm_result::Ok);
                let k = bytes(k.cast(), klen).expect("a header key is never NULL");
                headers.push((String::from_utf8(k).unwrap(), bytes(v, vlen)));
            }
            out.push(Rec {
                offset: rsm_record_offset(r),
                timestamp: rsm_record_timestamp(r),
                timestamp_type: rsm_record_timestamp_type(r),
                key,
                value,
                headers,
            });
        }
        assert!(rsm_records_get(records, rsm_records_len(records)).is_null(), "NULL past the end");
        (out, rsm_records_next_offset(records))
    }
}

impl Txns {
    /// A fetch of segment `i` through the ABI, with `later` the segments after it when `with_later`.
    fn fetch(
        &self,
        i: usize,
        offset: i64,
        max_bytes: u32,
        max_records: usize,
        isolation: i32,
        with_later: bool,
    ) -> (Vec<Rec>, i64) {
        let later: Vec<*const rsm_segment_metadata> =
            if with_later { self.segs[i + 1..].iter().map(|s| &s.c as *const _).collect() } else { vec![] };
        let mut records = null_mut();
        // SAFETY: valid arguments; `later` holds `later.len()` valid pointers.
        ok(call(|e| unsafe {
            rsm_records_fetch(
                self.store,
                &self.segs[i].c,
                if later.is_empty() { null() } else { later.as_ptr() },
                later.len(),
                offset,
                max_bytes,
                max_records,
                isolation,
                0,
                &mut records,
                e,
            )
        }));
        assert!(!records.is_null());
        let got = read(records);
        // SAFETY: freed once.
        unsafe { rsm_records_free(records) };
        got
    }
}

#[test]
fn records_decode_every_batch_shape_the_fixture_wrote() {
    let t = txns();
    // The fixture is what it claims: gzip and snappy batches, a transactional and a control one.
    let mut attributes = Vec::new();
    for s in &t.segs {
        let log = std::fs::read(&s.log).unwrap();
        let mut it = BatchIter::new(&log, 0, true);
        while let Some(b) = it.next_complete().unwrap() {
            attributes.push(b.attributes());
        }
    }
    for (bit, what) in
        [(1, "gzip"), (2, "snappy"), (0x08, "log-append time"), (0x10, "transactional"), (0x20, "control")]
    {
        let found =
            if bit < 8 { attributes.iter().any(|a| a & 7 == bit) } else { attributes.iter().any(|a| a & bit != 0) };
        assert!(found, "the fixture has a {what} batch: {attributes:?}");
    }
    for i in 0..t.segs.len() {
        let want = txn_fixture::expected(i, false);
        assert_eq!(t.fetch(i, t.segs[i].c.start_offset, 1 << 20, 1000, 0, true), want, "segment {i}");
        assert_eq!(t.fetch(i, t.segs[i].c.start_offset, 1 << 20, 1000, 0, false), want, "no later segments needed");
    }
    let (got, _) = t.fetch(0, 0, 1 << 20, 1000, 0, false);
    let r11 = got.iter().find(|r| r.offset == 11).unwrap();
    assert_eq!(r11.value, Some(vec![]), "an empty value is not a null one");
    assert_eq!(r11.headers[1], ("none".to_string(), None), "a null header value");
    assert_eq!(r11.headers[2], (String::new(), Some(vec![])), "an empty header key and value");
    assert!(got.iter().any(|r| r.key.is_none()) && got.iter().any(|r| r.value.is_none()));
}

#[test]
fn read_committed_drops_aborted_transactions_searching_later_segments() {
    let t = txns();
    for i in 0..t.segs.len() {
        let want = txn_fixture::expected(i, true);
        assert_eq!(t.fetch(i, t.segs[i].c.start_offset, 1 << 20, 1000, 1, true), want, "segment {i}");
    }
    // Without segment 1, segment 0's search is incomplete: producer 8's abort (its marker and index entry
    // are in segment 1) is unknown, and its records 7 and 8 are given.
    let (got, next) = t.fetch(0, 0, 1 << 20, 1000, 1, false);
    let offsets: Vec<i64> = got.iter().map(|r| r.offset).collect();
    assert_eq!((offsets, next), (vec![0, 1, 2, 3, 7, 8, 10, 11, 12], 13));
    // From inside an aborted transaction: nothing of it, then what follows.
    let (got, next) = t.fetch(0, 5, 1 << 20, 1000, 1, true);
    assert_eq!((got.iter().map(|r| r.offset).collect::<Vec<_>>(), next), (vec![10, 11, 12], 13));
}

#[test]
fn records_page_through_the_partition_at_both_levels() {
    let t = txns();
    for isolation in [0, 1] {
        let mut want = Vec::new();
        for i in 0..t.segs.len() {
            want.extend(txn_fixture::expected(i, isolation == 1).0);
        }
        // Two records or one batch's bytes at a time, on to the next segment past each one's end.
        let (mut got, mut offset, mut calls) = (Vec::new(), 0, 0);
        while let Some(i) = t.segs.iter().position(|s| offset <= s.c.end_offset) {
            let (records, next) = t.fetch(i, offset, 1, 2, isolation, true);
            assert!(next > offset, "the next offset {next} moves on from {offset}");
            assert!(records.len() <= 2);
            got.extend(records);
            offset = next;
            calls += 1;
            assert!(calls < 100, "paging ends");
        }
        assert_eq!(got, want, "isolation {isolation}");
        assert_eq!(offset, 21, "paged to the end of the copied segments");
    }
}

#[test]
fn records_fetch_refuses_bad_arguments() {
    let t = txns();
    let (s0, s1) = (&t.segs[0].c, &t.segs[1].c);
    let mut records = null_mut();
    let later = [s1 as *const rsm_segment_metadata];
    let backwards = [s0 as *const rsm_segment_metadata];
    let null_later = [null::<rsm_segment_metadata>()];
    // SAFETY (the block): valid arguments but for the one each call is about.
    unsafe {
        for bad in [2, -1, i32::MAX] {
            records = as_handle(1);
            invalid(
                call(|e| rsm_records_fetch(t.store, s0, null(), 0, 0, 1 << 20, 10, bad, 0, &mut records, e)),
                &[&format!("`isolation` {bad} is not an rsm_isolation")],
            );
            assert!(records.is_null(), "NULL on failure");
        }
        invalid(
            call(|e| rsm_records_fetch(t.store, s0, null(), 0, 0, 1, 10, 0, 0, null_mut(), e)),
            &["`records_out` is NULL"],
        );
        invalid(
            call(|e| rsm_records_fetch(t.store, null(), null(), 0, 0, 1, 10, 0, 0, &mut records, e)),
            &["`segment` is NULL"],
        );
        invalid(
            call(|e| rsm_records_fetch(null(), s0, null(), 0, 0, 1, 10, 0, 0, &mut records, e)),
            &["`store` is NULL"],
        );
        invalid(
            call(|e| rsm_records_fetch(t.store, s0, null(), 1, 0, 1, 10, 1, 0, &mut records, e)),
            &["`later` is NULL but its length is 1"],
        );
        invalid(
            call(|e| rsm_records_fetch(t.store, s0, null_later.as_ptr(), 1, 0, 1, 10, 1, 0, &mut records, e)),
            &["`later[0]` is NULL"],
        );
        invalid(
            call(|e| rsm_records_fetch(t.store, s1, backwards.as_ptr(), 1, 13, 1, 10, 1, 0, &mut records, e)),
            &["later segment 0 starts at offset 0, not after offset 20"],
        );
        for offset in [-1, 13, i64::MAX] {
            invalid(
                call(|e| rsm_records_fetch(t.store, s0, later.as_ptr(), 1, offset, 1, 10, 1, 0, &mut records, e)),
                &[&format!("`offset` {offset} is outside segment")],
            );
        }
        // A segment that was never copied is not found.
        let gone = rsm_segment_metadata {
            segment_id: rsm_uuid { most_significant_bits: 9, least_significant_bits: 9 },
            ..*s0
        };
        let (code, msg) = call(|e| rsm_records_fetch(t.store, &gone, null(), 0, 0, 1, 10, 0, 0, &mut records, e));
        assert_eq!(code, rsm_result::NotFound, "{msg}");
        // A batch past the caller's decode limit (16 bytes) is refused naming the limit; 0 is the default.
        invalid(
            call(|e| rsm_records_fetch(t.store, s0, null(), 0, 0, 1 << 20, 10, 0, 16, &mut records, e)),
            &["max_batch_bytes"],
        );
        assert!(records.is_null());
        // Zero records: an empty answer that stays where it is.
        ok(call(|e| rsm_records_fetch(t.store, s0, null(), 0, 2, 1 << 20, 0, 0, 0, &mut records, e)));
        assert_eq!((rsm_records_len(records), rsm_records_next_offset(records)), (0, 2));
        assert!(rsm_records_get(records, 0).is_null());
        rsm_records_free(records);
        // NULL everywhere the header allows it.
        rsm_records_free(null_mut());
        assert_eq!((rsm_records_len(null()), rsm_records_next_offset(null())), (0, -1));
        assert!(rsm_records_get(null(), 0).is_null());
        let mut len = 7;
        assert!(rsm_record_key(null(), &mut len).is_null() && len == 0);
        assert!(rsm_record_value(null(), null_mut()).is_null());
        assert_eq!((rsm_record_offset(null()), rsm_record_timestamp(null())), (-1, -1));
        assert_eq!(rsm_record_timestamp_type(null()), rsm_timestamp_type::NoTimestampType as i32);
        assert_eq!(rsm_record_header_count(null()), 0);
        let (mut k, mut v) = (c"x".as_ptr(), c"y".as_ptr().cast::<u8>());
        assert_eq!(rsm_record_header(null(), 0, &mut k, null_mut(), &mut v, null_mut()), rsm_result::InvalidArgument);
        assert!(k.is_null() && v.is_null(), "NULL on failure");
        // A header past the count is refused; NULL out-pointers are allowed.
        ok(call(|e| rsm_records_fetch(t.store, s0, null(), 0, 11, 1 << 20, 1, 0, 0, &mut records, e)));
        let r = rsm_records_get(records, 0);
        assert_eq!((rsm_record_offset(r), rsm_record_header_count(r)), (11, 3));
        assert_eq!(rsm_record_header(r, 3, &mut k, null_mut(), null_mut(), null_mut()), rsm_result::InvalidArgument);
        assert_eq!(rsm_record_header(r, 2, null_mut(), null_mut(), null_mut(), null_mut()), rsm_result::Ok);
        rsm_records_free(records);
    }
}
