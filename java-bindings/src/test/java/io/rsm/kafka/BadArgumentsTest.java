package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every bad argument of every storage call is a {@link RemoteStorageException} that names the argument, never
 * a bare {@code NullPointerException}, and counts as a failed call; and the volatile {@code memory:} store is
 * refused unless the tests-only setting allows it. On the filesystem store, through the real native library.
 */
class BadArgumentsTest {
    static final TopicIdPartition TP = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("args", 0));

    @TempDir
    static Path segmentsDir;
    static TestSegments.Segment segment;

    @TempDir
    Path storeDir;
    RustRemoteStorageManager rsm;
    RemoteLogSegmentMetadata md;

    @BeforeAll
    static void writeSegment() throws IOException {
        segment = TestSegments.write(segmentsDir, 0, 10, 10, 100, false, 1);
    }

    @BeforeEach
    void open() throws Exception {
        rsm = new RustRemoteStorageManager();
        rsm.configure(settings(TestStore.fileUrl(storeDir.resolve("store"))));
        md = segment.metadata(TP);
        rsm.copyLogSegmentData(md, segment.data());
    }

    @AfterEach
    void close() {
        rsm.close();
        assertEquals(0, NativeBridge.liveHandles(0), "stores left open");
        assertEquals(0, NativeBridge.liveHandles(1), "native streams left open");
    }

    static Map<String, Object> settings(String url) {
        Map<String, Object> s = new HashMap<>();
        s.put("store.url", url);
        if (url.startsWith("file:")) {
            s.put("fs.fsync", "false");
        }
        s.put("broker.id", 31);
        return s;
    }

    /** The call fails with a RemoteStorageException (not its not-found subclass) whose message has all of {@code words}. */
    static void refused(Executable call, String... words) {
        RemoteStorageException e = assertThrows(RemoteStorageException.class, call);
        assertFalse(e instanceof RemoteResourceNotFoundException, e.toString());
        for (String w : words) {
            assertTrue(e.getMessage().contains(w), "'" + w + "' in: " + e.getMessage());
        }
    }

    static byte[] readAll(InputStream in) throws IOException {
        try (in) {
            return in.readAllBytes();
        }
    }

    @Test
    void nullMetadataIsNamedByEveryCall() {
        String arg = "argument remoteLogSegmentMetadata is null";
        refused(() -> rsm.copyLogSegmentData(null, segment.data()), "copyLogSegmentData", arg);
        refused(() -> rsm.fetchLogSegment(null, 0), "fetchLogSegment", arg);
        refused(() -> rsm.fetchLogSegment(null, 0, 10), "fetchLogSegment", arg);
        refused(() -> rsm.fetchIndex(null, IndexType.OFFSET), "fetchIndex", arg);
        refused(() -> rsm.deleteLogSegmentData(null), "deleteLogSegmentData", arg);
    }

    @Test
    void nullSegmentDataAndIndexTypeAreNamed() throws Exception {
        RemoteLogSegmentMetadata other = segment.metadata(TP);
        refused(() -> rsm.copyLogSegmentData(other, null), "argument logSegmentData is null",
                other.remoteLogSegmentId().toString());
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(other, 0),
                "nothing was copied");
        refused(() -> rsm.fetchIndex(md, null), "argument indexType is null", md.remoteLogSegmentId().toString());
        // The segment is still there and whole.
        assertArrayEquals(Files.readAllBytes(segment.offsetIndex), readAll(rsm.fetchIndex(md, IndexType.OFFSET)));
    }

    @Test
    void badPositionsAreNamed() throws Exception {
        refused(() -> rsm.fetchLogSegment(md, -1), "argument startPosition -1 is negative");
        refused(() -> rsm.fetchLogSegment(md, Integer.MIN_VALUE, 10), "argument startPosition", "is negative");
        refused(() -> rsm.fetchLogSegment(md, 10, 5), "argument endPosition 5 is before startPosition 10");
        refused(() -> rsm.fetchLogSegment(md, 0, -1), "argument endPosition -1 is before startPosition 0");
        refused(() -> rsm.fetchLogSegment(md, segment.size()), "outside segment");
        // The edges that are fine: one byte, and an end past the segment's end.
        byte[] log = Files.readAllBytes(segment.log);
        assertArrayEquals(new byte[] {log[7]}, readAll(rsm.fetchLogSegment(md, 7, 7)));
        assertEquals(log.length - 1, readAll(rsm.fetchLogSegment(md, 1, Integer.MAX_VALUE)).length);
    }

    @Test
    void badArgumentsCountAsFailedCalls() throws Exception {
        javax.management.ObjectName fetches = PluginMetricsTest.mbean("broker-id=31", "fetch-segment");
        double errors = PluginMetricsTest.jmx(fetches, "error-total");
        double calls = PluginMetricsTest.jmx(fetches, "request-total");
        refused(() -> rsm.fetchLogSegment(null, 0), "remoteLogSegmentMetadata");
        refused(() -> rsm.fetchLogSegment(md, -5), "startPosition");
        assertEquals(errors + 2, PluginMetricsTest.jmx(fetches, "error-total"));
        assertEquals(calls + 2, PluginMetricsTest.jmx(fetches, "request-total"));
    }

    @Test
    void aNullConfigurationIsAConfigException() {
        RustRemoteStorageManager fresh = new RustRemoteStorageManager();
        ConfigException e = assertThrows(ConfigException.class, () -> fresh.configure(null));
        assertTrue(e.getMessage().contains("argument configs is null"), e.getMessage());
        fresh.close();
    }

    @Test
    void theMemoryStoreIsRefusedUnlessTestsAllowIt() throws Exception {
        for (String url : new String[] {"memory:", " memory: ", "MEMORY:", "memory://x"}) {
            RustRemoteStorageManager fresh = new RustRemoteStorageManager();
            ConfigException e = assertThrows(ConfigException.class, () -> fresh.configure(settings(url)), url);
            assertTrue(e.getMessage().contains("`rsm.config.store.url`"), e.getMessage());
            assertTrue(e.getMessage().contains("lost when the broker stops"), e.getMessage());
            assertTrue(e.getMessage().contains("rsm.config.store.memory.allowed=true"), e.getMessage());
            fresh.close();
        }
        Map<String, Object> no = settings("memory:");
        no.put(RustRemoteStorageManager.MEMORY_ALLOWED, "false");
        assertThrows(ConfigException.class, () -> new RustRemoteStorageManager().configure(no));
        Map<String, Object> typo = settings("memory:");
        typo.put(RustRemoteStorageManager.MEMORY_ALLOWED, "yes");
        ConfigException e = assertThrows(ConfigException.class, () -> new RustRemoteStorageManager().configure(typo));
        assertTrue(e.getMessage().contains("`rsm.config.store.memory.allowed`: `yes` is not true or false"),
                e.getMessage());

        // Allowed (tests): it opens and works; the setting is the plugin's, not passed on as an unknown key.
        Map<String, Object> allowed = settings("memory:");
        allowed.put(RustRemoteStorageManager.MEMORY_ALLOWED, "true");
        RustRemoteStorageManager mem = new RustRemoteStorageManager();
        try {
            mem.configure(allowed);
            RemoteLogSegmentMetadata m = segment.metadata(TP);
            mem.copyLogSegmentData(m, segment.data());
            assertArrayEquals(Files.readAllBytes(segment.log), readAll(mem.fetchLogSegment(m, 0)));
        } finally {
            mem.close();
        }
        // A durable store with the setting present is fine too.
        Map<String, Object> file = settings(TestStore.fileUrl(storeDir.resolve("other")));
        file.put(RustRemoteStorageManager.MEMORY_ALLOWED, "true");
        RustRemoteStorageManager fs = new RustRemoteStorageManager();
        fs.configure(file);
        fs.close();
    }
}
