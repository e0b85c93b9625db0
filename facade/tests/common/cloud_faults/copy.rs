//! The suite's copy and recovery scenarios: copies that give up within `copy.timeout.ms`, throttled copies,
//! a hung store opening the breaker, a store answering again, the retry budget, the second look.

use super::*;

/// One case of [`copy_gives_up_within_copy_timeout`]: its name, the requests the black hole takes (those
/// whose method and target contain one of these; none: all), the objects of the segment left, and how the
/// error must say the cleanup went.
pub type CopyCase = (&'static str, Vec<&'static str>, usize, &'static str);

/// How the copy's error ends when its cleanup deleted what it wrote.
pub const DELETED: &str = "what it wrote was deleted";
/// How the copy's error ends when its cleanup hung too.
pub const NOT_DELETED: &str = "deleting what it wrote timed out too";

/// What one case of [`copy_gives_up_within_copy_timeout`] saw: its time, its requests and its message.
#[derive(Debug)]
pub struct CopyFigures {
    pub case: &'static str,
    pub took: Duration,
    pub sent: Vec<String>,
    pub message: String,
}

/// A copy to a store that stops answering (every request, or only some) fails as retriable after
/// `copy.timeout.ms` (2000), well before the client's own timeouts (60 s here), and deletes what it wrote,
/// within the same bound again. When the store answers the deletes, nothing of the segment is left; when
/// the deletes hang too, the objects written before are left without a manifest, and a sweep of orphans
/// removes them. Either way, once the store answers, the copy again succeeds. The cases (everything hangs,
/// the manifest's upload, the log's, or the manifest's upload and the deletes) run at once, each on a proxy
/// and a key prefix of its own.
pub fn copy_gives_up_within_copy_timeout(cloud: Cloud) -> Vec<CopyFigures> {
    let mut deletes = vec![".manifest"];
    deletes.extend(cloud.deletes());
    let cases: Vec<CopyCase> = vec![
        ("everything", vec![], 0, NOT_DELETED),
        ("the manifest", vec![".manifest"], 0, DELETED),
        ("the log", vec![".log"], 0, DELETED),
        ("the manifest and the deletes", deletes, 2, NOT_DELETED),
    ];
    std::thread::scope(|scope| {
        let runs: Vec<_> = cases.into_iter().map(|case| scope.spawn(move || copy_case(cloud, case))).collect();
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    })
}

/// One case of [`copy_gives_up_within_copy_timeout`].
fn copy_case(cloud: Cloud, (case, only, want_left, cleanup): CopyCase) -> Option<CopyFigures> {
    let b = Bench::new(cloud, "copy")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let (call, attempt) = (cloud.key("api.call.timeout"), cloud.key("api.call.attempt.timeout"));
    let store = b.open(&[("copy.timeout.ms", "2000"), (&attempt, "60000"), (&call, "60000")]);
    if only.is_empty() {
        b.proxy.set_fault(Fault::Blackhole);
    } else {
        b.proxy.set_fault_on(Fault::Blackhole, &only);
    }
    let from = b.proxy.received();
    let (r, took, _) = b.timed(|| store.copy(&s0.md, &s0.data));
    let e = r.expect_err(case);
    let msg = e.to_string();
    assert!(e.is_transient(), "{case}: {e}");
    assert!(msg.contains("copy.timeout.ms (2000 ms)") && msg.contains(&s0.id()), "{case}: {msg}");
    assert!(took < LIVENESS, "{case}: {took:?}");
    let sent = b.sent_since(from);
    println!("{cloud:?} {case}: the copy failed in {took:?}: {msg}; sent {sent:?}");
    assert!(msg.ends_with(cleanup), "{case}: {msg}; sent {sent:?}");

    b.proxy.set_fault(Fault::Pass);
    let of_segment = |store: &Store| b.objects_of(store, s0);
    let left = of_segment(&store);
    assert_eq!(left.len(), want_left, "{case}: left behind: {left:?} ({msg}); sent {sent:?}");
    assert!(left.iter().all(|k| !k.ends_with(".manifest")), "{case}: no manifest is visible: {left:?}");
    assert!(store.list_objects().unwrap().1.is_empty(), "{case}: no temporary object");
    assert!(store.list_incomplete_uploads().unwrap().is_empty(), "{case}: no upload left open");
    if want_left > 0 {
        let mut swept = store.sweep_orphans(None, Duration::ZERO).unwrap();
        swept.sort();
        let mut want = left.clone();
        want.sort();
        assert_eq!(swept, want, "{case}: the sweep removes what the failed copy left");
        assert!(of_segment(&store).is_empty(), "{case}");
    }

    store.copy(&s0.md, &s0.data).unwrap();
    assert_eq!(of_segment(&store).len(), 3, "{case}: the copy again");
    assert!(read_all(&b.open(&[]), s0, 0, None).unwrap() == s0.log, "{case}");
    Some(CopyFigures { case, took, sent, message: msg })
}

/// What [`a_copy_to_a_throttling_store_fails_after_bounded_retries`] saw: the copy's time, its upload
/// requests (all throttled), the cleanup's requests, and the error's whole message.
#[derive(Debug)]
pub struct ThrottledCopy {
    pub took: Duration,
    pub uploads: usize,
    /// The waits between the log's upload attempts.
    pub waits: Vec<Duration>,
    pub others: Vec<String>,
    pub message: String,
}

/// A copy to a store that throttles every upload with `answer` (the other requests pass) fails as
/// retriable once each upload has had its `<p>.max.retries` (2 here) retries, no more: at most 3 objects ×
/// (1 + 2) upload requests; what it wrote (nothing) is deleted, nothing of the segment is left, and once the
/// store answers the copy succeeds.
pub fn a_copy_to_a_throttling_store_fails_after_bounded_retries(cloud: Cloud, answer: Answer) -> Option<ThrottledCopy> {
    const RETRIES: usize = 2;
    let b = Bench::new(cloud, "throttled-copy")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let status = &answer.status[..3];
    let retries = cloud.key("max.retries");
    let store = b.open(&[(&retries, &RETRIES.to_string()), ("copy.timeout.ms", "10000")]);
    b.proxy.set_fault_on(Fault::Throttle(answer), cloud.uploads());
    let from = b.proxy.received();
    let (r, took, _) = b.timed(|| store.copy(&s0.md, &s0.data));
    let e = r.expect_err("throttled uploads");
    let message = e.full_message();
    let seen = b.proxy.seen()[from..].to_vec();
    let uploads = seen.iter().filter(|x| matches!(x.fault, Fault::Throttle(_))).count();
    let others: Vec<String> = seen.iter().filter(|x| x.fault == Fault::Pass).map(describe).collect();
    // The waits between the attempts of the log's upload.
    let log: Vec<Instant> =
        seen.iter().filter(|x| decoded(&x.target).contains(".log") && x.fault != Fault::Pass).map(|x| x.at).collect();
    let waits: Vec<Duration> = log.windows(2).map(|w| w[1] - w[0]).collect();
    println!(
        "{cloud:?} uploads throttled ({status}): the copy failed in {took:?} after {uploads} upload requests (the \
         log's retried after {waits:?}), then {others:?}: {message}"
    );
    assert!(e.is_transient(), "{status}: {message}");
    assert!(message.contains(status), "{status}: the store's answer: {message}");
    assert!(!message.contains("copy.timeout.ms"), "{status}: failed on its own, before the deadline: {message}");
    assert!(took < LIVENESS, "{status}: {took:?}");
    assert!(uploads > RETRIES, "{status}: an upload and its {retries} ({RETRIES}) retries: {uploads}");
    // The log and the indexes go at once; the manifest waits for them.
    assert!(uploads <= 2 * (1 + RETRIES), "{status}: at most {retries} retries of each object: {uploads}");

    b.proxy.set_fault(Fault::Pass);
    let left = b.objects_of(&store, s0);
    assert!(left.is_empty(), "{status}: left behind: {left:?}");
    store.copy(&s0.md, &s0.data).unwrap();
    assert!(read_all(&b.open(&[]), s0, 0, None).unwrap() == s0.log, "{status}");
    Some(ThrottledCopy { took, uploads, waits, others, message })
}

/// A store that hangs opens the breaker through the facade's own deadlines: each fetch `fetch.timeout.ms`
/// (300) gives up on is a transient failure; after 3 in a row the breaker is open (for
/// `store.breaker.open.ms`, 5 s here) and the next fetches fail with its refusal, each held until its
/// `fetch.timeout.ms` as a fetch of the hung store, sending nothing. Returns the requests of each of 6
/// fetches.
pub fn a_hung_store_opens_the_breaker(cloud: Cloud) -> Option<Vec<usize>> {
    let b = Bench::new(cloud, "hung")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let store = b.open(&[
        ("store.breaker.failures", "3"),
        // Open past the refused fetches below (a fetch held while the interval ends would probe).
        ("store.breaker.open.ms", "5000"),
        ("store.breaker.open.max.ms", "5000"),
        ("fetch.timeout.ms", "300"),
    ]);
    store.copy(&s0.md, &s0.data).unwrap();
    store.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Blackhole);
    let from = b.proxy.received();
    let (mut sent, mut took) = (Vec::new(), Vec::new());
    for i in 0..6 {
        let (r, t, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        let e = r.expect_err("hung");
        assert!(e.is_transient() && t < LIVENESS, "{e}");
        if i >= 3 {
            assert!(e.to_string().contains("is failing (3 transient failures in a row"), "{i}: refused: {e}");
            assert!(t >= Duration::from_millis(270), "{i}: held until fetch.timeout.ms, not failed at once: {t:?}");
        }
        sent.push(n);
        took.push(t);
    }
    // A request of the third fetch may reach the proxy late, on a loaded machine.
    std::thread::sleep(Duration::from_millis(300));
    let all = b.proxy.received() - from;
    println!(
        "{cloud:?} a hung store: requests per fetch {sent:?} in {took:?}; breaker (state, opened, refused) {:?}",
        breaker(&store)
    );
    assert_eq!(breaker(&store), (1, 1, 3), "open after 3 timed-out fetches in a row; requests per fetch {sent:?}");
    assert!(all <= 3, "the fetches after it opened reach no store: {all} requests, by fetch {sent:?}");
    Some(sent)
}

/// What [`a_store_that_answers_again_is_asked_again`] saw: for each fetch after the store answers again,
/// its time, its requests and whether it succeeded.
pub type AfterThrottling = Vec<(Duration, usize, bool)>;

/// With every setting at its default (`fetch.timeout.ms` 500, the breaker at 5, the client's retries and
/// throttling pause, 50 ms doubling to 200 ms): one fetch throttled with `answer` fails as retriable; once
/// the store answers again, fetches (one every 200 ms, for 5 s) reach it again and succeed: the first one
/// already, with one request, the pause left by the throttled answers (at most 200 ms) being well within its
/// `fetch.timeout.ms`. Returns each fetch's figures.
pub fn a_store_that_answers_again_is_asked_again(cloud: Cloud, answer: Answer) -> Option<AfterThrottling> {
    let b = Bench::new(cloud, "answers-again")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let store = b.open_as(&[], false);
    store.copy(&s0.md, &s0.data).unwrap();
    store.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Throttle(answer));
    let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
    assert!(r.as_ref().is_err_and(|e| e.is_transient()) && took < LIVENESS, "{r:?}");
    println!("{cloud:?} throttled: a fetch failed in {took:?} after {n} requests");

    b.proxy.set_fault(Fault::Pass);
    let mut after = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        let ok = r.as_ref().is_ok_and(|got| got.as_ref() == s0.offset_index());
        if !ok {
            let e = r.err().map(|e| e.to_string()).unwrap_or_default();
            println!("{cloud:?} the store back: a fetch failed in {took:?} after {n} requests: {e}");
        }
        after.push((took, n, ok));
        if ok {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("{cloud:?} the store back: fetches (time, requests, ok) {after:?}");
    assert!(
        after.iter().any(|&(_, _, ok)| ok),
        "a store that answers again is never asked again: {} fetches in 5 s sent {} requests; {after:?}",
        after.len(),
        after.iter().map(|a| a.1).sum::<usize>(),
    );
    assert!(after[0].2 && after[0].1 == 1, "the first fetch, the store answering, succeeds at once: {after:?}");
    Some(after)
}

/// What [`a_throttling_store_sees_one_request_per_call_once_the_retry_budget_is_spent`] saw.
#[derive(Debug)]
pub struct BudgetFigures {
    /// The requests of each throttled call, from a full budget.
    pub sent: Vec<usize>,
    /// The waits before the first call's retries.
    pub gaps: Vec<Duration>,
    /// The last call's error, whole.
    pub last: String,
    /// A copy whose uploads are throttled, the budget spent: its upload requests, then the others.
    pub copy: (usize, Vec<String>),
    /// The successful requests since the budget was spent, then the requests of a throttled call.
    pub earned: (usize, usize),
}

/// The store's retry budget (`<p>.retry.budget.burst` 5, `.percent` 10) and the wait before retrying a
/// throttled answer (`<p>.throttle.backoff.ms` 100, `.max.ms` 400), under the store's throttling `answer`
/// without the breaker: each throttled answer spends one retry (the last attempt's too): the first call's 4
/// answers spend 4, the second call is retried once and spends the last, and every call after sends one
/// request, not retried, and fails as retriable, saying the budget is spent and naming the answer's code:
/// 12 calls send 12 + 4 requests, where the client alone would send 12 × 4. Each request after a throttled
/// answer waits at least half the doubled wait (the first call's retries: 50, 100, 200 ms). The budget spent, a
/// copy whose uploads are throttled sends one request per upload (the log's and the indexes'; the manifest
/// is never tried): the store's own upload loops (GCS's) leave the budget's refusal unretried too. Its
/// cleanup passes and nothing of the segment is left. Successes earn retries back, a tenth each: after 20
/// successful requests or more (copies and deletes of the other segments), a throttled call is retried twice
/// again (three times from 30).
pub fn a_throttling_store_sees_one_request_per_call_once_the_retry_budget_is_spent(
    cloud: Cloud,
    answer: Answer,
) -> Option<BudgetFigures> {
    let b = Bench::new(cloud, "budget")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let code = error_code(&answer);
    let (burst, percent) = (cloud.key("retry.budget.burst"), cloud.key("retry.budget.percent"));
    let (backoff, backoff_max) = (cloud.key("throttle.backoff.ms"), cloud.key("throttle.backoff.max.ms"));
    let settings = [
        ("store.breaker.failures", "0"),
        ("fetch.timeout.ms", "20000"),
        (&burst, "5"),
        (&percent, "10"),
        (&backoff, "100"),
        (&backoff_max, "400"),
    ];
    b.open(&settings).copy(&segs[0].md, &segs[0].data).unwrap();
    let store = b.open(&settings); // a full budget
    store.manifest(&segs[0].md).unwrap(); // one success: the budget stays full
    b.proxy.set_fault(Fault::Throttle(answer));
    const CALLS: usize = 12;
    let mut sent = Vec::new();
    let mut last = None;
    let first = b.proxy.received();
    for _ in 0..CALLS {
        let (r, took, n) = b.timed(|| store.fetch_index(&segs[0].md, IndexType::Offset));
        let e = r.expect_err("throttled");
        assert!(e.is_transient(), "{e}");
        assert!(took < Duration::from_secs(20), "{took:?}");
        sent.push(n);
        last = Some(e);
    }
    assert_eq!(sent, [4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "requests per call");
    // The metrics: 16 throttled answers; 11 failures not retried (the second call's last, and one per call
    // after).
    assert_eq!((metric(&store, "store-throttled"), metric(&store, "store-retries-refused")), (16, 11));
    let last = last.unwrap().full_message();
    assert!(last.contains("retry budget is spent") && last.contains(code), "{code}: {last}");
    // The first call's retries, after each throttled answer: waits of at least 50, 100 and 200 ms.
    let seen = b.proxy.seen();
    let gaps: Vec<Duration> = seen[first..first + 4].windows(2).map(|w| w[1].at - w[0].at).collect();
    for (gap, least) in gaps.iter().zip([50, 100, 200]) {
        assert!(*gap >= Duration::from_millis(least), "retry after a throttled answer: {gaps:?}");
    }
    println!(
        "{cloud:?} throttled ({code}), budget 5: requests per call {sent:?}; the first call's retries came \
         after {gaps:?}"
    );
    println!("{cloud:?} the last call: {last}");

    // The budget spent, the uploads of a copy are not retried either.
    let before = b.proxy.received();
    b.proxy.set_fault_on(Fault::Throttle(answer), cloud.uploads());
    let e = store.copy(&segs[1].md, &segs[1].data).expect_err("throttled uploads");
    let message = e.full_message();
    b.proxy.set_fault(Fault::Pass);
    let copied = &b.proxy.seen()[before..];
    let uploads = copied.iter().filter(|x| x.fault != Fault::Pass).count();
    let others: Vec<String> = copied.iter().filter(|x| x.fault == Fault::Pass).map(describe).collect();
    println!(
        "{cloud:?} the budget spent, a copy's uploads throttled: {uploads} upload requests, then {others:?}: {message}"
    );
    assert!(e.is_transient(), "{message}");
    assert!(message.contains("retry budget is spent"), "{message}");
    assert_eq!(uploads, 2, "one request per upload (the log's, the indexes'), not retried: {message}");
    assert_eq!(b.objects_of(&store, &segs[1]), Vec::<String>::new(), "the cleanup deleted what the copy wrote");
    assert_eq!((metric(&store, "store-throttled"), metric(&store, "store-retries-refused")), (18, 13));

    // Successes earn it back, a tenth of a retry each: the copy's cleanup, then copies and deletes of the
    // other segments, one at a time until 20 requests or more have succeeded, and a copy.
    let succeeded = || b.proxy.seen()[before..].iter().filter(|x| x.fault == Fault::Pass).count();
    for s in segs[1..].iter().cycle() {
        if succeeded() >= 20 {
            break;
        }
        store.copy(&s.md, &s.data).unwrap();
        store.delete(&s.md).unwrap();
    }
    store.copy(&segs[1].md, &segs[1].data).unwrap();
    let successes = succeeded();
    assert!(successes >= 20, "{successes}");
    b.proxy.set_fault(Fault::Throttle(answer));
    let (r, _, n) = b.timed(|| store.fetch_index(&segs[1].md, IndexType::Offset));
    assert!(r.is_err());
    assert_eq!(n, (successes / 10 + 1).min(4), "{successes} successful requests earned {} retries", successes / 10);
    println!("{cloud:?} after {successes} successful requests, a throttled call sent {n} requests");
    Some(BudgetFigures { sent, gaps, last, copy: (uploads, others), earned: (successes, n) })
}

/// What one case of [`the_second_look_deletes_what_a_timed_out_copy_left`] saw: whether the segment was
/// copied again, the hung copy's requests, the segment's objects left at first, and after the look.
#[derive(Debug)]
pub struct RecheckFigures {
    pub copy_again: bool,
    pub sent: Vec<String>,
    pub at_first: Vec<String>,
    pub after: Vec<String>,
}

/// `copy.cleanup.recheck.ms` (1000 here): a copy that timed out (`copy.timeout.ms` 500) with its manifest's
/// upload and its cleanup's deletes hung leaves the log and the indexes (as in
/// [`copy_gives_up_within_copy_timeout`]); once the store answers again, the second look deletes them
/// without anyone running a sweep. A copy again under the same id is kept whole: its start cancels the look
/// still pending. The two cases (not copied again, copied again) run at once, each on a proxy and a key
/// prefix of its own.
pub fn the_second_look_deletes_what_a_timed_out_copy_left(cloud: Cloud) -> Vec<RecheckFigures> {
    std::thread::scope(|scope| {
        let runs = [false, true].map(|again| scope.spawn(move || recheck_case(cloud, again)));
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    })
}

/// One case of [`the_second_look_deletes_what_a_timed_out_copy_left`].
fn recheck_case(cloud: Cloud, copy_again: bool) -> Option<RecheckFigures> {
    let b = Bench::new(cloud, "recheck")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s = &segs[0];
    let (call, attempt) = (cloud.key("api.call.timeout"), cloud.key("api.call.attempt.timeout"));
    let store = b.open(&[
        ("copy.timeout.ms", "500"),
        ("copy.cleanup.recheck.ms", "1000"),
        (&attempt, "60000"),
        (&call, "60000"),
    ]);
    let mut hung = vec![".manifest"];
    hung.extend(cloud.deletes());
    b.proxy.set_fault_on(Fault::Blackhole, &hung);
    let from = b.proxy.received();
    let e = store.copy(&s.md, &s.data).expect_err("hung");
    let sent = b.sent_since(from);
    assert!(e.to_string().ends_with(NOT_DELETED), "{e}; sent {sent:?}");
    b.proxy.set_fault(Fault::Pass);
    let at_first = b.objects_of(&store, s);
    assert_eq!(at_first.len(), 2, "the log and the indexes are left at first: {at_first:?}; sent {sent:?}");
    if copy_again {
        store.copy(&s.md, &s.data).unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));
    let after = b.objects_of(&store, s);
    if copy_again {
        assert_eq!(after.len(), 3, "the copy again is whole: {after:?}");
        assert!(read_all(&store, s, 0, None).unwrap() == s.log);
    } else {
        assert!(after.is_empty(), "the second look deleted them: {after:?}");
    }
    println!("{cloud:?} copied again {copy_again}: the hung copy sent {sent:?}, left {at_first:?}, then {after:?}");
    Some(RecheckFigures { copy_again, sent, at_first, after })
}
