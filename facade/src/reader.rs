//! The stream adapter every face uses: a blocking reader over a fetch stream (or bytes already in hand)
//! that hands out pieces without copying, serves short reads of any size, skips without buffering and
//! tells what it holds.

use bytes::Bytes;
use futures::StreamExt;
use rsm_core::Result;
use rsm_core::backend::ByteStream;
use std::io;

/// A blocking reader of a segment's bytes or of an index. Dropping it stops the fetch and frees its
/// buffers at once. Memory: the one piece of the stream it holds.
pub struct SegmentReader {
    stream: Option<ByteStream>,
    current: Bytes,
}

impl std::fmt::Debug for SegmentReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentReader")
            .field("open", &self.stream.is_some())
            .field("buffered", &self.current.len())
            .finish()
    }
}

impl SegmentReader {
    /// A reader over a fetch stream.
    pub fn stream(stream: ByteStream) -> Self {
        SegmentReader { stream: Some(stream), current: Bytes::new() }
    }

    /// A reader over bytes already read (an index).
    pub fn bytes(bytes: Bytes) -> Self {
        SegmentReader { stream: None, current: bytes }
    }

    /// Makes sure some bytes are held; `false` at the end. A failed stream is closed: later calls see the end.
    fn fill(&mut self) -> Result<bool> {
        while self.current.is_empty() {
            let Some(stream) = self.stream.as_mut() else {
                return Ok(false);
            };
            match crate::runtime().block_on(stream.next()) {
                Some(Ok(b)) => self.current = b,
                Some(Err(e)) => {
                    self.stream = None;
                    return Err(e);
                }
                None => {
                    self.stream = None;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The next piece of bytes as the stream gave it (`None` at the end), without copying.
    pub fn next_bytes(&mut self) -> Result<Option<Bytes>> {
        Ok(self.fill()?.then(|| std::mem::take(&mut self.current)))
    }

    /// Up to `max` bytes off the front of what is held, waiting for the store only when nothing is
    /// (empty at the end, or when `max` is 0). Never more than one piece of the stream, so a caller's huge
    /// `max` allocates nothing.
    pub fn next_chunk(&mut self, max: usize) -> Result<Bytes> {
        if max == 0 || !self.fill()? {
            return Ok(Bytes::new());
        }
        let n = max.min(self.current.len());
        Ok(self.current.split_to(n))
    }

    /// Discards up to `n` bytes; returns how many were discarded (fewer only at the end).
    pub fn skip(&mut self, n: u64) -> Result<u64> {
        let mut done = 0u64;
        while done < n && self.fill()? {
            let k = (n - done).min(self.current.len() as u64) as usize;
            let _ = self.current.split_to(k);
            done += k as u64;
        }
        Ok(done)
    }

    /// Bytes readable without waiting.
    pub fn buffered(&self) -> usize {
        self.current.len()
    }
}

impl io::Read for SegmentReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let chunk = self.next_chunk(buf.len()).map_err(io::Error::other)?;
        buf[..chunk.len()].copy_from_slice(&chunk);
        Ok(chunk.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::Error;
    use std::io::Read;

    #[test]
    fn short_reads_skips_and_end() {
        let mut s = SegmentReader::bytes(Bytes::from_static(b"0123456789"));
        assert_eq!(s.buffered(), 10);
        assert_eq!(&s.next_chunk(3).unwrap()[..], b"012");
        assert_eq!(s.skip(4).unwrap(), 4);
        assert_eq!(&s.next_chunk(usize::MAX).unwrap()[..], b"789", "a huge read takes what is there");
        assert!(s.next_chunk(5).unwrap().is_empty());
        assert_eq!(s.skip(u64::MAX).unwrap(), 0);
    }

    #[test]
    fn pieces_in_order_and_a_failure_closes_the_stream() {
        let items = vec![Ok(Bytes::from_static(b"ab")), Ok(Bytes::from_static(b"cde")), Err(Error::corrupt("bad crc"))];
        let mut s = SegmentReader::stream(Box::pin(futures::stream::iter(items)));
        let mut buf = [0u8; 4];
        assert_eq!(s.read(&mut buf).unwrap(), 2, "one piece at most");
        assert_eq!(s.skip(1).unwrap(), 1);
        assert_eq!(&s.next_bytes().unwrap().unwrap()[..], b"de");
        let e = s.next_chunk(1).unwrap_err();
        assert!(e.to_string().contains("bad crc"), "{e}");
        assert!(s.next_bytes().unwrap().is_none(), "closed after the failure");
    }
}
