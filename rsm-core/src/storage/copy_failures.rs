//! How failed copies are logged: once per log segment, not once per attempt.
//!
//! Kafka copies a segment again after a failure, under a new segment id, every
//! `remote.log.manager.task.interval.ms` (30 s by default, half a second in some setups): while the store is
//! down, a WARN per attempt is a line a second per partition that says nothing new. A log segment (a
//! partition's segment from its start offset) whose copy fails is logged at WARN at its first failure, then at
//! DEBUG, and at WARN again each [`WARN_EVERY`] while it keeps failing, with the attempts so far; its copy
//! that then succeeds is logged once at INFO.

use crate::model::{RemoteLogSegmentMetadata, TopicIdPartition};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a segment whose copy keeps failing is logged at WARN again.
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(60);

/// Segments whose copy is failing, at most this many remembered (the oldest forgotten first).
const REMEMBERED: usize = 10_000;

/// A log segment whose copy failed and has not succeeded since.
#[derive(Debug, Clone, Copy)]
struct Failing {
    attempts: u64,
    since: Instant,
    warned: Instant,
}

/// How to log one failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failed {
    /// Whether at WARN (the first failure of the segment's copy, or the first for [`WARN_EVERY`]).
    pub(crate) warn: bool,
    /// Failed attempts of the segment's copy so far, this one included.
    pub(crate) attempts: u64,
    /// Since the first of them.
    pub(crate) failing_for: Duration,
}

/// The log segments whose copy is failing, by partition and start offset.
#[derive(Debug, Default)]
pub(crate) struct CopyFailures {
    failing: Mutex<HashMap<(TopicIdPartition, i64), Failing>>,
}

fn segment(md: &RemoteLogSegmentMetadata) -> (TopicIdPartition, i64) {
    (md.remote_log_segment_id.topic_id_partition.clone(), md.start_offset)
}

impl CopyFailures {
    /// Records a failed attempt to copy `md`'s log segment, at `now`.
    pub(crate) fn failed(&self, md: &RemoteLogSegmentMetadata, now: Instant) -> Failed {
        let mut failing = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        if failing.len() >= REMEMBERED
            && !failing.contains_key(&segment(md))
            && let Some(oldest) = failing.iter().min_by_key(|(_, f)| f.since).map(|(k, _)| k.clone())
        {
            failing.remove(&oldest);
        }
        let f = failing.entry(segment(md)).or_insert(Failing { attempts: 0, since: now, warned: now });
        f.attempts += 1;
        let warn = f.attempts == 1 || now.duration_since(f.warned) >= WARN_EVERY;
        if warn {
            f.warned = now;
        }
        Failed { warn, attempts: f.attempts, failing_for: now.duration_since(f.since) }
    }

    /// Records that `md`'s log segment was copied: the failed attempts before and the time since the first,
    /// if any failed.
    pub(crate) fn succeeded(&self, md: &RemoteLogSegmentMetadata, now: Instant) -> Option<(u64, Duration)> {
        let mut failing = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        failing.remove(&segment(md)).map(|f| (f.attempts, now.duration_since(f.since)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RemoteLogSegmentId, TopicPartition, Uuid};

    fn attempt(tp: &TopicIdPartition, start: i64) -> RemoteLogSegmentMetadata {
        let id = RemoteLogSegmentId { topic_id_partition: tp.clone(), id: Uuid::random() };
        RemoteLogSegmentMetadata::new(id, start, start + 99, 0, 1, 0, 100, [(0, start)].into()).unwrap()
    }

    #[test]
    fn a_failing_segment_warns_once_a_minute_whatever_its_attempts_ids() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let tp = TopicIdPartition { topic_id: Uuid::random(), topic_partition: TopicPartition::new("t", 0) };
        let failures = CopyFailures::default();
        // (ms, start offset, warned, attempts of that segment)
        let table = [
            (0, 100, true, 1),
            (500, 100, false, 2),
            (1_000, 200, true, 1),
            (59_999, 100, false, 3),
            (60_000, 100, true, 4),
            (61_000, 100, false, 5),
            (120_000, 100, true, 6),
        ];
        for (ms, start, warn, attempts) in table {
            let f = failures.failed(&attempt(&tp, start), at(ms));
            assert_eq!((f.warn, f.attempts), (warn, attempts), "at {ms} ms, offset {start}");
        }
        assert_eq!(failures.succeeded(&attempt(&tp, 100), at(121_000)), Some((6, Duration::from_secs(121))));
        assert_eq!(failures.succeeded(&attempt(&tp, 100), at(122_000)), None, "said once");
        let f = failures.failed(&attempt(&tp, 100), at(123_000));
        assert!(f.warn && f.attempts == 1, "failing again after a success is news: {f:?}");
    }
}
