//! Consuming the metadata topic: each metadata partition loaded from its snapshot and caught up to the
//! topic's end before it is read or written, its records applied in order to the partitions' states.

use super::*;

impl KafkaMetadataManager {
    /// Every snapshot is written here (catch-ups, [`save_snapshots`](Self::save_snapshots), partitions
    /// stopped, close): a manager opened to read only writes none.
    pub(super) fn save_snapshot(&self, meta: &mut MetaPartition) -> Result<()> {
        if self.access == Access::ReadOnly {
            return Ok(());
        }
        let Some(state) = meta.state.as_mut() else { return Ok(()) };
        if state.saved_offset == Some(state.next_offset) {
            return Ok(());
        }
        let path = self.config.snapshot_path(meta.index);
        snapshot::save(&path, state.next_offset, &state.store)?;
        tracing::debug!(path = %path.display(), next_offset = state.next_offset, "saved metadata snapshot");
        state.saved_offset = Some(state.next_offset);
        state.applied_since_snapshot = 0;
        Ok(())
    }

    pub(super) async fn partition_client(&self, meta: &mut MetaPartition) -> Result<Arc<PartitionClient>> {
        if let Some(c) = &meta.client {
            return Ok(Arc::clone(c));
        }
        let (topic, index) = (&self.config.topic, meta.index);
        let what = || format!("connecting to the leader of {topic}-{index}");
        let c = within(self.config.request_timeout, what, async {
            self.client
                .partition_client(topic.as_str(), index, UnknownTopicHandling::Retry)
                .await
                .map_err(|e| kafka_error(what(), e))
        })
        .await?;
        let c = Arc::new(c);
        meta.client = Some(Arc::clone(&c));
        Ok(c)
    }

    pub(super) async fn offset(&self, client: &PartitionClient, at: OffsetAt) -> Result<i64> {
        let what = || format!("reading the {at:?} offset of {}-{}", client.topic(), client.partition());
        within(self.config.request_timeout, what, async {
            client.get_offset(at).await.map_err(|e| kafka_error(what(), e))
        })
        .await
    }

    /// Loads the metadata partition's snapshot, if it has not been read yet, and checks its position
    /// against the topic's offsets.
    pub(super) async fn ensure_loaded(&self, meta: &mut MetaPartition, client: &PartitionClient) -> Result<()> {
        if meta.state.is_some() {
            return Ok(());
        }
        let path = self.config.snapshot_path(meta.index);
        let loaded = match snapshot::load(&path) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e.full_message(),
                    "the metadata snapshot is damaged: reading the partition from its start");
                None
            }
        };
        let earliest = self.offset(client, OffsetAt::Earliest).await?;
        let state = match loaded {
            Some(s) => {
                let latest = self.offset(client, OffsetAt::Latest).await?;
                if s.next_offset < earliest || s.next_offset > latest {
                    tracing::warn!(path = %path.display(), next_offset = s.next_offset, earliest, latest,
                        "the metadata snapshot's position is outside the topic's offsets: reading from the start");
                    None
                } else {
                    tracing::info!(path = %path.display(), next_offset = s.next_offset, "loaded metadata snapshot");
                    Some(ConsumedState {
                        store: s.store,
                        next_offset: s.next_offset,
                        applied_since_snapshot: 0,
                        saved_offset: Some(s.next_offset),
                    })
                }
            }
            None => None,
        };
        if state.is_none() && earliest > 0 {
            tracing::warn!(topic = %self.config.topic, partition = meta.index, earliest,
                "the metadata partition starts at {earliest}: the records before it are gone (retention or deleted \
                 records), and the state they held with them");
        }
        meta.state = Some(state.unwrap_or(ConsumedState {
            store: MetadataStore::new(),
            next_offset: earliest,
            applied_since_snapshot: 0,
            saved_offset: None,
        }));
        Ok(())
    }

    /// Reads metadata partition `meta` up to `target` (exclusive; `None`: its current high watermark),
    /// applying every event in order, within the consume wait. Returns the result of applying the record at
    /// `watch`, if it was read.
    pub(super) async fn catch_up(
        &self,
        meta: &mut MetaPartition,
        target: Option<i64>,
        watch: Option<i64>,
    ) -> Result<Option<Result<()>>> {
        if self.topic_missing {
            meta.state.get_or_insert_with(|| ConsumedState {
                store: MetadataStore::new(),
                next_offset: 0,
                applied_since_snapshot: 0,
                saved_offset: None,
            });
            return Ok(None);
        }
        let (topic, index) = (self.config.topic.clone(), meta.index);
        let what = || format!("catching up with {topic}-{index}");
        // Boxed: the nested futures are otherwise too deep for the compiler's layout queries.
        within(self.config.consume_wait, what, Box::pin(self.catch_up_inner(meta, target, watch))).await
    }

    pub(super) async fn catch_up_inner(
        &self,
        meta: &mut MetaPartition,
        target: Option<i64>,
        watch: Option<i64>,
    ) -> Result<Option<Result<()>>> {
        let client = self.partition_client(meta).await?;
        self.ensure_loaded(meta, &client).await?;
        let end = match target {
            Some(t) => t,
            None => self.offset(&client, OffsetAt::Latest).await?,
        };
        let mut watched = None;
        let (topic, index) = (client.topic().to_string(), meta.index);
        loop {
            let state = meta.state.as_mut().expect("loaded above");
            if state.next_offset >= end {
                break;
            }
            let from = state.next_offset;
            let fetched = client.fetch_records(from, 1..FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS).await;
            let (batch, high_watermark) = match fetched {
                Ok(r) => r,
                Err(KafkaError::ServerError { protocol_error: ProtocolError::OffsetOutOfRange, .. }) => {
                    let earliest = self.offset(&client, OffsetAt::Earliest).await?;
                    if from < earliest {
                        tracing::warn!(
                            topic,
                            partition = index,
                            from,
                            earliest,
                            "metadata records before {earliest} are gone (retention): reading from the start, the \
                             state of what they held is lost"
                        );
                        *state = ConsumedState {
                            store: MetadataStore::new(),
                            next_offset: earliest,
                            applied_since_snapshot: 0,
                            saved_offset: None,
                        };
                        continue;
                    }
                    return Err(Error::storage(
                        format!("reading {topic}-{index} at {from}: offset out of range (log start {earliest})"),
                        KafkaError::Timeout,
                    ));
                }
                Err(e) => return Err(kafka_error(format!("reading {topic}-{index} at {from}"), e)),
            };
            self.records_fetched.fetch_add(batch.len() as u64, Ordering::Relaxed);
            if batch.is_empty() && high_watermark <= from {
                // Nothing more yet (the target is past the end): the consume wait bounds the loop.
                continue;
            }
            for r in batch {
                let result = apply_record(
                    &mut state.store,
                    &topic,
                    index,
                    r.offset,
                    r.record.key.as_deref(),
                    r.record.value.as_deref(),
                );
                if watch == Some(r.offset) {
                    watched = Some(result);
                }
                state.next_offset = r.offset + 1;
                state.applied_since_snapshot += 1;
            }
        }
        let state = meta.state.as_ref().expect("loaded above");
        if state.applied_since_snapshot >= self.config.snapshot_interval_events
            && let Err(e) = self.save_snapshot(meta)
        {
            tracing::warn!(error = %e.full_message(), "could not save a metadata snapshot (kept in memory)");
        }
        Ok(watched)
    }
}

/// Decodes and applies one record (its key is read only for a tombstone, KIP-1266); a record that fails
/// to decode or that Kafka's rules refuse is logged and skipped. Returns what applying it gave.
pub(super) fn apply_record(
    store: &mut MetadataStore,
    topic: &str,
    partition: i32,
    offset: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<()> {
    let event = match records::decode_record(key, value) {
        Ok(records::MetadataRecord::Event(e, _)) => e,
        Ok(records::MetadataRecord::Tombstone(t)) => {
            match store.apply_tombstone(&t) {
                Some(s) => {
                    tracing::info!(topic, partition, offset, %t, state = crate::events::segment_state_name(s.state),
                    "a tombstone removed a segment whose deletion had not finished here")
                }
                None => tracing::debug!(topic, partition, offset, %t, "applied a tombstone (nothing held)"),
            }
            return Ok(());
        }
        Err(e) => {
            let e = e.context(format!("{topic}-{partition} offset {offset}"));
            tracing::warn!(topic, partition, offset, error = %e.full_message(), "skipped a metadata record that does not decode");
            return Err(e);
        }
    };
    let result = store.apply(&event);
    if let Err(e) = &result {
        tracing::warn!(topic, partition, offset, error = %e.full_message(), "skipped a metadata event Kafka's rules refuse");
    }
    result
}
