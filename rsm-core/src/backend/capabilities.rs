//! What a store can do beyond the [`StorageBackend`](super::StorageBackend) contract, in one value, so that
//! the layers and the facade ask one question of it, however the store was opened.

/// A store's optional features ([`super::StorageBackend::capabilities`]); the default has none of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Capabilities {
    /// The store's own client retries transient failures (the cloud stores' does): no retry layer is
    /// stacked over it, so that no request is retried twice over.
    pub retries_itself: bool,
    /// The store is across a network (a cloud store, HDFS), where one long read is bound by one
    /// connection's throughput: long reads are split into parts read at once
    /// ([`super::layers::ParallelReads`], `fetch.part.size`).
    pub remote: bool,
    /// [`super::StorageBackend::open_local`] opens this store's objects: they are files this process reads
    /// itself, which the kernel's page cache already keeps in memory (the filesystem store).
    pub reads_local_files: bool,
}

impl Capabilities {
    /// A cloud store's: its client retries, across a network.
    pub const CLOUD: Capabilities = Capabilities { retries_itself: true, remote: true, reads_local_files: false };
}
