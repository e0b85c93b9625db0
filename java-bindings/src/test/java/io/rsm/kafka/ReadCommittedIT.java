package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;

/**
 * {@code rsm read --isolation read_committed} (and read_uncommitted) against a real broker's consumer: the
 * newest broker in {@code rsm.brokers} tiers, through our plugin to a filesystem store, one partition written
 * by two transactional producers (transactions committed and aborted, interleaved) and two plain ones, with
 * zstd, lz4, gzip and snappy batches, keys (some null, empty or not UTF-8), values (some null, text or binary)
 * and headers (some with null or binary values). Once every closed segment is remote and gone locally, a
 * KafkaConsumer reads the partition from offset 0 under each isolation level (the broker serves the old data
 * through our plugin), and {@code rsm read} must print exactly the consumer's records (offset, timestamp, key,
 * value, headers) below the remote log end, under each isolation level. The consumer's records are checked
 * against what was produced too. The {@code rsm} binary comes from {@code rsm.cli} (tools/java-tests.sh builds
 * it); the files of a run (broker log, the CLI's outputs, both sides' records) are in
 * {@code rsm.e2e.out}/read-committed-VERSION.
 */
class ReadCommittedIT {
    static final Path OUT = Paths.get(System.getProperty("rsm.e2e.out", "target/e2e"));
    /** The least segment.bytes Kafka 4.4 allows. */
    static final int SEGMENT_BYTES = 1 << 20;
    /** Records written before the tail, spread over transactions and plain batches. */
    static final int MAIN_RECORDS = 6000;
    /**
     * Plain records written after the last transaction ends: more than a segment, so every transaction marker
     * is in a closed (so tiered) segment and the remote data alone says how each transaction ended.
     */
    static final int TAIL_RECORDS = 1300;

    @Test
    void rsmReadAgreesWithTheConsumerUnderBothIsolationLevels() throws Exception {
        long started = System.nanoTime();
        String[] named = KafkaBroker.firstOfBrokersProperty();
        String version = named[0];
        String classpath = named[1];
        Path cli = Paths.get(System.getProperty("rsm.cli", "../target/debug/rsm"));
        assertTrue(Files.isExecutable(cli), "the rsm binary " + cli.toAbsolutePath() + " (system property rsm.cli)");
        Path jar = Paths.get(System.getProperty("rsm.plugin.jar"));
        assertTrue(Files.isRegularFile(jar), "plugin jar " + jar);
        Path work = OUT.resolve("read-committed-" + version);
        EndToEndSupport.deleteRecursively(work);
        Path storeDir = work.resolve("tiered-store");
        TestStore store = TestStore.filesystem(storeDir);
        String url = TestStore.fileUrl(storeDir);
        Map<String, String> summary = new LinkedHashMap<>();
        try (KafkaBroker broker = new KafkaBroker(version, classpath, work, jar, store, false)) {
            broker.format();
            broker.start();
            summary.put("broker", "Kafka " + version + " up after " + EndToEndSupport.ms(started) + " ms");
            String topic = "txn-read";
            TopicPartition tp = new TopicPartition(topic, 0);
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()))) {
                Map<String, String> cfg = new HashMap<>();
                cfg.put("remote.storage.enable", "true");
                cfg.put("segment.bytes", String.valueOf(SEGMENT_BYTES));
                cfg.put("local.retention.ms", "1000");
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(cfg))).all()
                        .get(60, TimeUnit.SECONDS);
                Uuid topicId = EndToEndSupport.topicId(admin, topic);
                String remoteDir = topic + "-" + topicId + "/0/";

                // 1. Two transactional producers and two plain ones, interleaved.
                long t = System.nanoTime();
                List<RecordAsRead> committed = new ArrayList<>();
                List<RecordAsRead> all = new ArrayList<>();
                Random random = new Random(42);
                int[] seq = {0};
                try (RecordingProducer a = new RecordingProducer(broker, "txn-a", "zstd", "rsm-read-committed-a");
                     RecordingProducer b = new RecordingProducer(broker, "txn-b", "lz4", "rsm-read-committed-b");
                     RecordingProducer plain = new RecordingProducer(broker, "plain-gzip", "gzip", null);
                     RecordingProducer plain2 = new RecordingProducer(broker, "plain-snappy", "snappy", null)) {
                    while (seq[0] < MAIN_RECORDS) {
                        a.send(topic, random, seq, 5 + random.nextInt(50), committed, all);
                        b.send(topic, random, seq, 5 + random.nextInt(40), committed, all);
                        plain.send(topic, random, seq, random.nextInt(15), committed, all);
                        if (random.nextInt(2) == 0) {
                            a.end(random.nextInt(3) != 0, committed, all);
                        }
                        plain2.send(topic, random, seq, random.nextInt(8), committed, all);
                        if (random.nextInt(5) < 2) {
                            b.end(random.nextInt(2) == 0, committed, all);
                        }
                    }
                    a.end(true, committed, all);
                    b.end(false, committed, all);
                    plain.send(topic, random, seq, TAIL_RECORDS, committed, all);
                    assertTrue(a.aborted > 0 && b.aborted > 0 && a.committed > 0 && b.committed > 0,
                            "both producers committed and aborted: " + a.committed + "/" + a.aborted + ", "
                                    + b.committed + "/" + b.aborted);
                    summary.put("produced", all.size() + " records (" + committed.size() + " committed or plain) in "
                            + EndToEndSupport.ms(t) + " ms; txn-a (zstd) " + a.committed + " transactions committed, "
                            + a.aborted + " aborted; txn-b (lz4) " + b.committed + " committed, " + b.aborted
                            + " aborted; plain gzip and snappy producers in between");
                }
                all.sort((x, y) -> Long.compare(x.offset, y.offset));
                committed.sort((x, y) -> Long.compare(x.offset, y.offset));
                EndToEndSupport.log("read-committed: " + summary.get("produced"));

                // 2. Every closed segment tiered and deleted locally: the one local segment is the active one.
                t = System.nanoTime();
                Path localDir = broker.logDir.resolve(topic + "-0");
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                String state = "";
                while (true) {
                    List<Long> local = EndToEndSupport.baseOffsets(localDir, ".log");
                    long tiered = EndToEndSupport.offset(admin, tp, OffsetSpec.latestTiered());
                    long earliestLocal = EndToEndSupport.offset(admin, tp, OffsetSpec.earliestLocal());
                    List<Long> remote = EndToEndSupport.baseOffsets(store, remoteDir, ".manifest");
                    state = "local segments " + local + ", earliest local offset " + earliestLocal
                            + ", latest tiered offset " + tiered + ", remote segments " + remote;
                    if (local.size() == 1 && local.get(0) > 0 && earliestLocal == local.get(0)
                            && tiered == local.get(0) - 1 && remote.size() >= 5) {
                        break;
                    }
                    if (System.nanoTime() > deadline) {
                        fail("timed out after 120 s waiting for >= 5 segments tiered and every closed segment "
                                + "deleted locally; last seen: " + state + " (broker log " + broker.brokerLog + ")");
                    }
                    Thread.sleep(200);
                }
                long remoteEnd = EndToEndSupport.offset(admin, tp, OffsetSpec.latestTiered()) + 1;
                long earliestLocal = EndToEndSupport.offset(admin, tp, OffsetSpec.earliestLocal());
                long end = EndToEndSupport.offset(admin, tp, OffsetSpec.latest());
                int remoteSegments = EndToEndSupport.baseOffsets(store, remoteDir, ".manifest").size();
                summary.put("tiered", state + " after " + EndToEndSupport.ms(t) + " ms; log end " + end);
                EndToEndSupport.log("read-committed: " + summary.get("tiered"));

                // 3. The consumer from offset 0, served from remote storage through our plugin.
                Map<String, List<RecordAsRead>> consumed = new TreeMap<>();
                for (String isolation : List.of("read_committed", "read_uncommitted")) {
                    t = System.nanoTime();
                    long servedBefore = EndToEndSupport.count(broker.log(), "io.rsm.native.rsm_jni - serving segment");
                    List<RecordAsRead> got = consume(broker, tp, isolation, end);
                    long served = EndToEndSupport.count(broker.log(), "io.rsm.native.rsm_jni - serving segment")
                            - servedBefore;
                    write(work.resolve("consumer-" + isolation + ".txt"), got);
                    assertTrue(!got.isEmpty() && got.get(0).offset < earliestLocal, isolation
                            + ": the consumer read records below the earliest local offset " + earliestLocal);
                    assertTrue(served > 0, isolation + ": the broker served the consumer from remote storage "
                            + "(plugin 'serving segment' lines: " + served + ")");
                    consumed.put(isolation, got);
                    summary.put("consumer " + isolation, got.size() + " records (" + got.stream()
                            .filter(r -> r.offset < remoteEnd).count() + " below the remote log end " + remoteEnd
                            + ") in " + EndToEndSupport.ms(t) + " ms; " + served + " remote segment reads served");
                }
                // The broker's answers are what was produced.
                compare("the consumer (read_committed) and the committed and plain records produced", committed,
                        consumed.get("read_committed"), work);
                compare("the consumer (read_uncommitted) and every record produced", all,
                        consumed.get("read_uncommitted"), work);

                // 4. rsm read over the broker's own partition directory (it names the partition; a read-only
                // command takes a directory a broker holds) and the broker's metadata topic, with no setting of
                // the broker's repeated: it must print the consumer's records below the remote log end.
                Path partitionDir = localDir;
                Map<String, List<RecordAsRead>> read = new TreeMap<>();
                for (String isolation : List.of("read_committed", "read_uncommitted")) {
                    t = System.nanoTime();
                    Path out = work.resolve("rsm-read-" + isolation + ".jsonl");
                    Path err = work.resolve("rsm-read-" + isolation + ".stderr");
                    List<String> cmd = List.of(cli.toString(), "read", partitionDir.toString(), "--offset", "0",
                            "--isolation", isolation, "--max-records", "100000000", "--json", "--store", url,
                            "--bootstrap-server", broker.bootstrap(), "--metadata-dir",
                            work.resolve("rsm-state-" + isolation).toString());
                    Files.writeString(work.resolve("rsm-read-" + isolation + ".cmd"), String.join(" ", cmd) + "\n");
                    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
                    if (!p.waitFor(120, TimeUnit.SECONDS)) {
                        p.destroyForcibly();
                        fail("rsm read " + isolation + " did not finish in 120 s (output in " + out + ", " + err + ")");
                    }
                    assertEquals(0, p.exitValue(), "rsm read " + isolation + " exit status; stderr: "
                            + Files.readString(err));
                    List<RecordAsRead> got = new ArrayList<>();
                    int lineNo = 0;
                    for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
                        lineNo++;
                        if (line.isBlank()) {
                            continue;
                        }
                        try {
                            got.add(parse(line));
                        } catch (RuntimeException e) {
                            throw new AssertionError("rsm read " + isolation + ", line " + lineNo + " of " + out
                                    + ": " + e.getMessage() + ": " + abbreviate(line), e);
                        }
                    }
                    write(work.resolve("rsm-read-" + isolation + ".txt"), got);
                    read.put(isolation, got);
                    summary.put("rsm read " + isolation, got.size() + " records in " + EndToEndSupport.ms(t) + " ms");
                }
                StringBuilder failures = new StringBuilder();
                for (String isolation : List.of("read_committed", "read_uncommitted")) {
                    List<RecordAsRead> expected = consumed.get(isolation).stream().filter(r -> r.offset < remoteEnd)
                            .collect(Collectors.toList());
                    String diff = diff(expected, read.get(isolation));
                    if (!diff.isEmpty()) {
                        failures.append("rsm read --isolation ").append(isolation).append(" and the consumer ("
                                + isolation + ") below the remote log end ").append(remoteEnd).append(" differ (")
                                .append(read.get(isolation).size()).append(" vs ").append(expected.size())
                                .append(" records; files in ").append(work).append("):\n").append(diff);
                    }
                }
                summary.put("remote", remoteSegments + " segments, offsets [0, " + remoteEnd + "); earliest local "
                        + earliestLocal + "; " + all.stream().filter(r -> r.offset < remoteEnd).count()
                        + " produced records remote, " + committed.stream().filter(r -> r.offset < remoteEnd).count()
                        + " of them committed or plain");
                summary.put("agreement", failures.length() == 0 ? "rsm read and the consumer agree record by record "
                        + "under both isolation levels" : "DIFFERENT (see the test's failure)");
                summary.put("time", EndToEndSupport.ms(started) + " ms in all");
                StringBuilder sb = new StringBuilder();
                summary.forEach((k, v) -> sb.append(k).append(": ").append(v).append('\n'));
                Files.writeString(work.resolve("summary.txt"), sb.toString());
                System.out.println("--- summary rsm read --isolation on Kafka " + version + "\n" + sb);
                if (failures.length() > 0) {
                    Files.writeString(work.resolve("differences.txt"), failures.toString());
                    fail(failures.toString());
                }
                assertTrue(read.get("read_committed").size() < read.get("read_uncommitted").size(),
                        "rsm read: read_committed (" + read.get("read_committed").size()
                                + ") strictly fewer than read_uncommitted (" + read.get("read_uncommitted").size()
                                + "): aborted records are remote");
                assertTrue(remoteSegments >= 5, "at least 5 remote segments: " + remoteSegments);
                // A read changes nothing on the cluster: no topic of the engine's own was created.
                java.util.Set<String> topics = admin.listTopics().names().get(60, TimeUnit.SECONDS);
                assertTrue(!topics.contains("__remote_segments_to_be_deleted"),
                        "rsm read created the failed-deletions topic: " + topics);
            }
        }
    }

    /** Every record of [0, end) the consumer returns under {@code isolation}, in offset order. */
    static List<RecordAsRead> consume(KafkaBroker broker, TopicPartition tp, String isolation, long end) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        List<RecordAsRead> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (c.position(tp) < end) {
                if (System.nanoTime() > deadline) {
                    fail(isolation + " consumer stalled at offset " + c.position(tp) + " of " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    out.add(RecordAsRead.of(r));
                }
            }
        }
        return out;
    }

    static void compare(String what, List<RecordAsRead> expected, List<RecordAsRead> got, Path work) {
        String diff = diff(expected, got);
        if (!diff.isEmpty()) {
            fail(what + " differ (" + got.size() + " vs " + expected.size() + " records; files in " + work + "):\n"
                    + diff);
        }
    }

    /** The differences between two offset-ordered record lists, the first few of each kind; empty if none. */
    static String diff(List<RecordAsRead> expected, List<RecordAsRead> got) {
        Map<Long, RecordAsRead> want = new TreeMap<>();
        expected.forEach(r -> want.put(r.offset, r));
        Map<Long, RecordAsRead> have = new TreeMap<>();
        List<String> duplicates = new ArrayList<>();
        for (RecordAsRead r : got) {
            if (have.put(r.offset, r) != null) {
                duplicates.add(String.valueOf(r.offset));
            }
        }
        List<String> missing = new ArrayList<>();
        List<String> extra = new ArrayList<>();
        List<String> different = new ArrayList<>();
        for (RecordAsRead r : want.values()) {
            RecordAsRead h = have.get(r.offset);
            if (h == null) {
                missing.add(r.line());
            } else if (!h.sameAs(r)) {
                different.add("expected " + r.line() + "\n      got " + h.line());
            }
        }
        for (RecordAsRead h : have.values()) {
            if (!want.containsKey(h.offset)) {
                extra.add(h.line());
            }
        }
        boolean ordered = true;
        for (int i = 1; i < got.size(); i++) {
            ordered &= got.get(i - 1).offset < got.get(i).offset;
        }
        StringBuilder sb = new StringBuilder();
        section(sb, "missing", missing);
        section(sb, "unexpected", extra);
        section(sb, "different", different);
        section(sb, "duplicate offsets", duplicates);
        if (!ordered) {
            sb.append("  not in offset order\n");
        }
        return sb.toString();
    }

    static void section(StringBuilder sb, String what, List<String> lines) {
        if (lines.isEmpty()) {
            return;
        }
        sb.append("  ").append(lines.size()).append(' ').append(what).append(" records, the first:\n");
        lines.stream().limit(8).forEach(l -> sb.append("    ").append(l).append('\n'));
    }

    static void write(Path file, List<RecordAsRead> records) throws IOException {
        Files.write(file, records.stream().map(RecordAsRead::line).collect(Collectors.toList()),
                StandardCharsets.UTF_8);
    }

    static String abbreviate(String s) {
        return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }

    /** One line of {@code rsm read --json}. */
    static RecordAsRead parse(String line) {
        Object parsed = new JsonReader(line).document();
        if (!(parsed instanceof Map)) {
            throw new IllegalArgumentException("not an object");
        }
        Map<?, ?> o = (Map<?, ?>) parsed;
        List<String> headerKeys = new ArrayList<>();
        List<byte[]> headerValues = new ArrayList<>();
        Object headers = field(o, "headers");
        if (!(headers instanceof List)) {
            throw new IllegalArgumentException("headers is not an array: " + headers);
        }
        for (Object h : (List<?>) headers) {
            if (!(h instanceof Map)) {
                throw new IllegalArgumentException("a header is not an object: " + h);
            }
            Map<?, ?> hm = (Map<?, ?>) h;
            headerKeys.add((String) field(hm, "key"));
            headerValues.add(bytes(hm, "value"));
        }
        return new RecordAsRead(((Number) field(o, "offset")).longValue(), ((Number) field(o, "timestamp")).longValue(),
                (String) field(o, "timestamp_type"), bytes(o, "key"), bytes(o, "value"), headerKeys, headerValues);
    }

    static Object field(Map<?, ?> o, String name) {
        if (!o.containsKey(name)) {
            throw new IllegalArgumentException("no field " + name);
        }
        return o.get(name);
    }

    /** A bytes field: null, UTF-8 text, or standard base64 when {@code NAME_base64} is true. */
    static byte[] bytes(Map<?, ?> o, String name) {
        Object v = field(o, name);
        Object flag = o.get(name + "_base64");
        if (v == null) {
            return null;
        }
        if (!(v instanceof String)) {
            throw new IllegalArgumentException(name + " is not a string: " + v);
        }
        if (Boolean.TRUE.equals(flag)) {
            return Base64.getDecoder().decode((String) v);
        }
        return ((String) v).getBytes(StandardCharsets.UTF_8);
    }
}
