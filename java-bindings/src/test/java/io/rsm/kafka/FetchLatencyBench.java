package io.rsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * Broker-visible latency of a remote fetch of 1 MiB: our plugin against Kafka's own {@code LocalTieredStorage}
 * (from the kafka-storage test jar), both in this one JVM, on the same segments.
 *
 * <p>One fetch is what the broker's read path does (Kafka 3.9 to 4.x, {@code RemoteLogManager.read}):
 * {@code fetchLogSegment(metadata, position)} at a batch boundary; the first batch read as
 * {@code RemoteLogInputStream.nextBatch} reads it (its 17-byte header, then the rest of the batch); a buffer of
 * 1 MiB holding that batch, filled from the stream with Kafka's {@code Utils.readFully}; close. A second
 * measure reads batch after batch until 1 MiB is in hand (a header, then the rest of the batch, each time), as
 * a reader iterating {@code RemoteLogInputStream} over a whole fetch would. All three managers run
 * interleaved, after a warm-up of {@link #WARMUP} fetches each, on the same random positions. Then the same
 * managers read a 64 MiB segment whole (sequential read, MiB/s) and copy every segment under a fresh id (a copy
 * as each does it by default: ours syncs each object and directory, LocalTieredStorage does not, so it is also
 * measured with its store synced after the copy), interleaved, fifteen and five rounds. Run by
 * {@link BrokerEndToEndIT} in a JVM whose class path has the kafka-storage test jar; prints
 * {@code RESULT <name> <median us> <p90 us> <n>} (the broker's fetch),
 * {@code RESULT-BATCHES <name> <median us> <p90 us> <n>} (batch after batch),
 * {@code RESULT-SEQ <name> <median MiB/s> MiB/s} and {@code RESULT-COPY <name> <median ms> ms for <MiB> MiB}
 * lines, after a {@code MACHINE} line naming the processor, the kernel and the cores (ratios differ between
 * processors of one kind).
 */
public final class FetchLatencyBench {
    static final int FETCH_BYTES = 1 << 20;
    /**
     * Untimed fetches before each measure: a thousand, so that {@code LocalTieredStorage}'s read path (Java,
     * compiled as it runs) is compiled too; after a hundred, its fetches were still about 25% slower than in a
     * second measure run after the first (ours, mostly native, about 5%). {@code -Dwarmup=N} changes it.
     */
    static final int WARMUP = Integer.getInteger("warmup", 1000);

    private FetchLatencyBench() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        int iterations = Integer.parseInt(args[1]);
        System.out.println(machine());
        TopicIdPartition tp = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("bench", 0));
        List<TestSegments.Segment> segments = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            // About 8 MiB each, in batches of about 16 KiB.
            segments.add(TestSegments.write(dir.resolve("segments"), i * 20_000L, 512, 16, 1000, false, 100 + i));
        }

        RustRemoteStorageManager ours = new RustRemoteStorageManager();
        Map<String, Object> oursConfig = new HashMap<>();
        oursConfig.put("store.url", TestStore.fileUrl(dir.resolve("rsm-store")));
        oursConfig.put("broker.id", 1);
        ours.configure(oursConfig);

        // The same plugin with smaller chunks and less read-ahead: the broker closes after 1 MiB.
        RustRemoteStorageManager small = new RustRemoteStorageManager();
        Map<String, Object> smallConfig = new HashMap<>(oursConfig);
        smallConfig.put("store.url", TestStore.fileUrl(dir.resolve("rsm-store-small-chunks")));
        smallConfig.put("chunk.size", String.valueOf(1 << 20));
        smallConfig.put("fetch.concurrency", "2");
        small.configure(smallConfig);

        RemoteStorageManager kafka = (RemoteStorageManager) Class
                .forName("org.apache.kafka.server.log.remote.storage.LocalTieredStorage")
                .getConstructor().newInstance();
        Map<String, Object> kafkaConfig = new HashMap<>();
        kafkaConfig.put("dir", dir.resolve("local-tiered-storage").toString());
        kafkaConfig.put("delete.on.close", "true");
        kafkaConfig.put("broker.id", 1);
        Files.createDirectories(dir.resolve("local-tiered-storage"));
        kafka.configure(kafkaConfig);

        List<RemoteLogSegmentMetadata> mds = new ArrayList<>();
        for (TestSegments.Segment s : segments) {
            RemoteLogSegmentMetadata md = s.metadata(tp);
            ours.copyLogSegmentData(md, s.data());
            small.copyLogSegmentData(md, s.data());
            kafka.copyLogSegmentData(md, s.data());
            mds.add(md);
        }

        String[] names = {"rsm-plugin", "LocalTieredStorage", "rsm-plugin-1MiB-chunks"};
        RemoteStorageManager[] all = {ours, kafka, small};
        for (boolean broker : new boolean[] {false, true}) {
            Random random = new Random(1);
            List<List<Long>> micros = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
            for (int i = -WARMUP; i < iterations; i++) {
                int k = random.nextInt(segments.size());
                TestSegments.Segment s = segments.get(k);
                int pos = s.randomBatchPosition(random, FETCH_BYTES);
                // Rotate who goes first, so page-cache and JIT effects fall on each in turn.
                for (int j = 0; j < 3; j++) {
                    int w = Math.floorMod(i + j, 3);
                    long us = broker ? fetch(all[w], mds.get(k), pos) : fetchBatches(all[w], mds.get(k), pos);
                    if (i >= 0) {
                        micros.get(w).add(us);
                    }
                }
            }
            for (int w = 0; w < 3; w++) {
                print(broker ? "RESULT" : "RESULT-BATCHES", names[w], micros.get(w));
            }
        }

        // Sequential reads: a 64 MiB segment whole, in 64 KiB reads, fifteen rounds (one read takes about
        // 10 ms: five gave a noisy median), rotating who goes first.
        List<List<Double>> seq = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        List<List<Double>> copies = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        long total = 0;
        for (TestSegments.Segment s : segments) {
            total += s.size();
        }
        TestSegments.Segment big = TestSegments.write(dir.resolve("segments"), 100_000L, 4096, 16, 1000, false, 200);
        RemoteLogSegmentMetadata bigMd = big.metadata(tp);
        for (RemoteStorageManager m : all) {
            m.copyLogSegmentData(bigMd, big.data());
        }
        byte[] buf = new byte[64 * 1024];
        for (int round = 0; round < 15; round++) {
            for (int j = 0; j < 3; j++) {
                int w = Math.floorMod(round + j, 3);
                long t = System.nanoTime();
                long read = 0;
                try (InputStream in = all[w].fetchLogSegment(bigMd, 0)) {
                    for (int n; (n = in.read(buf)) >= 0; ) {
                        read += n;
                    }
                }
                if (read != big.size()) {
                    throw new IllegalStateException(names[w] + ": read " + read + " of " + big.size() + " bytes");
                }
                seq.get(w).add(read / 1048576.0 / ((System.nanoTime() - t) / 1e9));
            }
        }
        for (RemoteStorageManager m : all) {
            m.deleteLogSegmentData(bigMd);
        }
        // Copies: every segment under a fresh segment id, five rounds, rotating; each removed afterwards.
        // LocalTieredStorage does not sync what it writes; its copy made durable (every file and directory
        // of its store synced after the copy) is measured too, as a fourth.
        List<Double> kafkaDurable = new ArrayList<>();
        Path kafkaDir = dir.resolve("local-tiered-storage");
        for (int round = 0; round < 5; round++) {
            for (int j = 0; j < 4; j++) {
                int w = Math.floorMod(round + j, 4);
                RemoteStorageManager m = all[w == 3 ? 1 : w];
                List<RemoteLogSegmentMetadata> fresh = new ArrayList<>();
                long t = System.nanoTime();
                for (TestSegments.Segment s : segments) {
                    RemoteLogSegmentMetadata md = s.metadata(tp);
                    m.copyLogSegmentData(md, s.data());
                    fresh.add(md);
                }
                if (w == 3) {
                    syncTree(kafkaDir);
                }
                (w == 3 ? kafkaDurable : copies.get(w)).add((System.nanoTime() - t) / 1e6);
                for (RemoteLogSegmentMetadata md : fresh) {
                    m.deleteLogSegmentData(md);
                }
            }
        }
        for (int w = 0; w < 3; w++) {
            System.out.println("RESULT-SEQ " + names[w] + " " + Math.round(median(seq.get(w))) + " MiB/s");
            System.out.println("RESULT-COPY " + names[w] + " " + Math.round(median(copies.get(w))) + " ms for "
                    + total / 1048576 + " MiB");
        }
        System.out.println("RESULT-COPY LocalTieredStorage+sync " + Math.round(median(kafkaDurable)) + " ms for "
                + total / 1048576 + " MiB");
        ours.close();
        small.close();
        kafka.close();
        if (NativeBridge.liveHandles(1) != 0) {
            throw new IllegalStateException("native streams left open: " + NativeBridge.liveHandles(1));
        }
    }

    /**
     * The broker's remote read of 1 MiB ({@code RemoteLogManager.read}): the first batch as
     * {@code RemoteLogInputStream.nextBatch} reads it, then a 1 MiB buffer holding it filled from the stream by
     * Kafka's {@code Utils.readFully}; returns microseconds. The buffer must end up full (the fetch starts at
     * least 1 MiB before the segment's end) and start with the first batch.
     */
    static long fetch(RemoteStorageManager rsm, RemoteLogSegmentMetadata md, int pos) throws Exception {
        long t = System.nanoTime();
        ByteBuffer buffer;
        try (InputStream in = rsm.fetchLogSegment(md, pos)) {
            ByteBuffer header = ByteBuffer.allocate(17);
            Utils.readFully(in, header);
            int batchSize = header.getInt(8) + 12;
            ByteBuffer batch = ByteBuffer.allocate(batchSize);
            batch.put(header.array());
            Utils.readFully(in, batch);
            buffer = ByteBuffer.allocate(Math.max(FETCH_BYTES, batchSize));
            batch.flip();
            buffer.put(batch);
            Utils.readFully(in, buffer);
        }
        long us = (System.nanoTime() - t) / 1000;
        if (buffer.hasRemaining() || buffer.getInt(8) + 12 > buffer.position()) {
            throw new IllegalStateException("a fetch at " + pos + " filled " + buffer.position() + " bytes");
        }
        return us;
    }

    /** 1 MiB read batch after batch (a 17-byte header, then the rest of the batch); returns microseconds. */
    static long fetchBatches(RemoteStorageManager rsm, RemoteLogSegmentMetadata md, int pos) throws Exception {
        long t = System.nanoTime();
        int got = 0;
        ByteBuffer header = ByteBuffer.allocate(17);
        try (InputStream in = rsm.fetchLogSegment(md, pos)) {
            while (got < FETCH_BYTES) {
                readFully(in, header.array(), 17);
                int batchLength = header.getInt(8);
                byte[] batch = new byte[12 + batchLength];
                System.arraycopy(header.array(), 0, batch, 0, 17);
                readFully(in, batch, batch.length - 17, 17);
                got += batch.length;
            }
        }
        return (System.nanoTime() - t) / 1000;
    }

    private static void readFully(InputStream in, byte[] b, int len) throws IOException {
        readFully(in, b, len, 0);
    }

    private static void readFully(InputStream in, byte[] b, int len, int off) throws IOException {
        TestSegments.readFully(in, b, len, off);
    }

    private static void print(String what, String name, List<Long> micros) {
        Collections.sort(micros);
        System.out.println(what + " " + name + " " + percentile(micros, 50) + " " + percentile(micros, 90) + " "
                + micros.size());
    }

    /** Syncs every file and directory under {@code root}. */
    static void syncTree(Path root) throws IOException {
        List<Path> paths;
        try (java.util.stream.Stream<Path> walk = Files.walk(root)) {
            paths = walk.collect(java.util.stream.Collectors.toList());
        }
        for (Path p : paths) {
            try (java.nio.channels.FileChannel c = java.nio.channels.FileChannel.open(p,
                    java.nio.file.StandardOpenOption.READ)) {
                c.force(true);
            }
        }
    }

    static double median(List<Double> v) {
        List<Double> sorted = new ArrayList<>(v);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    static long percentile(List<Long> sorted, int p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }

    /** {@code MACHINE <processor model> | kernel <version> | <n> cores}, from /proc/cpuinfo where it is. */
    static String machine() {
        String model = "unknown processor";
        try (java.util.stream.Stream<String> lines = Files.lines(Paths.get("/proc/cpuinfo"))) {
            model = lines.filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).trim())
                    .findFirst().orElse(model);
        } catch (java.io.IOException | RuntimeException e) {
            // Not Linux: the model stays unknown.
        }
        return "MACHINE " + model + " | kernel " + System.getProperty("os.name") + " "
                + System.getProperty("os.version") + " | " + Runtime.getRuntime().availableProcessors() + " cores";
    }
}
