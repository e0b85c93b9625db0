//! One bounded, weighted, least-recently-used cache type with hit and miss counts: manifests and remote
//! indexes now, more later. Every operation is O(1) (the `lru` crate's linked hash map); eviction takes the
//! least recently used entries until the new one fits, never a scan of the whole map. Only successes are
//! ever inserted: a cache never remembers a failure.

use std::hash::Hash;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How a cached value counts against the cache's capacity.
pub type WeighFn<V> = fn(&V) -> u64;

/// What a cache has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found their entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries evicted to make room.
    pub evictions: u64,
    /// Entries held now.
    pub entries: u64,
    /// Their total weight.
    pub weight: u64,
    /// The weight budget.
    pub capacity: u64,
}

struct Inner<K, V> {
    /// Each value with the time it was inserted.
    map: lru::LruCache<K, (V, Instant)>,
    weight: u64,
}

/// A thread-safe cache holding values of total weight at most its capacity (a capacity of 0 holds
/// nothing). Values are cloned out (keep them behind an `Arc`, or as `Bytes`).
pub struct Cache<K, V> {
    inner: Mutex<Inner<K, V>>,
    capacity: u64,
    weigh: WeighFn<V>,
    /// How long an entry may be served after it was inserted (`None`: for as long as it stays).
    ttl: Option<Duration>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
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

impl<K: Eq + Hash, V: Clone> Cache<K, V> {
    /// A cache of `capacity` units of weight, each value weighing `weigh(value)`.
    pub fn new(capacity: u64, weigh: WeighFn<V>) -> Self {
        Cache {
            inner: Mutex::new(Inner { map: lru::LruCache::unbounded(), weight: 0 }),
            capacity,
            weigh,
            ttl: None,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// A cache of at most `entries` values, each weighing 1.
    pub fn with_entries(entries: usize) -> Self {
        Self::new(entries as u64, |_| 1)
    }

    /// The same cache, serving an entry for at most `ttl` after it was inserted; then it is a miss and gone.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K, V>> {
        // Every critical section leaves the map and its weight consistent, so a poisoned lock is usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value of `key`, now the most recently used; counts a hit or a miss.
    pub fn get(&self, key: &K) -> Option<V> {
        let v = {
            let mut g = self.lock();
            let expired = match (g.map.get(key), self.ttl) {
                (Some((_, at)), Some(ttl)) => at.elapsed() > ttl,
                _ => false,
            };
            if expired {
                if let Some((old, _)) = g.map.pop(key) {
                    g.weight -= (self.weigh)(&old);
                }
                None
            } else {
                g.map.get(key).map(|(v, _)| v.clone())
            }
        };
        let counter = if v.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        v
    }

    /// The value of `key` if held (and not expired), without counting a lookup or changing its recency.
    pub fn peek(&self, key: &K) -> Option<V> {
        let g = self.lock();
        match (g.map.peek(key), self.ttl) {
            (Some((_, at)), Some(ttl)) if at.elapsed() > ttl => None,
            (Some((v, _)), _) => Some(v.clone()),
            (None, _) => None,
        }
    }

    /// Whether `key` is held (and not expired), without counting a lookup or changing its recency.
    pub fn get_quiet(&self, key: &K) -> bool {
        let g = self.lock();
        match (g.map.peek(key), self.ttl) {
            (Some((_, at)), Some(ttl)) => at.elapsed() <= ttl,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// Keeps `value` under `key` as the most recently used, evicting the least recently used entries until
    /// it fits (a value heavier than the whole budget is not kept); returns the entries evicted to make room.
    pub fn insert(&self, key: K, value: V) -> Vec<(K, V)> {
        let w = (self.weigh)(&value);
        if w > self.capacity {
            self.remove(&key);
            return Vec::new();
        }
        let mut evicted = Vec::new();
        let mut g = self.lock();
        if let Some((old, _)) = g.map.put(key, (value, Instant::now())) {
            g.weight -= (self.weigh)(&old);
        }
        g.weight += w;
        while g.weight > self.capacity {
            let Some((k, (old, _))) = g.map.pop_lru() else { break };
            g.weight -= (self.weigh)(&old);
            self.evictions.fetch_add(1, Ordering::Relaxed);
            evicted.push((k, old));
        }
        evicted
    }

    /// Forgets `key`; returns its value if it was held.
    pub fn remove(&self, key: &K) -> Option<V> {
        let mut g = self.lock();
        let (old, _) = g.map.pop(key)?;
        g.weight -= (self.weigh)(&old);
        Some(old)
    }

    /// Forgets every entry whose key `pred` accepts; returns their keys.
    pub fn remove_where(&self, pred: impl Fn(&K) -> bool) -> Vec<K>
    where
        K: Clone,
    {
        let mut g = self.lock();
        let doomed: Vec<K> = g.map.iter().filter(|(k, _)| pred(k)).map(|(k, _)| k.clone()).collect();
        for k in &doomed {
            if let Some((old, _)) = g.map.pop(k) {
                g.weight -= (self.weigh)(&old);
            }
        }
        doomed
    }

    /// Hits, misses, evictions, entries and weight so far.
    pub fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            entries: g.map.len() as u64,
            weight: g.weight,
            capacity: self.capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_is_bounded_and_the_least_recently_used_go_first() {
        let c: Cache<u32, Vec<u8>> = Cache::new(1000, |v| v.len() as u64);
        for i in 0..10 {
            c.insert(i, vec![0; 100]);
        }
        assert_eq!(c.stats().weight, 1000);
        assert!(c.get(&0).is_some(), "0 is now the most recently used");
        let evicted: Vec<u32> = c.insert(10, vec![0; 250]).into_iter().map(|(k, _)| k).collect();
        // 250 more bytes: the three least recently used (1, 2, 3) make room, not 0.
        assert_eq!(evicted, [1, 2, 3], "the evicted entries are returned, oldest first");
        for (k, kept) in [(0, true), (1, false), (2, false), (3, false), (4, true), (10, true)] {
            assert_eq!(c.get(&k).is_some(), kept, "entry {k}");
        }
        let s = c.stats();
        assert_eq!((s.entries, s.weight, s.evictions), (8, 950, 3));
        c.insert(7, vec![0; 2000]);
        assert!(c.get(&7).is_none(), "heavier than the whole budget: not kept, and the old value is gone");
        c.insert(4, vec![0; 10]);
        assert_eq!(c.stats().weight, 950 - 100 - 100 + 10, "replacing an entry replaces its weight");
        c.remove_where(|k| *k >= 9);
        assert!(c.get(&10).is_none() && c.get(&9).is_none() && c.get(&8).is_some());
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (5, 6));
    }

    #[test]
    fn entries_expire_after_their_time() {
        let c: Cache<u32, u32> = Cache::with_entries(10).with_ttl(Duration::from_millis(50));
        c.insert(1, 1);
        assert_eq!(c.get(&1), Some(1));
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(c.get(&1), None, "expired");
        assert_eq!(c.stats().entries, 0, "and gone");
    }

    #[test]
    fn zero_capacity_holds_nothing() {
        let c: Cache<u32, u32> = Cache::with_entries(0);
        c.insert(1, 1);
        assert_eq!(c.get(&1), None);
        assert_eq!(c.stats(), CacheStats { misses: 1, ..Default::default() });
    }

    #[test]
    fn concurrent_readers_and_writers_keep_the_bound() {
        let c: std::sync::Arc<Cache<u64, Vec<u8>>> = std::sync::Arc::new(Cache::new(10_000, |v| v.len() as u64));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for i in 0..2_000u64 {
                        c.insert(t * 10_000 + i % 300, vec![0; 1 + (i % 97) as usize]);
                        let _ = c.get(&(i % 300));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let s = c.stats();
        assert!(s.weight <= 10_000, "{s:?}");
        assert_eq!(s.hits + s.misses, 8_000);
    }
}
