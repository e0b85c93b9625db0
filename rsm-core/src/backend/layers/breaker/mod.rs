//! A circuit breaker per store: while a store is down, calls fail at once instead of each waiting out its
//! own timeouts and retries, so a broker's few remote-reader threads are not all taken by a dead store. See
//! [`BreakerLayer`].

use super::Layer;
use crate::backend::StorageBackend;
use crate::config::{ConfigReader, Setting, Unit};
use crate::error::{Error, Result};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

mod layer;
mod machine;

pub use layer::BreakerLayer;
use layer::log_change;
use machine::{Change, Machine, Phase, Policy};

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

/// The field ([`Error::field`]) that marks a call the breaker refused.
const REFUSED: &str = "refused";

/// Whether `e` is a call the breaker refused (no request was sent): a caller with a deadline may wait for
/// the breaker to let a call through ([`BreakerStats::until_admitted`]) rather than fail at once.
pub fn is_refusal(e: &Error) -> bool {
    e.field(REFUSED).is_some()
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
