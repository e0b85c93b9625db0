//! The one big-endian cursor of the SDK: the stored formats (manifest, chunk entries) and the encodings
//! that cross a boundary (the metadata JNI passes) read through it. Every short read is an error naming
//! what was being read: corrupt for stored data, invalid argument for a caller's input.

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

    /// An error of this reader's kind, naming what is decoded.
    pub fn error(&self, message: impl std::fmt::Display) -> Error {
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

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
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
