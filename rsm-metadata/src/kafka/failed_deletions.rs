//! Failed deletions (SR-35) on a Kafka topic.

use super::KafkaMetadataConfig;
use super::client::{FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS, connect, ensure_topic, find_topic, kafka_error, now, within};
use crate::events::MetadataEvent;
use crate::records;
use async_trait::async_trait;
use rskafka::client::Client;
use rskafka::client::partition::{Compression, OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::record::Record;
use rsm_core::error::{Error, Result};
use rsm_core::model::{RemoteLogSegmentId, RemoteLogSegmentMetadata};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// Failed deletions (SR-35) on a Kafka topic (`__remote_segments_to_be_deleted`, one partition): a record
/// per failed deletion keyed by the segment's id (its Kafka `Uuid` string), its value the full metadata as
/// [`records::encode`] writes a [`MetadataEvent::Segment`] (so a retry can delete it); a drained deletion is
/// a record with the same key and no value, so a compacted topic keeps only what is left to do.
pub struct KafkaFailedDeletions {
    topic: String,
    /// `None`: opened to read only on a cluster without the topic (nothing to list).
    client: Option<PartitionClient>,
    timeout: Duration,
    read_only: bool,
}

impl std::fmt::Debug for KafkaFailedDeletions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaFailedDeletions")
            .field("topic", &self.topic)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl KafkaFailedDeletions {
    /// Connects and creates the topic [`KafkaMetadataConfig::failed_deletions_topic`] if missing (one
    /// partition, the configured replication factor; not compacted: see the module's limits).
    pub async fn open(config: &KafkaMetadataConfig) -> Result<Self> {
        let client = connect(config).await?;
        let topic = config.failed_deletions_topic.clone();
        let n = ensure_topic(
            &client,
            config,
            &topic,
            1,
            config.replication_factor,
            &[("cleanup.policy", "compact".to_string())],
        )
        .await?;
        Self::with_topic(config, &client, topic, n, false).await
    }

    /// Connects to list the failed deletions only: the topic is not created (a cluster without it has no
    /// failed deletions), and recording or draining one is refused with an invalid-argument error saying
    /// it was opened to read only.
    pub async fn open_read_only(config: &KafkaMetadataConfig) -> Result<Self> {
        let client = connect(config).await?;
        let topic = config.failed_deletions_topic.clone();
        match find_topic(&client, config, &topic).await? {
            Some(n) => Self::with_topic(config, &client, topic, n, true).await,
            None => {
                tracing::debug!(topic, "the failed-deletions topic does not exist: no failed deletions");
                Ok(KafkaFailedDeletions { topic, client: None, timeout: config.request_timeout, read_only: true })
            }
        }
    }

    /// Over the existing `topic` of `partitions` partitions (only 0 is used).
    async fn with_topic(
        config: &KafkaMetadataConfig,
        client: &Client,
        topic: String,
        partitions: usize,
        read_only: bool,
    ) -> Result<Self> {
        if partitions != 1 {
            tracing::warn!(topic, partitions, "the failed-deletions topic has several partitions: only 0 is used");
        }
        let what = || format!("connecting to the leader of {topic}-0");
        let pc = within(config.request_timeout, what, async {
            client
                .partition_client(topic.as_str(), 0, UnknownTopicHandling::Retry)
                .await
                .map_err(|e| kafka_error(what(), e))
        })
        .await?;
        Ok(KafkaFailedDeletions { topic, client: Some(pc), timeout: config.request_timeout, read_only })
    }

    /// Whether it was opened with [`open_read_only`](Self::open_read_only).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The record key of a segment.
    pub fn key(id: &RemoteLogSegmentId) -> String {
        id.id.to_string()
    }

    async fn produce(&self, key: String, value: Option<Vec<u8>>) -> Result<()> {
        let client = match (&self.client, self.read_only) {
            (Some(c), false) => c,
            _ => {
                let what = if value.is_some() { "recording a failed deletion" } else { "draining a failed deletion" };
                return Err(Error::invalid(format!(
                    "{what} (segment {key}): the failed deletions of topic {} were opened to read only",
                    self.topic
                )));
            }
        };
        let record = Record { key: Some(key.into_bytes()), value, headers: BTreeMap::new(), timestamp: now() };
        let what = || format!("producing to {}", self.topic);
        within(self.timeout, what, async {
            client.produce(vec![record], Compression::NoCompression).await.map_err(|e| kafka_error(what(), e))
        })
        .await
        .map(|_| ())
    }

    /// Records a segment whose deletion failed.
    pub async fn record(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        let value = records::encode(&MetadataEvent::Segment(metadata.clone()));
        self.produce(Self::key(&metadata.remote_log_segment_id), Some(value)).await
    }

    /// Marks a segment's failed deletion as done (a record with its key and no value).
    pub async fn drain(&self, id: &RemoteLogSegmentId) -> Result<()> {
        self.produce(Self::key(id), None).await
    }

    /// Every failed deletion recorded and not drained, in the order first recorded; the topic is read from
    /// its start to its current end.
    pub async fn list(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        let Some(client) = &self.client else { return Ok(Vec::new()) };
        let what = || format!("reading {}", self.topic);
        let offset = |at| async move {
            within(self.timeout, what, async { client.get_offset(at).await.map_err(|e| kafka_error(what(), e)) }).await
        };
        let mut next = offset(OffsetAt::Earliest).await?;
        let end = offset(OffsetAt::Latest).await?;
        // key -> (first offset, metadata)
        let mut pending: HashMap<Vec<u8>, (i64, RemoteLogSegmentMetadata)> = HashMap::new();
        let read = async {
            while next < end {
                let (batch, _) = client
                    .fetch_records(next, 1..FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS)
                    .await
                    .map_err(|e| kafka_error(format!("reading {} at {next}", self.topic), e))?;
                for r in batch {
                    next = r.offset + 1;
                    let Some(key) = r.record.key else {
                        tracing::warn!(topic = %self.topic, offset = r.offset, "skipped a record without a key");
                        continue;
                    };
                    match r.record.value.as_deref().map(records::decode) {
                        None => {
                            pending.remove(&key);
                        }
                        Some(Ok(MetadataEvent::Segment(m))) => {
                            let first = pending.get(&key).map_or(r.offset, |(o, _)| *o);
                            pending.insert(key, (first, m));
                        }
                        Some(Ok(other)) => {
                            tracing::warn!(topic = %self.topic, offset = r.offset, event = ?other,
                                "skipped a record that holds no segment metadata");
                        }
                        Some(Err(e)) => {
                            tracing::warn!(topic = %self.topic, offset = r.offset, error = %e.full_message(),
                                "skipped a record that does not decode");
                        }
                    }
                }
            }
            Ok::<_, Error>(())
        };
        within(self.timeout, what, read).await?;
        let mut out: Vec<_> = pending.into_values().collect();
        out.sort_by_key(|(o, _)| *o);
        Ok(out.into_iter().map(|(_, m)| m).collect())
    }
}

#[async_trait]
impl crate::failed_deletions::FailedDeletions for KafkaFailedDeletions {
    async fn record(&self, metadata: &RemoteLogSegmentMetadata) -> Result<()> {
        KafkaFailedDeletions::record(self, metadata).await
    }

    async fn list(&self) -> Result<Vec<RemoteLogSegmentMetadata>> {
        KafkaFailedDeletions::list(self).await
    }

    async fn drain(&self, id: &RemoteLogSegmentId) -> Result<()> {
        KafkaFailedDeletions::drain(self, id).await
    }
}
