//! Test fixture of the C and C++ hosts (`tests/c`, `tests/cpp`): writes a real Kafka partition directory
//! with the SDK's own writer and describes its closed segments in a text file the hosts parse, so that they
//! copy exactly what a broker would pass and check every byte against the files.
//!
//! `rsm-c-fixture DIR` writes `DIR/orders-0/` and `DIR/segments.txt`:
//! ```text
//! topic <name> <partition> <topic id msb> <topic id lsb>
//! checkpoint <path of leader-epoch-checkpoint>
//! segment <start> <end> <max ts> <size> <log> <index> <timeindex> <txnindex or -> <snapshot> <epochs> (<epoch> <offset>)*
//! ```

use rsm_core::Uuid;
use rsm_core::format::partition::LocalPartition;
use rsm_core::format::writer::{PartitionSpec, generate_partition};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: rsm-c-fixture DIR");
        std::process::exit(2);
    };
    if let Err(e) = write(&dir) {
        eprintln!("rsm-c-fixture: {}", e.full_message());
        std::process::exit(1);
    }
}

fn write(dir: &Path) -> rsm_core::Result<()> {
    let partition_dir = dir.join("orders-0");
    if partition_dir.exists() {
        std::fs::remove_dir_all(&partition_dir).map_err(|e| rsm_core::Error::from_io(partition_dir.display(), e))?;
    }
    // Three closed segments of about 256 KiB and an active one; several leader epochs in each.
    let spec = PartitionSpec {
        topic_id: Uuid::new(0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321),
        segment_bytes: 256 << 10,
        records: 4000,
        records_per_batch: 16,
        value_bytes: 200,
        first_timestamp: 1_700_000_000_000,
        epoch_every_batches: 40,
        seed: 12,
    };
    generate_partition(&partition_dir, &spec)?;
    let p = LocalPartition::open(&partition_dir)?;
    let tp = &p.topic_id_partition;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "topic {} {} {} {}",
        tp.topic_partition.topic,
        tp.topic_partition.partition,
        tp.topic_id.most_significant_bits(),
        tp.topic_id.least_significant_bits()
    );
    let _ = writeln!(out, "checkpoint {}", partition_dir.join("leader-epoch-checkpoint").display());
    for seg in p.closed_segments() {
        let md = p.segment_metadata(seg, 1, 1_700_000_000_000)?;
        let data = p.segment_data(seg)?;
        let txn = data.transaction_index.as_ref().map_or("-".to_string(), |t| t.display().to_string());
        let _ = write!(
            out,
            "segment {} {} {} {} {} {} {} {} {} {}",
            md.start_offset,
            md.end_offset,
            md.max_timestamp_ms,
            md.segment_size_in_bytes,
            data.log_segment.display(),
            data.offset_index.display(),
            data.time_index.display(),
            txn,
            data.producer_snapshot_index.display(),
            md.segment_leader_epochs.len()
        );
        for (e, o) in &md.segment_leader_epochs {
            let _ = write!(out, " {e} {o}");
        }
        out.push('\n');
    }
    let file = dir.join("segments.txt");
    std::fs::write(&file, out).map_err(|e| rsm_core::Error::from_io(file.display(), e))
}
