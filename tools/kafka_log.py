"""Kafka's on-disk log as a broker leaves it, around kafka-python's own record builders (an encoder no one here
wrote). Shared by tools/legacy-segments.py and tools/record-fixtures.py.

What is here, and what of it a broker does:
- Batches: every record is encoded by kafka-python's DefaultRecordBatchBuilder (v2) or LegacyRecordBatchBuilder
  (magic 0 and 1). Afterwards only the fields a broker sets on append are changed, with the CRC computed again
  where it covers them: the base offset and partition leader epoch of a v2 batch (outside its CRC-32C), the
  LogAppendTime bit and max timestamp of a v2 batch (inside it), the offset, timestamp and attributes of a legacy
  wrapper and the timestamp of a plain v1 message (CRC-32). Control batches (transaction markers) are written by
  the broker, never by a producer: their one control record is built by the same builder, then the batch gets the
  control attribute bit and its CRC-32C again.
- Segments: `Segment` appends as Kafka's LogSegment.append does (an offset index entry, with a time index entry
  when the largest timestamp grew, once more than `index.interval.bytes` were appended since the last one; a time
  index entry on roll), and holds the segment's aborted transactions (`.txnindex`).
- Partitions: `Partition` rolls segments by size as UnifiedLog does, keeps the producer state (ProducerStateManager:
  sequences, epochs, ongoing transactions, last stable offset), writes a producer snapshot at every roll, the
  leader-epoch checkpoint from the v2 batches' epochs, and `partition.metadata`.
- Reading back: `read_log` goes through kafka-python's MemoryRecords, which opens compressed and legacy wrappers.

kafka-python's gzip writes the wall clock into every gzip header; `pin_gzip_mtime` makes it a constant so that a
run gives the same bytes every time (Java's GZIPOutputStream, a Kafka producer's, writes 0).
"""

import base64
import gzip
import hashlib
import os
import struct
import types
import zlib

import kafka.codec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
INDEX_INTERVAL = 4096  # Kafka's index.interval.bytes default

# v2 batch header (DefaultRecordBatch): where the broker-set fields are.
V2_PARTITION_LEADER_EPOCH = 12
V2_CRC = 17
V2_ATTRIBUTES = 21
V2_LAST_OFFSET_DELTA = 23
V2_MAX_TIMESTAMP = 35
V2_PRODUCER_ID = 43
V2_HEADER = 61
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
# Legacy message (magic 0 and 1): offset, size, CRC-32 (from the magic byte on), magic, attributes[, timestamp].
LEGACY_CRC = 12
LEGACY_MAGIC = 16
LEGACY_ATTRIBUTES = 17
NO_TIMESTAMP = -1
MAX_BATCH = 1 << 30


def pin_gzip_mtime(mtime):
    """Makes kafka-python's gzip write a fixed time (seconds) into each gzip header instead of the wall clock:
    `mtime`, or `mtime(n)` for the n-th gzip stream written (from 0) when it is callable."""
    written = [0]

    class PinnedGzipFile(gzip.GzipFile):
        def __init__(self, *args, **kwargs):
            if "r" not in kwargs.get("mode", "r"):
                kwargs.setdefault("mtime", mtime(written[0]) if callable(mtime) else mtime)
                written[0] += 1
            super().__init__(*args, **kwargs)

    kafka.codec.gzip = types.SimpleNamespace(GzipFile=PinnedGzipFile)


# ---- batches -------------------------------------------------------------------------------------------------------

def legacy_batch(magic, codec, offset, messages, append_time=None):
    """One legacy batch at `offset`: a plain message (`messages` holds one), or a wrapper of `messages`, as a broker
    stores it. `messages`: (timestamp, key, value). With `append_time` (magic 1) the topic has
    message.timestamp.type=LogAppendTime: the broker stamps the plain message or the wrapper with it."""
    b = LegacyRecordBatchBuilder(magic, codec, batch_size=MAX_BATCH)
    if codec == 0:
        ts, key, val = messages[0]
        b.append(offset, ts, key, val)
        out = b.build()
        if append_time is None:
            return bytes(out)
        assert magic == 1, "magic 0 has no timestamp"
        out = bytearray(out)
        struct.pack_into(">bq", out, LEGACY_ATTRIBUTES, out[LEGACY_ATTRIBUTES] | TIMESTAMP_TYPE_BIT, append_time)
        struct.pack_into(">I", out, LEGACY_CRC, zlib.crc32(bytes(out[LEGACY_MAGIC:])) & 0xFFFFFFFF)
        return bytes(out)
    # Magic 0 wrappers hold absolute offsets (the broker recompresses them), magic 1 ones relative offsets.
    last_relative = len(messages) - 1
    for i, (ts, key, val) in enumerate(messages):
        b.append(offset + i if magic == 0 else i, ts, key, val)
    out = bytearray(b.build())
    struct.pack_into(">q", out, 0, offset + last_relative)
    if magic == 1:
        attrs = codec | (TIMESTAMP_TYPE_BIT if append_time is not None else 0)
        ts = append_time if append_time is not None else max(m[0] for m in messages)
        struct.pack_into(">bq", out, LEGACY_ATTRIBUTES, attrs, ts)
    struct.pack_into(">I", out, LEGACY_CRC, zlib.crc32(bytes(out[LEGACY_MAGIC:])) & 0xFFFFFFFF)
    return bytes(out)


def v2_batch(records, codec=NONE, producer_id=-1, producer_epoch=-1, base_sequence=-1, transactional=False):
    """A v2 batch as a producer sends it (base offset 0): `records` are (timestamp, key, value, headers), headers
    (name, value-or-None). kafka-python sends a batch uncompressed when compressing would not make it smaller: the
    caller sees that in the attributes (`codec_of`)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=producer_id, producer_epoch=producer_epoch,
                                  base_sequence=base_sequence, batch_size=MAX_BATCH)
    for i, (ts, key, val, headers) in enumerate(records):
        assert b.append(i, timestamp=ts, key=key, value=val, headers=list(headers)) is not None
    return bytearray(b.build())


def codec_of(batch):
    return struct.unpack_from(">h", batch, V2_ATTRIBUTES)[0] & 0x07


def _v2_crc(batch):
    struct.pack_into(">I", batch, V2_CRC, calc_crc32c(memoryview(batch)[V2_ATTRIBUTES:]))


def place_v2(batch, base_offset, leader_epoch=None):
    """What the broker assigns to a v2 batch on append: its base offset and (when given) the partition leader epoch.
    Neither is covered by the CRC-32C."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    if leader_epoch is not None:
        struct.pack_into(">i", out, V2_PARTITION_LEADER_EPOCH, leader_epoch)
    return out


def log_append_time_v2(batch, append_time):
    """A topic with message.timestamp.type=LogAppendTime: the broker sets the timestamp-type bit and the max
    timestamp to its clock (DefaultRecordBatch.setMaxTimestamp) and computes the CRC-32C again."""
    out = bytearray(batch)
    attrs = struct.unpack_from(">h", out, V2_ATTRIBUTES)[0] | TIMESTAMP_TYPE_BIT
    struct.pack_into(">h", out, V2_ATTRIBUTES, attrs)
    struct.pack_into(">q", out, V2_MAX_TIMESTAMP, append_time)
    _v2_crc(out)
    return out


def control_batch(producer_id, producer_epoch, commit, coordinator_epoch, timestamp):
    """A transaction marker as the broker writes it (MemoryRecords.withEndTransactionMarker): uncompressed,
    transactional and control, no sequence, one control record whose key is version 0 and type (0 abort, 1
    commit) and whose value is version 0 and the coordinator epoch."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=NONE, is_transactional=True, producer_id=producer_id,
                                  producer_epoch=producer_epoch, base_sequence=-1, batch_size=MAX_BATCH)
    b.append(0, timestamp=timestamp, key=struct.pack(">hh", 0, 1 if commit else 0),
             value=struct.pack(">hi", 0, coordinator_epoch), headers=[])
    out = bytearray(b.build())
    attrs = struct.unpack_from(">h", out, V2_ATTRIBUTES)[0] | CONTROL_BIT
    struct.pack_into(">h", out, V2_ATTRIBUTES, attrs)
    _v2_crc(out)
    return out


def shallow_info(batch):
    """What the broker knows of a batch it appends without opening it: (magic, first offset or None, last offset,
    max timestamp). For a legacy wrapper the first offset is unknown here (None)."""
    magic = batch[LEGACY_MAGIC]
    if magic >= 2:
        base = struct.unpack_from(">q", batch, 0)[0]
        delta = struct.unpack_from(">i", batch, V2_LAST_OFFSET_DELTA)[0]
        return magic, base, base + delta, struct.unpack_from(">q", batch, V2_MAX_TIMESTAMP)[0]
    offset = struct.unpack_from(">q", batch, 0)[0]
    ts = struct.unpack_from(">q", batch, LEGACY_ATTRIBUTES + 1)[0] if magic == 1 else NO_TIMESTAMP
    return magic, None, offset, ts


# ---- reading back --------------------------------------------------------------------------------------------------

def read_log(log):
    """Every batch of `log` as kafka-python reads it: dicts with position, size, magic, offset_field, crc_ok,
    compression, timestamp_type, transactional, control, producer_id, producer_epoch, base_offset (v2), last_offset
    (v2 header, else the last record's), max_timestamp and records (offset, timestamp, timestamp_type, key, value,
    headers; control records as (offset, 'control', version, type, value)."""
    out, pos, records = [], 0, MemoryRecords(bytes(log))
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        size = batch.size_in_bytes
        crc_ok = batch.validate_crc()  # before iterating: kafka-python then holds the decompressed bytes
        magic = batch.magic
        b = {
            "position": pos,
            "size": size,
            "magic": magic,
            "offset_field": struct.unpack_from(">q", log, pos)[0],
            "crc_ok": crc_ok,
            "compression": batch.compression_type,
            "timestamp_type": batch.timestamp_type,
            "transactional": magic >= 2 and batch.is_transactional,
            "control": magic >= 2 and batch.is_control_batch,
            "producer_id": batch.producer_id if magic >= 2 else -1,
            "producer_epoch": batch.producer_epoch if magic >= 2 else -1,
            "leader_epoch": batch.leader_epoch if magic >= 2 else None,
        }
        recs = []
        for r in batch:
            if b["control"]:
                recs.append((r.offset, "control", r.version, r.type, bytes(r.value)))
            else:
                recs.append((r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                             [(k, v) for k, v in r.headers] if magic >= 2 else []))
        offsets = [r[0] for r in recs]
        if magic >= 2:
            b["base_offset"] = batch.base_offset
            b["last_offset"] = batch.last_offset
            b["max_timestamp"] = batch.max_timestamp
        else:
            stamps = [r[1] for r in recs if r[1] is not None]
            b["base_offset"] = min(offsets)
            b["last_offset"] = max(offsets)
            b["max_timestamp"] = max(stamps) if stamps and magic > 0 else -1
        b["records"] = recs
        out.append(b)
        pos += size
    assert pos == len(log), "kafka-python stopped at %d of %d bytes" % (pos, len(log))
    return out


def bytes_json(b):
    """(text, is_base64) for a bytes field: None, the UTF-8 text, or standard base64 with padding."""
    if b is None:
        return None, False
    try:
        return bytes(b).decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(bytes(b)).decode("ascii"), True


# ---- indexes -------------------------------------------------------------------------------------------------------

def fixture_indexes(batches, base, interval=INDEX_INTERVAL):
    """The offset and time index of the single-segment fixtures of tools/legacy-segments.py, kept as they were
    written (their bytes are checked in): an entry at the first batch and then once `interval` bytes or more were
    appended, the time entry holding the largest timestamp of the batches before it. A broker's rule differs
    (see `Segment`): no entry at the first batch, more than `interval` bytes, the current batch's timestamp
    included, and a last time entry on roll."""
    offset_index, time_index = bytearray(), bytearray()
    since, max_ts, last_time_entry = interval, -1, None
    for b in batches:
        if since >= interval:
            offset_index += struct.pack(">II", b["last_offset"] - base, b["position"])
            since = 0
            if max_ts >= 0 and max_ts != last_time_entry:
                time_index += struct.pack(">qI", max_ts, b["last_offset"] - base)
                last_time_entry = max_ts
        since += b["size"]
        max_ts = max(max_ts, b["max_timestamp"])
    return bytes(offset_index), bytes(time_index)


class Segment:
    """One segment as Kafka's LogSegment builds it: `.log`, `.index`, `.timeindex`, `.txnindex`."""

    def __init__(self, base_offset, index_interval=INDEX_INTERVAL):
        self.base = base_offset
        self.interval = index_interval
        self.log = bytearray()
        self.index = bytearray()
        self.timeindex = bytearray()
        self.txnindex = bytearray()
        self.since = 0
        self.max_ts, self.offset_of_max_ts = -1, -1  # TimestampOffset.UNKNOWN
        self.last_time_entry_ts = -1  # an empty time index's last entry: (NO_TIMESTAMP, base offset)
        self.last_offset = None

    def append(self, batch, last_offset, max_ts):
        position = len(self.log)
        assert 0 <= last_offset - self.base <= 0x7FFFFFFF
        if max_ts > self.max_ts:
            self.max_ts, self.offset_of_max_ts = max_ts, last_offset
        if self.since > self.interval:
            self.index += struct.pack(">II", last_offset - self.base, position)
            self.maybe_time_entry()
            self.since = 0
        self.since += len(batch)
        self.log += batch
        self.last_offset = last_offset

    def maybe_time_entry(self):
        if self.max_ts > self.last_time_entry_ts:
            self.timeindex += struct.pack(">qI", self.max_ts, self.offset_of_max_ts - self.base)
            self.last_time_entry_ts = self.max_ts

    def aborted_txn(self, producer_id, first_offset, last_offset, last_stable_offset):
        """AbortedTxn: version 0, producer id, first offset, last offset (the marker's), last stable offset."""
        self.txnindex += struct.pack(">hqqqq", 0, producer_id, first_offset, last_offset, last_stable_offset)


def parse_txn_index(data):
    assert len(data) % 34 == 0, len(data)
    out = []
    for pos in range(0, len(data), 34):
        version, pid, first, last, lso = struct.unpack_from(">hqqqq", data, pos)
        assert version == 0
        out.append({"producer_id": pid, "first_offset": first, "last_offset": last, "last_stable_offset": lso})
    return out


# ---- producer state ------------------------------------------------------------------------------------------------

class ProducerEntry:
    """ProducerStateEntry with its last batch's metadata (what a snapshot keeps)."""

    def __init__(self, producer_id):
        self.producer_id = producer_id
        self.epoch = -1
        self.last_seq = -1
        self.last_offset = -1
        self.offset_delta = 0
        self.timestamp = -1
        self.coordinator_epoch = -1
        self.txn_first_offset = -1

    def maybe_update_epoch(self, epoch):
        assert epoch >= self.epoch, "producer %d fenced: epoch %d < %d" % (self.producer_id, epoch, self.epoch)
        if epoch != self.epoch:  # a new epoch drops the batch metadata
            self.epoch = epoch
            self.last_seq, self.last_offset, self.offset_delta = -1, -1, 0

    def snapshot_bytes(self):
        return struct.pack(">qhiqiqiq", self.producer_id, self.epoch, self.last_seq, self.last_offset,
                           self.offset_delta, self.timestamp, self.coordinator_epoch, self.txn_first_offset)


def producer_snapshot(entries):
    """A producer snapshot file (version 1, CRC-32C of what follows it, the producer entries). Kafka writes its
    HashMap's order; for producer ids below 2^16 in a map of 16 buckets, as here, that is by id mod 16."""
    body = struct.pack(">i", len(entries)) + b"".join(
        e.snapshot_bytes() for e in sorted(entries, key=lambda e: (e.producer_id & 15, e.producer_id)))
    return struct.pack(">hI", 1, calc_crc32c(body)) + body


# ---- partitions ----------------------------------------------------------------------------------------------------

def topic_id_for(name):
    """A deterministic Kafka topic id (a version-4 UUID, as Uuid.randomUuid makes, never starting with '-')."""
    for n in range(256):
        b = bytearray(hashlib.sha256(("record-fixtures topic id:%s:%d" % (name, n)).encode()).digest()[:16])
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        s = base64.urlsafe_b64encode(bytes(b)).decode().rstrip("=")
        if not s.startswith("-") and any(b):
            return s
    raise AssertionError("no topic id")


class Partition:
    """A partition directory being written as a leader broker appends to it, one batch per append."""

    def __init__(self, topic, partition, segment_bytes, index_interval=INDEX_INTERVAL):
        self.name = "%s-%d" % (topic, partition)
        self.topic_id = topic_id_for(topic)
        self.segment_bytes = segment_bytes
        self.index_interval = index_interval
        self.segments = [Segment(0, index_interval)]
        self.snapshots = {}  # base offset of the segment rolled to -> bytes
        self.next_offset = 0
        self.leader_epoch = 0
        self.epochs = []  # (epoch, start offset), as LeaderEpochFileCache assigns them from v2 batches
        self.producers = {}
        self.ongoing = {}  # first offset -> producer id (ProducerStateManager.ongoingTxns)
        self.aborted = []  # dicts of parse_txn_index shape, with the segment base that holds the marker

    @property
    def active(self):
        return self.segments[-1]

    def roll(self):
        """UnifiedLog.roll: the active segment gets its last time index entry and the producer state is
        snapshot at the new segment's base offset."""
        assert self.active.log, "rolling an empty segment"
        self.active.maybe_time_entry()
        self.snapshots[self.next_offset] = producer_snapshot(self.producers.values())
        self.segments.append(Segment(self.next_offset, self.index_interval))

    def append(self, batch):
        """Appends one batch, already placed at `next_offset`; rolls first when it would pass segment.bytes."""
        magic, first, last, max_ts = shallow_info(batch)
        assert first is None or first == self.next_offset, (first, self.next_offset)
        assert last >= self.next_offset
        if self.active.log and len(self.active.log) + len(batch) > self.segment_bytes:
            self.roll()
        self.active.append(batch, last, max_ts)
        if magic >= 2:
            if not self.epochs or self.epochs[-1][0] < self.leader_epoch:
                self.epochs.append((self.leader_epoch, first))
            self._update_producer(batch, first, last, max_ts)
        self.next_offset = last + 1
        return first if first is not None else None

    def append_v2(self, batch):
        """Places a producer's v2 batch at the log end under the current leader epoch and appends it; returns
        the placed bytes."""
        placed = place_v2(batch, self.next_offset, self.leader_epoch)
        self.append(placed)
        return placed

    def _update_producer(self, batch, first, last, max_ts):
        pid, epoch, base_seq = struct.unpack_from(">qhi", batch, V2_PRODUCER_ID)
        if pid < 0:
            return
        attrs = struct.unpack_from(">h", batch, V2_ATTRIBUTES)[0]
        e = self.producers.setdefault(pid, ProducerEntry(pid))
        if attrs & CONTROL_BIT:
            key = None  # the marker's type and coordinator epoch, from the control record
            for r in MemoryRecords(bytes(batch)).next_batch():
                key = (r.type, struct.unpack(">hi", bytes(r.value))[1])
            ctype, coordinator_epoch = key
            assert coordinator_epoch >= e.coordinator_epoch
            if e.txn_first_offset >= 0 and ctype == 0:
                others = [o for o, p in self.ongoing.items() if p != pid]
                lso = min(others) if others else last + 1
                self.active.aborted_txn(pid, e.txn_first_offset, last, lso)
                self.aborted.append({"producer_id": pid, "first_offset": e.txn_first_offset, "last_offset": last,
                                     "last_stable_offset": lso, "segment": self.active.base})
            if e.txn_first_offset >= 0:
                del self.ongoing[e.txn_first_offset]
            e.maybe_update_epoch(epoch)
            e.txn_first_offset = -1
            e.coordinator_epoch = coordinator_epoch
            e.timestamp = max_ts
            return
        if epoch == e.epoch:
            assert base_seq == e.last_seq + 1, "producer %d: sequence %d after %d" % (pid, base_seq, e.last_seq)
        else:
            assert base_seq == 0, "producer %d: new epoch %d starts at sequence %d" % (pid, epoch, base_seq)
        e.maybe_update_epoch(epoch)
        e.last_seq = base_seq + (last - first)
        e.last_offset = last
        e.offset_delta = last - first
        e.timestamp = max_ts
        if attrs & TRANSACTIONAL_BIT and e.txn_first_offset < 0:
            e.txn_first_offset = first
            self.ongoing[first] = pid

    def write(self, root):
        """Writes the directory under `root`: segments (`.txnindex` only where it has entries, as Kafka creates it
        on the first entry), producer snapshots, leader-epoch-checkpoint, partition.metadata. The active segment's
        indexes are trimmed to their entries, as on a clean close."""
        d = os.path.join(root, self.name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))

        def put(name, data):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)

        for s in self.segments:
            put("%020d.log" % s.base, s.log)
            put("%020d.index" % s.base, s.index)
            put("%020d.timeindex" % s.base, s.timeindex)
            if s.txnindex:
                put("%020d.txnindex" % s.base, s.txnindex)
        for offset, data in self.snapshots.items():
            put("%020d.snapshot" % offset, data)
        put("leader-epoch-checkpoint",
            ("0\n%d\n" % len(self.epochs) + "".join("%d %d\n" % e for e in self.epochs)).encode())
        put("partition.metadata", ("version: 0\ntopic_id: %s\n" % self.topic_id).encode())
        return d
