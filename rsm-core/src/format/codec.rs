//! The one big-endian cursor of the SDK, in both directions: the stored formats (manifest, chunk entries),
//! the encodings that cross a boundary (the metadata JNI passes) and Kafka's records on the metadata topic
//! are read through [`Reader`] and written through [`Writer`]. Every short read is an error naming what was
//! being read: corrupt for stored data, invalid argument for a caller's input.
//!
//! Besides fixed-width big-endian integers, both speak Kafka's variable-length encodings: the zigzag varints
//! of record fields ([`Reader::varlong`]) and the unsigned varints and compact lengths (`n + 1`, 0 for null)
//! of its flexible-version messages ([`Reader::uvarint`], [`Reader::compact_len`]).

use crate::error::{Error, ErrorKind, Result};

/// A checked big-endian reader over a byte slice.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'a str,
    kind: ErrorKind,
}

impl<'a> Reader<'a> {
    /// A reader of stored bytes `buf`; `what` names the thing being decoded in errors, which are corrupt.
    pub fn new(buf: &'a [u8], what: &'a str) -> Self {
        Reader { buf, pos: 0, what, kind: ErrorKind::Corrupt }
    }

    /// A reader of bytes a caller passed; its errors are invalid arguments.
    pub fn input(buf: &'a [u8], what: &'a str) -> Self {
        Reader { buf, pos: 0, what, kind: ErrorKind::InvalidArgument }
    }

    /// A reader of stored bytes whose (corrupt) errors say only what went wrong, for a caller that names
    /// the field and the byte it starts at itself (the metadata topic's records).
    pub fn unnamed(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0, what: "", kind: ErrorKind::Corrupt }
    }

    /// An error of this reader's kind, naming what is decoded.
    pub fn error(&self, message: impl std::fmt::Display) -> Error {
        if self.what.is_empty() {
            return Error::new(self.kind, message.to_string());
        }
        Error::new(self.kind, format!("{}: {message}", self.what))
    }

    /// A count of entries of `entry_size` bytes each (an i32), refused when negative or when that many
    /// entries cannot fit in what remains, so no caller allocates by an unchecked length.
    pub fn count(&mut self, name: &str, entry_size: usize) -> Result<usize> {
        let n = self.i32()?;
        let rest = self.remaining();
        if n < 0 || (n as usize).saturating_mul(entry_size) > rest {
            return Err(self.error(format_args!("{name} {n} does not fit the {rest} bytes that remain")));
        }
        Ok(n as usize)
    }

    /// A zigzag varint of at most 10 bytes (Kafka's record fields): `varint` when it must fit 32 bits.
    pub fn varlong(&mut self) -> Result<i64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
            }
        }
        Err(self.error(format_args!("varint longer than 10 bytes at byte {}", self.pos)))
    }

    /// A zigzag varint that fits 32 bits.
    pub fn varint(&mut self) -> Result<i32> {
        let v = self.varlong()?;
        i32::try_from(v).map_err(|_| self.error(format_args!("varint {v} does not fit 32 bits at byte {}", self.pos)))
    }

    /// Kafka's unsigned varint (`ByteUtils.readUnsignedVarint`): at most 5 bytes, and no bits beyond 32.
    pub fn uvarint(&mut self) -> Result<u32> {
        let mut value = 0u32;
        for i in 0..5 {
            if self.remaining() == 0 {
                return Err(self.error("truncated varint"));
            }
            let b = self.u8()?;
            if i == 4 && b > 0x0f {
                return Err(self.error("varint is too long (more than 32 bits or 5 bytes)"));
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        unreachable!("the fifth byte has no continuation bit")
    }

    /// A compact length of Kafka's flexible versions (an unsigned varint of `n + 1`): `None` for the null
    /// marker (0), else `n`, refused when negative or when `n` items of at least `min_item` bytes each
    /// cannot fit in what remains, so no caller allocates by an unchecked length.
    pub fn compact_len(&mut self, min_item: usize) -> Result<Option<usize>> {
        let n = self.uvarint()?;
        if n == 0 {
            return Ok(None);
        }
        if n > i32::MAX as u32 {
            return Err(self.error(format_args!("negative length {}", (n as i32).wrapping_sub(1))));
        }
        let len = (n - 1) as usize;
        if len.saturating_mul(min_item) > self.remaining() {
            return Err(self.error(format_args!("length {len} is longer than the {} bytes left", self.remaining())));
        }
        Ok(Some(len))
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.error(format_args!(
                "truncated at byte {} (needed {n} more bytes, {} left)",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next `N` bytes, as an array (a [`crate::model::Uuid`]'s 16, for one).
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.bytes(N)?.try_into().expect("length checked"))
    }

    /// A u8.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    /// A big-endian i16.
    pub fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    /// A big-endian u16.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    /// A big-endian i32.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    /// A big-endian u32.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    /// A big-endian i64.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }
    /// A big-endian u64.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }
}

/// The writer of what [`Reader`] reads: big-endian integers and Kafka's varints, appended to a buffer the
/// caller owns (which it may also append to directly, or patch, between calls).
#[derive(Debug)]
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Writer { out }
    }

    /// The buffer written to, for an encoder of its own (a chunk entry) or a field patched afterwards.
    pub fn out(&mut self) -> &mut Vec<u8> {
        self.out
    }

    /// Bytes in the buffer (including those it held before this writer).
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Raw bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    /// A u8.
    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    /// An i8.
    pub fn i8(&mut self, v: i8) {
        self.out.push(v as u8);
    }
    /// A big-endian i16.
    pub fn i16(&mut self, v: i16) {
        self.bytes(&v.to_be_bytes());
    }
    /// A big-endian u16.
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_be_bytes());
    }
    /// A big-endian i32.
    pub fn i32(&mut self, v: i32) {
        self.bytes(&v.to_be_bytes());
    }
    /// A big-endian u32.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes());
    }
    /// A big-endian i64.
    pub fn i64(&mut self, v: i64) {
        self.bytes(&v.to_be_bytes());
    }
    /// A big-endian u64.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_be_bytes());
    }

    /// A zigzag varint (Kafka's record fields), as [`Reader::varlong`] reads it.
    pub fn varlong(&mut self, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            self.out.push((z as u8) | 0x80);
            z >>= 7;
        }
        self.out.push(z as u8);
    }

    /// A zigzag varint of 32 bits, as [`Reader::varint`] reads it.
    pub fn varint(&mut self, v: i32) {
        self.varlong(v.into());
    }

    /// Kafka's unsigned varint, as [`Reader::uvarint`] reads it.
    pub fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    /// A compact length (or count) of Kafka's flexible versions: `n + 1`, as [`Reader::compact_len`] reads
    /// it (write the null marker with `uvarint(0)`). Panics at 2^32 - 1 or more, which no length in memory
    /// reaches that Kafka could read.
    pub fn compact_len(&mut self, n: usize) {
        self.uvarint(u32::try_from(n).ok().and_then(|n| n.checked_add(1)).expect("a length below 2^32 - 1"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_writer_writes_the_reader_reads() {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.u8(1);
        w.i8(-2);
        w.i16(-3);
        w.u16(4);
        w.i32(-5);
        w.u32(6);
        w.i64(-7);
        w.u64(8);
        for v in [0, 1, -1, 63, -64, 64, i32::MAX, i32::MIN] {
            w.varint(v);
        }
        w.varlong(i64::MIN);
        w.uvarint(u32::MAX);
        w.compact_len(2);
        w.bytes(b"ab");
        let mut r = Reader::new(&out, "test");
        assert_eq!((r.u8().unwrap(), r.u8().unwrap() as i8, r.i16().unwrap(), r.u16().unwrap()), (1, -2, -3, 4));
        assert_eq!((r.i32().unwrap(), r.u32().unwrap(), r.i64().unwrap(), r.u64().unwrap()), (-5, 6, -7, 8));
        for v in [0, 1, -1, 63, -64, 64, i32::MAX, i32::MIN] {
            assert_eq!(r.varint().unwrap(), v);
        }
        assert_eq!(r.varlong().unwrap(), i64::MIN);
        assert_eq!(r.uvarint().unwrap(), u32::MAX);
        assert_eq!(r.compact_len(1).unwrap(), Some(2));
        assert_eq!(r.bytes(2).unwrap(), b"ab");
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn zigzag_varints_are_kafkas() {
        // Kafka's ByteUtils.writeVarint: 0 -> 00, -1 -> 01, 1 -> 02, 63 -> 7e, -64 -> 7f, 64 -> 80 01.
        for (v, bytes) in [(0, &[0u8][..]), (-1, &[1]), (1, &[2]), (63, &[0x7e]), (-64, &[0x7f]), (64, &[0x80, 1])] {
            let mut out = Vec::new();
            Writer::new(&mut out).varint(v);
            assert_eq!(out, bytes, "{v}");
        }
    }

    #[test]
    fn compact_lengths_are_checked() {
        let e = Reader::unnamed(&[0xff, 0xff, 0xff, 0xff, 0x0f]).compact_len(1).unwrap_err();
        assert_eq!(e.message(), "negative length -2");
        let e = Reader::unnamed(&[3, 0]).compact_len(1).unwrap_err();
        assert_eq!(e.message(), "length 2 is longer than the 1 bytes left");
        assert_eq!(Reader::unnamed(&[0]).compact_len(1).unwrap(), None);
        let e = Reader::new(&[0x80], "x").uvarint().unwrap_err();
        assert_eq!(e.message(), "x: truncated varint");
    }
}
