//! A partition's directory in the store, `{topic}-{topicId}/{partition}/`, made and read back: the one place
//! that knows how the topic id is cut from the name before it. The layout builds and parses segment keys
//! with it ([`crate::storage::layout`]); the request counters find a request's topic with it
//! ([`topic_of_key`]).

use crate::model::TopicIdPartition;

/// The length of a topic id in a key: 22 characters of URL-safe base64 (which may hold `-`).
pub const TOPIC_ID_LEN: usize = 22;

/// The directory of `tp` under `key_prefix`: `{prefix}{topic}-{topicId}/{partition}/`.
pub fn partition_dir(key_prefix: &str, tp: &TopicIdPartition) -> String {
    format!("{key_prefix}{}-{}/{}/", tp.topic_partition.topic, tp.topic_id, tp.topic_partition.partition)
}

/// A `{topic}-{topicId}` path part cut into the topic name and the topic id's text, by length (the id may
/// hold `-`); `None` when it is too short, the name is empty or no `-` stands before the id. The id's
/// characters are not checked.
pub fn split_topic_and_id(part: &str) -> Option<(&str, &str)> {
    let cut = part.len().checked_sub(TOPIC_ID_LEN + 1)?;
    let (topic, dash, id) = (part.get(..cut)?, part.get(cut..cut + 1)?, part.get(cut + 1..)?);
    (!topic.is_empty() && dash == "-").then_some((topic, id))
}

/// The topic an object key, a listing prefix or a store request's path belongs to: the name in the first
/// `{topic}-{topicId}/{partition}/` of it (the id of URL-safe base64 characters, the partition all digits),
/// or `None` for a key outside any partition (the store's own files, a listing of the whole store). Never
/// fails; what does not look like a partition is `None`.
pub fn topic_of_key(key: &str) -> Option<&str> {
    let mut parts = key.split('/').peekable();
    while let Some(part) = parts.next() {
        let Some(&next) = parts.peek() else { break };
        let is_partition = !next.is_empty() && next.len() <= 10 && next.bytes().all(|b| b.is_ascii_digit());
        if !is_partition {
            continue;
        }
        if let Some((topic, id)) = split_topic_and_id(part)
            && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        {
            return Some(topic);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topic_of_a_key_prefix_or_request_path() {
        let id = "AAAAAAAAAAAAAAAAAAAA-w"; // 22 characters, a `-` among them
        let cases = [
            (format!("orders-{id}/0/00000000000000000000-{id}.log"), Some("orders")),
            (format!("kafka/tiered/my-topic.v2-{id}/17/00000000000000000042-{id}.manifest"), Some("my-topic.v2")),
            (format!("orders-{id}/3/"), Some("orders")),
            (format!("orders-{id}/3/00000000000000001000-"), Some("orders")),
            (format!("/bucket/prefix/a_b-{id}/0/x.indexes"), Some("a_b")),
            (format!("orders-{id}/"), None),
            (format!("orders-{id}/x/y"), None),
            ("orders-short/0/x.log".to_string(), None),
            (format!("-{id}/0/x.log"), None),
            (String::new(), None),
            ("/".to_string(), None),
            (format!("t-{}/0/a.log", crate::model::Uuid::random()), Some("t")),
        ];
        for (key, want) in cases {
            assert_eq!(topic_of_key(&key), want, "{key}");
        }
    }

    #[test]
    fn a_directory_made_is_read_back() {
        let tp = TopicIdPartition {
            topic_id: crate::model::Uuid::random(),
            topic_partition: crate::model::TopicPartition::new("my-topic", 7),
        };
        let dir = partition_dir("p/", &tp);
        assert_eq!(topic_of_key(&dir), Some("my-topic"));
        let part = dir.strip_prefix("p/").unwrap().split('/').next().unwrap();
        assert_eq!(split_topic_and_id(part), Some(("my-topic", tp.topic_id.to_string().as_str())));
    }
}
