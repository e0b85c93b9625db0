//! Requests by topic on S3 (moto), checked against an independent count: the store talks to moto through a
//! small HTTP proxy in this test that logs every request it passes on (method and target), and each topic's
//! requests in that log (the targets naming `{topic}-{topicId}`, a listing's prefix included) must be what
//! [`Store::store_requests_by_topic`] counted, method by method (a GET that lists is a GET to the proxy);
//! the totals too. The contract-level counts are checked against what the operations must send.
//!
//! Needs moto (`eval "$(tools/servers/moto.sh start)"`); without it the test fails, unless `RSM_SKIP_S3=1`
//! outside CI.

use rsm_core::backend::{CountSnapshot, Op};
use rsm_core::format::partition::LocalPartition;
use rsm_core::model::{TopicIdPartition, Uuid};
use rsm_core::testkit::s3_test_server;
use rsm_core::{IndexType, RemoteLogSegmentMetadata};
use rsm_facade::{CountLevel, Store};
use std::collections::BTreeMap;
use std::io::Read;

mod common;
mod proxy;
use common::partition;
use proxy::{CountingProxy, as_methods, by_method};

#[test]
fn each_topics_http_requests_are_what_the_server_was_sent() {
    let Some(v) = s3_test_server() else { return };
    let proxy = CountingProxy::in_front_of(&v["RSM_TEST_S3_ENDPOINT"]);
    let settings: BTreeMap<String, String> = [
        ("s3.endpoint.url", format!("http://127.0.0.1:{}", proxy.port)),
        ("s3.region", v["RSM_TEST_S3_REGION"].clone()),
        ("aws.access.key.id", v["RSM_TEST_S3_ACCESS_KEY"].clone()),
        ("aws.secret.access.key", v["RSM_TEST_S3_SECRET_KEY"].clone()),
        ("cost.per.1000.put", "0.005".to_string()),
        ("cost.per.1000.get", "0.0004".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let url = format!("s3://{}/topic-requests-{}/", v["RSM_TEST_S3_BUCKET"], Uuid::random());
    let store = Store::open(&url, &settings).unwrap();

    let t = tempfile::tempdir().unwrap();
    let orders = partition(t.path(), "orders", 1);
    let clicks = partition(t.path(), "clicks", 2);
    let copy_all = |p: &LocalPartition| -> Vec<RemoteLogSegmentMetadata> {
        common::copy_all(&store, p).into_iter().map(|(md, _)| md).collect()
    };
    let orders_copied = copy_all(&orders);
    let clicks_copied = copy_all(&clicks);
    // Reads and a delete of `orders`, a listing of `clicks`.
    let mut first = store.fetch(&orders_copied[0], 0, Some(99)).unwrap();
    let mut bytes = Vec::new();
    first.read_to_end(&mut bytes).unwrap();
    assert_eq!(bytes.len(), 100);
    store.fetch_index(&orders_copied[0], IndexType::Offset).unwrap();
    store.delete(&orders_copied[1]).unwrap();
    let tp: &TopicIdPartition = &clicks.topic_id_partition;
    assert_eq!(store.list_segments(Some(tp)).unwrap().len(), clicks_copied.len());

    // The contract's level: what the operations must send.
    let contract = store.counts_by_topic();
    let put = |c: &CountSnapshot| c.get(Op::Put).requests;
    assert_eq!(put(&contract["orders"]), 3 * orders_copied.len() as u64);
    assert_eq!(put(&contract["clicks"]), 3 * clicks_copied.len() as u64);
    assert_eq!(contract["orders"].get(Op::Delete).requests, 2, "the manifest, then the other two objects at once");
    assert_eq!(contract["clicks"].get(Op::List).requests, 1);

    // The HTTP level against the proxy's log, topic by topic, method by method, and in all.
    let (level, http) = store.requests_by_topic();
    assert_eq!(level, CountLevel::Store);
    assert_eq!(store.store_requests_by_topic().as_ref(), Some(&http));
    let log = proxy.log();
    for (topic, p) in [("orders", &orders), ("clicks", &clicks)] {
        // In a path `{topic}-{topicId}/`, in a listing's prefix `{topic}-{topicId}%2F`.
        let name = format!("{topic}-{}", p.topic_id_partition.topic_id);
        let seen = by_method(&log, Some(&name));
        println!("{topic}: ours {} (contract level {}), the proxy's {seen:?}", http[topic], contract[topic]);
        assert_eq!(as_methods(&http[topic]), seen, "{topic}: ours {} against the proxy's {seen:?}", http[topic]);
        assert!(seen["PUT"] >= 3 * 2, "{topic}: {seen:?}");
    }
    assert_eq!(http.len(), 2, "{:?}", http.keys().collect::<Vec<_>>());
    let all = store.store_requests().unwrap();
    assert_eq!(as_methods(&all), by_method(&log, None), "in all: ours {all}");
    // The bytes read from the store (`store-bytes-read`) against the proxy's log: each read's range, or the
    // whole object for a read without one.
    let sizes: BTreeMap<String, u64> = store.list_objects().unwrap().0.into_iter().map(|o| (o.key, o.size)).collect();
    let bucket = format!("/{}/", v["RSM_TEST_S3_BUCKET"]);
    let sent: u64 = proxy
        .seen()
        .iter()
        .filter(|r| r.method == "GET" && !r.target.contains('?'))
        .map(|r| {
            let key = r.target.strip_prefix(&bucket).unwrap();
            let size = *sizes.get(key).unwrap_or_else(|| panic!("a read of {key}, not in the store"));
            match r.range.as_deref().and_then(|h| h.strip_prefix("bytes=")?.split_once('-')) {
                Some((a, b)) => b.parse::<u64>().unwrap().min(size - 1) + 1 - a.parse::<u64>().unwrap(),
                None => size,
            }
        })
        .sum();
    let i = rsm_facade::CACHE_METRICS.iter().position(|n| *n == "store-bytes-read").unwrap();
    assert_eq!(store.cache_metrics()[i], sent, "bytes read from the store");
    assert!(sent > 100, "{sent}");

    // A price table turns a topic's counts into money.
    let c = &http["clicks"];
    let e = store.prices().unwrap().estimate(c, None);
    let n = |op| c.get(op).requests as f64 / 1000.0;
    let want = (n(Op::Put) + n(Op::Post)) * 0.005 + (n(Op::Get) + n(Op::Head)) * 0.0004;
    assert!((e.requests - want).abs() < 1e-12, "{e:?}");
    assert_eq!(e.unpriced, [(Op::List, c.get(Op::List).requests)], "no price for listings was set");
}
