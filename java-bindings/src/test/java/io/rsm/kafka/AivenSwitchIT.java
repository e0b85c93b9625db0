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
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;

/**
 * A switch from Aiven's plugin on a real broker (the newest in {@code rsm.brokers}): a topic tiers through our
 * plugin, then, broker stopped, every remote segment is rewritten in the store as Aiven's plugin would have
 * stored it (compressed and encrypted under an RSA key pair, under another key prefix; the fixture maker
 * {@code facade/examples/aiven_fixture.rs}, path in {@code rsm.aiven.fixture}), so the store and the metadata
 * topic are what a cluster that tiered with Aiven's plugin has. The broker restarts with
 * {@code aiven.read.enabled}, and
 * <ul>
 *   <li>a consumer reads every old offset from remote storage, each record as produced;</li>
 *   <li>{@code rsm audit} finds nothing lost and no orphans;</li>
 *   <li>new segments are copied in our format;</li>
 *   <li>retention deletes old and new segments alike, and the audit still finds nothing lost and no orphans.</li>
 * </ul>
 */
class AivenSwitchIT {
    static final Path OUT = Paths.get(System.getProperty("rsm.e2e.out", "target/e2e"));
    static final String AIVEN_PREFIX = "aiven-old/";

    @Test
    void everyOldOffsetStaysReadableAfterTheSwitch() throws Exception {
        String[] named = KafkaBroker.firstOfBrokersProperty();
        String version = named[0];
        Path cli = Paths.get(System.getProperty("rsm.cli", "../target/debug/rsm"));
        assertTrue(Files.isExecutable(cli), "the rsm binary " + cli.toAbsolutePath() + " (system property rsm.cli)");
        Path fixture = Paths.get(System.getProperty("rsm.aiven.fixture", "../target/debug/examples/aiven_fixture"));
        assertTrue(Files.isExecutable(fixture), "the fixture maker " + fixture.toAbsolutePath()
                + " (system property rsm.aiven.fixture)");
        Path key = Paths.get("../tests/data/aiven/key1-private.pem").toAbsolutePath();
        assertTrue(Files.exists(key), key.toString());
        Path work = OUT.resolve("aiven-switch-" + version);
        EndToEndSupport.deleteRecursively(work);
        Path storeDir = work.resolve("tiered-store");
        TestStore store = TestStore.filesystem(storeDir);
        String url = TestStore.fileUrl(storeDir);
        Path jar = Paths.get(System.getProperty("rsm.plugin.jar"));
        String topic = "switched";
        TopicPartition tp = new TopicPartition(topic, 0);
        TreeMap<Long, ExpectedRecord> expected = new TreeMap<>();
        try (KafkaBroker broker = new KafkaBroker(version, named[1], work, jar, store, false)) {
            broker.format();
            broker.start();
            String remoteDir;
            long oldEnd;
            try (Admin admin = admin(broker)) {
                Map<String, String> cfg = new HashMap<>();
                cfg.put("remote.storage.enable", "true");
                cfg.put("segment.bytes", String.valueOf(1 << 20));
                cfg.put("local.retention.ms", "1000");
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(cfg))).all()
                        .get(60, TimeUnit.SECONDS);
                remoteDir = topic + "-" + EndToEndSupport.topicId(admin, topic) + "/0/";
                BrokerRecords.produce(broker, topic, "none", 12000, 0, expected, 16384);
                String dir = topic + "-" + EndToEndSupport.topicId(admin, topic) + "/0/";
                EndToEndSupport.waitFor("five segments tiered and deleted locally", 240, () -> {
                    long tiered = EndToEndSupport.offset(admin, tp, OffsetSpec.latestTiered());
                    long local = EndToEndSupport.offset(admin, tp, OffsetSpec.earliestLocal());
                    return EndToEndSupport.baseOffsets(store, dir, ".manifest").size() >= 5 && local > 0
                            && tiered >= local - 1;
                });
                oldEnd = EndToEndSupport.offset(admin, tp, OffsetSpec.earliestLocal());
            }
            broker.stop();

            // The store as Aiven's plugin would have left it: nothing of ours, every segment Aiven's.
            List<Long> ours = EndToEndSupport.baseOffsets(store, remoteDir, ".manifest");
            assertTrue(ours.size() >= 5, "segments tiered: " + ours);
            String made = MetadataInteropIT.run(List.of(fixture.toString(), url, AIVEN_PREFIX, key.toString()), 0);
            assertTrue(made.contains(ours.size() + " segments rewritten as Aiven's"), made);
            assertEquals(List.of(), EndToEndSupport.baseOffsets(store, remoteDir, ".manifest"));
            assertEquals(ours, EndToEndSupport.baseOffsets(store, AIVEN_PREFIX + remoteDir, ".rsm-manifest"));

            broker.set("rsm.config.aiven.read.enabled", "true");
            broker.set("rsm.config.aiven.key.prefix", AIVEN_PREFIX);
            broker.set("rsm.config.aiven.encryption.key.pairs", "key1");
            broker.set("rsm.config.aiven.encryption.key.pairs.key1.private.key.file", key.toString());
            broker.start();
            // The default safety age (an hour): a copy or a deletion the broker is running while the audit reads
            // is in progress, not stuck.
            List<String> audit = new ArrayList<>(List.of(cli.toString(), "audit", "--bootstrap-server",
                    broker.bootstrap(), "--topic", topic));
            audit.addAll(store.cliArgs());
            audit.addAll(List.of("--set", "aiven.read.enabled=true", "--set", "aiven.key.prefix=" + AIVEN_PREFIX,
                    "--set", "aiven.encryption.key.pairs=key1",
                    "--set", "aiven.encryption.key.pairs.key1.private.key.file=" + key));
            try (Admin admin = admin(broker)) {
                // Local retention goes on over Aiven's segments (the broker checks they are remote through our
                // plugin's metadata); then every offset below the local log start is in them only.
                long lastBase = ours.get(ours.size() - 1);
                EndToEndSupport.waitFor("the local copies of Aiven's segments deleted", 120,
                        () -> EndToEndSupport.offset(admin, tp, OffsetSpec.earliestLocal()) > lastBase);
                long remoteEnd = EndToEndSupport.offset(admin, tp, OffsetSpec.earliestLocal());
                assertTrue(remoteEnd >= oldEnd, "local log start " + remoteEnd);
                int read = BrokerRecords.consumeAndCompare(broker, tp, 0, remoteEnd, expected);
                assertEquals(remoteEnd, read, "every old offset read from Aiven's segments");
                String clean = MetadataInteropIT.run(audit, 0);
                assertTrue(clean.contains(" 0 lost, 0 orphans, 0 stuck"), clean);

                // New copies are ours.
                BrokerRecords.produce(broker, topic, "none", 6000, 12000, expected, 16384);
                EndToEndSupport.waitFor("new segments copied in our format", 240,
                        () -> !EndToEndSupport.baseOffsets(store, remoteDir, ".manifest").isEmpty());
                long end = EndToEndSupport.offset(admin, tp, OffsetSpec.latest());
                assertEquals(end, BrokerRecords.consumeAndCompare(broker, tp, 0, end, expected));
                String mixed = MetadataInteropIT.run(audit, 0);
                assertTrue(mixed.contains(" 0 lost, 0 orphans, 0 stuck"), mixed);

                // Retention deletes old and new alike.
                ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                        new ConfigEntry("retention.ms", "1000"), AlterConfigOp.OpType.SET)))).all()
                        .get(60, TimeUnit.SECONDS);
                EndToEndSupport.waitFor("retention deletes every remote segment of both formats", 240,
                        () -> store.keysUnder(AIVEN_PREFIX + remoteDir).isEmpty()
                                && EndToEndSupport.baseOffsets(store, remoteDir, ".manifest").isEmpty()
                                && EndToEndSupport.offset(admin, tp, OffsetSpec.earliest()) > remoteEnd);
                String after = MetadataInteropIT.run(audit, 0);
                assertTrue(after.contains(" 0 lost, 0 orphans, 0 stuck"), after);
                Files.writeString(work.resolve("summary.txt"), "old offsets read from " + ours.size()
                        + " Aiven segments: " + read + "\naudits:\n" + clean
                        + mixed + after, StandardCharsets.UTF_8);
            }
        }
    }

    private static Admin admin(KafkaBroker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()));
    }
}
