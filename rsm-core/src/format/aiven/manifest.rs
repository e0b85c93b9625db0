//! Aiven's segment manifest (`.rsm-manifest`, its `SegmentManifestV1`): UTF-8 JSON naming the chunk index of
//! the `.log` object, where each index lies in the `.indexes` object, whether chunks were compressed, the
//! segment's data key (wrapped) and associated data when it encrypted, and the segment it was written for.

use super::chunk_sizes;
use crate::error::{Error, Result};
use crate::model::{IndexType, RemoteLogSegmentMetadata, Uuid};
use base64::Engine;
use serde_json::Value;
use std::ops::Range;

/// The largest transformed-chunk list a manifest may hold once decompressed, as Aiven's reader bounds it.
const MAX_CHUNK_SIZES_BYTES: u64 = 10 << 20;

/// A decoded `.rsm-manifest`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AivenManifest {
    /// Where each original chunk of the `.log` lies in the stored object.
    pub chunks: ChunkIndex,
    /// Each index's range in the `.indexes` object, in [`IndexType`] order (see [`AivenManifest::index`]);
    /// the transaction index may be absent.
    pub indexes: [Option<Range<u64>>; 5],
    /// Each chunk (and no index) is one zstd frame.
    pub compression: bool,
    /// The segment's data key and associated data, when chunks and indexes were encrypted.
    pub encryption: Option<AivenEncryption>,
    /// Kafka's metadata of the segment the manifest was written for, as the copy was given it (its copy
    /// finished, its size the log's), when it names one (Aiven's plugin writes it; older manifests may not).
    pub segment: Option<RemoteLogSegmentMetadata>,
}

/// How a segment was encrypted: AES-256-GCM under a data key wrapped with RSA-OAEP by a key pair.
#[derive(Clone, PartialEq, Eq)]
pub struct AivenEncryption {
    /// The id of the key pair that wrapped the data key.
    pub key_pair_id: String,
    /// The wrapped data key.
    pub wrapped_key: Vec<u8>,
    /// The associated data of every chunk and index of the segment.
    pub aad: Vec<u8>,
}

impl std::fmt::Debug for AivenEncryption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AivenEncryption").field("key_pair_id", &self.key_pair_id).finish_non_exhaustive()
    }
}

/// The chunk index: original chunks of one size (the last may be shorter) and where each lies stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkIndex {
    /// Original bytes per chunk.
    pub original_chunk_size: u32,
    /// The original `.log`'s length.
    pub original_file_size: u32,
    stored: StoredSizes,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum StoredSizes {
    /// Every stored chunk `size` bytes but the last, `last` (stored as is, or encrypted only).
    Fixed { size: u32, last: u32 },
    /// Each stored chunk's end (compressed): `ends[i]` is where chunk `i` ends.
    Variable { ends: Vec<u64> },
}

/// One chunk: its original and stored byte ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AivenChunk {
    /// Its number.
    pub index: usize,
    /// Its bytes in the original `.log`.
    pub original: Range<u64>,
    /// Its bytes in the stored `.log` object.
    pub stored: Range<u64>,
}

impl ChunkIndex {
    /// How many chunks.
    pub fn len(&self) -> usize {
        (self.original_file_size as u64).div_ceil(self.original_chunk_size as u64) as usize
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.original_file_size == 0
    }

    /// Chunk `i` (`i < len()`).
    pub fn chunk(&self, i: usize) -> AivenChunk {
        let size = self.original_chunk_size as u64;
        let start = i as u64 * size;
        let original = start..(start + size).min(self.original_file_size as u64);
        let stored = match &self.stored {
            StoredSizes::Fixed { size, last } => {
                let at = i as u64 * *size as u64;
                at..at + if i + 1 == self.len() { *last } else { *size } as u64
            }
            StoredSizes::Variable { ends } => (if i == 0 { 0 } else { ends[i - 1] })..ends[i],
        };
        AivenChunk { index: i, original, stored }
    }

    /// The chunk holding original byte `position`, if the log reaches it.
    pub fn chunk_at(&self, position: u64) -> Option<usize> {
        (position < self.original_file_size as u64).then(|| (position / self.original_chunk_size as u64) as usize)
    }

    /// The stored `.log` object's length.
    pub fn stored_length(&self) -> u64 {
        if self.is_empty() { 0 } else { self.chunk(self.len() - 1).stored.end }
    }
}

impl AivenManifest {
    /// Parses a manifest read from `key`; a manifest that does not parse, or whose numbers do not hold
    /// together, is corrupt, and the error names the key and the field.
    pub fn parse(bytes: &[u8], key: &str) -> Result<Self> {
        let bad = |why: String| Error::corrupt(format!("Aiven manifest {key}: {why}"));
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        match &v["version"] {
            Value::String(s) if s == "1" => {}
            Value::Number(n) if n.as_i64() == Some(1) => {}
            other => return Err(bad(format!("version {other}, where only 1 is known"))),
        }
        let chunks = chunk_index(&v["chunkIndex"], key)?;
        let mut indexes: [Option<Range<u64>>; 5] = Default::default();
        for (field, t) in [
            ("offset", IndexType::Offset),
            ("timestamp", IndexType::Timestamp),
            ("producerSnapshot", IndexType::ProducerSnapshot),
            ("transaction", IndexType::Transaction),
            ("leaderEpoch", IndexType::LeaderEpoch),
        ] {
            let at = &v["segmentIndexes"][field];
            if at.is_null() && t == IndexType::Transaction {
                continue;
            }
            let what = format!("segmentIndexes.{field}");
            let position = int(&at["position"], &format!("{what}.position"), key)? as u64;
            let size = int(&at["size"], &format!("{what}.size"), key)? as u64;
            indexes[slot(t)] = Some(position..position + size);
        }
        let compression = v["compression"].as_bool().ok_or_else(|| bad("`compression` is not a boolean".into()))?;
        let encryption = match &v["encryption"] {
            Value::Null => None,
            e => Some(encryption(e, key)?),
        };
        let segment = match &v["remoteLogSegmentMetadata"] {
            Value::Null => None,
            m => Some(segment_metadata(m, chunks.original_file_size, key)?),
        };
        Ok(AivenManifest { chunks, indexes, compression, encryption, segment })
    }

    /// Where index `t` lies in the `.indexes` object (`None`: the segment has none of that kind).
    pub fn index(&self, t: IndexType) -> Option<Range<u64>> {
        self.indexes[slot(t)].clone()
    }

    /// Kafka's metadata of the segment, as the manifest names it: what a host without Kafka's metadata
    /// (`rsm`) reads the segment by. `None` when the manifest names no segment.
    pub fn metadata(&self) -> Option<RemoteLogSegmentMetadata> {
        self.segment.clone()
    }

    /// Refuses a manifest written for another segment than `md` (correct bytes of the wrong segment are wrong
    /// bytes); one that names no segment is taken as its key says.
    pub fn check_describes(&self, md: &RemoteLogSegmentMetadata, key: &str) -> Result<()> {
        let Some(s) = &self.segment else { return Ok(()) };
        let (id, named) = (&md.remote_log_segment_id, &s.remote_log_segment_id);
        let tp = |i: &crate::model::RemoteLogSegmentId| {
            (i.topic_id_partition.topic_id, i.topic_id_partition.topic_partition.partition, i.id)
        };
        if tp(named) != tp(id) || s.start_offset != md.start_offset {
            return Err(Error::corrupt(format!(
                "Aiven manifest {key} describes segment {} of partition {} of topic id {} from offset {}, not \
                 segment {id} from offset {}",
                named.id,
                named.topic_id_partition.topic_partition.partition,
                named.topic_id_partition.topic_id,
                s.start_offset,
                md.start_offset
            )));
        }
        Ok(())
    }
}

/// The position of index type `t` in [`AivenManifest::indexes`].
fn slot(t: IndexType) -> usize {
    match t {
        IndexType::Offset => 0,
        IndexType::Timestamp => 1,
        IndexType::ProducerSnapshot => 2,
        IndexType::Transaction => 3,
        IndexType::LeaderEpoch => 4,
    }
}

/// A non-negative Java int field.
fn int(v: &Value, field: &str, key: &str) -> Result<u32> {
    v.as_i64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n <= i32::MAX as u32)
        .ok_or_else(|| Error::corrupt(format!("Aiven manifest {key}: `{field}` is {v}, not a size")))
}

fn base64_field(v: &Value, field: &str, key: &str) -> Result<Vec<u8>> {
    let s = v.as_str().ok_or_else(|| Error::corrupt(format!("Aiven manifest {key}: `{field}` is not a string")))?;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| Error::corrupt(format!("Aiven manifest {key}: `{field}` is not base64: {e}")))
}

fn chunk_index(v: &Value, key: &str) -> Result<ChunkIndex> {
    let bad = |why: String| Error::corrupt(format!("Aiven manifest {key}: chunkIndex: {why}"));
    let original_chunk_size = int(&v["originalChunkSize"], "chunkIndex.originalChunkSize", key)?;
    let original_file_size = int(&v["originalFileSize"], "chunkIndex.originalFileSize", key)?;
    if original_chunk_size == 0 {
        return Err(bad("an original chunk size of 0".into()));
    }
    let count = (original_file_size as u64).div_ceil(original_chunk_size as u64) as usize;
    let stored = match v["type"].as_str() {
        Some("fixed") => StoredSizes::Fixed {
            size: int(&v["transformedChunkSize"], "chunkIndex.transformedChunkSize", key)?,
            last: int(&v["finalTransformedChunkSize"], "chunkIndex.finalTransformedChunkSize", key)?,
        },
        Some("variable") => {
            let frame = base64_field(&v["transformedChunks"], "chunkIndex.transformedChunks", key)?;
            let sizes = match zstd::zstd_safe::get_frame_content_size(&frame) {
                Ok(Some(n)) if n <= MAX_CHUNK_SIZES_BYTES => zstd::bulk::decompress(&frame, n as usize)
                    .ok()
                    .filter(|b| b.len() as u64 == n)
                    .ok_or_else(|| bad("transformedChunks is not a whole zstd frame".into()))?,
                Ok(n) => return Err(bad(format!("transformedChunks holds {n:?} bytes, not 0 to 10 MiB"))),
                Err(_) => return Err(bad("transformedChunks is not a zstd frame".into())),
            };
            let sizes = chunk_sizes::decode(&sizes, &format!("Aiven manifest {key}"))?;
            if sizes.len() != count {
                return Err(bad(format!(
                    "{} stored chunk sizes for an original file of {original_file_size} bytes in chunks of \
                     {original_chunk_size} ({count} chunks)",
                    sizes.len()
                )));
            }
            let ends = sizes
                .iter()
                .scan(0u64, |end, &s| {
                    *end += s as u64;
                    Some(*end)
                })
                .collect();
            StoredSizes::Variable { ends }
        }
        other => return Err(bad(format!("type {other:?}, not \"fixed\" or \"variable\""))),
    };
    Ok(ChunkIndex { original_chunk_size, original_file_size, stored })
}

fn encryption(v: &Value, key: &str) -> Result<AivenEncryption> {
    let bad = |why: &str| Error::corrupt(format!("Aiven manifest {key}: encryption.dataKey {why}"));
    let data_key = v["dataKey"].as_str().ok_or_else(|| bad("is not a string"))?;
    let (id, wrapped) = data_key.split_once(':').ok_or_else(|| bad("has no key pair id (`<id>:<base64>`)"))?;
    if id.trim().is_empty() || wrapped.contains(':') {
        return Err(bad("is not `<key pair id>:<base64>`"));
    }
    let wrapped_key = base64_field(&Value::String(wrapped.to_string()), "encryption.dataKey", key)?;
    let aad = base64_field(&v["aad"], "encryption.aad", key)?;
    Ok(AivenEncryption { key_pair_id: id.to_string(), wrapped_key, aad })
}

fn segment_metadata(m: &Value, log_length: u32, key: &str) -> Result<RemoteLogSegmentMetadata> {
    use crate::model::{RemoteLogSegmentId, RemoteLogSegmentState, TopicIdPartition, TopicPartition};
    let bad = |field: &str| {
        Error::corrupt(format!("Aiven manifest {key}: remoteLogSegmentMetadata.{field} is missing or wrong"))
    };
    let uuid = |v: &Value, field: &str| v.as_str().and_then(|s| s.parse::<Uuid>().ok()).ok_or_else(|| bad(field));
    let long = |field: &str| m[field].as_i64().ok_or_else(|| bad(field));
    let id = &m["remoteLogSegmentId"];
    let tip = &id["topicIdPartition"];
    let topic = tip["topicPartition"]["topic"]
        .as_str()
        .ok_or_else(|| bad("remoteLogSegmentId.topicIdPartition.topicPartition.topic"))?;
    let partition = tip["topicPartition"]["partition"]
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| bad("remoteLogSegmentId.topicIdPartition.topicPartition.partition"))?;
    let epochs = m["segmentLeaderEpochs"].as_object().ok_or_else(|| bad("segmentLeaderEpochs"))?;
    let leader_epochs = epochs
        .iter()
        .map(|(e, o)| Some((e.parse::<i32>().ok()?, o.as_i64()?)))
        .collect::<Option<_>>()
        .ok_or_else(|| bad("segmentLeaderEpochs"))?;
    let tp = TopicIdPartition {
        topic_id: uuid(&tip["topicId"], "remoteLogSegmentId.topicIdPartition.topicId")?,
        topic_partition: TopicPartition::new(topic, partition),
    };
    let mut md = RemoteLogSegmentMetadata::new(
        RemoteLogSegmentId { topic_id_partition: tp, id: uuid(&id["id"], "remoteLogSegmentId.id")? },
        long("startOffset")?,
        long("endOffset")?,
        long("maxTimestampMs")?,
        m["brokerId"].as_i64().and_then(|b| i32::try_from(b).ok()).ok_or_else(|| bad("brokerId"))?,
        long("eventTimestampMs")?,
        log_length as i32,
        leader_epochs,
    )
    .map_err(|e| Error::corrupt(format!("Aiven manifest {key}: remoteLogSegmentMetadata: {}", e.full_message())))?;
    md.state = RemoteLogSegmentState::CopySegmentFinished;
    Ok(md)
}
