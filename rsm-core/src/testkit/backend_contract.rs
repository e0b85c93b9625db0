//! The backend contract: each function is one check, run against a fresh backend.

use super::unique_prefix;
use crate::backend::StorageBackend;
use crate::error::{Error, ErrorKind};
use crate::testkit::log_writer::Rng;
use bytes::Bytes;
use std::io::Write;
use std::sync::Arc;

type B = Arc<dyn StorageBackend>;

/// `n` deterministic pseudo-random bytes.
pub fn data(n: usize, seed: u64) -> Bytes {
    let mut rng = Rng::new(seed);
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(n);
    Bytes::from(v)
}

async fn get_all(b: &B, key: &str) -> Result<Bytes, Error> {
    b.get_range(key, 0..u64::MAX).await
}

fn kind<T: std::fmt::Debug>(r: Result<T, Error>) -> ErrorKind {
    r.expect_err("expected an error").kind()
}

/// Bytes put (from memory and from a file prefix) read back identical.
pub async fn round_trip(b: B) {
    let p = unique_prefix("round-trip");
    let d = data(100_000, 1);
    b.put_bytes(&format!("{p}mem"), d.clone()).await.unwrap();
    assert_eq!(get_all(&b, &format!("{p}mem")).await.unwrap(), d);

    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&d).unwrap();
    f.flush().unwrap();
    b.put_file(&format!("{p}file"), f.path(), 70_000).await.unwrap();
    assert_eq!(get_all(&b, &format!("{p}file")).await.unwrap(), d.slice(..70_000), "only the first len bytes");
    let e = b.put_file(&format!("{p}short"), f.path(), 200_000).await;
    assert!(e.is_err(), "a file shorter than len must fail");
    assert_eq!(kind(get_all(&b, &format!("{p}short")).await), ErrorKind::NotFound, "no partial object");

    b.put_bytes(&format!("{p}empty"), Bytes::new()).await.unwrap();
    assert_eq!(get_all(&b, &format!("{p}empty")).await.unwrap().len(), 0);
}

/// First byte, last byte, past the end, empty, and starting past the end.
pub async fn ranges(b: B) {
    let p = unique_prefix("ranges");
    let key = format!("{p}obj");
    let d = data(10_000, 2);
    b.put_bytes(&key, d.clone()).await.unwrap();
    struct Case {
        name: &'static str,
        range: std::ops::Range<u64>,
        want: Option<std::ops::Range<usize>>,
    }
    let cases = [
        Case { name: "first byte", range: 0..1, want: Some(0..1) },
        Case { name: "last byte", range: 9_999..10_000, want: Some(9_999..10_000) },
        Case { name: "middle", range: 1_234..5_678, want: Some(1_234..5_678) },
        Case { name: "past the end is cut", range: 9_990..20_000, want: Some(9_990..10_000) },
        Case { name: "empty", range: 500..500, want: Some(500..500) },
        Case { name: "at the end is empty", range: 10_000..10_010, want: Some(10_000..10_000) },
        Case { name: "starting past the end", range: 10_001..10_010, want: None },
    ];
    for c in cases {
        let r = b.get_range(&key, c.range.clone()).await;
        match c.want {
            Some(w) => assert_eq!(r.unwrap(), d.slice(w), "{}", c.name),
            None => assert_eq!(kind(r), ErrorKind::InvalidArgument, "{}", c.name),
        }
    }
}

/// The last bytes of an object and its size: shorter than the object, all of it, longer than it, of an
/// empty object; a missing key is not found, naming it.
pub async fn tails(b: B) {
    let p = unique_prefix("tails");
    let key = format!("{p}obj");
    let d = data(10_000, 12);
    b.put_bytes(&key, d.clone()).await.unwrap();
    // (case, tail asked, the bytes wanted)
    let cases = [
        ("short", 32, 9_968..10_000),
        ("one byte", 1, 9_999..10_000),
        ("exactly the object", 10_000, 0..10_000),
        ("longer than the object", 128 << 10, 0..10_000),
    ];
    for (case, len, want) in cases {
        let (bytes, size) = b.get_tail(&key, len).await.unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(size, 10_000, "{case}: the object's size");
        assert!(bytes == d.slice(want.clone()), "{case}: {} bytes, wanted {want:?}", bytes.len());
    }
    b.put_bytes(&format!("{p}empty"), Bytes::new()).await.unwrap();
    let (bytes, size) = b.get_tail(&format!("{p}empty"), 32).await.unwrap();
    assert_eq!((bytes.len(), size), (0, 0), "an empty object");
    let e = b.get_tail(&format!("{p}nothing-here"), 32).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("nothing-here"), "the error names the key: {e}");
}

/// Reading a missing key is not found, naming the key; deleting it succeeds.
pub async fn missing_keys(b: B) {
    let p = unique_prefix("missing");
    let key = format!("{p}nothing-here");
    let e = b.get_range(&key, 0..10).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("nothing-here"), "the error names the key: {e}");
    b.delete(&key).await.unwrap();
    assert!(b.list(&p).await.unwrap().is_empty());
}

/// Delete removes; deleting again succeeds.
pub async fn deletes(b: B) {
    let p = unique_prefix("deletes");
    let key = format!("{p}a/b/c");
    b.put_bytes(&key, data(10, 3)).await.unwrap();
    b.delete(&key).await.unwrap();
    assert_eq!(kind(get_all(&b, &key).await), ErrorKind::NotFound);
    b.delete(&key).await.unwrap();
    assert!(b.list(&p).await.unwrap().is_empty());
}

/// Bulk delete of present and missing keys.
pub async fn bulk_deletes(b: B) {
    let p = unique_prefix("bulk");
    let keys: Vec<String> = (0..25).map(|i| format!("{p}k{i:02}")).collect();
    for k in &keys {
        b.put_bytes(k, data(16, 4)).await.unwrap();
    }
    let mut doomed: Vec<String> = keys[..20].to_vec();
    doomed.extend((0..3).map(|i| format!("{p}missing{i}")));
    b.delete_many(&doomed).await.unwrap();
    let left: Vec<String> = b.list(&p).await.unwrap().into_iter().map(|o| o.key).collect();
    assert_eq!(left, keys[20..].to_vec());
    b.delete_many(&[]).await.unwrap();
}

/// Listing by prefix: exact set, sorted, with sizes; a prefix need not end at a `/`.
pub async fn list(b: B) {
    let p = unique_prefix("list");
    for (k, n) in [("a/1", 1), ("a/2", 2), ("a/b/3", 3), ("ab/4", 4), ("z", 5)] {
        b.put_bytes(&format!("{p}{k}"), data(n, 5)).await.unwrap();
    }
    let got = |v: Vec<crate::backend::ObjectMeta>| v.into_iter().map(|o| (o.key, o.size)).collect::<Vec<_>>();
    assert_eq!(
        got(b.list(&format!("{p}a/")).await.unwrap()),
        vec![(format!("{p}a/1"), 1), (format!("{p}a/2"), 2), (format!("{p}a/b/3"), 3)]
    );
    assert_eq!(b.list(&format!("{p}a")).await.unwrap().len(), 4);
    assert_eq!(b.list(&p).await.unwrap().len(), 5);
    assert!(b.list(&format!("{p}q")).await.unwrap().is_empty());
}

/// Objects larger than any multipart threshold, from a file and from a stream of pieces.
pub async fn large_object(b: B) {
    let p = unique_prefix("large");
    let d = data(40 << 20, 6);
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&d).unwrap();
    f.flush().unwrap();
    b.put_file(&format!("{p}file"), f.path(), d.len() as u64).await.unwrap();
    let pieces: Vec<Result<Bytes, Error>> = (0..40).map(|i| Ok(d.slice(i << 20..(i + 1) << 20))).collect();
    b.put_stream(&format!("{p}stream"), Box::pin(futures::stream::iter(pieces))).await.unwrap();
    for k in ["file", "stream"] {
        let key = format!("{p}{k}");
        let all = get_all(&b, &key).await.unwrap();
        assert_eq!(all.len(), d.len(), "{k}");
        assert!(all == d, "{k}: content differs");
        let mid = b.get_range(&key, (17 << 20) + 3..(23 << 20) + 5).await.unwrap();
        assert!(mid == d.slice((17 << 20) + 3..(23 << 20) + 5), "{k}: range differs");
    }
    assert_eq!(b.list(&p).await.unwrap().iter().map(|o| o.size).collect::<Vec<_>>(), vec![40 << 20, 40 << 20]);
}

/// A second upload replaces the first whole, even when shorter.
pub async fn overwrite(b: B) {
    let p = unique_prefix("overwrite");
    let key = format!("{p}obj");
    b.put_bytes(&key, data(5_000, 7)).await.unwrap();
    let second = data(1_000, 8);
    b.put_bytes(&key, second.clone()).await.unwrap();
    assert_eq!(get_all(&b, &key).await.unwrap(), second);
}

/// Readers racing writers of one key only ever see a whole version.
pub async fn concurrent_readers_and_writers(b: B) {
    let p = unique_prefix("concurrent");
    let key = format!("{p}shared");
    let versions: Vec<Bytes> = (0..6).map(|i| data(256 * 1024 + i * 1000, 100 + i as u64)).collect();
    b.put_bytes(&key, versions[0].clone()).await.unwrap();
    let mut tasks = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let (b, key, v) = (b.clone(), key.clone(), v.clone());
        let own = format!("{p}own-{i}");
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                b.put_bytes(&key, v.clone()).await.unwrap();
                b.put_bytes(&own, v.clone()).await.unwrap();
            }
        }));
    }
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (b, key, versions) = (b.clone(), key.clone(), versions.clone());
        readers.push(tokio::spawn(async move {
            for _ in 0..10 {
                let got = get_all(&b, &key).await.unwrap();
                assert!(versions.contains(&got), "a reader saw a partial or mixed object of {} bytes", got.len());
            }
        }));
    }
    for t in tasks.into_iter().chain(readers) {
        t.await.unwrap();
    }
    for (i, v) in versions.iter().enumerate() {
        assert_eq!(&get_all(&b, &format!("{p}own-{i}")).await.unwrap(), v);
    }
}

/// Keys that could escape a root or are malformed are invalid arguments.
pub async fn bad_keys(b: B) {
    let p = unique_prefix("bad-keys");
    for bad in ["", "/abs", "../up", "a/../../b", "a//b", "a/./b", "nul\0key", "trailing/"] {
        let key = if bad.is_empty() || bad.starts_with('/') { bad.to_string() } else { format!("{p}{bad}") };
        let e = b.put_bytes(&key, data(4, 9)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "put {key:?}: {e}");
        assert_eq!(kind(b.get_range(&key, 0..1).await), ErrorKind::InvalidArgument, "get {key:?}");
    }
}

/// An upload whose stream fails midway leaves no object, and does not clobber an earlier one.
pub async fn failed_stream_leaves_nothing(b: B) {
    let p = unique_prefix("failed-stream");
    let items = |fail: bool| {
        let mut v: Vec<Result<Bytes, Error>> = (0..8).map(|i| Ok(data(1 << 20, i))).collect();
        if fail {
            v.push(Err(Error::retriable("source failed midway", "test")));
        }
        Box::pin(futures::stream::iter(v)) as crate::backend::ByteStream
    };
    let e = b.put_stream(&format!("{p}new"), items(true)).await.unwrap_err();
    assert!(e.full_message().contains("source failed midway"), "the cause reaches the caller: {e}");
    assert_eq!(kind(get_all(&b, &format!("{p}new")).await), ErrorKind::NotFound);
    b.put_stream(&format!("{p}old"), items(false)).await.unwrap();
    assert!(b.put_stream(&format!("{p}old"), items(true)).await.is_err());
    assert_eq!(get_all(&b, &format!("{p}old")).await.unwrap().len(), 8 << 20, "the earlier object stays whole");
    let listed: Vec<String> = b.list(&p).await.unwrap().into_iter().map(|o| o.key).collect();
    assert_eq!(listed, vec![format!("{p}old")]);
}
