package io.rsm.kafka;

import static io.rsm.kafka.EndToEndSupport.baseOffsets;
import static io.rsm.kafka.EndToEndSupport.count;
import static io.rsm.kafka.EndToEndSupport.log;
import static io.rsm.kafka.EndToEndSupport.ms;
import static io.rsm.kafka.EndToEndSupport.sleep;
import static io.rsm.kafka.EndToEndSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;

/**
 * The scenarios of a replicated cluster ({@link KafkaCluster}): leader failover while copying, a follower
 * rebuilt from remote storage (with and without KIP-1023), a rolling restart under load, reassignment and a
 * log-directory move, tiering turned off and on (KIP-950), DeleteRecords and topic deletion. Each ends with
 * {@link #check}: every acknowledged record read back exactly once, in order, under read_uncommitted and
 * read_committed; {@code rsm audit} over the cluster finds nothing lost, no orphans, nothing stuck; and no
 * broker logged a remote-storage failure. Figures go to {@link #summary}.
 */
final class ClusterScenarios extends ClusterClient {
    /**
     * Kafka's own remote log manager not yet told of a partition after a restart: its follower fetcher builds
     * the remote log's auxiliary state before the leadership notice registers the topic id, fails before our
     * plugin is called, and tries again (seen on 3.9.2, the notice logged 5 ms later).
     */
    static final String RLM_WARM_UP = "No topic id registered for topic partition";
    /** Kafka's own metadata manager warming up after a restart: a read refused before our plugin is called. */
    static final List<String> WARM_UP =
            List.of(BrokerEndToEndIT.METADATA_WARM_UP, BrokerEndToEndIT.METADATA_WARM_UP_40, RLM_WARM_UP);

    final Path work;
    final Path cli;
    final Map<String, String> summary = new TreeMap<>();
    /** Where each broker's log was at the start of the current scenario. */
    private final Map<Integer, Long> logMarks = new HashMap<>();

    ClusterScenarios(KafkaCluster cluster, Path work, Path cli) {
        super(cluster);
        this.work = work;
        this.cli = cli;
    }

    // ---- the scenarios ----

    /**
     * A one-partition tiered topic of replication factor 3 keeping a second of it locally, {@code records}
     * plain records produced to it and tiered.
     */
    ClusterLedger tieredAndFilled(TopicPartition tp, int records) throws Exception {
        createTopic(tp.topic(), 1, 3, tieredTopic(Map.of("local.retention.ms", "1000")), null);
        ClusterLedger ledger = new ClusterLedger();
        produce(tp, records, ledger);
        awaitTiered(tp);
        return ledger;
    }

    /**
     * A one-partition tiered topic of replication factor 3 keeping {@code localRetention} of it locally
     * ({@code local.retention.bytes}), filled with transactions (some aborted) and then plain records, tiered.
     */
    ClusterLedger filledTopic(String topic, long localRetention) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        createTopic(topic, 1, 3, tieredTopic(Map.of("local.retention.bytes", String.valueOf(localRetention))), null);
        ClusterLedger ledger = new ClusterLedger();
        produceTransactions(tp, 6, 200, ledger);
        produce(tp, 10000, ledger);
        awaitTiered(tp);
        return ledger;
    }

    /**
     * Kills the leader with SIGKILL the moment it starts copying a segment of {@code topic} (its log says
     * "Copying"), while a producer keeps writing; the new leader continues; the killed broker comes back.
     * Returns the partition's ledger.
     */
    ClusterLedger leaderFailoverDuringCopies(String topic) throws Exception {
        begin();
        TopicPartition tp = new TopicPartition(topic, 0);
        createTopic(topic, 1, 3, tieredTopic(Map.of("local.retention.ms", "1000")), null);
        ClusterLedger ledger = new ClusterLedger();
        produceTransactions(tp, 6, 200, ledger);
        produce(tp, 3000, ledger);
        awaitTiered(tp);
        int leader = leader(tp);
        KafkaBroker victim = cluster.broker(leader);
        try (LogTail tail = new LogTail(victim.brokerLog)) {
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread producer = new Thread(() -> {
                try {
                    produce(tp, 12000, ledger);
                } catch (Throwable e) {
                    failed.set(e);
                }
            }, "failover-producer");
            producer.start();
            // The plugin's debug line as the broker hands it a segment: the copy-started record is written.
            String copying = tail.await(60, l -> l.contains("rsm plugin: copying segment")
                    && l.contains(":" + topic + "-0,"));
            long t = System.nanoTime();
            victim.kill();
            long base = Long.parseLong(copying.replaceAll(".*\\(offsets ([0-9]+)\\.\\..*", "$1"));
            summary.put("failover: leader killed", "broker " + leader + " (kill -9) " + ms(t) + " ms after the plugin "
                    + "started copying the segment at offset " + base);
            waitFor("a new leader of " + tp, 60, () -> {
                int l = leader(tp);
                return l > 0 && l != leader;
            });
            producer.join(TimeUnit.MINUTES.toMillis(3));
            assertTrue(!producer.isAlive(), "the producer finished");
            assertNull(failed.get(), "the producer failed: " + failed.get());
            summary.put("failover: new leader", "broker " + leader(tp) + " in " + ms(t) + " ms");
            victim.start();
            awaitIsr(tp, 3);
            awaitTiered(tp);
            // The segment whose copy was cut short is in the store once, copied by the new leader; the cut copy
            // (copy started, never finished) was deleted through the plugin.
            String dir = remoteDir(tp);
            long manifests = baseOffsets(cluster.store, dir, ".manifest").stream().filter(b -> b == base).count();
            assertEquals(1, manifests, "segments at base offset " + base + " after the cut copy");
            Map<String, Set<String>> states = segmentStates(topic, base);
            List<String> abandoned = states.entrySet().stream()
                    .filter(e -> !e.getValue().contains("COPY_SEGMENT_FINISHED")).map(Map.Entry::getKey)
                    .collect(Collectors.toList());
            assertEquals(1, abandoned.size(), "one abandoned copy at offset " + base + ": " + states);
            String id = abandoned.get(0);
            // Kafka never finishes nor deletes it (its record stays until retention passes it); what the cut
            // copy left in the store, if anything, is an orphan for rsm audit --delete-orphans.
            List<String> leftovers = cluster.store.keysUnder(dir).stream().filter(k -> k.contains(id))
                    .collect(Collectors.toList());
            if (!leftovers.isEmpty()) {
                List<String> sweep = auditCommand(topic);
                sweep.addAll(List.of("--delete-orphans", "--yes"));
                String out = MetadataInteropIT.run(sweep, 0);
                assertTrue(out.contains(leftovers.size() + " deleted"), out);
                assertTrue(cluster.store.keysUnder(dir).stream().noneMatch(k -> k.contains(id)), "swept: " + out);
            }
            String audit = check(topic, Map.of(tp, ledger));
            assertTrue(audit.contains("ABANDONED\t" + topic + "-0\t" + id + "\toffset " + base), audit);
            summary.put("failover: abandoned copy", "segment " + id + " (copy started by broker " + leader
                    + ", never finished) reported abandoned by rsm audit; it left " + leftovers.size()
                    + " objects in the store" + (leftovers.isEmpty() ? "" : " (swept by rsm audit --delete-orphans)")
                    + "; offsets " + base + ".. copied again by the new leader as " + states.entrySet().stream()
                    .filter(e -> e.getValue().contains("COPY_SEGMENT_FINISHED")).map(Map.Entry::getKey)
                    .collect(Collectors.joining(", ")));
        }
        return ledger;
    }

    /**
     * Stops broker {@code id}, a follower of {@code tp}, wipes its copy of the partition in every log
     * directory, and starts it again: it rebuilds from remote storage (leader-epoch and producer-snapshot
     * index fetches through our plugin) and joins the ISR; then it becomes the leader and everything is read
     * from it. With {@code kip1023} ({@code follower.fetch.last.tiered.offset.enable}, brokers 4.3+), it starts
     * from the last tiered offset instead of the leader's local log start.
     */
    void rebuildFollowerFromRemote(TopicPartition tp, ClusterLedger ledger, int id, boolean kip1023) throws Exception {
        begin();
        String what = "rebuild" + (kip1023 ? " (KIP-1023)" : "");
        KafkaBroker b = cluster.broker(id);
        assertNotEquals(id, leader(tp), "broker " + id + " is a follower of " + tp);
        awaitTiered(tp);
        b.stop();
        int wiped = 0;
        for (Path dir : b.logDirs) {
            Path partition = dir.resolve(tp.topic() + "-" + tp.partition());
            if (Files.exists(partition)) {
                EndToEndSupport.deleteRecursively(partition);
                wiped++;
            }
        }
        assertEquals(1, wiped, "broker " + id + "'s copy of " + tp);
        b.set("follower.fetch.last.tiered.offset.enable", kip1023 ? "true" : null);
        long leaderLocalStart = offset(tp, OffsetSpec.earliestLocal());
        long lastTiered = offset(tp, OffsetSpec.latestTiered());
        assertTrue(leaderLocalStart > 0, "the leader's local log starts past 0: " + leaderLocalStart);
        long mark = lines(b);
        long t = System.nanoTime();
        b.start();
        waitFor("broker " + id + " back in the ISR of " + tp, 180, () -> isr(tp).contains(id));
        long joined = ms(t);
        String since = b.log().lines().skip(mark).collect(Collectors.joining("\n"));
        long epochs = count(since, "serving LEADER_EPOCH index of segment");
        long snapshots = count(since, "serving PRODUCER_SNAPSHOT index of segment");
        long localStart = localLogStart(b, tp);
        long expectedStart = kip1023 ? lastTiered + 1 : leaderLocalStart;
        summary.put(what + ": broker " + id, String.format("in the ISR %d ms after its start; index fetches through "
                + "the plugin: %d leader-epoch, %d producer-snapshot; its local log starts at %d (leader's local start "
                + "%d, last tiered offset %d)", joined, epochs, snapshots, localStart, leaderLocalStart, lastTiered));
        log(what + ": " + summary.get(what + ": broker " + id));
        assertTrue(epochs > 0 && snapshots > 0, "the rebuilt follower fetched its leader-epoch and producer-snapshot "
                + "indexes through the plugin: " + epochs + ", " + snapshots);
        assertEquals(expectedStart, localStart, "the rebuilt follower's local log start");
        b.set("follower.fetch.last.tiered.offset.enable", null);
        makeLeader(tp, id);
        check(tp.topic(), Map.of(tp, ledger));
    }

    /**
     * Restarts the three brokers one after the other (SIGTERM, start, back in every ISR) while a producer
     * writes to, and a consumer reads from the start of, a three-partition topic.
     */
    void rollingRestartUnderLoad(String topic) throws Exception {
        begin();
        createTopic(topic, 3, 3, tieredTopic(Map.of("local.retention.ms", "1000")), null);
        Map<TopicPartition, ClusterLedger> ledgers = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (int p = 0; p < 3; p++) {
            TopicPartition tp = new TopicPartition(topic, p);
            ClusterLedger l = new ClusterLedger();
            produce(tp, 2500, l);
            ledgers.put(tp, l);
        }
        for (TopicPartition tp : ledgers.keySet()) {
            awaitTiered(tp);
        }
        Map<TopicPartition, Long> remoteEnd = new HashMap<>();
        for (TopicPartition tp : ledgers.keySet()) {
            remoteEnd.put(tp, offset(tp, OffsetSpec.earliestLocal()));
        }
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        AtomicLong consumedBytes = new AtomicLong();
        AtomicLong produced = new AtomicLong();
        Thread producer = new Thread(() -> {
            try (KafkaProducer<byte[], byte[]> p = producer()) {
                while (running.get()) {
                    for (Map.Entry<TopicPartition, ClusterLedger> e : ledgers.entrySet()) {
                        produce(p, e.getKey(), 100, e.getValue());
                        produced.addAndGet(100);
                    }
                }
            } catch (Throwable e) {
                failed.compareAndSet(null, e);
            }
        }, "rolling-producer");
        Thread consumer = new Thread(() -> {
            try (KafkaConsumer<byte[], byte[]> c = consumer("read_uncommitted")) {
                c.assign(ledgers.keySet());
                while (running.get()) {
                    for (TopicPartition tp : ledgers.keySet()) {
                        c.seek(tp, 0);
                    }
                    Set<TopicPartition> done = new HashSet<>();
                    while (running.get() && done.size() < 3) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                            consumedBytes.addAndGet(r.value().length);
                        }
                        for (TopicPartition tp : ledgers.keySet()) {
                            if (c.position(tp, Duration.ofSeconds(10)) >= remoteEnd.get(tp)) {
                                done.add(tp);
                            }
                        }
                    }
                }
            } catch (Throwable e) {
                failed.compareAndSet(null, e);
            }
        }, "rolling-consumer");
        long t = System.nanoTime();
        producer.start();
        consumer.start();
        // Bytes each broker's plugin served from remote segments over the whole restart (its counters start
        // again with it: read before it stops and at the end).
        Map<Integer, Double> served = new TreeMap<>();
        for (KafkaBroker b : cluster.brokers) {
            sleep(2000);
            long r = System.nanoTime();
            served.merge(b.nodeId(), fetchBytes(b), Double::sum);
            b.stop();
            b.start();
            for (TopicPartition tp : ledgers.keySet()) {
                awaitIsr(tp, 3);
            }
            log("rolling restart: broker " + b.nodeId() + " back in every ISR in " + ms(r) + " ms");
            assertNull(failed.get(), "producer or consumer failed: " + failed.get());
        }
        sleep(3000);
        running.set(false);
        long joining = System.nanoTime();
        producer.join(TimeUnit.MINUTES.toMillis(3));
        consumer.join(TimeUnit.MINUTES.toMillis(1));
        log("rolling restart: load stopped in " + ms(joining) + " ms");
        assertNull(failed.get(), "producer or consumer failed: " + failed.get());
        double seconds = (System.nanoTime() - t) / 1e9;
        StringBuilder perBroker = new StringBuilder();
        for (KafkaBroker b : cluster.brokers) {
            double bytes = served.merge(b.nodeId(), fetchBytes(b), Double::sum);
            perBroker.append(String.format("; broker %d served %.1f MB from remote (%.1f MB/s)", b.nodeId(),
                    bytes / 1e6, bytes / 1e6 / seconds));
        }
        summary.put("rolling restart", String.format("%d records produced during it, %.1f MB consumed from the "
                + "start in %.0f s (%.1f MB/s)%s", produced.get(), consumedBytes.get() / 1e6, seconds,
                consumedBytes.get() / 1e6 / seconds, perBroker));
        for (TopicPartition tp : ledgers.keySet()) {
            awaitTiered(tp);
        }
        check(topic, ledgers);
    }

    /**
     * A partition of replication factor 2 on brokers 1 and 2 moves to broker 3 (which builds it from remote
     * storage), then, on broker 3, from one log directory to the other (JBOD); broker 3 leads and serves it.
     */
    void reassignAndMoveLogDir(String topic) throws Exception {
        begin();
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, String> cfg = tieredTopic(Map.of("local.retention.ms", "1000", "min.insync.replicas", "1"));
        createTopic(topic, 1, 2, cfg, Map.of(0, List.of(1, 2)));
        ClusterLedger ledger = new ClusterLedger();
        produce(tp, 4000, ledger);
        awaitTiered(tp);
        KafkaBroker three = cluster.broker(3);
        long mark = lines(three);
        long t = System.nanoTime();
        admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(3, 2)))))
                .all().get(60, TimeUnit.SECONDS);
        waitFor("reassignment of " + tp + " to brokers 3 and 2", 180, () -> {
            try {
                return admin.listPartitionReassignments().reassignments().get(30, TimeUnit.SECONDS).isEmpty()
                        && replicas(tp).equals(List.of(3, 2)) && isr(tp).contains(3);
            } catch (Exception e) {
                return false;
            }
        });
        long reassigned = ms(t);
        String since = three.log().lines().skip(mark).collect(Collectors.joining("\n"));
        long indexes = count(since, "serving LEADER_EPOCH index of segment");
        assertTrue(indexes > 0, "broker 3 built the moved partition from remote storage");
        makeLeader(tp, 3);
        TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, 3);
        String from = replicaLogDir(replica).getCurrentReplicaLogDir();
        String to = three.logDirs.stream().map(Path::toString).filter(d -> !d.equals(from)).findFirst().orElseThrow();
        t = System.nanoTime();
        admin.alterReplicaLogDirs(Map.of(replica, to)).all().get(60, TimeUnit.SECONDS);
        waitFor(tp + " moved to " + to + " on broker 3", 120, () -> {
            ReplicaLogDirInfo i = replicaLogDir(replica);
            return to.equals(i.getCurrentReplicaLogDir()) && i.getFutureReplicaLogDir() == null;
        });
        assertTrue(Files.isDirectory(Path.of(to, topic + "-0")), "the partition's directory in " + to);
        // The broker reports the move done once the new log is current, and then renames the old directory
        // for deletion (LogManager.replaceCurrentWithFutureLog): it may still be there for a moment.
        waitFor("no partition directory left in " + from, 30, () -> !Files.exists(Path.of(from, topic + "-0")));
        long moved = ms(t);
        produce(tp, 2000, ledger);
        awaitTiered(tp);
        summary.put("reassignment", String.format("to broker 3 in %d ms (%d leader-epoch index fetches while it "
                + "built the partition); log directory move on broker 3 in %d ms", reassigned, indexes, moved));
        check(topic, Map.of(tp, ledger));
    }

    /**
     * KIP-950: copying turned off (remote data kept and served), then remote storage turned off with
     * {@code remote.log.delete.on.disable}: the topic's remote data is deleted and nothing else; then tiering
     * is turned on again and copies resume.
     */
    void tieringDisabledAndReenabled(String topic) throws Exception {
        begin();
        TopicPartition tp = new TopicPartition(topic, 0);
        ClusterLedger ledger = tieredAndFilled(tp, 4000);
        String dir = remoteDir(tp);
        List<Long> before = baseOffsets(cluster.store, dir, ".manifest");
        Set<String> others = keysOutside(dir);

        // Retain: copying off, the remote data stays and is read. Kafka asks local retention to equal the
        // total then, as nothing more goes remote.
        alterTopic(topic, Map.of("remote.log.copy.disable", "true", "local.retention.ms", "-1"));
        produce(tp, 3000, ledger);
        sleep(4000); // eight copy-task intervals
        assertEquals(before, baseOffsets(cluster.store, dir, ".manifest"), "no copy with remote.log.copy.disable");
        check(topic, Map.of(tp, ledger));

        // Delete: remote storage off; Kafka asks the plugin to delete the topic's remote segments.
        long t = System.nanoTime();
        alterTopic(topic, Map.of("remote.storage.enable", "false", "remote.log.delete.on.disable", "true"));
        waitFor("remote data of " + topic + " deleted", 120, () -> cluster.store.keysUnder(dir).isEmpty());
        long deleted = ms(t);
        Set<String> othersNow = keysOutside(dir);
        Set<String> gone = new TreeSet<>(others);
        gone.removeAll(othersNow);
        assertTrue(gone.isEmpty(), "objects of other topics deleted: " + gone);
        long logStart = offset(tp, OffsetSpec.earliest());
        assertTrue(logStart > 0, "the log starts past the deleted remote data: " + logStart);
        ledger.values.headMap(logStart).clear();

        // On again.
        alterTopic(topic, Map.of("remote.storage.enable", "true", "remote.log.copy.disable", "false",
                "local.retention.ms", "1000"));
        produce(tp, 4000, ledger);
        waitFor("copies resumed on " + topic, 120, () -> baseOffsets(cluster.store, dir, ".manifest").size() >= 2);
        awaitTiered(tp);
        summary.put("tiering disabled (KIP-950)", String.format("%d segments kept while copying was off; all deleted "
                + "%d ms after remote.storage.enable=false with remote.log.delete.on.disable, no other object touched; "
                + "%d segments copied after re-enabling", before.size(), deleted,
                baseOffsets(cluster.store, dir, ".manifest").size()));
        check(topic, Map.of(tp, ledger));
    }

    /**
     * DeleteRecords to the middle of the remote log: the remote segments wholly below the new log start go and
     * no other; then the topic's deletion empties the store of it.
     */
    void deleteRecordsAndTopic(String topic) throws Exception {
        begin();
        TopicPartition tp = new TopicPartition(topic, 0);
        ClusterLedger ledger = tieredAndFilled(tp, 6000);
        String dir = remoteDir(tp);
        List<Long> bases = baseOffsets(cluster.store, dir, ".manifest");
        assertTrue(bases.size() >= 4, "segments remote: " + bases);
        long cut = bases.get(bases.size() / 2) + 10;
        admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(cut))).all().get(60, TimeUnit.SECONDS);
        List<Long> kept = bases.stream().filter(b -> b >= bases.get(bases.size() / 2)).collect(Collectors.toList());
        waitFor("remote segments below offset " + cut + " deleted", 120,
                () -> baseOffsets(cluster.store, dir, ".manifest").equals(kept));
        assertEquals(cut, offset(tp, OffsetSpec.earliest()), "log start after DeleteRecords");
        ledger.values.headMap(cut).clear();
        check(topic, Map.of(tp, ledger));
        long t = System.nanoTime();
        admin.deleteTopics(List.of(topic)).all().get(60, TimeUnit.SECONDS);
        waitFor("remote data of deleted topic " + topic + " removed", 180, () -> cluster.store.keysUnder(dir).isEmpty());
        summary.put("DeleteRecords and topic deletion", String.format("DeleteRecords to %d removed %d of %d remote "
                + "segments (exactly those below it); topic deletion removed the other %d in %d ms", cut,
                bases.size() - kept.size(), bases.size(), kept.size(), ms(t)));
        assertNoRemoteStorageFailures(Set.of());
    }

    // ---- the checks every scenario ends with ----

    /**
     * Every acknowledged record of each partition read back exactly once, in order, under read_uncommitted
     * (aborted ones included) and read_committed (without them); {@code rsm audit} over the cluster finds
     * nothing lost, no orphans and nothing stuck; no broker logged a remote-storage failure since the
     * scenario began.
     */
    String check(String topic, Map<TopicPartition, ClusterLedger> ledgers) throws Exception {
        int read = 0;
        for (Map.Entry<TopicPartition, ClusterLedger> e : ledgers.entrySet()) {
            read += readBack(e.getKey(), e.getValue());
        }
        String audit = audit(topic);
        summary.merge("records produced and verified (both isolation levels)", topic + ": " + read,
                (a, b) -> a + "; " + b);
        log("checked " + topic + ": " + read + " records; audit: " + audit.lines()
                .filter(l -> l.contains(" lost, ")).findFirst().orElse(""));
        assertNoRemoteStorageFailures(Set.of());
        return audit;
    }

    /** {@code rsm audit --bootstrap-server} over the cluster for {@code topic}, with no safety age. */
    List<String> auditCommand(String topic) {
        List<String> cmd = new ArrayList<>(List.of(cli.toString(), "audit", "--bootstrap-server", cluster.bootstrap()));
        cmd.addAll(cluster.store.cliArgs());
        cmd.addAll(List.of("--topic", topic, "--min-age", "0s"));
        return cmd;
    }

    /** Runs {@link #auditCommand}: it must find nothing lost, no orphans, nothing stuck; its output. */
    String audit(String topic) throws Exception {
        String out = MetadataInteropIT.run(auditCommand(topic), 0);
        assertTrue(out.contains(" 0 lost, 0 orphans, 0 stuck"), "rsm audit of " + topic + ":\n" + out);
        return out;
    }

    /**
     * No broker logged a remote-storage failure since the scenario began, other than Kafka's own metadata
     * manager warming up after a restart and lines containing one of {@code tolerated}.
     */
    void assertNoRemoteStorageFailures(Set<String> tolerated) throws IOException {
        List<String> bad = new ArrayList<>();
        for (KafkaBroker b : cluster.brokers) {
            List<String> lines = b.log().lines().skip(logMarks.getOrDefault(b.nodeId(), 0L))
                    .collect(Collectors.toList());
            for (int i = 0; i < lines.size(); i++) {
                String l = lines.get(i);
                if (!KafkaBroker.remoteStorageFailure(l)) {
                    continue;
                }
                String next = i + 1 < lines.size() ? lines.get(i + 1) : "";
                // Kafka's own metadata-topic producer told of a leadership move: it asks for new metadata and
                // retries (a warning of Kafka's client, not a failure of remote storage).
                boolean leaderMoved = l.contains(" WARN ") && l.contains("__remote_log_metadata_client")
                        && l.contains("NotLeaderOrFollowerException");
                if (leaderMoved || WARM_UP.stream().anyMatch(w -> l.contains(w) || next.contains(w))
                        || tolerated.stream().anyMatch(l::contains)) {
                    continue;
                }
                bad.add("broker " + b.nodeId() + ": " + l);
            }
        }
        if (!bad.isEmpty()) {
            fail("remote-storage failures in the broker logs:\n" + String.join("\n", bad.subList(0, Math.min(20,
                    bad.size()))));
        }
    }

    // ---- helpers ----

    /**
     * The states each segment of {@code topic}'s partition 0 starting at {@code start} went through, by
     * segment id, from the metadata topic as {@code rsm metadata} prints it.
     */
    Map<String, Set<String>> segmentStates(String topic, long start) {
        String out;
        try {
            out = MetadataInteropIT.run(List.of(cli.toString(), "metadata", "--bootstrap-server", cluster.bootstrap()), 0);
        } catch (Exception e) {
            throw new IllegalStateException("rsm metadata: " + e, e);
        }
        Map<String, Set<String>> states = new TreeMap<>();
        for (String line : out.lines().collect(Collectors.toList())) {
            String[] f = line.split(" ");
            if (f.length < 5 || !f[2].endsWith(":" + topic + "-0")) {
                continue;
            }
            if (f[1].equals("segment") && line.contains(" start=" + start + " ")) {
                states.computeIfAbsent(f[3], k -> new TreeSet<>()).add(f[4].substring("state=".length()));
            }
        }
        for (String line : out.lines().collect(Collectors.toList())) {
            String[] f = line.split(" ");
            if (f.length >= 5 && f[1].equals("update") && states.containsKey(f[3])) {
                states.get(f[3]).add(f[4].substring("state=".length()));
            }
        }
        return states;
    }

    private void begin() throws IOException {
        for (KafkaBroker b : cluster.brokers) {
            logMarks.put(b.nodeId(), lines(b));
        }
    }
}
