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
