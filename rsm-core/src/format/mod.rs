//! On-disk and remote formats: Kafka's own (record batches, `.index`, `.timeindex`, a partition directory)
//! and ours (the chunk entry of SR-32, the segment manifest, the SR-32 remote index files, chunk transforms,
//! the one-object segment's trailer), and the stored format of Aiven's plugin, read so that its segments stay
//! readable after a switch ([`aiven`]).

pub mod aiven;
pub mod batch;
pub mod chunk;
pub mod codec;
pub mod index;
pub mod manifest;
pub mod partition;
pub mod records;
pub mod remote_index;
pub mod segment_metadata;
pub mod trailer;
pub mod transform;
