package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Tiered storage on a replicated cluster ({@link KafkaCluster}: a controller and three brokers, replication
 * factor 3, {@code min.insync.replicas} 2, acks=all producers): every scenario of {@link ClusterScenarios} on
 * the newest broker with the filesystem store (a directory standing in for a shared mount), and leader
 * failover and a follower rebuilt from remote on the oldest supported broker with S3 (moto). Brokers and the
 * store come from the system properties {@code rsm.brokers} and {@code rsm.s3.*} (tools/java-tests.sh).
 */
class KafkaClusterIT {
    static final Path OUT = Paths.get(System.getProperty("rsm.e2e.out", "target/e2e"));

    /** The {@code version=classpath-file} pairs of {@code rsm.brokers}, newest first. */
    static List<String[]> brokers() {
        String spec = System.getProperty("rsm.brokers", "").trim();
        assertTrue(!spec.isEmpty(), "no broker class path given (rsm.brokers)");
        return java.util.Arrays.stream(spec.split(",")).map(p -> p.trim().split("=", 2)).toList();
    }

    @Test
    void everyScenarioOnTheNewestBrokerAndTheFilesystemStore() throws Exception {
        String[] newest = brokers().get(0);
        Path work = OUT.resolve("cluster-" + newest[0]);
        run(newest[0], newest[1], work, TestStore.filesystem(work.resolve("tiered-store")), true);
    }

    @Test
    void failoverAndRebuildOnTheOldestBrokerAndS3() throws Exception {
        List<String[]> all = brokers();
        String[] oldest = all.get(all.size() - 1);
        TestStore s3 = TestStore.s3FromSystemProperties();
        assertTrue(s3 != null, "no S3 server given (system property rsm.s3.endpoint; tools/java-tests.sh starts moto)");
        run(oldest[0], oldest[1], OUT.resolve("cluster-" + oldest[0] + "-s3"), s3, false);
    }

    private void run(String version, String classpathFile, Path work, TestStore store, boolean everything)
            throws Exception {
        EndToEndSupport.deleteRecursively(work);
        Path jar = Paths.get(System.getProperty("rsm.plugin.jar"));
        Path cli = Paths.get(System.getProperty("rsm.cli", "../target/debug/rsm"));
        assertTrue(Files.isExecutable(cli), "the rsm binary " + cli.toAbsolutePath() + " (system property rsm.cli)");
        String classpath = Files.readString(Paths.get(classpathFile)).trim();
        long t = System.nanoTime();
        try (KafkaCluster cluster = new KafkaCluster(version, classpath, work, jar, store)) {
            cluster.start();
            EndToEndSupport.log("cluster of Kafka " + version + " on the " + store + " store started in "
                    + EndToEndSupport.ms(t) + " ms: " + cluster.bootstrap());
            try (ClusterScenarios s = new ClusterScenarios(cluster, work, cli)) {
                try {
                    scenarios(s, version, everything);
                } finally {
                    StringBuilder sb = new StringBuilder("cluster: Kafka " + version + ", 3 brokers and a controller, "
                            + "store " + store + ", " + EndToEndSupport.ms(t) / 1000 + " s\n");
                    s.summary.forEach((k, v) -> sb.append(k).append(": ").append(v).append('\n'));
                    Files.writeString(work.resolve("summary.txt"), sb.toString());
                    System.out.println("--- summary\n" + sb);
                }
            }
        }
    }

    /**
     * Whether to run the scenario {@code name}: all of them, unless the system property
     * {@code rsm.cluster.scenarios} names some (comma separated), to rerun one by hand.
     */
    static boolean wanted(String name) {
        String only = System.getProperty("rsm.cluster.scenarios", "").trim();
        return only.isEmpty() || List.of(only.split(",")).contains(name);
    }

    private void scenarios(ClusterScenarios s, String version, boolean everything) throws Exception {
        if (wanted("failover")) {
            ClusterLedger failover = s.leaderFailoverDuringCopies("failover");
            TopicPartition tp = new TopicPartition("failover", 0);
            if (!everything) {
                s.rebuildFollowerFromRemote(tp, failover, follower(s, tp), false);
                return;
            }
        }
        if (wanted("rebuild")) {
            // A topic keeping 4 MiB locally, so the leader's local log starts well past the last tiered offset's
            // segments: without KIP-1023 the follower copies those from the leader, with it from the tiered end.
            TopicPartition rebuilt = new TopicPartition("rebuilt", 0);
            ClusterLedger ledger = s.filledTopic(rebuilt.topic(), 4 << 20);
            s.rebuildFollowerFromRemote(rebuilt, ledger, follower(s, rebuilt), false);
            if (TestSegments.versionAtLeast(version, 4, 3)) {
                s.rebuildFollowerFromRemote(rebuilt, ledger, follower(s, rebuilt), true);
            }
        }
        if (wanted("rolling")) {
            s.rollingRestartUnderLoad("rolling");
        }
        if (wanted("moved")) {
            s.reassignAndMoveLogDir("moved");
        }
        if (wanted("tiering-off")) {
            s.tieringDisabledAndReenabled("tiering-off");
        }
        if (wanted("deleted")) {
            s.deleteRecordsAndTopic("deleted");
        }
    }

    /** A follower of {@code tp} (the replica after the leader in the replica list). */
    static int follower(ClusterScenarios s, TopicPartition tp) {
        int leader = s.leader(tp);
        return s.replicas(tp).stream().filter(id -> id != leader).findFirst().orElseThrow();
    }
}
