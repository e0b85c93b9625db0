//! SR-20 offset constraints, remote coverage and its gaps, local deletability, partition offset transitions.

mod common;

use common::assert_outcome;
use rsm_core::error::Result;
use rsm_tiering::offsets::*;

fn rng(start: i64, end: i64) -> OffsetRange {
    OffsetRange { start, end }
}

#[test]
fn seed_constraints() {
    struct Case {
        name: &'static str,
        lx: i64,
        ly: i64,
        lz: i64,
        remote: Option<(i64, i64)>,
        error: Option<&'static str>,
    }
    let cases = [
        Case { name: "all equal, no remote", lx: 5, ly: 5, lz: 5, remote: None, error: None },
        Case { name: "ordered with remote", lx: 100, ly: 250, lz: 300, remote: Some((0, 199)), error: None },
        Case { name: "remote end just below Ly", lx: 0, ly: 200, lz: 300, remote: Some((0, 199)), error: None },
        Case { name: "Lz < Ly", lx: 0, ly: 10, lz: 9, remote: None, error: Some("Lz >= Ly violated") },
        Case { name: "Ly < Lx", lx: 10, ly: 9, lz: 20, remote: None, error: Some("Ly >= Lx violated") },
        Case { name: "Ry at Ly", lx: 0, ly: 200, lz: 300, remote: Some((0, 200)), error: Some("Ly >= Ry violated") },
        Case { name: "Ry above Ly", lx: 0, ly: 200, lz: 300, remote: Some((0, 250)), error: Some("Ly >= Ry violated") },
        Case { name: "Ry < Rx", lx: 0, ly: 200, lz: 300, remote: Some((50, 40)), error: Some("Ry >= Rx violated") },
    ];
    for c in cases {
        assert_outcome(c.name, check_offsets(c.lx, c.ly, c.lz, c.remote.map(|(s, e)| rng(s, e))), c.error);
    }
}

#[test]
fn local_deletion_predicate() {
    struct Case {
        name: &'static str,
        first: i64,
        last: i64,
        covered: Option<(i64, i64)>,
        log_start: i64,
        want: bool,
    }
    let cases = [
        Case { name: "last offset equal to Ry", first: 0, last: 99, covered: Some((0, 99)), log_start: 0, want: true },
        Case { name: "last offset below Ry", first: 0, last: 99, covered: Some((0, 150)), log_start: 0, want: true },
        Case { name: "last offset above Ry", first: 0, last: 100, covered: Some((0, 99)), log_start: 0, want: false },
        Case { name: "nothing remote", first: 0, last: 99, covered: None, log_start: 0, want: false },
        Case {
            name: "below the log start offset, nothing remote",
            first: 0,
            last: 99,
            covered: None,
            log_start: 100,
            want: true,
        },
        Case {
            name: "last offset at the log start offset is still part of the log",
            first: 0,
            last: 100,
            covered: None,
            log_start: 100,
            want: false,
        },
        Case {
            name: "below the remote log start: its offsets are only local",
            first: 0,
            last: 99,
            covered: Some((100, 299)),
            log_start: 0,
            want: false,
        },
        Case {
            name: "past a gap: covered only up to the gap",
            first: 200,
            last: 299,
            covered: Some((0, 199)),
            log_start: 0,
            want: false,
        },
        Case {
            name: "starting below the remote log start, but only below the log start offset",
            first: 0,
            last: 199,
            covered: Some((100, 299)),
            log_start: 100,
            want: true,
        },
    ];
    for c in cases {
        let covered = c.covered.map(|(s, e)| rng(s, e));
        assert_eq!(local_segment_deletable(c.first, c.last, covered, c.log_start), c.want, "{}", c.name);
    }
}

#[test]
fn remote_coverage_stops_at_the_first_gap() {
    struct Case {
        name: &'static str,
        segments: &'static [(i64, i64)],
        contiguous: Option<(i64, i64)>,
        gaps: &'static [(i64, i64)],
    }
    let cases = [
        Case { name: "nothing copied", segments: &[], contiguous: None, gaps: &[] },
        Case { name: "one segment", segments: &[(0, 99)], contiguous: Some((0, 99)), gaps: &[] },
        Case {
            name: "adjacent, in any order",
            segments: &[(100, 199), (0, 99), (200, 299)],
            contiguous: Some((0, 299)),
            gaps: &[],
        },
        Case {
            name: "a middle segment deleted",
            segments: &[(0, 99), (200, 299), (300, 399)],
            contiguous: Some((0, 99)),
            gaps: &[(100, 199)],
        },
        Case {
            name: "two gaps",
            segments: &[(0, 99), (150, 199), (300, 399)],
            contiguous: Some((0, 99)),
            gaps: &[(100, 149), (200, 299)],
        },
        Case {
            name: "overlapping copies (a leader change) cover their union",
            segments: &[(0, 120), (100, 199), (150, 180)],
            contiguous: Some((0, 199)),
            gaps: &[],
        },
        Case {
            name: "a one-offset gap",
            segments: &[(0, 99), (101, 199)],
            contiguous: Some((0, 99)),
            gaps: &[(100, 100)],
        },
    ];
    for c in cases {
        let segs: Vec<OffsetRange> = c.segments.iter().map(|&(s, e)| rng(s, e)).collect();
        let got = remote_coverage(&segs);
        assert_eq!(got.contiguous, c.contiguous.map(|(s, e)| rng(s, e)), "{}", c.name);
        assert_eq!(got.gaps, c.gaps.iter().map(|&(s, e)| rng(s, e)).collect::<Vec<_>>(), "{}", c.name);
    }
}

#[test]
fn log_gaps_count_the_local_log_too() {
    struct Case {
        name: &'static str,
        remote: &'static [(i64, i64)],
        local: &'static [(i64, i64)],
        holes: &'static [(i64, i64)],
    }
    let cases = [
        Case { name: "nothing anywhere", remote: &[], local: &[], holes: &[] },
        Case { name: "local only", remote: &[], local: &[(0, 99), (100, 199)], holes: &[] },
        Case { name: "remote then local, adjacent", remote: &[(0, 99)], local: &[(100, 150)], holes: &[] },
        Case {
            name: "the remote log's last segment deleted after its local copy went",
            remote: &[(0, 99), (100, 199)],
            local: &[(300, 350)],
            holes: &[(200, 299)],
        },
        Case {
            name: "a gap between remote segments is one, even while the local log holds it",
            remote: &[(0, 99), (200, 299)],
            local: &[(100, 199), (200, 350)],
            holes: &[(100, 199)],
        },
        Case {
            name: "a local segment removed by hand (the one before ends at its last batch)",
            remote: &[(0, 151), (152, 317)],
            local: &[(152, 317), (492, 637), (638, 700)],
            holes: &[(318, 491)],
        },
        Case {
            name: "a gap between local segments above the remote log",
            remote: &[(0, 99)],
            local: &[(100, 149), (200, 250)],
            holes: &[(150, 199)],
        },
        Case {
            name: "local below the remote log, overlapping",
            remote: &[(100, 199)],
            local: &[(50, 120), (121, 300)],
            holes: &[],
        },
    ];
    for c in cases {
        let r = |v: &[(i64, i64)]| v.iter().map(|&(s, e)| rng(s, e)).collect::<Vec<_>>();
        assert_eq!(log_gaps(&r(c.remote), &r(c.local)), r(c.holes), "{}", c.name);
    }
}

#[test]
fn uncovered_offsets_of_a_range() {
    type Ranges = &'static [(i64, i64)];
    let cases: &[(&str, (i64, i64), Ranges, Ranges)] = &[
        ("nothing holds it", (10, 20), &[], &[(10, 20)]),
        ("held whole", (10, 20), &[(0, 30)], &[]),
        ("held by two adjacent", (10, 20), &[(15, 25), (0, 14)], &[]),
        ("the top missing", (10, 20), &[(0, 15)], &[(16, 20)]),
        ("the bottom missing", (10, 20), &[(12, 40)], &[(10, 11)]),
        ("a middle missing", (10, 20), &[(0, 12), (18, 30)], &[(13, 17)]),
        ("ranges outside count for nothing", (10, 20), &[(0, 9), (21, 30)], &[(10, 20)]),
        ("one offset", (5, 5), &[(6, 6)], &[(5, 5)]),
    ];
    for (name, range, held, want) in cases {
        let r = |v: &[(i64, i64)]| v.iter().map(|&(s, e)| rng(s, e)).collect::<Vec<_>>();
        assert_eq!(uncovered(rng(range.0, range.1), &r(held)), r(want), "{name}");
    }
}

#[test]
fn construction() {
    struct Case {
        name: &'static str,
        log_start: i64,
        local: Vec<i64>,
        lz: i64,
        hw: i64,
        ly: i64,
        remote: Vec<OffsetRange>,
        error: Option<&'static str>,
    }
    let cases = [
        Case {
            name: "fresh empty log",
            log_start: 0,
            local: vec![0],
            lz: 0,
            hw: 0,
            ly: 0,
            remote: vec![],
            error: None,
        },
        Case {
            name: "tiered with overlap",
            log_start: 0,
            local: vec![100, 200],
            lz: 250,
            hw: 250,
            ly: 240,
            remote: vec![rng(0, 99), rng(100, 199)],
            error: None,
        },
        Case {
            name: "log start above Lx with remote gone below it",
            log_start: 150,
            local: vec![100, 200],
            lz: 250,
            hw: 250,
            ly: 250,
            remote: vec![],
            error: None,
        },
        Case {
            name: "no segments",
            log_start: 0,
            local: vec![],
            lz: 0,
            hw: 0,
            ly: 0,
            remote: vec![],
            error: Some("active segment must be present"),
        },
        Case {
            name: "local out of order",
            log_start: 0,
            local: vec![10, 5],
            lz: 20,
            hw: 20,
            ly: 20,
            remote: vec![],
            error: Some("5 follows 10"),
        },
        Case {
            name: "active beyond Lz",
            log_start: 0,
            local: vec![0, 30],
            lz: 20,
            hw: 20,
            ly: 20,
            remote: vec![],
            error: Some("beyond the local log end offset 20"),
        },
        Case {
            name: "HW above Lz",
            log_start: 0,
            local: vec![0],
            lz: 20,
            hw: 21,
            ly: 20,
            remote: vec![],
            error: Some("Lz >= HW >= Ly violated"),
        },
        Case {
            name: "HW below Ly",
            log_start: 0,
            local: vec![0],
            lz: 20,
            hw: 10,
            ly: 15,
            remote: vec![],
            error: Some("Lz >= HW >= Ly violated"),
        },
        Case {
            name: "Ly below Lx",
            log_start: 0,
            local: vec![10],
            lz: 20,
            hw: 20,
            ly: 5,
            remote: vec![rng(0, 4)],
            error: Some("Ly >= Lx violated"),
        },
        Case {
            name: "Ry at Ly",
            log_start: 0,
            local: vec![0, 100],
            lz: 150,
            hw: 150,
            ly: 100,
            remote: vec![rng(0, 100)],
            error: Some("Ly >= Ry violated"),
        },
        Case {
            name: "log start above HW",
            log_start: 30,
            local: vec![0],
            lz: 30,
            hw: 20,
            ly: 20,
            remote: vec![],
            error: Some("log start offset 30 is outside [0, high watermark 20]"),
        },
        Case {
            name: "hole between log start and Lx",
            log_start: 0,
            local: vec![100],
            lz: 150,
            hw: 150,
            ly: 150,
            remote: vec![],
            error: Some("offsets 0 to 99 are neither local nor remote"),
        },
        Case {
            name: "hole inside the remote tier",
            log_start: 0,
            local: vec![300],
            lz: 350,
            hw: 350,
            ly: 350,
            remote: vec![rng(0, 99), rng(200, 299)],
            error: Some("offsets 100 to 299 are neither local nor remote"),
        },
        Case {
            name: "remote out of order",
            log_start: 0,
            local: vec![0],
            lz: 350,
            hw: 350,
            ly: 350,
            remote: vec![rng(100, 199), rng(0, 99)],
            error: Some("remote segments out of order or overlapping"),
        },
    ];
    for c in cases {
        assert_outcome(c.name, PartitionOffsets::new(c.log_start, c.local, c.lz, c.hw, c.ly, c.remote), c.error);
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Append(i64),
    Advance(i64, i64),
    Roll,
    CopyDone(i64),
    RemoteDelete(i64, i64),
    LocalDelete,
    DeleteRecords(i64),
}

#[derive(Debug)]
enum Want {
    Applied,
    Deferred(&'static str),
    Rejected(&'static str),
}

/// (log start, Lx, HW, Ly, Lz, remote (Rx, Ry)).
type Snapshot = (i64, i64, i64, i64, i64, Option<(i64, i64)>);

fn snapshot(s: &PartitionOffsets) -> Snapshot {
    (
        s.log_start_offset(),
        s.local_log_start_offset(),
        s.high_watermark(),
        s.last_stable_offset(),
        s.local_log_end_offset(),
        s.remote_log_start_offset().zip(s.remote_log_end_offset()),
    )
}

fn apply(s: &mut PartitionOffsets, op: Op) -> Result<Transition> {
    match op {
        Op::Append(e) => s.append(e),
        Op::Advance(hw, ly) => s.advance(hw, ly),
        Op::Roll => s.roll(),
        Op::CopyDone(b) => s.copy_done(b),
        Op::RemoteDelete(a, b) => s.remote_delete(rng(a, b)),
        Op::LocalDelete => s.local_delete(),
        Op::DeleteRecords(o) => s.delete_records(o).map(|_| Transition::Applied),
    }
}

/// Four local segments at 0, 100, 200, 300 (active), Lz = HW = Ly = 350, nothing remote.
fn base() -> PartitionOffsets {
    PartitionOffsets::new(0, vec![0, 100, 200, 300], 350, 350, 350, vec![]).unwrap()
}

/// As [`base`] but with HW 320 and Ly 150 (an open transaction).
fn open_txn() -> PartitionOffsets {
    PartitionOffsets::new(0, vec![0, 100, 200, 300], 350, 320, 150, vec![]).unwrap()
}

#[test]
fn transitions() {
    use Op::*;
    struct Case {
        name: &'static str,
        start: fn() -> PartitionOffsets,
        /// Every op but the last must apply.
        ops: &'static [Op],
        want: Want,
        after: Snapshot,
    }
    let cases = [
        Case {
            name: "append moves Lz",
            start: base,
            ops: &[Append(400)],
            want: Want::Applied,
            after: (0, 0, 350, 350, 400, None),
        },
        Case {
            name: "append backwards is rejected",
            start: base,
            ops: &[Append(349)],
            want: Want::Rejected("below the local log end offset 350"),
            after: (0, 0, 350, 350, 350, None),
        },
        Case {
            name: "advance HW and Ly",
            start: open_txn,
            ops: &[Advance(350, 340)],
            want: Want::Applied,
            after: (0, 0, 350, 340, 350, None),
        },
        Case {
            name: "advance HW beyond Lz is rejected",
            start: open_txn,
            ops: &[Advance(351, 300)],
            want: Want::Rejected("Lz >= HW >= Ly violated"),
            after: (0, 0, 320, 150, 350, None),
        },
        Case {
            name: "advance Ly beyond HW is rejected",
            start: open_txn,
            ops: &[Advance(320, 330)],
            want: Want::Rejected("Lz >= HW >= Ly violated"),
            after: (0, 0, 320, 150, 350, None),
        },
        Case {
            name: "advance moving back is rejected",
            start: open_txn,
            ops: &[Advance(310, 150)],
            want: Want::Rejected("would move back"),
            after: (0, 0, 320, 150, 350, None),
        },
        Case { name: "roll", start: base, ops: &[Roll], want: Want::Applied, after: (0, 0, 350, 350, 350, None) },
        Case {
            name: "rolling an empty active segment is deferred",
            start: base,
            ops: &[Roll, Roll],
            want: Want::Deferred("is empty"),
            after: (0, 0, 350, 350, 350, None),
        },
        Case {
            name: "copy the oldest segment",
            start: base,
            ops: &[CopyDone(0)],
            want: Want::Applied,
            after: (0, 0, 350, 350, 350, Some((0, 99))),
        },
        Case {
            name: "copies in order",
            start: base,
            ops: &[CopyDone(0), CopyDone(100), CopyDone(200)],
            want: Want::Applied,
            after: (0, 0, 350, 350, 350, Some((0, 299))),
        },
        Case {
            name: "copy leaving a gap is rejected",
            start: base,
            ops: &[CopyDone(100)],
            want: Want::Rejected("would leave offsets 0 to 99 out of remote storage"),
            after: (0, 0, 350, 350, 350, None),
        },
        Case {
            name: "copy twice is rejected",
            start: base,
            ops: &[CopyDone(0), CopyDone(0)],
            want: Want::Rejected("already covered up to remote offset 99"),
            after: (0, 0, 350, 350, 350, Some((0, 99))),
        },
        Case {
            name: "copy of the active segment is rejected",
            start: base,
            ops: &[CopyDone(300)],
            want: Want::Rejected("is the active segment"),
            after: (0, 0, 350, 350, 350, None),
        },
        Case {
            name: "copy of an unknown segment is rejected",
            start: base,
            ops: &[CopyDone(50)],
            want: Want::Rejected("no local segment starts at 50"),
            after: (0, 0, 350, 350, 350, None),
        },
        Case {
            name: "copy of a segment not below Ly is rejected (Ly >= Ry)",
            start: open_txn,
            ops: &[CopyDone(0), CopyDone(100)],
            want: Want::Rejected("not entirely below the last stable offset 150"),
            after: (0, 0, 320, 150, 350, Some((0, 99))),
        },
        Case {
            name: "local delete before the copy is deferred",
            start: base,
            ops: &[LocalDelete],
            want: Want::Deferred("not in remote storage yet"),
            after: (0, 0, 350, 350, 350, None),
        },
        Case {
            name: "local delete after the copy",
            start: base,
            ops: &[CopyDone(0), LocalDelete],
            want: Want::Applied,
            after: (0, 100, 350, 350, 350, Some((0, 99))),
        },
        Case {
            name: "local delete past the remote end is deferred",
            start: base,
            ops: &[CopyDone(0), LocalDelete, LocalDelete],
            want: Want::Deferred("segment [100, 199] is not in remote storage yet"),
            after: (0, 100, 350, 350, 350, Some((0, 99))),
        },
        Case {
            name: "local delete of the active segment is rejected",
            start: || PartitionOffsets::new(0, vec![0], 10, 10, 10, vec![]).unwrap(),
            ops: &[LocalDelete],
            want: Want::Rejected("the active segment is never deleted"),
            after: (0, 0, 10, 10, 10, None),
        },
        Case {
            name: "local delete below the log start offset needs no copy",
            start: base,
            ops: &[DeleteRecords(150), LocalDelete],
            want: Want::Applied,
            after: (150, 100, 350, 350, 350, None),
        },
        Case {
            name: "local delete that would put Lx above Ly is deferred",
            start: open_txn,
            ops: &[DeleteRecords(300), LocalDelete, LocalDelete],
            want: Want::Deferred("would put the local log start offset 200 above the last stable offset 150"),
            after: (300, 100, 320, 150, 350, None),
        },
        Case {
            name: "remote delete of the oldest moves the log start",
            start: base,
            ops: &[CopyDone(0), CopyDone(100), RemoteDelete(0, 99)],
            want: Want::Applied,
            after: (100, 0, 350, 350, 350, Some((100, 199))),
        },
        Case {
            name: "remote delete of a newer segment is rejected",
            start: base,
            ops: &[CopyDone(0), CopyDone(100), RemoteDelete(100, 199)],
            want: Want::Rejected("is not the oldest remote segment"),
            after: (0, 0, 350, 350, 350, Some((0, 199))),
        },
        Case {
            name: "remote delete of everything after local delete",
            start: base,
            ops: &[CopyDone(0), LocalDelete, RemoteDelete(0, 99)],
            want: Want::Applied,
            after: (100, 100, 350, 350, 350, None),
        },
        Case {
            name: "copy after a DeleteRecords past the remote end (gap below the log start is fine)",
            start: base,
            ops: &[CopyDone(0), DeleteRecords(200), LocalDelete, LocalDelete, CopyDone(200)],
            want: Want::Applied,
            after: (200, 200, 350, 350, 350, Some((0, 299))),
        },
        Case {
            name: "delete records moves the log start",
            start: base,
            ops: &[DeleteRecords(120)],
            want: Want::Applied,
            after: (120, 0, 350, 350, 350, None),
        },
        Case {
            name: "delete records -1 means the high watermark",
            start: open_txn,
            ops: &[DeleteRecords(-1)],
            want: Want::Applied,
            after: (320, 0, 320, 150, 350, None),
        },
        Case {
            name: "delete records above the high watermark is rejected",
            start: open_txn,
            ops: &[DeleteRecords(321)],
            want: Want::Rejected("above the high watermark 320"),
            after: (0, 0, 320, 150, 350, None),
        },
        Case {
            name: "delete records below the log start changes nothing",
            start: base,
            ops: &[DeleteRecords(120), DeleteRecords(50)],
            want: Want::Applied,
            after: (120, 0, 350, 350, 350, None),
        },
    ];
    for c in cases {
        let mut s = (c.start)();
        let (last, before) = c.ops.split_last().expect("at least one op");
        for op in before {
            let t = apply(&mut s, *op).unwrap_or_else(|e| panic!("{}: setup {op:?}: {e}", c.name));
            assert_eq!(t, Transition::Applied, "{}: setup {op:?}", c.name);
        }
        let got = apply(&mut s, *last);
        match (&c.want, got) {
            (Want::Applied, Ok(Transition::Applied)) => {}
            (Want::Deferred(m), Ok(Transition::Deferred(why))) => {
                assert!(why.contains(m), "{}: {why}", c.name)
            }
            (Want::Rejected(m), Err(e)) => {
                assert!(e.to_string().contains(m), "{}: {e}", c.name)
            }
            (want, got) => panic!("{}: wanted {want:?}, got {got:?}", c.name),
        }
        assert_eq!(snapshot(&s), c.after, "{}: state after", c.name);
        s.check().unwrap_or_else(|e| panic!("{}: state broken: {e}", c.name));
    }
}

#[test]
fn delete_records_lists_remote_to_clean() {
    struct Case {
        name: &'static str,
        requested: i64,
        clean: &'static [(i64, i64)],
    }
    let cases = [
        Case { name: "inside the second segment", requested: 150, clean: &[(0, 99)] },
        Case { name: "at a boundary", requested: 200, clean: &[(0, 99), (100, 199)] },
        Case { name: "before the first segment ends", requested: 50, clean: &[] },
    ];
    for c in cases {
        let mut s = base();
        s.copy_done(0).unwrap();
        s.copy_done(100).unwrap();
        let moved = s.delete_records(c.requested).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let got: Vec<(i64, i64)> = moved.remote_to_clean.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(got, c.clean, "{}: remote to clean", c.name);
        assert_eq!(moved.log_start_offset, c.requested, "{}: log start", c.name);
    }
}
