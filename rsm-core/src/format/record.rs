//! The records inside a v2 record batch (key, value, headers, offset, timestamp), for tools that show what
//! a segment holds. Every length is checked against the bytes that remain before anything is taken.

use crate::error::{Error, Result};
use crate::format::batch::Batch;
use crate::format::codec::Reader;

/// Where the records start in a v2 batch (after the 61-byte header).
const RECORDS_OFFSET: usize = 61;
/// The attributes' control bit: a transaction marker, not data.
const CONTROL_BIT: i16 = 0x20;

/// One record of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordView {
    /// Its offset.
    pub offset: i64,
    /// Its timestamp (ms).
    pub timestamp: i64,
    /// Its key, `None` for a null key.
    pub key: Option<Vec<u8>>,
    /// Its value, `None` for a null value (a tombstone).
    pub value: Option<Vec<u8>>,
    /// Its headers, in order.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Whether the batch is a control batch (a transaction marker).
pub fn is_control(batch: &Batch<'_>) -> bool {
    batch.magic() >= 2 && batch.attributes() & CONTROL_BIT != 0
}

fn bytes_field(r: &mut Reader<'_>, name: &str) -> Result<Option<Vec<u8>>> {
    let len = r.varint()?;
    if len < 0 {
        return Ok(None);
    }
    let n = len as usize;
    if n > r.remaining() {
        return Err(r.error(format_args!("{name} length {len} is beyond the {} bytes that remain", r.remaining())));
    }
    Ok(Some(r.bytes(n)?.to_vec()))
}

/// The records of an uncompressed v2 batch. A compressed batch, or a legacy (magic 0 or 1) message, is an
/// invalid-argument error naming its offset and codec; a record that does not parse is corrupt.
pub fn records(batch: &Batch<'_>) -> Result<Vec<RecordView>> {
    if batch.magic() < 2 {
        return Err(Error::invalid(format!(
            "batch at offset {} is a legacy message (magic {}): its records are not decoded here",
            batch.base_offset(),
            batch.magic()
        )));
    }
    if batch.compression() != 0 {
        return Err(Error::invalid(format!(
            "batch at offset {} is compressed (codec {}): its records are not decoded here",
            batch.base_offset(),
            batch.compression()
        )));
    }
    let what = format!("record batch at offset {}", batch.base_offset());
    let bytes = batch.bytes().get(RECORDS_OFFSET..).unwrap_or_default();
    let mut r = Reader::new(bytes, &what);
    let count = batch.record_count().max(0) as usize;
    // Every record takes at least 7 bytes: never allocate by a count the bytes cannot hold.
    let mut out = Vec::with_capacity(count.min(bytes.len() / 7));
    for _ in 0..count {
        let len = r.varint()?;
        if len < 0 || len as usize > r.remaining() {
            return Err(r.error(format_args!("record length {len} with {} bytes left", r.remaining())));
        }
        let body = r.bytes(len as usize)?;
        let mut b = Reader::new(body, &what);
        let _attributes = b.u8()?;
        let timestamp = batch.base_timestamp().wrapping_add(b.varlong()?);
        let offset = batch.base_offset().wrapping_add(i64::from(b.varint()?));
        let key = bytes_field(&mut b, "key")?;
        let value = bytes_field(&mut b, "value")?;
        let n = b.varint()?;
        if n < 0 || n as usize > b.remaining() / 2 {
            return Err(b.error(format_args!("header count {n} with {} bytes left", b.remaining())));
        }
        let mut headers = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let k = bytes_field(&mut b, "header key")?.ok_or_else(|| b.error("a header key is null"))?;
            let k = String::from_utf8(k).map_err(|_| b.error("a header key is not UTF-8"))?;
            headers.push((k, bytes_field(&mut b, "header value")?));
        }
        out.push(RecordView { offset, timestamp, key, value, headers });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::batch::BatchIter;
    use crate::format::writer::{Record, encode_batch};

    #[test]
    fn records_read_back_as_written() {
        let written = vec![
            Record { key: Some(b"k1".to_vec()), value: Some(b"v1".to_vec()), headers: vec![], timestamp: 1_000 },
            Record {
                key: None,
                value: None,
                headers: vec![("h".into(), b"x".to_vec()), ("g".into(), vec![])],
                timestamp: 1_007,
            },
        ];
        let bytes = encode_batch(40, 3, &written);
        let batch = BatchIter::new(&bytes, 0, true).next_complete().unwrap().unwrap();
        let got = records(&batch).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].offset, got[0].timestamp, got[0].key.as_deref()), (40, 1_000, Some(&b"k1"[..])));
        assert_eq!(got[0].value.as_deref(), Some(&b"v1"[..]));
        assert_eq!(
            (got[1].offset, got[1].timestamp, got[1].key.clone(), got[1].value.clone()),
            (41, 1_007, None, None)
        );
        assert_eq!(got[1].headers, vec![("h".to_string(), Some(b"x".to_vec())), ("g".to_string(), Some(vec![]))]);
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let bytes =
            encode_batch(0, 0, &[Record { key: Some(vec![1; 30]), value: Some(vec![2; 30]), ..Default::default() }]);
        for cut in RECORDS_OFFSET..bytes.len() {
            let mut b = bytes.clone();
            // Lengths made huge, then the tail cut off.
            b[cut] = 0x7f;
            if let Ok(Some(batch)) = BatchIter::new(&b, 0, false).next_complete() {
                let _ = records(&batch);
            }
            let batch_len = cut as i32 - 12;
            let mut t = bytes[..cut].to_vec();
            t[8..12].copy_from_slice(&batch_len.to_be_bytes());
            if let Ok(Some(batch)) = BatchIter::new(&t, 0, false).next_complete() {
                assert!(records(&batch).is_err(), "a batch cut at {cut} decoded");
            }
        }
    }
}
