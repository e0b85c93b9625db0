//! The one request-accounting type: requests, failures and bytes by operation.
//!
//! Two places count into it: [`CountingLayer`](super::layers::CountingLayer), at the contract's level (one
//! upload is one request, whatever the store does underneath), and the cloud adapter's HTTP connector
//! (`rsm-backend-object-store`), which sees every real request, retry, multipart part and batch: the figures
//! a cloud bill is made of. Both give the same [`CountSnapshot`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The kinds of request counted. At the contract's level only `Put`, `Get`, `Delete` and `List` occur; an
/// HTTP counter uses them all (`List` is a GET that lists a bucket or container).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// An upload (a file, a stream, bytes; over HTTP a PUT: single uploads, parts, blocks, block lists).
    Put,
    /// An HTTP POST (S3 and GCS multipart create and complete, S3 batch delete).
    Post,
    /// A read of an object, whole or ranged.
    Get,
    /// An HTTP HEAD.
    Head,
    /// A delete (one key, or one bulk call; over HTTP a DELETE, multipart aborts included).
    Delete,
    /// A listing.
    List,
    /// Anything else.
    Other,
}

impl Op {
    /// Every operation, in display order.
    pub const ALL: [Op; 7] = [Op::Put, Op::Post, Op::Get, Op::Head, Op::Delete, Op::List, Op::Other];

    fn index(self) -> usize {
        self as usize
    }

    /// The upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "PUT",
            Op::Post => "POST",
            Op::Get => "GET",
            Op::Head => "HEAD",
            Op::Delete => "DELETE",
            Op::List => "LIST",
            Op::Other => "OTHER",
        }
    }
}

#[derive(Debug, Default)]
struct Cell {
    requests: AtomicU64,
    failed: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

/// Live counters, shared by whoever counts and whoever reads them.
#[derive(Debug, Default)]
pub struct RequestCounts {
    cells: [Cell; 7],
}

impl RequestCounts {
    /// Fresh counters.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Counts one request of `op` that sent `sent` bytes.
    pub fn start(&self, op: Op, sent: u64) {
        let c = &self.cells[op.index()];
        c.requests.fetch_add(1, Ordering::Relaxed);
        c.sent.fetch_add(sent, Ordering::Relaxed);
    }

    /// Adds bytes sent by a request of `op` already counted (a stream's pieces as they pass).
    pub fn add_sent(&self, op: Op, bytes: u64) {
        self.cells[op.index()].sent.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Adds bytes received by a request of `op`.
    pub fn add_received(&self, op: Op, bytes: u64) {
        self.cells[op.index()].received.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a request of `op` as failed.
    pub fn fail(&self, op: Op) {
        self.cells[op.index()].failed.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn snapshot(&self) -> CountSnapshot {
        let mut out = CountSnapshot::default();
        for (o, c) in out.by_op.iter_mut().zip(&self.cells) {
            *o = OpCount {
                requests: c.requests.load(Ordering::Relaxed),
                failed: c.failed.load(Ordering::Relaxed),
                bytes_sent: c.sent.load(Ordering::Relaxed),
                bytes_received: c.received.load(Ordering::Relaxed),
            };
        }
        out
    }
}

/// Requests and bytes of one operation at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCount {
    /// Requests made (each retry counts where the counter sees retries).
    pub requests: u64,
    /// Requests that failed (an error; over HTTP also a status of 400 or above).
    pub failed: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
}

/// A snapshot of [`RequestCounts`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountSnapshot {
    by_op: [OpCount; 7],
}

impl CountSnapshot {
    /// The counts of one operation.
    pub fn get(&self, op: Op) -> OpCount {
        self.by_op[op.index()]
    }

    /// All requests.
    pub fn total_requests(&self) -> u64 {
        self.by_op.iter().map(|c| c.requests).sum()
    }

    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &CountSnapshot) -> CountSnapshot {
        let mut out = CountSnapshot::default();
        for (o, (a, b)) in out.by_op.iter_mut().zip(self.by_op.iter().zip(&earlier.by_op)) {
            *o = OpCount {
                requests: a.requests - b.requests,
                failed: a.failed - b.failed,
                bytes_sent: a.bytes_sent - b.bytes_sent,
                bytes_received: a.bytes_received - b.bytes_received,
            };
        }
        out
    }
}

impl fmt::Display for CountSnapshot {
    /// `PUT 3 (67108864 B sent), POST 2, GET 1 (1048576 B received), ...`, skipping operations never used.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for op in Op::ALL {
            let c = self.get(op);
            if c.requests == 0 {
                continue;
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{} {}", op.name(), c.requests)?;
            let mut extra = Vec::new();
            if c.bytes_sent > 0 {
                extra.push(format!("{} B sent", c.bytes_sent));
            }
            if c.bytes_received > 0 {
                extra.push(format!("{} B received", c.bytes_received));
            }
            if c.failed > 0 {
                extra.push(format!("{} failed", c.failed));
            }
            if !extra.is_empty() {
                write!(f, " ({})", extra.join(", "))?;
            }
        }
        if first {
            f.write_str("no requests")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_print_and_subtract() {
        let c = RequestCounts::new();
        for _ in 0..3 {
            c.start(Op::Put, 0);
        }
        c.add_sent(Op::Put, 10);
        let a = c.snapshot();
        c.start(Op::Get, 0);
        c.add_received(Op::Get, 7);
        c.start(Op::Delete, 0);
        c.fail(Op::Delete);
        let b = c.snapshot();
        assert_eq!(a.to_string(), "PUT 3 (10 B sent)");
        assert_eq!(b.since(&a).to_string(), "GET 1 (7 B received), DELETE 1 (1 failed)");
        assert_eq!(b.total_requests(), 5);
        assert_eq!(b.get(Op::Put), OpCount { requests: 3, failed: 0, bytes_sent: 10, bytes_received: 0 });
        assert_eq!(CountSnapshot::default().to_string(), "no requests");
    }
}
