//! SR-17 remote time retention against Kafka's compiled rule: every case's decision is made by Kafka 4.4.0's
//! own classes (`RLMExpirationTask.buildRetentionTimeData` and
//! `RemoteLogRetentionHandler.isSegmentBreachedByRetentionTime`, run by `tests/KafkaRetentionRule.java` on the
//! broker's class path) and compared with `expired_remote_segments` over that one segment.
//!
//! Needs `java` (17 or later) and `RSM_TEST_KAFKA_CLASSPATH`, the file holding the broker's class path, which
//! `eval "$(tools/servers/kafka.sh start)"` exports (`tools/servers/kafka.sh install` resolves it without
//! starting a broker: then export `RSM_TEST_KAFKA_CLASSPATH=~/.cache/rsm-servers/kafka-4.4.0.classpath`).
//! Without it the test fails, unless `RSM_SKIP_KAFKA=1` outside CI: then it says it is skipped.

use rsm_tiering::retention::{ExpiryReason, RetentionInput, expired_remote_segments};
use rsm_tiering::segments::RemoteSegment;
use rsm_tiering::settings::{Limit, RemoteRetention, SizeScope};
use std::io::Write;
use std::process::{Command, Stdio};

const DAY: i64 = 86_400_000;
/// A realistic now: 2025-06-15T00:00:00Z.
const NOW: i64 = 1_749_945_600_000;

/// The broker class path's file, or `None` when skipped locally.
fn classpath_file() -> Option<String> {
    rsm_core::testkit::test_server_vars(
        &["RSM_TEST_KAFKA_CLASSPATH"],
        "RSM_SKIP_KAFKA",
        "eval \"$(tools/servers/kafka.sh start)\"  # exports the Kafka broker's class path file",
    )
    .map(|v| v["RSM_TEST_KAFKA_CLASSPATH"].clone())
}

/// One case: now, `retention.ms` (-1 is unlimited) and the segment's largest timestamp.
type Case = (i64, i64, i64);

/// Boundary cases: ages equal to the retention and one ms either side, retention 0, timestamps in the future,
/// `now - retention.ms` just below, at and above the epoch, retentions far beyond now, and -1.
fn boundary_cases() -> Vec<Case> {
    let nows = [0, 1, 1000, 5000, 7 * DAY, NOW, i64::MAX];
    let retentions = [-1, 0, 1, 999, 1000, 1001, 5000, 7 * DAY, NOW - 1, NOW, NOW + 1, i64::MAX / 2, i64::MAX];
    let mut cases = Vec::new();
    for &now in &nows {
        for &retention in &retentions {
            let mut timestamps = vec![i64::MIN, -1, 0, 1, now - 1, now, now.saturating_add(1), i64::MAX];
            if retention >= 0 {
                let until = now - retention; // now >= 0 and retention >= 0: never overflows
                for d in [-2, -1, 0, 1, 2] {
                    if let Some(t) = until.checked_add(d) {
                        timestamps.push(t);
                    }
                }
            }
            for t in timestamps {
                cases.push((now, retention, t));
            }
        }
    }
    // The issue's example: retention.ms=5000 and a segment exactly 5000 ms old (Kafka keeps it).
    cases.push((NOW, 5000, NOW - 5000));
    cases.sort_unstable();
    cases.dedup();
    cases
}

/// Seeded random cases near the boundary and across the range (splitmix64, so every run asks the same).
fn random_cases(n: usize) -> Vec<Case> {
    let mut state: u64 = 0x5253_4d2d_3339_0006;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| {
            let now = match next() % 3 {
                0 => NOW + (next() % (1000 * DAY as u64)) as i64,
                1 => (next() % (30 * DAY as u64)) as i64,
                _ => (next() >> 1) as i64,
            };
            let retention = match next() % 5 {
                0 => -1,
                1 => (next() % 10_000) as i64,
                2 => (next() % (400 * DAY as u64)) as i64,
                3 => now.saturating_add((next() % 2000) as i64 - 1000).max(0),
                _ => (next() >> 1) as i64,
            };
            let until = if retention >= 0 { now - retention } else { now };
            let ts = match next() % 4 {
                0 => until.saturating_add((next() % 7) as i64 - 3),
                1 => until.saturating_add((next() % (2 * DAY as u64)) as i64 - DAY),
                2 => now.saturating_add((next() % 2001) as i64 - 1000),
                _ => next() as i64,
            };
            (now, retention, ts)
        })
        .collect()
}

/// Our decision: whether `expired_remote_segments` deletes a lone segment by time.
fn ours(now: i64, retention: i64, max_timestamp: i64) -> bool {
    let time_ms = match retention {
        -1 => Limit::Unlimited,
        r => Limit::AtMost(u64::try_from(r).expect("retention.ms is -1 or non-negative")),
    };
    let segments =
        [RemoteSegment { start_offset: 0, end_offset: 99, size_bytes: 1024, max_timestamp_ms: max_timestamp }];
    let plan = expired_remote_segments(&RetentionInput {
        segments: &segments,
        log_start_offset: 0,
        local_log_start_offset: 100,
        local_only_bytes: 0,
        retention: RemoteRetention { time_ms, bytes: Limit::Unlimited, size_scope: SizeScope::RemoteOnly },
        now_ms: now,
    })
    .unwrap_or_else(|e| panic!("now {now}, retention.ms {retention}, max timestamp {max_timestamp}: {e}"));
    match plan.delete.as_slice() {
        [] => false,
        [e] => {
            assert_eq!(
                e.reason,
                ExpiryReason::Time,
                "now {now}, retention.ms {retention}, max timestamp {max_timestamp}"
            );
            true
        }
        more => panic!("one segment in, {} deleted", more.len()),
    }
}

/// Kafka's decisions for `cases`, in order, from its compiled classes.
fn kafka(classpath_file: &str, cases: &[Case]) -> Vec<bool> {
    let classpath = std::fs::read_to_string(classpath_file)
        .unwrap_or_else(|e| panic!("reading the Kafka class path file {classpath_file}: {e}"));
    let program = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/KafkaRetentionRule.java");
    let mut child = Command::new("java")
        .arg("-cp")
        .arg(classpath.trim())
        .arg(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running `java` (Java 17 or later is needed) on {program}: {e}"));
    let mut input = String::new();
    for (now, retention, ts) in cases {
        input.push_str(&format!("{now} {retention} {ts}\n"));
    }
    {
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(input.as_bytes()).expect("writing the cases to java");
    }
    let out = child.wait_with_output().expect("waiting for java");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{program} failed ({}):\n{stderr}", out.status);
    eprint!("{stderr}");
    let stdout = String::from_utf8(out.stdout).expect("java's output is UTF-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), cases.len(), "one decision per case:\n{stdout}");
    lines
        .iter()
        .zip(cases)
        .map(|(line, &(now, retention, ts))| {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 4, "bad line from java: {line}");
            assert_eq!(
                (f[0].parse::<i64>().ok(), f[1].parse::<i64>().ok(), f[2].parse::<i64>().ok()),
                (Some(now), Some(retention), Some(ts)),
                "java answered another case: {line}"
            );
            match f[3] {
                "true" => true,
                "false" => false,
                other => panic!("bad decision from java: {other} in {line}"),
            }
        })
        .collect()
}

#[test]
fn remote_time_retention_is_kafkas() {
    let Some(classpath_file) = classpath_file() else { return };
    let mut cases = boundary_cases();
    let boundary = cases.len();
    cases.extend(random_cases(3000));
    let decisions = kafka(&classpath_file, &cases);
    let mut differ = Vec::new();
    let mut breached = 0;
    for (&(now, retention, ts), &k) in cases.iter().zip(&decisions) {
        breached += usize::from(k);
        if ours(now, retention, ts) != k {
            differ.push(format!("now {now}, retention.ms {retention}, max timestamp {ts}: Kafka deletes: {k}"));
        }
    }
    eprintln!(
        "{} cases ({boundary} boundary, {} random), {breached} deleted by Kafka, {} differ",
        cases.len(),
        cases.len() - boundary,
        differ.len()
    );
    // Both answers must occur, or the comparison proves little.
    assert!(breached > 100 && breached < cases.len() - 100, "{breached} of {} deleted", cases.len());
    assert!(differ.is_empty(), "{} of {} cases differ from Kafka:\n{}", differ.len(), cases.len(), differ.join("\n"));
}

#[test]
fn the_issue_example_is_kept_by_kafka() {
    let Some(classpath_file) = classpath_file() else { return };
    // retention.ms=5000, a segment whose largest timestamp is now - 5000: Kafka keeps it; 1 ms older goes.
    let cases = [(NOW, 5000, NOW - 5000), (NOW, 5000, NOW - 5001)];
    assert_eq!(kafka(&classpath_file, &cases), [false, true]);
    assert_eq!(cases.map(|(n, r, t)| ours(n, r, t)), [false, true]);
}
