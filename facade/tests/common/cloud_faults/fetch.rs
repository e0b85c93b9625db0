//! The suite's fetch scenarios: deadlines, the breaker, throttled answers, answers cut mid-body, reads given
//! up and continued, the same read at once.

use super::*;

/// What [`fetch_gives_up_within_fetch_timeout`] saw in one case: times and requests of the open of a
/// cold store, of a piece of the log's bytes, of an index.
#[derive(Debug)]
pub struct FetchFigures {
    pub case: &'static str,
    pub open: (Duration, usize),
    pub bytes: (Duration, usize),
    pub index: (Duration, usize),
}

/// Each wait of a fetch is bounded by `fetch.timeout.ms` (300) on a store that does not answer (a black
/// hole), answers late, or answers too slowly, at each of its steps: the open of a cold store (its
/// manifest), a piece of the log's bytes, an index. A store slow but within the bound is read whole. Once
/// the store answers again, the same reads give the right bytes. The cases run at once, each on a proxy and
/// a key prefix of its own. Returns the figures of each case.
pub fn fetch_gives_up_within_fetch_timeout(cloud: Cloud) -> Vec<FetchFigures> {
    // (case, fault, whether each step must time out)
    let cases = [
        ("black hole", Fault::Blackhole, true),
        ("first byte after 3 s", Fault::Slow { first_byte_ms: 3_000, bytes_per_sec: 1 << 20 }, true),
        ("512 B/s", Fault::Slow { first_byte_ms: 0, bytes_per_sec: 512 }, true),
        ("slow, in time", Fault::Slow { first_byte_ms: 20, bytes_per_sec: 4 << 20 }, false),
    ];
    std::thread::scope(|scope| {
        let runs = cases.map(|case| scope.spawn(move || fetch_case(cloud, case)));
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    })
}

/// One case of [`fetch_gives_up_within_fetch_timeout`].
fn fetch_case(cloud: Cloud, (case, fault, times_out): (&'static str, Fault, bool)) -> Option<FetchFigures> {
    let b = Bench::new(cloud, "fetch")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let (s0, s1) = (&segs[0], &segs[1]);
    let settings = [("fetch.timeout.ms", "300")];
    let warm = b.open(&settings);
    for s in &segs {
        warm.copy(&s.md, &s.data).unwrap();
    }
    assert!(read_all(&warm, s0, 0, None).unwrap() == s0.log, "{case}: a store that answers serves the segment");

    b.proxy.set_fault(fault);
    let from = b.proxy.received();
    // The open, by a store opened since: its manifest cache is empty.
    let cold = b.open(&settings);
    let (open, took_open, sent_open) = b.timed(|| read_all(&cold, s1, 0, None));
    // The log's bytes, the manifest already held: the open sends nothing, the first piece waits.
    let (bytes, took_bytes, sent_bytes) = b.timed(|| {
        let mut r = warm.fetch(&s0.md, 0, None).expect("the open reads the manifest held in memory");
        let mut buf = vec![0u8; 4096];
        let first = r.read_into(&mut buf);
        let after = first.is_err().then(|| r.read_into(&mut buf));
        (first, after)
    });
    let (index, took_index, sent_index) = b.timed(|| warm.fetch_index(&s0.md, IndexType::Offset));
    println!(
        "{cloud:?} {case}: open {took_open:?} ({sent_open} requests), log bytes {took_bytes:?} ({sent_bytes}), \
         index {took_index:?} ({sent_index})"
    );
    // Each step sends one request (on a loaded machine it may reach the proxy during the next step), and
    // none is retried: the client's own attempt timeout is 30 s.
    let sent = sent_open + sent_bytes + sent_index;
    assert!(sent >= 1, "{case}: the store was asked");
    // Each step asked the store: the open for the segment's manifest, the bytes for its log, the index
    // for its indexes.
    let (s0_id, s1_id) = (s0.id(), s1.id());
    assert!(b.received_since(from, |x| decoded(&x.target).contains(&s1_id)), "{case}: the open asked the store");
    let asked = |suffix: &str| {
        b.received_since(from, |x| {
            let target = decoded(&x.target);
            target.contains(&s0_id) && target.contains(suffix)
        })
    };
    assert!(asked(".log"), "{case}: the log's bytes were asked for");
    assert!(asked(".indexes"), "{case}: the index was asked for");
    if times_out {
        assert!(sent <= 3, "{case}: one request a step: {sent}");
        timed_out(&format!("{case}: open"), open, s1, took_open);
        timed_out(&format!("{case}: log bytes"), bytes.0, s0, took_bytes);
        assert_eq!(bytes.1.unwrap().unwrap(), 0, "{case}: the failed reader has ended");
        timed_out(&format!("{case}: index"), index, s0, took_index);
    } else {
        assert!(open.unwrap() == s1.log, "{case}: the open");
        assert!(bytes.0.unwrap() > 0, "{case}: log bytes");
        assert_eq!(index.unwrap().as_ref(), s0.offset_index(), "{case}: index");
    }

    b.proxy.set_fault(Fault::Pass);
    assert!(read_all(&cold, s1, 0, None).unwrap() == s1.log, "{case}: the open, the store back");
    assert!(read_all(&warm, s0, 0, None).unwrap() == s0.log, "{case}: log bytes, the store back");
    assert_eq!(warm.fetch_index(&s0.md, IndexType::Offset).unwrap().as_ref(), s0.offset_index(), "{case}");
    println!("{cloud:?} {case}: requests by fault {:?}", by_fault(&b.proxy.seen()));
    Some(FetchFigures {
        case,
        open: (took_open, sent_open),
        bytes: (took_bytes, sent_bytes),
        index: (took_index, sent_index),
    })
}

/// With `store.breaker.failures` 3 and `<p>.max.retries` 1, a store that refuses connections, or answers
/// `answer` (its throttling), opens the breaker after three failed calls (each after its retry); calls
/// then fail with the breaker's error, held until their `fetch.timeout.ms` (600 here) rather than at once
/// (Kafka retries a failed remote fetch at once), and send no request at all, nor open a connection; once
/// the store is back and `store.breaker.open.ms` has passed, one call probes, and succeeds, and the breaker
/// closes. Returns the requests each of the three failed calls sent.
pub fn breaker_opens_and_refuses_without_requests(cloud: Cloud, case: &str, fault: Fault) -> Option<Vec<usize>> {
    // Longer than a refused call is held (from the breaker's opening on), so that none of them probes.
    const OPEN_MS: u64 = 1_500;
    const FETCH_TIMEOUT_MS: u64 = 600;
    let b = Bench::new(cloud, "breaker")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let retries = cloud.key("max.retries");
    let store = b.open(&[
        ("store.breaker.failures", "3"),
        ("store.breaker.open.ms", &OPEN_MS.to_string()),
        (&retries, "1"),
        // Long enough for the client's answer after its retry (~0.1 s), so that each failure is the store's
        // own; a refused call is held this long.
        ("fetch.timeout.ms", &FETCH_TIMEOUT_MS.to_string()),
    ]);
    for s in &segs {
        store.copy(&s.md, &s.data).unwrap();
    }
    store.manifest(&s0.md).unwrap();
    assert_eq!(breaker(&store), (0, 0, 0), "{case}");

    b.proxy.set_fault(fault);
    let mut sent = Vec::new();
    for i in 1..=3 {
        let (r, took, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
        let e = r.expect_err(case);
        assert!(e.is_transient(), "{case}: {e}");
        assert!(!e.to_string().contains("is failing"), "{case} {i}: the store's own failure: {e}");
        assert!(took < LIVENESS, "{case} {i}: {took:?}");
        if i == 1 {
            println!("{cloud:?} {case}: a failed call ({took:?}): {}", e.full_message());
        }
        sent.push(n);
        let want = if i < 3 { (0, 0, 0) } else { (1, 1, 0) };
        assert_eq!(breaker(&store), want, "{case}: after {i} failed calls: {e}");
    }
    let opened_at = Instant::now();

    // Open: 6 calls at once (index fetches, a fetch's bytes) fail with the breaker's error, each held until
    // its deadline, and the store sees nothing of them (no request, no connection).
    let (received, connections) = (b.proxy.received(), b.proxy.connections());
    let refusals: Vec<(Duration, rsm_core::Error)> = std::thread::scope(|scope| {
        let mut calls: Vec<_> = (0..5)
            .map(|_| {
                scope.spawn(|| {
                    let t = Instant::now();
                    let e = store.fetch_index(&s0.md, IndexType::Offset).expect_err(case);
                    (t.elapsed(), e)
                })
            })
            .collect();
        calls.push(scope.spawn(|| {
            let t = Instant::now();
            let e = read_all(&store, &segs[1], 0, None).expect_err(case);
            (t.elapsed(), e)
        }));
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let held: Vec<Duration> = refusals.iter().map(|r| r.0).collect();
    for (i, (took, e)) in refusals.iter().enumerate() {
        let msg = e.to_string();
        assert!(e.is_transient(), "{case}: {e}");
        assert!(msg.contains("is failing (3 transient failures in a row"), "{case} {i}: {msg}");
        assert!(msg.contains(b.url.trim_end_matches('/')), "{case} {i}: names the store: {msg}");
        let least = Duration::from_millis(FETCH_TIMEOUT_MS * 9 / 10);
        assert!(
            *took >= least && *took < LIVENESS,
            "{case} {i}: held until fetch.timeout.ms, not failed at once: {took:?}"
        );
    }
    println!("{cloud:?} {case}: refused: {}", refusals[5].1);
    assert_eq!(b.proxy.received(), received, "{case}: refused calls send no request");
    assert_eq!(b.proxy.connections(), connections, "{case}: nor open a connection");
    let (state, opened, refused) = breaker(&store);
    assert_eq!((state, opened), (1, 1), "{case}");
    assert!(refused >= 6, "{case}: {refused} refused");
    println!("{cloud:?} {case}: requests per failed call {sent:?}; 6 refused calls held {held:?}, sending nothing");

    // Back: after the interval, one call probes and succeeds; the breaker closes.
    b.proxy.set_fault(Fault::Pass);
    std::thread::sleep(Duration::from_millis(OPEN_MS + 200).saturating_sub(opened_at.elapsed()));
    assert_eq!(breaker(&store).0, 2, "{case}: half-open once the interval has passed");
    let (r, _, n) = b.timed(|| store.fetch_index(&s0.md, IndexType::Offset));
    assert_eq!(r.unwrap().as_ref(), s0.offset_index(), "{case}");
    assert_eq!(n, 1, "{case}: the probe");
    assert_eq!(breaker(&store).0, 0, "{case}: closed after the probe");
    assert!(read_all(&store, &segs[1], 0, None).unwrap() == segs[1].log, "{case}");
    println!("{cloud:?} {case}: requests by fault {:?}", by_fault(&b.proxy.seen()));
    Some(sent)
}

/// What [`throttling_is_retried_a_bounded_number_of_times`] saw.
#[derive(Debug)]
pub struct ThrottleFigures {
    /// One call without a breaker: its requests, its time, its error's whole message.
    pub one: (usize, Duration, String),
    /// Twenty calls with the breaker at 3: their requests, their time, the calls refused.
    pub burst: Option<(usize, Duration, u64)>,
}

/// A store that throttles every request with `answer`: the client retries a request `<p>.max.retries`
/// times (3 by default), no more, and the call fails as retriable, naming the status; with the breaker on,
/// a burst of 20 calls (when `burst`) sends at most the breaker's threshold of calls' worth of requests,
/// fewer requests than calls: the calls after it opened (made at once, each refusal held until
/// `fetch.timeout.ms`) send nothing.
pub fn throttling_is_retried_a_bounded_number_of_times(
    cloud: Cloud,
    answer: Answer,
    burst: bool,
) -> Option<ThrottleFigures> {
    let b = Bench::new(cloud, "throttled")?;
    let t = tempfile::tempdir().unwrap();
    let segs = small(t.path());
    let s0 = &segs[0];
    let status = &answer.status[..3];
    let no_breaker = b.open(&[("store.breaker.failures", "0"), ("fetch.timeout.ms", "10000")]);
    for s in &segs {
        no_breaker.copy(&s.md, &s.data).unwrap();
    }
    no_breaker.manifest(&s0.md).unwrap();

    b.proxy.set_fault(Fault::Throttle(answer));
    let (r, took, sent) = b.timed(|| no_breaker.fetch_index(&s0.md, IndexType::Offset));
    let e = r.expect_err("throttled");
    assert!(e.is_transient(), "{e}");
    let full = e.full_message();
    assert!(full.contains(status), "{status}: {full}");
    assert!(took < LIVENESS, "{took:?}");
    assert_eq!(sent, 1 + 3, "{status}: the first attempt and {} retries (3): {full}", cloud.key("max.retries"));
    println!("{cloud:?} throttled ({status}), no breaker: one call sent {sent} requests in {took:?}: {full}");
    let one = (sent, took, full);
    if !burst {
        return Some(ThrottleFigures { one, burst: None });
    }

    // With the breaker: 20 calls, one after another until the breaker opens, the rest at once (each refusal
    // is held until fetch.timeout.ms: 17 in a row would take 17 times that).
    const CALLS: usize = 20;
    let with_breaker = b.open(&[
        ("store.breaker.failures", "3"),
        ("store.breaker.open.ms", "60000"),
        ("store.breaker.open.max.ms", "60000"),
        // Longer than a call's 4 throttled answers (0.3-0.9 s); were it not, the call would count as failed
        // all the same (the breaker is told of a call given up at its deadline).
        ("fetch.timeout.ms", "1000"),
    ]);
    b.proxy.set_fault(Fault::Pass);
    with_breaker.manifest(&s0.md).unwrap();
    b.proxy.set_fault(Fault::Throttle(answer));
    let call = || with_breaker.fetch_index(&s0.md, IndexType::Offset);
    let (results, took, sent) = b.timed(|| {
        let mut results = Vec::new();
        while results.len() < CALLS && breaker(&with_breaker).0 == 0 {
            results.push(call());
        }
        let before_open = results.len();
        std::thread::scope(|scope| {
            let rest: Vec<_> = (before_open..CALLS).map(|_| scope.spawn(call)).collect();
            results.extend(rest.into_iter().map(|c| c.join().unwrap()));
        });
        (before_open, results)
    });
    let (before_open, results) = results;
    assert_eq!(before_open, 3, "{status}: the breaker opens after 3 failed calls");
    assert!(results.iter().all(|r| r.as_ref().is_err_and(|e| e.is_transient())));
    let (state, opened, refused) = breaker(&with_breaker);
    assert_eq!((state, opened, refused), (1, 1, CALLS as u64 - 3), "{status}");
    assert!(sent <= 3 * (1 + 3), "{status}: at most the threshold's calls' worth of requests: {sent}");
    assert!(sent < CALLS, "{status}: fewer requests ({sent}) than calls ({CALLS})");
    assert!(took < LIVENESS, "{took:?}");
    println!(
        "{cloud:?} throttled ({status}), breaker at 3: {CALLS} calls sent {sent} requests in {took:?}, {refused} \
         refused (held until fetch.timeout.ms)"
    );
    println!("{cloud:?} requests by fault {:?}", by_fault(&b.proxy.seen()));
    Some(ThrottleFigures { one, burst: Some((sent, took, refused)) })
}

/// What one case of [`cut_answers_give_the_right_bytes_or_an_error`] gave: for the whole fetch, the
/// range, the index: whether it succeeded, and its requests.
#[derive(Debug)]
pub struct CutFigures {
    pub after: usize,
    pub whole: (bool, usize),
    pub range: (bool, usize),
    pub index: (bool, usize),
}

/// The cases of [`cut_answers_give_the_right_bytes_or_an_error`]: the bytes each answer keeps, and whether the
/// whole fetch must succeed (`None`: either way).
pub const CUTS: [(usize, Option<bool>); 6] =
    [(0, Some(false)), (100, Some(false)), (4_096, None), (40_000, None), (100_000, Some(true)), (1 << 20, Some(true))];

/// Answers cut mid-body (the connection closed after `n` bytes of each answer's body, each retry's too):
/// a fetch (whole, or a range) and an index fetch give the right bytes or fail as retriable, never other
/// bytes. Each case reads through a store opened for it (the manifest's answer is cut too). `cases`: the
/// bytes each answer keeps, and whether the whole fetch must succeed (`None`: either way). The cases run at
/// once, each through a proxy of its own to the same segment.
pub fn cut_answers_give_the_right_bytes_or_an_error(cloud: Cloud, cases: &[(usize, Option<bool>)]) -> Vec<CutFigures> {
    let Some(b) = Bench::new(cloud, "cut") else { return Vec::new() };
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    b.open(&CUT_SETTINGS).copy(&s0.md, &s0.data).unwrap();
    let out = std::thread::scope(|scope| {
        let b = &b;
        let runs: Vec<_> = cases.iter().map(|&case| scope.spawn(move || cut_case(&b.beside(), s0, case))).collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert!(read_all(&b.open(&CUT_SETTINGS), s0, 0, None).unwrap() == s0.log);
    out
}

/// The settings of [`cut_answers_give_the_right_bytes_or_an_error`]'s stores.
const CUT_SETTINGS: [(&str, &str); 3] =
    [("chunk.size", "65536"), ("fetch.timeout.ms", "20000"), ("store.breaker.failures", "0")];

/// One case of [`cut_answers_give_the_right_bytes_or_an_error`], through `b`.
fn cut_case(b: &Bench, s0: &Segment, (n, whole_ok): (usize, Option<bool>)) -> CutFigures {
    let cloud = b.cloud;
    let (start, end) = (70_000, 150_000);
    let range = &s0.log[start as usize..=end as usize];
    b.proxy.set_fault(Fault::ResetAfter(n));
    let cold = b.open(&CUT_SETTINGS);
    let (whole, took_whole, sent_whole) = b.timed(|| read_all(&cold, s0, 0, None));
    // What the whole fetch read from the store (its manifest, then the log's bytes in its answers' pieces).
    let read_whole = metric(&cold, "store-bytes-read");
    let (part, took_part, sent_part) = b.timed(|| read_all(&cold, s0, start, Some(end)));
    let (index, took_index, sent_index) = b.timed(|| cold.fetch_index(&s0.md, IndexType::Offset));
    fn show<T: AsRef<[u8]>>(r: &rsm_core::Result<T>) -> String {
        match r {
            Ok(v) => format!("{} bytes", v.as_ref().len()),
            Err(e) => format!("failed ({})", e.full_message().rsplit(": ").next().unwrap_or_default()),
        }
    }
    println!(
        "{cloud:?} cut after {n} bytes: whole {} in {took_whole:?} ({sent_whole} requests), range {} in \
         {took_part:?} ({sent_part}), index {} in {took_index:?} ({sent_index}); sent {:?}",
        show(&whole),
        show(&part),
        show(&index),
        b.sent_since(0),
    );
    if let Some(ok) = whole_ok {
        assert_eq!(whole.is_ok(), ok, "cut after {n}: whole: {}", show(&whole));
    }
    if whole.is_ok() {
        // A broken answer is read on from where it broke, never again from the start: the bytes read stay
        // near the bytes served.
        let served = s0.log.len() as u64;
        assert!(read_whole * 2 <= served * 3, "cut after {n}: {read_whole} bytes read to serve {served}");
        println!("{cloud:?} cut after {n} bytes: the whole fetch read {read_whole} bytes to serve {served}");
    }
    let figures = CutFigures {
        after: n,
        whole: (whole.is_ok(), sent_whole),
        range: (part.is_ok(), sent_part),
        index: (index.is_ok(), sent_index),
    };
    for (what, r, want) in [("whole", whole, &s0.log[..]), ("range", part, range)] {
        match r {
            Ok(got) => assert!(got == want, "cut after {n}: {what}: {} bytes, not the segment's", got.len()),
            Err(e) => assert!(e.is_transient(), "cut after {n}: {what}: a cut answer is retriable: {e}"),
        }
    }
    match index {
        Ok(got) => assert_eq!(got.as_ref(), s0.offset_index(), "cut after {n}: index"),
        Err(e) => assert!(e.is_transient(), "cut after {n}: index: {e}"),
    }
    b.proxy.set_fault(Fault::Pass);
    assert!(read_all(&b.open(&CUT_SETTINGS), s0, 0, None).unwrap() == s0.log, "cut after {n}: the store back");
    println!("{cloud:?} cut after {n} bytes: requests by fault {:?}", by_fault(&b.proxy.seen()));
    figures
}

/// What [`given_up_reads_continue_where_they_stopped`] saw: the attempts until the fetch was whole, the
/// bytes read from the store (the manifest's and the log's) and the bytes served.
#[derive(Debug)]
pub struct GivenUpFigures {
    pub attempts: usize,
    pub read: u64,
    pub served: u64,
}

/// Answers cut after 40,000 bytes and a fetch deadline too short to read the segment in one go (the
/// client's backoff between cut answers outlasts it): each attempt, given up at its deadline, leaves what it
/// received, and the same fetch asked again reads on from there, so a few attempts serve the segment,
/// having read it from the store about once. Before, each attempt read the same first bytes again and
/// the fetch never came whole (a broker under cut answers read 5 MB and served nothing).
pub fn given_up_reads_continue_where_they_stopped(cloud: Cloud) -> Option<GivenUpFigures> {
    let b = Bench::new(cloud, "given-up")?;
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    let settings = [("fetch.timeout.ms", "300"), ("store.breaker.failures", "0")];
    b.open(&settings).copy(&s0.md, &s0.data).unwrap();
    b.proxy.set_fault(Fault::ResetAfter(40_000));
    let store = b.open(&settings);
    let mut attempts = 0;
    let got = loop {
        attempts += 1;
        match read_all(&store, s0, 0, None) {
            Ok(got) => break got,
            Err(e) => {
                assert!(e.is_transient(), "attempt {attempts}: a fetch given up is retriable: {e}");
                assert!(attempts < 20, "20 attempts and the fetch is still not whole: {}", e.full_message());
            }
        }
    };
    b.proxy.set_fault(Fault::Pass);
    assert!(got == s0.log, "the fetch continued from the bytes it had gives the segment's bytes");
    let (read, served) = (metric(&store, "store-bytes-read"), s0.log.len() as u64);
    println!(
        "{cloud:?} cut after 40000 bytes, 300 ms deadline: whole after {attempts} attempts, {read} bytes read \
         to serve {served}"
    );
    assert!(attempts > 1, "the deadline is short enough that one attempt does not read the segment");
    assert!(read * 2 <= served * 3, "{read} bytes read from the store to serve {served}");
    Some(GivenUpFigures { attempts, read, served })
}

/// Two fetches of the same bytes at once (a broker asking again for a fetch it gave up on while the first
/// read still runs) through a slow store: the second waits for the first's read instead of sending its
/// own; both get the segment's bytes. Returns the `.log` reads the proxy received.
pub fn the_same_read_at_once_is_sent_once(cloud: Cloud) -> Option<Vec<String>> {
    let b = Bench::new(cloud, "same-read")?;
    let t = tempfile::tempdir().unwrap();
    let segs = chunked(t.path());
    let s0 = &segs[0];
    let settings = [("fetch.timeout.ms", "20000"), ("store.breaker.failures", "0")];
    let store = b.open(&settings);
    store.copy(&s0.md, &s0.data).unwrap();
    // The manifest read first, so that only the log's bytes are read at once.
    store.fetch_index(&s0.md, IndexType::Offset).unwrap();
    b.proxy.set_fault(Fault::Slow { first_byte_ms: 400, bytes_per_sec: 4 << 20 });
    let from = b.proxy.received();
    let got: Vec<_> = std::thread::scope(|scope| {
        let store = &store;
        let runs: Vec<_> = (0..2)
            .map(|i| {
                let r = scope.spawn(move || read_all(store, s0, 0, None));
                if i == 0 {
                    std::thread::sleep(Duration::from_millis(100));
                }
                r
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    b.proxy.set_fault(Fault::Pass);
    for (i, g) in got.into_iter().enumerate() {
        assert!(g.unwrap() == s0.log, "fetch {i}: the segment's bytes");
    }
    let reads: Vec<String> = b.sent_since(from).into_iter().filter(|r| r.contains(".log")).collect();
    println!("{cloud:?} the same fetch twice at once, through a slow store: the log read by {reads:?}");
    assert_eq!(reads.len(), 1, "one read of the log for both fetches: {reads:?}");
    Some(reads)
}
