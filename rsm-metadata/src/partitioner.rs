//! Which partition of the metadata topic holds a user partition's events (SR-30).

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
pub fn metadata_partition(formula: PartitionFormula, partition: &TopicIdPartition, partitions: u32) -> i32 {
    let _ = (formula, partition, partitions);
    todo!("partitioner::metadata_partition")
}
