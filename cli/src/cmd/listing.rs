//! What `rsm ls` and `rsm verify` say alike of a store's listing: a segment that cannot be used (objects
//! missing, a manifest that does not read, a manifest missing beside a segment's data, a segment written
//! under another key prefix), and what interrupted uploads left.

use crate::exit::CmdResult;
use crate::output::{Out, age, human, out};
use rsm_core::Error;
use rsm_core::backend::ObjectMeta;
use rsm_core::format::manifest::Manifest;
use rsm_core::storage::layout::{object_key, split_object_key};
use rsm_core::storage::{ListedSegment, ORPHAN_MIN_AGE, Orphans, SegmentKey, Suffix, parse_segment_key};
use rsm_facade::Store;
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, SystemTime};

/// What is wrong with the segments of a listing, counted as [`usable`] and [`report_without_manifest`]
/// find it.
#[derive(Default, Debug)]
pub struct Problems {
    /// Segments damaged (a manifest that does not read, data that fails its checks) or incomplete.
    pub damaged: usize,
    /// Segments whose `.log` and `.indexes` have had no manifest for longer than the safety age.
    pub without_manifest: usize,
    /// Segments written under another key prefix than the store's `key.prefix`, not read: how many under
    /// each prefix.
    pub elsewhere: BTreeMap<String, usize>,
}

impl Problems {
    /// Segments that fail the command: damaged, incomplete, or without a manifest.
    pub fn failing(&self) -> usize {
        self.damaged + self.without_manifest
    }

    /// How many segments were found under another key prefix.
    pub fn elsewhere(&self) -> usize {
        self.elsewhere.values().sum()
    }

    /// The error for segments written under another key prefix (a setting this run lacks), naming the
    /// setting to give; `None` when there are none.
    pub fn elsewhere_error(&self, store: &Store) -> Option<Error> {
        if self.elsewhere.is_empty() {
            return None;
        }
        let give: Vec<String> = match self.elsewhere.len() {
            1 => self.elsewhere.keys().map(|p| format!("--set key.prefix={p}")).collect(),
            _ => self.elsewhere.iter().map(|(p, n)| format!("--set key.prefix={p} ({n} segments)")).collect(),
        };
        Some(Error::config(
            "key.prefix",
            format!(
                "{} segments were written under another key prefix than this store's key.prefix ({}) and were not \
                 read (listed above): add {}",
                self.elsewhere(),
                this_prefix(store),
                give.join(" or ")
            ),
        ))
    }
}

/// This store's `key.prefix`, as a message says it: `none`, or the prefix quoted.
fn this_prefix(store: &Store) -> String {
    match store.storage().config().key_prefix.as_str() {
        "" => "none".to_string(),
        p => format!("`{p}`"),
    }
}

/// A listed segment's manifest, or a line on stdout saying what is wrong with it (and `None`), counted in
/// `problems`.
pub fn usable(o: &mut Out, store: &Store, s: ListedSegment, problems: &mut Problems) -> CmdResult<Option<Manifest>> {
    if let Some(prefix) = &s.stored_under {
        *problems.elsewhere.entry(prefix.clone()).or_default() += 1;
        let id =
            parse_segment_key(prefix, &s.manifest_key).map_or_else(|| "-".to_string(), |k| k.segment_id.to_string());
        out!(
            o,
            "OTHER PREFIX\t{id}\t{}\ta segment written under key prefix `{prefix}`, and this store's key.prefix is \
             {}: not read (give --set key.prefix={prefix} to read it)",
            s.manifest_key,
            this_prefix(store)
        );
        return Ok(None);
    }
    Ok(match s.manifest {
        Ok(m) if s.missing.is_empty() => Some(m),
        Ok(m) => {
            problems.damaged += 1;
            out!(o, "INCOMPLETE\t{}\tmissing {}", m.metadata.remote_log_segment_id.id, s.missing.join(", "));
            None
        }
        Err(e) => {
            problems.damaged += 1;
            out!(o, "DAMAGED\t{}\t{}", s.manifest_key, e.full_message());
            None
        }
    })
}

/// A segment whose `.log` and `.indexes` are both in the store and whose manifest is not (nor a one-object
/// `.segment` of its key): it looks committed, and cannot be read. A copy writes its manifest last, so this
/// is either a committed segment whose manifest was lost or an upload cut short (or still running) between
/// its data and its manifest; past the safety age, no upload is still writing it.
#[derive(Debug)]
pub struct NoManifest {
    /// The key its manifest would have.
    pub manifest_key: String,
    /// What the key names, when it reads as a segment's key under the store's key prefix.
    pub key: Option<SegmentKey>,
    /// Its `.log` and `.indexes` objects.
    pub objects: Vec<String>,
    /// Their bytes.
    pub bytes: u64,
    /// Time since the later of their last writes; `None` when the store does not say.
    pub age: Option<Duration>,
}

impl NoManifest {
    /// Whether it was last written at least the safety age ([`ORPHAN_MIN_AGE`]) ago: no upload is still
    /// writing it.
    pub fn old(&self) -> bool {
        self.age.is_some_and(|a| a >= ORPHAN_MIN_AGE)
    }

    /// Its segment id, or its manifest's key when the key names no segment.
    pub fn id(&self) -> String {
        self.key.as_ref().map_or_else(|| self.manifest_key.clone(), |k| k.segment_id.to_string())
    }
}

/// Every segment of `store` whose `.log` and `.indexes` are there without a manifest, by key. Two listings
/// (the objects, and the temporary objects beside them).
pub fn without_manifest(store: &Store) -> CmdResult<Vec<NoManifest>> {
    let (objects, _) = store.list_objects()?;
    let prefix = &store.storage().config().key_prefix;
    let now = SystemTime::now();
    // By the stem a segment's keys share: its data objects, and whether a commit object is there.
    let mut stems: BTreeMap<&str, (Vec<&ObjectMeta>, bool)> = BTreeMap::new();
    for o in &objects {
        if let Some((stem, suffix)) = split_object_key(&o.key) {
            let entry = stems.entry(stem).or_default();
            if suffix.commits() { entry.1 = true } else { entry.0.push(o) }
        }
    }
    Ok(stems
        .into_iter()
        .filter(|(_, (data, committed))| !committed && data.len() == 2)
        .map(|(stem, (data, _))| {
            let manifest_key = object_key(stem, Suffix::Manifest);
            let ages: Option<Vec<Duration>> =
                data.iter().map(|o| o.last_modified.map(|t| now.duration_since(t).unwrap_or_default())).collect();
            NoManifest {
                key: parse_segment_key(prefix, &manifest_key),
                manifest_key,
                objects: data.iter().map(|o| o.key.clone()).collect(),
                bytes: data.iter().map(|o| o.size).sum(),
                age: ages.and_then(|a| a.into_iter().min()),
            }
        })
        .collect())
}

/// A line for each of `found`: those past the safety age are problems (counted in `problems`), the younger
/// ones uploads that may still be running.
pub fn report_without_manifest<'a>(
    o: &mut Out,
    found: impl IntoIterator<Item = &'a NoManifest>,
    problems: &mut Problems,
) -> CmdResult {
    for s in found {
        let when = s.age.map_or_else(|| "at a time the store does not say".to_string(), |a| format!("{} ago", age(a)));
        if s.old() {
            problems.without_manifest += 1;
            out!(
                o,
                "NO MANIFEST\t{}\t{} is missing, yet its .log and .indexes are in the store ({}, last written {when}), \
                 so the segment cannot be read: a committed segment whose manifest was lost, or an upload cut short \
                 before its manifest (`rsm audit` says whether the metadata copied it; only if not, `rsm sweep` \
                 deletes its objects)",
                s.id(),
                s.manifest_key,
                human(s.bytes)
            );
        } else {
            out!(
                o,
                "NO MANIFEST YET\t{}\t{} is not in the store, its .log and .indexes are ({}, last written {when}): an \
                 upload may still be writing it (a problem if its manifest is still missing {} after its last write)",
                s.id(),
                s.manifest_key,
                human(s.bytes),
                age(ORPHAN_MIN_AGE)
            );
        }
    }
    Ok(())
}

/// What interrupted uploads left in the store (of any age), but the objects of `reported` (segments without
/// a manifest, reported on their own).
pub fn leftover_orphans(store: &Store, reported: &[NoManifest]) -> CmdResult<Orphans> {
    let mut found = store.orphans(None, Duration::ZERO)?;
    let skip: HashSet<&str> = reported.iter().flat_map(|s| s.objects.iter().map(String::as_str)).collect();
    found.uncommitted.retain(|(k, _)| !skip.contains(k.as_str()));
    Ok(found)
}

/// A line on what interrupted uploads left in the store (of any age), when there is anything, but the
/// objects of `reported` (segments without a manifest, reported on their own).
pub fn leftovers(o: &mut Out, store: &Store, reported: &[NoManifest]) -> CmdResult {
    let found = leftover_orphans(store, reported)?;
    if !found.is_empty() {
        out!(
            o,
            "leftovers of interrupted uploads: {} objects of uncommitted segments, {} temporary files, {} incomplete \
             multipart uploads ({}); `rsm sweep` removes those older than an hour",
            found.uncommitted.len(),
            found.temporary.len(),
            found.uploads.len(),
            human(found.bytes())
        );
    }
    Ok(())
}
