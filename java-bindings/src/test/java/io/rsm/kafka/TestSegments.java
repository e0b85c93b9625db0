package io.rsm.kafka;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.zip.CRC32C;
import java.util.zip.GZIPOutputStream;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

/**
 * Writes real Kafka segment files for the tests, with a writer of its own (independent of the Rust one and of
 * Kafka's internal record classes, which moved package in 4.4): record batches v2 with CRC-32C, keys, values
 * and headers, every fifth batch gzip-compressed; an offset index and a time index with an entry per batch; a
 * producer snapshot, an optional transaction index and a leader-epoch checkpoint.
 */
final class TestSegments {
    private TestSegments() {}

    /** One segment on disk. */
    static final class Segment {
        final long baseOffset;
        final long lastOffset;
        final long maxTimestamp;
        final Path log;
        final Path offsetIndex;
        final Path timeIndex;
        final Path snapshot;
        final Optional<Path> txnIndex;
        final byte[] leaderEpochs;
        final List<Integer> batchPositions;

        Segment(long baseOffset, long lastOffset, long maxTimestamp, Path log, Path offsetIndex, Path timeIndex,
                Path snapshot, Optional<Path> txnIndex, byte[] leaderEpochs, List<Integer> batchPositions) {
            this.baseOffset = baseOffset;
            this.lastOffset = lastOffset;
            this.maxTimestamp = maxTimestamp;
            this.log = log;
            this.offsetIndex = offsetIndex;
            this.timeIndex = timeIndex;
            this.snapshot = snapshot;
            this.txnIndex = txnIndex;
            this.leaderEpochs = leaderEpochs;
            this.batchPositions = batchPositions;
        }

        int size() throws IOException {
            return (int) Files.size(log);
        }

        /** A batch boundary at random at least {@code tail} bytes before the end, as a broker's fetch position is. */
        int randomBatchPosition(Random random, int tail) throws IOException {
            int limit = size() - tail;
            int pos;
            do {
                pos = batchPositions.get(random.nextInt(batchPositions.size()));
            } while (pos > limit);
            return pos;
        }

        RemoteLogSegmentMetadata metadata(TopicIdPartition tp) throws IOException {
            return metadata(tp, Uuid.randomUuid());
        }

        RemoteLogSegmentMetadata metadata(TopicIdPartition tp, Uuid id) throws IOException {
            Map<Integer, Long> epochs = new TreeMap<>();
            epochs.put(0, baseOffset);
            return new RemoteLogSegmentMetadata(new RemoteLogSegmentId(tp, id), baseOffset, lastOffset,
                    maxTimestamp, 1, System.currentTimeMillis(), size(), epochs);
        }

        LogSegmentData data() {
            return new LogSegmentData(log, offsetIndex, timeIndex, txnIndex, snapshot, ByteBuffer.wrap(leaderEpochs));
        }
    }

    /** Reads exactly {@code len} bytes of {@code in} into {@code b} at {@code off}, as a broker reads a fetched segment. */
    static void readFully(java.io.InputStream in, byte[] b, int len, int off) throws IOException {
        int n = 0;
        while (n < len) {
            int r = in.read(b, off + n, len - n);
            if (r < 0) {
                throw new IOException("end of segment after " + n + " of " + len + " bytes");
            }
            n += r;
        }
    }

    /** Whether the Kafka API the tests run on (system property {@code kafka.api.version}) is at least major.minor. */
    static boolean kafkaApiAtLeast(int major, int minor) {
        return versionAtLeast(System.getProperty("kafka.api.version", ""), major, minor);
    }

    /** Whether the Kafka {@code version} (major.minor.patch) is at least major.minor. */
    static boolean versionAtLeast(String version, int major, int minor) {
        String[] v = version.split("\\.");
        if (v.length < 2) {
            throw new IllegalStateException("not a Kafka version: '" + version + "'");
        }
        int ma = Integer.parseInt(v[0]);
        int mi = Integer.parseInt(v[1]);
        return ma > major || (ma == major && mi >= minor);
    }

    static Segment write(Path dir, long baseOffset, int batches, int recordsPerBatch, int valueBytes,
                         boolean withTxnIndex, long seed) throws IOException {
        return write(dir, baseOffset, batches, recordsPerBatch, withTxnIndex, seed, (random, offset) -> {
            byte[] value = new byte[valueBytes];
            random.nextBytes(value);
            return value;
        }, b -> b % 5 == 2);
    }

    /**
     * A segment of JSON-like records (an event log: ids, timestamps, names from small vocabularies, a random
     * session id; about 400 bytes each, which zstd shrinks about threefold), every batch uncompressed or every
     * batch gzip-compressed (what a producer with {@code compression.type=gzip} writes).
     */
    static Segment writeJson(Path dir, long baseOffset, int batches, int recordsPerBatch, boolean gzip, long seed)
            throws IOException {
        return write(dir, baseOffset, batches, recordsPerBatch, false, seed, TestSegments::jsonValue, b -> gzip);
    }

    private static final String[] EVENTS = {"page_view", "add_to_cart", "checkout", "login", "logout", "search",
        "click", "purchase"};
    private static final String[] COUNTRIES = {"FI", "DE", "FR", "US", "GB", "SE", "JP", "BR", "IN", "ES"};
    private static final String[] PLANS = {"free", "basic", "pro", "enterprise"};
    private static final String[] PAGES = {"products", "cart", "search", "account", "help", "blog", "home"};
    private static final String[] AGENTS = {
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"};

    private static byte[] jsonValue(Random r, long offset) {
        String json = "{\"event_id\":" + offset + ",\"ts\":" + (1_700_000_000_000L + offset * 7 + r.nextInt(7))
                + ",\"type\":\"" + EVENTS[r.nextInt(EVENTS.length)] + "\",\"user\":{\"id\":\"user-"
                + (10000 + r.nextInt(90000)) + "\",\"country\":\"" + COUNTRIES[r.nextInt(COUNTRIES.length)]
                + "\",\"plan\":\"" + PLANS[r.nextInt(PLANS.length)] + "\"},\"session\":\""
                + Long.toHexString(r.nextLong()) + "\",\"page\":\"/" + PAGES[r.nextInt(PAGES.length)] + "/"
                + r.nextInt(5000) + "\",\"referrer\":\"https://www.example.com/" + PAGES[r.nextInt(PAGES.length)]
                + "\",\"ua\":\"" + AGENTS[r.nextInt(AGENTS.length)] + "\",\"amount\":" + r.nextInt(500) + "."
                + (10 + r.nextInt(90)) + ",\"items\":" + r.nextInt(10) + ",\"tags\":[\"" + PLANS[r.nextInt(PLANS.length)]
                + "\",\"" + EVENTS[r.nextInt(EVENTS.length)] + "\"],\"ok\":" + r.nextBoolean() + "}";
        return json.getBytes(StandardCharsets.UTF_8);
    }

    private static Segment write(Path dir, long baseOffset, int batches, int recordsPerBatch, boolean withTxnIndex,
                                 long seed, java.util.function.BiFunction<Random, Long, byte[]> values,
                                 java.util.function.IntPredicate gzipBatch) throws IOException {
        Files.createDirectories(dir);
        Random random = new Random(seed);
        String name = String.format("%020d", baseOffset);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        ByteBuffer offsetIndex = ByteBuffer.allocate(batches * 8);
        ByteBuffer timeIndex = ByteBuffer.allocate(batches * 12);
        List<Integer> positions = new ArrayList<>();
        long offset = baseOffset;
        long timestamp = 1_700_000_000_000L + seed * 1000;
        long maxTimestamp = -1;
        for (int b = 0; b < batches; b++) {
            positions.add(log.size());
            boolean gzip = gzipBatch.test(b);
            long batchBase = offset;
            long firstTs = timestamp;
            ByteArrayOutputStream records = new ByteArrayOutputStream();
            for (int r = 0; r < recordsPerBatch; r++) {
                byte[] key = ("key-" + offset).getBytes(StandardCharsets.UTF_8);
                byte[] value = values.apply(random, offset);
                writeRecord(records, timestamp - firstTs, (int) (offset - batchBase), key, value,
                        new String[] {"h" + r % 3}, new byte[][] {("v" + offset).getBytes(StandardCharsets.UTF_8)});
                offset++;
                timestamp += 1 + random.nextInt(3);
            }
            long batchMaxTs = timestamp - 1;
            byte[] body = records.toByteArray();
            if (gzip) {
                ByteArrayOutputStream z = new ByteArrayOutputStream();
                try (GZIPOutputStream out = new GZIPOutputStream(z)) {
                    out.write(body);
                }
                body = z.toByteArray();
            }
            byte[] batch = batch(batchBase, (int) (offset - 1 - batchBase), firstTs, batchMaxTs, recordsPerBatch,
                    gzip ? 1 : 0, body);
            log.write(batch);
            offsetIndex.putInt((int) (offset - 1 - baseOffset)).putInt(positions.get(b));
            if (batchMaxTs > maxTimestamp) {
                timeIndex.putLong(batchMaxTs).putInt((int) (offset - 1 - baseOffset));
                maxTimestamp = batchMaxTs;
            }
        }
        Path logPath = dir.resolve(name + ".log");
        Files.write(logPath, log.toByteArray());
        Path idx = dir.resolve(name + ".index");
        Files.write(idx, slice(offsetIndex));
        Path tidx = dir.resolve(name + ".timeindex");
        Files.write(tidx, slice(timeIndex));
        Path snap = dir.resolve(name + ".snapshot");
        byte[] snapshot = new byte[96];
        random.nextBytes(snapshot);
        Files.write(snap, snapshot);
        Optional<Path> txn = Optional.empty();
        if (withTxnIndex) {
            byte[] t = new byte[34 * 3];
            random.nextBytes(t);
            Path p = dir.resolve(name + ".txnindex");
            Files.write(p, t);
            txn = Optional.of(p);
        }
        byte[] epochs = ("0\n1\n0 " + baseOffset + "\n").getBytes(StandardCharsets.UTF_8);
        return new Segment(baseOffset, offset - 1, maxTimestamp, logPath, idx, tidx, snap, txn, epochs, positions);
    }

    private static byte[] slice(ByteBuffer b) {
        byte[] out = new byte[b.position()];
        System.arraycopy(b.array(), 0, out, 0, out.length);
        return out;
    }

    /** A v2 record batch: 61-byte header, CRC-32C over attributes to the end. */
    static byte[] batch(long baseOffset, int lastOffsetDelta, long firstTs, long maxTs, int count, int attributes,
                        byte[] records) {
        int size = 61 + records.length;
        ByteBuffer b = ByteBuffer.allocate(size);
        b.putLong(baseOffset);
        b.putInt(size - 12);
        b.putInt(0); // partition leader epoch
        b.put((byte) 2);
        int crcAt = b.position();
        b.putInt(0);
        b.putShort((short) attributes);
        b.putInt(lastOffsetDelta);
        b.putLong(firstTs);
        b.putLong(maxTs);
        b.putLong(-1L); // producer id
        b.putShort((short) -1);
        b.putInt(-1);
        b.putInt(count);
        b.put(records);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), crcAt + 4, size - crcAt - 4);
        b.putInt(crcAt, (int) crc.getValue());
        return b.array();
    }

    private static void writeRecord(ByteArrayOutputStream out, long tsDelta, int offsetDelta, byte[] key,
                                    byte[] value, String[] headerKeys, byte[][] headerValues) {
        ByteArrayOutputStream r = new ByteArrayOutputStream();
        r.write(0); // attributes
        varlong(r, tsDelta);
        varlong(r, offsetDelta);
        varlong(r, key.length);
        r.writeBytes(key);
        varlong(r, value.length);
        r.writeBytes(value);
        varlong(r, headerKeys.length);
        for (int i = 0; i < headerKeys.length; i++) {
            byte[] k = headerKeys[i].getBytes(StandardCharsets.UTF_8);
            varlong(r, k.length);
            r.writeBytes(k);
            varlong(r, headerValues[i].length);
            r.writeBytes(headerValues[i]);
        }
        varlong(out, r.size());
        out.writeBytes(r.toByteArray());
    }

    /** Zig-zag varint, as Kafka's ByteUtils.writeVarlong. */
    private static void varlong(ByteArrayOutputStream out, long v) {
        long z = (v << 1) ^ (v >> 63);
        while ((z & ~0x7fL) != 0) {
            out.write((int) ((z & 0x7f) | 0x80));
            z >>>= 7;
        }
        out.write((int) z);
    }
}
