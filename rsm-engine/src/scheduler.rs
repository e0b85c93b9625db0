//! The scheduler (being written; this stand-in has its signatures only).
#![allow(missing_docs, dead_code)]
use std::time::Duration;

pub struct SchedulerConfig {
    pub workers: usize,
    pub interval: Duration,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
}

pub struct Scheduler<K>(std::marker::PhantomData<K>);

impl<K: Clone + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static> Scheduler<K> {
    pub fn start<F, Fut>(
        _config: SchedulerConfig,
        _runtime: &tokio::runtime::Handle,
        _task: F,
    ) -> rsm_core::Result<Self>
    where
        F: Fn(K) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = rsm_core::Result<()>> + Send + 'static,
    {
        Err(rsm_core::Error::invalid("not yet"))
    }
    pub fn add(&self, _key: K) -> bool {
        false
    }
    pub fn remove(&self, _key: &K) -> bool {
        false
    }
    pub async fn shutdown(&self) {}
}
