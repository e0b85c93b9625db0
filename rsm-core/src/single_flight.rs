//! Single-flight loads: however many tasks ask for the same key at once, one runs the load and the others
//! wait for its result. A failure goes to the task that ran the load, and the next task waiting runs the
//! load itself. A load whose every task was dropped before it ended (a reader that stopped early, a fetch
//! cancelled) is forgotten, so it is not taken for one still running. The caches of the storage manager
//! load chunks, indexes and manifests this way, and the cloud backends their ranged reads.

use crate::error::Result;
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

type Cells<K, V> = Arc<Mutex<HashMap<K, Arc<OnceCell<V>>>>>;

fn lock<K, V>(cells: &Cells<K, V>) -> std::sync::MutexGuard<'_, HashMap<K, Arc<OnceCell<V>>>> {
    // Each critical section leaves the map consistent, so a poisoned lock is usable.
    cells.lock().unwrap_or_else(|p| p.into_inner())
}

/// The loads in flight, by key.
pub struct SingleFlight<K, V> {
    cells: Cells<K, V>,
}

impl<K: Eq + Hash + Clone, V: Clone> SingleFlight<K, V> {
    /// No load in flight.
    pub fn new() -> Self {
        SingleFlight { cells: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// The result of `load` for `key`, run by this task or by the one already running it. `load` should
    /// look in the cache it fills first: a load that ended just before this task asked has left its value
    /// there, not here.
    pub async fn run<F, Fut>(&self, key: K, load: F) -> Result<V>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V>>,
    {
        let flight = self.claim(key);
        self.finish(flight, load).await
    }

    /// Takes part in the load of `key` now, before running it ([`Self::finish`]): from this call on,
    /// [`Self::running`] says so and other tasks asking for `key` wait for this load (a load started in the
    /// background is claimed before it is spawned). Dropping the part unfinished, as the last task holding
    /// the load, forgets it.
    pub fn claim(&self, key: K) -> Flight<K, V> {
        let cell = lock(&self.cells).entry(key.clone()).or_insert_with(|| Arc::new(OnceCell::new())).clone();
        Flight { key, cell, cells: self.cells.clone() }
    }

    /// Runs or waits for the claimed load, as [`Self::run`].
    pub async fn finish<F, Fut>(&self, flight: Flight<K, V>, load: F) -> Result<V>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V>>,
    {
        let got = flight.cell.get_or_try_init(load).await.cloned();
        let mut cells = lock(&self.cells);
        if cells.get(&flight.key).is_some_and(|c| Arc::ptr_eq(c, &flight.cell)) {
            cells.remove(&flight.key);
        }
        got
    }

    /// Whether a load of `key` is running.
    pub fn running(&self, key: &K) -> bool {
        lock(&self.cells).contains_key(key)
    }
}

/// A task's part in the load of one key ([`SingleFlight::claim`]).
pub struct Flight<K: Eq + Hash, V> {
    key: K,
    cell: Arc<OnceCell<V>>,
    cells: Cells<K, V>,
}

impl<K: Eq + Hash, V> Drop for Flight<K, V> {
    fn drop(&mut self) {
        let mut cells = lock(&self.cells);
        // Under the lock no task can take a part meanwhile: two holders left are the map and this part.
        if cells.get(&self.key).is_some_and(|c| Arc::ptr_eq(c, &self.cell)) && Arc::strong_count(&self.cell) == 2 {
            cells.remove(&self.key);
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Default for SingleFlight<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> std::fmt::Debug for SingleFlight<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let running = self.cells.lock().map_or(0, |c| c.len());
        f.debug_struct("SingleFlight").field("running", &running).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_load_whose_every_part_was_dropped_unfinished_is_not_running() {
        let flights: SingleFlight<u32, u32> = SingleFlight::new();
        let (a, b) = (flights.claim(1), flights.claim(1));
        drop(a);
        assert!(flights.running(&1), "another task still holds the load");
        drop(b);
        assert!(!flights.running(&1), "the last part dropped unfinished forgets the load");

        // A load cancelled while it runs is forgotten as well, and the next ask runs it again.
        let pending = flights.run(2, std::future::pending::<Result<u32>>);
        let cancelled = tokio::time::timeout(std::time::Duration::from_millis(10), pending).await;
        assert!(cancelled.is_err());
        assert!(!flights.running(&2));
        assert_eq!(flights.run(2, || async { Ok(7) }).await.unwrap(), 7);
        assert!(!flights.running(&2));
    }
}
