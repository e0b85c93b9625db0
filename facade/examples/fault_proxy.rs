//! The tests' fault-injecting HTTP proxy (`facade/tests/proxy/mod.rs`, the same module the Rust fault tests
//! use, not a copy) as a process of its own, for tests in other languages: the broker test
//! `java-bindings/src/test/java/io/rsm/kafka/BrokerStoreFaultsIT.java` puts it between a Kafka broker's plugin
//! and S3 (moto).
//!
//! ```text
//! cargo run -p rsm-facade --example fault_proxy -- http://127.0.0.1:PORT
//! ```
//! Prints `port N` (the proxy's loopback port) on stdout, then reads one command a line on stdin, and answers
//! each with one line on stdout:
//! - `pass`, `blackhole`, `refuse`, `reset N`, `slow FIRST_MS BYTES_PER_SEC`, `slowdown`: every request read
//!   from then on is treated so (`proxy::Fault`); answered `ok FAULT`;
//! - `stats`: `stats RECEIVED CONNECTIONS [FAULT=COUNT]...`, the requests received so far, the connections
//!   accepted so far, and the requests by the fault that applied to them (`Pass=120 SlowDown=7`).
//!
//! A command it does not know is answered `error ...`. It exits when stdin ends.

#[path = "../tests/proxy/mod.rs"]
mod proxy;

use proxy::{CountingProxy, Fault, by_fault};
use std::io::{BufRead, Write};

fn main() {
    let upstream = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: fault_proxy http://HOST:PORT (the store's plain-HTTP endpoint)");
        std::process::exit(2);
    });
    if !upstream.starts_with("http://") {
        eprintln!("fault_proxy: {upstream} is not a plain-HTTP endpoint (http://HOST:PORT)");
        std::process::exit(2);
    }
    let proxy = CountingProxy::in_front_of(&upstream);
    let mut out = std::io::stdout().lock();
    writeln!(out, "port {}", proxy.port).unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let answer = match command(&line) {
            Ok(Some(fault)) => {
                proxy.set_fault(fault);
                format!("ok {fault:?}")
            }
            Ok(None) => {
                let faults: Vec<String> = by_fault(&proxy.seen()).iter().map(|(f, n)| format!("{f}={n}")).collect();
                format!("stats {} {} {}", proxy.received(), proxy.connections(), faults.join(" "))
                    .trim_end()
                    .to_string()
            }
            Err(e) => format!("error {e}"),
        };
        if writeln!(out, "{answer}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}

/// The fault a command line sets, or `None` for `stats`.
fn command(line: &str) -> Result<Option<Fault>, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |i: usize| -> Result<u64, String> {
        let w = words.get(i).ok_or_else(|| format!("`{line}`: a number is missing"))?;
        w.parse().map_err(|_| format!("`{line}`: {w} is not a number"))
    };
    let fault = match words.first().copied() {
        Some("pass") => Fault::Pass,
        Some("blackhole") => Fault::Blackhole,
        Some("refuse") => Fault::Refuse,
        Some("reset") => Fault::ResetAfter(number(1)? as usize),
        Some("slow") => Fault::Slow { first_byte_ms: number(1)?, bytes_per_sec: number(2)? },
        Some("slowdown") => Fault::SlowDown,
        Some("stats") => return Ok(None),
        _ => {
            return Err(format!(
                "unknown command `{line}` (pass, blackhole, refuse, reset N, slow MS BPS, slowdown, stats)"
            ));
        }
    };
    Ok(Some(fault))
}
