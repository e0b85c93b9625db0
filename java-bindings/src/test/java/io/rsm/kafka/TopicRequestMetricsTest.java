package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The requests and bytes each topic sent to the store, per kind of request, over JMX: segments of two topics
 * copied, fetched and deleted on a filesystem store, and the counts compared with what those operations must
 * send, counted here apart from the SDK: a copy is three uploads (the {@code .log}, the {@code .indexes} bundle,
 * the {@code .manifest}); a fetch of a segment smaller than one CRC block ({@code chunk.block.size}, 64 KiB) whose
 * manifest the copy left cached is one read of that block, however the stream is read; an index fetch is one
 * read of its part of the bundle; a fetch of a segment never copied is two failed reads (its manifest, then the
 * one object the other layout would have written, {@code segment.layout}); a delete is two (the manifest and that
 * one object at once, then the other two objects at once). The bytes sent are the sizes of the files the store
 * holds for the topic.
 */
class TopicRequestMetricsTest {
    static final TopicIdPartition ORDERS = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("orders", 0));
    static final TopicIdPartition CLICKS = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("clicks", 3));
    static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();
    static final List<String> OPS = List.of("PUT", "POST", "GET", "HEAD", "DELETE", "LIST", "OTHER");
    static final String TAGS = "io.rsm.kafka:type=remote-storage-manager-metrics,broker-id=47";

    @TempDir
    static Path segmentsDir;
    static TestSegments.Segment a;
    static TestSegments.Segment b;

    @TempDir
    Path storeDir;

    @BeforeAll
    static void writeSegments() throws IOException {
        a = TestSegments.write(segmentsDir, 0, 20, 10, 200, false, 5);
        b = TestSegments.write(segmentsDir, a.lastOffset + 1, 20, 10, 200, true, 6);
    }

    @AfterEach
    void nothingLeaks() throws Exception {
        assertEquals(Set.of(), JMX.queryNames(new ObjectName("io.rsm.kafka:*"), null), "MBeans left registered");
        assertEquals(0, NativeBridge.liveHandles(0), "stores left open");
        assertEquals(0, NativeBridge.liveHandles(1), "native streams left open");
    }

    Path root() {
        return storeDir.resolve("store");
    }

    Map<String, Object> settings() {
        Map<String, Object> s = new HashMap<>();
        s.put("store.url", TestStore.fileUrl(root()));
        s.put("chunk.size", "65536");
        s.put("fs.fsync", "false");
        s.put("broker.id", 47);
        return s;
    }

    /** The bytes of every file the store holds for {@code topic} (its objects are under {@code topic-<id>/}). */
    long storedBytes(TopicIdPartition tp) throws IOException {
        Path dir = root().resolve(tp.topic() + "-" + tp.topicId());
        try (Stream<Path> files = Files.walk(dir)) {
            long n = 0;
            for (Path f : files.filter(Files::isRegularFile).collect(Collectors.toList())) {
                n += Files.size(f);
            }
            return n;
        }
    }

    /** What one topic must have sent: requests and failures per kind, and bytes. */
    static final class Expected {
        final Map<String, long[]> byOp = new LinkedHashMap<>();
        long sent;
        long received;

        Expected() {
            for (String op : OPS) {
                byOp.put(op, new long[2]);
            }
        }

        Expected requests(String op, long n, long failed) {
            byOp.get(op)[0] += n;
            byOp.get(op)[1] += failed;
            return this;
        }
    }

    static double jmx(ObjectName name, String attribute) throws Exception {
        return (Double) JMX.getAttribute(name, attribute);
    }

    static void assertTopic(String topic, Expected e) throws Exception {
        for (Map.Entry<String, long[]> x : e.byOp.entrySet()) {
            ObjectName name = new ObjectName(TAGS + ",topic=" + topic + ",op=" + x.getKey());
            assertEquals(x.getValue()[0], jmx(name, "remote-requests-total"), topic + " " + x.getKey() + " requests");
            assertEquals(x.getValue()[1], jmx(name, "remote-requests-failed-total"), topic + " " + x.getKey()
                    + " failed");
        }
        ObjectName bytes = new ObjectName(TAGS + ",topic=" + topic);
        assertEquals(e.sent, jmx(bytes, "remote-bytes-sent-total"), topic + " bytes sent");
        assertEquals(e.received, jmx(bytes, "remote-bytes-received-total"), topic + " bytes received");
    }

    @Test
    void overJmxEachTopicsRequestsAreWhatItsOperationsSent() throws Exception {
        assertTrue(a.size() < 65536 && b.size() < 65536, "each segment within one CRC block");
        RustRemoteStorageManager rsm = new RustRemoteStorageManager();
        rsm.configure(settings());
        try {
            assertEquals(Set.of(), JMX.queryNames(new ObjectName(TAGS + ",topic=*,*"), null),
                    "no topic's metrics before the plugin works on it");
            Expected orders = new Expected();
            Expected clicks = new Expected();

            RemoteLogSegmentMetadata oa = a.metadata(ORDERS);
            RemoteLogSegmentMetadata ob = b.metadata(ORDERS);
            rsm.copyLogSegmentData(oa, a.data());
            rsm.copyLogSegmentData(ob, b.data());
            orders.requests("PUT", 6, 0);
            RemoteLogSegmentMetadata ca = a.metadata(CLICKS);
            rsm.copyLogSegmentData(ca, a.data());
            clicks.requests("PUT", 3, 0);
            orders.sent = storedBytes(ORDERS);
            clicks.sent = storedBytes(CLICKS);
            assertTrue(orders.sent > 0 && clicks.sent > 0);

            // Reads: part of a segment, an index, a whole segment read in small pieces.
            byte[] log = Files.readAllBytes(a.log);
            try (InputStream in = rsm.fetchLogSegment(oa, 100, 399)) {
                assertArrayEquals(Arrays.copyOfRange(log, 100, 400), in.readAllBytes());
            }
            orders.requests("GET", 1, 0).received += a.size();
            try (InputStream in = rsm.fetchIndex(oa, IndexType.OFFSET)) {
                assertArrayEquals(Files.readAllBytes(a.offsetIndex), in.readAllBytes());
            }
            orders.requests("GET", 1, 0).received += Files.size(a.offsetIndex);
            try (InputStream in = rsm.fetchLogSegment(ca, 0)) {
                byte[] got = new byte[log.length];
                TestSegments.readFully(in, got, got.length, 0);
                assertArrayEquals(log, got);
                assertEquals(-1, in.read());
            }
            clicks.requests("GET", 1, 0).received += a.size();
            // A segment never copied: its manifest's read fails, then its one-object key's (either layout may
            // hold a segment whose metadata does not say).
            assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(b.metadata(CLICKS), 0));
            clicks.requests("GET", 2, 2);

            rsm.deleteLogSegmentData(ob);
            orders.requests("DELETE", 2, 0);

            Set<String> topics = JMX.queryNames(new ObjectName(TAGS + ",topic=*,*"), null).stream()
                    .map(n -> n.getKeyProperty("topic")).collect(Collectors.toCollection(TreeSet::new));
            assertEquals(new TreeSet<>(List.of("clicks", "orders")), topics);
            assertEquals(2 * (OPS.size() + 1), JMX.queryNames(new ObjectName(TAGS + ",topic=*,*"), null).size(),
                    "a bean per topic and kind of request, and one per topic for its bytes");
            assertTopic("orders", orders);
            assertTopic("clicks", clicks);
        } finally {
            rsm.close();
        }
    }

    /**
     * The native call: the kinds of request in order, and every topic's counts as one array, none for a fresh
     * store; a closed store fails cleanly; the counters behind the metrics never throw.
     */
    @Test
    void theNativeCallAnswersEveryTopicAtOnceAndFailsCleanlyWhenClosed() {
        NativeBridge.ensureLoaded();
        assertEquals(OPS, List.of(NativeBridge.requestOps()));
        long h = NativeBridge.openStore(new String[] {"store.url", "fs.fsync"},
                new String[] {TestStore.fileUrl(root()), "false"});
        try {
            Object[] answer = NativeBridge.topicRequests(h);
            assertEquals(3, answer.length);
            assertArrayEquals(new String[0], (String[]) answer[0]);
            assertArrayEquals(new long[0], (long[]) answer[1]);
            assertEquals("contract", answer[2], "a filesystem store's counts are the calls on it");
            assertEquals(Map.of(), PluginMetricsRecorder.TopicRequests.parse(answer, OPS.size()));
        } finally {
            assertTrue(NativeBridge.closeStore(h));
        }
        NativeStorageException e = assertThrows(NativeStorageException.class, () -> NativeBridge.topicRequests(h));
        assertTrue(e.getMessage().contains("is not open"), e.getMessage());
        assertEquals(0, new PluginMetricsRecorder.TopicRequests(() -> h, OPS.size()).value("orders", 0, 0));
        assertEquals(0, new PluginMetricsRecorder.TopicRequests(() -> 0, OPS.size()).sum("orders", 2));
        Map<String, long[]> parsed = PluginMetricsRecorder.TopicRequests.parse(
                new Object[] {new String[] {"t"}, new long[28], "store"}, OPS.size());
        assertEquals(28, parsed.get("t").length);
        assertThrows(IllegalStateException.class, () -> PluginMetricsRecorder.TopicRequests.parse(
                new Object[] {new String[] {"t"}, new long[27], "store"}, OPS.size()));
    }
}
