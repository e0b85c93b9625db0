//! A fetch of a segment whose chunks carry no check of their own (Aiven's, not encrypted) checked by the
//! record batches it holds: each batch's CRC (Kafka's own) is checked before any of its bytes are served, so
//! the fetch must start on a batch, and a batch its end cuts is read whole, checked, then cut.

use crate::backend::ByteStream;
use crate::error::{Error, Result};
use crate::format::batch::BatchIter;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;

/// The walk over one fetch: the next batch to check and what has been read of it and beyond.
#[derive(Debug)]
struct Walk {
    /// Position of the next batch not yet checked.
    next: u64,
    /// The fetch's end (exclusive).
    end: u64,
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
        let mut batches = BatchIter::new(&self.pending, self.next, true);
        while self.next + (batches.consumed() as u64) < self.end {
            let found = batches.next_complete().map_err(|e| {
                e.context(format!(
                    "{} (a fetch of a segment that is not encrypted starts on a batch, position {})",
                    self.what, self.next
                ))
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

    fn done(&self) -> bool {
        self.next >= self.end
    }
}

/// `chunks` (each chunk's original start and bytes, in order, from the chunk holding `start` on) served
/// from `start` to `end`, batch by batch, each checked first. The log ending inside a batch is an error.
pub(super) fn checked(chunks: ByteChunks, start: u64, end: u64, what: String) -> ByteStream {
    let walk = Walk { next: start, end, pending: BytesMut::new(), what };
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
        let read = |log: Vec<u8>, start: u64, end: u64, chunk: usize| async move {
            let chunks: Vec<Result<(u64, Bytes)>> = log
                .chunks(chunk)
                .enumerate()
                .map(|(i, c)| Ok(((i * chunk) as u64, Bytes::copy_from_slice(c))))
                .filter(|r| r.as_ref().map_or(true, |(at, c)| at + c.len() as u64 > start - start % chunk as u64))
                .collect();
            let s = checked(futures::stream::iter(chunks).boxed(), start, end, "segment s".into());
            let parts: Vec<Result<Bytes>> = s.collect().await;
            parts.into_iter().collect::<Result<Vec<Bytes>>>().map(|p| p.concat())
        };
        let len = log.len() as u64;
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
        let e = read(log.clone(), starts[1] + 3, len, 1000).await.unwrap_err().to_string();
        assert!(e.contains("starts on a batch"), "{e}");
        let e = read(log[..log.len() - 5].to_vec(), 0, len, 1000).await.unwrap_err().to_string();
        assert!(e.contains("the log ends inside the batch"), "{e}");
    }
}
