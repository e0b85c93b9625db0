//! Incomplete multipart uploads on S3, which object_store does not list: ListMultipartUploads
//! (`GET /?uploads&prefix=…`, by pages with `key-marker` and `upload-id-marker`) finds them, ListParts
//! (`GET /key?uploadId=…`, by pages with `part-number-marker`) tells each one's parts and bytes, and
//! AbortMultipartUpload is object_store's own (`MultipartStore::abort_multipart`).
//!
//! The two listings are not in object_store's client, so they are sent here, with as little of our own as
//! possible: each request is a URL presigned by object_store's signer (`Signer::signed_url_opts`: SigV4 in
//! the query string, with the store's own credential provider, region and endpoint, path or virtual-host
//! style as configured), sent through the store's own HTTP client (its timeouts, and the request counter),
//! retried as object_store retries (transient failures, at most `s3.max.retries` times within
//! `s3.api.call.timeout`). An answer is read up to [`MAX_ANSWER_BYTES`] and parsed by [`parse_uploads`] or
//! [`parse_parts`], which never panic and allocate only for what the bounded answer holds.

use async_trait::async_trait;
use futures::StreamExt;
use object_store::aws::AmazonS3;
use object_store::client::{HttpClient, HttpRequestBody};
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::signer::{SignedUrlOptions, Signer};
use quick_xml::events::Event;
use rsm_backend_object_store::{Class, ClientSettings, MultipartUploads, Redactor, StatusError, classify, map_error};
use rsm_core::backend::IncompleteUpload;
use rsm_core::{Error, Result};
use std::fmt;
use std::time::{Duration, SystemTime};

/// The most bytes of one answer read: a page of 1000 uploads or parts is well under 1 MiB.
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

/// How long a presigned URL is valid: it is sent at once, and S3 allows some clock skew besides.
const URL_VALIDITY: Duration = Duration::from_secs(900);

/// Elements deeper than this in an answer are refused (S3's answers are 4 deep).
const MAX_DEPTH: usize = 16;

/// S3's incomplete multipart uploads, through the store's own signer, client and credentials.
pub struct S3Uploads {
    s3: AmazonS3,
    http: HttpClient,
    retry: ClientSettings,
    redactor: Redactor,
}

impl fmt::Debug for S3Uploads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "S3Uploads({})", self.s3)
    }
}

impl S3Uploads {
    /// Listings of `s3`'s uploads sent through `http` (a client of the store's own connector and options).
    pub fn new(s3: AmazonS3, http: HttpClient, retry: ClientSettings, redactor: Redactor) -> Self {
        S3Uploads { s3, http, retry, redactor }
    }

    fn err(&self, op: &str, key: &str, e: object_store::Error) -> Error {
        map_error("s3", op, key, e, &self.redactor)
    }

    /// One signed GET of `path` with the query `query`, retried while transient; the body of a 2xx answer.
    async fn get(&self, path: &Path, query: &[(&str, &str)]) -> object_store::Result<Vec<u8>> {
        self.retry.retrying(|| self.get_once(path, query)).await
    }

    async fn get_once(&self, path: &Path, query: &[(&str, &str)]) -> object_store::Result<Vec<u8>> {
        let options = SignedUrlOptions::new().with_query(query.iter().copied());
        let url = self.s3.signed_url_opts(http::Method::GET, path, URL_VALIDITY, &options).await?;
        let req = http::Request::builder()
            .method(http::Method::GET)
            .uri(url.as_str())
            .body(HttpRequestBody::empty())
            .map_err(generic)?;
        let resp = self.http.execute(req).await.map_err(generic)?;
        let status = resp.status().as_u16();
        let mut body = resp.into_body().bytes_stream();
        let mut out = Vec::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(generic)?;
            if out.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(generic(StatusError {
                    status,
                    message: format!("the answer is longer than {MAX_ANSWER_BYTES} bytes"),
                }));
            }
            out.extend_from_slice(&chunk);
        }
        if !(200..300).contains(&status) {
            return Err(generic(StatusError { status, message: error_message(&out) }));
        }
        Ok(out)
    }

    /// Every part of upload `upload_id` to `key`: (parts, bytes, latest part's time).
    async fn parts(&self, key: &str, path: &Path, upload_id: &str) -> Result<(u64, u64, Option<SystemTime>)> {
        let (mut parts, mut bytes, mut last) = (0u64, 0u64, None);
        let mut marker = 0u64;
        loop {
            let marker_text = marker.to_string();
            let mut query = vec![("uploadId", upload_id)];
            if marker > 0 {
                query.push(("part-number-marker", marker_text.as_str()));
            }
            let body = self.get(path, &query).await.map_err(|e| self.err("listing the parts of", key, e))?;
            let page = parse_parts(&body).map_err(|why| answer_error("ListParts", key, why))?;
            parts += page.parts;
            bytes = bytes.checked_add(page.bytes).ok_or_else(|| answer_error("ListParts", key, "bytes overflow"))?;
            last = last.max(page.last_modified);
            match (page.truncated, page.next_marker) {
                (false, _) => return Ok((parts, bytes, last)),
                // Part numbers only grow, so the pages end.
                (true, Some(next)) if next > marker => marker = next,
                (true, _) => return Err(answer_error("ListParts", key, "a truncated page without a later marker")),
            }
        }
    }
}

fn generic(e: impl std::error::Error + Send + Sync + 'static) -> object_store::Error {
    object_store::Error::Generic { store: "S3", source: Box::new(e) }
}

/// A malformed answer to `what` about `key`.
fn answer_error(what: &str, key: &str, why: impl fmt::Display) -> Error {
    Error::storage(format!("{what} of s3 object `{key}`"), format!("unexpected answer: {why}"))
}

#[async_trait]
impl MultipartUploads for S3Uploads {
    async fn list(&self, prefix: &str) -> Result<Vec<IncompleteUpload>> {
        let mut found = Vec::new();
        let (mut key_marker, mut id_marker) = (String::new(), String::new());
        loop {
            let mut query = vec![("uploads", ""), ("prefix", prefix)];
            if !key_marker.is_empty() {
                query.push(("key-marker", key_marker.as_str()));
            }
            if !id_marker.is_empty() {
                query.push(("upload-id-marker", id_marker.as_str()));
            }
            let op = "listing the multipart uploads under";
            let body = self.get(&Path::default(), &query).await.map_err(|e| self.err(op, prefix, e))?;
            let page = parse_uploads(&body).map_err(|why| answer_error("ListMultipartUploads", prefix, why))?;
            found.extend(page.uploads);
            if !page.truncated {
                break;
            }
            // The markers must move on, or a server that repeats a page would keep this loop going.
            let next = (page.next_key_marker, page.next_upload_id_marker);
            if next.0.is_empty() || next == (key_marker, id_marker) {
                return Err(answer_error("ListMultipartUploads", prefix, "a truncated page without new markers"));
            }
            (key_marker, id_marker) = next;
        }
        let mut out = Vec::with_capacity(found.len());
        for u in found {
            // A key object_store cannot address as it is (an empty segment, `.`, `..`) keeps its bytes unknown.
            let path = Path::parse(&u.key).ok().filter(|p| p.as_ref() == u.key);
            let (parts, bytes, last_part) = match &path {
                Some(path) => match self.parts(&u.key, path, &u.upload_id).await {
                    Ok((n, b, t)) => (n, Some(b), t),
                    // Completed or aborted since the listing: gone.
                    Err(e) if e.kind() == rsm_core::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                },
                None => (0, None, None),
            };
            out.push(IncompleteUpload {
                key: u.key,
                upload_id: u.upload_id,
                initiated: u.initiated,
                last_part,
                parts,
                bytes,
            });
        }
        out.retain(|u| u.key.starts_with(prefix));
        out.sort_by(|a, b| (&a.key, a.initiated, &a.upload_id).cmp(&(&b.key, b.initiated, &b.upload_id)));
        Ok(out)
    }

    async fn abort(&self, key: &str, upload_id: &str) -> Result<()> {
        let path = Path::parse(key).ok().filter(|p| p.as_ref() == key).ok_or_else(|| {
            Error::invalid(format!("object key `{}`: not addressable by the S3 client", key.escape_debug()))
        })?;
        match self.s3.abort_multipart(&path, &upload_id.to_string()).await {
            Ok(()) => Ok(()),
            Err(e) if classify(&e) == Class::NotFound => Ok(()),
            Err(e) => Err(self.err("aborting the multipart upload of", key, e)),
        }
    }
}

/// An upload as ListMultipartUploads lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedUpload {
    /// The key it writes.
    pub key: String,
    /// Its id.
    pub upload_id: String,
    /// When it started (`Initiated`), if it parses.
    pub initiated: Option<SystemTime>,
}

/// One page of ListMultipartUploads.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct UploadsPage {
    /// The uploads of the page.
    pub uploads: Vec<ListedUpload>,
    /// `IsTruncated`: more pages follow.
    pub truncated: bool,
    /// `NextKeyMarker` (empty when absent).
    pub next_key_marker: String,
    /// `NextUploadIdMarker` (empty when absent).
    pub next_upload_id_marker: String,
}

/// One page of ListParts, summed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PartsPage {
    /// Parts on the page.
    pub parts: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The latest `LastModified` of a part, if any parses.
    pub last_modified: Option<SystemTime>,
    /// `IsTruncated`: more pages follow.
    pub truncated: bool,
    /// `NextPartNumberMarker`.
    pub next_marker: Option<u64>,
}

/// Parses a ListMultipartUploads answer (`ListMultipartUploadsResult`). An error says what is wrong.
pub fn parse_uploads(xml: &[u8]) -> std::result::Result<UploadsPage, String> {
    let mut page = UploadsPage::default();
    let mut upload: Option<(Option<String>, Option<String>, Option<SystemTime>)> = None;
    walk(xml, &["ListMultipartUploadsResult"], |path, text| {
        match (path, text) {
            (["IsTruncated"], Some(t)) => page.truncated = t.trim() == "true",
            (["NextKeyMarker"], Some(t)) => page.next_key_marker = t,
            (["NextUploadIdMarker"], Some(t)) => page.next_upload_id_marker = t,
            (["Upload"], None) => {
                let (key, id, initiated) = upload.take().unwrap_or_default();
                match (key, id) {
                    (Some(key), Some(upload_id)) if !key.is_empty() && !upload_id.is_empty() => {
                        page.uploads.push(ListedUpload { key, upload_id, initiated })
                    }
                    _ => return Err("an Upload without its Key or UploadId".to_string()),
                }
            }
            (["Upload", "Key"], Some(t)) => upload.get_or_insert_default().0 = Some(t),
            (["Upload", "UploadId"], Some(t)) => upload.get_or_insert_default().1 = Some(t),
            (["Upload", "Initiated"], Some(t)) => upload.get_or_insert_default().2 = parse_time(&t),
            _ => {}
        }
        Ok(())
    })?;
    Ok(page)
}

/// Parses a ListParts answer (`ListPartsResult`; moto calls it `ListPartsResponse`). An error says what is
/// wrong.
pub fn parse_parts(xml: &[u8]) -> std::result::Result<PartsPage, String> {
    let mut page = PartsPage::default();
    let mut size: Option<u64> = None;
    walk(xml, &["ListPartsResult", "ListPartsResponse"], |path, text| {
        match (path, text) {
            (["IsTruncated"], Some(t)) => page.truncated = t.trim() == "true",
            (["NextPartNumberMarker"], Some(t)) => {
                page.next_marker = Some(t.trim().parse().map_err(|_| format!("NextPartNumberMarker `{t}`"))?)
            }
            (["Part", "Size"], Some(t)) => size = Some(t.trim().parse().map_err(|_| format!("part Size `{t}`"))?),
            (["Part", "LastModified"], Some(t)) => page.last_modified = page.last_modified.max(parse_time(&t)),
            (["Part"], None) => {
                let s = size.take().ok_or("a Part without its Size")?;
                page.parts += 1;
                page.bytes = page.bytes.checked_add(s).ok_or("part sizes overflow")?;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(page)
}

/// The `Code` and `Message` of an S3 error answer, or the start of what came back.
fn error_message(body: &[u8]) -> String {
    let (mut code, mut message) = (String::new(), String::new());
    let parsed = walk(body, &["Error"], |path, text| {
        match (path, text) {
            (["Code"], Some(t)) => code = t,
            (["Message"], Some(t)) => message = t,
            _ => {}
        }
        Ok(())
    });
    match parsed {
        Ok(()) if !code.is_empty() => format!("{code}: {message}"),
        _ => String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned(),
    }
}

/// Walks the XML document `xml`, whose root element must be one of `roots`: `on(path, Some(text))` at the end of
/// each element below the root that holds only text (`path` from below the root, entities resolved), and
/// `on(path, None)` at the end of each element below the root that holds elements. Elements are matched by
/// their local name. An error for malformed XML, another root, or elements nested deeper than
/// [`MAX_DEPTH`].
fn walk(
    xml: &[u8],
    roots: &[&str],
    mut on: impl FnMut(&[&str], Option<String>) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let text = std::str::from_utf8(xml).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut reader = quick_xml::Reader::from_str(text);
    // (local name, whether it holds elements) of each open element; the text of the innermost.
    let mut open: Vec<(String, bool)> = Vec::new();
    let mut content = String::new();
    let mut seen_root = false;
    loop {
        let event =
            reader.read_event().map_err(|e| format!("malformed XML at byte {}: {e}", reader.error_position()))?;
        match event {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if open.is_empty() {
                    if seen_root || !roots.contains(&name.as_str()) {
                        return Err(format!("the document is not one {} (found {name})", roots[0]));
                    }
                    seen_root = true;
                } else if open.len() >= MAX_DEPTH {
                    return Err(format!("elements nested deeper than {MAX_DEPTH}"));
                }
                if let Some(parent) = open.last_mut() {
                    parent.1 = true;
                }
                open.push((name, false));
                content.clear();
            }
            Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if open.is_empty() {
                    return Err(format!("the document is not one {} (found an empty {name})", roots[0]));
                }
                if let Some(parent) = open.last_mut() {
                    parent.1 = true;
                }
                let mut path: Vec<&str> = open.iter().skip(1).map(|(n, _)| n.as_str()).collect();
                path.push(&name);
                on(&path, Some(String::new()))?;
            }
            Event::Text(t) => {
                let t = t.xml10_content().map_err(|e| format!("text: {e}"))?;
                content.push_str(&t);
            }
            Event::CData(t) => content.push_str(&String::from_utf8_lossy(&t)),
            Event::GeneralRef(r) => match r.resolve_char_ref().map_err(|e| format!("reference: {e}"))? {
                Some(c) => content.push(c),
                None => {
                    let name = String::from_utf8_lossy(&r).into_owned();
                    let resolved = quick_xml::escape::resolve_predefined_entity(&name)
                        .ok_or_else(|| format!("unknown entity &{name};"))?;
                    content.push_str(resolved);
                }
            },
            Event::End(_) => {
                let (_, holds_elements) = open.last().cloned().ok_or("an end tag with nothing open")?;
                if open.len() > 1 {
                    let path: Vec<&str> = open.iter().skip(1).map(|(n, _)| n.as_str()).collect();
                    let text = (!holds_elements).then(|| std::mem::take(&mut content));
                    on(&path, text)?;
                }
                open.pop();
                content.clear();
            }
            Event::Eof => {
                return match (seen_root, open.is_empty()) {
                    (true, true) => Ok(()),
                    (false, _) => Err(format!("no {} element", roots[0])),
                    (true, false) => Err("the document ends inside an element".to_string()),
                };
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => {}
        }
    }
}

/// An ISO 8601 UTC time as S3 writes it (`2010-11-10T20:48:33.000Z`), or `None`.
pub fn parse_time(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let rest = &s[19..];
    let (fraction, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let digits = r.bytes().take_while(u8::is_ascii_digit).count();
            (&r[..digits], &r[digits..])
        }
        None => ("", rest),
    };
    if !matches!(zone, "Z" | "+00:00") || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let nanos: u32 = if fraction.is_empty() {
        0
    } else {
        let f = &fraction[..fraction.len().min(9)];
        f.parse::<u32>().ok()? * 10u32.pow(9 - f.len() as u32)
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let secs = u64::try_from(secs).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPLOADS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker/>
  <NextKeyMarker>p/t-x/0/b&amp;c.log</NextKeyMarker><NextUploadIdMarker>id-2</NextUploadIdMarker>
  <MaxUploads>2</MaxUploads><IsTruncated>true</IsTruncated>
  <Upload><Key>p/t-x/0/a.log</Key><UploadId>id-1</UploadId>
    <Initiator><ID>arn</ID><DisplayName>me</DisplayName></Initiator>
    <StorageClass>STANDARD</StorageClass><Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>
  <Upload><Key>p/t-x/0/b&amp;c&#x2F;&#100;.log</Key><UploadId>id-2</UploadId><Initiated>soon</Initiated></Upload>
</ListMultipartUploadsResult>"#;

    #[test]
    fn uploads_parse_with_entities_markers_and_times() {
        let page = parse_uploads(UPLOADS.as_bytes()).unwrap();
        assert!(page.truncated);
        assert_eq!((page.next_key_marker.as_str(), page.next_upload_id_marker.as_str()), ("p/t-x/0/b&c.log", "id-2"));
        assert_eq!(page.uploads.len(), 2);
        assert_eq!(page.uploads[0].key, "p/t-x/0/a.log");
        assert_eq!(page.uploads[0].initiated, Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_289_422_113)));
        assert_eq!(page.uploads[1].key, "p/t-x/0/b&c/d.log");
        assert_eq!((page.uploads[1].upload_id.as_str(), page.uploads[1].initiated), ("id-2", None));
    }

    #[test]
    fn parts_sum_and_keep_the_latest_time() {
        let xml = r#"<ListPartsResult><Bucket>b</Bucket><Key>k</Key><UploadId>u</UploadId>
            <PartNumberMarker>0</PartNumberMarker><NextPartNumberMarker>2</NextPartNumberMarker><IsTruncated>true</IsTruncated>
            <Part><PartNumber>1</PartNumber><LastModified>2024-02-29T23:59:59Z</LastModified><ETag>"e"</ETag><Size>5242880</Size></Part>
            <Part><PartNumber>2</PartNumber><LastModified>2024-03-01T00:00:01.5Z</LastModified><Size>7</Size></Part>
            </ListPartsResult>"#;
        let page = parse_parts(xml.as_bytes()).unwrap();
        assert_eq!((page.parts, page.bytes, page.truncated, page.next_marker), (2, 5_242_887, true, Some(2)));
        assert_eq!(page.last_modified, Some(SystemTime::UNIX_EPOCH + Duration::new(1_709_251_201, 500_000_000)));
        let empty = parse_parts(b"<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>").unwrap();
        assert_eq!(empty, PartsPage::default());
    }

    #[test]
    fn bad_answers_are_errors_never_panics() {
        let cases: &[&[u8]] = &[
            b"",
            b"<Other/>",
            b"<ListPartsResult>",
            b"<ListPartsResult><Part><Size>x</Size></Part></ListPartsResult>",
            b"<ListPartsResult><Part><PartNumber>1</PartNumber></Part></ListPartsResult>",
            b"<ListPartsResult><Part><Size>18446744073709551615</Size></Part><Part><Size>1</Size></Part></ListPartsResult>",
            b"<ListPartsResult><NextPartNumberMarker>-1</NextPartNumberMarker></ListPartsResult>",
            b"<ListPartsResult></ListPartsResult><ListPartsResult></ListPartsResult>",
            b"<ListPartsResult><Size>&bogus;</Size></ListPartsResult>",
            b"\xff\xfe",
        ];
        for c in cases {
            assert!(parse_parts(c).is_err(), "{}", String::from_utf8_lossy(c));
        }
        let deep = format!("<ListMultipartUploadsResult>{}", "<a>".repeat(100));
        assert!(parse_uploads(deep.as_bytes()).unwrap_err().contains("deeper"));
        assert!(
            parse_uploads(b"<ListMultipartUploadsResult><Upload><Key>k</Key></Upload></ListMultipartUploadsResult>")
                .is_err()
        );
        // Every cut of a good answer, and every byte of it changed, is an error or a page: never a panic.
        for n in 0..UPLOADS.len() {
            let _ = parse_uploads(&UPLOADS.as_bytes()[..n]);
            let mut b = UPLOADS.as_bytes().to_vec();
            b[n] ^= 0x5a;
            let _ = parse_uploads(&b);
        }
    }

    #[test]
    fn error_answers_say_their_code() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>";
        assert_eq!(error_message(body), "NoSuchUpload: gone");
        assert_eq!(error_message(b"plain"), "plain");
    }

    #[test]
    fn times_parse_as_s3_writes_them() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(SystemTime::UNIX_EPOCH));
        assert_eq!(
            parse_time("2000-03-01T00:00:00.000Z"),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(951_868_800))
        );
        for bad in [
            "",
            "2010-11-10",
            "2010-13-10T00:00:00Z",
            "2010-11-10T00:00:00+02:00",
            "2010-11-10T25:00:00Z",
            "2010-11-10T20:48:33.Z0",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}
