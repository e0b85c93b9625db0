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
//!
//! It also writes `DIR/txns-0/`, a partition of transactions and compressed batches (see `txn_fixture.rs`),
//! described in `DIR/txns.txt` in the same format, and the records a fetch of each of its closed segments
//! from its first offset returns, in `DIR/records.txt`:
//! ```text
//! expect <segment index> <isolation: 0 read_uncommitted, 1 read_committed> <next offset> <records>
//! record <offset> <timestamp> <timestamp type> <key> <value> <headers> (<header key> <header value>)*
//! ```
//! Bytes are hex, `-` for null and `.` for empty.
//!
//! And `DIR/aiven-store/`: the closed segments of `orders-0`, under the ids the hosts give them, as Aiven's
//! plugin would have stored them (compressed, encrypted under the test key pair `tests/data/aiven/key1`,
//! copied to `DIR/aiven-key1.pem`), for the hosts' reads of them (`aiven.read.enabled`).

use rsm_core::Uuid;
use rsm_core::format::partition::LocalPartition;
use rsm_core::testkit::log_writer::{PartitionSpec, generate_partition};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "../txn_fixture.rs"]
mod txn_fixture;

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
        compression: None,
    };
    generate_partition(&partition_dir, &spec)?;
    describe(&partition_dir, &dir.join("segments.txt"))?;
    write_aiven_store(&partition_dir, dir)?;
    let txns = txn_fixture::write_partition(dir)?;
    describe(&txns, &dir.join("txns.txt"))?;
    let mut out = String::new();
    for segment in 0..txn_fixture::SEGMENT_BASES.len() - 1 {
        for committed in [false, true] {
            let (records, next) = txn_fixture::expected(segment, committed);
            let _ = writeln!(out, "expect {segment} {} {next} {}", u8::from(committed), records.len());
            for r in records {
                let _ = write!(
                    out,
                    "record {} {} {} {} {} {}",
                    r.offset,
                    r.timestamp,
                    r.timestamp_type,
                    hex(r.key.as_deref()),
                    hex(r.value.as_deref()),
                    r.headers.len()
                );
                for (k, v) in &r.headers {
                    let _ = write!(out, " {} {}", hex(Some(k.as_bytes())), hex(v.as_deref()));
                }
                out.push('\n');
            }
        }
    }
    let file = dir.join("records.txt");
    std::fs::write(&file, out).map_err(|e| rsm_core::Error::from_io(file.display(), e))
}

/// Bytes as the hosts parse them: hex, `-` for null, `.` for empty.
fn hex(b: Option<&[u8]>) -> String {
    match b {
        None => "-".into(),
        Some([]) => ".".into(),
        Some(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

/// Describes the closed segments of the partition at `partition_dir` in `file`.
fn describe(partition_dir: &Path, file: &Path) -> rsm_core::Result<()> {
    let p = LocalPartition::open(partition_dir)?;
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
    std::fs::write(file, out).map_err(|e| rsm_core::Error::from_io(file.display(), e))
}

/// Writes the closed segments of the partition at `partition_dir` into `dir/aiven-store` as Aiven's plugin
/// would have stored them, under the segment ids the hosts give them (`tests/c/common.h`: the i-th closed
/// segment's id is `0x1111222233334444 + i`, `0x5555666677778888`).
fn write_aiven_store(partition_dir: &Path, dir: &Path) -> rsm_core::Result<()> {
    use rsm_core::testkit::aiven_writer::{AivenWriteSpec, write_aiven_segment};
    fn io(p: &Path) -> impl Fn(std::io::Error) -> rsm_core::Error + '_ {
        move |e| rsm_core::Error::from_io(p.display(), e)
    }
    let store_dir = dir.join("aiven-store");
    if store_dir.exists() {
        std::fs::remove_dir_all(&store_dir).map_err(io(&store_dir))?;
    }
    std::fs::create_dir_all(&store_dir).map_err(io(&store_dir))?;
    let pem = include_str!("../../../../tests/data/aiven/key1-private.pem");
    let key = dir.join("aiven-key1.pem");
    std::fs::write(&key, pem).map_err(io(&key))?;
    let mut pairs = rsm_core::crypto::AivenKeyPairs::default();
    pairs.add_pem("key1", pem, "aiven-key1.pem")?;
    let spec = AivenWriteSpec {
        key_prefix: String::new(),
        chunk_size: 64 << 10,
        compression: true,
        encryption: Some(("key1".into(), pairs)),
        custom_metadata: false,
    };
    let store = rsm_facade::Store::open(&format!("file://{}", store_dir.display()), &Default::default())?;
    let backend = store.storage().backend().clone();
    let p = LocalPartition::open(partition_dir)?;
    for (i, seg) in p.closed_segments().iter().enumerate() {
        let mut md = p.segment_metadata(seg, 1, 1_700_000_000_000)?;
        md.remote_log_segment_id.id = Uuid::new(0x1111_2222_3333_4444 + i as i64, 0x5555_6666_7777_8888);
        let data = p.segment_data(seg)?;
        rsm_facade::runtime().block_on(write_aiven_segment(&*backend, &md, &data, &spec))?;
    }
    Ok(())
}
