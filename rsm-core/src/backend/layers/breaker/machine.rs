//! The breaker's state machine: what a call is let through as, what its result does, and when the breaker
//! opens, probes and closes. Plain values and a clock passed in: no I/O, no locks.

use super::BreakerState;
use crate::error::Result;
use std::time::Duration;
use tokio::time::Instant;

/// What the state machine needs of the settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Policy {
    /// Transient failures in a row that open the breaker; 0 never opens it.
    pub(super) failures: u32,
    /// The first interval.
    pub(super) open: Duration,
    /// The longest interval, and the longest a probe holds the half-open state alone.
    pub(super) open_max: Duration,
}

/// Where the state machine is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
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
pub(super) struct Ticket {
    pub(super) generation: u64,
    pub(super) probe: bool,
}

/// Why a call fails at once: the failures in a row so far, the last one's message, and the time left until
/// the next probe (`None`: a probe is running).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Refusal {
    pub(super) failures: u32,
    pub(super) last: String,
    pub(super) wait: Option<Duration>,
}

/// How a call that reached the store ended, as the breaker sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// It succeeded.
    Success,
    /// It failed with a permanent error or a not-found: an answer from a store that is up.
    Answer,
    /// It failed transiently; the error as text.
    Transient(String),
}

impl Outcome {
    pub(super) fn of<T>(r: &Result<T>) -> Self {
        match r {
            Ok(_) => Outcome::Success,
            Err(e) if e.is_transient() => Outcome::Transient(e.to_string()),
            Err(_) => Outcome::Answer,
        }
    }
}

/// A change of state, to log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
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
pub(super) struct Machine {
    pub(super) phase: Phase,
    /// Changes with every change of phase; results of calls let through before the latest change are
    /// ignored.
    pub(super) generation: u64,
    /// Transient failures in a row (probes included).
    pub(super) streak: u32,
    /// The last transient failure's message.
    pub(super) last: String,
    /// The interval of the latest opening.
    pub(super) interval: Duration,
    /// When the breaker first opened in this run of failures.
    pub(super) down_since: Option<Instant>,
    /// The time spent open or half-open in the runs of failures that ended.
    pub(super) down_before: Duration,
}

impl Machine {
    pub(super) fn new() -> Self {
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
    pub(super) fn time_down(&self, now: Instant) -> Duration {
        self.down_before + self.down_since.map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
    }

    pub(super) fn state(&self, now: Instant) -> BreakerState {
        match self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { until } if now < until => BreakerState::Open,
            Phase::Open { .. } | Phase::Probing { .. } => BreakerState::HalfOpen,
        }
    }

    pub(super) fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.generation += 1;
    }

    /// Lets a call through at `now`, as an ordinary call or as the probe, or refuses it.
    pub(super) fn admit(&mut self, policy: &Policy, now: Instant) -> Result<(Ticket, Option<Change>), Refusal> {
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
    pub(super) fn record(&mut self, policy: &Policy, ticket: Ticket, outcome: Outcome, now: Instant) -> Option<Change> {
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

    pub(super) fn open(&mut self, now: Instant, reopened: bool) -> Change {
        self.enter(Phase::Open { until: now + self.interval });
        Change::Opened { failures: self.streak, interval: self.interval, last: self.last.clone(), reopened }
    }

    /// A caller gave up on the store at its own deadline (its calls were dropped unfinished, so none of them
    /// was recorded): a transient failure like any other. A probe given up this way (its drop just let the
    /// next call probe) counts as a failed probe.
    pub(super) fn gave_up(&mut self, policy: &Policy, last: String, now: Instant) -> Option<Change> {
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
    pub(super) fn abandon(&mut self, ticket: Ticket, now: Instant) {
        if ticket.probe && ticket.generation == self.generation && matches!(self.phase, Phase::Probing { .. }) {
            self.enter(Phase::Open { until: now });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
