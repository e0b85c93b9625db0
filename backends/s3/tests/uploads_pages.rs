//! The paging of ListMultipartUploads (`key-marker`, `upload-id-marker`) and of ListParts
//! (`part-number-marker`), which moto does not do (it answers everything in one page): a local server that
//! answers canned pages, checking that each request is presigned and carries the markers of the page
//! before; and a server that repeats a truncated page is an error, not an endless loop.

use rsm_backend_s3::from_config;
use rsm_core::StorageBackend;
use rsm_core::config::{ConfigReader, props};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// Serves one answer per connection from `answer(path and query)`, recording each request line.
fn serve(answer: fn(&str) -> String) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            // The headers, up to the blank line (GETs have no body).
            let mut header = String::new();
            while reader.read_line(&mut header).unwrap() > 2 {
                header.clear();
            }
            let target = line.split(' ').nth(1).unwrap_or("").to_string();
            let body = answer(&target);
            log.lock().unwrap().push(target);
            let status = if body.starts_with("<Error>") { "404 Not Found" } else { "200 OK" };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (endpoint, seen)
}

fn backend(endpoint: &str) -> Arc<dyn StorageBackend> {
    let p = props([
        ("s3.bucket.name", "b"),
        ("s3.endpoint.url", endpoint),
        ("aws.access.key.id", "AKIDEXAMPLE"),
        ("aws.secret.access.key", "secret"),
        ("s3.max.retries", "0"),
    ]);
    Arc::new(from_config(&mut ConfigReader::new(&p)).unwrap())
}

fn upload(key: &str, id: &str) -> String {
    format!("<Upload><Key>{key}</Key><UploadId>{id}</UploadId><Initiated>2024-01-01T00:00:00.000Z</Initiated></Upload>")
}

fn pages(target: &str) -> String {
    let has = |s: &str| target.contains(s);
    if has("uploads=") {
        let (page, truncated) = if has("key-marker=p%2Fb") && has("upload-id-marker=u2") {
            (upload("p/c", "u3"), "<IsTruncated>false</IsTruncated>")
        } else {
            (
                upload("p/a", "u1") + &upload("p/b", "u2"),
                "<IsTruncated>true</IsTruncated><NextKeyMarker>p/b</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>",
            )
        };
        return format!("<ListMultipartUploadsResult>{truncated}{page}</ListMultipartUploadsResult>");
    }
    let part = |n: u32, size: u64| format!("<Part><PartNumber>{n}</PartNumber><Size>{size}</Size></Part>");
    if has("uploadId=u2") {
        // Gone since the listing (completed or aborted).
        return "<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>".to_string();
    }
    if has("part-number-marker=2") {
        return format!("<ListPartsResult><IsTruncated>false</IsTruncated>{}</ListPartsResult>", part(3, 7));
    }
    format!(
        "<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>2</NextPartNumberMarker>{}{}</ListPartsResult>",
        part(1, 100),
        part(2, 100)
    )
}

#[tokio::test]
async fn uploads_and_parts_are_listed_page_by_page() {
    let (endpoint, seen) = serve(pages);
    let listed = backend(&endpoint).list_incomplete_uploads("p/").await.unwrap();
    let got: Vec<(&str, &str, u64, Option<u64>)> =
        listed.iter().map(|u| (u.key.as_str(), u.upload_id.as_str(), u.parts, u.bytes)).collect();
    // u2 vanished between the listing and its parts: not listed.
    assert_eq!(got, [("p/a", "u1", 3, Some(207)), ("p/c", "u3", 3, Some(207))]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2 + 2 + 1 + 2, "{seen:#?}");
    assert!(seen.iter().all(|t| t.contains("X-Amz-Signature=") && t.contains("X-Amz-Credential=AKIDEXAMPLE")));
    assert!(seen[0].starts_with("/b/?uploads=&prefix=p%2F&X-Amz-"), "{}", seen[0]);
    assert!(seen[1].contains("key-marker=p%2Fb&upload-id-marker=u2"), "{}", seen[1]);
    assert!(seen[2].starts_with("/b/p/a?uploadId=u1&X-Amz-"), "{}", seen[2]);
    assert!(seen[3].starts_with("/b/p/a?uploadId=u1&part-number-marker=2&"), "{}", seen[3]);
}

#[tokio::test]
async fn a_server_repeating_a_truncated_page_is_an_error() {
    let (endpoint, _) = serve(|_| {
        format!(
            "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>p/a</NextKeyMarker>\
             <NextUploadIdMarker>u1</NextUploadIdMarker>{}</ListMultipartUploadsResult>",
            upload("p/a", "u1")
        )
    });
    let e = backend(&endpoint).list_incomplete_uploads("p/").await.unwrap_err();
    assert!(e.full_message().contains("without new markers"), "{}", e.full_message());
}
