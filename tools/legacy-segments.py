#!/usr/bin/env python3
"""Writes the legacy-format test segments of rsm-core/tests/data/legacy/ with kafka-python, an encoder no one
here wrote: message sets of magic 0 and 1 (plain, and gzip, snappy and lz4 wrappers; v1 with create time and
with log-append time) and one segment that mixes v0, v1 and v2 as a cluster upgrade leaves it.

Messages are built by kafka-python's LegacyRecordBatchBuilder (and DefaultRecordBatchBuilder for v2); a
compressed wrapper then gets what a broker gives it on append: its offset (the last inner offset) and, for v1,
its timestamp (the largest inside, or the append time) and attributes, with its CRC-32 computed again. Every
segment is read back with kafka-python's own reader, which writes the expectations (`<name>.batches`: each
batch's position, size, magic, offset field, first and last offset, largest timestamp) that the Rust tests
check our reader against, one line per batch. Kafka's indexes are written beside each `.log`: an offset index entry every 4096
bytes (a batch's last offset and position) and a time index entry where the largest timestamp grows.

Run: python3 -m venv /tmp/kpy && /tmp/kpy/bin/pip install kafka-python==3.0.12 lz4 python-snappy xxhash &&
     /tmp/kpy/bin/python tools/legacy-segments.py rsm-core/tests/data/legacy
"""

import os
import random
import struct
import sys
import zlib

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

BASE = 1000
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}
INDEX_INTERVAL = 4096
FIELDS = ("position", "size", "magic", "offset_field", "first_offset", "last_offset", "records", "max_timestamp",
          "compression")


def value(rng, i):
    words = ["alpha", "beta", "gamma", "delta", str(i), str(rng.randrange(10**6))]
    return " ".join(rng.choice(words) for _ in range(rng.randrange(5, 60))).encode()


def legacy_batch(magic, codec, offset, messages, append_time=None):
    """One legacy batch: a plain message, or a wrapper of `messages` as a broker stores it."""
    b = LegacyRecordBatchBuilder(magic, codec, batch_size=1 << 30)
    if codec == 0:
        ts, key, val = messages[0]
        b.append(offset, ts, key, val)
        return bytes(b.build())
    last_relative = len(messages) - 1
    for i, (ts, key, val) in enumerate(messages):
        b.append(offset + i if magic == 0 else i, ts, key, val)
    out = bytearray(b.build())
    struct.pack_into(">q", out, 0, offset + last_relative)
    if magic == 1:
        attrs = codec | (0x08 if append_time is not None else 0)
        ts = append_time if append_time is not None else max(m[0] for m in messages)
        struct.pack_into(">bq", out, 17, attrs, ts)
    struct.pack_into(">I", out, 12, zlib.crc32(bytes(out[16:])) & 0xFFFFFFFF)
    return bytes(out)


def v2_batch(offset, messages):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, (ts, key, val) in enumerate(messages):
        b.append(i, timestamp=ts, key=key, value=val, headers=[])
    out = bytearray(b.build())
    struct.pack_into(">q", out, 0, offset)
    return bytes(out)  # the CRC-32C covers attributes onward, not the base offset


def segment(rng, parts):
    """`parts`: (magic, codec, messages per batch, batches[, append time]) runs, in order."""
    log, offset, ts = bytearray(), BASE, 1_600_000_000_000
    for part in parts:
        magic, codec, per, n = part[:4]
        append_time = part[4] if len(part) > 4 else None
        for _ in range(n):
            count = 1 if codec == 0 and magic < 2 else per
            msgs = []
            for i in range(count):
                ts += rng.randrange(0, 50)
                key = None if rng.random() < 0.2 else ("key-%d" % (offset + i)).encode()
                msgs.append((ts, key, value(rng, offset + i)))
            batch = v2_batch(offset, msgs) if magic == 2 else legacy_batch(magic, codec, offset, msgs, append_time)
            log += batch
            offset += count
    return bytes(log)


def expectations(log):
    """Each batch as kafka-python reads it."""
    out, pos, records = [], 0, MemoryRecords(log)
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        size = batch.size_in_bytes
        crc_ok = batch.validate_crc()  # before iterating: kafka-python then holds the decompressed bytes
        recs = list(batch)
        offsets = [r.offset for r in recs]
        stamps = [r.timestamp for r in recs if r.timestamp is not None]
        assert crc_ok, "kafka-python refuses its own batch at %d" % pos
        out.append({
            "position": pos,
            "size": size,
            "magic": batch.magic,
            "offset_field": struct.unpack_from(">q", log, pos)[0],
            "first_offset": min(offsets),
            "last_offset": max(offsets),
            "records": len(recs),
            "max_timestamp": max(stamps) if stamps and batch.magic > 0 else -1,
            "compression": batch.compression_type,
        })
        pos += size
    assert pos == len(log), "kafka-python stopped at %d of %d bytes" % (pos, len(log))
    return out


def indexes(batches):
    offset_index, time_index = bytearray(), bytearray()
    since, max_ts, last_time_entry = INDEX_INTERVAL, -1, None
    for b in batches:
        if since >= INDEX_INTERVAL:
            offset_index += struct.pack(">II", b["last_offset"] - BASE, b["position"])
            since = 0
            if max_ts >= 0 and max_ts != last_time_entry:
                time_index += struct.pack(">qI", max_ts, b["last_offset"] - BASE)
                last_time_entry = max_ts
        since += b["size"]
        max_ts = max(max_ts, b["max_timestamp"])
    return bytes(offset_index), bytes(time_index)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(405)
    cases = {}
    for magic in (0, 1):
        for name, codec in CODECS.items():
            cases["v%d-%s" % (magic, name)] = [(magic, codec, 12, 40 if codec else 300)]
    cases["v1-gzip-log-append-time"] = [(1, 1, 12, 40, 1_650_000_000_000)]
    cases["mixed-v0-v1-v2"] = [(0, 0, 1, 60), (0, 1, 8, 10), (1, 0, 1, 60), (1, 3, 8, 10), (2, 0, 8, 30)]
    for name, parts in cases.items():
        log = segment(rng, parts)
        batches = expectations(log)
        offset_index, time_index = indexes(batches)
        stem = os.path.join(out_dir, name)
        for ext, data in ((".log", log), (".index", offset_index), (".timeindex", time_index)):
            with open(stem + ext, "wb") as f:
                f.write(data)
        with open(stem + ".batches", "w") as f:
            f.write("# " + " ".join(FIELDS) + "\n")
            for b in batches:
                f.write(" ".join(str(b[k]) for k in FIELDS) + "\n")
        print("%s: %d bytes, %d batches" % (name, len(log), len(batches)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "rsm-core/tests/data/legacy")
