//! What a chunk cache remembers of its readers: where each segment's last read started and ended, to tell a
//! sequential reader from a random one ([`SequentialDetector`]), and the chunks random readers have missed
//! ([`Doorkeeper`]).

use super::{ChunkKey, lock};
use crate::model::Uuid;
use lru::LruCache;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};

/// How many segments' last read positions are remembered for sequential detection.
const TRACKED_SEGMENTS: usize = 4096;

/// How many chunks missed once are remembered (the doorkeeper): the next miss of one loads it whole.
const SEEN_CHUNKS: usize = 65536;

/// Per store and segment, the start and end of its last read.
pub(super) struct SequentialDetector {
    last_read: Mutex<LruCache<(u64, Uuid), (u64, u64)>>,
}

impl SequentialDetector {
    /// Remembers the last reads of [`TRACKED_SEGMENTS`] segments, the least recently read forgotten first.
    pub(super) fn new() -> Self {
        let tracked = NonZeroUsize::new(TRACKED_SEGMENTS).expect("non-zero");
        SequentialDetector { last_read: Mutex::new(LruCache::new(tracked)) }
    }

    /// Whether a read of `range` of the segment `segment` (its store's scope and its id) continues the
    /// segment's previous read: it starts after that read started and no later than where it ended. Records
    /// the read either way.
    pub(super) fn is_sequential(&self, segment: (u64, Uuid), range: &Range<u64>) -> bool {
        let mut last = lock(&self.last_read);
        let seq = last.get(&segment).is_some_and(|&(start, end)| range.start > start && range.start <= end);
        last.put(segment, (range.start, range.end));
        seq
    }
}

/// The chunks random readers have missed, the least recently missed forgotten first: a chunk's first miss
/// only marks it here (as TinyLFU admits), a later one may load it.
pub(super) struct Doorkeeper {
    seen: Mutex<LruCache<ChunkKey, ()>>,
}

impl Doorkeeper {
    /// Remembers [`SEEN_CHUNKS`] chunks.
    pub(super) fn new() -> Self {
        Doorkeeper { seen: Mutex::new(LruCache::new(NonZeroUsize::new(SEEN_CHUNKS).expect("non-zero"))) }
    }

    /// The doorkeeper, held: readers missing a chunk at once take their turns, so that what one decides
    /// (starting the chunk's load, say) is what the next one sees.
    pub(super) fn lock(&self) -> DoorkeeperTurn<'_> {
        DoorkeeperTurn { seen: lock(&self.seen) }
    }
}

/// A reader's turn at the [`Doorkeeper`] ([`Doorkeeper::lock`]).
pub(super) struct DoorkeeperTurn<'a> {
    seen: MutexGuard<'a, LruCache<ChunkKey, ()>>,
}

impl DoorkeeperTurn<'_> {
    /// Whether a random reader has missed the chunk before (and the doorkeeper still remembers it), without
    /// noting anything.
    pub(super) fn missed_before(&self, key: &ChunkKey) -> bool {
        self.seen.contains(key)
    }

    /// Notes a random reader's miss of the chunk (marking it, or refreshing its mark); whether it was
    /// missed before.
    pub(super) fn note_miss(&mut self, key: ChunkKey) -> bool {
        self.seen.put(key, ()).is_some()
    }
}
