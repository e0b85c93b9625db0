//! One bounded, weighted cache type with hit and miss counts, for manifests now and for indexes and
//! chunks later. Eviction is quick_cache's CLOCK-Pro-like policy over a weight budget, never a scan of the
//! whole map. Only successes are ever inserted: a cache never remembers a failure.

use quick_cache::Weighter;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};

/// How a cached value counts against the cache's capacity.
pub type WeighFn<V> = fn(&V) -> u64;

#[derive(Clone)]
struct ByFn<V>(WeighFn<V>);

impl<K, V> Weighter<K, V> for ByFn<V> {
    fn weight(&self, _key: &K, val: &V) -> u64 {
        (self.0)(val)
    }
}

/// What a cache has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found their entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries held now.
    pub entries: u64,
    /// Their total weight.
    pub weight: u64,
    /// The weight budget.
    pub capacity: u64,
}

/// A thread-safe cache holding values of total weight at most its capacity (a capacity of 0 holds
/// nothing). Values are cloned out (keep them behind an `Arc`).
pub struct Cache<K, V> {
    inner: Option<quick_cache::sync::Cache<K, V, ByFn<V>>>,
    capacity: u64,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<K, V> std::fmt::Debug for Cache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity)
            .field("hits", &self.hits.load(Ordering::Relaxed))
            .field("misses", &self.misses.load(Ordering::Relaxed))
            .finish()
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Cache<K, V> {
    /// A cache of `capacity` units of weight, each value weighing `weigh(value)`; `expected_items` sizes
    /// its tables.
    pub fn new(capacity: u64, expected_items: usize, weigh: WeighFn<V>) -> Self {
        let inner = (capacity > 0)
            .then(|| quick_cache::sync::Cache::with_weighter(expected_items.max(1), capacity, ByFn(weigh)));
        Cache { inner, capacity, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// A cache of at most `entries` values, each weighing 1.
    pub fn with_entries(entries: usize) -> Self {
        Self::new(entries as u64, entries, |_| 1)
    }

    /// The value of `key`, counting a hit or a miss.
    pub fn get(&self, key: &K) -> Option<V> {
        let v = self.inner.as_ref().and_then(|c| c.get(key));
        let counter = if v.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        v
    }

    /// Keeps `value` under `key`, evicting others as the weight budget requires (a value heavier than the
    /// whole budget is not kept).
    pub fn insert(&self, key: K, value: V) {
        if let Some(c) = &self.inner {
            c.insert(key, value);
        }
    }

    /// Forgets `key`.
    pub fn remove(&self, key: &K) {
        if let Some(c) = &self.inner {
            c.remove(key);
        }
    }

    /// Hits, misses, entries and weight so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: self.inner.as_ref().map_or(0, |c| c.len() as u64),
            weight: self.inner.as_ref().map_or(0, |c| c.weight()),
            capacity: self.capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_is_bounded_hits_and_misses_are_counted() {
        let c: Cache<u32, Vec<u8>> = Cache::new(1000, 16, |v| v.len() as u64);
        for i in 0..100 {
            c.insert(i, vec![0; 100]);
            let s = c.stats();
            assert!(s.weight <= 1000, "after {i}: {s:?}");
        }
        assert!(c.stats().entries <= 10);
        assert!(c.get(&99).is_some(), "the newest entry stays");
        assert!(c.get(&1000).is_none());
        c.insert(7, vec![0; 2000]);
        assert!(c.get(&7).is_none(), "heavier than the whole budget: not kept");
        c.remove(&99);
        assert!(c.get(&99).is_none());
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (1, 3));
    }

    #[test]
    fn zero_capacity_holds_nothing() {
        let c: Cache<u32, u32> = Cache::with_entries(0);
        c.insert(1, 1);
        assert_eq!(c.get(&1), None);
        assert_eq!(c.stats(), CacheStats { misses: 1, ..Default::default() });
    }
}
