//! Maintenance of a store, apart from Kafka's five operations: listing and scanning its segments, finding one
//! by id, the leftovers of interrupted uploads ([`TieredStorage::orphans`]) and their sweep, reading a
//! segment back whole to check it ([`TieredStorage::verify`]), and key rotation
//! ([`TieredStorage::rewrap_segment`]).

use super::layout::{self, Suffix};
use super::read_budget::within_budget;
use super::{ListedSegment, Orphans, TieredStorage, VerifyReport};
use crate::error::{Error, ErrorKind, Result};
use crate::format::chunk::{crc32c_combine, crc32c_shift};
use crate::format::manifest::Manifest;
use crate::model::{IndexType, RemoteLogSegmentMetadata, TopicIdPartition, Uuid};
use crate::rsm::RemoteStorageManager;
use bytes::Bytes;
use futures::StreamExt;
use std::ops::Range;

impl TieredStorage {
    /// Every committed segment under the partition `tp` (or under the whole prefix when `None`), by key;
    /// fails on the first manifest that cannot be read (see [`TieredStorage::scan_segments`] for a listing that
    /// goes on).
    pub async fn list_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<Manifest>> {
        self.scan_segments(tp).await?.into_iter().map(|s| s.manifest).collect()
    }

    /// Every committed segment under the partition `tp` (or the whole prefix), by key, each with its manifest
    /// or the reason it cannot be read, and the segment objects the listing lacks: one damaged segment does
    /// not hide the others. One listing, then one read per manifest (of a one-object segment: of its tail); a
    /// manifest that does not read as this store's is read once more, to tell a segment written under another
    /// key prefix ([`ListedSegment::stored_under`]) from a damaged one.
    pub async fn scan_segments(&self, tp: Option<&TopicIdPartition>) -> Result<Vec<ListedSegment>> {
        let prefix = layout::scope_prefix(&self.config.key_prefix, tp);
        let objects = self.backend.list(&prefix).await?;
        let present: std::collections::HashSet<&str> = objects.iter().map(|o| o.key.as_str()).collect();
        let mut out = Vec::new();
        for o in &objects {
            // A split segment's manifest, with the objects it needs; a one-object segment needs no other.
            let missing = match layout::split_object_key(&o.key) {
                Some((stem, Suffix::Manifest)) => [Suffix::Log, Suffix::Indexes]
                    .into_iter()
                    .filter(|&s| !present.contains(layout::object_key(stem, s).as_str()))
                    .map(Suffix::dotted)
                    .collect(),
                Some((_, Suffix::Segment)) => Vec::new(),
                _ => continue,
            };
            let manifest = self.read_manifest(&o.key).await;
            let stored_under = match &manifest {
                Err(e) if e.kind() == ErrorKind::Corrupt => self.prefix_written_under(&o.key).await,
                _ => None,
            };
            out.push(ListedSegment { manifest_key: o.key.clone(), manifest, missing, stored_under });
        }
        Ok(out)
    }

    /// The key prefix the segment whose commit object (manifest, or one-object `.segment`) is at `key` was
    /// written under, when that is not this store's `key.prefix`: its manifest decodes, and `key` is the key
    /// the segment it describes has under that prefix. `None` otherwise (the manifest does not decode, or
    /// describes another segment than its key names). One more read of the manifest.
    async fn prefix_written_under(&self, key: &str) -> Option<String> {
        let suffix = Suffix::of(key)?;
        let manifest = match suffix {
            Suffix::Segment => super::single::read_manifest(&*self.backend, key, None).await.ok()?,
            Suffix::Manifest => Manifest::decode(&self.backend.get_range(key, 0..u64::MAX).await.ok()?, key).ok()?,
            Suffix::Log | Suffix::Indexes | Suffix::AivenManifest => return None,
        };
        let keys = layout::segment_keys("", &manifest.metadata);
        let unprefixed = if suffix == Suffix::Segment { keys.segment } else { keys.manifest };
        let prefix = key.strip_suffix(unprefixed.as_str())?;
        (prefix != self.config.key_prefix).then(|| prefix.to_string())
    }

    /// The ids of the segments of `tp` (of the whole prefix when `None`) whose commit object (a split
    /// segment's manifest, a one-object segment's `.segment`) is in the store: one listing, nothing read. What
    /// a metadata log says was copied but this set lacks is held nowhere, whatever the metadata says.
    pub async fn committed_segment_ids(
        &self,
        tp: Option<&TopicIdPartition>,
    ) -> Result<std::collections::HashSet<Uuid>> {
        let prefix = layout::scope_prefix(&self.config.key_prefix, tp);
        let objects = self.backend.list(&prefix).await?;
        Ok(objects
            .iter()
            .filter_map(|o| layout::parse_segment_key(&self.config.key_prefix, &o.key))
            .filter(|k| k.suffix.commits() && tp.is_none_or(|tp| &k.topic_id_partition == tp))
            .map(|k| k.segment_id)
            .collect())
    }

    /// The committed segment with id `id` anywhere under the prefix, of either layout: one listing and one
    /// manifest read, whatever state the other segments are in.
    pub async fn find_segment(&self, id: &Uuid) -> Result<Manifest> {
        let tails = [layout::manifest_key_tail(id), layout::key_tail(id, Suffix::Segment)];
        let objects = self.backend.list(&self.config.key_prefix).await?;
        let key = objects
            .iter()
            .find(|o| tails.iter().any(|t| o.key.ends_with(t)))
            .ok_or_else(|| Error::not_found(format!("segment {id} in the store")))?;
        self.read_manifest(&key.key).await
    }

    /// The leftovers of interrupted uploads under the partition `tp` (or the whole prefix when `None`): the
    /// objects of segments that have no manifest (failed copies whose cleanup did not finish: an upload cut
    /// short never wrote its manifest, so the objects of a segment whose manifest object exists, readable or
    /// not, are never among them; a one-object segment's `.segment` object is never one either: it is
    /// complete by construction), the store's
    /// temporary upload objects
    /// ([`StorageBackend::list_temporary`](crate::backend::StorageBackend::list_temporary): the `.rsm-tmp-*`
    /// files of the filesystem and HDFS stores that a crash mid-upload leaves) and the multipart uploads to
    /// segments' keys never completed nor aborted
    /// ([`StorageBackend::list_incomplete_uploads`](crate::backend::StorageBackend::list_incomplete_uploads):
    /// S3's, which a crash mid-upload leaves invisible and billed), each only when last written at least
    /// `min_age` ago (an upload: started, or its latest part sent), so copies still in flight are left alone
    /// ([`ORPHAN_MIN_AGE`](super::ORPHAN_MIN_AGE) is the safety age to use unless the caller knows better).
    /// Three listings (and, on S3, one listing of parts per incomplete upload); nothing is changed.
    pub async fn orphans(&self, tp: Option<&TopicIdPartition>, min_age: std::time::Duration) -> Result<Orphans> {
        let prefix = layout::scope_prefix(&self.config.key_prefix, tp);
        let objects = self.backend.list(&prefix).await?;
        let temporary = self.backend.list_temporary(&prefix).await?;
        let uploads = self.backend.list_incomplete_uploads(&prefix).await?;
        let committed: std::collections::HashSet<&str> = objects
            .iter()
            .filter_map(|o| layout::split_object_key(&o.key))
            .filter_map(|(stem, s)| s.commits().then_some(stem))
            .collect();
        let now = std::time::SystemTime::now();
        let old =
            |t: Option<std::time::SystemTime>| t.is_some_and(|t| now.duration_since(t).unwrap_or_default() >= min_age);
        let mut out = Orphans::default();
        for o in objects.iter().filter(|o| old(o.last_modified)) {
            if let Some((stem, Suffix::Log | Suffix::Indexes)) = layout::split_object_key(&o.key)
                && !committed.contains(stem)
            {
                out.uncommitted.push((o.key.clone(), o.size));
            }
        }
        out.temporary =
            temporary.iter().filter(|t| old(t.meta.last_modified)).map(|t| (t.meta.key.clone(), t.meta.size)).collect();
        // Only uploads to a segment's keys are the SDK's own: another writer's under the prefix is left alone.
        out.uploads = uploads
            .into_iter()
            .filter(|u| old(u.last_written()) && layout::parse_segment_key(&self.config.key_prefix, &u.key).is_some())
            .collect();
        out.uncommitted.sort();
        out.temporary.sort();
        out.uploads.sort_by(|a, b| (&a.key, a.initiated).cmp(&(&b.key, b.initiated)));
        Ok(out)
    }

    /// Deletes what [`TieredStorage::orphans`] lists and aborts the incomplete uploads it lists. Returns
    /// the deleted keys and the keys of the aborted uploads, sorted.
    pub async fn sweep_orphans(
        &self,
        tp: Option<&TopicIdPartition>,
        min_age: std::time::Duration,
    ) -> Result<Vec<String>> {
        let found = self.orphans(tp, min_age).await?;
        let mut keys = found.keys();
        if !keys.is_empty() || !found.uploads.is_empty() {
            tracing::info!(
                segment_objects = found.uncommitted.len(),
                temporary = found.temporary.len(),
                incomplete_uploads = found.uploads.len(),
                min_age_s = min_age.as_secs(),
                "deleting objects of uncommitted segments and temporary objects of interrupted uploads, aborting \
                 incomplete multipart uploads"
            );
        }
        self.abort_uploads(&found.uploads).await?;
        if !keys.is_empty() {
            self.backend.delete_many(&keys).await?;
        }
        keys.extend(found.uploads.iter().map(|u| u.key.clone()));
        keys.sort();
        Ok(keys)
    }

    /// Aborts each of `uploads` (as [`TieredStorage::orphans`] or
    /// [`StorageBackend::list_incomplete_uploads`](crate::backend::StorageBackend::list_incomplete_uploads)
    /// listed them), one request each; an upload already gone is no error. Stops at the first failure.
    pub async fn abort_uploads(&self, uploads: &[crate::backend::IncompleteUpload]) -> Result<()> {
        for u in uploads {
            self.backend.abort_upload(&u.key, &u.upload_id).await?;
        }
        Ok(())
    }

    /// Reads every chunk and index of a segment and checks them against the manifest: each chunk's blocks
    /// and its entry's CRC-32C, up to `fetch.concurrency` chunks at a time within
    /// [`TieredStorage::read_budget`] bytes. A segment Aiven's plugin stored is
    /// read whole as a fetch checks it (its tags, or its batches' CRCs), with its indexes.
    pub async fn verify(&self, md: &RemoteLogSegmentMetadata) -> Result<VerifyReport> {
        let m = match self.locate(md).await? {
            super::aiven::Located::Ours(m) => m,
            super::aiven::Located::Aiven(s) => return self.verify_aiven(s).await,
        };
        let key = layout::placement(&self.config.key_prefix, &m).log;
        let mut report = VerifyReport::default();
        // Each chunk whole, or in parts when it is larger than a read may be (chunks of one large batch); the
        // parts' CRC-32Cs combined in order give the chunk's, checked against its entry as a whole read's is.
        let max_read = self.config.chunk_size as u64;
        let reads: Vec<(usize, Range<u64>)> = (0..m.chunks.len())
            .flat_map(|i| super::fetch::chunk_reads(&m, i, max_read).into_iter().map(move |r| (i, r)))
            .collect();
        let reads = reads.into_iter().map(|(i, r)| {
            let weight = super::fetch::read_weight(&m, &r);
            let (chunks, m, key) = (self.chunks.clone(), m.clone(), key.clone());
            let read = async move {
                let bytes = chunks.read(&m, r.clone()).await?;
                m.check_blocks(r.clone(), &bytes, &key)?;
                let ends = r.end == m.chunks[i].end();
                Ok::<_, Error>((i, crate::checksum::crc32c(&bytes), bytes.len() as u64, ends))
            };
            (weight, read)
        });
        let mut checked = std::pin::pin!(within_budget(reads, self.config.fetch_concurrency, self.read_budget()));
        let (mut crc, mut len) = (0u32, 0u64);
        while let Some(part) = checked.next().await {
            let (i, part_crc, part_len, ends) = part?;
            (crc, len) = match len {
                0 => (part_crc, part_len),
                _ => (crc32c_combine(crc, part_crc, crc32c_shift(part_len)), len + part_len),
            };
            report.bytes += part_len;
            if ends {
                let c = &m.chunks[i];
                if len != c.data_length as u64 {
                    return Err(Error::corrupt(format!(
                        "{key}: chunk at position {} read as {len} bytes, its entry says {}",
                        c.original_position(),
                        c.data_length
                    )));
                }
                c.check_crc(crc, &key)?;
                (crc, len) = (0, 0);
                report.chunks += 1;
            }
        }
        for t in IndexType::ALL {
            if m.index(t).is_some() {
                self.fetch_index(md, t).await?;
                report.indexes += 1;
            }
        }
        Ok(report)
    }

    /// Key rotation of one segment: unwraps the data key of the manifest at `manifest_key` with the KEK it
    /// names (from `keyring`) and wraps it under the KEK `new_id`, rewriting the manifest only (one read,
    /// one write; the backend's put replaces it whole, the chunks are untouched). `Ok(false)` when it is
    /// already under `new_id` (a rerun skips it); an error for a segment that is not encrypted, and for a
    /// one-object segment (`.segment`: its manifest is inside the object, so rewrapping it would rewrite the
    /// whole object).
    pub async fn rewrap_segment(
        &self,
        manifest_key: &str,
        keyring: &crate::crypto::KeyRing,
        new_id: &str,
    ) -> Result<bool> {
        if Suffix::of(manifest_key) == Some(Suffix::Segment) {
            let segment = layout::parse_segment_key(&self.config.key_prefix, manifest_key)
                .map_or_else(|| manifest_key.to_string(), |k| format!("{}:{}", k.topic_id_partition, k.segment_id));
            return Err(Error::invalid(format!(
                "segment {segment} ({manifest_key}) is stored as one object: its manifest is inside it, so rewrapping \
                 its data key would rewrite the whole object; not rewrapped"
            )));
        }
        let mut m = self.read_manifest(manifest_key).await?;
        let Some(envelope) = &m.encryption else {
            return Err(Error::invalid(format!("manifest {manifest_key}: the segment is not encrypted")));
        };
        if envelope.kek_id == new_id {
            return Ok(false);
        }
        let id = m.metadata.remote_log_segment_id.id;
        let rewrapped = envelope
            .rewrap(keyring, new_id, id, m.metadata.start_offset)
            .await
            .map_err(|e| e.context(format!("manifest {manifest_key}")))?;
        m.encryption = Some(rewrapped);
        self.backend.put_bytes(manifest_key, Bytes::from(m.encode())).await?;
        self.manifests.remove(&id);
        Ok(true)
    }
}
