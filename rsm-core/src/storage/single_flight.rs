//! Single-flight loads: however many tasks ask for the same key at once, one runs the load and the others
//! wait for its result. A failure is handed to the tasks that waited for it and then forgotten: the next
//! ask runs the load again.

use crate::error::Result;
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// The loads in flight, by key.
pub(crate) struct SingleFlight<K, V> {
    cells: Mutex<HashMap<K, Arc<OnceCell<V>>>>,
}

impl<K: Eq + Hash + Clone, V: Clone> SingleFlight<K, V> {
    pub(crate) fn new() -> Self {
        SingleFlight { cells: Mutex::new(HashMap::new()) }
    }

    fn cells(&self) -> std::sync::MutexGuard<'_, HashMap<K, Arc<OnceCell<V>>>> {
        // Each critical section leaves the map consistent, so a poisoned lock is usable.
        self.cells.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The result of `load` for `key`, run by this task or by the one already running it. `load` should
    /// look in the cache it fills first: a load that ended just before this task asked has left its value
    /// there, not here.
    pub(crate) async fn run<F, Fut>(&self, key: K, load: F) -> Result<V>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V>>,
    {
        let flight = self.claim(key);
        self.finish(flight, load).await
    }

    /// Takes part in the load of `key` now, before running it ([`Self::finish`]): from this call on,
    /// [`Self::running`] says so and other tasks asking for `key` wait for this load (a load started in the
    /// background is claimed before it is spawned).
    pub(crate) fn claim(&self, key: K) -> Flight<K, V> {
        let cell = self.cells().entry(key.clone()).or_insert_with(|| Arc::new(OnceCell::new())).clone();
        Flight { key, cell }
    }

    /// Runs or waits for the claimed load, as [`Self::run`].
    pub(crate) async fn finish<F, Fut>(&self, flight: Flight<K, V>, load: F) -> Result<V>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V>>,
    {
        let Flight { key, cell } = flight;
        let got = cell.get_or_try_init(load).await.cloned();
        let mut cells = self.cells();
        if cells.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            cells.remove(&key);
        }
        got
    }

    /// Whether a load of `key` is running.
    pub(crate) fn running(&self, key: &K) -> bool {
        self.cells().contains_key(key)
    }
}

/// A task's part in the load of one key ([`SingleFlight::claim`]).
pub(crate) struct Flight<K, V> {
    key: K,
    cell: Arc<OnceCell<V>>,
}

impl<K, V> std::fmt::Debug for SingleFlight<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let running = self.cells.lock().map_or(0, |c| c.len());
        f.debug_struct("SingleFlight").field("running", &running).finish()
    }
}
