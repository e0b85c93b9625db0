//! The scheduler (SR-6, SR-7, SR-18): a thread-safe queue of keys (partitions) by next run time, run by a
//! fixed pool of workers on a tokio runtime.
//!
//! - A new key is due at once (SR-18: scheduled time 0).
//! - A run that succeeds makes the key due again at now + `interval` (`remote.log.manager.task.interval.ms`).
//! - A run that fails (an `Err`, or a panic, which is logged and counted as a failure) makes it due at now +
//!   [`backoff`] of its consecutive failures, with random jitter
//!   (`remote.log.manager.task.retry.backoff.ms` .. `remote.log.manager.task.retry.backoff.max.ms`).
//! - A key never runs twice at the same time; at most `workers` (`remote.log.manager.thread.pool.size`) runs
//!   are in flight.
//! - A removed key never runs again; a run in flight when it is removed finishes and is then dropped.
//!
//! Workers sleep on a [`Notify`] or until the earliest due time: no polling.

use crate::config::{RETRY_BACKOFF_MAX_MS, RETRY_BACKOFF_MS};
use futures::FutureExt;
use rsm_core::{Error, Result};
use rsm_tiering::settings::catalogue::{TASK_INTERVAL_MS, THREAD_POOL_SIZE};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Settings of a [`Scheduler`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Workers, the most runs in flight at once (`remote.log.manager.thread.pool.size`, default 2; at least 1).
    pub workers: usize,
    /// Time from a successful run to the key's next run (`remote.log.manager.task.interval.ms`, default 30 s;
    /// not zero).
    pub interval: Duration,
    /// Delay after the first failure in a row (`remote.log.manager.task.retry.backoff.ms`, default 500 ms; not
    /// zero); it doubles with each further failure.
    pub backoff_initial: Duration,
    /// The most a failure delays the next run (`remote.log.manager.task.retry.backoff.max.ms`, default 30 s;
    /// at least `backoff_initial`).
    pub backoff_max: Duration,
}

impl Default for SchedulerConfig {
    /// 2 workers, an interval of 30 s, backoff from 500 ms to 30 s.
    fn default() -> Self {
        SchedulerConfig {
            workers: 2,
            interval: Duration::from_secs(30),
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
        }
    }
}

impl SchedulerConfig {
    /// Checks the settings; an error names the Kafka key at fault.
    pub fn validate(&self) -> Result<()> {
        if self.workers == 0 {
            return Err(Error::config(THREAD_POOL_SIZE.key, "the scheduler needs at least 1 worker (workers = 0)"));
        }
        if self.interval.is_zero() {
            return Err(Error::config(TASK_INTERVAL_MS.key, "the task interval must be positive"));
        }
        if self.backoff_initial.is_zero() {
            return Err(Error::config(RETRY_BACKOFF_MS.key, "the retry backoff must be positive"));
        }
        if self.backoff_max < self.backoff_initial {
            return Err(Error::config(
                RETRY_BACKOFF_MAX_MS.key,
                format!(
                    "the maximum retry backoff ({} ms) is below the retry backoff ({} ms)",
                    self.backoff_max.as_millis(),
                    self.backoff_initial.as_millis()
                ),
            ));
        }
        Ok(())
    }
}

/// What a key's task has done since the key was added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// Runs completed, failed ones included.
    pub runs: u64,
    /// Runs that failed (returned an error or panicked).
    pub failures: u64,
    /// Failures since the last success.
    pub consecutive_failures: u32,
    /// Whether a run is in flight.
    pub running: bool,
}

/// The delay before the next run after `consecutive_failures` failures in a row: `backoff_initial * 2^(n-1)`
/// (`n` = 0 counts as 1) capped at `backoff_max`, then multiplied by a jitter factor `0.8 + 0.4 * jitter` (in
/// `[0.8, 1.2)` for `jitter` in `[0, 1)`; `jitter` outside is clamped, NaN is 0.5), and never above
/// `backoff_max`. Pure.
pub fn backoff(config: &SchedulerConfig, consecutive_failures: u32, jitter: f64) -> Duration {
    let exponent = consecutive_failures.saturating_sub(1).min(31);
    let base = config.backoff_initial.saturating_mul(1u32 << exponent).min(config.backoff_max);
    let jitter = if jitter.is_nan() { 0.5 } else { jitter.clamp(0.0, 1.0) };
    let factor = 0.8 + 0.4 * jitter;
    Duration::try_from_secs_f64(base.as_secs_f64() * factor).unwrap_or(config.backoff_max).min(config.backoff_max)
}

/// A jitter value in `[0, 1)` from the OS's random source (0.5, no jitter, if it fails).
fn random_jitter() -> f64 {
    match getrandom::u64() {
        Ok(r) => (r >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

type BoxedTask<K> = Box<dyn Fn(K) -> Pin<Box<dyn Future<Output = Result<()>> + Send>> + Send + Sync>;

struct Entry {
    stats: TaskStats,
    /// Its place in the queue, `(due, sequence)`, when it is waiting (not running).
    queued: Option<(Instant, u64)>,
    /// Removed while running: dropped when the run ends.
    removed: bool,
    /// Asked to run again at once while running.
    rerun: bool,
    /// Removed and added again while running: the run in flight is not counted in the fresh stats.
    stale_run: bool,
}

struct State<K> {
    entries: HashMap<K, Entry>,
    queue: BTreeMap<(Instant, u64), K>,
    sequence: u64,
    running: usize,
    shutdown: bool,
}

impl<K: Clone + Eq + Hash> State<K> {
    fn enqueue(&mut self, key: &K, due: Instant) {
        self.sequence += 1;
        let slot = (due, self.sequence);
        if let Some(e) = self.entries.get_mut(key) {
            if let Some(old) = e.queued.replace(slot) {
                self.queue.remove(&old);
            }
            self.queue.insert(slot, key.clone());
        }
    }
}

struct Inner<K> {
    config: SchedulerConfig,
    task: BoxedTask<K>,
    state: Mutex<State<K>>,
    /// Wakes the workers: a key was queued or moved, or shutdown began.
    work: Notify,
    /// Wakes waiters: a run ended, or shutdown began.
    changed: Notify,
}

impl<K> Inner<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A queue of keys by next run time, run by a fixed pool of workers. See the [module](self) docs.
pub struct Scheduler<K> {
    inner: Arc<Inner<K>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl<K> std::fmt::Debug for Scheduler<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl<K: Clone + Eq + Hash + std::fmt::Debug + Send + Sync + 'static> Scheduler<K> {
    /// Starts `config.workers` workers on `runtime`; `task(key)` is one run of the key's task. Fails with a
    /// configuration error naming the Kafka key when the settings are invalid ([`SchedulerConfig::validate`]).
    pub fn start<F, Fut>(config: SchedulerConfig, runtime: &tokio::runtime::Handle, task: F) -> Result<Self>
    where
        F: Fn(K) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        config.validate()?;
        let task: BoxedTask<K> = Box::new(move |k| Box::pin(task(k)));
        let inner = Arc::new(Inner {
            config,
            task,
            state: Mutex::new(State {
                entries: HashMap::new(),
                queue: BTreeMap::new(),
                sequence: 0,
                running: 0,
                shutdown: false,
            }),
            work: Notify::new(),
            changed: Notify::new(),
        });
        let workers = (0..inner.config.workers).map(|_| runtime.spawn(worker(inner.clone()))).collect();
        Ok(Scheduler { inner, workers: Mutex::new(workers) })
    }

    /// The settings.
    pub fn config(&self) -> &SchedulerConfig {
        &self.inner.config
    }

    /// Adds `key`, due at once; `false` (and nothing changes) if it is there already. A key removed while its
    /// run is in flight comes back with fresh stats and runs again once that run ends. After
    /// [`Scheduler::shutdown`] keys are still kept but never run.
    pub fn add(&self, key: K) -> bool {
        let mut s = self.inner.lock();
        let fresh = Entry { stats: TaskStats::default(), queued: None, removed: false, rerun: false, stale_run: false };
        match s.entries.get_mut(&key) {
            Some(e) if !e.removed => return false,
            Some(e) => {
                let stats = TaskStats { running: true, ..TaskStats::default() };
                *e = Entry { stats, rerun: true, stale_run: true, ..fresh };
            }
            None => {
                s.entries.insert(key.clone(), fresh);
                s.enqueue(&key, Instant::now());
            }
        }
        drop(s);
        self.inner.work.notify_waiters();
        true
    }

    /// Removes `key`: it never runs again. A run in flight finishes and the key is then dropped, not
    /// rescheduled. `false` if it was not there.
    pub fn remove(&self, key: &K) -> bool {
        let mut s = self.inner.lock();
        let Some(e) = s.entries.get_mut(key).filter(|e| !e.removed) else {
            return false;
        };
        if e.stats.running {
            e.removed = true;
            e.rerun = false;
        } else if let Some(slot) = s.entries.remove(key).and_then(|e| e.queued) {
            s.queue.remove(&slot);
        }
        drop(s);
        self.inner.changed.notify_waiters();
        true
    }

    /// Moves the key's next run to now; when it is running, it runs again as soon as that run ends. `false`
    /// if it is not there.
    pub fn run_now(&self, key: &K) -> bool {
        let mut s = self.inner.lock();
        match s.entries.get_mut(key) {
            Some(e) if e.removed => return false,
            Some(e) if e.stats.running => e.rerun = true,
            Some(_) => s.enqueue(key, Instant::now()),
            None => return false,
        }
        drop(s);
        self.inner.work.notify_waiters();
        true
    }

    /// The keys, in no order (removed ones with a run still in flight excluded).
    pub fn keys(&self) -> Vec<K> {
        self.inner.lock().entries.iter().filter(|(_, e)| !e.removed).map(|(k, _)| k.clone()).collect()
    }

    /// What the key's task has done since it was added; `None` if it is not there.
    pub fn stats(&self, key: &K) -> Option<TaskStats> {
        self.inner.lock().entries.get(key).filter(|e| !e.removed).map(|e| e.stats)
    }

    /// Runs in flight now.
    pub fn running(&self) -> usize {
        self.inner.lock().running
    }

    /// Waits until every key has completed at least `runs` runs since it was added (for `rsm tier` once and
    /// for tests); returns early on shutdown. Keys added while waiting count too.
    pub async fn wait_for_runs(&self, runs: u64) {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let s = self.inner.lock();
                if s.shutdown || s.entries.values().filter(|e| !e.removed).all(|e| e.stats.runs >= runs) {
                    return;
                }
            }
            changed.await;
        }
    }

    /// Stops: no new run starts, waits for runs in flight, and returns when no task is left running (the
    /// workers have exited). Calling it again returns at once once that is so.
    pub async fn shutdown(&self) {
        self.inner.lock().shutdown = true;
        self.inner.work.notify_waiters();
        self.inner.changed.notify_waiters();
        let workers = std::mem::take(&mut *self.workers.lock().unwrap_or_else(|p| p.into_inner()));
        for w in workers {
            if let Err(e) = w.await {
                tracing::error!(error = %e, "a scheduler worker ended abnormally");
            }
        }
        // Another caller may have taken the workers: wait for the runs themselves.
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.inner.lock().running == 0 {
                return;
            }
            changed.await;
        }
    }
}

impl<K> Drop for Scheduler<K> {
    /// Stops the workers (runs in flight finish on their own) when [`Scheduler::shutdown`] was not called.
    fn drop(&mut self) {
        self.inner.lock().shutdown = true;
        self.inner.work.notify_waiters();
        self.inner.changed.notify_waiters();
    }
}

/// What a worker does next.
enum Next<K> {
    Run(K),
    SleepUntil(Instant),
    Wait,
    Stop,
}

fn pick<K: Clone + Eq + Hash>(inner: &Inner<K>) -> Next<K> {
    let mut s = inner.lock();
    if s.shutdown {
        return Next::Stop;
    }
    let Some((&slot, _)) = s.queue.first_key_value() else {
        return Next::Wait;
    };
    if slot.0 > Instant::now() {
        return Next::SleepUntil(slot.0);
    }
    let Some(key) = s.queue.remove(&slot) else {
        return Next::Wait;
    };
    if let Some(e) = s.entries.get_mut(&key) {
        e.queued = None;
        e.stats.running = true;
    }
    s.running += 1;
    Next::Run(key)
}

async fn worker<K: Clone + Eq + Hash + std::fmt::Debug + Send + Sync + 'static>(inner: Arc<Inner<K>>) {
    loop {
        let work = inner.work.notified();
        tokio::pin!(work);
        work.as_mut().enable();
        match pick(&inner) {
            Next::Stop => return,
            Next::Run(key) => run_one(&inner, key).await,
            Next::Wait => work.await,
            Next::SleepUntil(at) => {
                tokio::select! {
                    _ = work => {}
                    _ = tokio::time::sleep_until(at) => {}
                }
            }
        }
    }
}

async fn run_one<K: Clone + Eq + Hash + std::fmt::Debug + Send + Sync + 'static>(inner: &Inner<K>, key: K) {
    let outcome = AssertUnwindSafe(async { (inner.task)(key.clone()).await }).catch_unwind().await;
    let failed = match outcome {
        Ok(Ok(())) => false,
        Ok(Err(e)) => {
            tracing::warn!(key = ?key, error = %e.full_message(), "scheduled task failed");
            true
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            tracing::error!(key = ?key, panic = %what, "scheduled task panicked; counted as a failure");
            true
        }
    };
    let mut s = inner.lock();
    s.running = s.running.saturating_sub(1);
    let now = Instant::now();
    let mut next = None;
    if let Some(e) = s.entries.get_mut(&key) {
        if e.removed {
            s.entries.remove(&key);
        } else if std::mem::take(&mut e.stale_run) {
            e.stats.running = false;
            e.rerun = false;
            next = Some(now);
        } else {
            e.stats.running = false;
            e.stats.runs += 1;
            if failed {
                e.stats.failures += 1;
                e.stats.consecutive_failures = e.stats.consecutive_failures.saturating_add(1);
            } else {
                e.stats.consecutive_failures = 0;
            }
            next = Some(if std::mem::take(&mut e.rerun) {
                now
            } else if failed {
                now + backoff(&inner.config, e.stats.consecutive_failures, random_jitter())
            } else {
                now + inner.config.interval
            });
        }
    }
    if let Some(at) = next {
        s.enqueue(&key, at);
    }
    drop(s);
    inner.work.notify_waiters();
    inner.changed.notify_waiters();
}

#[cfg(test)]
mod tests;
