//! Uploads through GCS's JSON API (a media upload for small objects, a resumable upload for large ones),
//! with every other operation left to object_store's GCS client.
//!
//! Why: object_store writes through the XML API (`PUT /bucket/object`, XML multipart uploads), which
//! fake-gcs-server does not implement, so that path cannot be proven against a local server; the JSON
//! API's uploads are implemented by both GCS and fake-gcs-server, and are what Aiven's plugin uses
//! (`gcs.resumable.upload.chunk.size`). Nothing is signed here: requests carry the bearer token of
//! object_store's credential provider (none for anonymous access).
//!
//! A resumable upload takes its chunks in order, so parts are sent one after another whatever the
//! caller's concurrency; the last part is held back until `complete`, so it goes with the total size
//! (GCS wants every chunk but the final one to be a multiple of 256 KiB, and learns the final one by its
//! total).

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::client::{HttpClient, HttpRequestBody};
use object_store::gcp::GoogleCloudStorage;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, UploadPart,
};
use rsm_backend_object_store::{ClientSettings, StatusError, percent_encode};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::{Mutex, watch};

/// GCS resumable chunks (all but the last) must be multiples of this.
pub const CHUNK_GRANULARITY: usize = 256 << 10;

/// An [`ObjectStore`] over object_store's GCS client whose uploads go through the JSON API.
pub struct JsonUploadStore {
    inner: Arc<GoogleCloudStorage>,
    shared: Arc<Shared>,
}

struct Shared {
    http: HttpClient,
    /// `https://storage.googleapis.com` or the configured endpoint, without a trailing `/`.
    base: String,
    bucket: String,
    anonymous: bool,
    inner: Arc<GoogleCloudStorage>,
    retry: ClientSettings,
}

impl fmt::Debug for JsonUploadStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonUploadStore({})", self.shared.bucket)
    }
}

impl fmt::Display for JsonUploadStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GoogleCloudStorage({})", self.shared.bucket)
    }
}

impl JsonUploadStore {
    /// Wraps `inner`; uploads go to `base` (no trailing `/`) through `http` (which counts them).
    pub fn new(
        inner: Arc<GoogleCloudStorage>,
        http: HttpClient,
        base: String,
        bucket: String,
        anonymous: bool,
        retry: ClientSettings,
    ) -> Self {
        JsonUploadStore {
            inner: inner.clone(),
            shared: Arc::new(Shared { http, base, bucket, anonymous, inner, retry }),
        }
    }
}

fn generic(e: impl std::error::Error + Send + Sync + 'static) -> object_store::Error {
    object_store::Error::Generic { store: "GCS", source: Box::new(e) }
}

/// What came back from one request.
struct Answer {
    status: u16,
    location: Option<String>,
}

impl Shared {
    async fn bearer(&self) -> object_store::Result<Option<String>> {
        if self.anonymous {
            return Ok(None);
        }
        let c = self.inner.credentials().get_credential().await?;
        Ok(Some(c.bearer.clone()))
    }

    /// Sends one request; a transport failure or a status of 400 or more is an error. `retry` allows
    /// retrying transient failures (the request must be idempotent).
    async fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        body: PutPayload,
        retry: bool,
        accept: &[u16],
    ) -> object_store::Result<Answer> {
        if !retry {
            return self.send_once(method, url, headers, body, accept).await;
        }
        self.retry.retrying(|| self.send_once(method, url, headers, body.clone(), accept)).await
    }

    async fn send_once(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, String)],
        body: PutPayload,
        accept: &[u16],
    ) -> object_store::Result<Answer> {
        let mut b = http::Request::builder().method(method).uri(url);
        if let Some(token) = self.bearer().await? {
            b = b.header("Authorization", format!("Bearer {token}"));
        }
        b = b.header("Content-Length", body.content_length().to_string());
        for (k, v) in headers {
            b = b.header(*k, v.as_str());
        }
        let req = b.body(HttpRequestBody::from(body)).map_err(generic)?;
        let resp = self.http.execute(req).await.map_err(generic)?;
        let status = resp.status().as_u16();
        let location = resp.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_string);
        let text = resp.into_body().bytes().await.map_err(generic)?;
        if status >= 400 && !accept.contains(&status) {
            let message = String::from_utf8_lossy(&text[..text.len().min(500)]).into_owned();
            return Err(generic(StatusError { status, message }));
        }
        Ok(Answer { status, location })
    }

    fn upload_url(&self, kind: &str, location: &Path) -> String {
        format!(
            "{}/upload/storage/v1/b/{}/o?uploadType={kind}&name={}",
            self.base,
            percent_encode(&self.bucket),
            percent_encode(location.as_ref())
        )
    }
}

#[async_trait]
impl ObjectStore for JsonUploadStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        _opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let url = self.shared.upload_url("media", location);
        let headers = [("Content-Type", "application/octet-stream".to_string())];
        // A media upload replaces the object whole, so it is safe to repeat.
        self.shared.send("POST", &url, &headers, payload, true, &[]).await?;
        Ok(PutResult { e_tag: None, version: None, extensions: Default::default() })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let url = self.shared.upload_url("resumable", location);
        let headers = [
            ("Content-Type", "application/json; charset=UTF-8".to_string()),
            ("X-Upload-Content-Type", "application/octet-stream".to_string()),
        ];
        let body = PutPayload::from(Bytes::from_static(b"{}"));
        // Starting a session twice only leaves an unused session, which GCS expires.
        let answer = self.shared.send("POST", &url, &headers, body, true, &[]).await?;
        let session = answer.location.ok_or_else(|| {
            generic(StatusError {
                status: answer.status,
                message: "no Location header in the answer to a resumable upload".into(),
            })
        })?;
        let (tx, _rx) = watch::channel(0usize);
        Ok(Box::new(Resumable {
            shared: self.shared.clone(),
            session: Arc::new(session),
            state: Arc::new(Mutex::new(State::default())),
            turn: Arc::new(tx),
            parts: 0,
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[derive(Default)]
struct State {
    /// Bytes the session has accepted.
    sent: u64,
    /// The latest part, held back until the next one (or `complete`) shows whether it is the last.
    held: Option<PutPayload>,
    /// A part failed: the upload cannot go on.
    failed: bool,
}

/// One resumable upload session.
struct Resumable {
    shared: Arc<Shared>,
    session: Arc<String>,
    state: Arc<Mutex<State>>,
    /// Whose turn it is (parts run in the order `put_part` was called).
    turn: Arc<watch::Sender<usize>>,
    parts: usize,
}

impl fmt::Debug for Resumable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resumable({} parts)", self.parts)
    }
}

impl Shared {
    /// Sends `chunk` at `offset`; `total` is the object's size when this is the final chunk.
    async fn send_chunk(
        &self,
        session: &str,
        offset: u64,
        chunk: PutPayload,
        total: Option<u64>,
    ) -> object_store::Result<()> {
        let len = chunk.content_length() as u64;
        let total_s = total.map_or("*".to_string(), |t| t.to_string());
        let range = if len == 0 {
            format!("bytes */{total_s}")
        } else {
            format!("bytes {}-{}/{total_s}", offset, offset + len - 1)
        };
        // A chunk is not retried here: after a failure the session's state is unknown. The upload fails
        // (and is cancelled), and the caller's retry starts a new one.
        let a = self.send("PUT", session, &[("Content-Range", range)], chunk, false, &[]).await?;
        let done = a.status == 200 || a.status == 201;
        match (total.is_some(), done, a.status) {
            (true, true, _) | (false, false, 308) => Ok(()),
            (_, _, s) => Err(generic(StatusError {
                status: s,
                message: format!(
                    "unexpected answer to a resumable upload chunk at {offset} ({} the last)",
                    if total.is_some() { "is" } else { "not" }
                ),
            })),
        }
    }
}

#[async_trait]
impl MultipartUpload for Resumable {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let my_turn = self.parts;
        self.parts += 1;
        let (shared, session, state, turn) =
            (self.shared.clone(), self.session.clone(), self.state.clone(), self.turn.clone());
        Box::pin(async move {
            let mut rx = turn.subscribe();
            rx.wait_for(|t| *t == my_turn).await.map_err(|e| generic(std::io::Error::other(e.to_string())))?;
            let r = async {
                let mut st = state.lock().await;
                if st.failed {
                    return Err(generic(std::io::Error::other("an earlier part of this upload failed")));
                }
                if let Some(prev) = st.held.take() {
                    let len = prev.content_length() as u64;
                    let offset = st.sent;
                    if let Err(e) = shared.send_chunk(&session, offset, prev, None).await {
                        st.failed = true;
                        return Err(e);
                    }
                    st.sent += len;
                }
                st.held = Some(data);
                Ok(())
            }
            .await;
            turn.send_replace(my_turn + 1);
            r
        })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let mut rx = self.turn.subscribe();
        let parts = self.parts;
        rx.wait_for(|t| *t == parts).await.map_err(|e| generic(std::io::Error::other(e.to_string())))?;
        let mut st = self.state.lock().await;
        if st.failed {
            return Err(generic(std::io::Error::other("a part of this upload failed")));
        }
        let last = st.held.take().unwrap_or_default();
        let total = st.sent + last.content_length() as u64;
        let offset = st.sent;
        self.shared.send_chunk(&self.session, offset, last, Some(total)).await?;
        st.sent = total;
        Ok(PutResult { e_tag: None, version: None, extensions: Default::default() })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        // GCS answers a cancelled session with 499.
        self.shared.send("DELETE", &self.session, &[], PutPayload::default(), true, &[499]).await?;
        Ok(())
    }
}
