//! Reads that stopped before their end, kept for a while so that the same read asked again continues from
//! the byte it reached instead of from its start.
//!
//! A broker gives a remote fetch half a second (`fetch.timeout.ms`); over a store whose connections break
//! every few tens of kilobytes, reading one chunk takes longer than that (each broken answer is asked again
//! after the client's backoff), so every fetch was given up halfway and the next one, the same fetch asked
//! again, read the same bytes from the start: 5 MB read from the store and nothing served. A read dropped
//! by its deadline or failed by a broken answer now leaves what it received here, keyed by object, range
//! and version (the ETag); the next read of that range asks only for the rest, of the same version.

use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most bytes kept for reads to continue, over all of them; the oldest go first.
pub(crate) const KEPT_BYTES: usize = 8 << 20;

/// How long the bytes of a read are kept: a broker asks for a failed fetch again within a second.
pub(crate) const KEPT_FOR: Duration = Duration::from_secs(30);

/// The received start of a read that stopped before its end.
#[derive(Debug)]
struct Unfinished {
    key: String,
    range: Range<u64>,
    e_tag: String,
    pieces: Vec<Bytes>,
    got: usize,
    kept_at: Instant,
}

/// The reads of one store that stopped before their end ([`KEPT_BYTES`] at most, each for [`KEPT_FOR`]).
#[derive(Debug, Default)]
pub(crate) struct UnfinishedReads {
    kept: Mutex<VecDeque<Unfinished>>,
}

impl UnfinishedReads {
    /// A read of `range` of `key`, from the bytes a read of the same range left (taken out, so a read
    /// beside it starts afresh), or from its start.
    pub(crate) fn start<'a>(&'a self, key: &'a str, range: &Range<u64>) -> ReadProgress<'a> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        kept.retain(|u| now.duration_since(u.kept_at) < KEPT_FOR);
        let found = kept.iter().position(|u| u.key == key && u.range == *range).and_then(|i| kept.remove(i));
        let (e_tag, pieces, got) = match found {
            Some(u) => (Some(u.e_tag), u.pieces, u.got),
            None => (None, Vec::new(), 0),
        };
        ReadProgress { owner: self, key, range: range.clone(), e_tag, pieces, got, keep: true }
    }

    fn keep(&self, u: Unfinished) {
        if u.got > KEPT_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|k| !(k.key == u.key && k.range == u.range));
        let mut total: usize = kept.iter().map(|k| k.got).sum::<usize>() + u.got;
        while total > KEPT_BYTES {
            match kept.pop_front() {
                Some(old) => total -= old.got,
                None => break,
            }
        }
        kept.push_back(u);
    }

    /// The reads kept and their bytes.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let kept = self.kept.lock().unwrap();
        (kept.len(), kept.iter().map(|k| k.got).sum())
    }
}

/// One read in progress: the bytes received so far, in pieces as they came. Dropped before it finished
/// (its future dropped at a deadline, or its answer broken for good), it leaves them to its
/// [`UnfinishedReads`] when it has an ETag to ask for the rest of the same version by.
#[derive(Debug)]
pub(crate) struct ReadProgress<'a> {
    owner: &'a UnfinishedReads,
    key: &'a str,
    range: Range<u64>,
    /// The version of the object the bytes come from.
    pub(crate) e_tag: Option<String>,
    pieces: Vec<Bytes>,
    /// Bytes received so far.
    pub(crate) got: usize,
    keep: bool,
}

impl ReadProgress<'_> {
    /// Adds the next bytes received.
    pub(crate) fn push(&mut self, piece: Bytes) {
        self.got += piece.len();
        self.pieces.push(piece);
    }

    /// Forgets the bytes received (the object changed, or the read cannot go on): the read starts again.
    pub(crate) fn restart(&mut self) {
        (self.e_tag, self.pieces, self.got) = (None, Vec::new(), 0);
    }

    /// Whether the read, stopped now, is left to continue later; `false` for a failure that asking again
    /// does not cure.
    pub(crate) fn keep_on_drop(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// The whole read, as one buffer: the one piece itself, or a copy of them all.
    pub(crate) fn finish(mut self) -> Bytes {
        self.keep = false;
        let pieces = std::mem::take(&mut self.pieces);
        joined(pieces, self.got)
    }
}

impl Drop for ReadProgress<'_> {
    fn drop(&mut self) {
        if !self.keep || self.got == 0 {
            return;
        }
        let Some(e_tag) = self.e_tag.take() else { return };
        self.owner.keep(Unfinished {
            key: self.key.to_string(),
            range: self.range.clone(),
            e_tag,
            pieces: std::mem::take(&mut self.pieces),
            got: self.got,
            kept_at: Instant::now(),
        });
    }
}

/// `pieces` (`len` bytes in all) as one buffer: the one piece itself, or a copy of them all.
fn joined(mut pieces: Vec<Bytes>, len: usize) -> Bytes {
    if pieces.len() == 1 {
        return pieces.pop().unwrap_or_default();
    }
    let mut all = BytesMut::with_capacity(len);
    pieces.iter().for_each(|p| all.extend_from_slice(p));
    all.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_some(reads: &UnfinishedReads, key: &str, range: Range<u64>, e_tag: Option<&str>, n: usize) {
        let mut p = reads.start(key, &range);
        if p.e_tag.is_none() {
            p.e_tag = e_tag.map(str::to_string);
        }
        p.push(Bytes::from(vec![7u8; n]));
    }

    #[test]
    fn a_dropped_read_is_continued_by_the_same_read_only() {
        let reads = UnfinishedReads::default();
        read_some(&reads, "k", 0..100, Some("v1"), 40);
        assert_eq!(reads.held(), (1, 40));
        // Another range, or another key: from the start.
        assert_eq!(reads.start("k", &(0..99)).got, 0);
        assert_eq!(reads.start("j", &(0..100)).got, 0);
        // The same read: from byte 40 of version v1, taken out while it runs.
        let mut p = reads.start("k", &(0..100));
        assert_eq!((p.got, p.e_tag.as_deref()), (40, Some("v1")));
        assert_eq!(reads.held(), (0, 0));
        p.push(Bytes::from(vec![8u8; 60]));
        let all = p.finish();
        assert_eq!((all.len(), &all[39..41]), (100, &[7u8, 8][..]));
        assert_eq!(reads.held(), (0, 0), "a finished read leaves nothing");
    }

    #[test]
    fn nothing_is_kept_without_a_version_or_when_told_not_to() {
        let reads = UnfinishedReads::default();
        read_some(&reads, "k", 0..100, None, 40);
        assert_eq!(reads.held(), (0, 0), "without an ETag the rest could come from another version");
        let mut p = reads.start("k", &(0..100));
        p.e_tag = Some("v1".into());
        p.push(Bytes::from_static(b"abc"));
        p.keep_on_drop(false);
        drop(p);
        assert_eq!(reads.held(), (0, 0));
        let mut p = reads.start("k", &(0..100));
        p.e_tag = Some("v1".into());
        p.push(Bytes::from_static(b"abc"));
        p.restart();
        drop(p);
        assert_eq!(reads.held(), (0, 0), "a restarted read has nothing to leave");
    }

    #[test]
    fn the_bytes_kept_stay_within_their_bound_oldest_out_first() {
        let reads = UnfinishedReads::default();
        let third = KEPT_BYTES / 3;
        for (i, key) in ["a", "b", "c", "d"].iter().enumerate() {
            read_some(&reads, key, 0..KEPT_BYTES as u64, Some("v"), third);
            assert_eq!(reads.held().0, (i + 1).min(3));
            assert!(reads.held().1 <= KEPT_BYTES);
        }
        assert_eq!(reads.start("a", &(0..KEPT_BYTES as u64)).got, 0, "the oldest went first");
        assert_eq!(reads.start("d", &(0..KEPT_BYTES as u64)).got, third);
        read_some(&reads, "e", 0..u64::MAX, Some("v"), KEPT_BYTES + 1);
        assert_eq!(reads.start("e", &(0..u64::MAX)).got, 0, "a read larger than the bound is not kept");
    }
}
