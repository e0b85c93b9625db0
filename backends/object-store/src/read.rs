//! Ranged reads of the cloud stores: an answer that breaks off is read on from the byte it reached, a read
//! that stops before its end leaves what it received for the same read asked again ([`crate::unfinished`]),
//! and the same read asked twice at once is sent once.

use crate::backend::ObjectStoreBackend;
use crate::errors::{Class, classify};
use crate::unfinished::ReadProgress;
use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange};
use rsm_core::Result;
use rsm_core::backend::clamp_range;
use std::ops::Range;

/// The most times one read asks again for the rest of an answer that broke off ([`ObjectStoreBackend::get_range`]).
const RESUMES: usize = 64;

/// The fewest bytes an answer that broke off must have brought for the read to ask for the rest again: a
/// store that cuts every answer sooner fails the read.
const RESUME_PROGRESS: usize = 1024;

/// The object_store range of our `range` (`u64::MAX` as its end: to the object's end).
pub(crate) fn get_range_of(range: &Range<u64>) -> Option<GetRange> {
    match (range.start, range.end) {
        (0, u64::MAX) => None,
        (s, u64::MAX) => Some(GetRange::Offset(s)),
        (s, e) => Some(GetRange::Bounded(s..e)),
    }
}

impl ObjectStoreBackend {
    /// The bytes of the read `progress` of `range` of `key`, whose next answer is `answer`, read on from the
    /// byte reached when an answer breaks off ([`RESUMES`]): object_store resumes a cut answer a few times
    /// (`<p>.max.retries`) and then fails the read, and a caller reading it again from its start read the
    /// same bytes over and over (a broker under cut connections read 82 MB to serve nothing). Each further
    /// answer asks for the rest only, of the same version of the object (its ETag), and must bring at least
    /// [`RESUME_PROGRESS`] bytes for the next. A read that stops before its end (failed, or dropped at its
    /// caller's deadline) leaves what it received to the next read of the same range ([`unfinished`]).
    async fn read_resuming(
        &self,
        key: &str,
        location: &ObjectPath,
        range: &Range<u64>,
        mut progress: ReadProgress<'_>,
        first: object_store::GetResult,
    ) -> Result<Bytes> {
        if progress.e_tag.is_none() {
            progress.e_tag = first.meta.e_tag.clone();
        }
        let mut answer = first;
        let mut resumes = 0;
        loop {
            let before = progress.got;
            let mut stream = answer.into_stream();
            let mut broke = None;
            while let Some(piece) = stream.next().await {
                match piece {
                    Ok(b) => progress.push(b),
                    Err(e) => {
                        broke = Some(e);
                        break;
                    }
                }
            }
            let Some(e) = broke else { return Ok(progress.finish()) };
            let transient = classify(&e) == Class::Transient;
            if !transient || progress.got - before < RESUME_PROGRESS || resumes == RESUMES {
                progress.keep_on_drop(transient);
                return Err(self.err("reading", key, e).with_field("bytes read", progress.got));
            }
            resumes += 1;
            tracing::debug!(key, at = range.start + progress.got as u64, resumes, error = %e,
                "an answer broke off; reading the rest");
            answer = self.read_rest(key, location, range, &mut progress).await?;
        }
    }

    /// The answer to a read of what `progress` has not received of `range`, of the version it has (an
    /// object changed since is read from its start again).
    async fn read_rest(
        &self,
        key: &str,
        location: &ObjectPath,
        range: &Range<u64>,
        progress: &mut ReadProgress<'_>,
    ) -> Result<object_store::GetResult> {
        let at = range.start + progress.got as u64;
        let rest = if range.end == u64::MAX { GetRange::Offset(at) } else { GetRange::Bounded(at..range.end) };
        let opts = GetOptions { range: Some(rest), if_match: progress.e_tag.clone(), ..Default::default() };
        match self.store.get_opts(location, opts).await {
            Ok(answer) => Ok(answer),
            Err(object_store::Error::Precondition { .. }) => {
                tracing::debug!(key, "the object changed since a read of it stopped; reading it again");
                progress.restart();
                let opts = GetOptions { range: get_range_of(range), ..Default::default() };
                self.store.get_opts(location, opts).await.map_err(|e| self.err("reading", key, e))
            }
            Err(e) => {
                progress.keep_on_drop(classify(&e) == Class::Transient);
                Err(self.err("reading", key, e))
            }
        }
    }

    /// The bytes `range` (not empty) of `key`, continuing a read of the same range that stopped before its
    /// end ([`unfinished`]).
    pub(crate) async fn read_range(&self, key: &str, location: &ObjectPath, range: Range<u64>) -> Result<Bytes> {
        let mut progress = self.unfinished.start(key, &range);
        if progress.got > 0 {
            tracing::debug!(
                key,
                at = range.start + progress.got as u64,
                "reading on where a read of the range stopped"
            );
            let answer = self.read_rest(key, location, &range, &mut progress).await?;
            return self.read_resuming(key, location, &range, progress, answer).await;
        }
        let opts = GetOptions { range: get_range_of(&range), ..Default::default() };
        match self.store.get_opts(location, opts).await {
            Ok(answer) => self.read_resuming(key, location, &range, progress, answer).await,
            Err(e) if classify(&e) == Class::RangeNotSatisfiable => {
                // The range starts at or past the end (or the object is empty): which one decides
                // between empty bytes and an invalid argument.
                let size = self.size_of(key, location).await?;
                let r = clamp_range(key, range, size)?;
                if r.is_empty() { Ok(Bytes::new()) } else { Err(self.err("reading", key, e)) }
            }
            Err(e) => Err(self.err("reading", key, e)),
        }
    }
}
