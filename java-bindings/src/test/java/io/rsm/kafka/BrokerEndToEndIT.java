package io.rsm.kafka;

import static io.rsm.kafka.BrokerRecords.consumeAndCompare;
import static io.rsm.kafka.BrokerRecords.consumeValues;
import static io.rsm.kafka.BrokerRecords.consumer;
import static io.rsm.kafka.BrokerRecords.produce;
import static io.rsm.kafka.BrokerRecords.remoteFetchLatency;
import static io.rsm.kafka.EndToEndSupport.baseOffsets;
import static io.rsm.kafka.EndToEndSupport.count;
import static io.rsm.kafka.EndToEndSupport.deleteRecursively;
import static io.rsm.kafka.EndToEndSupport.log;
import static io.rsm.kafka.EndToEndSupport.ms;
import static io.rsm.kafka.EndToEndSupport.offset;
import static io.rsm.kafka.EndToEndSupport.percentile;
import static io.rsm.kafka.EndToEndSupport.sleep;
import static io.rsm.kafka.EndToEndSupport.topicId;
import static io.rsm.kafka.EndToEndSupport.waitFor;
import static io.rsm.kafka.StoredSegmentForm.checkStoredForm;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * End to end with a real broker from Maven Central: produce many segments, see them tiered to our store and
 * gone locally, read everything back through the broker from remote storage, look offsets up by timestamp,
 * restart and read again, let retention and topic deletion remove the remote data, and check the broker's
 * log shows our plugin copying, serving and deleting without an exception.
 *
 * <p>Runs for every {@code version=classpath-file} pair in the system property {@code rsm.brokers} (made by
 * tools/java-tests.sh) on the filesystem store, and once more on S3 with the first (newest) of them, on the
 * server the {@code rsm.s3.*} properties name (moto in the tests), with the plugin's compression and encryption
 * on (the main topic's segments under an AWS KMS key of moto's KMS, by the per-topic key setting, the other
 * topics' under a key file); skipped when {@code rsm.brokers} is empty.
 */
class BrokerEndToEndIT {
    static final int SEGMENT_BYTES = 1 << 20;
    static final String METADATA_WARM_UP = "Remote log metadata cache is not initialized";
    static final String METADATA_WARM_UP_40 = "This instance is in invalid state, initialized: false";
    static final String RLMM_READY = "Initialized topic-based RLMM resources successfully";
    static final String RLMM_CAUGHT_UP = "Initialized for all the";
    static final Path OUT = Paths.get(System.getProperty("rsm.e2e.out", "target/e2e"));

    static Stream<String[]> brokers() {
        String spec = System.getProperty("rsm.brokers", "").trim();
        if (spec.isEmpty()) {
            return Stream.of(new String[][] {{"none", "", "filesystem"}});
        }
        List<String[]> runs = new ArrayList<>();
        for (String pair : spec.split(",")) {
            String[] vc = pair.trim().split("=", 2);
            runs.add(new String[] {vc[0], vc[1], "filesystem"});
        }
        runs.add(new String[] {runs.get(0)[0], runs.get(0)[1], "s3"});
        return runs.stream();
    }

    final Map<String, String> summary = new TreeMap<>();
    /** The broker log's line count when the second topic's deletion was asked for. */
    long doomedDeletedAtLine = Long.MAX_VALUE;

    @ParameterizedTest(name = "Kafka {0} on the {2} store")
    @MethodSource("brokers")
    void tieredStorageThroughARealBroker(String version, String classpathFile, String storeKind) throws Exception {
        Assumptions.assumeFalse(classpathFile.isEmpty(), "no broker class path given (rsm.brokers)");
        Path jar = Paths.get(System.getProperty("rsm.plugin.jar"));
        assertTrue(Files.isRegularFile(jar), "plugin jar " + jar);
        String classpath = Files.readString(Paths.get(classpathFile)).trim();
        boolean s3 = storeKind.equals("s3");
        Path work = OUT.resolve("kafka-" + version + (s3 ? "-s3" : ""));
        deleteRecursively(work);
        TestStore s3Store = s3 ? TestStore.s3FromSystemProperties() : null;
        assertTrue(!s3 || s3Store != null, "no S3 server given for the S3 run (system property rsm.s3.endpoint; "
                + "tools/java-tests.sh starts moto and passes it)");
        // The S3 run has the plugin's compression and encryption on, as on a shared cloud store.
        TestStore store = s3 ? s3Store.compressedAndEncrypted(work.resolve("keys")).withKmsKeyFor("tiered")
                : TestStore.filesystem(work.resolve("tiered-store"));
        summary.put("store", store.toString());
        log("=== Kafka " + version + " on the " + store + " store: work dir " + work);
        // The S3 run installs the plugin as an operator may on 4.1+: on the broker's own class path, as the
        // class that takes the broker's metrics registry (KIP-877). Older brokers lack Monitorable.
        boolean kip877 = TestSegments.versionAtLeast(version, 4, 1);
        try (KafkaBroker broker = new KafkaBroker(version, classpath, work, jar, store, s3 && kip877)) {
            broker.format();
            long t = System.nanoTime();
            broker.start();
            log("broker started in " + ms(t) + " ms on " + broker.bootstrap());
            run(broker);
        } catch (Throwable e) {
            Path log = work.resolve("broker.log");
            System.err.println("broker log: " + log);
            throw e;
        } finally {
            StringBuilder sb = new StringBuilder();
            summary.forEach((k, v) -> sb.append(k).append(": ").append(v).append('\n'));
            Files.createDirectories(work);
            Files.writeString(work.resolve("summary.txt"), sb.toString());
            System.out.println("--- summary Kafka " + version + " on the " + storeKind + " store\n" + sb);
        }
    }

    /**
     * Runs {@link FetchLatencyBench} in a JVM with the kafka-storage test jar (Kafka's LocalTieredStorage) on
     * its class path, with our plugin jar: both managers in one JVM, on the same segments.
     */
    @org.junit.jupiter.api.Test
    void remoteFetchLatencyAgainstKafkasLocalTieredStorage() throws Exception {
        String cpFile = System.getProperty("rsm.bench.classpath", "").trim();
        Assumptions.assumeFalse(cpFile.isEmpty(), "no class path with LocalTieredStorage given (rsm.bench.classpath)");
        Path jar = Paths.get(System.getProperty("rsm.plugin.jar"));
        Path testClasses = Paths.get(FetchLatencyBench.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path work = OUT.resolve("fetch-latency");
        deleteRecursively(work);
        Files.createDirectories(work);
        String classpath = Files.readString(Paths.get(cpFile)).trim() + java.io.File.pathSeparator + jar
                + java.io.File.pathSeparator + testClasses;
        // The kafka-storage test jar carries a log4j2.yaml that writes storage.log; use a console-only one.
        Files.writeString(work.resolve("log4j2.properties"), String.join("\n", "status = warn",
                "appender.out.type = Console", "appender.out.name = OUT", "appender.out.layout.type = PatternLayout",
                "appender.out.layout.pattern = %p %c - %m%n", "rootLogger.level = WARN",
                "rootLogger.appenderRef.out.ref = OUT", ""));
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx1g", "-Dlog4j2.configurationFile=" + work.resolve("log4j2.properties"), "-cp", classpath, FetchLatencyBench.class.getName(), work.toString(), "400")
                .directory(work.toFile())
                .redirectErrorStream(true)
                .redirectOutput(work.resolve("bench.out").toFile())
                .start();
        assertTrue(p.waitFor(600, TimeUnit.SECONDS), "benchmark finished");
        String out = Files.readString(work.resolve("bench.out"));
        assertEquals(0, p.exitValue(), out);
        StringBuilder sb = new StringBuilder();
        out.lines().filter(l -> l.startsWith("MACHINE ")).forEach(l -> sb.append(l).append('\n'));
        for (String[] measure : new String[][] {{"RESULT ", "the broker's read (RemoteLogManager.read)"},
                {"RESULT-BATCHES ", "batch after batch"}}) {
            List<String> results = out.lines().filter(l -> l.startsWith(measure[0])).collect(Collectors.toList());
            assertEquals(3, results.size(), out);
            sb.append("1 MiB remote fetch, ").append(measure[1]).append(", same JVM, same data (us):\n");
            for (String r : results) {
                String[] f = r.split(" ");
                sb.append(String.format("  %-24s median %s, p90 %s, n %s%n", f[1], f[2], f[3], f[4]));
            }
        }
        List<String> more = out.lines().filter(l -> l.startsWith("RESULT-SEQ ") || l.startsWith("RESULT-COPY "))
                .collect(Collectors.toList());
        assertEquals(7, more.size(), out);
        sb.append("whole-segment sequential read and copy, same JVM, same data:\n");
        for (String r : more) {
            sb.append("  ").append(r).append('\n');
        }
        Files.writeString(work.resolve("summary.txt"), sb.toString());
        System.out.println(sb);
    }

    private void run(KafkaBroker broker) throws Exception {
        String topic = "tiered";
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()))) {
            Map<String, String> cfg = new HashMap<>();
            cfg.put("remote.storage.enable", "true");
            cfg.put("segment.bytes", String.valueOf(SEGMENT_BYTES));
            cfg.put("local.retention.ms", "1000");
            cfg.put("retention.ms", "-1");
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(cfg))).all().get(60, TimeUnit.SECONDS);
            Uuid topicId = topicId(admin, topic);
            String remoteDir = topic + "-" + topicId + "/0/";
            Path localDir = broker.logDir.resolve(topic + "-0");

            // Watch segments roll locally and appear remotely, for the roll-to-remote time.
            Map<Long, Long> rolledAt = new ConcurrentHashMap<>();
            Map<Long, Long> remoteAt = new ConcurrentHashMap<>();
            AtomicBoolean watching = new AtomicBoolean(true);
            Thread watcher = new Thread(() -> {
                while (watching.get()) {
                    long now = System.currentTimeMillis();
                    for (long base : baseOffsets(localDir, ".log")) {
                        rolledAt.putIfAbsent(base, now);
                    }
                    try {
                        for (long base : baseOffsets(broker.store, remoteDir, ".manifest")) {
                            remoteAt.putIfAbsent(base, now);
                        }
                    } catch (RuntimeException e) {
                        // A listing that failed now; the next look sees it (waitFor below fails on a dead store).
                    }
                    sleep(25);
                }
            }, "segment-watcher");
            watcher.setDaemon(true);
            watcher.start();

            // Produce: three producers (none, zstd, gzip), keys, values, headers, explicit timestamps.
            TreeMap<Long, ExpectedRecord> expected = new TreeMap<>();
            long t = System.nanoTime();
            int n = 0;
            n = produce(broker, topic, "none", 10000, n, expected, 16384);
            n = produce(broker, topic, "zstd", 10000, n, expected, 65536);
            n = produce(broker, topic, "gzip", 10000, n, expected, 32768);
            long end = expected.lastKey() + 1;
            summary.put("records produced", n + " (offsets 0.." + (end - 1) + ") in " + ms(t) + " ms");
            log("produced " + n + " records");

            // Wait until the closed segments are remote and gone locally.
            t = System.nanoTime();
            waitFor("segments tiered and local ones deleted", 240, () -> {
                long tiered = offset(admin, tp, OffsetSpec.latestTiered());
                long local = offset(admin, tp, OffsetSpec.earliestLocal());
                return tiered > 0 && local > end / 2 && tiered >= local - 1 && localLogs(localDir) <= 3;
            });
            long earliestLocal = offset(admin, tp, OffsetSpec.earliestLocal());
            long latestTiered = offset(admin, tp, OffsetSpec.latestTiered());
            List<Long> remoteSegments = baseOffsets(broker.store, remoteDir, ".manifest");
            summary.put("segments in remote store", remoteSegments.size() + " (latest tiered offset " + latestTiered
                    + ", earliest local offset " + earliestLocal + ", local .log files " + localLogs(localDir) + ")");
            summary.put("time until every closed segment was remote and deleted locally", ms(t)
                    + " ms after the last produce");
            log(summary.get("segments in remote store"));
            assertTrue(remoteSegments.size() >= 10, "many segments remote: " + remoteSegments);
            assertEquals(0L, remoteSegments.get(0));
            checkStoredForm(broker.store, remoteDir, topic, expected.get(1L).value);
            watching.set(false);
            watcher.join();
            List<Long> latencies = new ArrayList<>();
            List<Long> bases = new ArrayList<>(new TreeMap<>(rolledAt).keySet());
            for (int i = 0; i + 1 < bases.size(); i++) {
                Long remote = remoteAt.get(bases.get(i));
                if (remote != null) {
                    latencies.add(remote - rolledAt.get(bases.get(i + 1)));
                }
            }
            Collections.sort(latencies);
            summary.put("roll to remote (ms)", "median " + percentile(latencies, 50) + ", p90 " + percentile(latencies, 90)
                    + ", max " + percentile(latencies, 100) + " over " + latencies.size() + " segments");

            // Everything from offset 0, byte for byte, most of it from remote storage.
            t = System.nanoTime();
            int checked = consumeAndCompare(broker, tp, 0, end, expected);
            summary.put("records verified from offset 0", checked + " in " + ms(t) + " ms (offsets below "
                    + earliestLocal + " from remote)");
            assertEquals(n, checked);

            // From the middle of remote segments (mid-batch), across batch and segment boundaries.
            int middles = 0;
            for (int i = 1; i + 1 < remoteSegments.size() && i <= 6; i++) {
                long mid = (remoteSegments.get(i) + remoteSegments.get(i + 1)) / 2 + 1;
                middles += consumeAndCompare(broker, tp, mid, Math.min(end, mid + 1500), expected);
            }
            summary.put("records verified from segment middles", String.valueOf(middles));

            // Offsets by timestamp, answered from remote indexes.
            Random random = new Random(5);
            try (KafkaConsumer<byte[], byte[]> c = consumer(broker, 500)) {
                for (int i = 0; i < 40; i++) {
                    long offset = random.nextInt((int) earliestLocal);
                    long ts = expected.get(offset).timestamp;
                    Map<TopicPartition, OffsetAndTimestamp> r = c.offsetsForTimes(Map.of(tp, ts - 3),
                            Duration.ofSeconds(30));
                    assertNotNull(r.get(tp), "timestamp " + ts);
                    assertEquals(offset, r.get(tp).offset(), "offset for timestamp " + (ts - 3));
                    assertEquals(ts, r.get(tp).timestamp());
                    assertEquals(offset, offset(admin, tp, OffsetSpec.forTimestamp(ts)));
                }
            }
            summary.put("offsets for timestamps checked", "40 (consumer and admin)");

            // Broker-visible latency of a 1 MiB fetch served from remote storage.
            summary.put("consumer fetch of 1 MiB from remote (ms)", remoteFetchLatency(broker, tp, earliestLocal));

            // Transactions, committed and aborted: read_committed needs the transaction indexes from remote.
            transactions(broker, admin, cfg);

            // Restart the broker and read from remote again, once Kafka's metadata manager has read its topic
            // back (until then the broker refuses remote reads itself, before calling any plugin).
            long rlmmReady = count(broker.log(), RLMM_READY);
            long rlmmCaughtUp = count(broker.log(), RLMM_CAUGHT_UP);
            t = System.nanoTime();
            broker.stop();
            // Counted once the old broker is gone: a copy it finished just before stopping (say of the
            // transactions topic) logs its line then, and its metrics belong to the old plugin instance.
            long restartLine = broker.log().lines().count();
            broker.start();
            waitFor("remote log metadata manager ready after restart", 120,
                    () -> count(logOf(broker), RLMM_READY) > rlmmReady
                            && count(logOf(broker), RLMM_CAUGHT_UP) > rlmmCaughtUp);
            log("broker restarted in " + ms(t) + " ms");
            try (Admin a2 = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()))) {
                int again = consumeAndCompare(broker, tp, 0, earliestLocal, expected);
                summary.put("records verified from remote after restart", String.valueOf(again));
                assertEquals(earliestLocal, again);

                // A short retention: the remote segments go.
                a2.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, topic),
                        List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "60000"), AlterConfigOp.OpType.SET))))
                        .all().get(30, TimeUnit.SECONDS);
                t = System.nanoTime();
                // Every object of the partition goes, not only the manifests.
                waitFor("remote segments deleted by retention", 180, () -> broker.store.keysUnder(remoteDir).isEmpty());
                long earliest = offset(a2, tp, OffsetSpec.earliest());
                summary.put("retention", "all " + remoteSegments.size() + " remote segments deleted in " + ms(t)
                        + " ms; earliest offset now " + earliest);
                assertTrue(earliest >= latestTiered, "earliest " + earliest);

                // A second topic, tiered, then deleted: its remote data goes.
                String doomed = "tiered-doomed";
                Map<String, String> cfg2 = new HashMap<>(cfg);
                a2.createTopics(List.of(new NewTopic(doomed, 1, (short) 1).configs(cfg2))).all().get(60, TimeUnit.SECONDS);
                Uuid doomedId = topicId(a2, doomed);
                String doomedDir = doomed + "-" + doomedId + "/0/";
                produce(broker, doomed, "lz4", 6000, 0, new TreeMap<>(), 65536);
                waitFor("second topic tiered", 180, () -> baseOffsets(broker.store, doomedDir, ".manifest").size() >= 3);
                int doomedSegments = baseOffsets(broker.store, doomedDir, ".manifest").size();
                doomedDeletedAtLine = broker.log().lines().count();
                a2.deleteTopics(List.of(doomed)).all().get(60, TimeUnit.SECONDS);
                t = System.nanoTime();
                waitFor("deleted topic's remote data removed", 180, () -> broker.store.keysUnder(doomedDir).isEmpty());
                summary.put("topic deletion", doomedSegments + " remote segments removed " + ms(t) + " ms after delete");
            }

            // The broker log: our plugin copied, served and deleted, and nothing failed.
            String log = broker.log();
            long copied = count(log, "io.rsm.native.rsm_jni - copied segment");
            long served = count(log, "io.rsm.native.rsm_jni - serving segment");
            long indexes = count(log, "index of segment");
            long deleted = count(log, "io.rsm.native.rsm_jni - deleted segment");
            List<Long> copyMicros = log.lines().filter(l -> l.contains("io.rsm.native.rsm_jni - copied segment"))
                    .map(l -> l.replaceAll(".* in ([0-9.]+) ms$", "$1"))
                    .map(v -> (long) (Double.parseDouble(v) * 1000)).sorted().collect(Collectors.toList());
            summary.put("plugin copy time per segment (ms, from its log lines)", String.format(
                    "median %.1f, max %.1f", percentile(copyMicros, 50) / 1000.0, percentile(copyMicros, 100) / 1000.0));
            summary.put("broker log", "copied " + copied + ", served " + served + " segment reads and " + indexes
                    + " index reads, deleted " + deleted);
            String stdout = Files.readString(broker.work.resolve("broker.out"));
            for (String secret : broker.store.secrets()) {
                assertFalse(log.contains(secret) || stdout.contains(secret),
                        "a secret setting of the store shows in the broker's log or output");
            }
            assertTrue(copied >= remoteSegments.size(), "copies in the broker log");
            assertTrue(served > 0, "serving in the broker log");
            assertTrue(deleted >= remoteSegments.size(), "deletes in the broker log");
            // The log line of an operation comes just before its metrics are recorded: a background task of
            // the broker may be between the two, so look again for a little while before failing.
            for (int attempt = 1; ; attempt++) {
                try {
                    pluginMetrics(broker, broker.log().lines().skip(restartLine).collect(Collectors.joining("\n")));
                    break;
                } catch (AssertionError e) {
                    if (attempt == 10) {
                        throw e;
                    }
                    sleep(500);
                }
            }
            // Kafka's own metadata manager (TopicBasedRemoteLogMetadataManager) needs a moment after a restart
            // to read its topic back; a remote read in that window fails in the broker, before our plugin is
            // called, and the consumer retries. Those lines are counted apart, not as plugin failures.
            List<String> lines = log.lines().collect(Collectors.toList());
            List<String> bad = new ArrayList<>();
            int warmUp = 0;
            int interruptedByDeletion = 0;
            boolean doomedTrace = false;
            for (int i = 0; i < lines.size(); i++) {
                String l = lines.get(i);
                // Deleting a topic removes its local files while a copy of one of its segments may be under
                // way: that copy fails (its file is gone) and is cleaned up. Counted apart, for that topic only,
                // with the stack trace that follows its lines (whose frames do not name the topic).
                boolean continuation = l.startsWith("\tat ") || l.startsWith("Caused by") || l.startsWith("\t... ");
                if (!continuation) {
                    doomedTrace = i >= doomedDeletedAtLine && l.contains("tiered-doomed");
                }
                if (!KafkaBroker.remoteStorageFailure(l)) {
                    continue;
                }
                if (doomedTrace) {
                    interruptedByDeletion += continuation ? 0 : 1;
                    continue;
                }
                String following = i + 1 < lines.size() ? lines.get(i + 1) : "";
                if (l.contains(METADATA_WARM_UP) || l.contains(METADATA_WARM_UP_40)
                        || following.contains(METADATA_WARM_UP) || following.contains(METADATA_WARM_UP_40)) {
                    warmUp += l.contains(" ERROR ") ? 1 : 0;
                    continue;
                }
                bad.add(l);
            }
            summary.put("remote reads refused while Kafka's metadata manager warmed up after restart",
                    String.valueOf(warmUp));
            summary.put("copies of the deleted topic cut short by its deletion", String.valueOf(interruptedByDeletion));
            summary.put("plugin or remote-storage exceptions in the broker log", String.valueOf(bad.size()));
            if (!bad.isEmpty()) {
                fail("the broker log shows remote-storage failures:\n" + String.join("\n",
                        bad.subList(0, Math.min(20, bad.size()))));
            }
        }
    }

    /**
     * A topic written by a transactional producer, every third transaction aborted, tiered; read back from
     * remote storage with read_committed (only committed records, which needs the aborted-transaction data
     * of the remote transaction indexes) and read_uncommitted (everything).
     */
    private void transactions(KafkaBroker broker, Admin admin, Map<String, String> cfg) throws Exception {
        String topic = "tiered-txn";
        TopicPartition tp = new TopicPartition(topic, 0);
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(cfg))).all().get(60, TimeUnit.SECONDS);
        Uuid id = topicId(admin, topic);
        String remoteDir = topic + "-" + id + "/0/";
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "rsm-e2e");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        List<byte[]> committed = new ArrayList<>();
        List<byte[]> all = new ArrayList<>();
        int aborted = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            producer.initTransactions();
            for (int t = 0; t < 60; t++) {
                producer.beginTransaction();
                List<byte[]> values = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    byte[] v = new byte[1000];
                    new Random(t * 1000L + i).nextBytes(v);
                    ByteBuffer.wrap(v).putInt(t).putInt(i);
                    values.add(v);
                    producer.send(new ProducerRecord<>(topic, 0, ("t" + t).getBytes(StandardCharsets.UTF_8), v));
                }
                all.addAll(values);
                if (t % 3 == 2) {
                    // Sent first: an abort drops what the producer still buffers, and these must be in the log.
                    producer.flush();
                    producer.abortTransaction();
                    aborted++;
                } else {
                    producer.commitTransaction();
                    committed.addAll(values);
                }
            }
        }
        long end = offset(admin, tp, OffsetSpec.latest());
        waitFor("transactional topic tiered", 240, () -> baseOffsets(broker.store, remoteDir, ".manifest").size() >= 4
                && offset(admin, tp, OffsetSpec.earliestLocal()) > end / 2);
        long earliestLocal = offset(admin, tp, OffsetSpec.earliestLocal());
        List<byte[]> readCommitted = consumeValues(broker, tp, "read_committed", end);
        List<byte[]> readUncommitted = consumeValues(broker, tp, "read_uncommitted", end);
        assertEquals(committed.size(), readCommitted.size(), "read_committed count");
        for (int i = 0; i < committed.size(); i++) {
            assertArrayEquals(committed.get(i), readCommitted.get(i), "committed record " + i);
        }
        assertEquals(all.size(), readUncommitted.size(), "read_uncommitted count");
        for (int i = 0; i < all.size(); i++) {
            assertArrayEquals(all.get(i), readUncommitted.get(i), "record " + i);
        }
        long txnIndexReads = count(broker.log(), "serving TRANSACTION index");
        summary.put("transactions", "60 (" + aborted + " aborted), " + all.size() + " records in "
                + baseOffsets(broker.store, remoteDir, ".manifest").size() + " remote segments (earliest local offset "
                + earliestLocal + "); read_committed returned the " + readCommitted.size()
                + " committed, read_uncommitted all " + readUncommitted.size() + "; " + txnIndexReads
                + " transaction-index reads served");
        assertTrue(txnIndexReads > 0, "the broker read transaction indexes from remote");
    }

    static String logOf(KafkaBroker broker) {
        try {
            return broker.log();
        } catch (IOException e) {
            return "";
        }
    }

    /**
     * The plugin's metrics, read over JMX from the broker's JVM, against the plugin's log lines since the
     * broker's restart ({@code since}): one set of metrics per operation, in the broker's registry for the
     * Monitorable install and in the plugin's own otherwise, counting what the log shows.
     */
    private void pluginMetrics(KafkaBroker broker, String since) throws IOException {
        boolean monitorable = broker.pluginClass.equals(KafkaBroker.MONITORABLE);
        Map<String, Map<String, Double>> beans = new TreeMap<>(broker.mbeans("kafka.server:type=plugins,*"));
        beans.putAll(broker.mbeans("io.rsm.kafka:*"));
        Map<String, Map<String, Double>> byOperation = new TreeMap<>();
        for (Map.Entry<String, Map<String, Double>> e : beans.entrySet()) {
            String op = e.getKey().replaceAll(".*[,:]operation=([a-z-]+).*", "$1");
            if (op.equals(e.getKey())) {
                continue;
            }
            assertTrue(e.getKey().startsWith(monitorable ? "kafka.server:" : "io.rsm.kafka:"),
                    "metrics of " + broker.pluginClass + " in " + e.getKey());
            assertNull(byOperation.put(op, e.getValue()), "two MBeans for " + op + ": " + beans.keySet());
        }
        assertEquals(Set.of("copy-segment", "fetch-segment", "fetch-index", "delete-segment"), byOperation.keySet(),
                beans.keySet().toString());
        Map<String, Double> copy = byOperation.get("copy-segment");
        Map<String, Double> fetch = byOperation.get("fetch-segment");
        Map<String, Double> index = byOperation.get("fetch-index");
        Map<String, Double> delete = byOperation.get("delete-segment");
        double copied = count(since, "io.rsm.native.rsm_jni - copied segment");
        double indexesServed = since.lines()
                .filter(l -> l.contains("io.rsm.native.rsm_jni - serving ") && l.contains(" index of segment "))
                .count();
        assertEquals(copied, copy.get("request-total") - copy.get("error-total"), "copies: " + copy);
        assertTrue(copy.get("byte-total") >= copied, "copy bytes: " + copy);
        assertEquals(count(since, "io.rsm.native.rsm_jni - serving segment"), fetch.get("request-total"), 0.0,
                "fetches: " + fetch);
        assertTrue(fetch.get("byte-total") > 0, "bytes read from remote: " + fetch);
        // The served ones log a line; a segment without transactions answers its TRANSACTION index with
        // not-found (counted as a request, not an error), which logs none.
        assertTrue(index.get("request-total") >= indexesServed, "index fetches: " + index);
        assertEquals(count(since, "io.rsm.native.rsm_jni - deleted segment"), delete.get("request-total"), 0.0,
                "deletes: " + delete);
        for (Map<String, Double> m : List.of(fetch, index, delete)) {
            assertEquals(0.0, m.get("error-total"), "errors: " + m);
        }
        summary.put("plugin metrics over JMX since the restart (" + (monitorable ? "broker's registry, KIP-877"
                : "plugin's own registry") + ")", String.format("copies %.0f (%.0f failed, %.1f MB), fetches %.0f "
                + "(%.1f MB read), index fetches %.0f, deletes %.0f; fetch latency avg %.1f ms, max %.1f ms",
                copy.get("request-total"), copy.get("error-total"), copy.get("byte-total") / 1e6,
                fetch.get("request-total"), fetch.get("byte-total") / 1e6, index.get("request-total"),
                delete.get("request-total"), fetch.get("request-latency-avg"), fetch.get("request-latency-max")));
    }

    static int localLogs(Path dir) {
        return baseOffsets(dir, ".log").size();
    }
}
