package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Legacy message sets (magic 0 and 1, plain and compressed wrappers, and a segment mixing v0, v1 and v2) that
 * kafka-python wrote ({@code tools/legacy-segments.py}, kept in {@code rsm-core/tests/data/legacy}), copied
 * through the plugin and fetched back: the bytes are the source's, and Kafka's own DumpLogSegments (of the
 * newest broker in {@code rsm.brokers} whose class path has it: 4.0.0 here, not 4.4.0) reads every batch of
 * the fetched file as kafka-python does: offsets, record count, position, size, magic, timestamp and a valid
 * CRC.
 */
class LegacyFormatsIT {
    static final Path DATA = Paths.get(System.getProperty("rsm.legacy.data", "../rsm-core/tests/data/legacy"));
    static final String[] CASES = {"v0-none", "v0-gzip", "v0-snappy", "v0-lz4", "v1-none", "v1-gzip", "v1-snappy",
            "v1-lz4", "v1-gzip-log-append-time", "mixed-v0-v1-v2"};
    /**
     * One batch line of DumpLogSegments (without deep iteration): a v2 batch gives its first and last offset
     * and count, a legacy message (a wrapper too) only its own offset, which is its last.
     */
    static final Pattern BATCH = Pattern.compile("(?:baseOffset: (-?\\d+) lastOffset: |offset: )(-?\\d+)"
            + "(?: count: (\\d+))?.*? position: (\\d+) (?:CreateTime|LogAppendTime|NoTimestampType): (-?\\d+) "
            + "size: (\\d+) magic: (\\d) compresscodec: \\w+ crc: \\d+ isvalid: (\\w+)");

    @TempDir
    Path dir;

    /** position size magic offset_field first_offset last_offset records max_timestamp compression. */
    static List<long[]> expected(String name) throws Exception {
        List<long[]> out = new ArrayList<>();
        for (String line : Files.readAllLines(DATA.resolve(name + ".batches"))) {
            if (!line.startsWith("#")) {
                out.add(java.util.Arrays.stream(line.split(" ")).mapToLong(Long::parseLong).toArray());
            }
        }
        return out;
    }

    static boolean hasDumpLogSegments(String classpath) throws Exception {
        for (String entry : classpath.split(java.io.File.pathSeparator)) {
            if (entry.endsWith(".jar") && Files.isRegularFile(Paths.get(entry))) {
                try (java.util.jar.JarFile jar = new java.util.jar.JarFile(entry)) {
                    if (jar.getEntry("kafka/tools/DumpLogSegments.class") != null) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    @Test
    void kafkaReadsWhatThePluginServesAsKafkaPythonWroteIt() throws Exception {
        String spec = System.getProperty("rsm.brokers", "").trim();
        Assumptions.assumeFalse(spec.isEmpty(), "no broker class path given (rsm.brokers)");
        // The newest broker whose class path holds kafka.tools.DumpLogSegments (the 4.4 broker's does not).
        String classpath = null;
        for (String pair : spec.split(",")) {
            String cp = Files.readString(Paths.get(pair.trim().split("=", 2)[1])).trim();
            if (hasDumpLogSegments(cp)) {
                classpath = cp;
                break;
            }
        }
        assertTrue(classpath != null, "no broker of " + spec + " has kafka.tools.DumpLogSegments");

        Map<String, Object> settings = new HashMap<>();
        settings.put("store.url", TestStore.fileUrl(dir.resolve("store")));
        settings.put("chunk.size", "65536");
        RustRemoteStorageManager rsm = new RustRemoteStorageManager();
        rsm.configure(settings);
        TopicIdPartition tp = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("legacy", 0));
        Path fetched = Files.createDirectories(dir.resolve("fetched"));
        List<String> files = new ArrayList<>();
        try {
            for (String name : CASES) {
                List<long[]> batches = expected(name);
                long first = batches.get(0)[4];
                long last = batches.get(batches.size() - 1)[5];
                long maxTs = batches.stream().mapToLong(b -> b[7]).max().getAsLong();
                Path snapshot = Files.write(dir.resolve(name + ".snapshot"), new byte[0]);
                TestSegments.Segment seg = new TestSegments.Segment(first, last, maxTs, DATA.resolve(name + ".log"),
                        DATA.resolve(name + ".index"), DATA.resolve(name + ".timeindex"), snapshot, Optional.empty(),
                        ("0\n1\n0 " + first + "\n").getBytes(StandardCharsets.UTF_8), List.of());
                RemoteLogSegmentMetadata md = seg.metadata(tp);
                rsm.copyLogSegmentData(md, seg.data());
                byte[] back;
                try (InputStream in = rsm.fetchLogSegment(md, 0)) {
                    back = in.readAllBytes();
                }
                assertArrayEquals(Files.readAllBytes(seg.log), back, name + ": the fetched segment is the source");
                // One directory per case: DumpLogSegments takes the base offset from the file name.
                Path out = Files.createDirectories(fetched.resolve(name)).resolve(String.format("%020d.log", first));
                Files.write(out, back);
                files.add(out.toString());
            }
        } finally {
            rsm.close();
        }

        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                classpath, "kafka.tools.DumpLogSegments", "--files", String.join(",", files))
                .redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "DumpLogSegments finished");
        assertEquals(0, p.exitValue(), output);
        Files.writeString(dir.resolve("dump.txt"), output);

        // The output lists each file under "Dumping <file>".
        String[] parts = output.split("Dumping ");
        int checked = 0;
        for (int i = 0; i < CASES.length; i++) {
            String name = CASES[i];
            String file = files.get(i);
            String part = java.util.Arrays.stream(parts).filter(s -> s.startsWith(file)).findFirst().orElse("");
            List<long[]> want = expected(name);
            Matcher m = BATCH.matcher(part);
            int n = 0;
            while (m.find()) {
                long[] w = want.get(n);
                String at = name + ", batch " + n + " (position " + w[0] + ")";
                assertEquals("true", m.group(8), at + ": Kafka finds its CRC valid");
                assertEquals(w[5], Long.parseLong(m.group(2)), at + ": last offset");
                assertEquals(w[2] == 2, m.group(1) != null, at + ": Kafka reads it as a v2 batch or a message");
                if (m.group(1) != null) {
                    assertEquals(w[4], Long.parseLong(m.group(1)), at + ": first offset");
                    assertEquals(w[6], Long.parseLong(m.group(3)), at + ": record count");
                }
                assertEquals(w[0], Long.parseLong(m.group(4)), at + ": position");
                assertEquals(w[1], Long.parseLong(m.group(6)), at + ": size");
                assertEquals(w[2], Long.parseLong(m.group(7)), at + ": magic");
                assertEquals(w[7], Long.parseLong(m.group(5)), at + ": timestamp");
                n++;
            }
            assertEquals(want.size(), n, name + ": Kafka reads every batch (output in " + dir + "/dump.txt)");
            checked += n;
        }
        assertTrue(checked > 1000, "batches checked: " + checked);
    }
}
