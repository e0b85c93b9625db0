//! Which partition of the metadata topic holds a user partition's events (SR-30).
//!
//! Two formulas: Kafka's `RemoteLogMetadataTopicPartitioner` as shipped (the default, and the one to use
//! next to JVM brokers, which must agree on where a partition's events are), and the seeds' text. Both
//! are checked against answers computed by Kafka's own classes (`rsm-metadata/tests/data/kafka-*`,
//! written by `tools/metadata-fixtures`).

use rsm_core::error::{Error, Result};
use rsm_core::model::TopicIdPartition;

/// The formula that picks a user partition's metadata partition.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum PartitionFormula {
    /// Kafka as shipped: `toPositive(murmur2(Objects.hash(topicId.lsb, topicId.msb, partition)))`.
    #[default]
    Kafka,
    /// The seeds (KIP-405's text): `topicPartition.toString().hashCode() % partitions`.
    Seeds,
}

/// The metadata partition of `partition` among `partitions` metadata partitions.
///
/// - [`PartitionFormula::Kafka`]: Kafka's `RemoteLogMetadataTopicPartitioner.metadataPartition`, exactly:
///   `Utils.toPositive(Utils.murmur2(b)) % partitions`, where `b` is the 4 big-endian bytes of
///   `Objects.hash(topicId.getLeastSignificantBits(), topicId.getMostSignificantBits(), partition)`
///   (least significant bits first, as Kafka's source has it). The topic name plays no part.
/// - [`PartitionFormula::Seeds`]: Java's `String.hashCode` (over UTF-16 code units) of
///   `topic + "-" + partition`, then `Math.floorMod(hash, partitions)`. Java's `hash % partitions` is
///   negative for a negative hash; `floorMod` is the same number for a hash that is not negative and a
///   partition in `0..partitions` for every hash (unlike `abs`, it also has no `Integer.MIN_VALUE` case).
///
/// `partitions` must be above 0 (use [`checked_metadata_partition`] to have that checked): 0 gives 0, and a
/// count above `i32::MAX` (which Kafka's `int` count can not be) is taken as `i32::MAX`.
pub fn metadata_partition(formula: PartitionFormula, partition: &TopicIdPartition, partitions: u32) -> i32 {
    if partitions == 0 {
        return 0;
    }
    let n = partitions.min(i32::MAX as u32) as i32;
    match formula {
        PartitionFormula::Kafka => {
            let id = partition.topic_id;
            let hash = java_objects_hash3(
                java_long_hash(id.least_significant_bits()),
                java_long_hash(id.most_significant_bits()),
                partition.topic_partition.partition,
            );
            to_positive(murmur2(&hash.to_be_bytes())) % n
        }
        PartitionFormula::Seeds => java_string_hash(&partition.topic_partition.to_string()).rem_euclid(n),
    }
}

/// [`metadata_partition`], with the count checked: 0, or above `i32::MAX`, is an invalid-argument error.
pub fn checked_metadata_partition(
    formula: PartitionFormula,
    partition: &TopicIdPartition,
    partitions: u32,
) -> Result<i32> {
    if partitions == 0 || partitions > i32::MAX as u32 {
        return Err(Error::invalid(format!(
            "the metadata topic's partition count must be between 1 and {}, not {partitions}",
            i32::MAX
        )));
    }
    Ok(metadata_partition(formula, partition, partitions))
}

/// Kafka's `Utils.murmur2` (seed `0x9747b28c`), the hash its default producer partitioner uses too.
pub fn murmur2(data: &[u8]) -> i32 {
    const M: i32 = 0x5bd1_e995;
    let mut h = 0x9747_b28c_u32 as i32 ^ data.len() as i32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= ((k as u32) >> 24) as i32;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate().rev() {
            h ^= i32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= ((h as u32) >> 13) as i32;
    h = h.wrapping_mul(M);
    h ^= ((h as u32) >> 15) as i32;
    h
}

/// Kafka's `Utils.toPositive`: the number without its sign bit.
fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// Java's `Long.hashCode`.
fn java_long_hash(v: i64) -> i32 {
    (v ^ ((v as u64) >> 32) as i64) as i32
}

/// Java's `Objects.hash(a, b, c)` of values whose hash codes are given.
fn java_objects_hash3(a: i32, b: i32, c: i32) -> i32 {
    [a, b, c].iter().fold(1i32, |h, &x| h.wrapping_mul(31).wrapping_add(x))
}

/// Java's `String.hashCode`: over UTF-16 code units, wrapping.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::model::{TopicPartition, Uuid};
    use std::path::Path;

    /// `kafka <msb> <lsb> <partition> <count> <answer>`,
    /// `seeds <partition> <count> <hashCode> <hashCode % count> <floorMod> <topic>` and
    /// `murmur2 <hex> <hash>` lines, as Kafka's classes computed them (tools/metadata-fixtures).
    fn known_answers(version: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/kafka-{version}/partitions.txt"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn both_formulas_agree_with_kafkas_classes() {
        for version in ["3.9.2", "4.0.0", "4.4.0"] {
            let (mut kafka, mut seeds, mut negative, mut non_ascii) = (0, 0, 0, 0);
            for line in known_answers(version).lines().filter(|l| l.starts_with("kafka ") || l.starts_with("seeds ")) {
                let mut f = line.splitn(7, ' ');
                let kind = f.next().unwrap();
                let mut num = || f.next().unwrap().parse::<i64>().unwrap();
                if kind == "kafka" {
                    let (msb, lsb, p, n, want) = (num(), num(), num() as i32, num() as u32, num() as i32);
                    let tp = TopicIdPartition::new(Uuid::new(msb, lsb), TopicPartition::new("t", p));
                    assert_eq!(metadata_partition(PartitionFormula::Kafka, &tp, n), want, "{version}: {line}");
                    kafka += 1;
                } else {
                    let (p, n, hash, java_rem, floor_mod) = (num() as i32, num() as u32, num(), num(), num());
                    let topic = f.next().unwrap_or("");
                    let tp = TopicIdPartition::new(Uuid::ONE, TopicPartition::new(topic, p));
                    assert_eq!(i64::from(java_string_hash(&tp.topic_partition.to_string())), hash, "{line}");
                    assert_eq!(i64::from(java_string_hash(&tp.topic_partition.to_string()) % n as i32), java_rem);
                    let got = metadata_partition(PartitionFormula::Seeds, &tp, n);
                    assert_eq!(i64::from(got), floor_mod, "{version}: {line}");
                    negative += usize::from(hash < 0);
                    non_ascii += usize::from(!topic.is_ascii());
                    seeds += 1;
                }
            }
            assert!(kafka >= 100 && seeds >= 100, "{version}: {kafka} Kafka answers, {seeds} seeds answers");
            assert!(negative > 0 && non_ascii > 0, "{version}: negative hashes and non-ASCII topics are covered");
        }
    }

    #[test]
    fn murmur2_agrees_with_kafkas_utils() {
        let text = known_answers("4.4.0");
        let mut n = 0;
        for line in text.lines().filter(|l| l.starts_with("murmur2 ")) {
            let f: Vec<&str> = line.split(' ').collect();
            let bytes: Vec<u8> =
                (0..f[1].len()).step_by(2).map(|i| u8::from_str_radix(&f[1][i..i + 2], 16).unwrap()).collect();
            assert_eq!(murmur2(&bytes).to_string(), f[2], "{line}");
            n += 1;
        }
        assert!(n >= 10, "every tail length is covered");
    }

    #[test]
    fn zero_partitions_does_not_panic_and_is_rejected_when_checked() {
        let tp = TopicIdPartition::new(Uuid::new(1, 2), TopicPartition::new("t", 0));
        for f in [PartitionFormula::Kafka, PartitionFormula::Seeds] {
            assert_eq!(metadata_partition(f, &tp, 0), 0);
            assert!(checked_metadata_partition(f, &tp, 0).is_err());
            assert!(checked_metadata_partition(f, &tp, u32::MAX).is_err());
            assert_eq!(checked_metadata_partition(f, &tp, 1).unwrap(), 0);
            assert!((0..u32::MAX as i64).contains(&(metadata_partition(f, &tp, u32::MAX) as i64)));
        }
    }
}
