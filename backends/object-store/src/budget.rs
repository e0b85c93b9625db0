//! A store's retry budget, and a longer wait when the store says it is overloaded: an HTTP layer under
//! object_store's own retries ([`BudgetConnector`], below the request counter).
//!
//! object_store retries each request on its own (timeouts, connection failures, 5xx, 429), with the same
//! short backoff whatever the failure, and each call decides alone. A store that is throttling (S3's `503
//! SlowDown`, Azure's `503 ServerBusy`, GCS's `429`) or down then sees up to `1 + max.retries` requests
//! per call: more than on a healthy day, which keeps it throttled. This layer makes retries a shared,
//! earned resource of the store, as the AWS SDKs' retry quota does:
//! - **A budget.** Each transient failure that may be retried spends one retry from the store's budget
//!   ([`RetryBudgetSettings::burst`] at most); each success earns back [`RetryBudgetSettings::share_percent`]
//!   of one. When the budget is spent, a failure is handed to object_store as one it does not retry (and
//!   that the SDK still classes as transient, for the broker to retry later), so retries stay a fixed
//!   share of requests over time: a store that fails every request sees about one request per call.
//! - **A throttling store is paced.** A `429` or `503` answer sets a time before which the store gets no
//!   request (a retry, or another call's): [`RetryBudgetSettings::throttle_backoff`] from the answer,
//!   doubled for each throttled answer in a row (capped at [`RetryBudgetSettings::throttle_backoff_max`]),
//!   less a random part of up to half ("equal jitter": requests throttled together spread out, and each
//!   waits at least half); on top of object_store's own backoff. The wait comes before a request, never
//!   after an answer, so the last answer of a call that will not be retried returns at once; and it is a
//!   time, not a count, so requests dropped while they wait (a fetch's deadline is shorter than a pause)
//!   do not keep the store paused: the first request after it goes. Any other answer ends it.
//!
//! Each change between "retrying" and "budget spent" is logged once, at WARN then at INFO.

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpResponseBody, HttpService,
};
use rsm_core::backend::RequestCounts;
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One retry, in the budget's units (thousandths of a retry, so a success can earn a fraction).
const RETRY: u64 = 1000;

/// The most of an error answer's body kept to show in the error (the rest is dropped unread).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// How a store's retries are budgeted, from the `<p>.retry.*` settings ([`crate::settings::ClientSettings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBudgetSettings {
    /// Retries the store may spend ahead of its successes (and the budget a fresh client starts with).
    pub burst: u32,
    /// The share of one retry each successful request earns back, in percent: retries stay at most this
    /// share of requests over time, beyond the burst.
    pub share_percent: u32,
    /// The first extra wait before retrying a throttled answer (429 or 503): between half of it and all of it.
    pub throttle_backoff: Duration,
    /// The longest extra wait before retrying a throttled answer.
    pub throttle_backoff_max: Duration,
}

/// A store's retry budget, shared by all its clients' requests.
#[derive(Debug)]
pub struct RetryBudget {
    settings: RetryBudgetSettings,
    state: Mutex<State>,
    /// Where throttled answers and refused retries are counted (the store's HTTP request counts).
    counts: Arc<RequestCounts>,
}

#[derive(Debug)]
struct State {
    /// What is left to spend, in thousandths of a retry.
    tokens: u64,
    /// Throttled answers in a row (a success or another failure resets it).
    throttled_in_a_row: u32,
    /// No request is sent before this (set by the last throttled answer): a time, not a wait, so a request
    /// dropped while it waits (its caller's deadline) neither extends nor keeps the pause.
    not_before: Option<Instant>,
    /// Whether the last failure found the budget spent (for logging each change once).
    spent: bool,
}

/// What the budget says of a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Let object_store retry it.
    Retry,
    /// The budget is spent: the failure is final.
    Final,
}

impl RetryBudget {
    /// A full budget, counting throttled answers and refused retries into `counts`
    /// ([`RequestCounts::throttle`], [`RequestCounts::refuse_retry`]).
    pub fn new(settings: RetryBudgetSettings, counts: Arc<RequestCounts>) -> Arc<Self> {
        Arc::new(RetryBudget {
            settings,
            state: Mutex::new(State {
                tokens: u64::from(settings.burst) * RETRY,
                throttled_in_a_row: 0,
                not_before: None,
                spent: false,
            }),
            counts,
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request succeeded (or failed for good, which is not the store's trouble): it earns back part of a
    /// retry.
    fn success(&self) {
        let mut s = self.state();
        let earned = u64::from(self.settings.share_percent) * RETRY / 100;
        s.tokens = (s.tokens + earned).min(u64::from(self.settings.burst) * RETRY);
        s.throttled_in_a_row = 0;
        s.not_before = None;
        if s.spent && s.tokens >= RETRY {
            s.spent = false;
            tracing::info!("the store answers again: its failures are retried again");
        }
    }

    /// A transient failure (`throttled`: the store said it is overloaded). Each one spends a retry, whether
    /// object_store retries it or not (it does not say).
    fn failure(&self, throttled: bool) -> Verdict {
        let mut s = self.state();
        if throttled {
            self.counts.throttle();
            s.throttled_in_a_row = s.throttled_in_a_row.saturating_add(1);
            s.not_before = Some(Instant::now() + self.pause(s.throttled_in_a_row));
        } else {
            s.throttled_in_a_row = 0;
            s.not_before = None;
        }
        if s.tokens < RETRY {
            self.counts.refuse_retry();
            if !s.spent {
                s.spent = true;
                tracing::warn!(
                    burst = self.settings.burst,
                    share_percent = self.settings.share_percent,
                    "the store's retry budget is spent: its failures are not retried until successes earn it back"
                );
            }
            return Verdict::Final;
        }
        s.tokens -= RETRY;
        Verdict::Retry
    }

    /// How long the next request waits before it is sent: nothing, unless the store's last answer said it is
    /// overloaded and its pause has not ended.
    fn pacing(&self) -> Duration {
        self.state().not_before.map_or(Duration::ZERO, |t| t.saturating_duration_since(Instant::now()))
    }

    /// The pause after `n` throttled answers in a row: the backoff doubled `n - 1` times, capped, less a
    /// random part of up to half.
    fn pause(&self, n: u32) -> Duration {
        let doubled = self.settings.throttle_backoff.saturating_mul(1 << n.saturating_sub(1).min(16));
        let cap = doubled.min(self.settings.throttle_backoff_max);
        let half = cap / 2;
        let jitter = getrandom::u64().unwrap_or(0) % (half.as_micros() as u64 + 1);
        half + Duration::from_micros(jitter)
    }
}

/// A failure the store's retry budget did not let object_store retry. The SDK classes it as transient
/// ([`crate::errors::classify`]): the caller may try again later.
#[derive(Debug)]
pub struct RetryBudgetSpent {
    what: String,
    source: Option<HttpError>,
}

impl fmt::Display for RetryBudgetSpent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; not retried: the store's retry budget is spent (too many of its requests failed)", self.what)
    }
}

impl StdError for RetryBudgetSpent {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn StdError + 'static))
    }
}

/// Whether `e` is a failure the store's retry budget refused to retry: a client's own retry loop (GCS's
/// uploads) must not retry it either.
pub fn retry_budget_spent(e: &object_store::Error) -> bool {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(c) = cur {
        if c.is::<RetryBudgetSpent>() {
            return true;
        }
        cur = c.source();
    }
    false
}

/// An [`HttpConnector`] whose clients spend and earn `budget` (see the module's documentation).
#[derive(Debug)]
pub struct BudgetConnector {
    inner: Arc<dyn HttpConnector>,
    budget: Arc<RetryBudget>,
}

impl BudgetConnector {
    /// Budgets the requests of `inner`'s clients with `budget`.
    pub fn new(inner: Arc<dyn HttpConnector>, budget: Arc<RetryBudget>) -> Self {
        BudgetConnector { inner, budget }
    }
}

impl HttpConnector for BudgetConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = self.inner.connect(options)?;
        Ok(HttpClient::new(BudgetService { inner, budget: self.budget.clone() }))
    }
}

#[derive(Debug)]
struct BudgetService {
    inner: HttpClient,
    budget: Arc<RetryBudget>,
}

/// Whether object_store retries an answer with this status (its rule: 5xx, 429, 408).
fn retried_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// Whether an answer with this status says the store is overloaded.
fn throttling(status: u16) -> bool {
    matches!(status, 429 | 503)
}

/// Reads up to [`MAX_ERROR_BODY`] of an error answer's body, for the error's message.
async fn read_error_body(body: HttpResponseBody) -> Bytes {
    let mut stream = body.bytes_stream();
    let mut kept = BytesMut::new();
    while let Some(Ok(piece)) = stream.next().await {
        let room = MAX_ERROR_BODY - kept.len();
        kept.extend_from_slice(&piece[..piece.len().min(room)]);
        if kept.len() == MAX_ERROR_BODY {
            break;
        }
    }
    kept.freeze()
}

/// The error code of an error document (S3's and Azure's XML `<Code>…</Code>`, GCS's JSON `"reason": "…"`),
/// for the message.
fn error_code(body: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(body).ok()?;
    let between = |open: &str, close: &str| {
        let start = text.find(open)? + open.len();
        let len = text[start..].find(close)?;
        Some(&text[start..start + len])
    };
    let code = between("<Code>", "</Code>").or_else(|| {
        let after = &text[text.find("\"reason\"")? + "\"reason\"".len()..];
        let value = after.trim_start().strip_prefix(':')?.trim_start().strip_prefix('"')?;
        value.find('"').map(|end| &value[..end])
    })?;
    Some(code).filter(|c| !c.is_empty() && c.len() <= 64 && c.chars().all(|ch| ch.is_ascii_alphanumeric()))
}

#[async_trait]
impl HttpService for BudgetService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let method = req.method().clone();
        tokio::time::sleep(self.budget.pacing()).await;
        match self.inner.execute(req).await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                if !retried_status(status) {
                    self.budget.success();
                    return Ok(resp);
                }
                match self.budget.failure(throttling(status)) {
                    Verdict::Retry => Ok(resp),
                    Verdict::Final => {
                        let (parts, body) = resp.into_parts();
                        let body = read_error_body(body).await;
                        let code = error_code(&body).map(|c| format!(" ({c})")).unwrap_or_default();
                        let what = format!("{method} answered {}{code}", parts.status);
                        Err(HttpError::new(HttpErrorKind::Unknown, RetryBudgetSpent { what, source: None }))
                    }
                }
            }
            Err(e) => {
                // object_store retries connection failures, and timeouts of requests it may repeat; a
                // request it would not retry anyway costs nothing.
                let retried = matches!(
                    e.kind(),
                    HttpErrorKind::Connect
                        | HttpErrorKind::Request
                        | HttpErrorKind::Timeout
                        | HttpErrorKind::Interrupted
                );
                if !retried {
                    return Err(e);
                }
                match self.budget.failure(false) {
                    Verdict::Retry => Err(e),
                    Verdict::Final => {
                        let what = format!("{method} failed");
                        Err(HttpError::new(HttpErrorKind::Unknown, RetryBudgetSpent { what, source: Some(e) }))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(burst: u32, share_percent: u32) -> RetryBudgetSettings {
        RetryBudgetSettings {
            burst,
            share_percent,
            throttle_backoff: Duration::from_millis(100),
            throttle_backoff_max: Duration::from_millis(400),
        }
    }

    #[test]
    fn retries_are_a_share_of_successes_beyond_the_burst() {
        // (burst, share %, spent first, successes, then failures, of which retried)
        let cases = [
            (3, 10, false, 0, 10, 3),
            (3, 10, false, 10, 10, 3), // a full budget earns nothing more
            (3, 10, true, 10, 10, 1),  // ten successes earn one retry
            (3, 10, true, 9, 10, 0),
            (3, 10, true, 25, 10, 2),
            (2, 100, true, 1, 5, 1),
            (5, 0, true, 1000, 5, 0),  // a share of 0: nothing is earned back
            (0, 100, false, 10, 5, 0), // a burst of 0: no retry at all
        ];
        for (burst, share, spent, successes, failures, want) in cases {
            let counts = RequestCounts::new();
            let b = RetryBudget::new(settings(burst, share), counts.clone());
            if spent {
                b.state().tokens = 0;
            }
            for _ in 0..successes {
                b.success();
            }
            let retried = (0..failures).filter(|_| b.failure(false) != Verdict::Final).count();
            assert_eq!(retried, want, "burst {burst}, share {share}%, spent {spent}, {successes} successes");
            assert_eq!(counts.snapshot().retries_refused, (failures - want) as u64);
        }
    }

    #[test]
    fn a_throttling_store_is_paced_longer_for_each_throttled_answer_in_a_row() {
        let counts = RequestCounts::new();
        let b = RetryBudget::new(settings(100, 10), counts.clone());
        assert_eq!(b.pacing(), Duration::ZERO, "a store that answers is not paced");
        // The pause is random between half a cap that doubles and the cap: the most and the least of many
        // draws show both.
        for (throttled, cap_ms) in [(1, 100), (2, 200), (3, 400), (4, 400), (9, 400)] {
            let draws: Vec<Duration> = (0..200).map(|_| b.pause(throttled)).collect();
            let (least, most) = (*draws.iter().min().unwrap(), *draws.iter().max().unwrap());
            let cap = Duration::from_millis(cap_ms);
            assert!(least >= cap / 2 && most <= cap && most > cap * 3 / 4, "{throttled}: {least:?}..={most:?}");
        }
        // A throttled answer pauses the store from now: the next request waits up to the pause, less the time
        // already gone.
        assert_eq!(b.failure(true), Verdict::Retry);
        let first = b.pacing();
        assert!(first > Duration::from_millis(40) && first <= Duration::from_millis(100), "{first:?}");
        assert_eq!(b.failure(true), Verdict::Retry);
        assert!(b.pacing() > Duration::from_millis(90), "the second in a row: {:?}", b.pacing());
        assert_eq!(b.state().throttled_in_a_row, 2);
        // Requests that never went (dropped while waiting) do not keep it: once the time is past, nothing waits.
        b.state().not_before = Some(Instant::now() - Duration::from_millis(1));
        assert_eq!(b.pacing(), Duration::ZERO);
        // Another failure, or a success, ends the run.
        b.failure(true);
        assert_eq!(b.failure(false), Verdict::Retry);
        assert_eq!((b.pacing(), b.state().throttled_in_a_row), (Duration::ZERO, 0));
        b.failure(true);
        b.success();
        assert_eq!((b.pacing(), b.state().throttled_in_a_row), (Duration::ZERO, 0));
        assert_eq!(counts.snapshot().throttled, 4);
    }

    #[test]
    fn a_failure_the_budget_did_not_retry_is_transient_and_says_why() {
        let refused = |source: Option<HttpError>| {
            let e = HttpError::new(
                HttpErrorKind::Unknown,
                RetryBudgetSpent { what: "GET answered 503 Service Unavailable (SlowDown)".into(), source },
            );
            object_store::Error::Generic { store: "S3", source: Box::new(e) }
        };
        let connect = HttpError::new(HttpErrorKind::Connect, std::io::Error::other("connection refused"));
        for e in [refused(None), refused(Some(connect))] {
            assert_eq!(crate::errors::classify(&e), crate::errors::Class::Transient, "{e}");
            let text = crate::errors::chain_text(&e);
            assert!(text.contains("SlowDown") && text.contains("retry budget is spent"), "{text}");
        }
    }

    #[test]
    fn error_codes_are_read_from_error_documents() {
        let cases: [(&[u8], Option<&str>); 7] = [
            (b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Reduce</Message></Error>", Some("SlowDown")),
            (b"<Error><Code>ServerBusy</Code></Error>", Some("ServerBusy")),
            (b"{\"error\":{\"code\":429,\"errors\":[{\"reason\": \"rateLimitExceeded\"}]}}", Some("rateLimitExceeded")),
            (b"{\"error\":{\"code\":429}}", None),
            (b"<Code>unterminated", None),
            (b"<Code>not a code</Code>", None),
            (b"{\"reason\":\"", None),
        ];
        for (body, want) in cases {
            assert_eq!(error_code(body), want, "{}", String::from_utf8_lossy(body));
        }
    }
}
