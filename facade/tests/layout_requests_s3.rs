//! Requests per segment on S3 (moto) in each segment layout (`segment.layout`): a copy, a cold fetch of a
//! consumer's first bytes, a cold index fetch and a delete, for a split segment and a one-object segment
//! (read with the custom metadata its copy returned, and without it: a host that drops it, or a reader set
//! to the other layout). Each operation runs on a store opened for it alone (cold caches, its own counters);
//! its requests are counted at the contract level (the counting layer) and at the HTTP level (the S3
//! client's counter), and the HTTP counts must be what a logging proxy in front of moto saw, method by
//! method. The table is printed (`--nocapture`).
//!
//! Needs moto (`eval "$(tools/servers/moto.sh start)"`); without it the test fails, unless `RSM_SKIP_S3=1`
//! outside CI.

use rsm_core::backend::{CountSnapshot, Op};
use rsm_core::model::Uuid;
use rsm_core::testkit::s3_test_server;
use rsm_core::{IndexType, RemoteLogSegmentMetadata};
use rsm_facade::Store;
use std::collections::BTreeMap;
use std::io::Read;

mod proxy;
use proxy::{CountingProxy, as_methods, by_method};

/// Requests by HTTP method, written as `PUT 1, GET 2`.
fn show(m: &BTreeMap<String, u64>) -> String {
    let v: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if v.is_empty() { "none".to_string() } else { v.join(", ") }
}

/// The contract-level counts of `c` that are not zero, by operation.
fn ops(c: &CountSnapshot) -> BTreeMap<String, u64> {
    Op::ALL
        .into_iter()
        .filter(|&op| c.get(op).requests > 0)
        .map(|op| (op.name().to_string(), c.get(op).requests))
        .collect()
}

#[test]
fn requests_per_segment_in_each_layout() {
    let Some(v) = s3_test_server() else { return };
    let proxy = CountingProxy::in_front_of(&v["RSM_TEST_S3_ENDPOINT"]);
    let url = format!("s3://{}/layout-requests-{}/", v["RSM_TEST_S3_BUCKET"], Uuid::random());
    let open = |layout: &str| {
        let settings: BTreeMap<String, String> = [
            ("s3.endpoint.url", format!("http://127.0.0.1:{}", proxy.port)),
            ("s3.region", v["RSM_TEST_S3_REGION"].clone()),
            ("aws.access.key.id", v["RSM_TEST_S3_ACCESS_KEY"].clone()),
            ("aws.secret.access.key", v["RSM_TEST_S3_SECRET_KEY"].clone()),
            ("segment.layout", layout.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Store::open(&url, &settings).unwrap()
    };
    let t = tempfile::tempdir().unwrap();
    let mut segments = Vec::new();
    for (topic, seed) in [("layouts", 7), ("layouts-more", 8)] {
        let p = rsm_core::testkit::small_topic_partition(t.path(), topic, seed);
        for s in p.closed_segments() {
            segments.push((p.segment_metadata(s, 1, 1_700_000_000_000).unwrap(), p.segment_data(s).unwrap()));
        }
    }
    assert!(segments.len() >= 4, "{} closed segments", segments.len());

    // Runs `op` on a store of its own set to `layout`; returns its contract-level and HTTP counts, the
    // HTTP ones checked against the proxy's log of the requests it sent.
    let run = |layout: &str, op: &mut dyn FnMut(&Store)| -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        let store = open(layout);
        let before = proxy.log().len();
        op(&store);
        let seen = by_method(&proxy.log()[before..], None);
        let http = as_methods(&store.store_requests().expect("the S3 client counts its requests"));
        assert_eq!(http, seen, "ours against the proxy's");
        (ops(&store.counts()), http)
    };
    let fetch_first = |store: &Store, md: &RemoteLogSegmentMetadata, bytes: &[u8]| {
        let mut got = Vec::new();
        store.fetch(md, 0, Some(99)).unwrap().read_to_end(&mut got).unwrap();
        assert_eq!(got[..], bytes[..100]);
    };

    // (segment layout, reader's setting, tagged, contract-level requests for copy, fetch, index, delete)
    type Want = [&'static [(&'static str, u64)]; 4];
    let cases: [(&str, &str, bool, Want); 4] = [
        ("split", "split", false, [&[("PUT", 3)], &[("GET", 2)], &[("GET", 2)], &[("DELETE", 2)]]),
        ("single", "single", true, [&[("PUT", 1)], &[("GET", 2)], &[("GET", 2)], &[("DELETE", 1)]]),
        ("single", "single", false, [&[("PUT", 1)], &[("GET", 2)], &[("GET", 2)], &[("DELETE", 2)]]),
        ("single", "split", false, [&[("PUT", 1)], &[("GET", 3)], &[("GET", 3)], &[("DELETE", 2)]]),
    ];
    let mut table = vec![
        "| segment | read with | custom metadata | copy | cold fetch (first 100 bytes) | cold index fetch | delete |"
            .to_string(),
        "|---|---|---|---|---|---|---|".to_string(),
    ];
    let mut split_read_by_single = None;
    for ((written, read, tagged, want), (md, data)) in cases.iter().zip(&segments) {
        let what = format!("{written} segment read with {read}, tagged {tagged}");
        let log = std::fs::read(&data.log_segment).unwrap();
        let mut md = md.clone();
        let mut custom = None;
        let copy = run(written, &mut |s| custom = s.copy(&md, data).unwrap());
        assert_eq!(custom.is_some(), *written == "single", "{what}");
        if *tagged {
            md.custom_metadata = custom.clone();
        }
        let fetch = run(read, &mut |s| fetch_first(s, &md, &log));
        let index = run(read, &mut |s| {
            assert_eq!(
                s.fetch_index(&md, IndexType::Offset).unwrap().to_vec(),
                std::fs::read(&data.offset_index).unwrap()
            )
        });
        if *written == "split" {
            // The reverse: a split segment read by a store set to `single` (its `.segment` key first).
            split_read_by_single = Some((
                run("single", &mut |s| fetch_first(s, &md, &log)),
                run("single", &mut |s| {
                    s.fetch_index(&md, IndexType::Offset).unwrap();
                }),
            ));
        }
        let delete = run(read, &mut |s| s.delete(&md).unwrap());
        let left = open(read).list_objects().unwrap().0;
        assert!(left.iter().all(|o| !o.key.contains(&md.remote_log_segment_id.id.to_string())), "{what}: {left:?}");
        let got = [&copy, &fetch, &index, &delete];
        for (i, (name, (contract, _))) in ["copy", "fetch", "index", "delete"].iter().zip(got).enumerate() {
            let w: BTreeMap<String, u64> = want[i].iter().map(|(k, n)| (k.to_string(), *n)).collect();
            assert_eq!(contract, &w, "{what}: {name} at the contract level");
        }
        // HTTP: a one-request copy is one PUT; a delete of one key a DELETE, of several a bulk POST each.
        assert_eq!(copy.1.get("PUT").copied(), Some(want[0][0].1), "{what}: the copy's HTTP PUTs {:?}", copy.1);
        let tag = if *tagged { "yes" } else { "no" };
        let cell =
            |(c, h): &(BTreeMap<String, u64>, BTreeMap<String, u64>)| format!("{} ({} over HTTP)", show(c), show(h));
        table.push(format!(
            "| {written} | {read} | {tag} | {} | {} | {} | {} |",
            cell(&copy),
            cell(&fetch),
            cell(&index),
            cell(&delete)
        ));
    }
    let (fetch, index) = split_read_by_single.expect("a split segment");
    let g = |c: &BTreeMap<String, u64>| c.get("GET").copied();
    assert_eq!((g(&fetch.0), g(&index.0)), (Some(3), Some(3)), "a split segment read by a store set to single");
    table.push(format!(
        "| split | single | no | (above) | {} ({} over HTTP) | {} ({} over HTTP) | (above) |",
        show(&fetch.0),
        show(&fetch.1),
        show(&index.0),
        show(&index.1)
    ));
    println!("\nRequests per segment on moto (contract level, and HTTP as the proxy saw it):\n{}", table.join("\n"));
}
