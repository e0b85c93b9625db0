//! The Aiven segments of a store found from the store alone (`rsm ls`, `verify`, `fetch`, a migration): one
//! listing of `aiven.key.prefix`, one read per manifest.

use super::super::TieredStorage;
use crate::error::{Error, Result};
use crate::format::aiven::AivenManifest;
use crate::model::{RemoteLogSegmentMetadata, TopicIdPartition, Uuid};
use crate::storage::layout::{self, Suffix};

/// An Aiven segment listed: its manifest's key, and the manifest with Kafka's metadata of the segment it
/// names, or why it does not read.
#[derive(Debug)]
pub struct ListedAivenSegment {
    /// The `.rsm-manifest`'s key.
    pub manifest_key: String,
    /// The manifest and the segment's metadata.
    pub segment: Result<(AivenManifest, RemoteLogSegmentMetadata)>,
}

impl TieredStorage {
    /// Every Aiven segment under `aiven.key.prefix` (of partition `tp` only, when given), by manifest key;
    /// empty without `aiven.read.enabled`.
    pub async fn scan_aiven_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<ListedAivenSegment>> {
        let Some(prefix) = self.aiven_key_prefix() else { return Ok(Vec::new()) };
        let objects = self.backend.list(&layout::scope_prefix(prefix, tp)).await?;
        let mut out = Vec::new();
        for o in objects.iter().filter(|o| Suffix::of(&o.key) == Some(Suffix::AivenManifest)) {
            let segment = self.read_aiven_segment(&o.key).await;
            out.push(ListedAivenSegment { manifest_key: o.key.clone(), segment });
        }
        Ok(out)
    }

    /// The Aiven segment with id `id` anywhere under `aiven.key.prefix`: not found without one (or without
    /// `aiven.read.enabled`).
    pub async fn find_aiven_segment(&self, id: &Uuid) -> Result<(AivenManifest, RemoteLogSegmentMetadata)> {
        let missing = || Error::not_found(format!("segment {id} in the store"));
        let prefix = self.aiven_key_prefix().ok_or_else(missing)?;
        let tail = layout::key_tail(id, Suffix::AivenManifest);
        let objects = self.backend.list(prefix).await?;
        let key = objects.iter().find(|o| o.key.ends_with(&tail)).ok_or_else(missing)?;
        self.read_aiven_segment(&key.key).await
    }

    /// The Aiven manifest at `key` and the metadata it names, checked against its key.
    async fn read_aiven_segment(&self, key: &str) -> Result<(AivenManifest, RemoteLogSegmentMetadata)> {
        let m = self.read_aiven_manifest(key).await?;
        let md = m.metadata().ok_or_else(|| {
            Error::corrupt(format!("Aiven manifest {key}: names no segment (no remoteLogSegmentMetadata)"))
        })?;
        m.check_describes(&md, key)?;
        let prefix = self.aiven_key_prefix().unwrap_or("");
        match layout::parse_segment_key(prefix, key) {
            Some(k) if k.names(&md) => Ok((m, md)),
            _ => Err(Error::corrupt(format!(
                "Aiven manifest {key} describes segment {} from offset {}: another segment than its key names",
                md.remote_log_segment_id, md.start_offset
            ))),
        }
    }
}
