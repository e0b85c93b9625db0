//! The rskafka client as the manager uses it: errors classified, every call bounded in time, topics
//! created with their configs.

use super::KafkaMetadataConfig;
use rskafka::BackoffConfig;
use rskafka::chrono::{DateTime, Utc};
use rskafka::client::error::Error as KafkaError;
use rskafka::client::{Client, ClientBuilder};
use rsm_core::error::{Error, Result};
use std::future::Future;
use std::time::Duration;

/// Bytes asked of one fetch.
pub(super) const FETCH_MAX_BYTES: i32 = 8 * 1024 * 1024;
/// How long the broker may hold a fetch that finds nothing yet.
pub(super) const FETCH_MAX_WAIT_MS: i32 = 500;

/// An rskafka error as ours: connection trouble and timeouts are transient.
pub(super) fn kafka_error(what: String, e: KafkaError) -> Error {
    match &e {
        KafkaError::Connection(_) | KafkaError::Request(_) | KafkaError::Timeout | KafkaError::RetryFailed(_) => {
            Error::retriable(what, e)
        }
        _ => Error::storage(what, e),
    }
}

/// Runs `f` within `limit`, or fails naming `what`.
pub(super) async fn within<T>(
    limit: Duration,
    what: impl Fn() -> String,
    f: impl Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(Error::retriable(format!("{} did not finish within {limit:?}", what()), KafkaError::Timeout)),
    }
}

/// A client whose retries end after `request_timeout`.
pub(super) async fn connect(config: &KafkaMetadataConfig) -> Result<Client> {
    let backoff = BackoffConfig {
        init_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_secs(2),
        base: 2.0,
        deadline: Some(config.request_timeout),
    };
    let servers = config.bootstrap_servers.join(",");
    let build = async {
        ClientBuilder::new(config.bootstrap_servers.clone())
            .client_id(config.client_id.as_str())
            .backoff_config(backoff)
            .build()
            .await
            .map_err(|e| kafka_error(format!("connecting to Kafka at {servers}"), e))
    };
    within(config.request_timeout, || format!("connecting to Kafka at {servers}"), build).await
}

/// The partition count of `topic`, `None` when the cluster does not list it (nothing is created).
pub(super) async fn find_topic(client: &Client, config: &KafkaMetadataConfig, topic: &str) -> Result<Option<usize>> {
    let what = || format!("listing topics for {topic}");
    let topics =
        within(config.request_timeout, what, async { client.list_topics().await.map_err(|e| kafka_error(what(), e)) })
            .await?;
    Ok(topics.into_iter().find(|t| t.name == topic).map(|t| t.partitions.len()))
}

/// The partition count of `topic`, creating it with `partitions`, `replication_factor` and the topic
/// `configs` when missing ([`admin::create_topic`](crate::admin): rskafka can not send topic configs).
pub(super) async fn ensure_topic(
    client: &Client,
    config: &KafkaMetadataConfig,
    topic: &str,
    partitions: u32,
    replication_factor: i16,
    configs: &[(&str, String)],
) -> Result<usize> {
    let timeout = config.request_timeout;
    let find = || find_topic(client, config, topic);
    if let Some(n) = find().await? {
        return Ok(n);
    }
    let new = crate::admin::NewTopic { name: topic, partitions: partitions as i32, replication_factor, configs };
    if crate::admin::create_topic(&config.bootstrap_servers, &config.client_id, &new, timeout).await? {
        tracing::info!(topic, partitions, replication_factor, ?configs, "created topic {topic}");
    }
    // Listed once the brokers know it (created now, or by another host meanwhile).
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(n) = find().await? {
            return Ok(n);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::retriable(
                format!("topic {topic} was created but is not listed yet"),
                KafkaError::Timeout,
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Now, as a record timestamp (rskafka's chrono has no clock feature).
pub(super) fn now() -> DateTime<Utc> {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
