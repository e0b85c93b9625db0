//! A fetch of a segment whose chunks carry no check of their own (Aiven's, not encrypted) checked by the
//! record batches it holds: each batch's CRC (Kafka's own) is checked before any of its bytes are served, so
//! the fetch must start on a batch, and a batch its end cuts is read whole, checked, then cut.

use crate::backend::ByteStream;
use crate::error::{Error, Result};
use crate::format::batch::{BatchIter, batch_size_at};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;

/// The walk over one fetch: the next batch to check and what has been read of it and beyond.
#[derive(Debug)]
struct Walk {
    /// Position of the next batch not yet checked.
    next: u64,
    /// The fetch's end (exclusive).
    end: u64,
    /// Where the fetch starts: the first batch, which a start inside a batch makes a wrong one.
    start: u64,
    /// The log's length: no batch runs past it.
    log_length: u64,
    /// The bytes read from `next` on.
    pending: BytesMut,
    /// The segment, for errors.
    what: String,
}

impl Walk {
    /// Takes the original bytes of a chunk starting at `at` (chunks come in order, without gaps) and returns
    /// what may be served now: the whole batches checked so far, cut at the end.
    fn push(&mut self, at: u64, bytes: &[u8]) -> Result<Bytes> {
        let have = self.next + self.pending.len() as u64;
        if at > have {
            return Err(Error::corrupt(format!("{}: chunk at {at} leaves a gap after {have}", self.what)));
        }
        let skip = ((have - at) as usize).min(bytes.len());
        self.pending.extend_from_slice(&bytes[skip..]);
        // The first batch is where the fetch says one starts: a length running past the log is refused at
        // once, not after reading the rest of the segment for it.
        if self.next == self.start
            && let Some(size) = batch_size_at(&self.pending, self.next).map_err(|e| self.first_batch(e))?
            && self.next + size as u64 > self.log_length
        {
            return Err(self.first_batch(Error::corrupt(format!(
                "the batch at position {} declares {size} bytes, past the log's end at {}",
                self.next, self.log_length
            ))));
        }
        let mut batches = BatchIter::new(&self.pending, self.next, true);
        while self.next + (batches.consumed() as u64) < self.end {
            let first = self.next + batches.consumed() as u64 == self.start;
            let found = batches.next_complete().map_err(|e| match first {
                true => self.first_batch(e),
                false => e.context(&self.what),
            })?;
            if found.is_none() {
                break;
            }
        }
        let checked = batches.consumed();
        let served = (checked as u64).min(self.end - self.next) as usize;
        self.next += checked as u64;
        Ok(self.pending.split_to(checked).freeze().slice(..served))
    }

    /// Error `e` at the fetch's first batch, with what a fetch of such a segment must do.
    fn first_batch(&self, e: Error) -> Error {
        e.context(format!(
            "{} (a fetch of a segment that is not encrypted starts on a batch, position {})",
            self.what, self.start
        ))
    }

    fn done(&self) -> bool {
        self.next >= self.end
    }
}

/// `chunks` (each chunk's original start and bytes, in order, from the chunk holding `start` on) served
/// from `start` to `end` of a log of `log_length` bytes, batch by batch, each checked first. The log ending
/// inside a batch is an error; so is a first batch declared to run past the log's end, at once.
pub(super) fn checked(chunks: ByteChunks, start: u64, end: u64, log_length: u64, what: String) -> ByteStream {
    let walk = Walk { next: start, end, start, log_length, pending: BytesMut::new(), what };
    futures::stream::unfold(Some((chunks, walk)), |state| async move {
        let (mut chunks, mut walk) = state?;
        loop {
            if walk.done() {
                return None;
            }
            match chunks.next().await {
                None => {
                    let e = Error::corrupt(format!(
                        "{}: the log ends inside the batch at position {} ({} bytes of it)",
                        walk.what,
                        walk.next,
                        walk.pending.len()
                    ));
                    return Some((Err(e), None));
                }
                Some(Err(e)) => return Some((Err(e), None)),
                Some(Ok((at, bytes))) => match walk.push(at, &bytes) {
                    Err(e) => return Some((Err(e), None)),
                    Ok(out) if out.is_empty() => continue,
                    Ok(out) => return Some((Ok(out), Some((chunks, walk)))),
                },
            }
        }
    })
    .boxed()
}

/// The chunks a walk reads: each one's original start and original bytes.
pub(super) type ByteChunks = futures::stream::BoxStream<'static, Result<(u64, Bytes)>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::log_writer::{PartitionSpec, generate_partition};

    /// A log of real batches (the fixture writer's), cut into chunks that split batches, read back from
    /// every batch start to several ends: exactly the log's bytes; a flipped byte or a start inside a batch
    /// is an error, never other bytes.
    #[tokio::test]
    async fn serves_whole_checked_batches_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        let spec = PartitionSpec {
            topic_id: crate::model::Uuid::random(),
            segment_bytes: 1 << 20,
            records: 300,
            records_per_batch: 10,
            value_bytes: 50,
            first_timestamp: 1_700_000_000_000,
            epoch_every_batches: 0,
            seed: 3,
            compression: None,
        };
        let p = generate_partition(&dir.path().join("t-0"), &spec).unwrap();
        let log = std::fs::read(p.join(format!("{:020}.log", 0))).unwrap();
        let starts: Vec<u64> = BatchIter::new(&log, 0, true).map(|b| b.unwrap().position()).collect();
        assert!(starts.len() > 5);
        let len = log.len() as u64;
        let read = |log: Vec<u8>, start: u64, end: u64, chunk: usize| async move {
            let chunks: Vec<Result<(u64, Bytes)>> = log
                .chunks(chunk)
                .enumerate()
                .map(|(i, c)| Ok(((i * chunk) as u64, Bytes::copy_from_slice(c))))
                .filter(|r| r.as_ref().map_or(true, |(at, c)| at + c.len() as u64 > start - start % chunk as u64))
                .collect();
            let s = checked(futures::stream::iter(chunks).boxed(), start, end, len, "segment s".into());
            let parts: Vec<Result<Bytes>> = s.collect().await;
            parts.into_iter().collect::<Result<Vec<Bytes>>>().map(|p| p.concat())
        };
        for &s in &starts {
            for e in [s + 1, (s + len) / 2, len - 1, len] {
                let got = read(log.clone(), s, e.max(s + 1), 1000).await.unwrap();
                assert_eq!(got, &log[s as usize..e.max(s + 1) as usize], "{s}..{e}");
            }
        }
        let mut damaged = log.clone();
        damaged[starts[2] as usize + 40] ^= 1;
        let e = read(damaged, 0, len, 777).await.unwrap_err().to_string();
        assert!(e.contains("CRC") && e.contains("segment s"), "{e}");
        assert!(!e.contains("starts on a batch"), "damage past the first batch is no wrong start: {e}");
        // A start inside a batch whose bytes read as a batch running past the log's end: refused at once,
        // at its first chunk, not after the rest of the log was read for it.
        let mut fake = log.clone();
        let at = starts[3] as usize + 20;
        fake[at + 8..at + 12].copy_from_slice(&(len as i32).to_be_bytes());
        fake[at + 16] = 2;
        let pulled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = pulled.clone();
        let pieces: Vec<(u64, Bytes)> =
            fake.chunks(1000).enumerate().map(|(i, c)| ((i * 1000) as u64, Bytes::copy_from_slice(c))).collect();
        let chunks = futures::stream::iter(pieces.into_iter().skip(at / 1000).map(move |p| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(p)
        }));
        let parts: Vec<Result<Bytes>> =
            checked(chunks.boxed(), at as u64, len, len, "segment s".into()).collect().await;
        let e = parts.into_iter().find_map(|r| r.err()).expect("refused").to_string();
        assert!(e.contains("past the log's end") && e.contains("starts on a batch"), "{e}");
        assert!(pulled.load(std::sync::atomic::Ordering::SeqCst) <= 2, "read no further than the first chunks: {e}");
        let e = read(log.clone(), starts[1] + 3, len, 1000).await.unwrap_err().to_string();
        assert!(e.contains("starts on a batch"), "{e}");
        let e = read(log[..log.len() - 5].to_vec(), 0, len, 1000).await.unwrap_err().to_string();
        assert!(e.contains("the log ends inside the batch"), "{e}");
    }
}
