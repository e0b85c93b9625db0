//! Reusable read buffers for backends that read into memory (the filesystem backend).
//!
//! A fetch hands out each chunk as [`Bytes`]; when the reader drops it, its buffer goes back to the pool
//! instead of to the allocator. That saves zeroing and page faults on every read, and keeps freed
//! multi-megabyte buffers from piling up in the allocator's per-thread arenas, so memory stays bounded by
//! what is in flight plus what the pool retains.
//!
//! Every buffer starts on a page boundary. Reads from the page cache are copied by the kernel with
//! `rep movsb`, which on AMD Zen runs about 3x slower when the destination sits just past the source's
//! offset in a page (4 KiB aliasing): a fetch's reads start at whole 64 KiB blocks (page offset 0), and
//! a plain `Vec` of a megabyte or more is an `mmap` of glibc's whose data starts 16 bytes into a page, the
//! slow case. Page-aligned buffers keep the copy at full speed whatever the allocator does.

use bytes::Bytes;
use std::sync::{Arc, Mutex, Weak};

/// Smallest pooled buffer.
const MIN_CLASS: usize = 64 << 10;
/// Largest pooled buffer; larger reads allocate plainly (still page-aligned).
const MAX_CLASS: usize = 16 << 20;
/// Where every buffer's bytes start: a multiple of this address.
const ALIGN: usize = 4096;

/// A zeroed buffer of at least `len` usable bytes whose usable part starts on an [`ALIGN`] boundary.
#[derive(Debug)]
struct AlignedBuf {
    /// `len + ALIGN - 1` or more bytes; the usable ones start at `start`.
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn zeroed(len: usize) -> Self {
        let raw = vec![0u8; len + ALIGN - 1];
        let start = raw.as_ptr().align_offset(ALIGN);
        AlignedBuf { raw, start, len }
    }

    fn bytes(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

#[derive(Debug)]
struct Inner {
    /// Free buffers; each `len` is a power of two.
    free: Mutex<Vec<AlignedBuf>>,
    max_retained_bytes: usize,
}

/// A bounded pool of read buffers.
#[derive(Debug, Clone)]
pub struct BufferPool {
    inner: Arc<Inner>,
}

struct Pooled {
    /// `None` once given back.
    buf: Option<AlignedBuf>,
    len: usize,
    pool: Weak<Inner>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf.as_ref().expect("held until dropped").bytes()[..self.len]
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let (Some(pool), Some(buf)) = (self.pool.upgrade(), self.buf.take()) else { return };
        let mut free = pool.free.lock().expect("buffer pool lock");
        let retained: usize = free.iter().map(|b| b.len).sum();
        if retained + buf.len <= pool.max_retained_bytes {
            free.push(buf);
        }
    }
}

/// A plain (unpooled) page-aligned buffer.
struct Unpooled(AlignedBuf);

impl AsRef<[u8]> for Unpooled {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes()
    }
}

impl BufferPool {
    /// A pool that keeps at most `max_retained_bytes` of free buffers.
    pub fn new(max_retained_bytes: usize) -> Self {
        BufferPool { inner: Arc::new(Inner { free: Mutex::new(Vec::new()), max_retained_bytes }) }
    }

    /// Free bytes held for reuse.
    pub fn retained_bytes(&self) -> usize {
        self.inner.free.lock().expect("buffer pool lock").iter().map(|b| b.len).sum()
    }

    /// Fills `len` bytes with `fill` in a pooled buffer and returns them as [`Bytes`] that give the
    /// buffer back when the last reference drops.
    pub fn read<E>(&self, len: usize, fill: impl FnOnce(&mut [u8]) -> Result<(), E>) -> Result<Bytes, E> {
        if len > MAX_CLASS {
            let mut buf = AlignedBuf::zeroed(len);
            fill(buf.bytes_mut())?;
            return Ok(Bytes::from_owner(Unpooled(buf)));
        }
        let class = len.next_power_of_two().max(MIN_CLASS);
        let reused = {
            let mut free = self.inner.free.lock().expect("buffer pool lock");
            free.iter().position(|b| b.len == class).map(|i| free.swap_remove(i))
        };
        let mut buf = reused.unwrap_or_else(|| AlignedBuf::zeroed(class));
        fill(&mut buf.bytes_mut()[..len])?;
        Ok(Bytes::from_owner(Pooled { buf: Some(buf), len, pool: Arc::downgrade(&self.inner) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_are_bounded() {
        let pool = BufferPool::new(3 << 20);
        let a = pool
            .read::<()>(1_000_000, |b| {
                b.fill(7);
                Ok(())
            })
            .unwrap();
        assert_eq!(a.len(), 1_000_000);
        assert!(a.iter().all(|&x| x == 7));
        let ptr = a.as_ptr();
        let sliced = a.slice(10..20);
        drop(a);
        assert_eq!(pool.retained_bytes(), 0, "still referenced by a slice");
        drop(sliced);
        assert_eq!(pool.retained_bytes(), 1 << 20);
        let b = pool
            .read::<()>(900_000, |b| {
                b.fill(1);
                Ok(())
            })
            .unwrap();
        assert_eq!(b.as_ptr(), ptr, "the same buffer is reused");
        assert_eq!(b.as_ptr() as usize % ALIGN, 0, "buffers start on a page");
        assert_eq!(&b[..3], &[1, 1, 1]);
        // Four live 1 MiB buffers returned: only three fit under the bound.
        let live: Vec<Bytes> = (0..4).map(|_| pool.read::<()>(1 << 20, |_| Ok(())).unwrap()).collect();
        drop(b);
        drop(live);
        assert_eq!(pool.retained_bytes(), 3 << 20);
        let e = pool.read(10, |_| Err("fill failed")).unwrap_err();
        assert_eq!(e, "fill failed");
        let big = pool.read::<()>(MAX_CLASS + 1, |_| Ok(())).unwrap();
        assert_eq!(big.len(), MAX_CLASS + 1);
        assert_eq!(big.as_ptr() as usize % ALIGN, 0, "unpooled buffers start on a page too");
    }
}
