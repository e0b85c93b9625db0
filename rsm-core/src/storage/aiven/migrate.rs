//! One Aiven segment rewritten in our format (`rsm migrate`), so that a crash at any moment leaves it readable
//! in one of the two: the segment is read back whole and checked into local files, copied as ours (the copy's
//! commit point written last), and only once ours is in the store are Aiven's objects deleted, its manifest
//! first. The segment keeps its id and offsets, so Kafka's metadata stays right; a reader prefers ours and
//! finds it without the custom metadata a copy of ours returns. When our keys and Aiven's would be the same
//! (one key prefix), ours is written as one object (`.segment`), so that no object of Aiven's is overwritten
//! while its manifest still names it.

use super::Located;
use crate::error::{Error, ErrorKind, Result};
use crate::format::aiven::AivenKeys;
use crate::model::{IndexType, LogSegmentData, RemoteLogSegmentMetadata};
use futures::StreamExt;
use std::io::Write;
use std::path::Path;

/// What [`TieredStorage::migrate_aiven_segment`](super::super::TieredStorage::migrate_aiven_segment) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migrated {
    /// Copied as ours (this many log bytes), then Aiven's objects deleted.
    Copied(u64),
    /// Already ours (an earlier run copied it): Aiven's objects deleted, whichever were left.
    AlreadyOurs,
}

impl super::super::TieredStorage {
    /// Rewrites Aiven segment `md` in our format, using `work_dir` for its files (removed after), then
    /// deletes Aiven's objects of it. Not found when neither format holds it.
    pub async fn migrate_aiven_segment(&self, md: &RemoteLogSegmentMetadata, work_dir: &Path) -> Result<Migrated> {
        let aiven = self.aiven.as_ref().ok_or_else(|| Error::invalid("aiven.read.enabled is false"))?;
        md.validate()?;
        // Ours first, read from the store now: a rerun after a crash finds what it copied.
        let outcome = match self.manifests.load(md).await {
            Ok(_) => Migrated::AlreadyOurs,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let Some(s) = aiven.find(md).await? else { return Err(e) };
                let data = self.aiven_files(md, Located::Aiven(s.clone()), work_dir).await?;
                let ours = self.keys(md);
                let shared =
                    [&ours.log, &ours.indexes, &ours.manifest, &ours.segment].iter().any(|k| s.keys.all().contains(k));
                // What a failed copy wrote is removed: only keys of ours no Aiven object has.
                let (result, written) = if shared {
                    (self.copy_single(md, &data, &ours.segment).await.map(|_| ()), vec![ours.segment.clone()])
                } else {
                    let all = vec![ours.manifest.clone(), ours.segment.clone(), ours.log.clone(), ours.indexes.clone()];
                    (self.copy_segment(md, &data, &ours).await.map(|_| ()), all)
                };
                let _ = std::fs::remove_dir_all(work_dir);
                if let Err(e) = result {
                    let _ = self.backend.delete_many(&written).await;
                    return Err(e.context(format!("copy of Aiven segment {} as ours", md.remote_log_segment_id)));
                }
                // The commit point is in the store before anything of Aiven's goes.
                self.manifests.load(md).await?;
                Migrated::Copied(s.log_length())
            }
            Err(e) => return Err(e),
        };
        aiven.delete(md).await?;
        self.remove_temporary_of(md).await?;
        Ok(outcome)
    }

    /// Deletes the temporary objects an upload of segment `md` cut short left beside its keys (a migration
    /// killed mid-copy), once the segment is ours.
    async fn remove_temporary_of(&self, md: &RemoteLogSegmentMetadata) -> Result<()> {
        let keys = self.keys(md);
        let temporary: Vec<String> =
            self.backend.list_temporary(keys.shared_prefix()).await?.into_iter().map(|t| t.meta.key).collect();
        if !temporary.is_empty() {
            self.backend.delete_many(&temporary).await?;
        }
        Ok(())
    }

    /// Writes Aiven segment `s`'s log and indexes, read back and checked, into files under `dir`, as a copy
    /// takes them.
    async fn aiven_files(&self, md: &RemoteLogSegmentMetadata, s: Located, dir: &Path) -> Result<LogSegmentData> {
        let Located::Aiven(s) = s else { return Err(Error::invalid("not an Aiven segment")) };
        std::fs::create_dir_all(dir).map_err(|e| Error::from_io(dir.display(), e))?;
        let file = |name: &str| dir.join(format!("{:020}.{name}", md.start_offset));
        let write =
            |path: &Path, bytes: &[u8]| std::fs::write(path, bytes).map_err(|e| Error::from_io(path.display(), e));
        let log = file("log");
        let mut out = std::fs::File::create(&log).map_err(|e| Error::from_io(log.display(), e))?;
        if s.log_length() > 0 {
            let mut stream = self.aiven_fetch(s.clone(), 0, None)?;
            while let Some(bytes) = stream.next().await {
                out.write_all(&bytes?).map_err(|e| Error::from_io(log.display(), e))?;
            }
        }
        out.sync_all().map_err(|e| Error::from_io(log.display(), e))?;
        let (offset, time, snapshot) = (file("index"), file("timeindex"), file("snapshot"));
        write(&offset, &self.aiven_index(&s, IndexType::Offset).await?)?;
        write(&time, &self.aiven_index(&s, IndexType::Timestamp).await?)?;
        write(&snapshot, &self.aiven_index(&s, IndexType::ProducerSnapshot).await?)?;
        let transaction_index = match self.aiven_index(&s, IndexType::Transaction).await {
            Ok(b) => {
                let p = file("txnindex");
                write(&p, &b)?;
                Some(p)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(LogSegmentData {
            log_segment: log,
            offset_index: offset,
            time_index: time,
            transaction_index,
            producer_snapshot_index: snapshot,
            leader_epoch_index: self.aiven_index(&s, IndexType::LeaderEpoch).await?,
        })
    }

    /// The objects an earlier migration of segment `md` may have left of Aiven's (its `.log` and `.indexes`
    /// after its manifest was deleted), deleted when ours is in the store.
    pub async fn finish_aiven_migration(&self, md: &RemoteLogSegmentMetadata) -> Result<bool> {
        let Some(aiven) = &self.aiven else { return Ok(false) };
        match self.manifests.load(md).await {
            Ok(_) => {
                aiven.delete(md).await?;
                self.remove_temporary_of(md).await?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The keys segment `md` has, or had, as an Aiven segment.
    pub fn aiven_keys(&self, md: &RemoteLogSegmentMetadata) -> Option<AivenKeys> {
        self.aiven.as_ref().map(|a| a.keys(md))
    }
}
