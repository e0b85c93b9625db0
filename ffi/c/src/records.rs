//! Records, not batches: `rsm_records_fetch` and its accessors, the C face of the facade's
//! [`Store::fetch_records`](rsm_facade::Store::fetch_records). A fetch returns an `rsm_records` the caller
//! owns (like an `rsm_segment_list`); each `rsm_record` in it, and every key, value and header it points
//! to, is owned by it until `rsm_records_free`.

use crate::boundary::{entry, entry_plain, out_arg, ref_arg, slice_arg};
use crate::result::{rsm_error, rsm_result};
use crate::store::{blocking_store_of, rsm_store};
use crate::types::{self, rsm_segment_metadata};
use rsm_core::Error;
use rsm_core::format::records::isolation::IsolationLevel;
use rsm_core::format::records::{DecodeLimits, Record, TimestampType};
use rsm_facade::RecordsFetch;
use std::ffi::c_char;

/// A consumer's `isolation.level`, for `rsm_records_fetch`'s `isolation`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub enum rsm_isolation {
    /// Every data record (Kafka's default).
    ReadUncommitted = 0,
    /// Only records of committed transactions and of non-transactional producers.
    ReadCommitted = 1,
}

/// What a record's timestamp is, by Kafka's `TimestampType` ids: `rsm_record_timestamp_type` returns one.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub enum rsm_timestamp_type {
    /// No timestamp (records of magic 0).
    NoTimestampType = -1,
    /// The producer's time.
    CreateTime = 0,
    /// The broker's time at append.
    LogAppendTime = 1,
}

/// The records a fetch returned, with the offset to fetch next: from `rsm_records_fetch`, owned by the
/// caller, freed with `rsm_records_free`. Opaque.
pub struct rsm_records {
    records: Vec<rsm_record>,
    next_offset: i64,
}

/// One record of an `rsm_records`, owned by it: read with the `rsm_record_*` accessors. Opaque.
pub struct rsm_record {
    r: Record,
}

/// What an empty key, value or header points to: never read (its length is 0), but not NULL.
static EMPTY: [u8; 1] = [0];

fn bytes_ptr(b: Option<&[u8]>) -> (*const u8, usize) {
    match b {
        None => (std::ptr::null(), 0),
        Some([]) => (EMPTY.as_ptr(), 0),
        Some(b) => (b.as_ptr(), b.len()),
    }
}

/// Reads records of `segment` from `offset` as a Kafka consumer at `isolation` would get them: from the
/// batch holding `offset`, at most `max_bytes` of batches but always the whole first one, at most
/// `max_records` records, strictly in offset order. Every codec is decoded (gzip, snappy, lz4, zstd) and
/// legacy (magic 0 and 1) messages too; a batch may inflate to at most `max_batch_bytes` (0: 64 MiB), and
/// its decoded records take at most as much memory. Control batches (commit
/// and abort markers) are never records. At `RSM_ISOLATION_READ_COMMITTED` the records of aborted
/// transactions are dropped: the aborted transactions come from the segment's transaction index, then
/// from those of `later` (the segments after `segment` in the same partition, oldest first, as
/// `rsm_list_segments` returns them) until Kafka's search is complete, since an abort's marker may be in
/// a later segment. Pass every later segment you have (or none at `RSM_ISOLATION_READ_UNCOMMITTED`).
///
/// Page through a segment by fetching again from `rsm_records_next_offset`; once it is past
/// `segment->end_offset`, go on with the next segment.
///
/// Arguments: `store`, `segment` and `records_out` must not be NULL; `later` is an array of `later_len`
/// pointers, none NULL (NULL only when `later_len` is 0), each of the same partition and after the one
/// before. `offset` must be one of the segment's (`segment->start_offset` to `segment->end_offset`);
/// `isolation` an `rsm_isolation` (0 or 1). Anything else is `RSM_RESULT_INVALID_ARGUMENT`, naming the
/// argument and its value. A damaged batch is `RSM_RESULT_CORRUPT`, and one past `max_batch_bytes`
/// `RSM_RESULT_INVALID_ARGUMENT`, each naming the batch and the segment.
///
/// Ownership: `segment`, `later` and the metadata it points to are borrowed for the call. On success
/// `*records_out` is a new `rsm_records` the caller owns and frees with `rsm_records_free` (it may hold no
/// record: a fetch at the end of an aborted transaction, or `max_records` 0); on failure it is NULL.
///
/// # Safety
/// `segment` is NULL or valid; `later` is NULL or points to `later_len` pointers, each NULL or valid;
/// `records_out` and `err` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_records_fetch(
    store: *const rsm_store,
    segment: *const rsm_segment_metadata,
    later: *const *const rsm_segment_metadata,
    later_len: usize,
    offset: i64,
    max_bytes: u32,
    max_records: usize,
    isolation: i32,
    max_batch_bytes: usize,
    records_out: *mut *mut rsm_records,
    err: *mut *mut rsm_error,
) -> rsm_result {
    // SAFETY (this block and the closure's): the caller's contract, argument by argument.
    unsafe {
        entry(err, || {
            let out = out_arg(records_out, "records_out", std::ptr::null_mut())?;
            let isolation = match isolation {
                0 => IsolationLevel::ReadUncommitted,
                1 => IsolationLevel::ReadCommitted,
                i => {
                    return Err(Error::invalid(format!(
                        "`isolation` {i} is not an rsm_isolation (0: read_uncommitted, 1: read_committed)"
                    )));
                }
            };
            let s = blocking_store_of(store, "rsm_records_fetch")?;
            let md = types::metadata(ref_arg(segment, "segment")?, "segment")?;
            let later = slice_arg(later, later_len, "later")?
                .iter()
                .enumerate()
                .map(|(i, &p)| {
                    let what = format!("later[{i}]");
                    types::metadata(ref_arg(p, &what)?, &what)
                })
                .collect::<rsm_core::Result<Vec<_>>>()?;
            let req = RecordsFetch {
                offset,
                max_bytes,
                max_records,
                isolation,
                limits: match max_batch_bytes {
                    0 => DecodeLimits::default(),
                    n => DecodeLimits { max_batch_bytes: n },
                },
            };
            let got = s.fetch_records(&md, &later, &req)?;
            let records = got.records.into_iter().map(|r| rsm_record { r }).collect();
            out.set(Box::into_raw(Box::new(rsm_records { records, next_offset: got.next_offset })));
            Ok(())
        })
    }
}

/// The number of records of a fetch (0 for NULL).
///
/// # Safety
/// `records` is NULL or an `rsm_records` the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_records_len(records: *const rsm_records) -> usize {
    // SAFETY: the caller's contract.
    unsafe { records.as_ref() }.map_or(0, |r| r.records.len())
}

/// The offset to fetch next: after the last record returned when `max_records` stopped the fetch, else
/// after the last batch read (so past aborted records and markers too). -1 for NULL.
///
/// # Safety
/// `records` is NULL or an `rsm_records` the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_records_next_offset(records: *const rsm_records) -> i64 {
    // SAFETY: the caller's contract.
    unsafe { records.as_ref() }.map_or(-1, |r| r.next_offset)
}

/// Record `i` of a fetch (in offset order), or NULL when `records` is NULL or `i` is out of range. Owned
/// by `records`, valid until `rsm_records_free(records)`.
///
/// # Safety
/// `records` is NULL or an `rsm_records` the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_records_get(records: *const rsm_records, i: usize) -> *const rsm_record {
    // SAFETY: the caller's contract.
    unsafe { records.as_ref() }.and_then(|r| r.records.get(i)).map_or(std::ptr::null(), |r| r)
}

/// Frees the records of a fetch. NULL is a no-op.
///
/// # Safety
/// `records` is NULL or an `rsm_records` the library returned that is not freed yet; neither it nor any
/// record, key, value or header taken from it may be used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_records_free(records: *mut rsm_records) {
    if !records.is_null() {
        // SAFETY: the caller's contract: it came from `Box::into_raw` in `rsm_records_fetch`, freed once.
        drop(unsafe { Box::from_raw(records) });
    }
}

/// A record's offset (-1 for NULL).
///
/// # Safety
/// `record` is NULL or a record of an `rsm_records` that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_record_offset(record: *const rsm_record) -> i64 {
    // SAFETY: the caller's contract.
    unsafe { record.as_ref() }.map_or(-1, |r| r.r.offset)
}

/// A record's timestamp in ms (-1, Kafka's "no timestamp", for NULL and for records without one).
///
/// # Safety
/// `record` is NULL or a record of an `rsm_records` that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_record_timestamp(record: *const rsm_record) -> i64 {
    // SAFETY: the caller's contract.
    unsafe { record.as_ref() }.map_or(-1, |r| r.r.timestamp)
}

/// What a record's timestamp is: an `rsm_timestamp_type` (Kafka's ids: -1 none, 0 create time, 1 log
/// append time); `RSM_TIMESTAMP_TYPE_NO_TIMESTAMP_TYPE` for NULL.
///
/// # Safety
/// `record` is NULL or a record of an `rsm_records` that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_record_timestamp_type(record: *const rsm_record) -> i32 {
    // SAFETY: the caller's contract.
    let t = unsafe { record.as_ref() }.map_or(TimestampType::NoTimestampType, |r| r.r.timestamp_type);
    (match t {
        TimestampType::NoTimestampType => rsm_timestamp_type::NoTimestampType,
        TimestampType::CreateTime => rsm_timestamp_type::CreateTime,
        TimestampType::LogAppendTime => rsm_timestamp_type::LogAppendTime,
    }) as i32
}

/// A record's key: NULL for a null key (and for a NULL record), non-NULL for an empty one. `*len`
/// receives its length (0 for a null key) unless `len` is NULL. Owned by the record's `rsm_records`.
///
/// # Safety
/// `record` is NULL or a record of an `rsm_records` that is not freed yet; `len` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_record_key(record: *const rsm_record, len: *mut usize) -> *const u8 {
    // SAFETY: the caller's contract.
    unsafe { field(record, len, |r| r.key.as_deref()) }
}

/// A record's value: NULL for a null value (a tombstone; and for a NULL record), non-NULL for an empty
/// one. `*len` receives its length (0 for a null value) unless `len` is NULL. Owned by the record's
/// `rsm_records`.
///
/// # Safety
/// As `rsm_record_key`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_record_value(record: *const rsm_record, len: *mut usize) -> *const u8 {
    // SAFETY: the caller's contract.
    unsafe { field(record, len, |r| r.value.as_deref()) }
}

/// # Safety
/// As `rsm_record_key`.
unsafe fn field(record: *const rsm_record, len: *mut usize, f: impl FnOnce(&Record) -> Option<&[u8]>) -> *const u8 {
    // SAFETY: the caller's contract.
    let (p, n) = bytes_ptr(unsafe { record.as_ref() }.and_then(|r| f(&r.r)));
    if len.is_aligned() {
        // SAFETY: the caller's contract, and aligned; `as_mut` handles NULL.
        if let Some(l) = unsafe { len.as_mut() } {
            *l = n;
        }
    }
    p
}

/// The number of headers of a record (0 for NULL).
///
/// # Safety
/// `record` is NULL or a record of an `rsm_records` that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_record_header_count(record: *const rsm_record) -> usize {
    // SAFETY: the caller's contract.
    unsafe { record.as_ref() }.map_or(0, |r| r.r.headers.len())
}

/// Header `i` of a record (in the record's order; a key may repeat): `*key` receives its key, UTF-8 and
/// not NUL-terminated, with `*key_len` bytes; `*value` its value, NULL for a null value and non-NULL for
/// an empty one, with `*value_len` bytes (0 for a null value). Any of the four out-pointers may be NULL:
/// that part is not reported.
///
/// Returns `RSM_RESULT_OK`, or `RSM_RESULT_INVALID_ARGUMENT` when `record` is NULL, `i` is not below
/// `rsm_record_header_count(record)` (then the out-pointers receive NULL and 0) or an out-pointer is not
/// aligned for its type (then nothing is written).
///
/// Ownership: the key and value are owned by the record's `rsm_records`, valid until `rsm_records_free`.
///
/// # Safety
/// `record` is NULL or a record of an `rsm_records` that is not freed yet; the out-pointers are NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_record_header(
    record: *const rsm_record,
    i: usize,
    key: *mut *const c_char,
    key_len: *mut usize,
    value: *mut *const u8,
    value_len: *mut usize,
) -> rsm_result {
    entry_plain(|| {
        if !key.is_aligned() || !key_len.is_aligned() || !value.is_aligned() || !value_len.is_aligned() {
            return rsm_result::InvalidArgument;
        }
        // SAFETY: the caller's contract.
        let header = unsafe { record.as_ref() }.and_then(|r| r.r.headers.get(i));
        let (k, kl, v, vl) = match header {
            Some((k, v)) => {
                let (kp, kl) = bytes_ptr(Some(k.as_bytes()));
                let (vp, vl) = bytes_ptr(v.as_deref());
                (kp.cast::<c_char>(), kl, vp, vl)
            }
            None => (std::ptr::null(), 0, std::ptr::null(), 0),
        };
        // SAFETY: each is NULL or writable by the caller's contract, and aligned; `as_mut` handles NULL.
        unsafe {
            if let Some(p) = key.as_mut() {
                *p = k;
            }
            if let Some(p) = key_len.as_mut() {
                *p = kl;
            }
            if let Some(p) = value.as_mut() {
                *p = v;
            }
            if let Some(p) = value_len.as_mut() {
                *p = vl;
            }
        }
        if header.is_some() { rsm_result::Ok } else { rsm_result::InvalidArgument }
    })
}
