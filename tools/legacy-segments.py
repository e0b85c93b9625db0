#!/usr/bin/env python3
"""Writes the legacy-format test segments of rsm-core/tests/data/legacy/ with kafka-python, an encoder no one
here wrote: message sets of magic 0 and 1 (plain, and gzip, snappy and lz4 wrappers; v1 with create time and
with log-append time) and one segment that mixes v0, v1 and v2 as a cluster upgrade leaves it.

Messages are built by kafka-python's LegacyRecordBatchBuilder (and DefaultRecordBatchBuilder for v2); a
compressed wrapper then gets what a broker gives it on append: its offset (the last inner offset) and, for v1,
its timestamp (the largest inside, or the append time) and attributes, with its CRC-32 computed again. Every
segment is read back with kafka-python's own reader, which writes the expectations (`<name>.batches`: each
batch's position, size, magic, offset field, first and last offset, largest timestamp) that the Rust tests
check our reader against, one line per batch. Kafka's indexes are written beside each `.log`: an offset index
entry every 4096 bytes (a batch's last offset and position) and a time index entry where the largest timestamp
grows. The batch building, the broker's fix-ups and the reading back live in tools/kafka_log.py, shared with
tools/record-fixtures.py.

Run: python3 -m venv /tmp/kpy && /tmp/kpy/bin/pip install kafka-python==3.0.12 lz4 python-snappy xxhash &&
     /tmp/kpy/bin/python tools/legacy-segments.py rsm-core/tests/data/legacy
"""

import os
import random
import sys

from kafka_log import fixture_indexes, legacy_batch, pin_gzip_mtime, place_v2, read_log, v2_batch

BASE = 1000
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}
FIELDS = ("position", "size", "magic", "offset_field", "first_offset", "last_offset", "records", "max_timestamp",
          "compression")


def gzip_mtime(n):
    """The gzip header time of the checked-in fixtures' n-th gzip stream. kafka-python writes the wall clock
    there, and the clock passed from ...080 to ...081 s after the 54th stream of the run that wrote them; pinned, a
    run gives the same bytes every time."""
    return 1796139080 if n < 54 else 1796139081


def value(rng, i):
    words = ["alpha", "beta", "gamma", "delta", str(i), str(rng.randrange(10**6))]
    return " ".join(rng.choice(words) for _ in range(rng.randrange(5, 60))).encode()


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
            if magic == 2:
                batch = place_v2(v2_batch([(t, k, v, []) for t, k, v in msgs]), offset)
            else:
                batch = legacy_batch(magic, codec, offset, msgs, append_time)
            log += batch
            offset += count
    return bytes(log)


def expectations(log):
    """Each batch as kafka-python reads it."""
    out = []
    for b in read_log(log):
        assert b["crc_ok"], "kafka-python refuses its own batch at %d" % b["position"]
        offsets = [r[0] for r in b["records"]]
        stamps = [r[1] for r in b["records"] if r[1] is not None]
        out.append({
            "position": b["position"],
            "size": b["size"],
            "magic": b["magic"],
            "offset_field": b["offset_field"],
            "first_offset": min(offsets),
            "last_offset": max(offsets),
            "records": len(offsets),
            "max_timestamp": max(stamps) if stamps and b["magic"] > 0 else -1,
            "compression": b["compression"],
        })
    return out


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    pin_gzip_mtime(gzip_mtime)
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
        offset_index, time_index = fixture_indexes(batches, BASE)
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
