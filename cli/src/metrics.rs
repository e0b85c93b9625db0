//! What tiering costs, where operators look: the requests and bytes of each topic
//! ([`rsm_facade::Store::requests_by_topic`]) as lines of a report ([`topic_lines`]) and in Prometheus's text
//! exposition format ([`exposition`]), served on `GET /metrics` by a small HTTP responder ([`serve`]) for
//! `rsm tier --watch --metrics-addr`.
//!
//! The responder is a thread of its own on a plain [`TcpListener`] (no HTTP server crate is in the tree):
//! one connection at a time, each with read and write timeouts, the request's head at most
//! [`MAX_HEAD`] bytes; `GET /metrics` is answered with the exposition, any other method with 405, any other
//! path with 404, anything unreadable with 400, and every connection is closed after one answer. Nothing a
//! client sends can stop it or make it panic.

use crate::output::human;
use rsm_core::backend::{CountSnapshot, Op};
use rsm_core::{Error, Result};
use rsm_facade::cost::{PriceTable, money};
use rsm_facade::{CountLevel, Store};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// The most bytes of a request's head read (the request line and headers); a longer one is refused.
pub const MAX_HEAD: usize = 8 << 10;

/// How long the responder waits for a client to send its request or take the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// A label value escaped as the exposition format asks: `\` as `\\`, `"` as `\"`, a newline as `\n`.
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The counters of every topic in Prometheus's text exposition format (version 0.0.4): the requests and
/// failed requests of each kind (label `op`) and the bytes sent and received, each labelled `topic`; with
/// a price table, what each topic's requests cost.
pub fn exposition(level: CountLevel, topics: &BTreeMap<String, CountSnapshot>, prices: Option<&PriceTable>) -> String {
    let what = level.describe();
    let mut out = String::new();
    let mut family = |name: &str, help: &str, kind: &str, lines: &mut dyn FnMut(&mut String, &str, &CountSnapshot)| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (topic, c) in topics {
            lines(&mut out, &escape_label(topic), c);
        }
    };
    let by_op = |name: &'static str, value: fn(&CountSnapshot, Op) -> u64| {
        move |out: &mut String, topic: &str, c: &CountSnapshot| {
            for op in Op::ALL {
                let _ = writeln!(out, "{name}{{topic=\"{topic}\",op=\"{}\"}} {}", op.name(), value(c, op));
            }
        }
    };
    family(
        "rsm_remote_requests_total",
        &format!("Requests sent to the remote store about the topic's objects, failed ones included ({what})."),
        "counter",
        &mut by_op("rsm_remote_requests_total", |c, op| c.get(op).requests),
    );
    family(
        "rsm_remote_requests_failed_total",
        &format!("Requests about the topic's objects that failed ({what})."),
        "counter",
        &mut by_op("rsm_remote_requests_failed_total", |c, op| c.get(op).failed),
    );
    family(
        "rsm_remote_bytes_sent_total",
        &format!("Bytes sent to the remote store about the topic's objects ({what})."),
        "counter",
        &mut |out: &mut String, topic: &str, c: &CountSnapshot| {
            let n: u64 = Op::ALL.iter().map(|op| c.get(*op).bytes_sent).sum();
            let _ = writeln!(out, "rsm_remote_bytes_sent_total{{topic=\"{topic}\"}} {n}");
        },
    );
    family(
        "rsm_remote_bytes_received_total",
        &format!("Bytes received from the remote store about the topic's objects ({what})."),
        "counter",
        &mut |out: &mut String, topic: &str, c: &CountSnapshot| {
            let n: u64 = Op::ALL.iter().map(|op| c.get(*op).bytes_received).sum();
            let _ = writeln!(out, "rsm_remote_bytes_received_total{{topic=\"{topic}\"}} {n}");
        },
    );
    if let Some(p) = prices {
        family(
            "rsm_remote_request_cost_total",
            "What the topic's requests cost at the cost.* prices, in their currency (kinds without a price count \
             nothing).",
            "counter",
            &mut |out: &mut String, topic: &str, c: &CountSnapshot| {
                let cost = p.estimate(c, None).requests;
                let _ = writeln!(out, "rsm_remote_request_cost_total{{topic=\"{topic}\"}} {cost}");
            },
        );
    }
    out
}

/// A report of the requests of each topic, a line each (`  orders: PUT 3 (3456 B sent)`), after a heading
/// saying what is counted; with a price table, each line ends with the estimate (and, for the topics in
/// `stored`, what their stored bytes cost a month). Empty when no topic had a request.
pub fn topic_lines(
    level: CountLevel,
    topics: &BTreeMap<String, CountSnapshot>,
    prices: Option<&PriceTable>,
    stored: &BTreeMap<String, u64>,
) -> Vec<String> {
    if topics.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("requests by topic ({}):", level.describe())];
    let mut total = 0.0;
    for (topic, c) in topics {
        let mut line = format!("  {topic}: {c}");
        if let Some(p) = prices {
            let bytes = stored.get(topic).copied();
            let e = p.estimate(c, bytes);
            total += e.requests;
            let _ = write!(line, "; cost {e}");
            if let (Some(b), Some(_)) = (bytes, e.storage_per_month) {
                let _ = write!(line, " ({} stored)", human(b));
            }
        }
        out.push(line);
    }
    if prices.is_some() {
        out.push(format!(
            "  estimated cost of these requests: {} (at the cost.* prices; check them against the provider's current list)",
            money(total)
        ));
    }
    out
}

/// Serves the exposition of `store`'s counters on `GET /metrics` at `addr` (a port of 0 takes a free one),
/// from a thread of its own for the life of the process. Returns the address bound.
pub fn serve(addr: &str, store: Arc<Store>) -> Result<SocketAddr> {
    let listener = TcpListener::bind(addr).map_err(|e| Error::from_io(format!("--metrics-addr {addr}"), e))?;
    let bound = listener.local_addr().map_err(|e| Error::from_io(format!("--metrics-addr {addr}"), e))?;
    std::thread::Builder::new()
        .name("rsm-metrics".into())
        .spawn(move || {
            for conn in listener.incoming() {
                match conn {
                    Ok(stream) => {
                        let _ = answer(stream, || {
                            let (level, topics) = store.requests_by_topic();
                            exposition(level, &topics, store.prices())
                        });
                    }
                    // A connection that failed before it was accepted, or too many open files: wait a little.
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        })
        .map_err(|e| Error::storage("the metrics thread", e))?;
    Ok(bound)
}

/// What a request asks for: the answer's status line, and whether it is the exposition.
fn route(head: &[u8]) -> (&'static str, bool) {
    let Ok(head) = std::str::from_utf8(head) else {
        return ("400 Bad Request", false);
    };
    let line = head.split("\r\n").next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return ("400 Bad Request", false);
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return ("400 Bad Request", false);
    }
    let path = target.split('?').next().unwrap_or(target);
    match (method, path) {
        ("GET", "/metrics") => ("200 OK", true),
        (_, "/metrics") => ("405 Method Not Allowed", false),
        _ => ("404 Not Found", false),
    }
}

/// Reads one request's head from `stream` and answers it, then closes the connection.
fn answer(mut stream: TcpStream, body: impl FnOnce() -> String) -> std::io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let complete = loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end);
            break true;
        }
        if head.len() > MAX_HEAD {
            break false;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    };
    let (status, ok) = if complete { route(&head) } else { ("400 Bad Request", false) };
    let (content_type, text) = match ok {
        true => ("text/plain; version=0.0.4; charset=utf-8", body()),
        false => ("text/plain; charset=utf-8", format!("{status}: only GET /metrics is served\n")),
    };
    let allow = if status.starts_with("405") { "Allow: GET\r\n" } else { "" };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(reply.as_bytes())?;
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Both);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::backend::RequestCounts;

    fn topics() -> BTreeMap<String, CountSnapshot> {
        let id = "AAAAAAAAAAAAAAAAAAAAAA";
        let c = RequestCounts::new();
        for _ in 0..3 {
            c.for_key(&format!("orders-{id}/0/a.log")).start(Op::Put, 100);
        }
        let g = c.for_key(&format!("we\"ird\\-{id}/0/a.log"));
        g.start(Op::Get, 0);
        g.add_received(Op::Get, 7);
        g.fail(Op::Get);
        c.topics()
    }

    #[test]
    fn the_exposition_has_a_line_per_topic_and_op_with_labels_escaped() {
        let text = exposition(CountLevel::Contract, &topics(), None);
        for want in [
            "# HELP rsm_remote_requests_total Requests sent to the remote store about the topic's objects, failed ones included (calls on the store).",
            "# TYPE rsm_remote_requests_total counter",
            "rsm_remote_requests_total{topic=\"orders\",op=\"PUT\"} 3",
            "rsm_remote_requests_total{topic=\"orders\",op=\"GET\"} 0",
            "rsm_remote_requests_total{topic=\"we\\\"ird\\\\\",op=\"GET\"} 1",
            "rsm_remote_requests_failed_total{topic=\"we\\\"ird\\\\\",op=\"GET\"} 1",
            "rsm_remote_bytes_sent_total{topic=\"orders\"} 300",
            "rsm_remote_bytes_received_total{topic=\"we\\\"ird\\\\\"} 7",
        ] {
            assert!(text.lines().any(|l| l == want), "no line {want} in\n{text}");
        }
        assert_eq!(text.lines().filter(|l| l.starts_with("rsm_remote_requests_total{")).count(), 2 * Op::ALL.len());
        assert!(!text.contains("cost"), "{text}");
        let prices = PriceTable::default().with_request_price(Op::Put, 0.005);
        let text = exposition(CountLevel::Store, &topics(), Some(&prices));
        assert!(text.contains("rsm_remote_request_cost_total{topic=\"orders\"} 0.000015"), "{text}");
        assert!(text.contains("(HTTP requests the store's client sent)"), "{text}");
        assert_eq!(escape_label("a\nb"), "a\\nb");
    }

    #[test]
    fn only_get_metrics_is_served() {
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\nHost: x"), ("200 OK", true));
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0"), ("200 OK", true));
        assert_eq!(route(b"POST /metrics HTTP/1.1").0, "405 Method Not Allowed");
        assert_eq!(route(b"GET / HTTP/1.1").0, "404 Not Found");
        assert_eq!(route(b"GET /metricsx HTTP/1.1").0, "404 Not Found");
        for bad in [
            &b"GET /metrics"[..],
            b"",
            b"\xff\xfe",
            b"GET  /metrics HTTP/1.1",
            b"GET metrics HTTP/1.1",
            b"GET /metrics SPDY/3",
        ] {
            assert_eq!(route(bad), ("400 Bad Request", false), "{bad:?}");
        }
    }

    #[test]
    fn the_report_names_what_is_counted_and_what_it_costs() {
        assert!(topic_lines(CountLevel::Contract, &BTreeMap::new(), None, &BTreeMap::new()).is_empty());
        let lines = topic_lines(CountLevel::Contract, &topics(), None, &BTreeMap::new());
        assert_eq!(
            lines,
            [
                "requests by topic (calls on the store):",
                "  orders: PUT 3 (300 B sent)",
                "  we\"ird\\: GET 1 (7 B received, 1 failed)",
            ]
        );
        let prices = PriceTable::default().with_request_price(Op::Put, 0.005).with_storage_price(0.023);
        let stored = BTreeMap::from([("orders".to_string(), 1u64 << 30)]);
        let lines = topic_lines(CountLevel::Contract, &topics(), Some(&prices), &stored);
        assert_eq!(
            lines[1],
            "  orders: PUT 3 (300 B sent); cost 0.000015 for requests, 0.023000 a month for storage (1.0 GiB stored)"
        );
        assert_eq!(
            lines[2],
            "  we\"ird\\: GET 1 (7 B received, 1 failed); cost 0.000000 for requests (not priced: GET 1)"
        );
        assert!(lines[3].starts_with("  estimated cost of these requests: 0.000015 "), "{}", lines[3]);
    }
}
