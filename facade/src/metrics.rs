//! The metrics every face publishes for a store ([`Store::cache_metrics`](crate::Store::cache_metrics)), each
//! declared once here: its name, what it counts, and whether it is a total since a start or a value now. The
//! JNI face hands the names and descriptions to the plugin's Java metrics as they are; the C ABI and the CLI
//! read the same table.

/// Whether a metric counts since a start or is a value now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A count since the cache was made or the store was opened: it only grows.
    Total,
    /// A value now (bytes held, a state): it goes up and down.
    Now,
}

/// One metric of [`STORE_METRICS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    /// Its name, as exported (`chunk-cache-hits`).
    pub name: &'static str,
    /// What it counts, in a sentence a dashboard can show.
    pub description: &'static str,
    /// A total or a value now.
    pub kind: Kind,
}

const fn total(name: &'static str, description: &'static str) -> Metric {
    Metric { name, description, kind: Kind::Total }
}

const fn now(name: &'static str, description: &'static str) -> Metric {
    Metric { name, description, kind: Kind::Now }
}

/// The metrics of [`Store::cache_metrics`](crate::Store::cache_metrics), in its order: the caches' (the chunk
/// cache is the process's, shared by
/// the stores opened with the same cache settings), then the store's circuit breaker (`store.breaker.*`; all
/// 0 when it is off), the waits that passed `fetch.timeout.ms` or `copy.timeout.ms`, a cloud store's
/// throttled answers and retries its budget refused (0 for the other stores), and the bytes read from the
/// store, to set beside the bytes the fetches served.
pub const STORE_METRICS: [Metric; 30] = [
    total(
        "chunk-cache-hits",
        "Chunk reads served from the chunk cache's memory, since the cache was made (the process's chunk cache, \
         shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-misses",
        "Chunk reads the chunk cache's memory did not hold, since the cache was made (the process's chunk cache, \
         shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-evictions",
        "Chunks evicted from the chunk cache's memory to make room, since the cache was made (the process's chunk \
         cache, shared by the stores opened with the same cache settings)",
    ),
    now(
        "chunk-cache-bytes",
        "Bytes of chunks the chunk cache holds in memory now (the process's chunk cache, shared by the stores \
         opened with the same cache settings)",
    ),
    total(
        "chunk-cache-disk-hits",
        "Chunk reads served from the chunk cache's disk tier, since the cache was made (the process's chunk cache, \
         shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-disk-misses",
        "Chunk reads the chunk cache's disk tier did not hold, since the cache was made (the process's chunk cache, \
         shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-disk-evictions",
        "Chunk files evicted from the chunk cache's disk tier to make room, since the cache was made (the process's \
         chunk cache, shared by the stores opened with the same cache settings)",
    ),
    now(
        "chunk-cache-disk-bytes",
        "Bytes of chunks the chunk cache holds on disk now (the process's chunk cache, shared by the stores opened \
         with the same cache settings)",
    ),
    total(
        "chunk-cache-disk-dropped",
        "Chunk files of the disk tier that failed their check, were deleted and read from the store again, since \
         the cache was made (the process's chunk cache, shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-loads",
        "Chunks the chunk cache read from the store (prefetches included), since the cache was made (the process's \
         chunk cache, shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-loaded-bytes",
        "Bytes of the chunks the chunk cache read from the store, since the cache was made (the process's chunk \
         cache, shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-prefetched",
        "Chunks read ahead of a sequential reader, since the cache was made (the process's chunk cache, shared by \
         the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-prefetched-bytes-used",
        "Bytes of chunks read ahead that a reader then used, since the cache was made (the process's chunk cache, \
         shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-prefetched-bytes-wasted",
        "Bytes of chunks read ahead that were evicted before any reader used them, since the cache was made (the \
         process's chunk cache, shared by the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-bypassed",
        "Reads of a chunk missed for the first time, served from the store around the chunk cache (only the blocks \
         asked for; a second miss loads the chunk), since the cache was made (the process's chunk cache, shared by \
         the stores opened with the same cache settings)",
    ),
    total(
        "chunk-cache-bypassed-bytes",
        "Bytes of the reads served around the chunk cache, since the cache was made (the process's chunk cache, \
         shared by the stores opened with the same cache settings)",
    ),
    total("index-cache-hits", "Remote index reads served from the index cache, since the cache was made"),
    total(
        "index-cache-misses",
        "Remote index reads the index cache did not hold (read from the store), since the cache was made",
    ),
    total(
        "index-cache-evictions",
        "Remote indexes evicted from the index cache to make room, since the cache was made",
    ),
    now("index-cache-bytes", "Bytes of remote indexes the index cache holds now"),
    total("manifest-cache-hits", "Segment manifest lookups served from the manifest cache, since the cache was made"),
    total(
        "manifest-cache-misses",
        "Segment manifest lookups the manifest cache did not hold (read from the store), since the cache was made",
    ),
    now(
        "store-breaker-state",
        "The store's circuit breaker now: 0 closed (calls go to the store), 1 open (calls fail at once after \
         transient failures in a row), 2 half-open (one call probes)",
    ),
    total("store-breaker-opened", "Times the store's circuit breaker opened, since the store was opened"),
    total(
        "store-breaker-refused",
        "Calls the store's circuit breaker failed at once without sending them, since the store was opened",
    ),
    total(
        "store-breaker-down-ms",
        "Milliseconds the store's circuit breaker was open or half-open (the store taken as down), since the store \
         was opened",
    ),
    total(
        "store-timeouts",
        "Fetch waits and copies that passed fetch.timeout.ms or copy.timeout.ms (the store did not answer in time), \
         since the store was opened",
    ),
    total(
        "store-throttled",
        "Answers of the cloud store that said it is overloaded (429, 503 such as S3's SlowDown), since the store \
         was opened",
    ),
    total(
        "store-retries-refused",
        "Failed requests to the cloud store not retried because its retry budget was spent (<p>.retry.budget.*), \
         since the store was opened",
    ),
    total(
        "store-bytes-read",
        "Bytes read from the remote store (each retry's and read-ahead's included; a filesystem store's files read \
         in place not), since the store was opened: beside fetch-segment's bytes, what reading cost",
    ),
];

/// The names of [`STORE_METRICS`], in its order (what [`Store::cache_metrics`](crate::Store::cache_metrics)
/// returns values for).
pub const CACHE_METRICS: [&str; STORE_METRICS.len()] = names(&STORE_METRICS);

const fn names<const N: usize>(metrics: &[Metric; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = metrics[i].name;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_metric_is_named_once_and_described() {
        let mut seen = std::collections::BTreeSet::new();
        for m in STORE_METRICS {
            assert!(seen.insert(m.name), "{} declared twice", m.name);
            assert!(m.description.len() > 20 && !m.description.ends_with('.'), "{}: {}", m.name, m.description);
            let held_now = m.description.contains(" now");
            assert_eq!(m.kind == Kind::Now, held_now, "{}: a value now says so: {}", m.name, m.description);
        }
    }
}
