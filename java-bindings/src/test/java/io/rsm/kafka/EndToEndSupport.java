package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;

/**
 * What the broker tests share ({@link BrokerEndToEndIT}, {@link BrokerStoreFaultsIT}, {@link ReadCommittedIT},
 * {@link MetadataInteropIT}, {@link KafkaClusterIT} over {@link ClusterScenarios}): a topic's id and a
 * partition's offsets through the admin client, the base offsets of segment files in a local directory or in
 * the store, counting log lines, percentiles, waiting for a condition, timing, sleeping, logging, and deleting
 * a work directory.
 */
final class EndToEndSupport {
    private EndToEndSupport() {}

    static Uuid topicId(Admin admin, String topic) throws InterruptedException {
        Uuid[] id = new Uuid[1];
        waitFor("topic " + topic + " visible", 60, () -> {
            try {
                id[0] = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic)
                        .topicId();
                return true;
            } catch (Exception e) {
                return false;
            }
        });
        return id[0];
    }

    static long offset(Admin admin, TopicPartition tp, OffsetSpec spec) {
        try {
            return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get(30, TimeUnit.SECONDS).offset();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The base offsets of the files in the local directory {@code dir} whose names end with {@code suffix}. */
    static List<Long> baseOffsets(Path dir, String suffix) {
        return baseOffsets(TestStore.filesystem(dir), "", suffix);
    }

    /** The base offsets of the remote objects under {@code prefix} whose keys end with {@code suffix}. */
    static List<Long> baseOffsets(TestStore store, String prefix, String suffix) {
        List<Long> out = new ArrayList<>();
        for (String key : store.keysUnder(prefix)) {
            String name = key.substring(key.lastIndexOf('/') + 1);
            if (name.endsWith(suffix)) {
                out.add(Long.parseLong(name.substring(0, 20)));
            }
        }
        Collections.sort(out);
        return out;
    }

    static long count(String text, String needle) {
        return text.lines().filter(l -> l.contains(needle)).count();
    }

    static long percentile(List<Long> sorted, int p) {
        if (sorted.isEmpty()) {
            return -1;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }

    static void waitFor(String what, int seconds, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        RuntimeException last = null;
        while (true) {
            try {
                if (condition.getAsBoolean()) {
                    return;
                }
            } catch (RuntimeException e) {
                last = e;
            }
            if (System.nanoTime() > deadline) {
                fail("timed out after " + seconds + " s waiting for: " + what, last);
            }
            Thread.sleep(100);
        }
    }

    static long ms(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void log(String line) {
        System.out.println("[e2e] " + line);
    }

    static void deleteRecursively(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            List<Path> all = files.sorted(Collections.reverseOrder()).collect(Collectors.toList());
            for (Path f : all) {
                Files.deleteIfExists(f);
            }
        }
    }
}
