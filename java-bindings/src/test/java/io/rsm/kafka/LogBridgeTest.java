package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rust tracing events reach SLF4J at their level, and only the levels SLF4J has enabled (here: info). */
class LogBridgeTest {
    @TempDir
    Path dir;

    @Test
    void nativeEventsReachSlf4jAtTheEnabledLevels() throws Exception {
        NativeBridge.ensureLoaded();
        assertEquals(3, NativeLog.currentLevel(), "slf4j-simple runs at info in these tests");
        String marker = "bridge-" + UUID.randomUUID();
        List<String> seen = new CopyOnWriteArrayList<>();
        Consumer<String> listener = line -> {
            if (line.contains(marker)) {
                seen.add(line);
            }
        };
        NativeLog.addListener(listener);
        try {
            NativeBridge.selfTest(4, 0, marker);
            long deadline = System.currentTimeMillis() + 10_000;
            while (seen.size() < 3 && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
            Thread.sleep(300);
            String logger = NativeLog.ROOT + ".rsm_jni.selftest";
            assertEquals(List.of("ERROR " + logger + " " + marker, "WARN " + logger + " " + marker,
                    "INFO " + logger + " " + marker), seen.stream().sorted((a, b) -> rank(a) - rank(b))
                    .collect(Collectors.toList()));
            assertTrue(NativeBridge.droppedLogEvents() >= 0);
        } finally {
            NativeLog.removeListener(listener);
        }
    }

    /**
     * A copy that fails reaches the broker's log at WARN, once (not once per layer it crosses), naming the
     * segment and why (Kafka itself logs a failed copy at INFO only: an operator alerting on warnings must see a
     * store refusing copies).
     */
    @Test
    void aFailedCopyIsLoggedOnceAtWarnNamingTheSegment() throws Exception {
        TestSegments.Segment seg = TestSegments.write(dir, 0, 20, 10, 200, false, 3);
        TopicIdPartition tp = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("warned", 0));
        RemoteLogSegmentMetadata md = seg.metadata(tp);
        String id = md.remoteLogSegmentId().id().toString();
        List<String> seen = new CopyOnWriteArrayList<>();
        Consumer<String> listener = line -> {
            if (line.contains(id)) {
                seen.add(line);
            }
        };
        Map<String, Object> settings = new HashMap<>();
        settings.put("store.url", TestStore.fileUrl(dir.resolve("store")));
        settings.put("fs.root.create", "true");
        RustRemoteStorageManager rsm = new RustRemoteStorageManager();
        rsm.configure(settings);
        NativeLog.addListener(listener);
        try {
            LogSegmentData gone = new LogSegmentData(dir.resolve("missing.log"), seg.offsetIndex, seg.timeIndex,
                    seg.txnIndex, seg.snapshot, ByteBuffer.wrap(seg.leaderEpochs));
            assertThrows(RemoteStorageException.class, () -> rsm.copyLogSegmentData(md, gone));
            long deadline = System.currentTimeMillis() + 10_000;
            while (seen.isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
            Thread.sleep(300);
            List<String> warned = seen.stream().filter(l -> l.startsWith("WARN")).collect(Collectors.toList());
            assertEquals(1, warned.size(), "lines naming the segment: " + seen);
            assertTrue(warned.get(0).contains("copy failed") && warned.get(0).contains("missing.log"),
                    warned.get(0));
        } finally {
            NativeLog.removeListener(listener);
            rsm.close();
        }
    }

    private static int rank(String line) {
        return line.startsWith("ERROR") ? 0 : line.startsWith("WARN") ? 1 : 2;
    }
}
