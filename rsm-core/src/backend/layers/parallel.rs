//! Splits a long ranged read into parts read at once, so a single cold read over a cloud store is not bound
//! by one connection's throughput.
//!
//! One `get_range` of at least two parts' worth of bytes becomes up to `concurrency` ranged reads of about
//! equal size (each at least `part_size`), all in flight at once, joined in order into one buffer. The
//! result is the one the whole read would give: a range running past the object's end is cut there (the
//! first part that comes back short ends the read; what later parts said, an error included, is the object
//! ending, and is dropped), and any other failure of a part is the read's failure. A read of more than
//! [`MAX_SPLIT_BYTES`] (such as a manifest read of `0..u64::MAX`, "to the end") passes through whole: its
//! length is not known, and no buffer is sized by it.
//!
//! Each part is a request of its own to the layers below (counted, retried alone), so a store's request
//! count grows by up to `concurrency - 1` per long read: the price of the parallelism, paid only on the
//! long reads (a chunk cache's whole-chunk loads; a fetch's range reads are usually shorter than two parts).

use super::{Layer, LayeredBackend};
use crate::backend::StorageBackend;
use crate::config::{ConfigReader, Setting, Unit};
use crate::error::{Error, Result};
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use std::ops::Range;
use std::sync::Arc;

/// Reads longer than this pass through whole: 256 MiB, the largest chunk (`chunk.size`).
pub const MAX_SPLIT_BYTES: u64 = 256 << 20;

/// The settings of a [`ParallelReadLayer`]: the least bytes of a part, and how many parts at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParallelReads {
    /// The least bytes of a part (`fetch.part.size`); a read shorter than two parts is not split; 0: never split.
    pub part_size: u64,
    /// The most parts of one read in flight at once (`fetch.concurrency`); 1: never split.
    pub concurrency: usize,
}

impl ParallelReads {
    /// `fetch.part.size`.
    pub const PART_SIZE: Setting = Setting::long("fetch.part.size", 0, MAX_SPLIT_BYTES as i128)
        .with_default(1 << 20)
        .with_unit(Unit::Bytes)
        .with_doc(
            "a read from a cloud store (S3, Azure, GCS, HDFS) of at least twice this many bytes, such as a cold \
             chunk loading into the chunk cache, is sent as up to `fetch.concurrency` ranged reads of at least \
             this size at once, so one cold read is not bound by one connection's throughput (each part is a \
             request of its own); 0: one request per read",
        );

    /// The settings [`ParallelReads::read`] reads and no other part does.
    pub const SETTINGS: [&'static Setting; 1] = [&Self::PART_SIZE];

    /// Reads `fetch.part.size`; `concurrency` is the most parts at once (the fetch's `fetch.concurrency`).
    pub fn read(r: &mut ConfigReader<'_>, concurrency: usize) -> Result<Self> {
        Ok(ParallelReads { part_size: r.get_int(&Self::PART_SIZE)?, concurrency })
    }

    /// The parts of a read of `range`: one (the range) when it is not split, else `n` of about equal size
    /// (`n` at most `concurrency`, each at least `part_size`, the last taking the remainder).
    pub fn parts(&self, range: &Range<u64>) -> Vec<Range<u64>> {
        let len = range.end.saturating_sub(range.start);
        if self.part_size == 0 || self.concurrency < 2 || len > MAX_SPLIT_BYTES || len < 2 * self.part_size {
            return vec![range.clone()];
        }
        let n = (len / self.part_size).min(self.concurrency as u64);
        let size = len / n;
        (0..n)
            .map(|i| {
                let start = range.start + i * size;
                start..if i + 1 == n { range.end } else { start + size }
            })
            .collect()
    }
}

impl Layer for ParallelReads {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        Arc::new(ParallelReadLayer { inner, config: *self })
    }
}

/// Splits long ranged reads into parts read at once (see the module documentation).
#[derive(Debug)]
pub struct ParallelReadLayer {
    inner: Arc<dyn StorageBackend>,
    config: ParallelReads,
}

#[async_trait]
impl LayeredBackend for ParallelReadLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let parts = self.config.parts(&range);
        if parts.len() < 2 {
            return self.inner.get_range(key, range).await;
        }
        let inner = &self.inner;
        let count = parts.len();
        let mut results = futures::stream::iter(parts.into_iter().map(|part| async move {
            let want = part.end - part.start;
            (want, inner.get_range(key, part).await)
        }))
        .buffered(count);
        let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
        while let Some((want, result)) = results.next().await {
            let bytes = result?;
            if bytes.len() as u64 > want {
                return Err(Error::corrupt(format!("object {key}: a read of {want} bytes returned {}", bytes.len())));
            }
            out.extend_from_slice(&bytes);
            if (bytes.len() as u64) < want {
                // The object ends here; the later parts' answers (empty, or "starts past its end") say so.
                break;
            }
        }
        Ok(out.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Op;
    use crate::backend::layers::CountingLayer;
    use crate::backend::memory::MemoryBackend;

    #[test]
    fn parts_are_bounded_by_the_part_size_and_the_concurrency() {
        let p = |part_size, concurrency| ParallelReads { part_size, concurrency };
        // (case, settings, range, parts as (start, end))
        type Case = (&'static str, ParallelReads, Range<u64>, &'static [(u64, u64)]);
        let cases: [Case; 7] = [
            ("shorter than two parts: whole", p(100, 4), 0..199, &[(0, 199)]),
            ("exactly two parts", p(100, 4), 0..200, &[(0, 100), (100, 200)]),
            ("four parts, remainder in the last", p(100, 4), 10..413, &[(10, 110), (110, 210), (210, 310), (310, 413)]),
            ("capped by the concurrency", p(100, 2), 0..1000, &[(0, 500), (500, 1000)]),
            ("off: part size 0", p(0, 4), 0..1000, &[(0, 1000)]),
            ("off: concurrency 1", p(100, 1), 0..1000, &[(0, 1000)]),
            ("to the end of the object: whole", p(100, 4), 0..u64::MAX, &[(0, u64::MAX)]),
        ];
        for (case, settings, range, want) in cases {
            let parts: Vec<(u64, u64)> = settings.parts(&range).iter().map(|r| (r.start, r.end)).collect();
            assert_eq!(parts, want, "{case}");
        }
    }

    async fn store(bytes: &[u8]) -> (Arc<dyn StorageBackend>, Arc<crate::backend::RequestCounts>) {
        let memory: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        memory.put_bytes("t/0/a.log", Bytes::copy_from_slice(bytes)).await.unwrap();
        let counting = CountingLayer::new(memory);
        let counts = counting.counts();
        (Arc::new(counting), counts)
    }

    #[tokio::test]
    async fn a_split_read_gives_what_the_whole_read_gives_in_one_request_per_part() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (inner, counts) = store(&data).await;
        let layer = ParallelReads { part_size: 1000, concurrency: 4 }.layer(inner.clone());
        // (case, range, calls below the layer: the parts, or at most these when the object ends in an
        // early part, whose answer may come before the later parts are even sent)
        let cases = [
            ("inside the object", 100..9100, 4..=4),
            ("short: one request", 0..1500, 1..=1),
            ("past the end, cut in the last part", 2000..12_000, 4..=4),
            ("past the end, the object ending on a part boundary", 4000..12_000, 3..=4),
            ("starting at the end", 10_000..14_000, 1..=4),
        ];
        // Every call below, answered or failed (a part starting past the end fails there).
        let calls = || {
            let get = counts.snapshot().get(Op::Get);
            get.requests + get.failed
        };
        for (case, range, requests) in cases {
            let before = calls();
            let whole = inner.get_range("t/0/a.log", range.clone()).await.unwrap();
            let split = layer.get_range("t/0/a.log", range.clone()).await.unwrap();
            assert_eq!(split, whole, "{case}");
            assert_eq!(&split[..], &data[range.start as usize..(range.end as usize).min(data.len())], "{case}");
            let below = calls() - before - 1;
            assert!(requests.contains(&below), "{case}: {below} calls");
        }
        // A range starting past the end fails as the whole read does.
        assert!(layer.get_range("t/0/a.log", 10_001..20_000).await.is_err());
    }

    /// Counts the `get_range` calls in flight at once below it, each held a while.
    #[derive(Debug)]
    struct InFlight {
        inner: Arc<dyn StorageBackend>,
        now: std::sync::atomic::AtomicUsize,
        most: std::sync::atomic::AtomicUsize,
    }

    #[async_trait]
    impl LayeredBackend for InFlight {
        fn inner(&self) -> &Arc<dyn StorageBackend> {
            &self.inner
        }

        async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
            use std::sync::atomic::Ordering::SeqCst;
            let now = self.now.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            self.now.fetch_sub(1, SeqCst);
            self.inner.get_range(key, range).await
        }
    }

    #[tokio::test]
    async fn a_failed_part_fails_the_read_and_the_parts_are_in_flight_at_once() {
        let data = vec![7u8; 8000];
        let (inner, _) = store(&data).await;
        let layer = ParallelReads { part_size: 1000, concurrency: 4 }.layer(inner.clone());
        let missing = layer.get_range("t/0/missing.log", 0..8000).await.unwrap_err();
        assert_eq!(missing.kind(), crate::error::ErrorKind::NotFound, "{missing}");
        let gauge = Arc::new(InFlight { inner, now: Default::default(), most: Default::default() });
        let layer = ParallelReads { part_size: 1000, concurrency: 4 }.layer(gauge.clone());
        assert_eq!(&layer.get_range("t/0/a.log", 0..8000).await.unwrap()[..], &data[..]);
        assert_eq!(gauge.most.load(std::sync::atomic::Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn over_a_network_store_parts_at_once_take_the_time_of_one() {
        use crate::backend::layers::{Fault, FaultLayer, FaultRule};
        let data = vec![3u8; 8000];
        let (inner, _) = store(&data).await;
        // 1 s to the first byte, then 1000 bytes a second per read (virtual time).
        let network = Fault::Network { latency: std::time::Duration::from_secs(1), bytes_per_second: 1000 };
        let slow: Arc<dyn StorageBackend> = Arc::new(FaultLayer::new(inner).with_rule(FaultRule {
            op: None,
            key: "*".into(),
            fault: network,
            times: None,
        }));
        let layer = ParallelReads { part_size: 1000, concurrency: 4 }.layer(slow.clone());
        // (reader, seconds): whole, 1 + 8; in four parts of 2000 bytes at once, 1 + 2.
        for (case, reader, seconds) in [("whole", &slow, 9), ("in four parts", &layer, 3)] {
            let t = tokio::time::Instant::now();
            assert_eq!(reader.get_range("t/0/a.log", 0..8000).await.unwrap().len(), 8000, "{case}");
            assert_eq!(t.elapsed(), std::time::Duration::from_secs(seconds), "{case}");
        }
    }
}
