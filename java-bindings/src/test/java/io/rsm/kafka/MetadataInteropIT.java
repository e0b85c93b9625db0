package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

/**
 * Our metadata reader and {@code rsm audit} against a real broker's own metadata: the newest broker in
 * {@code rsm.brokers} tiers a topic through our plugin to a filesystem store, remote retention by size deletes
 * its oldest segments, then
 * <ul>
 *   <li>{@code rsm metadata} (our Kafka-topic reader, rskafka and our record codec) prints every record of
 *   {@code __remote_log_metadata} exactly as Kafka's own serde decodes it ({@link MetadataDump} in a JVM with
 *   the broker's class path);</li>
 *   <li>{@code rsm audit} finds nothing lost and no orphans; after one segment's log object is deleted and
 *   objects no metadata knows are added, it reports exactly those, and {@code --delete-orphans --yes} removes
 *   only the added ones.</li>
 * </ul>
 * The {@code rsm} binary comes from {@code rsm.cli} (tools/java-tests.sh builds it).
 */
class MetadataInteropIT {
    static final Path OUT = Paths.get(System.getProperty("rsm.e2e.out", "target/e2e"));

    static String run(List<String> cmd, int expectedExit) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
        byte[] out = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "finished: " + cmd);
        String text = new String(out, StandardCharsets.UTF_8);
        assertEquals(expectedExit, p.exitValue(), cmd + "\nstdout: " + text + "\nstderr: " + err);
        return text;
    }

    @Test
    void ourReaderAndAuditAgreeWithARealBrokersMetadata() throws Exception {
        String[] named = KafkaBroker.firstOfBrokersProperty();
        String version = named[0];
        String classpath = named[1];
        Path cli = Paths.get(System.getProperty("rsm.cli", "../target/debug/rsm"));
        assertTrue(Files.isExecutable(cli), "the rsm binary " + cli.toAbsolutePath() + " (system property rsm.cli)");
        Path jar = Paths.get(System.getProperty("rsm.plugin.jar"));
        Path work = OUT.resolve("metadata-interop-" + version);
        EndToEndSupport.deleteRecursively(work);
        Path storeDir = work.resolve("tiered-store");
        TestStore store = TestStore.filesystem(storeDir);
        String url = TestStore.fileUrl(storeDir);
        try (KafkaBroker broker = new KafkaBroker(version, classpath, work, jar, store, false)) {
            broker.format();
            broker.start();
            String topic = "audited";
            TopicPartition tp = new TopicPartition(topic, 0);
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()))) {
                Map<String, String> cfg = new HashMap<>();
                cfg.put("remote.storage.enable", "true");
                cfg.put("segment.bytes", String.valueOf(1 << 20)); // the least Kafka 4.4 allows
                cfg.put("local.retention.ms", "1000");
                // Remote retention by size: the oldest remote segments are deleted (delete started, finished).
                cfg.put("retention.bytes", String.valueOf(3 << 20));
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(cfg))).all()
                        .get(60, TimeUnit.SECONDS);
                Uuid topicId = EndToEndSupport.topicId(admin, topic);
                BrokerRecords.produce(broker, topic, "none", 30000, 0, new TreeMap<>(), 16384);
                String remoteDir = topic + "-" + topicId + "/0/";
                // Wait until copies are done and retention has deleted some: the log start moved past 0.
                EndToEndSupport.waitFor("segments tiered and the oldest deleted by retention", 240, () -> {
                    long tiered = EndToEndSupport.offset(admin, tp, OffsetSpec.latestTiered());
                    long earliest = EndToEndSupport.offset(admin, tp, OffsetSpec.earliest());
                    long local = EndToEndSupport.offset(admin, tp, OffsetSpec.earliestLocal());
                    return tiered > 0 && earliest > 0 && tiered >= local - 1;
                });
                // Let in-flight deletions settle: the set of remote manifests stays the same for 3 s.
                List<Long> before = new ArrayList<>();
                EndToEndSupport.waitFor("the store settles", 120, () -> {
                    List<Long> now = EndToEndSupport.baseOffsets(store, remoteDir, ".manifest");
                    boolean same = now.equals(before);
                    before.clear();
                    before.addAll(now);
                    EndToEndSupport.sleep(3000);
                    return same && !now.isEmpty();
                });

                // A deleted topic: the broker deletes its remote segments (delete started, then finished, for each).
                // Kafka 4.4 writes no partition delete records for it (seen here); tests/kafka_records.rs has
                // those, as Kafka's serde writes them.
                String doomed = "audited-doomed";
                Map<String, String> cfg2 = new HashMap<>(cfg);
                cfg2.remove("retention.bytes");
                admin.createTopics(List.of(new NewTopic(doomed, 1, (short) 1).configs(cfg2))).all()
                        .get(60, TimeUnit.SECONDS);
                String doomedDir = doomed + "-" + EndToEndSupport.topicId(admin, doomed) + "/0/";
                BrokerRecords.produce(broker, doomed, "none", 8000, 0, new TreeMap<>(), 16384);
                EndToEndSupport.waitFor("the doomed topic tiered", 180,
                        () -> !EndToEndSupport.baseOffsets(store, doomedDir, ".manifest").isEmpty());
                admin.deleteTopics(List.of(doomed)).all().get(60, TimeUnit.SECONDS);
                EndToEndSupport.waitFor("the deleted topic's remote data removed", 180,
                        () -> store.keysUnder(doomedDir).isEmpty());

                // 1. Our reader and Kafka's serde read the same records the same way.
                Path kafkaDump = work.resolve("metadata-kafka.txt");
                run(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                        classpath + java.io.File.pathSeparator + Paths.get("target/test-classes").toAbsolutePath(),
                        MetadataDump.class.getName(), broker.bootstrap(), "__remote_log_metadata",
                        kafkaDump.toString()), 0);
                String ours = run(List.of(cli.toString(), "metadata", "--bootstrap-server", broker.bootstrap()), 0);
                Files.writeString(work.resolve("metadata-rsm.txt"), ours);
                List<String> kafkaLines = Files.readAllLines(kafkaDump);
                List<String> ourLines = ours.lines().sorted().collect(Collectors.toList());
                assertEquals(kafkaLines, ourLines, "rsm metadata and Kafka's serde (files in " + work + ")");
                long segments = kafkaLines.stream().filter(l -> l.contains(" segment ")).count();
                long deletes = kafkaLines.stream().filter(l -> l.contains("state=DELETE_SEGMENT_FINISHED")).count();
                long doomedDeletes = kafkaLines.stream()
                        .filter(l -> l.contains(":" + doomed + "-0 ") && l.contains("state=DELETE_SEGMENT_FINISHED"))
                        .count();
                assertTrue(segments >= 8 && deletes >= 1 && doomedDeletes >= 1, "records of every kind: " + segments
                        + " segments, " + deletes + " deletes finished (" + doomedDeletes + " of the deleted topic)");

                // 2. A clean store: nothing lost, no orphans.
                List<String> audit = List.of(cli.toString(), "audit", "--bootstrap-server", broker.bootstrap(),
                        "--store", url, "--topic", topic, "--min-age", "0s");
                String clean = run(audit, 0);
                assertTrue(clean.contains(" 0 lost, 0 orphans, 0 stuck"), clean);

                // 3. Lose one copied segment's log object; add two objects no metadata knows.
                Path partitionDir = storeDir.resolve(remoteDir);
                List<Path> logs;
                try (Stream<Path> s = Files.list(partitionDir)) {
                    logs = s.filter(p -> p.toString().endsWith(".log")).sorted().collect(Collectors.toList());
                }
                Path lost = logs.get(logs.size() / 2);
                String lostId = lost.getFileName().toString().substring(21, 43);
                Files.delete(lost);
                String stray = Uuid.randomUuid().toString();
                List<Path> strays = List.of(partitionDir.resolve(String.format("%020d-%s.log", 987654, stray)),
                        partitionDir.resolve(String.format("%020d-%s.indexes", 987654, stray)));
                for (Path s : strays) {
                    Files.write(s, new byte[1000]);
                }
                List<String> json = new ArrayList<>(audit);
                json.add("--json");
                String report = run(json, 1);
                assertTrue(report.contains("\"lost\": 1,") && report.contains("\"orphans\": 2,")
                        && report.contains("\"orphan_bytes\": 2000"), report);
                assertTrue(report.contains("\"segment_id\": \"" + lostId + "\""), report);

                // 4. --delete-orphans --yes removes exactly the two added objects.
                long objects;
                try (Stream<Path> s = Files.walk(storeDir)) {
                    objects = s.filter(Files::isRegularFile).count();
                }
                List<String> delete = new ArrayList<>(audit);
                delete.addAll(List.of("--delete-orphans", "--yes"));
                String deleted = run(delete, 1);
                assertTrue(deleted.contains("2 deleted"), deleted);
                assertTrue(strays.stream().noneMatch(Files::exists), "the added objects are gone");
                try (Stream<Path> s = Files.walk(storeDir)) {
                    assertEquals(objects - 2, s.filter(Files::isRegularFile).count(), "nothing else was deleted");
                }
                EndToEndSupport.log("metadata interop on Kafka " + version + ": " + kafkaLines.size()
                        + " records read alike; audit found the lost segment " + lostId + " and 2 orphans");
            }
        }
    }
}
