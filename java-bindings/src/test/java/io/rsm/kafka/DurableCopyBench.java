package io.rsm.kafka;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * The durable copy of one large segment (1 GiB by default, Kafka's default {@code segment.bytes}) in one JVM:
 * our plugin on the filesystem store (which syncs every object and its directory before it is visible)
 * against Kafka's own {@code LocalTieredStorage} followed by a sync of every file and directory of its store.
 * Run by hand (it is not part of the test command): {@code java -Xmx4g -cp <test classes, plugin jar,
 * kafka-storage test jar and their dependencies> io.rsm.kafka.DurableCopyBench DIR [MiB] [rounds]}. Before
 * each timed copy the whole system is synced (untimed), so no copy pays for another's writeback; who goes
 * first alternates each round. Prints each copy's time and {@code RESULT-DURABLE <name> <median ms> (fastest
 * <ms>)} lines.
 */
public final class DurableCopyBench {
    private DurableCopyBench() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]).toAbsolutePath();
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 1024;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        TopicIdPartition tp = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("bench", 0));
        // Batches of 16 records of 1000 random bytes: about 16.4 KiB each.
        TestSegments.Segment segment = TestSegments.write(dir.resolve("segments"), 0L, mib * 62, 16, 1000, false, 7);
        System.out.println("segment of " + segment.size() / 1048576 + " MiB");

        RustRemoteStorageManager ours = new RustRemoteStorageManager();
        Map<String, Object> oursConfig = new HashMap<>();
        oursConfig.put("store.url", TestStore.fileUrl(dir.resolve("rsm-store")));
        oursConfig.put("broker.id", 1);
        ours.configure(oursConfig);
        RemoteStorageManager kafka = (RemoteStorageManager) Class
                .forName("org.apache.kafka.server.log.remote.storage.LocalTieredStorage")
                .getConstructor().newInstance();
        Path kafkaDir = dir.resolve("local-tiered-storage");
        Files.createDirectories(kafkaDir);
        Map<String, Object> kafkaConfig = new HashMap<>();
        kafkaConfig.put("dir", kafkaDir.toString());
        kafkaConfig.put("delete.on.close", "true");
        kafkaConfig.put("broker.id", 1);
        kafka.configure(kafkaConfig);

        List<Double> oursMs = new ArrayList<>();
        List<Double> kafkaMs = new ArrayList<>();
        // One untimed copy each first (class loading, the JIT, the segment into the page cache).
        for (int round = -1; round < rounds; round++) {
            for (int j = 0; j < 2; j++) {
                boolean isOurs = Math.floorMod(round + j, 2) == 0;
                RemoteStorageManager m = isOurs ? ours : kafka;
                RemoteLogSegmentMetadata md = segment.metadata(tp);
                new ProcessBuilder("sync").inheritIO().start().waitFor();
                long t = System.nanoTime();
                m.copyLogSegmentData(md, segment.data());
                if (!isOurs) {
                    FetchLatencyBench.syncTree(kafkaDir);
                }
                double ms = (System.nanoTime() - t) / 1e6;
                System.out.printf("round %d %s %.0f ms%n", round, isOurs ? "rsm-plugin" : "LocalTieredStorage+sync", ms);
                if (round >= 0) {
                    (isOurs ? oursMs : kafkaMs).add(ms);
                }
                m.deleteLogSegmentData(md);
            }
        }
        // The disk of a shared machine has slow spells (a copy takes 1.5x its usual time now and then, either
        // side): the fastest round is printed beside the median.
        double o = FetchLatencyBench.median(oursMs);
        double k = FetchLatencyBench.median(kafkaMs);
        double oMin = java.util.Collections.min(oursMs);
        double kMin = java.util.Collections.min(kafkaMs);
        System.out.printf("RESULT-DURABLE rsm-plugin %.0f ms (fastest %.0f)%n", o, oMin);
        System.out.printf("RESULT-DURABLE LocalTieredStorage+sync %.0f ms (fastest %.0f)%n", k, kMin);
        System.out.printf("ratio (time, ours / theirs): median %.2fx, fastest %.2fx%n", o / k, oMin / kMin);
        ours.close();
        kafka.close();
    }
}
