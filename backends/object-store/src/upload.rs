//! Uploads with bounded memory: an object up to the multipart threshold in one PUT, a larger one in parts
//! with a bounded number in flight, aborted on any failure and when dropped mid-way.

use crate::backend::ObjectStoreBackend;
use crate::errors::map_error;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{MultipartUpload, PutMultipartOptions, PutOptions, PutPayload};
use rsm_core::backend::ByteStream;
use rsm_core::{Error, Result};
use std::path::Path;
use tokio::io::AsyncReadExt;

impl ObjectStoreBackend {
    /// Uploads `len` bytes of the file `path` as `key`: one PUT up to the multipart threshold, else parts.
    pub(crate) async fn upload_file(&self, key: &str, path: &Path, len: u64) -> Result<()> {
        let location = Self::path(key)?;
        let mut file = tokio::fs::File::open(path).await.map_err(|e| Error::from_io(path.display(), e))?;
        let actual = file.metadata().await.map_err(|e| Error::from_io(path.display(), e))?.len();
        if actual < len {
            return Err(Error::invalid(format!(
                "uploading `{key}`: {} has {actual} bytes, fewer than the {len} asked for",
                path.display()
            )));
        }
        if len <= self.upload.multipart_threshold {
            let bytes = read_part(&mut file, key, path, len as usize).await?;
            return self.put_single(key, &location, bytes.into()).await;
        }
        let mut sender = PartSender::start(self, key, &location).await?;
        let mut left = len;
        while left > 0 {
            let n = left.min(self.upload.part_size as u64) as usize;
            let r = match read_part(&mut file, key, path, n).await {
                Ok(part) => sender.send(part.into()).await,
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                sender.fail(&e).await;
                return Err(e);
            }
            left -= n as u64;
        }
        sender.complete().await
    }

    /// Uploads `data` as `key`: one PUT when it fits in one part, else parts cut from it as it comes.
    pub(crate) async fn upload_stream(&self, key: &str, mut data: ByteStream) -> Result<()> {
        let location = Self::path(key)?;
        let part_size = self.upload.part_size;
        // Pieces of the part being gathered, sliced (not copied) at part boundaries.
        let mut pending: Vec<Bytes> = Vec::new();
        let mut pending_len = 0usize;
        let mut sender: Option<PartSender<'_>> = None;
        loop {
            let item = data.next().await;
            let step: Result<bool> = async {
                match item {
                    None => Ok(false),
                    Some(Err(e)) => Err(e.context(format!("uploading `{key}`: the source failed"))),
                    Some(Ok(mut b)) => {
                        while !b.is_empty() {
                            if pending_len == part_size {
                                // A full part and more to come: it goes as a multipart part.
                                if sender.is_none() {
                                    sender = Some(PartSender::start(self, key, &location).await?);
                                }
                                let part: PutPayload = std::mem::take(&mut pending).into_iter().collect();
                                pending_len = 0;
                                sender.as_mut().expect("started").send(part).await?;
                            }
                            let take = (part_size - pending_len).min(b.len());
                            pending.push(b.split_to(take));
                            pending_len += take;
                        }
                        Ok(true)
                    }
                }
            }
            .await;
            match step {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) => {
                    if let Some(s) = sender.take() {
                        s.fail(&e).await;
                    }
                    return Err(e);
                }
            }
        }
        let rest: PutPayload = pending.into_iter().collect();
        match sender {
            None => self.put_single(key, &location, rest).await,
            Some(mut s) => {
                if rest.content_length() > 0
                    && let Err(e) = s.send(rest).await
                {
                    s.fail(&e).await;
                    return Err(e);
                }
                s.complete().await
            }
        }
    }

    pub(crate) fn put_options(&self) -> PutOptions {
        PutOptions { attributes: self.attributes.clone(), ..Default::default() }
    }

    pub(crate) async fn put_single(&self, key: &str, path: &ObjectPath, payload: PutPayload) -> Result<()> {
        self.store.put_opts(path, payload, self.put_options()).await.map_err(|e| self.err("uploading", key, e))?;
        Ok(())
    }

    pub(crate) async fn start_multipart(&self, key: &str, path: &ObjectPath) -> Result<Box<dyn MultipartUpload>> {
        let opts = PutMultipartOptions { attributes: self.attributes.clone(), ..Default::default() };
        self.store.put_multipart_opts(path, opts).await.map_err(|e| self.err("starting a multipart upload of", key, e))
    }

    /// Aborts `upload` after `cause`, logging (not returning) a failure to abort.
    pub(crate) async fn abort(&self, key: &str, mut upload: Box<dyn MultipartUpload>, cause: &Error) {
        tracing::warn!(backend = self.name, key, error = %cause.full_message(), "upload failed; aborting the multipart upload");
        if let Err(e) = upload.abort().await {
            let e = self.err("aborting the multipart upload of", key, e);
            tracing::warn!(backend = self.name, key, error = %e.full_message(),
                "abort failed; the store's lifecycle rules must remove the parts");
        }
    }
}

/// Parts of one multipart upload, sent with a bounded number in flight.
struct PartSender<'a> {
    backend: &'a ObjectStoreBackend,
    key: &'a str,
    /// The upload until it is completed or aborted; dropped before either (the caller's future dropped
    /// mid-upload), it is aborted in the background ([`Drop`]).
    upload: Option<Box<dyn MultipartUpload>>,
    /// Parts run as tasks, so they progress while the next part is read; dropping the set aborts them.
    in_flight: tokio::task::JoinSet<object_store::Result<()>>,
}

impl<'a> PartSender<'a> {
    async fn start(backend: &'a ObjectStoreBackend, key: &'a str, path: &ObjectPath) -> Result<Self> {
        let upload = backend.start_multipart(key, path).await?;
        Ok(PartSender { backend, key, upload: Some(upload), in_flight: tokio::task::JoinSet::new() })
    }

    fn upload(&mut self) -> &mut Box<dyn MultipartUpload> {
        self.upload.as_mut().expect("the upload is held until completed or aborted")
    }

    /// Queues one part, first waiting for room.
    async fn send(&mut self, part: PutPayload) -> Result<()> {
        while self.in_flight.len() >= self.backend.upload.parts_in_flight {
            self.wait_one().await?;
        }
        let part = self.upload().put_part(part);
        self.in_flight.spawn(part);
        Ok(())
    }

    async fn wait_one(&mut self) -> Result<()> {
        if let Some(r) = self.in_flight.join_next().await {
            let r = r.map_err(|e| Error::storage(format!("uploading a part of `{}`", self.key), e))?;
            r.map_err(|e| self.backend.err("uploading a part of", self.key, e))?;
        }
        Ok(())
    }

    async fn complete(mut self) -> Result<()> {
        let r = async {
            while !self.in_flight.is_empty() {
                self.wait_one().await?;
            }
            self.upload()
                .complete()
                .await
                .map_err(|e| self.backend.err("completing the multipart upload of", self.key, e))
        }
        .await;
        match r {
            Ok(_) => {
                self.upload = None;
                Ok(())
            }
            Err(e) => {
                self.fail(&e).await;
                Err(e)
            }
        }
    }

    /// Drops the parts in flight and aborts the upload.
    async fn fail(mut self, cause: &Error) {
        // Stops the part uploads still running before the upload itself is aborted.
        self.in_flight.abort_all();
        while self.in_flight.join_next().await.is_some() {}
        if let Some(upload) = self.upload.take() {
            self.backend.abort(self.key, upload, cause).await;
        }
    }
}

impl Drop for PartSender<'_> {
    /// An upload neither completed nor aborted (its future was dropped mid-upload: a timeout, or the
    /// failure of an upload beside it) is aborted by a task of its own, so its parts do not stay in the
    /// store, invisible and billed; without a runtime to run it, it stays for the orphan sweep.
    fn drop(&mut self) {
        let Some(mut upload) = self.upload.take() else { return };
        self.in_flight.abort_all();
        let (name, key, redactor) = (self.backend.name, self.key.to_string(), self.backend.redactor.clone());
        tracing::warn!(backend = name, key, "upload dropped before it completed; aborting the multipart upload");
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(backend = name, key, "no runtime to abort the multipart upload; `rsm sweep` removes it");
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = upload.abort().await {
                let e = map_error(name, "aborting the multipart upload of", &key, e, &redactor);
                tracing::warn!(backend = name, key, error = %e.full_message(),
                    "abort failed; `rsm sweep` or the store's lifecycle rules must remove the parts");
            }
        });
    }
}

async fn read_part(file: &mut tokio::fs::File, key: &str, path: &Path, n: usize) -> Result<Bytes> {
    let mut buf = BytesMut::zeroed(n);
    file.read_exact(&mut buf).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::invalid(format!("uploading `{key}`: {} is shorter than the length asked for", path.display()))
        } else {
            Error::from_io(path.display(), e)
        }
    })?;
    Ok(buf.freeze())
}
