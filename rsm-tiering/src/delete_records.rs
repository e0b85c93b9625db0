//! DeleteRecords on a tiered partition (SR-25): the semantics are unchanged; the call moves the log start
//! offset and returns at once, and the remote segments now below it are cleaned asynchronously.

use super::segments::{RemoteSegment, check_remote};
use rsm_core::error::{Error, Result};

/// The offset a DeleteRecords request uses to mean "up to the high watermark" (Kafka's
/// `DeleteRecordsRequest.HIGH_WATERMARK`).
pub const DELETE_TO_HIGH_WATERMARK: i64 = -1;

/// The outcome of a DeleteRecords request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecordsOutcome {
    /// The log start offset after the request (Kafka's "low watermark" in the response).
    pub log_start_offset: i64,
    /// Whether the request moved the log start offset.
    pub moved: bool,
    /// Every remote segment now entirely below the log start offset, oldest first, for the host to
    /// delete asynchronously (a segment straddling the new log start stays). Segments left over from an
    /// earlier request whose cleanup has not run yet are listed again, so a failed cleanup is retried.
    pub remote_to_clean: Vec<RemoteSegment>,
}

/// The log start offset after a DeleteRecords request for `requested`: the requested offset when it is
/// above the current log start offset and at most the high watermark; the current one when it is not
/// above it. `-1` means the high watermark.
///
/// Errors: `requested` above the high watermark (Kafka answers `OFFSET_OUT_OF_RANGE`) or below -1; a
/// current log start offset that is negative or above the high watermark.
pub fn new_log_start(requested: i64, log_start_offset: i64, high_watermark: i64) -> Result<i64> {
    if log_start_offset < 0 || log_start_offset > high_watermark {
        return Err(Error::invalid(format!(
            "log start offset {log_start_offset} is outside [0, high watermark {high_watermark}]"
        )));
    }
    let target = match requested {
        DELETE_TO_HIGH_WATERMARK => high_watermark,
        r if r < 0 => {
            return Err(Error::invalid(format!(
                "DeleteRecords offset {r} is negative (only -1, the high watermark, is allowed)"
            )));
        }
        r if r > high_watermark => {
            return Err(Error::invalid(format!(
                "DeleteRecords offset {r} is above the high watermark {high_watermark} (OFFSET_OUT_OF_RANGE)"
            )));
        }
        r => r,
    };
    Ok(target.max(log_start_offset))
}

/// Applies a DeleteRecords request (SR-25): computes the new log start offset (see [`new_log_start`])
/// and the remote segments that must now be cleaned. Nothing waits for the cleanup.
pub fn delete_records(
    requested: i64,
    log_start_offset: i64,
    high_watermark: i64,
    remote: &[RemoteSegment],
) -> Result<DeleteRecordsOutcome> {
    check_remote(remote)?;
    let new = new_log_start(requested, log_start_offset, high_watermark)?;
    let remote_to_clean = remote.iter().take_while(|s| s.end_offset < new).copied().collect();
    Ok(DeleteRecordsOutcome { log_start_offset: new, moved: new > log_start_offset, remote_to_clean })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: i64, end: i64) -> RemoteSegment {
        RemoteSegment { start_offset: start, end_offset: end, size_bytes: 10, max_timestamp_ms: 0 }
    }

    #[test]
    fn delete_records_sr25() {
        struct Case {
            name: &'static str,
            requested: i64,
            log_start: i64,
            hw: i64,
            remote: Vec<RemoteSegment>,
            want: Result<(i64, bool, &'static [i64]), &'static str>,
        }
        let three = || vec![r(0, 99), r(100, 199), r(200, 299)];
        let cases = [
            Case {
                name: "moves the log start",
                requested: 150,
                log_start: 0,
                hw: 500,
                remote: three(),
                want: Ok((150, true, &[0])),
            },
            Case {
                name: "exactly at a segment boundary cleans that segment",
                requested: 200,
                log_start: 0,
                hw: 500,
                remote: three(),
                want: Ok((200, true, &[0, 100])),
            },
            Case {
                name: "up to the high watermark is allowed",
                requested: 500,
                log_start: 0,
                hw: 500,
                remote: three(),
                want: Ok((500, true, &[0, 100, 200])),
            },
            Case {
                name: "-1 means the high watermark",
                requested: -1,
                log_start: 0,
                hw: 250,
                remote: three(),
                want: Ok((250, true, &[0, 100])),
            },
            Case {
                name: "at or below the current log start changes nothing",
                requested: 50,
                log_start: 120,
                hw: 500,
                remote: three(),
                want: Ok((120, false, &[0])),
            },
            Case {
                name: "equal to the current log start changes nothing",
                requested: 120,
                log_start: 120,
                hw: 500,
                remote: vec![],
                want: Ok((120, false, &[])),
            },
            Case {
                name: "no remote segments",
                requested: 10,
                log_start: 0,
                hw: 500,
                remote: vec![],
                want: Ok((10, true, &[])),
            },
            Case {
                name: "above the high watermark",
                requested: 501,
                log_start: 0,
                hw: 500,
                remote: three(),
                want: Err("above the high watermark 500 (OFFSET_OUT_OF_RANGE)"),
            },
            Case {
                name: "negative other than -1",
                requested: -2,
                log_start: 0,
                hw: 500,
                remote: three(),
                want: Err("offset -2 is negative"),
            },
            Case {
                name: "log start above the high watermark",
                requested: 10,
                log_start: 600,
                hw: 500,
                remote: vec![],
                want: Err("outside [0, high watermark 500]"),
            },
            Case {
                name: "remote list out of order",
                requested: 10,
                log_start: 0,
                hw: 500,
                remote: vec![r(100, 199), r(0, 99)],
                want: Err("out of order"),
            },
        ];
        for c in cases {
            let got = delete_records(c.requested, c.log_start, c.hw, &c.remote);
            match c.want {
                Ok((start, moved, clean)) => {
                    let o = got.unwrap_or_else(|e| panic!("{}: {e}", c.name));
                    assert_eq!(o.log_start_offset, start, "{}: log start", c.name);
                    assert_eq!(o.moved, moved, "{}: moved", c.name);
                    let bases: Vec<i64> = o.remote_to_clean.iter().map(|s| s.start_offset).collect();
                    assert_eq!(bases, clean, "{}: remote to clean", c.name);
                }
                Err(msg) => {
                    let e = got.expect_err(c.name);
                    assert!(e.to_string().contains(msg), "{}: {e}", c.name);
                }
            }
        }
    }
}
