//! The stream adapter every face uses: a blocking reader over a fetch stream (or bytes already in hand)
//! that hands out pieces without copying, serves short reads of any size, skips without buffering and
//! tells what it holds.

use bytes::Bytes;
use futures::StreamExt;
use rsm_core::Result;
use rsm_core::backend::ByteStream;
use rsm_core::storage::LocalLogReader;
use std::io;
use tokio::sync::mpsc;

/// A blocking reader of a segment's bytes or of an index. Dropping it stops the fetch and frees its
/// buffers at once. Memory: the piece of the stream it holds, and once it reads past the first piece, one
/// more piece that a task of the runtime reads, checks and hands over ahead of it.
///
/// The first piece is pulled on the caller's thread: the broker's usual fetch (about a mebibyte, then
/// close) is that one piece, and nothing is read ahead of it. A reader that asks for a second piece reads
/// on (a whole-segment read): from then on the pieces are pulled by a task, so that the store's reads and
/// the checks of their blocks overlap with the caller's use of the bytes before.
///
/// A read of a segment from a local object file ([`SegmentReader::local`]) has no stream: each
/// [`SegmentReader::read_into`] reads into the caller's buffer and checks the blocks there, on the caller's
/// thread, with no buffer but one block where a fetch starts or ends inside a block.
pub struct SegmentReader {
    source: Source,
    current: Bytes,
    pulled: u64,
    wait: Wait,
}

/// A refusal of the store's circuit breaker held until a deadline is returned this long before it, so that
/// it, not the timeout, is what the caller gets.
const MARGIN: std::time::Duration = std::time::Duration::from_millis(5);

/// How long a reader waits on the store at a time (`fetch.timeout.ms`), and what it is reading, for the
/// error when that passes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Wait {
    limit: Option<std::time::Duration>,
    what: std::sync::Arc<str>,
    /// Told of each time the limit passes: a store that hangs is a failing store.
    breaker: Option<std::sync::Arc<rsm_core::backend::layers::BreakerStats>>,
    /// Counts each time the limit passes (the store's `store-timeouts` metric).
    timeouts: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Wait {
    /// At most `limit` (none: unbounded) at a time, reading `what`; each time it passes is told to `breaker`.
    pub(crate) fn new(
        limit: Option<std::time::Duration>,
        what: String,
        breaker: Option<std::sync::Arc<rsm_core::backend::layers::BreakerStats>>,
        timeouts: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) -> Self {
        Wait { limit, what: what.into(), breaker, timeouts }
    }

    /// `f`, failed as retriable once the limit passes (and dropped, which cancels the requests behind it).
    /// A refusal of the store's circuit breaker is returned at the limit, not at once (see
    /// [`Wait::bound_again`]).
    pub(crate) async fn bound<T>(&self, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        let Some(limit) = self.limit else { return f.await };
        let deadline = tokio::time::Instant::now() + limit;
        match tokio::time::timeout_at(deadline, f).await {
            Ok(Err(e)) if rsm_core::backend::layers::is_refusal(&e) => {
                tokio::time::sleep_until(deadline.checked_sub(MARGIN).unwrap_or(deadline)).await;
                Err(e)
            }
            Ok(r) => r,
            Err(_) => Err(self.timed_out(limit)),
        }
    }

    /// `call()`, within the limit as [`Wait::bound`]; made again while the store's circuit breaker refuses
    /// it, once the breaker may let a call through (its probe), as long as that comes within the limit.
    ///
    /// A refusal is not returned at once: Kafka retries a failed remote fetch at once, and logs each failure
    /// with its stack trace, so failing in microseconds while the store is down made a consumer spin and the
    /// broker log thousands of lines a second. Held until the limit (Kafka's own wait for a remote fetch,
    /// `remote.fetch.max.wait.ms`), a refused fetch costs what a fetch of a hung store costs, sends nothing,
    /// and succeeds if the store comes back meanwhile.
    pub(crate) async fn bound_again<T, Fut>(&self, mut call: impl FnMut() -> Fut) -> Result<T>
    where
        Fut: std::future::Future<Output = Result<T>>,
    {
        let Some(limit) = self.limit else { return call().await };
        let deadline = tokio::time::Instant::now() + limit;
        let attempts = async {
            loop {
                match call().await {
                    Err(e) if rsm_core::backend::layers::is_refusal(&e) => self.hold(e, deadline, limit).await?,
                    r => return r,
                }
            }
        };
        match tokio::time::timeout_at(deadline, attempts).await {
            Ok(r) => r,
            Err(_) => Err(self.timed_out(limit)),
        }
    }

    /// The error of a wait past `limit`, told to the breaker: a store that hangs is a failing store.
    fn timed_out(&self, limit: std::time::Duration) -> rsm_core::Error {
        let message = format!(
            "reading {} took longer than fetch.timeout.ms ({} ms): the store did not answer in time",
            self.what,
            limit.as_millis()
        );
        self.timeouts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(b) = &self.breaker {
            b.gave_up(&message);
        }
        rsm_core::Error::retriable(message, "timed out")
    }

    /// After the breaker refused a call: waits until it may let one through, then `Ok` (make the call
    /// again, maybe as the breaker's probe); when that does not leave at least half of the wait `limit`
    /// before `deadline`, waits until just before the deadline and returns the refusal `e`. A probe with
    /// little time left would time out on a store that answers, and a failed probe keeps the breaker open
    /// twice as long.
    async fn hold(&self, e: rsm_core::Error, deadline: tokio::time::Instant, limit: std::time::Duration) -> Result<()> {
        // While a probe runs, its end is not known: look again shortly.
        const WHILE_PROBING: std::time::Duration = std::time::Duration::from_millis(20);
        let until = self.breaker.as_ref().and_then(|b| b.until_admitted()).unwrap_or(WHILE_PROBING);
        let now = tokio::time::Instant::now();
        if now + until + limit / 2 <= deadline {
            tokio::time::sleep(until.max(std::time::Duration::from_millis(1))).await;
            return Ok(());
        }
        tokio::time::sleep_until(deadline.checked_sub(MARGIN).unwrap_or(now)).await;
        Err(e)
    }
}

enum Source {
    Done,
    Local(Box<LocalLogReader>),
    Stream(ByteStream),
    // The handle is held for its drop.
    Ahead(mpsc::Receiver<Result<Bytes>>, #[allow(dead_code)] AbortOnDrop),
}

/// The task reading ahead, stopped (its requests cancelled) as soon as its reader lets go of it: when the
/// reader is dropped, and when a failed or timed-out read closes it.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for SegmentReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentReader")
            .field("open", &!matches!(self.source, Source::Done))
            .field("buffered", &self.current.len())
            .finish()
    }
}

impl SegmentReader {
    /// A reader over a fetch stream.
    pub fn stream(stream: ByteStream) -> Self {
        SegmentReader { source: Source::Stream(stream), current: Bytes::new(), pulled: 0, wait: Wait::default() }
    }

    /// A reader straight from a segment's local object file (see [`LocalLogReader`]).
    pub fn local(reader: LocalLogReader) -> Self {
        SegmentReader {
            source: Source::Local(Box::new(reader)),
            current: Bytes::new(),
            pulled: 0,
            wait: Wait::default(),
        }
    }

    /// A reader over bytes already read (an index).
    pub fn bytes(bytes: Bytes) -> Self {
        SegmentReader { source: Source::Done, current: bytes, pulled: 0, wait: Wait::default() }
    }

    /// The same reader waiting on the store at most as `wait` says for each piece.
    pub(crate) fn with_wait(mut self, wait: Wait) -> Self {
        self.wait = wait;
        self
    }

    /// The next piece: the first from the stream itself, then from the task reading ahead (started here).
    fn pull(&mut self) -> Option<Result<Bytes>> {
        if self.pulled == 1
            && let Source::Stream(_) = &self.source
        {
            let Source::Stream(mut stream) = std::mem::replace(&mut self.source, Source::Done) else {
                unreachable!("matched above")
            };
            let (tx, rx) = mpsc::channel(1);
            let task = crate::runtime::runtime().spawn(async move {
                while let Some(piece) = stream.next().await {
                    let failed = piece.is_err();
                    if tx.send(piece).await.is_err() || failed {
                        break;
                    }
                }
            });
            self.source = Source::Ahead(rx, AbortOnDrop(task.abort_handle()));
        }
        self.pulled += 1;
        let wait = self.wait.clone();
        let bounded = |piece: Option<Result<Bytes>>| piece.map_or(Ok(None), |p| p.map(Some));
        let piece = match &mut self.source {
            Source::Done | Source::Local(_) => return None,
            Source::Stream(stream) => {
                crate::runtime::runtime().block_on(wait.bound(async { bounded(stream.next().await) }))
            }
            Source::Ahead(rx, _) => crate::runtime::runtime().block_on(wait.bound(async { bounded(rx.recv().await) })),
        };
        piece.transpose()
    }

    /// Makes sure some bytes are held; `false` at the end. A failed stream is closed: later calls see the end.
    fn fill(&mut self) -> Result<bool> {
        while self.current.is_empty() {
            if matches!(self.source, Source::Done) {
                return Ok(false);
            }
            match self.pull() {
                Some(Ok(b)) => self.current = b,
                Some(Err(e)) => {
                    self.source = Source::Done;
                    return Err(e);
                }
                None => {
                    self.source = Source::Done;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The next piece of bytes as the stream gave it (`None` at the end), without copying (a local read's
    /// pieces are 1 MiB at most, read for the call).
    pub fn next_bytes(&mut self) -> Result<Option<Bytes>> {
        if let Source::Local(_) = self.source {
            let b = self.next_chunk(LOCAL_PIECE_BYTES)?;
            return Ok((!b.is_empty()).then_some(b));
        }
        Ok(self.fill()?.then(|| std::mem::take(&mut self.current)))
    }

    /// Up to `max` bytes off the front of what is held, waiting for the store only when nothing is
    /// (empty at the end, or when `max` is 0). Never more than one piece of the stream, so a caller's huge
    /// `max` allocates nothing (a local read allocates at most 1 MiB).
    pub fn next_chunk(&mut self, max: usize) -> Result<Bytes> {
        if let Source::Local(_) = self.source {
            let mut buf = vec![0u8; max.min(LOCAL_PIECE_BYTES)];
            let n = self.read_local(&mut buf)?;
            buf.truncate(n);
            return Ok(Bytes::from(buf));
        }
        if max == 0 || !self.fill()? {
            return Ok(Bytes::new());
        }
        let n = max.min(self.current.len());
        Ok(self.current.split_to(n))
    }

    /// Fills the front of `buf` and returns how many bytes (0 at the end, or for an empty `buf`): a local
    /// read straight into `buf`, each block checked there; a stream's bytes copied from the piece held.
    pub fn read_into(&mut self, buf: &mut [u8]) -> Result<usize> {
        if let Source::Local(_) = self.source {
            return self.read_local(buf);
        }
        let chunk = self.next_chunk(buf.len())?;
        buf[..chunk.len()].copy_from_slice(&chunk);
        Ok(chunk.len())
    }

    /// A local read; a failed one closes the reader as a failed stream does (later reads see the end).
    fn read_local(&mut self, buf: &mut [u8]) -> Result<usize> {
        let Source::Local(r) = &mut self.source else { return Ok(0) };
        let read = r.read(buf);
        if read.is_err() {
            self.source = Source::Done;
        }
        read
    }

    /// Discards up to `n` bytes; returns how many were discarded (fewer only at the end).
    pub fn skip(&mut self, n: u64) -> Result<u64> {
        if let Source::Local(r) = &mut self.source {
            return Ok(r.skip(n));
        }
        let mut done = 0u64;
        while done < n && self.fill()? {
            let k = (n - done).min(self.current.len() as u64) as usize;
            let _ = self.current.split_to(k);
            done += k as u64;
        }
        Ok(done)
    }

    /// Whether this reads a local object file into the caller's buffers ([`SegmentReader::local`]): its
    /// reads never wait on a network.
    pub fn is_local(&self) -> bool {
        matches!(self.source, Source::Local(_))
    }

    /// Bytes readable without waiting.
    pub fn buffered(&self) -> usize {
        match &self.source {
            Source::Local(r) => r.buffered(),
            _ => self.current.len(),
        }
    }
}

/// The most a local read's [`SegmentReader::next_chunk`] allocates for one call.
const LOCAL_PIECE_BYTES: usize = 1 << 20;

impl io::Read for SegmentReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_into(buf).map_err(io::Error::other)
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

    /// A stream of `n` one-byte pieces that counts the pieces it has produced.
    fn counted(n: u8) -> (ByteStream, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let made = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let m = made.clone();
        let stream = futures::stream::iter(0..n).map(move |i| {
            m.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Bytes::from(vec![i]))
        });
        (Box::pin(stream), made)
    }

    #[test]
    fn the_first_piece_is_read_alone_and_later_ones_ahead_in_order() {
        use std::sync::atomic::Ordering::SeqCst;
        // The broker's usual fetch: one piece, then close. Nothing was read ahead of it.
        let (stream, made) = counted(10);
        let mut s = SegmentReader::stream(stream);
        assert_eq!(&s.next_bytes().unwrap().unwrap()[..], [0]);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(made.load(SeqCst), 1, "no piece read ahead of the first");
        drop(s);

        // A reader that goes on: every piece in order, at most one read ahead of what it took.
        let (stream, made) = counted(10);
        let mut s = SegmentReader::stream(stream);
        for i in 0..4u8 {
            assert_eq!(&s.next_bytes().unwrap().unwrap()[..], [i]);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let ahead = made.load(SeqCst);
        assert!((4..=6).contains(&ahead), "a bounded read-ahead: {ahead} pieces made for 4 taken");
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, (4..10).collect::<Vec<u8>>());
        assert!(s.next_bytes().unwrap().is_none());
    }
}
