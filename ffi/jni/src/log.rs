//! Rust `tracing` events, bridged to SLF4J in the broker's JVM.
//!
//! Events are formatted on the thread that emits them (a JNI caller or one of the runtime's I/O threads)
//! and queued; a daemon Java thread (`io.rsm.kafka.NativeLog`) takes them with [`poll`] and hands them to
//! SLF4J. Native threads therefore never attach to the JVM: an attached non-daemon thread would hold up the
//! JVM's exit, and a JNI call from a runtime thread could not see the plugin's class loader anyway.
//!
//! The level is the one SLF4J has for the `io.rsm` logger: Java passes it with [`set_max_level`] when the
//! plugin starts and again whenever it changes, and disabled events are not even formatted. The queue is
//! bounded; when Java cannot keep up, the oldest events are dropped and counted, never the caller blocked.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, Once};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

/// Events kept while Java is not taking them.
pub const QUEUE_CAPACITY: usize = 10_000;

/// Levels as Java numbers them: 0 off, 1 error, 2 warn, 3 info, 4 debug, 5 trace.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(3);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static QUEUE: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
static READY: Condvar = Condvar::new();
static NEXT_SPAN: AtomicU64 = AtomicU64::new(1);
static INSTALL: Once = Once::new();

fn level_number(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

/// The level an event is passed at: its own, but for the cloud client's (object_store's) INFO lines, which
/// come once per retried request and per broken answer (lines a second per partition on a store's bad day):
/// those go at DEBUG, as the plugin's own lines say once what changed (the breaker's state, a segment's
/// failing copy).
fn passed_level(md: &Metadata<'_>) -> u8 {
    let n = level_number(md.level());
    if n == 3 && md.target().starts_with("object_store") { 4 } else { n }
}

/// Sets the most verbose level passed to Java (0 = off ... 5 = trace).
pub fn set_max_level(level: i32) {
    MAX_LEVEL.store(level.clamp(0, 5) as u8, Ordering::Relaxed);
}

/// Events dropped because the queue was full.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Installs the bridge as the library's global `tracing` subscriber, and a panic hook that reports panics
/// through it (the panic itself is still caught at the JNI boundary). Idempotent.
pub fn install() {
    INSTALL.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Bridge);
        std::panic::set_hook(Box::new(|info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_string());
            let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            let thread = std::thread::current().name().unwrap_or("unnamed").to_string();
            tracing::error!(target: "rsm_jni::panic", "panic in thread '{thread}'{location}: {message}");
        }));
    });
}

/// Waits up to `timeout` for the next event, encoded as `<level digit><target>\u{1}<message>`.
pub fn poll(timeout: Duration) -> Option<String> {
    let q = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
    let (mut q, _) = READY.wait_timeout_while(q, timeout, |q| q.is_empty()).unwrap_or_else(|p| p.into_inner());
    q.pop_front()
}

fn push(line: String) {
    let mut q = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
    if q.len() >= QUEUE_CAPACITY {
        q.pop_front();
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
    q.push_back(line);
    drop(q);
    READY.notify_one();
}

/// Formats an event's fields: the message first, then `key=value` pairs.
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.rest, " {}={}", field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={:?}", field.name(), value);
        }
    }
}

struct Bridge;

impl Subscriber for Bridge {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // The level can change at run time: ask `enabled` every time.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        passed_level(metadata) <= MAX_LEVEL.load(Ordering::Relaxed)
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(NEXT_SPAN.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let md = event.metadata();
        let mut fields = Fields { message: String::new(), rest: String::new() };
        event.record(&mut fields);
        let mut line = String::with_capacity(md.target().len() + fields.message.len() + fields.rest.len() + 2);
        line.push(char::from(b'0' + passed_level(md)));
        line.push_str(md.target());
        line.push('\u{1}');
        line.push_str(&fields.message);
        line.push_str(&fields.rest);
        push(line);
    }

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_formatted_filtered_and_bounded() {
        let dispatch = tracing::Dispatch::new(Bridge);
        tracing::dispatcher::with_default(&dispatch, || {
            while poll(Duration::ZERO).is_some() {}
            set_max_level(3);
            tracing::info!(target: "rsm_core::tiered", segment = "s1", bytes = 10u64, "copied");
            tracing::debug!(target: "rsm_core::tiered", "not passed at info");
            assert_eq!(poll(Duration::ZERO).unwrap(), "3rsm_core::tiered\u{1}copied segment=s1 bytes=10");
            assert_eq!(poll(Duration::from_millis(10)), None);
            tracing::info!(target: "object_store::client::retry", "backing off");
            assert_eq!(poll(Duration::ZERO), None, "the cloud client's per-request lines are DEBUG");
            set_max_level(4);
            tracing::info!(target: "object_store::client::retry", "backing off");
            assert_eq!(poll(Duration::ZERO).unwrap(), "4object_store::client::retry\u{1}backing off");
            set_max_level(5);
            tracing::trace!(target: "t", "x={}", 1);
            assert_eq!(poll(Duration::ZERO).unwrap(), "5t\u{1}x=1");
            set_max_level(0);
            tracing::error!(target: "t", "off");
            assert_eq!(poll(Duration::ZERO), None);
            set_max_level(1);
            let before = dropped();
            for i in 0..QUEUE_CAPACITY + 5 {
                tracing::error!(target: "t", "{i}");
            }
            assert_eq!(dropped() - before, 5);
            assert_eq!(poll(Duration::ZERO).unwrap(), "1t\u{1}5", "the oldest events were dropped");
            while poll(Duration::ZERO).is_some() {}
            set_max_level(3);
        });
    }
}
