//! Our record-batch writer and reader checked against an implementation no one here wrote: the
//! `kafka-protocol` crate decodes what we write (records, keys, values, headers, offsets, timestamps,
//! CRC) and our iterator reads and CRC-checks what it encodes, compressed batches included.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record as KRecord, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use rsm_core::format::batch::BatchIter;
use rsm_core::testkit::log_writer::{Record, Rng, encode_batch};

fn our_records(n: usize, seed: u64) -> Vec<Record> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| Record {
            key: (i % 3 != 0).then(|| format!("k{i}").into_bytes()),
            value: (i % 5 != 4).then(|| (0..rng.below(300)).map(|_| rng.below(256) as u8).collect()),
            headers: (0..i % 3).map(|h| (format!("h{h}"), vec![h as u8; h + 1])).collect(),
            timestamp: 1_700_000_000_000 + rng.below(10_000) as i64,
        })
        .collect()
}

#[test]
fn kafka_protocol_decodes_what_we_write() {
    let mut log = Vec::new();
    let mut expected = Vec::new();
    let mut offset = 1_000;
    for b in 0..20 {
        let recs = our_records(1 + b % 7, b as u64 + 1);
        log.extend(encode_batch(offset, 3, &recs));
        for (i, r) in recs.iter().enumerate() {
            expected.push((offset + i as i64, r.clone()));
        }
        offset += recs.len() as i64;
    }
    let sets = RecordBatchDecoder::decode_all(&mut Bytes::from(log)).expect("kafka-protocol decodes our batches");
    let decoded: Vec<KRecord> = sets.into_iter().flat_map(|s| s.records).collect();
    assert_eq!(decoded.len(), expected.len());
    for (d, (off, r)) in decoded.iter().zip(&expected) {
        assert_eq!(d.offset, *off);
        assert_eq!(d.timestamp, r.timestamp, "offset {off}");
        assert_eq!(d.partition_leader_epoch, 3);
        assert_eq!(d.key.as_deref(), r.key.as_deref(), "offset {off}");
        assert_eq!(d.value.as_deref(), r.value.as_deref(), "offset {off}");
        let headers: Vec<(String, Vec<u8>)> = d
            .headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.as_deref().unwrap_or_default().to_vec()))
            .collect();
        assert_eq!(headers, r.headers, "offset {off}");
    }
}

#[test]
fn we_read_and_check_what_kafka_protocol_writes() {
    for compression in [Compression::None, Compression::Gzip] {
        let mut buf = BytesMut::new();
        // offset -> timestamp of every record written (timestamps grow with offsets).
        let mut written = std::collections::BTreeMap::new();
        let mut offset = 500;
        for b in 0..10i64 {
            let n = 1 + (b % 4) as usize;
            let records: Vec<KRecord> = (0..n as i64)
                .map(|i| KRecord {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: 9,
                    producer_id: -1,
                    producer_epoch: -1,
                    timestamp_type: TimestampType::Creation,
                    offset: offset + i,
                    sequence: -1,
                    timestamp: 2_000 + b * 10 + i,
                    key: Some(Bytes::from(format!("key{i}"))),
                    value: Some(Bytes::from(vec![b'v'; 100])),
                    headers: IndexMap::from([(StrBytes::from_static_str("h"), Some(Bytes::from_static(b"x")))]),
                })
                .collect();
            RecordBatchEncoder::encode(&mut buf, &records, &RecordEncodeOptions { version: 2, compression }).unwrap();
            for r in &records {
                written.insert(r.offset, r.timestamp);
            }
            offset += n as i64;
        }
        let bytes = buf.freeze();
        // However the encoder grouped records into batches, the batches must tile the offsets in order,
        // and each batch's header must agree with the records it holds.
        let mut next = 500;
        let mut batches = Vec::new();
        for b in BatchIter::new(&bytes, 0, true) {
            let b = b.expect("valid batch and CRC");
            assert_eq!(b.base_offset(), next, "{compression:?}");
            assert_eq!(b.record_count() as i64, b.last_offset() - b.base_offset() + 1, "{compression:?}");
            assert_eq!(b.max_timestamp(), written[&b.last_offset()], "{compression:?}");
            assert_eq!(b.partition_leader_epoch(), 9);
            next = b.last_offset() + 1;
            batches.push(b.base_offset());
        }
        assert_eq!(next, offset, "{compression:?}: every record is in a batch");
        assert!(batches.len() >= 4);

        // One flipped bit in a record of the fourth batch is caught, naming that batch's offset.
        let mut damaged = bytes.to_vec();
        let fourth = BatchIter::new(&bytes, 0, false).nth(3).unwrap().unwrap();
        damaged[fourth.position() as usize + fourth.size() - 2] ^= 0x04;
        let err = BatchIter::new(&damaged, 0, true).find_map(|b| b.err()).expect("CRC mismatch");
        assert!(err.to_string().contains(&format!("offset {}", batches[3])), "{err}");
    }
}
