//! The two admin requests rskafka 0.6 can not send: `CreateTopics` with topic configs (the metadata topic
//! needs `retention.ms=-1`, SR-29; the failed-deletions topic `cleanup.policy=compact`) and
//! `DescribeConfigs` (to check what an existing topic has). Each is one request over a plain TCP connection
//! to a bootstrap broker (a KRaft broker forwards `CreateTopics` to the controller), encoded and its answer
//! decoded by the `kafka-protocol` crate; versions that Kafka 2.4 to 4.x accept.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse, RequestHeader,
    ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use rsm_core::error::{Error, Result};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Kafka's `TOPIC_ALREADY_EXISTS`.
const TOPIC_ALREADY_EXISTS: i16 = 36;
/// Kafka's `UNKNOWN_TOPIC_OR_PARTITION`.
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
/// Kafka's retriable errors while a cluster starts or moves: request timed out, not enough replicas,
/// not controller, throttling quota exceeded.
const RETRIABLE: [i16; 4] = [7, 19, 41, 89];
/// `DescribeConfigs` resource type of a topic.
const TOPIC_RESOURCE: i8 = 2;
/// The largest answer accepted (these answers, for one topic, are a few KiB).
const MAX_RESPONSE: usize = 4 << 20;

/// A topic to create.
pub struct NewTopic<'a> {
    /// Its name.
    pub name: &'a str,
    /// Partitions.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
    /// Topic configs (`retention.ms`, `cleanup.policy`, …).
    pub configs: &'a [(&'a str, String)],
}

fn protocol_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("{what}: {e}"))
}

fn kafka_error(what: &str, code: i16, message: Option<&StrBytes>) -> Error {
    let message = message.map_or("", |m| m.as_str());
    let e = Error::storage(
        format!("{what}: Kafka error {code} {message}"),
        std::io::Error::other(format!("error code {code}")),
    );
    if RETRIABLE.contains(&code) { e.transient() } else { e }
}

/// Sends one request to the first of `servers` that answers, within `timeout` each.
async fn call<Q, A>(
    servers: &[String],
    client_id: &str,
    key: ApiKey,
    version: i16,
    request: &Q,
    what: &str,
    timeout: Duration,
) -> Result<A>
where
    Q: Encodable + HeaderVersion,
    A: Decodable + HeaderVersion,
{
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    let mut body = BytesMut::new();
    header.encode(&mut body, Q::header_version(version)).map_err(|e| protocol_error(what, e))?;
    request.encode(&mut body, version).map_err(|e| protocol_error(what, e))?;
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);
    let frame = frame.freeze();

    let mut last = Error::config("bootstrap.servers", "names no server");
    for server in servers {
        let what = format!("{what} on {server}");
        let exchange = async {
            let io = |e: std::io::Error| Error::storage(what.clone(), e).transient();
            let mut stream = TcpStream::connect(server.as_str()).await.map_err(io)?;
            stream.write_all(&frame).await.map_err(io)?;
            let len = stream.read_i32().await.map_err(io)?;
            let len = usize::try_from(len)
                .ok()
                .filter(|l| *l <= MAX_RESPONSE)
                .ok_or_else(|| Error::corrupt(format!("{what}: an answer of {len} bytes (at most {MAX_RESPONSE})")))?;
            let mut answer = vec![0u8; len];
            stream.read_exact(&mut answer).await.map_err(io)?;
            Ok::<_, Error>(Bytes::from(answer))
        };
        let mut answer = match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                last = e;
                continue;
            }
            Err(_) => {
                let timed_out = std::io::Error::from(std::io::ErrorKind::TimedOut);
                last = Error::storage(format!("{what}: no answer within {timeout:?}"), timed_out).transient();
                continue;
            }
        };
        let header =
            ResponseHeader::decode(&mut answer, A::header_version(version)).map_err(|e| protocol_error(&what, e))?;
        if header.correlation_id != 1 {
            return Err(Error::corrupt(format!("{what}: an answer to request {}, not 1", header.correlation_id)));
        }
        let response = A::decode(&mut answer, version).map_err(|e| protocol_error(&what, e))?;
        if answer.has_remaining() {
            return Err(Error::corrupt(format!("{what}: {} bytes after the answer", answer.remaining())));
        }
        return Ok(response);
    }
    Err(last)
}

/// Creates a topic with its configs. `Ok(false)`: it exists already.
pub async fn create_topic(
    servers: &[String],
    client_id: &str,
    topic: &NewTopic<'_>,
    timeout: Duration,
) -> Result<bool> {
    let what = format!("creating topic {}", topic.name);
    let configs = topic
        .configs
        .iter()
        .map(|(k, v)| {
            CreatableTopicConfig::default()
                .with_name(StrBytes::from_string(k.to_string()))
                .with_value(Some(StrBytes::from_string(v.clone())))
        })
        .collect();
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.name.to_string())))
                .with_num_partitions(topic.partitions)
                .with_replication_factor(topic.replication_factor)
                .with_configs(configs),
        ])
        .with_timeout_ms(i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX));
    let response: CreateTopicsResponse =
        call(servers, client_id, ApiKey::CreateTopics, 5, &request, &what, timeout).await?;
    let result = response
        .topics
        .iter()
        .find(|t| t.name.0.as_str() == topic.name)
        .ok_or_else(|| Error::corrupt(format!("{what}: the answer does not name the topic")))?;
    match result.error_code {
        0 => Ok(true),
        TOPIC_ALREADY_EXISTS => Ok(false),
        code => Err(kafka_error(&what, code, result.error_message.as_ref())),
    }
}

/// A topic's configs as the broker reports them (defaults included). A broker may not know a topic created
/// a moment ago (its metadata reaches the brokers after the create returns): that answer is asked again,
/// every 100 ms, until `timeout` has passed.
pub async fn topic_configs(
    servers: &[String],
    client_id: &str,
    topic: &str,
    timeout: Duration,
) -> Result<BTreeMap<String, String>> {
    let what = format!("describing the configs of topic {topic}");
    let request = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(StrBytes::from_string(topic.to_string())),
    ]);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let response: DescribeConfigsResponse =
            call(servers, client_id, ApiKey::DescribeConfigs, 4, &request, &what, timeout).await?;
        let result =
            response.results.first().ok_or_else(|| Error::corrupt(format!("{what}: the answer names no topic")))?;
        match result.error_code {
            0 => {
                return Ok(result
                    .configs
                    .iter()
                    .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                    .collect());
            }
            UNKNOWN_TOPIC_OR_PARTITION if tokio::time::Instant::now() + RETRY_UNKNOWN < deadline => {
                tokio::time::sleep(RETRY_UNKNOWN).await;
            }
            code => return Err(kafka_error(&what, code, result.error_message.as_ref())),
        }
    }
}

/// How long [`topic_configs`] waits before asking again about a topic the broker does not know yet.
const RETRY_UNKNOWN: Duration = Duration::from_millis(100);
