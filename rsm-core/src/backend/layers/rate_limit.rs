//! A cap on upload bandwidth (`upload.rate.limit.bytes.per.second`), so that tiering does not starve a
//! broker's producers of disk and network.
//!
//! One [`UploadRateLimit`] per storage manager, shared by every upload through its layer, whatever runs at
//! once: a token bucket over the bytes sent. Each piece of an upload takes its bytes from the bucket before
//! it goes; the bucket refills at the rate and holds at most one second of it, so an upload that stays
//! under the limit is never slowed, and a piece larger than the bucket holds leaves a debt the next pieces
//! wait out. A file upload goes as a stream of the file's bytes (a store's own fast path, such as the
//! filesystem store's `copy_file_range`, is given up for it while the limit is on), so a multipart upload's
//! parts are paced as they are cut from the stream. Reads, listings and deletes pass through.

use super::{Layer, LayeredBackend};
use crate::backend::{ByteStream, StorageBackend};
use crate::config::{ConfigReader, Setting, Unit};
use crate::error::Result;
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The token bucket: refills at `rate` bytes a second up to `capacity`; a debt (negative tokens) is waited
/// out by whoever took it, and seen by everyone after.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The upload rate limit of one storage manager (see the module documentation); cloning shares it.
#[derive(Clone, Debug)]
pub struct UploadRateLimit {
    rate: u64,
    bucket: Arc<Mutex<Bucket>>,
}

impl UploadRateLimit {
    /// `upload.rate.limit.bytes.per.second`.
    pub const BYTES_PER_SECOND: Setting =
        Setting::long("upload.rate.limit.bytes.per.second", 0, 1 << 40).with_unit(Unit::Bytes).with_doc(
            "the most bytes a second all the uploads of one storage manager send together (segment data, \
             indexes, manifests; multipart parts included), shared by every copy at once; an upload under it \
             is not slowed (bursts of up to one second's worth go at once); unset or 0: no limit",
        );

    /// The settings [`UploadRateLimit::read`] reads.
    pub const SETTINGS: [&'static Setting; 1] = [&Self::BYTES_PER_SECOND];

    /// A limit of `bytes_per_second` (at least 1), its bucket empty.
    pub fn new(bytes_per_second: u64) -> Self {
        let rate = bytes_per_second.max(1);
        UploadRateLimit { rate, bucket: Arc::new(Mutex::new(Bucket { tokens: 0.0, at: Instant::now() })) }
    }

    /// The limit `upload.rate.limit.bytes.per.second` sets, or `None` when it is unset or 0.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Option<Self>> {
        let rate: u64 = r.get_int_or(&Self::BYTES_PER_SECOND, 0)?;
        Ok((rate > 0).then(|| Self::new(rate)))
    }

    /// The limit in bytes a second.
    pub fn bytes_per_second(&self) -> u64 {
        self.rate
    }

    /// Takes `bytes` from the bucket and returns how long to wait before sending them.
    fn take(&self, bytes: u64) -> Duration {
        let mut b = self.bucket.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let capacity = self.rate as f64;
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * self.rate as f64).min(capacity);
        b.at = now;
        b.tokens -= bytes as f64;
        if b.tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-b.tokens / self.rate as f64) }
    }

    /// Waits until `bytes` more may be sent.
    pub async fn acquire(&self, bytes: u64) {
        let wait = self.take(bytes);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// `data`, each piece sent only once the limit allows it.
    pub fn pace(&self, data: ByteStream) -> ByteStream {
        let limit = self.clone();
        data.then(move |piece| {
            let limit = limit.clone();
            async move {
                if let Ok(bytes) = &piece {
                    limit.acquire(bytes.len() as u64).await;
                }
                piece
            }
        })
        .boxed()
    }
}

impl Layer for UploadRateLimit {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        Arc::new(RateLimitLayer { inner, limit: self.clone() })
    }
}

/// Paces every upload through it by its [`UploadRateLimit`].
#[derive(Debug)]
pub struct RateLimitLayer {
    inner: Arc<dyn StorageBackend>,
    limit: UploadRateLimit,
}

#[async_trait]
impl LayeredBackend for RateLimitLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.inner.put_stream(key, self.limit.pace(crate::backend::file_stream(path, len))).await
    }

    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        self.inner.put_stream(key, self.limit.pace(data)).await
    }

    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.limit.acquire(bytes.len() as u64).await;
        self.inner.put_bytes(key, bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemoryBackend;

    #[tokio::test(start_paused = true)]
    async fn the_bucket_paces_to_the_rate_exactly_and_lets_a_second_of_saved_bytes_through_at_once() {
        let limit = UploadRateLimit::new(1000);
        // (bytes taken, the wait, in ms): the bucket starts empty and every byte costs 1 ms, the debt of
        // earlier takers included.
        let steps = [(600, 600), (400, 1000), (250, 1250)];
        for (bytes, wait_ms) in steps {
            assert_eq!(limit.take(bytes), Duration::from_millis(wait_ms), "{bytes} bytes");
        }
        // Half a second later the debt is 750 bytes.
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(limit.take(1), Duration::from_millis(751));
        // After 4 s idle the debt is paid and the bucket full, capped at one second's worth.
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(limit.take(1000), Duration::ZERO);
        assert_eq!(limit.take(1), Duration::from_millis(1));
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_uploads_share_one_limit_and_every_way_in_is_paced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("seg.log");
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        std::fs::write(&file, &data).unwrap();
        let memory: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let limited = UploadRateLimit::new(1000).layer(memory.clone());
        let t = Instant::now();
        // 4000 bytes of a file, 3000 streamed and 2000 as bytes, at once: 9000 bytes at 1000 a second.
        let stream: ByteStream = futures::stream::iter((0..3).map(|_| Ok(Bytes::from(vec![7u8; 1000])))).boxed();
        let (a, b, c) = tokio::join!(
            limited.put_file("t/0/a.log", &file, 4000),
            limited.put_stream("t/0/b.log", stream),
            limited.put_bytes("t/0/c.log", Bytes::from(vec![9u8; 2000])),
        );
        a.unwrap();
        b.unwrap();
        c.unwrap();
        assert_eq!(t.elapsed(), Duration::from_secs(9));
        assert_eq!(&memory.get_range("t/0/a.log", 0..10_000).await.unwrap()[..], &data[..4000]);
        assert_eq!(memory.get_range("t/0/b.log", 0..10_000).await.unwrap().len(), 3000);
        // A file shorter than asked fails, naming it, and leaves nothing.
        let e = limited.put_file("t/0/d.log", &file, 6000).await.unwrap_err();
        assert!(e.to_string().contains("seg.log") && e.to_string().contains("shorter"), "{e}");
        assert!(memory.get_range("t/0/d.log", 0..1).await.is_err());
    }

    #[test]
    fn the_setting_is_off_unless_given() {
        let off = std::collections::BTreeMap::new();
        assert!(UploadRateLimit::read(&mut ConfigReader::new(&off)).unwrap().is_none());
        let on = crate::config::props([("upload.rate.limit.bytes.per.second", "67108864")]);
        assert_eq!(UploadRateLimit::read(&mut ConfigReader::new(&on)).unwrap().unwrap().bytes_per_second(), 64 << 20);
        let bad = crate::config::props([("upload.rate.limit.bytes.per.second", "-5")]);
        let e = UploadRateLimit::read(&mut ConfigReader::new(&bad)).unwrap_err();
        assert!(e.to_string().contains("upload.rate.limit.bytes.per.second"), "{e}");
    }
}
