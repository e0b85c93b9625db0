//! The one request-accounting type: requests, failures and bytes by operation.
//!
//! Two places count into it: [`CountingLayer`](super::layers::CountingLayer), at the contract's level (one
//! upload is one request, whatever the store does underneath), and the cloud adapter's HTTP connector
//! (`rsm-backend-object-store`), which sees every real request, retry, multipart part and batch: the figures
//! a cloud bill is made of. Both give the same [`CountSnapshot`].
//!
//! Both also attribute each request to the topic whose object it is about ([`RequestCounts::for_key`]:
//! the topic in the key, the listing prefix or the request's path), so an operator sees what tiering
//! costs per topic ([`RequestCounts::topics`]); requests about no topic (a listing of the whole store)
//! count in the totals only.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Topics counted apart at most; the requests of topics beyond it count under [`OTHER_TOPICS`].
pub const MAX_TOPICS: usize = 10_000;

/// The name the requests of topics beyond [`MAX_TOPICS`] count under (not a valid topic name).
pub const OTHER_TOPICS: &str = "(other topics)";

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
    /// Answers that said the store is overloaded (counted in the totals only).
    throttled: AtomicU64,
    /// Failures the client would have retried, not retried to spare the store (counted in the totals only).
    retries_refused: AtomicU64,
    /// The same counts by topic (empty in a topic's own counters).
    topics: Mutex<HashMap<String, Arc<RequestCounts>>>,
}

/// Where one request counts: the totals, and the counters of the topic its key names.
#[derive(Debug, Clone)]
pub struct KeyCounts {
    all: Arc<RequestCounts>,
    topic: Option<Arc<RequestCounts>>,
}

impl KeyCounts {
    fn each(&self, f: impl Fn(&RequestCounts)) {
        f(&self.all);
        if let Some(t) = &self.topic {
            f(t);
        }
    }

    /// [`RequestCounts::start`] in both.
    pub fn start(&self, op: Op, sent: u64) {
        self.each(|c| c.start(op, sent));
    }

    /// [`RequestCounts::add_sent`] in both.
    pub fn add_sent(&self, op: Op, bytes: u64) {
        self.each(|c| c.add_sent(op, bytes));
    }

    /// [`RequestCounts::add_received`] in both.
    pub fn add_received(&self, op: Op, bytes: u64) {
        self.each(|c| c.add_received(op, bytes));
    }

    /// [`RequestCounts::fail`] in both.
    pub fn fail(&self, op: Op) {
        self.each(|c| c.fail(op));
    }
}

impl RequestCounts {
    /// Fresh counters.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Where a request about `key` (an object key, a listing prefix, a request's path) counts: here, and
    /// in the counters of its topic ([`crate::partition_dir::topic_of_key`]) when it names one.
    pub fn for_key(self: &Arc<Self>, key: &str) -> KeyCounts {
        let topic = crate::partition_dir::topic_of_key(key).map(|t| {
            let mut topics = self.topics.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = topics.get(t) {
                return c.clone();
            }
            let name = if topics.len() < MAX_TOPICS { t } else { OTHER_TOPICS };
            topics.entry(name.to_string()).or_default().clone()
        });
        KeyCounts { all: self.clone(), topic }
    }

    /// The counts so far of each topic that had a request, by name.
    pub fn topics(&self) -> BTreeMap<String, CountSnapshot> {
        let topics = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        topics.iter().map(|(t, c)| (t.clone(), c.snapshot())).collect()
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

    /// Counts an answer that said the store is overloaded (HTTP 429, 503), already counted as failed.
    pub fn throttle(&self) {
        self.throttled.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failure the client did not retry to spare the store (its retry budget was spent).
    pub fn refuse_retry(&self) {
        self.retries_refused.fetch_add(1, Ordering::Relaxed);
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
        out.throttled = self.throttled.load(Ordering::Relaxed);
        out.retries_refused = self.retries_refused.load(Ordering::Relaxed);
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
    /// Answers that said the store is overloaded ([`RequestCounts::throttle`]).
    pub throttled: u64,
    /// Failures not retried to spare the store ([`RequestCounts::refuse_retry`]).
    pub retries_refused: u64,
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
        out.throttled = self.throttled - earlier.throttled;
        out.retries_refused = self.retries_refused - earlier.retries_refused;
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
        if self.throttled > 0 {
            write!(f, "; {} throttled", self.throttled)?;
        }
        if self.retries_refused > 0 {
            write!(f, "; {} not retried (retry budget spent)", self.retries_refused)?;
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

        // Throttled answers and refused retries, in the totals.
        c.start(Op::Get, 0);
        c.fail(Op::Get);
        c.throttle();
        c.refuse_retry();
        let d = c.snapshot().since(&b);
        assert_eq!(d.to_string(), "GET 1 (1 failed); 1 throttled; 1 not retried (retry budget spent)");
        assert_eq!((d.throttled, d.retries_refused), (1, 1));
    }

    #[test]
    fn requests_count_in_the_totals_and_in_their_topic() {
        let id = "AAAAAAAAAAAAAAAAAAAAAA";
        let c = RequestCounts::new();
        c.for_key(&format!("p/orders-{id}/0/a.log")).start(Op::Put, 100);
        c.for_key(&format!("p/orders-{id}/1/b.log")).start(Op::Put, 50);
        let g = c.for_key(&format!("p/clicks-{id}/0/c.log"));
        g.start(Op::Get, 0);
        g.add_received(Op::Get, 7);
        g.fail(Op::Get);
        c.for_key("p/").start(Op::List, 0);
        assert_eq!(c.snapshot().to_string(), "PUT 2 (150 B sent), GET 1 (7 B received, 1 failed), LIST 1");
        let topics: Vec<(String, String)> = c.topics().into_iter().map(|(t, s)| (t, s.to_string())).collect();
        assert_eq!(
            topics,
            [
                ("clicks".to_string(), "GET 1 (7 B received, 1 failed)".to_string()),
                ("orders".to_string(), "PUT 2 (150 B sent)".to_string())
            ]
        );
    }

    #[test]
    fn topics_beyond_the_bound_count_together() {
        let id = "AAAAAAAAAAAAAAAAAAAAAA";
        let c = RequestCounts::new();
        for t in 0..MAX_TOPICS + 5 {
            c.for_key(&format!("t{t}-{id}/0/a.log")).start(Op::Get, 0);
        }
        c.for_key(&format!("t0-{id}/0/a.log")).start(Op::Get, 0);
        let topics = c.topics();
        assert_eq!(topics.len(), MAX_TOPICS + 1);
        assert_eq!(topics[OTHER_TOPICS].get(Op::Get).requests, 5);
        assert_eq!(topics["t0"].get(Op::Get).requests, 2, "a topic counted apart stays apart");
        assert_eq!(c.snapshot().get(Op::Get).requests, MAX_TOPICS as u64 + 6);
    }
}
