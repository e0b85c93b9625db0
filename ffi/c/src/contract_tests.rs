//! The C ABI's argument contract, as the header states it, over a real segment copied to a file store:
//! each test calls the `extern "C"` functions as a C host would, with the arguments the header allows or
//! refuses, and checks the code and that the message names the argument and its value.

use super::*;
use crate::asynchronous::{rsm_copy_async, rsm_delete_async, rsm_fetch_async};
use crate::handles::as_handle;
use crate::partition::{rsm_copy_partition, rsm_partition_copy};
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use rsm_core::{LogSegmentData, RemoteLogSegmentMetadata, Uuid};
use std::ffi::{CStr, CString, c_void};
use std::path::Path;
use std::ptr::{null, null_mut};

/// What a call returned: its code and its error's message (the error freed).
pub(crate) fn call(f: impl FnOnce(*mut *mut rsm_error) -> rsm_result) -> (rsm_result, String) {
    let mut err: *mut rsm_error = null_mut();
    let r = f(&mut err);
    // SAFETY: `err` is NULL or the error the call just returned, freed once here.
    let msg = unsafe { CStr::from_ptr(rsm_error_message(err)) }.to_string_lossy().into_owned();
    // SAFETY: as above.
    unsafe { rsm_error_free(err) };
    (r, msg)
}

/// Expects `InvalidArgument` with a message holding every one of `needles`.
#[track_caller]
pub(crate) fn invalid(got: (rsm_result, String), needles: &[&str]) {
    assert_eq!(got.0, rsm_result::InvalidArgument, "{}", got.1);
    for n in needles {
        assert!(got.1.contains(n), "message {:?} lacks {n:?}", got.1);
    }
}

#[track_caller]
pub(crate) fn ok(got: (rsm_result, String)) {
    assert_eq!(got.0, rsm_result::Ok, "{}", got.1);
}

/// A closed segment of a generated Kafka partition, with the C structs' backing storage.
struct Segment {
    md: RemoteLogSegmentMetadata,
    data: LogSegmentData,
    topic: CString,
    epochs: Vec<rsm_leader_epoch>,
    log: CString,
    index: CString,
    time: CString,
    txn: Option<CString>,
    snapshot: CString,
    checkpoint: Vec<u8>,
}

impl Segment {
    /// The C metadata: it points into `self`.
    fn c_md(&self) -> rsm_segment_metadata {
        let tp = &self.md.remote_log_segment_id.topic_id_partition;
        rsm_segment_metadata {
            topic_id_partition: rsm_topic_id_partition {
                topic_id: tp.topic_id.into(),
                topic: self.topic.as_ptr(),
                partition: tp.topic_partition.partition,
            },
            segment_id: self.md.remote_log_segment_id.id.into(),
            start_offset: self.md.start_offset,
            end_offset: self.md.end_offset,
            max_timestamp_ms: self.md.max_timestamp_ms,
            broker_id: self.md.broker_id,
            event_timestamp_ms: self.md.event_timestamp_ms,
            segment_size_in_bytes: self.md.segment_size_in_bytes,
            leader_epochs: self.epochs.as_ptr(),
            leader_epochs_len: self.epochs.len(),
            custom_metadata: null(),
            custom_metadata_len: 0,
            state: rsm_segment_state::CopySegmentStarted as i32,
            txn_idx_empty: self.txn.is_none(),
        }
    }

    /// The C files: they point into `self`.
    fn c_files(&self) -> rsm_segment_files {
        rsm_segment_files {
            log: self.log.as_ptr(),
            offset_index: self.index.as_ptr(),
            time_index: self.time.as_ptr(),
            transaction_index: self.txn.as_ref().map_or(null(), |t| t.as_ptr()),
            producer_snapshot: self.snapshot.as_ptr(),
            leader_epoch_checkpoint: self.checkpoint.as_ptr(),
            leader_epoch_checkpoint_len: self.checkpoint.len(),
        }
    }
}

pub(crate) fn c_path(p: &Path) -> CString {
    CString::new(p.to_str().unwrap()).unwrap()
}

/// A partition in a temporary directory, a file store next to it, and the partition's first closed
/// segment, copied unless `copied` is false.
struct World {
    _dir: tempfile::TempDir,
    store: *mut rsm_store,
    seg: Segment,
}

impl Drop for World {
    fn drop(&mut self) {
        rsm_store_close(self.store);
    }
}

fn world(copied: bool) -> World {
    let dir = tempfile::tempdir().unwrap();
    let spec = PartitionSpec {
        topic_id: Uuid::new(0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321),
        segment_bytes: 64 << 10,
        records: 1200,
        records_per_batch: 16,
        value_bytes: 100,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 10,
        seed: 7,
        compression: None,
    };
    let partition_dir = dir.path().join("orders-0");
    generate_partition(&partition_dir, &spec).unwrap();
    let p = LocalPartition::open(&partition_dir).unwrap();
    let first = &p.closed_segments()[0];
    let md = p.segment_metadata(first, 1, 1_700_000_000_000).unwrap();
    let data = p.segment_data(first).unwrap();
    let seg = Segment {
        topic: CString::new(md.remote_log_segment_id.topic_id_partition.topic_partition.topic.as_str()).unwrap(),
        epochs: md
            .segment_leader_epochs
            .iter()
            .map(|(&epoch, &start_offset)| rsm_leader_epoch { epoch, start_offset })
            .collect(),
        log: c_path(&data.log_segment),
        index: c_path(&data.offset_index),
        time: c_path(&data.time_index),
        txn: data.transaction_index.as_deref().map(c_path),
        snapshot: c_path(&data.producer_snapshot_index),
        checkpoint: data.leader_epoch_index.to_vec(),
        md,
        data,
    };
    assert!(!seg.checkpoint.is_empty() && seg.epochs.len() > 1, "the fixture has a checkpoint and epochs");
    std::fs::create_dir(dir.path().join("store")).unwrap();
    let url = CString::new(format!("file://{}", dir.path().join("store").display())).unwrap();
    let settings = [
        rsm_setting { key: c"store.url".as_ptr(), value: url.as_ptr() },
        rsm_setting { key: c"fs.fsync".as_ptr(), value: c"false".as_ptr() },
        rsm_setting { key: c"chunk.size".as_ptr(), value: c"65536".as_ptr() },
        rsm_setting { key: c"chunk.block.size".as_ptr(), value: c"4096".as_ptr() },
    ];
    let mut store = null_mut();
    // SAFETY: valid settings and out-pointers.
    ok(call(|e| unsafe { rsm_store_open(settings.as_ptr(), settings.len(), &mut store, e) }));
    let w = World { _dir: dir, store, seg };
    if copied {
        let (md, files) = (w.seg.c_md(), w.seg.c_files());
        // SAFETY: valid structs pointing into `w.seg`.
        ok(call(|e| unsafe { rsm_copy(w.store, &md, &files, null_mut(), e) }));
    }
    w
}

/// The callback of a copy that must be refused before it is submitted.
extern "C" fn never(_: *mut c_void, _: rsm_result, _: *mut rsm_buffer, _: *mut rsm_error) {
    // Never called; were it, the abort (a panic cannot unwind out of `extern "C"`) fails the test run.
    panic!("the callback of a refused copy is never called");
}

/// Defect 1: the header says `n` may be NULL; the read then happens and the count is not reported.
#[test]
fn stream_read_accepts_a_null_count() {
    let w = world(true);
    let log = std::fs::read(&w.seg.data.log_segment).unwrap();
    let md = w.seg.c_md();
    let mut s = null_mut();
    // SAFETY: valid arguments.
    ok(call(|e| unsafe { rsm_fetch(w.store, &md, 0, RSM_END_OF_SEGMENT, &mut s, e) }));
    let mut buf = [0u8; 10];
    // SAFETY: `buf` has 10 writable bytes; `n` is NULL, which the header allows.
    ok(call(|e| unsafe { rsm_stream_read(s, buf.as_mut_ptr(), buf.len(), null_mut(), e) }));
    // Short reads are the stream's right, but the first chunk of a segment holds more than 10 bytes.
    assert_eq!(buf, log[..10], "the bytes were read though their count was not wanted");
    let mut n = 99;
    // SAFETY: as above, with a count.
    ok(call(|e| unsafe { rsm_stream_read(s, buf.as_mut_ptr(), buf.len(), &mut n, e) }));
    assert_eq!((n, &buf[..]), (10, &log[10..20]), "the next read goes on after the uncounted one");
    // SAFETY: a NULL `buf` with a non-zero length is still refused, and with a NULL `n` too.
    invalid(call(|e| unsafe { rsm_stream_read(s, null_mut(), 4, null_mut(), e) }), &["`buf` is NULL but `len` is 4"]);
    // SAFETY: a read of 0 bytes into NULL with a NULL count: nothing to do, nothing to report.
    ok(call(|e| unsafe { rsm_stream_read(s, null_mut(), 0, null_mut(), e) }));
    assert_eq!(rsm_stream_close(s), rsm_result::Ok);
    // SAFETY: a closed stream is refused whether or not the count is wanted.
    invalid(call(|e| unsafe { rsm_stream_read(s, buf.as_mut_ptr(), 1, null_mut(), e) }), &["`stream` is not an open"]);
}

/// Defect 2: the segment size must be the `.log` file's length, for the blocking and the asynchronous
/// copy alike; the refusal names the size and the file.
#[test]
fn copy_refuses_a_segment_size_that_is_not_the_log_files_length() {
    let w = world(false);
    let size = w.seg.md.segment_size_in_bytes;
    let log = w.seg.data.log_segment.display().to_string();
    let files = w.seg.c_files();
    for wrong in [size + 1, size - 1, 0, i32::MAX] {
        let md = rsm_segment_metadata { segment_size_in_bytes: wrong, ..w.seg.c_md() };
        let want =
            [format!("`metadata.segment_size_in_bytes` {wrong} is not the length of `files.log` {log} ({size} bytes)")];
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        // SAFETY: valid structs.
        invalid(call(|e| unsafe { rsm_copy(w.store, &md, &files, null_mut(), e) }), &want);
        let mut op = as_handle::<asynchronous::rsm_operation>(1);
        // SAFETY: as above; the callback is a valid function.
        invalid(call(|e| unsafe { rsm_copy_async(w.store, &md, &files, Some(never), null_mut(), &mut op, e) }), &want);
        assert!(op.is_null(), "no operation on failure");
    }
    // Nothing was written by the refused copies: the segment is not there.
    let md = w.seg.c_md();
    let mut s = null_mut();
    // SAFETY: valid arguments.
    let (r, m) = call(|e| unsafe { rsm_fetch(w.store, &md, 0, RSM_END_OF_SEGMENT, &mut s, e) });
    assert_eq!(r, rsm_result::NotFound, "{m}");
    // A negative size is the core's to refuse (Kafka's rule), as an invalid argument too.
    let md = rsm_segment_metadata { segment_size_in_bytes: -1, ..w.seg.c_md() };
    // SAFETY: valid structs.
    invalid(call(|e| unsafe { rsm_copy(w.store, &md, &files, null_mut(), e) }), &["negative segment size -1"]);
    // A missing `.log` file stays the copy's to report: not found, naming it.
    let missing = c"/nonexistent/00000000000000000000.log";
    let gone = rsm_segment_files { log: missing.as_ptr(), ..files };
    let md = w.seg.c_md();
    // SAFETY: valid structs.
    let (r, m) = call(|e| unsafe { rsm_copy(w.store, &md, &gone, null_mut(), e) });
    assert_eq!(r, rsm_result::NotFound, "{m}");
    assert!(m.contains("/nonexistent/00000000000000000000.log"), "{m}");
    // The exact size copies.
    // SAFETY: valid structs.
    ok(call(|e| unsafe { rsm_copy(w.store, &md, &files, null_mut(), e) }));
}

/// Defect 3: the leader-epoch checkpoint is parsed (Kafka's text format) and a malformed one refused,
/// naming the field and what is wrong; an empty one is "none", as Kafka reads an empty file.
#[test]
fn copy_refuses_a_malformed_leader_epoch_checkpoint() {
    let w = world(false);
    let md = w.seg.c_md();
    let cases: [(&[u8], &str); 8] = [
        (b"garbage", "unsupported version line"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"1\n1\n0 0\n", "unsupported version line"),
        (b"0\nmany\n", "bad count line"),
        (b"0\n2\n0 0\n", "1 entries, count line says 2"),
        (b"0\n1\n0 zero\n", "bad entry line `0 zero`"),
        (b"0\n1\n0 0\n1 100\n", "line 4 `1 100` follows the 1 entries its count line announces"),
        (b"0\n0\n\n", "line 3 `` follows the 0 entries"),
    ];
    for (text, why) in cases {
        let files = rsm_segment_files {
            leader_epoch_checkpoint: text.as_ptr(),
            leader_epoch_checkpoint_len: text.len(),
            ..w.seg.c_files()
        };
        // SAFETY: valid structs; the checkpoint points to `text`.
        let got = call(|e| unsafe { rsm_copy(w.store, &md, &files, null_mut(), e) });
        invalid(got.clone(), &["`files.leader_epoch_checkpoint` is not a leader-epoch checkpoint", why]);
        let mut op = null_mut();
        // SAFETY: as above.
        let got = call(|e| unsafe { rsm_copy_async(w.store, &md, &files, None, null_mut(), &mut op, e) });
        invalid(got, &["`files.leader_epoch_checkpoint` is not a leader-epoch checkpoint", why]);
    }
    let null_with_length =
        rsm_segment_files { leader_epoch_checkpoint: null(), leader_epoch_checkpoint_len: 12, ..w.seg.c_files() };
    // SAFETY: valid structs but for the NULL checkpoint, which must be refused.
    invalid(
        call(|e| unsafe { rsm_copy(w.store, &md, &null_with_length, null_mut(), e) }),
        &["`files.leader_epoch_checkpoint` is NULL but its length is 12"],
    );
    // Well-formed: Kafka's own shape, an empty list, and no checkpoint at all (NULL, length 0).
    for text in [&w.seg.checkpoint[..], b"0\n0\n", b"0\r\n1\r\n3 0\r\n"] {
        let files = rsm_segment_files {
            leader_epoch_checkpoint: text.as_ptr(),
            leader_epoch_checkpoint_len: text.len(),
            ..w.seg.c_files()
        };
        // SAFETY: valid structs.
        ok(call(|e| unsafe { rsm_copy(w.store, &md, &files, null_mut(), e) }));
    }
    let none = rsm_segment_files { leader_epoch_checkpoint: null(), leader_epoch_checkpoint_len: 0, ..w.seg.c_files() };
    // SAFETY: valid structs.
    ok(call(|e| unsafe { rsm_copy(w.store, &md, &none, null_mut(), e) }));
}

/// Defect 4: a NULL `custom_metadata` with a non-zero length is refused, in every call that reads the
/// metadata, as every other (pointer, length) pair is.
#[test]
fn metadata_refuses_null_custom_metadata_with_a_length() {
    let w = world(true);
    let files = w.seg.c_files();
    for len in [usize::MAX, 1] {
        let md = rsm_segment_metadata { custom_metadata: null(), custom_metadata_len: len, ..w.seg.c_md() };
        let want = format!("`metadata.custom_metadata` is NULL but its length is {len}");
        let mut s = null_mut();
        let mut pos = 0;
        // SAFETY: valid arguments but for the custom metadata, which must be refused before any use.
        unsafe {
            invalid(call(|e| rsm_copy(w.store, &md, &files, null_mut(), e)), &[&want]);
            invalid(call(|e| rsm_fetch(w.store, &md, 0, RSM_END_OF_SEGMENT, &mut s, e)), &[&want]);
            invalid(call(|e| rsm_fetch_index(w.store, &md, 0, &mut s, e)), &[&want]);
            invalid(call(|e| rsm_position_of_offset(w.store, &md, md.start_offset, &mut pos, e)), &[&want]);
            invalid(call(|e| rsm_position_of_timestamp(w.store, &md, 0, &mut pos, e)), &[&want]);
            invalid(call(|e| rsm_delete(w.store, &md, e)), &[&want]);
            invalid(call(|e| rsm_copy_async(w.store, &md, &files, None, null_mut(), null_mut(), e)), &[&want]);
            invalid(call(|e| rsm_fetch_async(w.store, &md, 0, -1, None, null_mut(), null_mut(), e)), &[&want]);
            invalid(call(|e| rsm_delete_async(w.store, &md, None, null_mut(), null_mut(), e)), &[&want]);
        }
        assert!(s.is_null());
    }
    // NULL with length 0 is "none"; a non-NULL pointer with length 0 is "present and empty".
    let empty = [0u8; 1];
    for (p, len) in [(null(), 0), (empty.as_ptr(), 0)] {
        let md = rsm_segment_metadata { custom_metadata: p, custom_metadata_len: len, ..w.seg.c_md() };
        // SAFETY: valid structs.
        ok(call(|e| unsafe { rsm_copy(w.store, &md, &files, null_mut(), e) }));
    }
}

/// Defect 5: offsets outside the segment are refused the same way below it as above it; timestamps are a
/// search and answer at both ends.
#[test]
fn positions_of_offsets_outside_the_segment_are_refused_at_both_ends() {
    let w = world(true);
    let md = w.seg.c_md();
    let (start, end) = (md.start_offset, md.end_offset);
    let id = w.seg.md.remote_log_segment_id.to_string();
    for offset in [i64::MIN, -1, start - 1, end + 1, end + 1000, i64::MAX] {
        let mut pos = 7;
        // SAFETY: valid arguments.
        let got = call(|e| unsafe { rsm_position_of_offset(w.store, &md, offset, &mut pos, e) });
        let want = format!("`offset` {offset} is outside segment {id} (offsets {start} to {end} inclusive)");
        invalid(got, &[&want]);
        assert_eq!(pos, -1, "the position on failure");
    }
    let mut pos = 7;
    // SAFETY: valid arguments.
    ok(call(|e| unsafe { rsm_position_of_offset(w.store, &md, start, &mut pos, e) }));
    assert_eq!(pos, 0, "the first offset is at the first batch");
    // SAFETY: as above.
    ok(call(|e| unsafe { rsm_position_of_offset(w.store, &md, end, &mut pos, e) }));
    assert!(pos > 0 && (pos as u64) < std::fs::metadata(&w.seg.data.log_segment).unwrap().len(), "{pos}");
    // Timestamps: every value is a valid search; before the segment is its first batch, after it none.
    for (ts, want) in [(i64::MIN, 0), (-1, 0), (0, 0), (md.max_timestamp_ms + 1, -1), (i64::MAX, -1)] {
        let mut pos = 7;
        // SAFETY: valid arguments.
        ok(call(|e| unsafe { rsm_position_of_timestamp(w.store, &md, ts, &mut pos, e) }));
        assert_eq!(pos, want, "timestamp {ts}");
    }
}

/// The other refusals and allowances the header states, each as it states it.
#[test]
fn every_documented_refusal_and_allowance() {
    let w = world(true);
    let (md, files) = (w.seg.c_md(), w.seg.c_files());
    let mut s = null_mut();
    let mut pos = 0;
    // SAFETY (the block): valid arguments but for the one each call is about.
    unsafe {
        // Required out-parameters.
        let url = c"file:///tmp/never-opened";
        let one = [rsm_setting { key: c"store.url".as_ptr(), value: url.as_ptr() }];
        invalid(call(|e| rsm_store_open(one.as_ptr(), 1, null_mut(), e)), &["`store_out` is NULL"]);
        invalid(call(|e| rsm_fetch(w.store, &md, 0, -1, null_mut(), e)), &["`stream_out` is NULL"]);
        invalid(call(|e| rsm_fetch_index(w.store, &md, 0, null_mut(), e)), &["`stream_out` is NULL"]);
        invalid(call(|e| rsm_list_segments(w.store, null(), null_mut(), e)), &["`list_out` is NULL"]);
        invalid(
            call(|e| rsm_position_of_offset(w.store, &md, md.start_offset, null_mut(), e)),
            &["`position` is NULL"],
        );
        invalid(call(|e| rsm_position_of_timestamp(w.store, &md, 0, null_mut(), e)), &["`position` is NULL"]);
        // Optional ones: `custom_metadata_out` and `operation_out` may be NULL; so may both of
        // `rsm_open_handles`'s.
        ok(call(|e| rsm_copy(w.store, &md, &files, null_mut(), e)));
        assert_eq!(rsm_open_handles(null_mut(), null_mut()), rsm_result::Ok);
        // A misaligned out-pointer is refused, not written through.
        let mut words = [usize::MAX; 2];
        let odd = words.as_mut_ptr().cast::<u8>().wrapping_add(1).cast::<usize>();
        assert_eq!(rsm_open_handles(odd, null_mut()), rsm_result::InvalidArgument);
        assert_eq!(rsm_open_handles(null_mut(), odd), rsm_result::InvalidArgument);
        assert_eq!(words, [usize::MAX; 2], "nothing written");
        // Settings: NULL only with length 0 (then `store.url` is missing), strings not NULL.
        invalid(call(|e| rsm_store_open(null(), 2, &mut null_mut(), e)), &["`settings` is NULL but its length is 2"]);
        let null_key = [rsm_setting { key: null(), value: url.as_ptr() }];
        invalid(call(|e| rsm_store_open(null_key.as_ptr(), 1, &mut null_mut(), e)), &["`settings[0].key` is NULL"]);
        // Positions and index types.
        invalid(call(|e| rsm_fetch(w.store, &md, 0, -2, &mut s, e)), &["`end_position` -2 is negative"]);
        invalid(call(|e| rsm_fetch(w.store, &md, -1, -1, &mut s, e)), &["start position -1"]);
        let size = md.segment_size_in_bytes as i64;
        invalid(call(|e| rsm_fetch(w.store, &md, size, -1, &mut s, e)), &[&format!("start position {size}")]);
        invalid(call(|e| rsm_fetch(w.store, &md, 10, 9, &mut s, e)), &["end position 9 is before start position 10"]);
        invalid(call(|e| rsm_fetch_index(w.store, &md, 5, &mut s, e)), &["`index_type` 5 is not an rsm_index_type"]);
        // Metadata fields.
        let twice = [rsm_leader_epoch { epoch: 3, start_offset: 0 }, rsm_leader_epoch { epoch: 3, start_offset: 5 }];
        let dup = rsm_segment_metadata { leader_epochs: twice.as_ptr(), leader_epochs_len: 2, ..md };
        invalid(call(|e| rsm_delete(w.store, &dup, e)), &["`metadata.leader_epochs` has epoch 3 twice"]);
        let none = rsm_segment_metadata { leader_epochs: null(), leader_epochs_len: 0, ..md };
        invalid(call(|e| rsm_copy(w.store, &none, &files, null_mut(), e)), &["segment leader epochs can not be empty"]);
        // Any order of the epochs is the same map.
        let mut reversed: Vec<rsm_leader_epoch> = w.seg.epochs.clone();
        reversed.reverse();
        let rev = rsm_segment_metadata { leader_epochs: reversed.as_ptr(), ..md };
        ok(call(|e| rsm_position_of_offset(w.store, &rev, md.start_offset, &mut pos, e)));
        let state = rsm_segment_metadata { state: 4, ..md };
        invalid(call(|e| rsm_delete(w.store, &state, e)), &["`metadata.state`"]);
        let topic = rsm_segment_metadata {
            topic_id_partition: rsm_topic_id_partition { topic: null(), ..md.topic_id_partition },
            ..md
        };
        invalid(call(|e| rsm_delete(w.store, &topic, e)), &["`metadata.topic_id_partition.topic` is NULL"]);
        let bad = rsm_segment_metadata { start_offset: -1, ..md };
        invalid(call(|e| rsm_copy(w.store, &bad, &files, null_mut(), e)), &["unexpected start offset = -1"]);
        // The asynchronous copy returns Kafka's checks of the metadata too, as it returns every argument's.
        let backwards = rsm_segment_metadata { end_offset: md.start_offset - 1, ..md };
        for (m, why) in [
            (&bad, "unexpected start offset = -1"),
            (&backwards, "can not be less than start offset"),
            (&none, "segment leader epochs can not be empty"),
        ] {
            let mut op = as_handle::<asynchronous::rsm_operation>(1);
            invalid(call(|e| rsm_copy_async(w.store, m, &files, Some(never), null_mut(), &mut op, e)), &[why]);
            assert!(op.is_null(), "no operation on failure");
        }
        // Files: paths not NULL but the transaction index's.
        let no_index = rsm_segment_files { offset_index: null(), ..files };
        invalid(call(|e| rsm_copy(w.store, &md, &no_index, null_mut(), e)), &["`files.offset_index` is NULL"]);
        let no_snapshot = rsm_segment_files { producer_snapshot: null(), ..files };
        invalid(call(|e| rsm_copy(w.store, &md, &no_snapshot, null_mut(), e)), &["`files.producer_snapshot` is NULL"]);
        let no_txn = rsm_segment_files { transaction_index: null(), ..files };
        ok(call(|e| rsm_copy(w.store, &md, &no_txn, null_mut(), e)));
        // Asynchronous calls: a NULL callback is refused.
        invalid(
            call(|e| rsm_copy_async(w.store, &md, &files, None, null_mut(), null_mut(), e)),
            &["`callback` is NULL"],
        );
        invalid(
            call(|e| rsm_fetch_async(w.store, &md, 0, -1, None, null_mut(), null_mut(), e)),
            &["`callback` is NULL"],
        );
        invalid(call(|e| rsm_delete_async(w.store, &md, None, null_mut(), null_mut(), e)), &["`callback` is NULL"]);
        invalid(
            call(|e| rsm_fetch_async(w.store, &md, 0, -3, None, null_mut(), null_mut(), e)),
            &["`end_position` -3 is negative"],
        );
    }
    assert!(s.is_null(), "no stream was opened by a refused call");
}

#[test]
fn a_partition_copy_skips_what_is_whole_and_refuses_what_is_not_a_partition() {
    let w = world(false);
    let dir = c_path(&w._dir.path().join("orders-0"));
    let closed = LocalPartition::open(&w._dir.path().join("orders-0")).unwrap().closed_segments().len();
    assert!(closed > 1, "the fixture has several closed segments");
    let mut done = rsm_partition_copy::default();
    // SAFETY (each call below): valid handles, strings and out-pointers, or the NULLs under test.
    ok(call(|e| unsafe { rsm_copy_partition(w.store, dir.as_ptr(), 1, true, &mut done, e) }));
    assert_eq!(done, rsm_partition_copy { copied: closed, skipped: 0, redone: 0 });
    ok(call(|e| unsafe { rsm_copy_partition(w.store, dir.as_ptr(), 1, true, &mut done, e) }));
    assert_eq!(done, rsm_partition_copy { copied: 0, skipped: closed, redone: 0 }, "a rerun copies nothing");
    ok(call(|e| unsafe { rsm_copy_partition(w.store, dir.as_ptr(), 1, false, &mut done, e) }));
    assert_eq!(done, rsm_partition_copy { copied: closed, skipped: 0, redone: 0 }, "skip_whole off copies again");
    unsafe {
        invalid(call(|e| rsm_copy_partition(w.store, dir.as_ptr(), 1, true, null_mut(), e)), &["`result_out` is NULL"]);
        invalid(call(|e| rsm_copy_partition(w.store, null(), 1, true, &mut done, e)), &["`partition_dir` is NULL"]);
        let missing = c_path(&w._dir.path().join("nowhere-0"));
        let (code, message) = call(|e| rsm_copy_partition(w.store, missing.as_ptr(), 1, true, &mut done, e));
        assert_ne!(code, rsm_result::Ok);
        assert!(message.contains("nowhere-0"), "{message}");
    }
    assert_eq!(done, rsm_partition_copy::default(), "a refused call writes zeros");
}
