//! Reusable buffers: read buffers for backends that read into memory (the filesystem backend,
//! [`BufferPool`]), and the buffers chunks are undone into (decompressed, decrypted, [`UNDONE`]).
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
/// Buffers up to this size are a power of two; larger ones whole [`MIN_CLASS`]es.
const POW2_UP_TO: usize = 4 << 20;
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
    /// Free buffers; each `len` a power of two up to 4 MiB, a multiple of 64 KiB above.
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
        // Up to 4 MiB a power of two (a broker's fetch, 1.1 to 1.2 MiB, reads into a 2 MiB buffer: one of the
        // read's own size made that fetch 15% slower, 160 against 134 us in benches `transforms`, perhaps for
        // want of the transparent huge page a 2 MiB mapping can have); above, whole 64 KiB (a 4 MiB chunk and
        // its encryption tags fit in 4.0625 MiB, not in 8). A free buffer of the class, or at most a quarter
        // larger.
        let class = match len <= POW2_UP_TO {
            true => len.next_power_of_two().max(MIN_CLASS),
            false => len.next_multiple_of(MIN_CLASS),
        };
        let fits = |b: &AlignedBuf| b.len >= len && b.len <= class + class / 4;
        let reused = {
            let mut free = self.inner.free.lock().expect("buffer pool lock");
            free.iter().position(fits).map(|i| free.swap_remove(i))
        };
        let mut buf = reused.unwrap_or_else(|| AlignedBuf::zeroed(class));
        fill(&mut buf.bytes_mut()[..len])?;
        Ok(Bytes::from_owner(Pooled { buf: Some(buf), len, pool: Arc::downgrade(&self.inner) }))
    }
}

/// Undone bytes smaller than this are plain allocations; at least this many come from [`UNDONE`].
const VEC_POOL_MIN: usize = 256 << 10;

/// New pooled `Vec`s get a capacity rounded up to a multiple of this, so that chunks a few batches apart in
/// size share buffers.
const VEC_POOL_STEP: usize = 256 << 10;

/// Buffers of the bytes chunks are undone into (decompressed, decrypted), at most 32 MiB of them kept.
///
/// A whole fetch or verify undoes chunk after chunk on the blocking threads and drops each on the reader's:
/// glibc keeps such freed megabytes in the per-thread arena of the thread that made them, so the process
/// grew with the threads, far past the bytes the reads hold (a compressed 500 MiB segment's `rsm fetch`
/// peaked at 120-200 MiB for 16-64 MiB in flight; benches `fetch_memory`). Reused buffers keep it to what
/// is in flight plus what the pool keeps, and save the page faults of fresh ones.
pub static UNDONE: VecPool = VecPool::new(32 << 20);

/// A bounded pool of `Vec<u8>` buffers handed out empty and given back when the [`Bytes`] made of them drop.
#[derive(Debug)]
pub struct VecPool {
    free: Mutex<Vec<Vec<u8>>>,
    max_retained_bytes: usize,
}

/// A pooled `Vec` inside [`Bytes`]: goes back to its pool when the last reference drops.
struct PooledVec(Vec<u8>, &'static VecPool);

impl AsRef<[u8]> for PooledVec {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for PooledVec {
    fn drop(&mut self) {
        self.1.give(std::mem::take(&mut self.0));
    }
}

impl VecPool {
    /// A pool that keeps at most `max_retained_bytes` of free buffers (by capacity).
    pub const fn new(max_retained_bytes: usize) -> Self {
        VecPool { free: Mutex::new(Vec::new()), max_retained_bytes }
    }

    /// An empty `Vec` with room for at least `capacity` bytes: a kept one at most a quarter larger, else a
    /// new one (its capacity rounded up to 256 KiB); below 256 KiB always a plain one.
    pub fn take(&'static self, capacity: usize) -> Vec<u8> {
        if capacity < VEC_POOL_MIN {
            return Vec::with_capacity(capacity);
        }
        let fits = |v: &Vec<u8>| v.capacity() >= capacity && v.capacity() <= capacity + capacity / 4 + VEC_POOL_STEP;
        let reused = {
            let mut free = self.free.lock().expect("vec pool lock");
            free.iter().position(fits).map(|i| free.swap_remove(i))
        };
        reused.unwrap_or_else(|| Vec::with_capacity(capacity.next_multiple_of(VEC_POOL_STEP)))
    }

    /// `v` as [`Bytes`] that give its buffer back to this pool when the last reference drops (a small one
    /// is plain [`Bytes`]).
    pub fn bytes(&'static self, v: Vec<u8>) -> Bytes {
        if v.capacity() < VEC_POOL_MIN {
            return Bytes::from(v);
        }
        Bytes::from_owner(PooledVec(v, self))
    }

    /// Free bytes (capacity) held for reuse.
    pub fn retained_bytes(&self) -> usize {
        self.free.lock().expect("vec pool lock").iter().map(Vec::capacity).sum()
    }

    fn give(&self, mut v: Vec<u8>) {
        if v.capacity() < VEC_POOL_MIN {
            return;
        }
        v.clear();
        let mut free = self.free.lock().expect("vec pool lock");
        let retained: usize = free.iter().map(Vec::capacity).sum();
        if retained + v.capacity() <= self.max_retained_bytes {
            free.push(v);
        }
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

    #[test]
    fn vecs_come_back_when_their_bytes_drop_and_are_bounded() {
        static POOL: VecPool = VecPool::new(10 << 20);
        let mut v = POOL.take(4_000_000);
        assert!(v.is_empty() && v.capacity() >= 4_000_000);
        v.extend_from_slice(&[9; 4_000_000]);
        let ptr = v.as_ptr();
        let b = POOL.bytes(v);
        let part = b.slice(5..10);
        drop(b);
        assert_eq!(POOL.retained_bytes(), 0, "still referenced by a slice");
        drop(part);
        assert!(POOL.retained_bytes() >= 4_000_000);
        let again = POOL.take(4_100_000);
        assert_eq!((again.as_ptr(), again.len()), (ptr, 0), "reused, empty: a chunk a little larger fits");
        POOL.give(again);
        let larger = POOL.take(8 << 20);
        assert!(larger.as_ptr() != ptr && larger.capacity() >= 8 << 20, "a buffer far smaller than asked is not taken");
        drop(larger);
        // Three live 4 MiB buffers given back: two fit under 10 MiB.
        let live: Vec<Bytes> = (0..3).map(|_| POOL.bytes(POOL.take(4 << 20))).collect();
        drop(live);
        assert!(POOL.retained_bytes() <= 10 << 20);
        let small = POOL.take(1000);
        assert!(small.capacity() < VEC_POOL_MIN, "small ones are plain");
    }
}
