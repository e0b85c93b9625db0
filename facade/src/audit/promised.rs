//! The audit's side of the metadata: each segment the metadata names, checked against the store. A copied
//! segment is lost, unverified or fine; a copy or deletion in progress past the safety age is stuck, or a
//! copy abandoned; the offsets no copied segment holds are gaps.

use super::keys::{key_id, refusal, refused_key};
use super::report::{AbandonedCopy, AuditOptions, Gap, KeyTally, LostSegment, PartitionReport, Report};
use super::report::{StuckSegment, UnverifiedSegment};
use super::{Listing, partition_key};
use crate::Store;
use rsm_core::backend::ObjectMeta;
use rsm_core::storage::Suffix;
use rsm_core::{Error, ErrorKind, RemoteLogSegmentMetadata, RemoteLogSegmentState};
use rsm_tiering::{OffsetRange, remote_coverage};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::SystemTime;

/// Checks each segment of `segments` in the audit's scope, adding to each partition's report (every
/// partition a segment in scope names gets one) its copied count, lost, unverified, stuck and abandoned
/// segments and its gaps, and to `report.keys` how each key fared. Returns the ids of the abandoned copies.
pub(super) fn check_segments(
    store: &Store,
    segments: &[RemoteLogSegmentMetadata],
    opts: &AuditOptions,
    listing: &Listing<'_>,
    report: &mut Report,
) -> HashSet<String> {
    let now_ms = listing.now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis() as i64;
    let scoped: Vec<&RemoteLogSegmentMetadata> = segments
        .iter()
        .filter(|m| opts.topic_in_scope(&m.remote_log_segment_id.topic_id_partition.topic_partition.topic))
        .collect();
    let mut copied_ranges: HashMap<(String, String), Vec<OffsetRange>> = HashMap::new();
    for m in scoped.iter().filter(|m| m.state == RemoteLogSegmentState::CopySegmentFinished) {
        copied_ranges
            .entry(partition_key(&m.remote_log_segment_id.topic_id_partition))
            .or_default()
            .push(OffsetRange { start: m.start_offset, end: m.end_offset });
    }
    let mut abandoned: HashSet<String> = HashSet::new();
    for m in scoped {
        let key = partition_key(&m.remote_log_segment_id.topic_id_partition);
        let part = report.partitions.entry(key.clone()).or_default();
        match m.state {
            RemoteLogSegmentState::CopySegmentFinished => {
                let id = m.remote_log_segment_id.id.to_string();
                let have = listing.by_segment.get(&id).map(Vec::as_slice).unwrap_or_default();
                check_copied(store, m, opts.quick, have, part, &mut report.keys);
            }
            RemoteLogSegmentState::CopySegmentStarted | RemoteLogSegmentState::DeleteSegmentStarted => {
                if now_ms.saturating_sub(m.event_timestamp_ms) < opts.min_age.as_millis() as i64 {
                    continue;
                }
                let copied = copied_ranges.get(&key).map(Vec::as_slice).unwrap_or_default();
                if let Some(id) = check_in_progress(m, copied, part) {
                    abandoned.insert(id);
                }
            }
            RemoteLogSegmentState::DeleteSegmentFinished => {}
        }
    }
    for (key, ranges) in &copied_ranges {
        let part = report.partitions.entry(key.clone()).or_default();
        part.gaps = remote_coverage(ranges)
            .gaps
            .into_iter()
            .map(|g| Gap { first_offset: g.start, last_offset: g.end })
            .collect();
    }
    abandoned
}

/// Checks the copied segment `m`, whose objects in the store are `have`: counts it, and adds it to `part`
/// as lost or unverified when it is, and to `keys` how its key fared.
fn check_copied(
    store: &Store,
    m: &RemoteLogSegmentMetadata,
    quick: bool,
    have: &[&ObjectMeta],
    part: &mut PartitionReport,
    keys: &mut BTreeMap<String, KeyTally>,
) {
    part.copied += 1;
    let (segment_id, start_offset) = (m.remote_log_segment_id.id.to_string(), m.start_offset);
    match copied_problem(store, m, quick, have) {
        // A key or a setting this run lacks: the segment cannot be checked, which is not loss.
        Some(e) if e.kind() == ErrorKind::Config => part.unverified.push(UnverifiedSegment {
            segment_id,
            start_offset,
            problem: e.full_message(),
            key_id: None,
        }),
        // A key that does not open the data key: the key is wrong (or this manifest holds another
        // segment's key), which is not loss either.
        Some(e)
            if e.kind() == ErrorKind::Corrupt
                && let Some(kek) = refused_key(store, m) =>
        {
            keys.entry(kek.clone()).or_default().refused += 1;
            part.unverified.push(UnverifiedSegment {
                segment_id,
                start_offset,
                problem: refusal(&kek),
                key_id: Some(kek),
            });
        }
        Some(e) => part.lost.push(LostSegment { segment_id, start_offset, problem: e.full_message() }),
        None if !quick => {
            if let Some(kek) = key_id(store, m) {
                keys.entry(kek).or_default().opened += 1;
            }
        }
        None => {}
    }
}

/// What is wrong with the copied segment `m`, whose objects in the store are `have`: an object missing,
/// or its manifest not reading (`quick`), or its data failing verification.
fn copied_problem(store: &Store, m: &RemoteLogSegmentMetadata, quick: bool, have: &[&ObjectMeta]) -> Option<Error> {
    // A one-object segment needs its `.segment` object alone; a split one its three objects; one Aiven's
    // plugin stored its three.
    let has = |s: Suffix| have.iter().any(|o| Suffix::of(&o.key) == Some(s));
    let needed: &[Suffix] = if has(Suffix::Segment) {
        &[Suffix::Segment]
    } else if has(Suffix::AivenManifest) && !has(Suffix::Manifest) {
        &[Suffix::Log, Suffix::Indexes, Suffix::AivenManifest]
    } else {
        &Suffix::ALL
    };
    let missing: Vec<&str> = needed
        .iter()
        .filter(|s| !have.iter().any(|o| Suffix::of(&o.key) == Some(**s)))
        .map(|s| s.extension())
        .collect();
    if !missing.is_empty() {
        Some(Error::not_found(format!("missing .{}", missing.join(", ."))))
    } else if quick {
        store.stored_format(m).err()
    } else {
        store.verify(m).err()
    }
}

/// Adds the segment `m`, in copy started or delete started for at least the safety age, to `part`: as a
/// copy abandoned when it is a copy whose offsets the finished copies `copied` hold (then returns its id),
/// else as stuck.
fn check_in_progress(
    m: &RemoteLogSegmentMetadata,
    copied: &[OffsetRange],
    part: &mut PartitionReport,
) -> Option<String> {
    let segment_id = m.remote_log_segment_id.id.to_string();
    let held = holds(copied, OffsetRange { start: m.start_offset, end: m.end_offset });
    if m.state == RemoteLogSegmentState::CopySegmentStarted && held {
        part.abandoned.push(AbandonedCopy {
            segment_id: segment_id.clone(),
            start_offset: m.start_offset,
            since_ms: m.event_timestamp_ms,
        });
        Some(segment_id)
    } else {
        part.stuck.push(StuckSegment { segment_id, state: m.state, since_ms: m.event_timestamp_ms });
        None
    }
}

/// Whether the copied ranges `copied` hold every offset of `range` between them.
fn holds(copied: &[OffsetRange], range: OffsetRange) -> bool {
    let mut sorted: Vec<&OffsetRange> = copied.iter().collect();
    sorted.sort_by_key(|r| r.start);
    let mut next = range.start;
    for r in sorted {
        if r.start > next {
            break;
        }
        next = next.max(r.end.saturating_add(1));
        if next > range.end {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: i64, end: i64) -> OffsetRange {
        OffsetRange { start, end }
    }

    #[test]
    fn copied_ranges_hold_a_range_only_without_a_hole() {
        let copied = [range(50, 99), range(0, 49), range(100, 149)];
        assert!(holds(&copied, range(10, 120)));
        assert!(holds(&copied, range(0, 149)));
        assert!(!holds(&copied, range(0, 150)));
        assert!(!holds(&[range(0, 49), range(51, 99)], range(0, 99)));
        assert!(!holds(&[], range(0, 0)));
    }
}
