//! Decompression stays within its limit in memory, not only in what it returns: a batch of 10 MiB of zeros
//! (a few KiB compressed) decoded under a 1 MiB limit never has more than 1.5 MiB live (the output buffer
//! while it grows) besides the codecs' small buffers. Counted by a global allocator that tracks the bytes
//! live on each thread (zstd's own C allocations are not seen here; its window is bounded by
//! `window_log_max`, see `compression.rs`).

use rsm_core::format::records::compression::{Codec, compress, decompress};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(n: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + n;
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: every call is passed on to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Both blocks may be live while the bytes are copied.
        add(new_size as isize);
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        add(-(layout.size() as isize));
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The most bytes live on this thread while `f` runs, above what was live before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, (PEAK.with(Cell::get) - base).max(0) as usize)
}

/// `n` zeros compressed as Kafka's producer writes them (lz4: 64 KiB blocks; a frame of 4 MiB blocks would
/// cost the decoder 8 MiB of block buffers more, see `compression.rs`).
fn compressed_zeros(codec: Codec, n: usize) -> Vec<u8> {
    compress(codec, &vec![0u8; n])
}

#[test]
fn inflating_past_the_limit_holds_at_most_one_and_a_half_times_the_limit() {
    const LIMIT: usize = 1 << 20;
    // The output buffer (at most the limit; 1.5 times it while it moves to a larger one) and the codec's
    // working buffers (lz4: a 64 KiB block twice; gzip: its window and state; snappy: none).
    const BOUND: usize = LIMIT + LIMIT / 2 + (256 << 10);
    for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let input = compressed_zeros(codec, 10 << 20);
        let (result, peak) = peak_of(|| decompress(codec, &input, LIMIT, "batch at offset 592"));
        let e = result.unwrap_err().to_string();
        assert!(e.contains("batch at offset 592") && e.contains("max_batch_bytes"), "{codec:?}: {e}");
        assert!(peak <= BOUND, "{codec:?}: {peak} bytes live at the peak");
        // Under the limit, the same bound holds while decoding a batch that fits.
        let fits = compressed_zeros(codec, LIMIT - 10);
        let (out, peak) = peak_of(|| decompress(codec, &fits, LIMIT, "t").unwrap().len());
        assert!(peak <= BOUND, "{codec:?}: {peak} bytes live at the peak");
        assert_eq!(out, LIMIT - 10);
    }
}

/// Many tiny records take far more memory decoded than their bytes: a batch of 200,000 empty records (about
/// 1.6 MB, within the 2 MiB limit as bytes) would take ~20 MB as records. Decoding stops once the records
/// take more than the limit, an error naming the batch, and never holds much more than the limit.
#[test]
fn tiny_records_are_bounded_by_their_memory_not_only_their_bytes() {
    use rsm_core::format::batch::BatchIter;
    use rsm_core::format::records::{DecodeLimits, decode_batch};
    use rsm_core::testkit::log_writer::{Record, encode_batch};
    const LIMIT: usize = 2 << 20;
    let records = vec![Record { key: None, value: Some(vec![]), headers: vec![], timestamp: 7 }; 200_000];
    let bytes = encode_batch(4_000, 0, &records);
    assert!(bytes.len() < LIMIT, "{} bytes", bytes.len());
    let batch = BatchIter::new(&bytes, 0, true).next_complete().unwrap().unwrap();
    let limits = DecodeLimits { max_batch_bytes: LIMIT };
    let (result, peak) = peak_of(|| decode_batch(&batch, &limits));
    let e = result.unwrap_err().to_string();
    assert!(e.contains("batch at offset 4000") && e.contains("memory"), "{e}");
    assert!(peak <= LIMIT + LIMIT / 2 + (64 << 10), "{peak} bytes live at the peak");
    // With room for them, they all decode.
    let roomy = DecodeLimits { max_batch_bytes: 64 << 20 };
    assert_eq!(decode_batch(&batch, &roomy).unwrap().records.len(), 200_000);
}
