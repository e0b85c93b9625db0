//! Segments written in the stored format of Aiven's plugin ([`crate::format::aiven`]), for tests of the
//! reader: written from that format's definition, as its plugin writes them (chunks of `chunk.size`, each
//! zstd-compressed as one frame with its size, then sealed `IV ‖ ciphertext ‖ tag`; the indexes one after
//! another, each sealed as one piece; the JSON manifest last). Never used to write a store in production.
//!
//! Checked by hand (2026-12-08) against segments Aiven's plugin 1.1.1 (tag `v1.1.1`, built outside this
//! repository) wrote from the same four segment files in seven settings: the same object keys, manifest
//! fields and values (the random data key and its AAD aside), chunk framing, RSA-OAEP (SHA3-512) key wrap,
//! `.indexes` layout, chunk-size list and custom metadata; the `.log` objects byte for byte where not
//! encrypted. Two things it does not do: compression's heuristic (Aiven's leaves a segment of
//! producer-compressed batches uncompressed), and custom metadata of only some of the three fields.

use crate::backend::StorageBackend;
use crate::crypto::{AivenDataKey, AivenKeyPairs};
use crate::error::{Error, Result};
use crate::format::aiven::AivenKeys;
use crate::model::{CustomMetadata, LogSegmentData, RemoteLogSegmentMetadata};
use base64::Engine;
use bytes::Bytes;
use serde_json::{Value, json};

/// How a segment is written.
#[derive(Clone, Debug)]
pub struct AivenWriteSpec {
    /// Its `key.prefix`.
    pub key_prefix: String,
    /// Its `chunk.size`.
    pub chunk_size: usize,
    /// Its `compression.enabled` (the heuristic off).
    pub compression: bool,
    /// Its `encryption.key.pair.id` and the key pairs, when it encrypts.
    pub encryption: Option<(String, AivenKeyPairs)>,
    /// Its `custom.metadata.fields.include=REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY`, or none.
    pub custom_metadata: bool,
}

/// Aiven's `ChunkSizesBinaryCodec` (see [`crate::format::aiven`]'s reader of it).
fn encode_sizes(v: &[u32]) -> Vec<u8> {
    let mut out = (v.len() as i32).to_be_bytes().to_vec();
    match v {
        [] => {}
        [only] => out.extend(only.to_be_bytes()),
        [rest @ .., last] => {
            let base = *rest.iter().min().expect("not empty");
            let width = rest.iter().map(|x| 4 - ((x - base).leading_zeros() / 8).min(3) as usize).max().unwrap_or(1);
            out.extend(base.to_be_bytes());
            out.push(width as u8);
            for x in rest {
                out.extend(&(x - base).to_be_bytes()[4 - width..]);
            }
            out.extend(last.to_be_bytes());
        }
    }
    out
}

/// Kafka's tagged fields of the three custom metadata fields.
fn custom_metadata(remote_size: u64, prefix: &str, stem: &str) -> Vec<u8> {
    fn uvarint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut out = vec![3];
    let mut size = Vec::new();
    uvarint(remote_size << 1, &mut size); // zigzag of a non-negative value
    for (tag, value) in [(0u64, size), (1, compact(prefix)), (2, compact(stem))] {
        uvarint(tag, &mut out);
        uvarint(value.len() as u64, &mut out);
        out.extend(value);
    }
    fn compact(s: &str) -> Vec<u8> {
        let mut v = Vec::new();
        uvarint(s.len() as u64 + 1, &mut v);
        v.extend(s.as_bytes());
        v
    }
    out
}

/// Writes segment `md` (its files `data`) to `backend` as Aiven's plugin would, and returns the custom
/// metadata its copy would return.
pub async fn write_aiven_segment(
    backend: &dyn StorageBackend,
    md: &RemoteLogSegmentMetadata,
    data: &LogSegmentData,
    spec: &AivenWriteSpec,
) -> Result<Option<CustomMetadata>> {
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| Error::from_io(p.display(), e));
    let keys = AivenKeys::of(&spec.key_prefix, md, None);
    let key = match &spec.encryption {
        Some((id, pairs)) => {
            let (key, bytes, aad) = AivenDataKey::generate()?;
            let wrapped = pairs.wrap(id, &bytes)?;
            let b64 = base64::engine::general_purpose::STANDARD;
            let meta = json!({"dataKey": format!("{id}:{}", b64.encode(wrapped)), "aad": b64.encode(aad)});
            Some((key, meta))
        }
        None => None,
    };
    let seal = |plain: Vec<u8>| match &key {
        Some((k, _)) => k.seal(&plain),
        None => Ok(plain),
    };
    // The log, chunk by chunk.
    let log = read(&data.log_segment)?;
    let mut stored = Vec::new();
    let mut sizes = Vec::new();
    for chunk in log.chunks(spec.chunk_size) {
        let piece = if spec.compression {
            let mut c = zstd::bulk::Compressor::new(3).map_err(|e| Error::invalid(e.to_string()))?;
            c.include_contentsize(true).map_err(|e| Error::invalid(e.to_string()))?;
            c.compress(chunk).map_err(|e| Error::invalid(e.to_string()))?
        } else {
            chunk.to_vec()
        };
        let piece = seal(piece)?;
        sizes.push(piece.len() as u32);
        stored.extend(piece);
    }
    let chunk_index = if spec.compression {
        let frame = zstd::bulk::compress(&encode_sizes(&sizes), 3).map_err(|e| Error::invalid(e.to_string()))?;
        json!({"type": "variable", "originalChunkSize": spec.chunk_size, "originalFileSize": log.len(),
               "transformedChunks": base64::engine::general_purpose::STANDARD.encode(frame)})
    } else {
        let overhead = if key.is_some() { 28 } else { 0 };
        json!({"type": "fixed", "originalChunkSize": spec.chunk_size, "originalFileSize": log.len(),
               "transformedChunkSize": spec.chunk_size + overhead,
               "finalTransformedChunkSize": sizes.last().copied().unwrap_or(0)})
    };
    // The indexes, one after another; an empty one stored as nothing.
    let mut indexes = Vec::new();
    let mut positions = serde_json::Map::new();
    let files: [(&str, Option<Vec<u8>>); 5] = [
        ("offset", Some(read(&data.offset_index)?)),
        ("timestamp", Some(read(&data.time_index)?)),
        ("producerSnapshot", Some(read(&data.producer_snapshot_index)?)),
        ("leaderEpoch", Some(data.leader_epoch_index.to_vec())),
        ("transaction", data.transaction_index.as_deref().map(read).transpose()?),
    ];
    for (name, bytes) in files {
        let Some(bytes) = bytes else {
            positions.insert(name.into(), Value::Null);
            continue;
        };
        let piece = if bytes.is_empty() { bytes } else { seal(bytes)? };
        positions.insert(name.into(), json!({"position": indexes.len(), "size": piece.len()}));
        indexes.extend(piece);
    }
    let id = &md.remote_log_segment_id;
    let tp = &id.topic_id_partition;
    let mut manifest = json!({
        "version": "1",
        "chunkIndex": chunk_index,
        "segmentIndexes": positions,
        "compression": spec.compression,
        "remoteLogSegmentMetadata": {
            "remoteLogSegmentId": {"topicIdPartition": {"topicId": tp.topic_id.to_string(),
                "topicPartition": {"topic": tp.topic_partition.topic, "partition": tp.topic_partition.partition}},
                "id": id.id.to_string()},
            "startOffset": md.start_offset, "endOffset": md.end_offset, "maxTimestampMs": md.max_timestamp_ms,
            "brokerId": md.broker_id, "eventTimestampMs": md.event_timestamp_ms,
            "segmentLeaderEpochs": md.segment_leader_epochs.iter().map(|(e, o)| (e.to_string(), json!(o)))
                .collect::<serde_json::Map<_, _>>(),
        },
    });
    if let Some((_, meta)) = &key {
        manifest["encryption"] = meta.clone();
    }
    let manifest = serde_json::to_vec(&manifest).map_err(|e| Error::invalid(e.to_string()))?;
    let total = (stored.len() + indexes.len() + manifest.len()) as u64;
    backend.put_bytes(&keys.log, Bytes::from(stored)).await?;
    backend.put_bytes(&keys.indexes, Bytes::from(indexes)).await?;
    backend.put_bytes(&keys.manifest, Bytes::from(manifest)).await?;
    let stem = keys.log.strip_prefix(spec.key_prefix.as_str()).and_then(|k| k.strip_suffix(".log")).unwrap_or("");
    Ok(spec.custom_metadata.then(|| CustomMetadata(custom_metadata(total, &spec.key_prefix, stem))))
}

#[cfg(test)]
mod tests {
    use super::encode_sizes;

    /// The encoder agrees with the reader, and with the codec's documented example (one byte per value
    /// above the base).
    #[test]
    fn sizes_round_trip() {
        assert_eq!(encode_sizes(&[1_000_000, 1_000_010, 1_000_020]).len(), 4 + 4 + 1 + 2 + 4);
        for v in [vec![], vec![7], vec![5, 5], vec![70_000, 3, 16_777_300, 9], vec![65_000; 40]] {
            let b = encode_sizes(&v);
            assert_eq!(crate::format::aiven::decode_chunk_sizes(&b, "t").unwrap(), v);
        }
    }
}
