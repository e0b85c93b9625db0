//! A circuit breaker per store: while a store is down, calls fail at once instead of each waiting out its
//! own timeouts and retries, so a broker's few remote-reader threads are not all taken by a dead store. See
//! [`BreakerLayer`].

use super::{Layer, LayeredBackend};
use crate::backend::{ByteStream, IncompleteUpload, ObjectMeta, StorageBackend, TemporaryObject};
use crate::config::{ConfigReader, Setting, Unit};
use crate::error::{Error, ErrorKind, Result};
use async_trait::async_trait;
use bytes::Bytes;
use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The state of a breaker (see [`BreakerLayer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls pass; transient failures in a row are counted.
    Closed,
    /// Calls fail at once, without reaching the store, until the interval has passed.
    Open,
    /// The interval has passed: the next call probes the store (or a probe is running, and the other calls
    /// fail at once).
    HalfOpen,
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        })
    }
}

/// What the state machine needs of the settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Policy {
    /// Transient failures in a row that open the breaker; 0 never opens it.
    failures: u32,
    /// The first interval.
    open: Duration,
    /// The longest interval, and the longest a probe holds the half-open state alone.
    open_max: Duration,
}

/// Where the state machine is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Closed,
    /// Calls fail at once until `until`; the first call after it probes.
    Open {
        until: Instant,
    },
    /// A probe began at `since` and has not finished.
    Probing {
        since: Instant,
    },
}

/// A call's leave to go to the store: the state it was let through in (its `generation`), and whether it
/// is the probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ticket {
    generation: u64,
    probe: bool,
}

/// Why a call fails at once: the failures in a row so far, the last one's message, and the time left until
/// the next probe (`None`: a probe is running).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Refusal {
    failures: u32,
    last: String,
    wait: Option<Duration>,
}

/// How a call that reached the store ended, as the breaker sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// It succeeded.
    Success,
    /// It failed with a permanent error or a not-found: an answer from a store that is up.
    Answer,
    /// It failed transiently; the error as text.
    Transient(String),
}

impl Outcome {
    fn of<T>(r: &Result<T>) -> Self {
        match r {
            Ok(_) => Outcome::Success,
            Err(e) if e.is_transient() => Outcome::Transient(e.to_string()),
            Err(_) => Outcome::Answer,
        }
    }
}

/// The field ([`Error::field`]) that marks a call the breaker refused.
const REFUSED: &str = "refused";

/// Whether `e` is a call the breaker refused (no request was sent): a caller with a deadline may wait for
/// the breaker to let a call through ([`BreakerStats::until_admitted`]) rather than fail at once.
pub fn is_refusal(e: &Error) -> bool {
    e.field(REFUSED).is_some()
}

/// A change of state, to log.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Change {
    /// Opened for `interval`, after `failures` transient failures in a row, the last `last`; `reopened`
    /// when a probe failed.
    Opened { failures: u32, interval: Duration, last: String, reopened: bool },
    /// A call probes the store.
    Probing,
    /// Closed after a probe's answer, `down` after it first opened.
    Closed { failures: u32, down: Duration },
}

/// The breaker's state machine, without a store or a clock of its own: every step is given the time.
#[derive(Debug)]
struct Machine {
    phase: Phase,
    /// Changes with every change of phase; results of calls let through before the latest change are
    /// ignored.
    generation: u64,
    /// Transient failures in a row (probes included).
    streak: u32,
    /// The last transient failure's message.
    last: String,
    /// The interval of the latest opening.
    interval: Duration,
    /// When the breaker first opened in this run of failures.
    down_since: Option<Instant>,
    /// The time spent open or half-open in the runs of failures that ended.
    down_before: Duration,
}

impl Machine {
    fn new() -> Self {
        Machine {
            phase: Phase::Closed,
            generation: 0,
            streak: 0,
            last: String::new(),
            interval: Duration::ZERO,
            down_since: None,
            down_before: Duration::ZERO,
        }
    }

    /// The time spent open or half-open (not closed) in all, up to `now`.
    fn time_down(&self, now: Instant) -> Duration {
        self.down_before + self.down_since.map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
    }

    fn state(&self, now: Instant) -> BreakerState {
        match self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { until } if now < until => BreakerState::Open,
            Phase::Open { .. } | Phase::Probing { .. } => BreakerState::HalfOpen,
        }
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.generation += 1;
    }

    /// Lets a call through at `now`, as an ordinary call or as the probe, or refuses it.
    fn admit(&mut self, policy: &Policy, now: Instant) -> Result<(Ticket, Option<Change>), Refusal> {
        let probe_due = match self.phase {
            Phase::Closed => return Ok((Ticket { generation: self.generation, probe: false }, None)),
            Phase::Open { until } => now >= until,
            // A probe running this long no longer holds the state alone (a long upload, a hung request).
            Phase::Probing { since } => now.duration_since(since) >= policy.open_max,
        };
        if probe_due {
            self.enter(Phase::Probing { since: now });
            return Ok((Ticket { generation: self.generation, probe: true }, Some(Change::Probing)));
        }
        let wait = match self.phase {
            Phase::Open { until } => Some(until.duration_since(now)),
            _ => None,
        };
        Err(Refusal { failures: self.streak, last: self.last.clone(), wait })
    }

    /// Takes in how a call let through with `ticket` ended, at `now`.
    fn record(&mut self, policy: &Policy, ticket: Ticket, outcome: Outcome, now: Instant) -> Option<Change> {
        if ticket.generation != self.generation {
            return None;
        }
        match (self.phase, outcome) {
            (Phase::Closed, Outcome::Transient(last)) => {
                self.streak = self.streak.saturating_add(1);
                self.last = last;
                if policy.failures == 0 || self.streak < policy.failures {
                    return None;
                }
                self.interval = policy.open;
                self.down_since = Some(now);
                Some(self.open(now, false))
            }
            (Phase::Closed, _) => {
                self.streak = 0;
                None
            }
            (Phase::Probing { .. }, Outcome::Transient(last)) => {
                self.streak = self.streak.saturating_add(1);
                self.last = last;
                self.interval = self.interval.saturating_mul(2).min(policy.open_max.max(policy.open));
                Some(self.open(now, true))
            }
            (Phase::Probing { .. }, _) => {
                let change = Change::Closed {
                    failures: self.streak,
                    down: self.down_since.map_or(Duration::ZERO, |t| now.duration_since(t)),
                };
                self.enter(Phase::Closed);
                self.streak = 0;
                self.interval = Duration::ZERO;
                self.down_before += self.down_since.map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
                self.down_since = None;
                Some(change)
            }
            // No call is let through while open.
            (Phase::Open { .. }, _) => None,
        }
    }

    fn open(&mut self, now: Instant, reopened: bool) -> Change {
        self.enter(Phase::Open { until: now + self.interval });
        Change::Opened { failures: self.streak, interval: self.interval, last: self.last.clone(), reopened }
    }

    /// A caller gave up on the store at its own deadline (its calls were dropped unfinished, so none of them
    /// was recorded): a transient failure like any other. A probe given up this way (its drop just let the
    /// next call probe) counts as a failed probe.
    fn gave_up(&mut self, policy: &Policy, last: String, now: Instant) -> Option<Change> {
        match self.phase {
            Phase::Open { until } if until <= now && self.down_since.is_some() => {
                self.streak = self.streak.saturating_add(1);
                self.last = last;
                self.interval = self.interval.saturating_mul(2).min(policy.open_max.max(policy.open));
                Some(self.open(now, true))
            }
            Phase::Open { .. } => None,
            Phase::Closed | Phase::Probing { .. } => {
                let ticket = Ticket { generation: self.generation, probe: matches!(self.phase, Phase::Probing { .. }) };
                self.record(policy, ticket, Outcome::Transient(last), now)
            }
        }
    }

    /// The probe let through with `ticket` was given up by its caller before it ended: the next call
    /// probes at once.
    fn abandon(&mut self, ticket: Ticket, now: Instant) {
        if ticket.probe && ticket.generation == self.generation && matches!(self.phase, Phase::Probing { .. }) {
            self.enter(Phase::Open { until: now });
        }
    }
}

/// The state and counters of one store's breaker, shared by the [`BreakerConfig`] that made it and every
/// [`BreakerLayer`] of that config, for a metrics face to read.
pub struct BreakerStats {
    machine: Mutex<Machine>,
    opened: AtomicU64,
    refused: AtomicU64,
    /// The policy and the store's name of the layer made last (one per store), for [`BreakerStats::gave_up`].
    layer: Mutex<Option<(Policy, String)>>,
}

impl BreakerStats {
    fn new() -> Self {
        BreakerStats {
            machine: Mutex::new(Machine::new()),
            opened: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            layer: Mutex::new(None),
        }
    }

    /// Tells the breaker that a caller gave up waiting on the store at its own deadline (the facade's
    /// `fetch.timeout.ms`, `copy.timeout.ms`): the calls it dropped never ended, so the breaker saw no failure,
    /// and a store that hangs would never open it. Counts as one transient failure, `what` its message. No
    /// effect before a layer of this breaker is made.
    pub fn gave_up(&self, what: &str) {
        let Some((policy, store)) = self.layer.lock().unwrap_or_else(|p| p.into_inner()).clone() else { return };
        let change = self.machine().gave_up(&policy, what.to_string(), Instant::now());
        if let Some(change) = change {
            if matches!(change, Change::Opened { .. }) {
                self.opened.fetch_add(1, Ordering::Relaxed);
            }
            log_change(&store, &change);
        }
    }

    fn machine(&self) -> std::sync::MutexGuard<'_, Machine> {
        self.machine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state now.
    pub fn state(&self) -> BreakerState {
        self.machine().state(Instant::now())
    }

    /// The times the breaker opened (a failed probe opening it again included), since it was made.
    pub fn times_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// The calls that failed at once, without reaching the store, since it was made.
    pub fn calls_refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// How long until the breaker may let a call through: zero when closed, or when the interval is over
    /// and the next call probes; the rest of the interval when open; `None` while a probe runs (its end is
    /// not known).
    pub fn until_admitted(&self) -> Option<Duration> {
        let now = Instant::now();
        match self.machine().phase {
            Phase::Closed => Some(Duration::ZERO),
            Phase::Open { until } => Some(until.saturating_duration_since(now)),
            Phase::Probing { .. } => None,
        }
    }

    /// The time the breaker spent open or half-open (the store taken as down), since it was made.
    pub fn time_down(&self) -> Duration {
        self.machine().time_down(Instant::now())
    }
}

impl fmt::Debug for BreakerStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerStats")
            .field("state", &self.state())
            .field("opened", &self.times_opened())
            .field("refused", &self.calls_refused())
            .finish()
    }
}

/// The settings of a store's breaker (`store.breaker.*`), and the [`Layer`] of a [`BreakerLayer`]. Every
/// layer one config makes (and its clones) shares one state and one [`BreakerStats`]: make one per store.
#[derive(Clone, Debug)]
pub struct BreakerConfig {
    /// [`Self::FAILURES`]: transient failures in a row that open the breaker; 0: no breaker (the layer is
    /// not stacked).
    pub failures: u32,
    /// [`Self::OPEN_MS`]: how long calls fail at once after it opens, before one call probes.
    pub open: Duration,
    /// [`Self::OPEN_MAX_MS`]: the longest interval, however many probes failed.
    pub open_max: Duration,
    /// How messages and logs name the store; empty: "the store".
    store: String,
    stats: Arc<BreakerStats>,
}

impl Default for BreakerConfig {
    /// The declared defaults, for a store with no name.
    fn default() -> Self {
        BreakerConfig {
            failures: Self::FAILURES.default_int(),
            open: Duration::from_millis(Self::OPEN_MS.default_int()),
            open_max: Duration::from_millis(Self::OPEN_MAX_MS.default_int()),
            store: String::new(),
            stats: Arc::new(BreakerStats::new()),
        }
    }
}

impl BreakerConfig {
    /// `store.breaker.failures`.
    pub const FAILURES: Setting = Setting::int("store.breaker.failures", 0, 1_000).with_default(5).with_doc(
        "transient failures in a row (timeouts, refused or reset connections, 5xx, throttling; each after its \
         retries) after which calls to the store fail at once, without reaching it, for \
         `store.breaker.open.ms`, then one call probes it; a success, a permanent error or a not-found resets \
         the count; 0: off",
    );
    /// `store.breaker.open.ms`.
    pub const OPEN_MS: Setting =
        Setting::long("store.breaker.open.ms", 1, 600_000).with_default(1_000).with_unit(Unit::Millis).with_doc(
            "how long calls fail at once once the store failed `store.breaker.failures` times in a row, before \
             one call probes it; doubled each time a probe fails, up to `store.breaker.open.max.ms`",
        );
    /// `store.breaker.open.max.ms`.
    pub const OPEN_MAX_MS: Setting = Setting::long("store.breaker.open.max.ms", 1, 3_600_000)
        .with_default(5_000)
        .with_unit(Unit::Millis)
        .with_checks("not below `store.breaker.open.ms`")
        .with_doc(
            "the longest calls fail at once between two probes; also how long a probe runs alone before another \
             call may probe too",
        );

    /// The settings [`BreakerConfig::read`] reads, in the order the documentation lists them.
    pub const SETTINGS: [&'static Setting; 3] = [&Self::FAILURES, &Self::OPEN_MS, &Self::OPEN_MAX_MS];

    /// The keys [`BreakerConfig::read`] reads.
    pub const KEYS: [&'static str; 3] = [Self::FAILURES.key, Self::OPEN_MS.key, Self::OPEN_MAX_MS.key];

    /// Reads the settings from `r`, with the declared defaults for absent keys, and fresh stats.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Self> {
        let ms = |d: Duration| d.as_millis() as u64;
        let failures = r.get_int(&Self::FAILURES)?;
        let open = Duration::from_millis(r.get_int(&Self::OPEN_MS)?);
        let open_max = Duration::from_millis(r.get_int(&Self::OPEN_MAX_MS)?);
        if open_max < open {
            return Err(Error::config(
                Self::OPEN_MAX_MS.key,
                format!("{} ms is below {} ({} ms)", ms(open_max), Self::OPEN_MS.key, ms(open)),
            ));
        }
        Ok(BreakerConfig { failures, open, open_max, ..BreakerConfig::default() })
    }

    /// The same settings, naming the store `url` in messages and logs, without any `user:password@`,
    /// query or fragment it has.
    pub fn for_store(mut self, url: &str) -> Self {
        self.store = shown_url(url);
        self
    }

    /// Whether there is a breaker at all (`store.breaker.failures` is not 0).
    pub fn enabled(&self) -> bool {
        self.failures > 0
    }

    /// The state and counters of the breaker this config's layers share.
    pub fn stats(&self) -> Arc<BreakerStats> {
        self.stats.clone()
    }

    fn policy(&self) -> Policy {
        Policy { failures: self.failures, open: self.open, open_max: self.open_max }
    }
}

/// `url` without the parts that may hold secrets: a `user:password@` and a query or fragment.
fn shown_url(url: &str) -> String {
    let url = url.trim();
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// A [`BreakerConfig`] is the [`Layer`] of a [`BreakerLayer`] with its settings and state; when it is off
/// (`store.breaker.failures` 0) it stacks nothing and returns `inner` as it is.
impl Layer for BreakerConfig {
    fn layer(&self, inner: Arc<dyn StorageBackend>) -> Arc<dyn StorageBackend> {
        if !self.enabled() {
            return inner;
        }
        Arc::new(BreakerLayer::new(inner, self))
    }
}

/// Fails calls at once while the store below is failing, so a broker's few remote-reader threads are not
/// all taken waiting out a dead store's timeouts and retries. Every call but [`StorageBackend::open_local`]
/// (and the passed-through [`StorageBackend::store_requests`] and [`StorageBackend::capabilities`]) is
/// judged.
///
/// - **Closed** (the usual state): calls pass, and transient failures in a row are counted (any error that
///   [`crate::error::Error::is_transient`] says: timeouts, refused or reset connections, 5xx, throttling). A
///   success resets the count, and so does a permanent error or a not-found: those are answers from a store
///   that is up.
/// - **Open**: after `store.breaker.failures` transient failures in a row, every call fails at once,
///   without reaching the store, with a transient storage error naming the store, the failures and the
///   last of them, and how long until the next probe. The first interval is `store.breaker.open.ms`; each
///   failed probe doubles it, up to `store.breaker.open.max.ms`.
/// - **Half-open**: once the interval has passed, the next call is the probe and goes to the store; the
///   calls that come while it runs fail at once, as when open. A success, a permanent error or a
///   not-found closes the breaker (and the interval starts again from `store.breaker.open.ms`); a
///   transient failure opens it again for twice as long.
///
/// Each call is judged by its result as a whole: a call that returns a stream of bytes would be judged by
/// whether the stream could be opened, not by its bytes after that (no read of [`StorageBackend`] returns
/// a stream today; `put_stream` consumes its caller's stream and is judged by its result, a failure of the
/// caller's own stream included). [`StorageBackend::open_local`] passes through unjudged: it opens a file
/// of this machine, with no remote timeout to wait out. The results of calls that began before the
/// breaker last changed state are ignored (calls in flight when it opened do not open it again). A probe
/// whose caller gives up (drops the call) lets the next call probe at once; a probe still running after
/// `store.breaker.open.max.ms` (a long upload, a hung request) lets one more call probe too.
///
/// The breaker goes over the retry and counting layers: it judges whole calls after their retries, and a
/// call it refuses sends no request and is not counted as one. Every change of state is logged once (a
/// warning when it opens, with the failure; info when it closes; debug when a probe starts), never each
/// call. [`BreakerStats`] keeps the state and counters for metrics.
#[derive(Debug)]
pub struct BreakerLayer {
    inner: Arc<dyn StorageBackend>,
    store: String,
    policy: Policy,
    stats: Arc<BreakerStats>,
}

/// Lets the next call probe when a probe's caller gives up before the probe ends.
struct ProbeGuard<'a> {
    stats: &'a BreakerStats,
    ticket: Ticket,
    done: bool,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if !self.done && self.ticket.probe {
            self.stats.machine().abandon(self.ticket, Instant::now());
        }
    }
}

impl BreakerLayer {
    /// Wraps `inner` with the settings of `config`, sharing its state and [`BreakerStats`]. With
    /// `failures` 0 it never opens.
    pub fn new(inner: Arc<dyn StorageBackend>, config: &BreakerConfig) -> Self {
        let layer = BreakerLayer { inner, store: config.store.clone(), policy: config.policy(), stats: config.stats() };
        *layer.stats.layer.lock().unwrap_or_else(|p| p.into_inner()) = Some((layer.policy, layer.named()));
        layer
    }

    /// The state now.
    pub fn state(&self) -> BreakerState {
        self.stats.state()
    }

    /// The state and counters, shared with the config that made this layer.
    pub fn stats(&self) -> Arc<BreakerStats> {
        self.stats.clone()
    }

    /// The store, as messages name it.
    fn named(&self) -> String {
        if self.store.is_empty() { "the store".to_string() } else { format!("store {}", self.store) }
    }

    async fn run<T, Fut>(&self, operation: &'static str, key: &str, call: Fut) -> Result<T>
    where
        Fut: Future<Output = Result<T>> + Send,
    {
        let admitted = self.stats.machine().admit(&self.policy, Instant::now());
        let ticket = match admitted {
            Ok((ticket, change)) => {
                if let Some(change) = change {
                    self.log(&change);
                }
                ticket
            }
            Err(refusal) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                return Err(self.refused(refusal, operation, key));
            }
        };
        let mut guard = ProbeGuard { stats: &self.stats, ticket, done: false };
        let r = call.await;
        guard.done = true;
        let change = self.stats.machine().record(&self.policy, ticket, Outcome::of(&r), Instant::now());
        if let Some(change) = change {
            if matches!(change, Change::Opened { .. }) {
                self.stats.opened.fetch_add(1, Ordering::Relaxed);
            }
            self.log(&change);
        }
        r
    }

    /// The error of a call refused at once.
    fn refused(&self, refusal: Refusal, operation: &'static str, key: &str) -> Error {
        let Refusal { failures, last, wait } = refusal;
        let s = if failures == 1 { "" } else { "s" };
        let when = match wait {
            Some(wait) => format!("calls fail at once for {:.1} s more", wait.as_secs_f64()),
            None => "calls fail at once while one call probes it".to_string(),
        };
        let message =
            format!("{} is failing ({failures} transient failure{s} in a row, the last: {last}): {when}", self.named());
        Error::new(ErrorKind::Storage, message)
            .transient()
            .with_operation(operation)
            .with_field("key", key)
            .with_field(REFUSED, "by the store's circuit breaker, without a request")
    }

    fn log(&self, change: &Change) {
        log_change(&self.named(), change);
    }
}

/// Logs a change of state once: opening at WARN, closing at INFO, a probe at DEBUG.
fn log_change(store: &str, change: &Change) {
    match change {
        Change::Opened { failures, interval, last, reopened: false } => tracing::warn!(
            %store, failures, open_ms = interval.as_millis() as u64, error = %last,
            "the store is failing: calls fail at once for a while, then one call probes it"
        ),
        Change::Opened { failures, interval, last, reopened: true } => tracing::warn!(
            %store, failures, open_ms = interval.as_millis() as u64, error = %last,
            "the probe of the failing store failed: calls fail at once for longer"
        ),
        Change::Probing => tracing::debug!(%store, "one call probes the failing store"),
        Change::Closed { failures, down } => tracing::info!(
            %store, failures, down_ms = down.as_millis() as u64,
            "the store answers again: calls pass"
        ),
    }
}

#[async_trait]
impl LayeredBackend for BreakerLayer {
    fn inner(&self) -> &Arc<dyn StorageBackend> {
        &self.inner
    }

    async fn put_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        self.run("put_file", key, self.inner.put_file(key, path, len)).await
    }

    /// Judged by its result; refused, the stream is dropped unread.
    async fn put_stream(&self, key: &str, data: ByteStream) -> Result<()> {
        self.run("put_stream", key, self.inner.put_stream(key, data)).await
    }

    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        self.run("put_bytes", key, self.inner.put_bytes(key, bytes)).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.run("get_range", key, self.inner.get_range(key, range)).await
    }

    async fn get_tail(&self, key: &str, len: u64) -> Result<(Bytes, u64)> {
        self.run("get_tail", key, self.inner.get_tail(key, len)).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.run("delete", key, self.inner.delete(key)).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<()> {
        let first = keys.first().map_or("", String::as_str);
        self.run("delete_many", first, self.inner.delete_many(keys)).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        self.run("list", prefix, self.inner.list(prefix)).await
    }

    async fn list_temporary(&self, prefix: &str) -> Result<Vec<TemporaryObject>> {
        self.run("list_temporary", prefix, self.inner.list_temporary(prefix)).await
    }

    async fn list_incomplete_uploads(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        self.run("list_incomplete_uploads", prefix, self.inner.list_incomplete_uploads(prefix)).await
    }

    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<()> {
        self.run("abort_upload", key, self.inner.abort_upload(key, upload_id)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::layers::{Fault, FaultLayer, FaultRule};
    use crate::backend::{MemoryBackend, Op};
    use crate::config::props;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn transient(what: &str) -> Outcome {
        Outcome::Transient(what.to_string())
    }

    /// How the breaker took a call.
    #[derive(Debug, PartialEq, Eq)]
    enum Took {
        Passed,
        Probed,
        /// Refused, with the milliseconds left until the next probe (`None`: a probe is running).
        Refused(Option<u64>),
    }

    /// One call through the machine at `now`, ending as `outcome` if let through.
    fn call(m: &mut Machine, policy: &Policy, now: Instant, outcome: Outcome) -> Took {
        match m.admit(policy, now) {
            Ok((ticket, _)) => {
                m.record(policy, ticket, outcome, now);
                if ticket.probe { Took::Probed } else { Took::Passed }
            }
            Err(r) => Took::Refused(r.wait.map(|w| w.as_millis() as u64)),
        }
    }

    #[test]
    fn the_machine_opens_after_failures_in_a_row_probes_doubles_and_closes() {
        use BreakerState::{Closed, Open};
        use Took::{Passed, Probed, Refused};
        let policy = Policy { failures: 3, open: ms(1000), open_max: ms(4000) };
        let (t, s, a) = (|| transient("timed out"), || Outcome::Success, || Outcome::Answer);
        // (at ms, how the call ends if it reaches the store, how the breaker takes it, the state after)
        let steps: [(u64, Outcome, Took, BreakerState); 23] = [
            (0, t(), Passed, Closed),
            (0, t(), Passed, Closed),
            (0, a(), Passed, Closed), // a not-found or permanent error: the store answers
            (0, t(), Passed, Closed),
            (0, t(), Passed, Closed),
            (0, s(), Passed, Closed), // a success
            (0, t(), Passed, Closed),
            (0, t(), Passed, Closed),
            (0, t(), Passed, Open), // the third in a row: open for 1 s
            (999, s(), Refused(Some(1)), Open),
            (1000, t(), Probed, Open), // the probe fails: 2 s
            (2999, s(), Refused(Some(1)), Open),
            (3000, t(), Probed, Open), // 4 s
            (6999, s(), Refused(Some(1)), Open),
            (7000, t(), Probed, Open), // 8 s, capped at 4 s
            (10_999, s(), Refused(Some(1)), Open),
            (11_000, s(), Probed, Closed), // the probe succeeds
            (11_000, t(), Passed, Closed),
            (11_000, t(), Passed, Closed),
            (11_000, t(), Passed, Open), // back to 1 s
            (11_999, s(), Refused(Some(1)), Open),
            (12_000, a(), Probed, Closed), // a permanent answer closes it too
            (12_000, t(), Passed, Closed),
        ];
        let t0 = Instant::now();
        let mut m = Machine::new();
        for (i, (at, outcome, took, state)) in steps.into_iter().enumerate() {
            let now = t0 + ms(at);
            assert_eq!(call(&mut m, &policy, now, outcome), took, "step {i} at {at} ms");
            assert_eq!(m.state(now), state, "step {i} at {at} ms");
        }
        // Open, then half-open once the interval has passed, before any call.
        for _ in 0..2 {
            call(&mut m, &policy, t0 + ms(12_000), t());
        }
        assert_eq!(m.state(t0 + ms(12_999)), Open);
        assert_eq!(m.state(t0 + ms(13_000)), BreakerState::HalfOpen);
    }

    #[test]
    fn late_results_abandoned_and_long_probes() {
        let policy = Policy { failures: 2, open: ms(1000), open_max: ms(4000) };
        let t0 = Instant::now();
        let at = |m: u64| t0 + ms(m);
        let mut m = Machine::new();
        let tickets: Vec<Ticket> = (0..3).map(|_| m.admit(&policy, at(0)).unwrap().0).collect();
        assert_eq!(m.record(&policy, tickets[0], transient("first"), at(0)), None);
        let opened = m.record(&policy, tickets[1], transient("second"), at(0));
        let want = Change::Opened { failures: 2, interval: ms(1000), last: "second".into(), reopened: false };
        assert_eq!(opened, Some(want));
        // A call in flight when it opened: its failure neither counts nor opens it again.
        assert_eq!(m.record(&policy, tickets[2], transient("late"), at(500)), None);
        let refusal = m.admit(&policy, at(500)).unwrap_err();
        assert_eq!(refusal, Refusal { failures: 2, last: "second".into(), wait: Some(ms(500)) });

        let (p1, change) = m.admit(&policy, at(1000)).unwrap();
        assert_eq!((p1.probe, change), (true, Some(Change::Probing)));
        assert_eq!(m.admit(&policy, at(1000)).unwrap_err().wait, None, "one probe at a time");
        // Its caller gives up: the next call probes at once.
        m.abandon(p1, at(1500));
        let (p2, _) = m.admit(&policy, at(1500)).unwrap();
        assert!(p2.probe);
        assert_eq!(m.record(&policy, p1, Outcome::Success, at(1500)), None, "a given-up probe does not count");
        // A probe running for open.max no longer holds the state alone.
        assert!(m.admit(&policy, at(5499)).is_err());
        let (p3, _) = m.admit(&policy, at(5500)).unwrap();
        assert!(p3.probe);
        assert_eq!(m.record(&policy, p2, Outcome::Success, at(5500)), None, "superseded");
        assert_eq!(m.state(at(5500)), BreakerState::HalfOpen);
        assert_eq!(m.time_down(at(5500)), ms(5500), "down since it opened");
        let closed = m.record(&policy, p3, Outcome::Success, at(6000));
        assert_eq!(closed, Some(Change::Closed { failures: 2, down: ms(6000) }));
        assert_eq!(m.state(at(6000)), BreakerState::Closed);
        assert_eq!(m.time_down(at(9000)), ms(6000), "closed: the time down stays");
    }

    /// A caller that gives up at its own deadline (the facade's `fetch.timeout.ms`) drops its calls
    /// unfinished: each give-up counts as a transient failure, so a store that hangs opens the breaker; a
    /// probe given up that way (its drop lets the next call probe) is a failed probe, the interval doubled.
    #[test]
    fn callers_giving_up_open_it_and_fail_its_probes() {
        let policy = Policy { failures: 2, open: ms(1000), open_max: ms(4000) };
        let t0 = Instant::now();
        let at = |m: u64| t0 + ms(m);
        let mut m = Machine::new();
        assert_eq!(m.gave_up(&policy, "hung 1".into(), at(0)), None);
        let opened = m.gave_up(&policy, "hung 2".into(), at(500));
        let want = Change::Opened { failures: 2, interval: ms(1000), last: "hung 2".into(), reopened: false };
        assert_eq!(opened, Some(want));
        assert_eq!(m.gave_up(&policy, "while open".into(), at(600)), None, "nothing is let through while open");
        let (probe, _) = m.admit(&policy, at(1500)).unwrap();
        assert!(probe.probe);
        // The probe's caller gives up at its deadline: its drop first, then its report.
        m.abandon(probe, at(2000));
        let reopened = m.gave_up(&policy, "probe hung".into(), at(2000));
        let want = Change::Opened { failures: 3, interval: ms(2000), last: "probe hung".into(), reopened: true };
        assert_eq!(reopened, Some(want));
        assert_eq!(m.state(at(3999)), BreakerState::Open);
        // A success closes it as ever; a give-up then starts a new count.
        let (probe, _) = m.admit(&policy, at(4000)).unwrap();
        assert!(matches!(m.record(&policy, probe, Outcome::Success, at(4100)), Some(Change::Closed { .. })));
        assert_eq!(m.gave_up(&policy, "once".into(), at(4200)), None);
        assert_eq!(m.state(at(4200)), BreakerState::Closed);
    }

    fn config(failures: u32, open_ms: u64, max_ms: u64) -> BreakerConfig {
        BreakerConfig { failures, open: ms(open_ms), open_max: ms(max_ms), ..BreakerConfig::default() }
            .for_store("s3://user:secret@bucket/prefix?token=secret")
    }

    fn gets(key: &str, fault: Fault, times: Option<usize>) -> FaultRule {
        FaultRule { op: Some(Op::Get), key: key.into(), fault, times }
    }

    /// A memory store holding `a/k` and `ok/k`, under a fault layer with `rules`, under the breaker.
    async fn rig(config: &BreakerConfig, rules: Vec<FaultRule>) -> (Arc<FaultLayer>, Arc<dyn StorageBackend>) {
        let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        for key in ["a/k", "ok/k"] {
            store.put_bytes(key, Bytes::from_static(b"data")).await.unwrap();
        }
        let faults = Arc::new(FaultLayer::new(store));
        for rule in rules {
            faults.add_rule(rule);
        }
        let breaker = config.layer(faults.clone());
        assert!(format!("{breaker:?}").contains("BreakerLayer"), "{breaker:?}");
        (faults, breaker)
    }

    #[tokio::test(start_paused = true)]
    async fn after_n_transient_failures_calls_fail_at_once_without_reaching_the_store() {
        let c = config(5, 2000, 30_000);
        // Five transient failures, then a store that takes 10 s to answer.
        let rules = vec![gets("a/*", Fault::transient(), Some(5)), gets("a/*", Fault::Delay(ms(10_000)), None)];
        let (faults, b) = rig(&c, rules).await;
        for i in 1..=5 {
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            assert!(e.is_transient() && e.message().contains("injected fault"), "call {i}: {e}");
            let want = if i < 5 { BreakerState::Closed } else { BreakerState::Open };
            assert_eq!(c.stats().state(), want, "after call {i}");
        }
        assert_eq!(faults.calls(Op::Get), 5);

        let started = Instant::now();
        let e = b.get_range("a/k", 0..4).await.unwrap_err();
        assert_eq!(started.elapsed(), Duration::ZERO, "refused at once, not after the store's 10 s: {e}");
        assert_eq!(faults.calls(Op::Get), 5, "the refused call never reached the store");
        assert_eq!((e.kind(), e.is_transient()), (ErrorKind::Storage, true), "{e}");
        let shown = e.to_string();
        for want in [
            "store s3://bucket/prefix is failing",
            "(5 transient failures in a row, the last: retriable storage error: injected fault: get_range of a/k)",
            "calls fail at once for 2.0 s more",
            "operation get_range, key a/k",
        ] {
            assert!(shown.contains(want), "`{want}` in {shown}");
        }
        assert!(!shown.contains("secret"), "{shown}");

        // Every kind of call, not only reads.
        let put = b.put_bytes("a/new", Bytes::from_static(b"x")).await.unwrap_err();
        assert!(put.is_transient() && put.message().contains("is failing"), "{put}");
        assert!(b.list("a/").await.unwrap_err().message().contains("is failing"));
        assert!(b.delete("a/k").await.unwrap_err().message().contains("is failing"));
        assert_eq!((faults.calls(Op::Put), faults.calls(Op::List), faults.calls(Op::Delete)), (0, 0, 0));
        assert_eq!((c.stats().times_opened(), c.stats().calls_refused()), (1, 4));
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_interval_one_probe_goes_through_and_a_success_closes_it() {
        let c = config(2, 1000, 30_000);
        let (faults, b) = rig(&c, vec![gets("a/*", Fault::transient(), Some(2))]).await;
        for _ in 0..2 {
            b.get_range("a/k", 0..4).await.unwrap_err();
        }
        tokio::time::advance(ms(999)).await;
        assert_eq!(c.stats().state(), BreakerState::Open);
        b.get_range("a/k", 0..4).await.unwrap_err();
        assert_eq!(faults.calls(Op::Get), 2, "still open after 999 ms");

        tokio::time::advance(ms(1)).await;
        assert_eq!(c.stats().state(), BreakerState::HalfOpen);
        assert_eq!(&b.get_range("a/k", 0..4).await.unwrap()[..], b"data", "the probe");
        assert_eq!(faults.calls(Op::Get), 3);
        assert_eq!(c.stats().state(), BreakerState::Closed);
        for _ in 0..3 {
            assert_eq!(&b.get_range("a/k", 0..4).await.unwrap()[..], b"data");
        }
        assert_eq!(faults.calls(Op::Get), 6, "calls pass again");
        assert_eq!((c.stats().times_opened(), c.stats().calls_refused()), (1, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_probe_doubles_the_interval_up_to_the_cap() {
        let c = config(1, 1000, 5000);
        let (faults, b) = rig(&c, vec![gets("a/*", Fault::transient(), None)]).await;
        b.get_range("a/k", 0..4).await.unwrap_err();
        let mut interval = 1000;
        for (probe, next) in [2000, 4000, 5000, 5000].into_iter().enumerate() {
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            let want = format!("calls fail at once for {:.1} s more", interval as f64 / 1000.0);
            assert!(e.message().contains(&want), "before probe {probe}: `{want}` in {e}");
            tokio::time::advance(ms(interval - 1)).await;
            b.get_range("a/k", 0..4).await.unwrap_err();
            assert_eq!(faults.calls(Op::Get), 1 + probe, "refused until the interval has passed");
            tokio::time::advance(ms(1)).await;
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            assert!(e.message().contains("injected fault"), "probe {probe} reached the store: {e}");
            assert_eq!(faults.calls(Op::Get), 2 + probe);
            interval = next;
        }
        let e = b.get_range("a/k", 0..4).await.unwrap_err();
        assert!(e.message().contains("5 transient failures in a row"), "failed probes count: {e}");
        assert!(e.message().contains("for 5.0 s more"), "{e}");
        assert_eq!(c.stats().times_opened(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_errors_and_not_found_never_open_it() {
        // (case, the keys read in turn, reads that reach the store of 20, times opened)
        let cases: [(&str, &[&str], usize, u64); 6] = [
            ("not found", &["n/k"], 20, 0),
            ("a permanent error", &["p/k"], 20, 0),
            ("transient failures broken by a not-found", &["t/k", "t/k", "n/k"], 20, 0),
            ("transient failures broken by a permanent error", &["t/k", "t/k", "p/k"], 20, 0),
            ("transient failures broken by a success", &["t/k", "t/k", "ok/k"], 20, 0),
            ("transient failures in a row (the control)", &["t/k"], 3, 1),
        ];
        for (case, keys, reached, opened) in cases {
            let c = config(3, 1000, 30_000);
            let rules =
                vec![gets("t/*", Fault::transient(), None), gets("p/*", Fault::permanent(ErrorKind::Storage), None)];
            let (faults, b) = rig(&c, rules).await;
            for key in keys.iter().cycle().take(20) {
                let _ = b.get_range(key, 0..4).await;
            }
            assert_eq!(faults.calls(Op::Get), reached, "{case}");
            assert_eq!(c.stats().times_opened(), opened, "{case}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn calls_during_a_probe_are_refused() {
        let c = config(1, 1000, 30_000);
        let rules = vec![gets("a/*", Fault::transient(), Some(1)), gets("a/*", Fault::Delay(ms(5000)), Some(1))];
        let (faults, b) = rig(&c, rules).await;
        b.get_range("a/k", 0..4).await.unwrap_err();
        tokio::time::advance(ms(1000)).await;
        let probe = tokio::spawn({
            let b = b.clone();
            async move { b.get_range("a/k", 0..4).await }
        });
        for _ in 0..100 {
            if faults.calls(Op::Get) == 2 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(faults.calls(Op::Get), 2, "the probe reached the store");
        assert_eq!(c.stats().state(), BreakerState::HalfOpen);
        for _ in 0..3 {
            let e = b.get_range("a/k", 0..4).await.unwrap_err();
            assert!(e.is_transient() && e.message().contains("while one call probes it"), "{e}");
        }
        assert_eq!(faults.calls(Op::Get), 2, "only the probe reached the store");
        assert_eq!(&probe.await.unwrap().unwrap()[..], b"data");
        assert_eq!(c.stats().state(), BreakerState::Closed);
        b.get_range("a/k", 0..4).await.unwrap();
        assert_eq!((faults.calls(Op::Get), c.stats().calls_refused()), (3, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_its_caller_gives_up_lets_the_next_call_probe() {
        let c = config(1, 1000, 30_000);
        let rules = vec![gets("a/*", Fault::transient(), Some(1)), gets("a/*", Fault::Hang, Some(1))];
        let (faults, b) = rig(&c, rules).await;
        b.get_range("a/k", 0..4).await.unwrap_err();
        tokio::time::advance(ms(1000)).await;
        assert!(tokio::time::timeout(ms(2000), b.get_range("a/k", 0..4)).await.is_err(), "the probe hangs");
        assert_eq!(faults.calls(Op::Get), 2);
        assert_eq!(&b.get_range("a/k", 0..4).await.unwrap()[..], b"data", "the next call probes");
        assert_eq!((faults.calls(Op::Get), c.stats().state()), (3, BreakerState::Closed));
    }

    #[tokio::test(start_paused = true)]
    async fn no_failures_means_no_layer() {
        let p = props([("store.breaker.failures", "0")]);
        let off = BreakerConfig::read(&mut ConfigReader::new(&p)).unwrap();
        assert!(!off.enabled());
        let store: Arc<dyn StorageBackend> = Arc::new(MemoryBackend::new());
        let faults = Arc::new(FaultLayer::new(store).with_rule(gets("*", Fault::transient(), None)));
        let inner: Arc<dyn StorageBackend> = faults.clone();
        let stacked = off.layer(inner.clone());
        assert!(Arc::ptr_eq(&stacked, &inner), "nothing stacked: {stacked:?}");
        for _ in 0..20 {
            assert!(stacked.get_range("k", 0..1).await.unwrap_err().message().contains("injected fault"));
        }
        assert_eq!(faults.calls(Op::Get), 20);
        let on = BreakerConfig::default().layer(inner);
        assert!(format!("{on:?}").contains("BreakerLayer"), "{on:?}");
    }

    #[test]
    fn settings_are_read_and_checked() {
        let c = BreakerConfig::read(&mut ConfigReader::new(&std::collections::BTreeMap::new())).unwrap();
        assert_eq!((c.failures, c.open, c.open_max), (5, ms(1000), ms(5_000)));
        let p = props([("store.breaker.failures", "2"), ("store.breaker.open.ms", "50")]);
        let c = BreakerConfig::read(&mut ConfigReader::new(&p)).unwrap();
        assert_eq!((c.failures, c.open, c.open_max, c.enabled()), (2, ms(50), ms(5_000), true));
        let bad = [
            ("store.breaker.failures", "-1", "store.breaker.failures"),
            ("store.breaker.open.ms", "0", "store.breaker.open.ms"),
            ("store.breaker.open.ms", "40000", "store.breaker.open.max.ms"),
        ];
        for (key, value, at_fault) in bad {
            let p = props([(key, value)]);
            let e = BreakerConfig::read(&mut ConfigReader::new(&p)).unwrap_err();
            assert_eq!(e.config_key(), Some(at_fault), "{key}={value}: {e}");
        }
        let urls = [
            ("s3://bucket/prefix", "s3://bucket/prefix"),
            ("s3://user:pw@bucket/prefix", "s3://bucket/prefix"),
            ("az://container/p?sig=abc#f", "az://container/p"),
            ("hdfs://nn:8020/a@b", "hdfs://nn:8020/a@b"),
            ("memory:", "memory:"),
        ];
        for (url, shown) in urls {
            assert_eq!(shown_url(url), shown, "{url}");
        }
    }
}
