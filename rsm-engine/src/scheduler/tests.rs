//! Tests of the scheduler: backoff, settings, ordering, failures, removal, shutdown.

use super::*;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

fn cfg(workers: usize) -> SchedulerConfig {
    SchedulerConfig {
        workers,
        interval: Duration::from_secs(30),
        backoff_initial: Duration::from_millis(500),
        backoff_max: Duration::from_secs(30),
    }
}

#[test]
fn backoff_doubles_is_capped_and_jittered_within_the_cap() {
    let c = cfg(1);
    let ms = Duration::from_millis;
    // (consecutive failures, jitter, want)
    let cases = [
        (0, 0.5, ms(500)),
        (1, 0.5, ms(500)),
        (2, 0.5, ms(1000)),
        (3, 0.5, ms(2000)),
        (6, 0.5, ms(16000)),
        (7, 0.5, ms(30000)),
        (40, 0.5, ms(30000)),
        (u32::MAX, 0.5, ms(30000)),
        (1, 0.0, ms(400)),
        (1, 0.25, ms(450)),
        (1, 0.999_999_999, ms(600)),
        (2, 0.0, ms(800)),
        (7, 0.0, ms(24000)),
        (7, 0.99, ms(30000)),
        (1, -3.0, ms(400)),
        (1, 7.0, ms(600)),
        (1, f64::NAN, ms(500)),
    ];
    for (n, jitter, want) in cases {
        let got = backoff(&c, n, jitter);
        let diff = got.abs_diff(want);
        assert!(diff <= Duration::from_micros(1), "n={n} jitter={jitter}: {got:?}, want {want:?}");
        assert!(got <= c.backoff_max, "n={n}: above the cap");
    }
    let huge = SchedulerConfig { backoff_max: Duration::MAX, ..c };
    assert!(backoff(&huge, 200, 0.99) <= Duration::MAX);
    for _ in 0..100 {
        let j = random_jitter();
        assert!((0.0..1.0).contains(&j), "{j}");
    }
}

#[test]
fn invalid_settings_name_the_kafka_key() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let cases = [
        (SchedulerConfig { workers: 0, ..cfg(1) }, THREAD_POOL_SIZE.key),
        (SchedulerConfig { interval: Duration::ZERO, ..cfg(1) }, TASK_INTERVAL_MS.key),
        (SchedulerConfig { backoff_initial: Duration::ZERO, ..cfg(1) }, RETRY_BACKOFF_MS.key),
        (SchedulerConfig { backoff_max: Duration::from_millis(499), ..cfg(1) }, RETRY_BACKOFF_MAX_MS.key),
    ];
    for (c, key) in cases {
        let e = Scheduler::<u32>::start(c, rt.handle(), |_| async { Ok(()) }).unwrap_err();
        assert_eq!((e.kind(), e.config_key()), (rsm_core::ErrorKind::Config, Some(key)), "{e}");
    }
    assert!(SchedulerConfig::default().validate().is_ok());
    assert_eq!(SchedulerConfig::default(), cfg(2));
}

/// Records when each key's runs started, in paused time.
#[derive(Default)]
struct Log(Mutex<Vec<(u32, Instant)>>);

impl Log {
    fn starts(&self, key: u32) -> Vec<Duration> {
        let v = self.0.lock().unwrap();
        let first = v.first().map(|x| x.1).unwrap();
        v.iter().filter(|x| x.0 == key).map(|x| x.1 - first).collect()
    }
}

#[tokio::test(start_paused = true)]
async fn a_new_key_runs_at_once_then_at_each_interval() {
    let log = Arc::new(Log::default());
    let t0 = Instant::now();
    let l = log.clone();
    let s = Scheduler::start(cfg(2), &tokio::runtime::Handle::current(), move |k: u32| {
        l.0.lock().unwrap().push((k, Instant::now()));
        async { Ok(()) }
    })
    .unwrap();
    assert!(s.add(7));
    assert!(!s.add(7), "a second add changes nothing");
    s.wait_for_runs(3).await;
    s.shutdown().await;
    let starts: Vec<Duration> = log.0.lock().unwrap().iter().map(|x| x.1 - t0).collect();
    assert_eq!(starts, [Duration::ZERO, Duration::from_secs(30), Duration::from_secs(60)]);
    let st = s.stats(&7).unwrap();
    assert_eq!((st.runs, st.failures, st.consecutive_failures, st.running), (3, 0, 0, false));
    assert_eq!(s.keys(), vec![7]);
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_growing_to_the_cap_and_a_success_resets() {
    let log = Arc::new(Log::default());
    let calls = Arc::new(AtomicU64::new(0));
    let (l, c) = (log.clone(), calls.clone());
    let config =
        SchedulerConfig { backoff_initial: Duration::from_secs(1), backoff_max: Duration::from_secs(5), ..cfg(1) };
    let s = Scheduler::start(config, &tokio::runtime::Handle::current(), move |k: u32| {
        l.0.lock().unwrap().push((k, Instant::now()));
        let n = c.fetch_add(1, Ordering::SeqCst);
        async move { if n < 6 { Err(Error::retriable("store down", "test")) } else { Ok(()) } }
    })
    .unwrap();
    s.add(1);
    s.wait_for_runs(6).await;
    let st = s.stats(&1).unwrap();
    assert_eq!((st.runs, st.failures, st.consecutive_failures), (6, 6, 6));
    s.wait_for_runs(8).await;
    s.shutdown().await;
    let starts = log.starts(1);
    let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    // Failures 1..5 back off ~1, 2, 4, 5 (capped), 5 s with jitter in [0.8, 1.2) never above the cap.
    let nominal = [1.0, 2.0, 4.0, 5.0, 5.0, 5.0];
    for (i, want) in nominal.iter().enumerate() {
        let got = gaps[i].as_secs_f64();
        assert!(got >= want * 0.8 - 1e-6 && got <= (want * 1.2f64).min(5.0) + 1e-3, "gap {i}: {got} s");
    }
    assert_eq!(gaps[6], Duration::from_secs(30), "a success waits the interval");
    let st = s.stats(&1).unwrap();
    assert_eq!((st.runs, st.failures, st.consecutive_failures), (8, 6, 0));
}

#[tokio::test(start_paused = true)]
async fn removal_during_a_run_drops_the_key_when_the_run_ends() {
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let runs = Arc::new(AtomicU64::new(0));
    let (st, rl, r) = (started.clone(), release.clone(), runs.clone());
    let s = Scheduler::start(cfg(2), &tokio::runtime::Handle::current(), move |_k: u32| {
        let (st, rl, r) = (st.clone(), rl.clone(), r.clone());
        async move {
            r.fetch_add(1, Ordering::SeqCst);
            let released = rl.notified();
            st.notify_one();
            released.await;
            Ok(())
        }
    })
    .unwrap();
    s.add(3);
    started.notified().await;
    assert!(s.stats(&3).unwrap().running);
    assert!(s.remove(&3));
    assert!(!s.remove(&3), "already removed");
    assert_eq!(s.stats(&3), None);
    assert!(s.keys().is_empty());
    assert!(!s.run_now(&3));
    release.notify_one();
    while s.running() > 0 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_secs(300)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "never rescheduled");
    assert!(s.keys().is_empty());
    assert!(s.add(3), "can be added again");
    started.notified().await;
    release.notify_one();
    s.wait_for_runs(1).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_key_never_runs_with_itself_and_the_pool_bounds_concurrency() {
    let now = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let per_key: Arc<Mutex<HashMap<u32, usize>>> = Arc::default();
    let (n, m, pk) = (now.clone(), max.clone(), per_key.clone());
    let config = SchedulerConfig { interval: Duration::from_millis(1), ..cfg(3) };
    let s = Scheduler::start(config, &tokio::runtime::Handle::current(), move |k: u32| {
        let (n, m, pk) = (n.clone(), m.clone(), pk.clone());
        async move {
            let c = n.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(c, Ordering::SeqCst);
            {
                let mut pk = pk.lock().unwrap();
                let e = pk.entry(k).or_default();
                *e += 1;
                assert_eq!(*e, 1, "key {k} runs twice at once");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            *pk.lock().unwrap().get_mut(&k).unwrap() -= 1;
            n.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }
    })
    .unwrap();
    for k in 0..10 {
        s.add(k);
    }
    for _ in 0..20 {
        for k in 0..10 {
            s.run_now(&k);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    s.wait_for_runs(5).await;
    s.shutdown().await;
    assert_eq!(max.load(Ordering::SeqCst), 3, "three workers, ten keys");
    for k in 0..10 {
        let st = s.stats(&k).unwrap();
        assert_eq!(st.failures, 0, "key {k}: a concurrent run would have panicked");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_counts_as_a_failure_and_workers_survive() {
    let s = Scheduler::start(cfg(1), &tokio::runtime::Handle::current(), move |k: u32| async move {
        if k == 0 {
            panic!("task bug");
        }
        Ok(())
    })
    .unwrap();
    s.add(0);
    s.wait_for_runs(2).await;
    s.add(1);
    s.wait_for_runs(2).await;
    let p = s.stats(&0).unwrap();
    assert!(p.runs >= 2 && p.failures == p.runs && p.consecutive_failures as u64 == p.runs, "{p:?}");
    let ok = s.stats(&1).unwrap();
    assert_eq!((ok.runs, ok.failures), (2, 0), "the one worker still runs tasks");
    s.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_a_running_task_and_nothing_runs_afterwards() {
    let started = Arc::new(Notify::new());
    let runs = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(AtomicU64::new(0));
    let (st, r, f) = (started.clone(), runs.clone(), finished.clone());
    let config = SchedulerConfig { interval: Duration::from_secs(1), ..cfg(2) };
    let s = Scheduler::start(config, &tokio::runtime::Handle::current(), move |_k: u32| {
        let (st, r, f) = (st.clone(), r.clone(), f.clone());
        async move {
            r.fetch_add(1, Ordering::SeqCst);
            st.notify_one();
            tokio::time::sleep(Duration::from_secs(10)).await;
            f.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    })
    .unwrap();
    s.add(1);
    started.notified().await;
    let t = Instant::now();
    s.shutdown().await;
    assert_eq!(finished.load(Ordering::SeqCst), 1, "shutdown returned before the run ended");
    assert!(Instant::now() - t >= Duration::from_secs(10) - Duration::from_millis(1));
    assert_eq!(s.running(), 0);
    s.add(2);
    s.run_now(&1);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "nothing runs after shutdown");
    s.wait_for_runs(100).await; // returns at once after shutdown
    s.shutdown().await; // again: at once
}
