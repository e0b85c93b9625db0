#!/usr/bin/env python3
"""Writes the record-decoding fixtures of tests/data/records/ with kafka-python, an encoder no one here wrote:
three real Kafka partition directories, as a leader broker leaves them, and what a consumer reads from each.

- codecs-0: v2 batches cycling through none, gzip, snappy, lz4 and zstd; null and binary (not UTF-8) and
  non-ASCII keys and values, tombstones, 0-3 headers (some values null), 1-20 records a batch, timestamps that
  sometimes go back, one batch under LogAppendTime, leader epochs 0, 1 and 3.
- legacy-0: a log from a cluster upgraded from before 0.10: magic 0 messages (plain, gzip, snappy and lz4
  wrappers), then magic 1 (plain and each codec, under CreateTime and then LogAppendTime), then v2 batches.
- txn-0: three transactional producers (one fenced by a new instance, its open transaction aborted by the
  coordinator with a bumped epoch), an idempotent and a plain producer between them; transactions committed and
  aborted by control batches, one aborted transaction whose marker lands segments after its data; the
  `.txnindex` files as Kafka writes them.

Every record is encoded by kafka-python's DefaultRecordBatchBuilder or LegacyRecordBatchBuilder; what a broker
changes on append (offsets, leader epochs, LogAppendTime stamps, a wrapper's offset and timestamp, the control
bit of the markers it writes) is set afterwards with the CRC computed again (tools/kafka_log.py, shared with
tools/legacy-segments.py). Segments roll by size (segment.bytes) and get index entries every
index.interval.bytes (topic settings below), producer snapshots at every roll, a leader-epoch checkpoint and
partition.metadata; the last segment of each stays active.

The expectations, `<partition>.read_uncommitted.jsonl` and `<partition>.read_committed.jsonl` (one record a line,
in offset order), are made from the written .log files read back with kafka-python's MemoryRecords, and the script
asserts that what it read back is what it wrote. read_committed leaves out the records of aborted transactions:
taken from the generator's own record of which transactions it aborted, and checked against Kafka's consumer rule
applied to the read-back batches with the aborted transactions of the written .txnindex files.

Same seeds, same clock, same bytes on every run (kafka-python's gzip header time is pinned to 0, what Java's
GZIPOutputStream writes).

Run: python3 -m venv /tmp/kpy &&
     /tmp/kpy/bin/pip install kafka-python==3.0.12 lz4==4.4.5 python-snappy==0.7.3 cramjam==2.14.0 \\
         zstandard==0.25.0 xxhash==4.1.0 &&
     /tmp/kpy/bin/python tools/record-fixtures.py tests/data/records
"""

import heapq
import json
import os
import random
import struct
import sys

import kafka.codec
from kafka_log import (GZIP, LZ4, NONE, SNAPPY, ZSTD, CODEC_NAMES, Partition, bytes_json, codec_of,
                       control_batch, legacy_batch, log_append_time_v2, parse_txn_index, pin_gzip_mtime, read_log,
                       v2_batch)

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z, the first record's timestamp
SEGMENT_BYTES = 10 * 1024
INDEX_INTERVAL = 1024
CODEC_CYCLE = (NONE, GZIP, SNAPPY, LZ4, ZSTD)
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime", None: "NoTimestampType"}

ASCII_WORDS = ["order", "created", "shipped", "alpha", "beta", "gamma", "delta", "kafka", "tiered", "segment",
               "payment", "accepted", "queue", "retry", "ok"]
UTF8_WORDS = ["héllo", "naïve", "Zürich", "日本語", "Ελληνικά", "ключ", "ñandú", "€uro", "emoji🙂", "Ωmega",
              "straße", "café"]
HEADER_NAMES = ["trace-id", "content-type", "source", "ключ-заголовка", "retry-count", "", "x-ünïcode"]


class Clock:
    """The producers' and the broker's clock: fixed start, deterministic steps."""

    def __init__(self, rng, start=T0):
        self.rng, self.now = rng, start

    def tick(self, lo=1, hi=40):
        self.now += self.rng.randint(lo, hi)
        return self.now


def words(rng, lo, hi, utf8=0.0):
    pool = ASCII_WORDS + (UTF8_WORDS if rng.random() < utf8 else [])
    return " ".join(rng.choice(pool) for _ in range(rng.randint(lo, hi)))


def binary(rng, lo, hi):
    """Bytes that are not UTF-8 (0xff never occurs in UTF-8)."""
    return b"\xff" + bytes(rng.randrange(256) for _ in range(rng.randint(lo, hi)))


def some_bytes(rng, null=0.1, binary_share=0.15, utf8=0.3, lo=2, hi=12):
    r = rng.random()
    if r < null:
        return None
    if r < null + binary_share:
        return binary(rng, 3, 24)
    return words(rng, lo, hi, utf8).encode()


def some_headers(rng):
    out = []
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        name = rng.choice(HEADER_NAMES)
        r = rng.random()
        value = None if r < 0.2 else binary(rng, 1, 8) if r < 0.35 else words(rng, 1, 3, 0.4).encode()
        out.append((name, value))
    return out


def build_v2(rng, make_records, codec, **producer):
    """A v2 batch of `make_records()` with `codec`; kafka-python sends a batch uncompressed when compressing does
    not make it smaller, so the records are drawn again until it does (the fixtures want every codec present).
    `make_records(attempt)`: the records, for the attempt'th draw (from 0)."""
    for attempt in range(100):
        records = make_records(attempt)
        batch = v2_batch(records, codec, **producer)
        if codec_of(batch) == codec:
            return records, batch
    raise AssertionError("no %s batch that compresses" % CODEC_NAMES[codec])


class Written:
    """The generator's own record of what it appended: data records by offset, transactions, aborted offsets."""

    def __init__(self):
        self.records = []  # (offset, timestamp, timestamp type, key, value, headers)
        self.aborted_offsets = set()
        self.aborted_txns = []  # (producer id, first offset, marker offset)
        self.committed_txns = 0

    def v2(self, base, records, log_append_time=None):
        for i, (ts, key, value, headers) in enumerate(records):
            if log_append_time is None:
                self.records.append((base + i, ts, 0, key, value, list(headers)))
            else:
                self.records.append((base + i, log_append_time, 1, key, value, list(headers)))
        return [base + i for i in range(len(records))]

    def legacy(self, magic, base, messages, append_time=None):
        for i, (ts, key, value) in enumerate(messages):
            if magic == 0:
                self.records.append((base + i, None, None, key, value, []))
            elif append_time is None:
                self.records.append((base + i, ts, 0, key, value, []))
            else:
                self.records.append((base + i, append_time, 1, key, value, []))


# ---- codecs-0 ------------------------------------------------------------------------------------------------------

def gen_codecs():
    rng = random.Random(40501)
    clock = Clock(rng)
    p = Partition("codecs", 0, SEGMENT_BYTES, INDEX_INTERVAL)
    w = Written()
    n_batches = 62
    log_append_batch = 33  # an lz4 batch
    for i in range(n_batches):
        if i == 20:
            p.leader_epoch = 1
        if i == 52:
            p.leader_epoch = 3  # epoch 2 led no append here (a leader that lasted no write)
        codec = CODEC_CYCLE[i % len(CODEC_CYCLE)]
        count = 1 + (i * 7) % 20 if i % 3 else rng.randint(1, 20)

        def make(attempt):
            out = []
            for _ in range(count if attempt == 0 else rng.randint(2, 20)):
                ts = clock.tick(1, 30)
                if rng.random() < 0.1:
                    ts -= rng.randint(1, 5000)  # a producer's clock may go back (CreateTime)
                key = some_bytes(rng, null=0.2, binary_share=0.1, utf8=0.3, lo=1, hi=2)
                value = some_bytes(rng, null=0.1, binary_share=0.15, utf8=0.35, lo=2, hi=14)
                out.append((ts, key, value, some_headers(rng)))
            return out

        records, batch = build_v2(rng, make, codec)
        append_time = None
        if i == log_append_batch:
            append_time = clock.tick(5, 50)
            batch = log_append_time_v2(batch, append_time)
        p.append_v2(batch)
        w.v2(p.next_offset - len(records), records, append_time)
    return p, w


# ---- legacy-0 ------------------------------------------------------------------------------------------------------

def gen_legacy():
    rng = random.Random(40502)
    clock = Clock(rng)
    p = Partition("legacy", 0, SEGMENT_BYTES, INDEX_INTERVAL)
    w = Written()

    def message():
        ts = clock.tick(1, 30)
        key = some_bytes(rng, null=0.25, binary_share=0.1, utf8=0.2, lo=1, hi=2)
        value = some_bytes(rng, null=0.08, binary_share=0.15, utf8=0.3, lo=2, hi=14)
        return ts, key, value

    # (magic, codec, batches, LogAppendTime): the log of a cluster upgraded from 0.9 (magic 0) to 0.10 (magic 1,
    # the topic later set to message.timestamp.type=LogAppendTime) and on to 0.11+ (v2).
    parts = [(0, NONE, 25, False), (0, GZIP, 4, False), (0, SNAPPY, 4, False), (0, LZ4, 4, False),
             (0, NONE, 10, False),
             (1, NONE, 25, False), (1, GZIP, 4, False), (1, SNAPPY, 4, False), (1, LZ4, 4, False),
             (1, NONE, 15, True), (1, GZIP, 3, True), (1, SNAPPY, 3, True), (1, LZ4, 3, True),
             (1, NONE, 5, True)]
    for magic, codec, batches, log_append in parts:
        for _ in range(batches):
            messages = [message() for _ in range(1 if codec == NONE else rng.randint(2, 12))]
            append_time = clock.tick(1, 20) if log_append else None
            base = p.next_offset
            p.append(legacy_batch(magic, codec, base, messages, append_time))
            w.legacy(magic, base, messages, append_time)
    # v2 from here on (the topic back on CreateTime); the leader epoch cache starts with the first v2 batch.
    p.leader_epoch = 4
    for i in range(30):
        if i == 18:
            p.leader_epoch = 5
        codec = CODEC_CYCLE[i % len(CODEC_CYCLE)]
        count = rng.randint(1, 20)

        def make(attempt):
            return [message() + (some_headers(rng),) for _ in range(count if attempt == 0 else rng.randint(2, 20))]

        records, batch = build_v2(rng, make, codec)
        p.append_v2(batch)
        w.v2(p.next_offset - len(records), records)
    return p, w


# ---- txn-0 ---------------------------------------------------------------------------------------------------------

class Producer:
    def __init__(self, pid, epoch, transactional, coordinator_epoch=-1):
        self.pid, self.epoch, self.seq = pid, epoch, 0
        self.transactional = transactional
        self.coordinator_epoch = coordinator_epoch
        self.txn = None  # offsets of the open transaction's records
        self.txn_batches = 0


def gen_txn():
    rng = random.Random(40503)
    clock = Clock(rng)
    p = Partition("txn", 0, SEGMENT_BYTES, INDEX_INTERVAL)
    w = Written()
    tx = [Producer(4000, 3, True, 11), Producer(4001, 0, True, 11), Producer(4002, 7, True, 12)]
    idempotent = Producer(4003, 0, False)
    fenced = False
    end_chance = {4000: 0.3, 4001: 0.3, 4002: 0.07}  # 4002 keeps its transactions open long

    def make_records(count, utf8=0.3):
        def make(attempt):
            out = []
            for _ in range(count if attempt == 0 else rng.randint(2, 12)):
                n = rng.randrange(10_000)
                key = None if rng.random() < 0.1 else ("order-%d" % n).encode()
                r = rng.random()
                if r < 0.05:
                    value = None
                elif r < 0.15:
                    value = binary(rng, 4, 20)
                else:
                    value = ('{"order":%d,"item":"%s","qty":%d}' % (n, words(rng, 1, 3, utf8), rng.randint(1, 9))
                             ).encode()
                out.append((clock.tick(1, 25), key, value, some_headers(rng) if rng.random() < 0.4 else []))
            return out
        return make

    def data(prod, codec):
        count = rng.randint(1, 12)
        producer = {}
        if prod is not None:
            producer = dict(producer_id=prod.pid, producer_epoch=prod.epoch, base_sequence=prod.seq,
                            transactional=prod.transactional)
        records, batch = build_v2(rng, make_records(count), codec, **producer)
        p.append_v2(batch)
        count = len(records)
        offsets = w.v2(p.next_offset - count, records)
        if prod is not None:
            prod.seq += count
            if prod.transactional:
                prod.txn = (prod.txn or []) + offsets
                prod.txn_batches += 1

    def end(prod, commit, marker_epoch=None):
        assert prod.txn
        marker = control_batch(prod.pid, prod.epoch if marker_epoch is None else marker_epoch, commit,
                               prod.coordinator_epoch, clock.tick(1, 10))
        p.append_v2(marker)
        if commit:
            w.committed_txns += 1
        else:
            w.aborted_offsets.update(prod.txn)
            w.aborted_txns.append((prod.pid, prod.txn[0], p.next_offset - 1))
        prod.txn, prod.txn_batches = None, 0

    def codec():
        return rng.choice((NONE, NONE, NONE, GZIP, SNAPPY, LZ4, ZSTD))

    for step in range(150):
        if step == 70:
            tx[0].coordinator_epoch += 1  # the transaction coordinator moved to another broker
        if step == 120:
            p.leader_epoch = 1  # a new partition leader: it writes the markers of transactions open before it
        t1 = tx[1]
        if step >= 95 and not fenced and t1.txn:
            # A new instance of producer 4001's transactional.id: the coordinator fences the old one and aborts its
            # open transaction with the epoch bumped; the new instance gets the next epoch, sequences from 0.
            end(t1, commit=False, marker_epoch=t1.epoch + 1)
            t1.epoch, t1.seq, fenced = t1.epoch + 2, 0, True
            continue
        r = rng.random()
        if r < 0.75:
            prod = tx[0] if r < 0.28 else tx[1] if r < 0.55 else tx[2]
            if prod.txn and rng.random() < end_chance[prod.pid]:
                end(prod, commit=rng.random() < 0.6)
            else:
                data(prod, codec())
        elif r < 0.88:
            data(idempotent, codec())
        else:
            data(None, codec())
    for i, prod in enumerate(tx):
        if prod.txn:
            end(prod, commit=i % 2 == 0)
    assert fenced
    # Non-transactional appends until the segment rolls, then the active segment: no transaction is open in it.
    segments = len(p.segments)
    while len(p.segments) == segments:
        data(None if rng.random() < 0.5 else idempotent, codec())
    for _ in range(3):
        data(idempotent, codec())
    return p, w


# ---- checks and expectations ---------------------------------------------------------------------------------------

def read_partition(d):
    """The written directory read back: (segments [(base, batches)], aborted txns from the .txnindex files)."""
    bases = sorted(int(f[:-4]) for f in os.listdir(d) if f.endswith(".log"))
    segments, aborted = [], []
    for base in bases:
        with open(os.path.join(d, "%020d.log" % base), "rb") as f:
            segments.append((base, read_log(f.read())))
        txn = os.path.join(d, "%020d.txnindex" % base)
        if os.path.exists(txn):
            with open(txn, "rb") as f:
                aborted += [dict(e, segment=base) for e in parse_txn_index(f.read())]
    return segments, aborted


def check_log(d, segments, p):
    """A valid Kafka log: CRCs right, offsets gapless and increasing across batches and segments, every batch in
    the segment its file names, the indexes pointing at batch starts."""
    expected_next = 0
    for i, (base, batches) in enumerate(segments):
        next_base = segments[i + 1][0] if i + 1 < len(segments) else None
        assert batches, "empty segment %d" % base
        assert batches[0]["base_offset"] == base, (base, batches[0]["base_offset"])
        by_position = {}
        for b in batches:
            assert b["crc_ok"], "bad CRC at %s:%d" % (base, b["position"])
            offsets = [r[0] for r in b["records"]]
            assert offsets == list(range(expected_next, expected_next + len(offsets))), (base, b["position"])
            assert b["base_offset"] == offsets[0] and b["last_offset"] == offsets[-1]
            if b["magic"] < 2 and b["compression"]:
                assert b["offset_field"] == offsets[-1]  # a wrapper carries its last inner offset
            else:
                assert b["offset_field"] == offsets[0]
            if b["control"]:
                assert len(offsets) == 1 and b["transactional"] and b["compression"] == NONE
            expected_next = offsets[-1] + 1
            by_position[b["position"]] = b
        assert next_base is None or expected_next == next_base, (base, expected_next, next_base)
        with open(os.path.join(d, "%020d.index" % base), "rb") as f:
            index = f.read()
        last = -1
        for pos in range(0, len(index), 8):
            rel, position = struct.unpack_from(">II", index, pos)
            assert position in by_position and by_position[position]["last_offset"] == base + rel and rel > last
            last = rel
        with open(os.path.join(d, "%020d.timeindex" % base), "rb") as f:
            timeindex = f.read()
        last_ts = -1
        for pos in range(0, len(timeindex), 12):
            ts, rel = struct.unpack_from(">qI", timeindex, pos)
            assert ts > last_ts and any(b["max_timestamp"] == ts and b["last_offset"] == base + rel for b in batches)
            last_ts = ts
    assert expected_next == p.next_offset


def committed_by_consumer_rule(batches, aborted):
    """Kafka's consumer (CompletedFetch) under read_committed, fetching from offset 0 with the aborted
    transactions the broker collects from the .txnindex files: per batch with a producer id, the aborted
    transactions whose first offset is at most the batch's last offset become active for their producer; an abort
    marker ends its producer's; a transactional batch of a producer with an active aborted transaction is
    skipped; control batches give no records."""
    queue = [(a["first_offset"], a["producer_id"]) for a in aborted]
    heapq.heapify(queue)
    aborted_producers, out = set(), []
    for b in batches:
        if b["producer_id"] >= 0:
            while queue and queue[0][0] <= b["last_offset"]:
                aborted_producers.add(heapq.heappop(queue)[1])
            if b["control"]:
                if b["records"][0][3] == 0:  # abort marker
                    aborted_producers.discard(b["producer_id"])
                continue
            if b["transactional"] and b["producer_id"] in aborted_producers:
                continue
        if b["control"]:
            continue
        out += b["records"]
    return out


def record_json(r):
    offset, ts, ts_type, key, value, headers = r
    k, kb = bytes_json(key)
    v, vb = bytes_json(value)
    hs = []
    for name, hv in headers:
        hv, hb = bytes_json(hv)
        hs.append({"key": name, "value": hv, "value_base64": hb})
    obj = {"offset": offset, "timestamp": -1 if ts is None else ts, "timestamp_type": TIMESTAMP_TYPES[ts_type],
           "key": k, "key_base64": kb, "value": v, "value_base64": vb, "headers": hs}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def finish(out_dir, p, w):
    d = p.write(out_dir)
    segments, aborted = read_partition(d)
    check_log(d, segments, p)
    batches = [b for _, bs in segments for b in bs]
    data = [b for b in batches if not b["control"]]
    uncommitted = [r for b in data for r in b["records"]]
    assert uncommitted == w.records, "read back is not what was written"
    # The .txnindex files as the generator meant them: every aborted transaction, in the segment of its marker.
    assert aborted == p.aborted, (aborted, p.aborted)
    assert [(a["producer_id"], a["first_offset"], a["last_offset"]) for a in aborted] == w.aborted_txns
    markers = {b["base_offset"]: b for b in batches if b["control"]}
    for a in aborted:
        m = markers[a["last_offset"]]
        assert m["producer_id"] == a["producer_id"] and m["records"][0][3] == 0
    committed = [r for r in uncommitted if r[0] not in w.aborted_offsets]
    assert committed == committed_by_consumer_rule(batches, aborted), "consumer rule disagrees"
    for name, recs in (("read_uncommitted", uncommitted), ("read_committed", committed)):
        with open(os.path.join(out_dir, "%s.%s.jsonl" % (p.name, name)), "w", encoding="utf-8") as f:
            for r in recs:
                f.write(record_json(r) + "\n")
    return segments, aborted, uncommitted, committed


def summary(p, w, segments, aborted, uncommitted, committed):
    batches = [b for _, bs in segments for b in bs]
    kinds = {}
    for b in batches:
        kind = "control" if b["control"] else "v%d-%s%s" % (b["magic"], CODEC_NAMES[b["compression"]],
                                                             "-logappendtime" if b["timestamp_type"] == 1 else "")
        kinds[kind] = kinds.get(kind, 0) + 1
    print("%s: %d segments (%s), %d batches, offsets 0..%d, %d records read_uncommitted, %d read_committed"
          % (p.name, len(segments), " ".join(str(s[0]) for s in segments), len(batches), p.next_offset - 1,
             len(uncommitted), len(committed)))
    print("  batches: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    print("  leader epochs: %s" % p.epochs)
    if w.aborted_txns or w.committed_txns:
        print("  transactions: %d committed, %d aborted" % (w.committed_txns, len(w.aborted_txns)))
        first_segment = {}
        for base, bs in segments:
            for b in bs:
                for r in b["records"]:
                    first_segment[r[0]] = base
        for a in aborted:
            print("  aborted: producer %d offsets %d..%d (data from segment %d), marker at %d in segment %d, LSO %d"
                  % (a["producer_id"], a["first_offset"], a["last_offset"], first_segment[a["first_offset"]],
                     a["last_offset"], a["segment"], a["last_stable_offset"]))
    return kinds


def main(out_dir):
    for codec in ("snappy", "lz4", "zstd"):
        assert getattr(kafka.codec, "has_" + codec)(), "kafka-python has no %s codec: install its package" % codec
    pin_gzip_mtime(0)
    os.makedirs(out_dir, exist_ok=True)

    p, w = gen_codecs()
    res = finish(out_dir, p, w)
    kinds = summary(p, w, *res)
    assert all(kinds.get("v2-" + CODEC_NAMES[c], 0) >= 10 for c in CODEC_CYCLE)
    assert kinds.get("v2-lz4-logappendtime") == 1
    assert len(res[0]) >= 4

    p, w = gen_legacy()
    res = finish(out_dir, p, w)
    kinds = summary(p, w, *res)
    for magic in (0, 1):
        for c in (NONE, GZIP, SNAPPY, LZ4):
            assert kinds.get("v%d-%s" % (magic, CODEC_NAMES[c])), (magic, c)
            assert magic == 0 or kinds.get("v1-%s-logappendtime" % CODEC_NAMES[c]), c
    assert all(kinds.get("v2-" + CODEC_NAMES[c]) for c in CODEC_CYCLE)
    assert len(res[0]) >= 4

    p, w = gen_txn()
    res = finish(out_dir, p, w)
    summary(p, w, *res)
    segments, aborted = res[0], res[1]
    assert len(segments) >= 4
    assert len(aborted) >= 3 and w.committed_txns >= 3
    first_segment = {r[0]: base for base, bs in segments for b in bs for r in b["records"]}
    assert any(first_segment[a["first_offset"]] < a["segment"] for a in aborted), "no abort marker after a roll"
    active = segments[-1][1]
    assert not any(b["transactional"] for b in active), "a transaction in the active segment"
    assert any(b["transactional"] and not b["control"] and b["compression"] != NONE
               for _, bs in segments for b in bs)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/records")
