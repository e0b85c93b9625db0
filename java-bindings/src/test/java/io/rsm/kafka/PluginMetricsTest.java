package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugin's metrics: exact counts, failures and bytes after a known set of calls, over JMX (the plugin's own
 * registry) and, on a 4.1+ API, in the broker's registry through {@code Monitorable}.
 */
class PluginMetricsTest {
    static final TopicIdPartition TP = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("metrics", 0));
    static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();
    static final String[] OPERATIONS = {"copy-segment", "fetch-segment", "fetch-index", "delete-segment"};

    @TempDir
    static Path segmentsDir;
    static TestSegments.Segment plain;
    static TestSegments.Segment withTxn;

    @TempDir
    Path storeDir;

    @BeforeAll
    static void writeSegments() throws IOException {
        plain = TestSegments.write(segmentsDir, 0, 20, 10, 200, false, 3);
        withTxn = TestSegments.write(segmentsDir, plain.lastOffset + 1, 20, 10, 200, true, 4);
    }

    Map<String, Object> settings(int brokerId) {
        Map<String, Object> s = new HashMap<>();
        s.put("store.url", TestStore.fileUrl(storeDir.resolve("store")));
        s.put("chunk.size", "65536");
        s.put("fs.fsync", "false");
        s.put("broker.id", brokerId);
        return s;
    }

    @AfterEach
    void nothingLeaks() throws Exception {
        assertEquals(Set.of(), JMX.queryNames(new ObjectName("io.rsm.kafka:*"), null), "MBeans left registered");
        assertEquals(0, NativeBridge.liveHandles(0), "stores left open");
        assertEquals(0, NativeBridge.liveHandles(1), "native streams left open");
    }

    /** The bytes a copy of the segment uploads: its files and the leader-epoch checkpoint, as written. */
    static long uploadSize(TestSegments.Segment s) throws IOException {
        long n = Files.size(s.log) + Files.size(s.offsetIndex) + Files.size(s.timeIndex) + Files.size(s.snapshot)
                + s.leaderEpochs.length;
        return s.txnIndex.isPresent() ? n + Files.size(s.txnIndex.get()) : n;
    }

    /** Reads exactly {@code n} bytes (in reads of at most 100) and closes. */
    static byte[] readExactly(InputStream in, int n) throws IOException {
        try (in) {
            byte[] out = new byte[n];
            int got = 0;
            while (got < n) {
                int r = in.read(out, got, Math.min(100, n - got));
                assertTrue(r > 0, "short stream");
                got += r;
            }
            return out;
        }
    }

    /** What the test did, counted by the test: the expected value of each metric, per operation. */
    static final class Expected {
        final Map<String, long[]> byOp = new LinkedHashMap<>(); // {requests, errors, bytes}

        Expected() {
            for (String op : OPERATIONS) {
                byOp.put(op, new long[3]);
            }
        }

        void call(String op, boolean ok, long bytes) {
            long[] v = byOp.get(op);
            v[0]++;
            v[1] += ok ? 0 : 1;
            v[2] += bytes;
        }
    }

    /**
     * Copies two segments and fails a third copy; reads parts of a segment and an index, fails fetches of a
     * missing segment and a missing index, and a fetch whose stream fails (its stored log damaged in {@code
     * store}); deletes twice.
     */
    static Expected exercise(RustRemoteStorageManager rsm, Path store) throws Exception {
        Expected e = new Expected();
        RemoteLogSegmentMetadata a = plain.metadata(TP);
        RemoteLogSegmentMetadata b = withTxn.metadata(TP);
        rsm.copyLogSegmentData(a, plain.data());
        e.call("copy-segment", true, uploadSize(plain));
        rsm.copyLogSegmentData(b, withTxn.data());
        e.call("copy-segment", true, uploadSize(withTxn));
        LogSegmentData gone = new LogSegmentData(segmentsDir.resolve("missing.log"), plain.offsetIndex,
                plain.timeIndex, plain.txnIndex, plain.snapshot, ByteBuffer.wrap(plain.leaderEpochs));
        assertThrows(RemoteStorageException.class, () -> rsm.copyLogSegmentData(plain.metadata(TP), gone));
        e.call("copy-segment", false, 0);

        byte[] log = Files.readAllBytes(plain.log);
        // 1000 bytes of a stream from the start, then closed early.
        assertTrue(Arrays.equals(Arrays.copyOf(log, 1000), readExactly(rsm.fetchLogSegment(a, 0), 1000)));
        e.call("fetch-segment", true, 1000);
        // A range read to its end: 300 bytes, one of them by read(); a skip reads nothing.
        try (InputStream in = rsm.fetchLogSegment(b, 100, 399)) {
            assertTrue(in.read() >= 0);
            assertEquals(50, in.skip(50));
            assertEquals(249, in.readAllBytes().length);
        }
        e.call("fetch-segment", true, 1 + 249);
        // A stream opened and closed unread.
        rsm.fetchLogSegment(a, 0).close();
        e.call("fetch-segment", true, 0);
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(withTxn.metadata(TP), 0));
        e.call("fetch-segment", false, 0);

        // A fetch whose call returns a stream that then fails (here its bytes fail their check; a store that stops
        // answering fails it the same way): a failed fetch, counted once, with the bytes served before it.
        String id = a.remoteLogSegmentId().id().toString();
        Path stored;
        try (var files = Files.walk(store)) {
            stored = files.filter(p -> p.getFileName().toString().endsWith(id + ".log")).findFirst().orElseThrow();
        }
        byte[] intact = Files.readAllBytes(stored);
        byte[] damaged = intact.clone();
        damaged[damaged.length - 10] ^= 1;
        Files.write(stored, damaged);
        long[] served = {0};
        try (InputStream in = rsm.fetchLogSegment(a, 0)) {
            byte[] buf = new byte[1000];
            IOException failed = assertThrows(IOException.class, () -> {
                for (int n; (n = in.read(buf, 0, buf.length)) >= 0; ) {
                    served[0] += n;
                }
            });
            assertTrue(failed.getMessage().contains("segment"), failed.getMessage());
            assertTrue(served[0] < log.length, "served " + served[0] + " of " + log.length);
        }
        e.call("fetch-segment", false, served[0]);
        Files.write(stored, intact);

        int offsetIndexSize = (int) Files.size(plain.offsetIndex);
        assertEquals(offsetIndexSize, readExactly(rsm.fetchIndex(a, IndexType.OFFSET), offsetIndexSize).length);
        e.call("fetch-index", true, offsetIndexSize);
        // A segment without transactions has no transaction index: not-found is Kafka's expected answer, not a
        // failure. The index of a segment that is not there is one.
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchIndex(a, IndexType.TRANSACTION));
        e.call("fetch-index", true, 0);
        assertThrows(RemoteResourceNotFoundException.class,
                () -> rsm.fetchIndex(withTxn.metadata(TP), IndexType.OFFSET));
        e.call("fetch-index", false, 0);

        rsm.deleteLogSegmentData(a);
        e.call("delete-segment", true, 0);
        rsm.deleteLogSegmentData(b);
        e.call("delete-segment", true, 0);
        return e;
    }

    static ObjectName mbean(String tags, String op) throws Exception {
        return new ObjectName("io.rsm.kafka:type=remote-storage-manager-metrics," + tags + ",operation=" + op);
    }

    /** The MBean of the cache counters in the plugin's own registry: the operations' tags, no operation. */
    static ObjectName cacheMBean(String tags) throws Exception {
        return new ObjectName("io.rsm.kafka:type=remote-storage-manager-metrics," + tags);
    }

    /** Every attribute of an MBean, with its description checked present. */
    static Map<String, Double> attributes(ObjectName name) throws Exception {
        Map<String, Double> out = new LinkedHashMap<>();
        for (MBeanAttributeInfo a : JMX.getMBeanInfo(name).getAttributes()) {
            assertFalse(a.getDescription() == null || a.getDescription().isEmpty(), a.getName());
            out.put(a.getName(), jmx(name, a.getName()));
        }
        return out;
    }

    static double jmx(ObjectName name, String attribute) throws Exception {
        return (Double) JMX.getAttribute(name, attribute);
    }

    static void assertJmx(Expected e, String tags) throws Exception {
        for (Map.Entry<String, long[]> x : e.byOp.entrySet()) {
            String op = x.getKey();
            ObjectName name = mbean(tags, op);
            long[] v = x.getValue();
            assertEquals(v[0], jmx(name, "request-total"), op + " request-total");
            assertEquals(v[1], jmx(name, "error-total"), op + " error-total");
            double avg = jmx(name, "request-latency-avg");
            double max = jmx(name, "request-latency-max");
            if (v[0] == 0) {
                // Kafka's Avg and Max of no samples.
                assertTrue(Double.isNaN(avg) && Double.isNaN(max), op + " latency avg " + avg + ", max " + max);
                assertEquals(0.0, jmx(name, "request-rate"), op + " request-rate");
            } else {
                assertTrue(avg >= 0 && max >= avg, op + " latency avg " + avg + ", max " + max);
                assertTrue(jmx(name, "request-rate") > 0, op + " request-rate");
            }
            assertEquals(v[1] > 0, jmx(name, "error-rate") > 0, op + " error-rate");
            Set<String> attributes = Arrays.stream(JMX.getMBeanInfo(name).getAttributes())
                    .map(MBeanAttributeInfo::getName).collect(Collectors.toCollection(TreeSet::new));
            Set<String> expected = new TreeSet<>(List.of("request-rate", "request-total", "request-latency-avg",
                    "request-latency-max", "error-rate", "error-total"));
            if (!op.equals("delete-segment")) {
                expected.addAll(List.of("byte-rate", "byte-total"));
                assertEquals(v[2], jmx(name, "byte-total"), op + " byte-total");
            }
            assertEquals(expected, attributes, op);
            for (MBeanAttributeInfo a : JMX.getMBeanInfo(name).getAttributes()) {
                assertFalse(a.getDescription() == null || a.getDescription().isEmpty(), a.getName());
            }
        }
    }

    @Test
    void overJmxTheCountsFailuresAndBytesOfEveryOperation() throws Exception {
        RustRemoteStorageManager rsm = new RustRemoteStorageManager();
        rsm.configure(settings(42));
        try {
            Set<ObjectName> expected = new TreeSet<>();
            for (String op : OPERATIONS) {
                expected.add(mbean("broker-id=42", op));
            }
            expected.add(cacheMBean("broker-id=42"));
            assertEquals(expected, new TreeSet<>(JMX.queryNames(new ObjectName("io.rsm.kafka:*"), null)),
                    "one MBean per operation and one of the cache counters, nothing else");
            Expected e = exercise(rsm, storeDir.resolve("store"));
            assertJmx(e, "broker-id=42");
            assertEquals(e.byOp.get("copy-segment")[2], uploadSize(plain) + uploadSize(withTxn));
        } finally {
            rsm.close();
        }
        assertEquals(Set.of(), JMX.queryNames(new ObjectName("io.rsm.kafka:*"), null), "close unregisters");
    }

    /**
     * The caches' counters over JMX, read from the native side when read: zero on a fresh cache; after a copy,
     * the same range fetched twice and an index fetched twice, the loads, hits and bytes held that those made.
     */
    @Test
    void overJmxTheCachesCountersAsTheNativeSideCountsThem() throws Exception {
        Map<String, Object> settings = settings(46);
        settings.put("fetch.cache.bytes", Integer.toString(64 << 20));
        // Over a filesystem store the chunk cache keeps only transformed chunks (the page cache holds the
        // others): every chunk compressed, whatever the heuristic would say of the test's records.
        settings.put("compression.enabled", "true");
        settings.put("compression.heuristic.enabled", "false");
        RustRemoteStorageManager rsm = new RustRemoteStorageManager();
        rsm.configure(settings);
        ObjectName cache = cacheMBean("broker-id=46");
        List<String> names = Arrays.asList(NativeBridge.cacheMetricNames());
        try {
            assertTrue(names.containsAll(List.of("chunk-cache-hits", "chunk-cache-misses", "chunk-cache-bytes",
                    "chunk-cache-loads", "chunk-cache-disk-hits", "index-cache-hits", "index-cache-misses",
                    "index-cache-bytes", "manifest-cache-hits", "manifest-cache-misses", "store-breaker-state",
                    "store-breaker-opened", "store-breaker-refused", "store-breaker-down-ms", "store-timeouts", "store-throttled",
                    "store-retries-refused", "store-bytes-read")),
                    names.toString());
            assertEquals(names.size(), new HashSet<>(names).size(), "names are unique: " + names);
            Map<String, Double> before = attributes(cache);
            // A store that answers: the breaker closed, never opened.
            assertEquals(0.0, before.get("store-breaker-state"));
            assertEquals(0.0, before.get("store-breaker-opened"));
            assertEquals(new TreeSet<>(names), new TreeSet<>(before.keySet()), "one attribute per counter");
            // The cache of these settings is new (no other store of this JVM is open): all zero.
            for (Map.Entry<String, Double> e : before.entrySet()) {
                assertEquals(0.0, e.getValue(), e.getKey());
            }

            RemoteLogSegmentMetadata md = plain.metadata(TP);
            rsm.copyLogSegmentData(md, plain.data());
            byte[] log = Files.readAllBytes(plain.log);
            // The first fetch reads around the cache; the second too, and loads the chunk behind it (over a
            // local store no reader waits for a load); once the chunk is held, the third hits.
            for (int i = 0; i < 3; i++) {
                if (i == 2) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (attributes(cache).get("chunk-cache-bytes") == 0.0) {
                        assertTrue(System.nanoTime() < deadline, "the chunk loaded behind the second fetch");
                        Thread.sleep(PluginMetricsRecorder.CacheCounters.MAX_AGE_NANOS / 1_000_000 + 50);
                    }
                }
                assertArrayEquals(Arrays.copyOfRange(log, 100, 400), readExactly(rsm.fetchLogSegment(md, 100, 399),
                        300), "fetch " + i);
            }
            int offsetIndexSize = (int) Files.size(plain.offsetIndex);
            for (int i = 0; i < 2; i++) {
                assertArrayEquals(Files.readAllBytes(plain.offsetIndex),
                        readExactly(rsm.fetchIndex(md, IndexType.OFFSET), offsetIndexSize), "index fetch " + i);
            }
            // The values read before are kept for a second, then read again.
            Thread.sleep(PluginMetricsRecorder.CacheCounters.MAX_AGE_NANOS / 1_000_000 + 100);
            Map<String, Double> v = attributes(cache);
            assertTrue(v.get("chunk-cache-bypassed") >= 1 && v.get("chunk-cache-bypassed-bytes") >= 300,
                    "the first fetch reads its blocks around the cache: " + v);
            assertTrue(v.get("chunk-cache-loads") >= 1, "the second fetch loads its chunk behind it: " + v);
            assertTrue(v.get("chunk-cache-misses") >= 2, "the first two fetches miss: " + v);
            assertTrue(v.get("chunk-cache-hits") >= 1, "the third fetch of the range hits: " + v);
            double held = v.get("chunk-cache-bytes");
            assertTrue(held > 0 && held <= v.get("chunk-cache-loaded-bytes") && held <= plain.size(),
                    "the chunk is held, no more than was loaded: " + v);
            assertTrue(v.get("index-cache-hits") >= 1, "the second index fetch hits: " + v);
            assertTrue(v.get("index-cache-misses") >= 1, "the first index fetch misses: " + v);
            assertTrue(v.get("index-cache-bytes") >= offsetIndexSize, "the index is held: " + v);
            assertTrue(v.get("manifest-cache-hits") >= 1, "later reads find the manifest cached: " + v);
            assertEquals(0.0, v.get("chunk-cache-disk-hits"), "no disk tier: " + v);
            assertEquals(0.0, v.get("chunk-cache-disk-bytes"), "no disk tier: " + v);
            String hits = JMX.getMBeanInfo(cache).getAttributes()[names.indexOf("chunk-cache-hits")].getDescription();
            assertTrue(hits.contains("since the cache was made"), hits);
        } finally {
            rsm.close();
        }
        assertFalse(JMX.isRegistered(cache), "close removes the cache counters");
    }

    /**
     * The native call answers one value per name, and fails cleanly on a closed store; the counters behind the
     * metrics never throw: with no store, or a closed one, before any value was read, they read 0.
     */
    @Test
    void cacheCountersOfAClosedOrMissingStoreReadZeroAndNeverThrow() throws Exception {
        NativeBridge.ensureLoaded();
        int n = NativeBridge.cacheMetricNames().length;
        int hits = Arrays.asList(NativeBridge.cacheMetricNames()).indexOf("index-cache-hits");
        long h = NativeBridge.openStore(new String[] {"store.url", "fs.fsync"},
                new String[] {TestStore.fileUrl(storeDir.resolve("store")), "false"});
        long[] open;
        try {
            open = NativeBridge.cacheMetrics(h);
            assertEquals(n, open.length, "one value per name");
        } finally {
            assertTrue(NativeBridge.closeStore(h));
        }
        NativeStorageException e = assertThrows(NativeStorageException.class, () -> NativeBridge.cacheMetrics(h));
        assertTrue(e.getMessage().contains("is not open"), e.getMessage());
        assertEquals(0, new PluginMetricsRecorder.CacheCounters(() -> h).value(hits), "closed before any read");
        assertEquals(0, new PluginMetricsRecorder.CacheCounters(() -> 0).value(hits), "no store");
        assertEquals(0, new PluginMetricsRecorder.CacheCounters(() -> 0).value(n + 5), "past the names");
    }

    @Test
    void twoInstancesOfOneBrokerIdKeepTheirOwnMBeans() throws Exception {
        RustRemoteStorageManager first = new RustRemoteStorageManager();
        RustRemoteStorageManager second = new RustRemoteStorageManager();
        first.configure(settings(42));
        try {
            second.configure(settings(42));
            Expected e = new Expected();
            second.copyLogSegmentData(plain.metadata(TP), plain.data());
            e.call("copy-segment", true, uploadSize(plain));
            assertJmx(new Expected(), "broker-id=42");
            assertJmx(e, "broker-id=42,instance=2");
            first.close();
            assertFalse(JMX.isRegistered(mbean("broker-id=42", "copy-segment")));
            assertJmx(e, "broker-id=42,instance=2");
            // Configured again, it takes the free name again: close and reopen do not leak names.
            first.configure(settings(42));
            assertJmx(new Expected(), "broker-id=42");
        } finally {
            first.close();
            second.close();
        }
    }

    @Test
    void streamsReadAfterCloseAndCallsBeforeConfigureAreNotRecordedAnywhere() throws Exception {
        RustRemoteStorageManager rsm = new RustRemoteStorageManager();
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(plain.metadata(TP), 0));
        assertEquals(null, rsm.metrics());
        rsm.configure(settings(44));
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        InputStream in = rsm.fetchLogSegment(md, 0);
        rsm.close();
        assertEquals(plain.size(), in.readAllBytes().length, "a stream outlives its store and its metrics");
        in.close();
    }

    /**
     * On the 4.0 API the Monitorable class cannot even load (a 4.0 broker never can use it); on 4.1+ it hands
     * every metric to the broker's registry (Kafka's own PluginMetricsImpl, as Plugin.wrapInstance makes it,
     * after configure), and close removes them. Reflection, so that this compiles on the 4.0 API.
     */
    @Test
    void monitorableHandsTheMetricsToTheBrokersRegistry() throws Exception {
        String monitorable = "io.rsm.kafka.MonitorableRustRemoteStorageManager";
        if (!TestSegments.kafkaApiAtLeast(4, 1)) {
            // Monitorable (KIP-877) came with 4.1: before, the class cannot load.
            assertThrows(ClassNotFoundException.class,
                    () -> Class.forName("org.apache.kafka.common.metrics.Monitorable"));
            assertThrows(NoClassDefFoundError.class, () -> Class.forName(monitorable));
            return;
        }
        Class<?> pluginMetricsType = Class.forName("org.apache.kafka.common.metrics.PluginMetrics");
        RustRemoteStorageManager rsm = (RustRemoteStorageManager) Class.forName(monitorable)
                .getConstructor().newInstance();
        assertTrue(Class.forName("org.apache.kafka.common.metrics.Monitorable").isInstance(rsm));
        Map<String, String> pluginTags = new LinkedHashMap<>();
        pluginTags.put("config", "remote.log.storage.manager.class.name");
        pluginTags.put("class", rsm.getClass().getSimpleName());
        try (Metrics registry = new Metrics()) {
            Object pluginMetrics = Class.forName("org.apache.kafka.common.metrics.internals.PluginMetricsImpl")
                    .getConstructor(Metrics.class, Map.class).newInstance(registry, pluginTags);
            try {
                // The broker configures, then hands the registry over: the plugin's own MBeans go.
                rsm.configure(settings(45));
                assertTrue(JMX.isRegistered(mbean("broker-id=45", "copy-segment")));
                Method with = rsm.getClass().getMethod("withPluginMetrics", pluginMetricsType);
                with.invoke(rsm, pluginMetrics);
                assertEquals(Set.of(), JMX.queryNames(new ObjectName("io.rsm.kafka:*"), null));

                Expected e = exercise(rsm, storeDir.resolve("store"));
                for (Map.Entry<String, long[]> x : e.byOp.entrySet()) {
                    String op = x.getKey();
                    long[] v = x.getValue();
                    Map<String, String> tags = new LinkedHashMap<>(pluginTags);
                    tags.put("operation", op);
                    assertEquals((double) v[0], value(registry, "request-total", tags), op);
                    assertEquals((double) v[1], value(registry, "error-total", tags), op);
                    if (!op.equals("delete-segment")) {
                        assertEquals((double) v[2], value(registry, "byte-total", tags), op);
                    }
                }
                // The cache counters (no fetch cache: the chunk cache's read zero) are read when read.
                Map<String, String> noOp = new LinkedHashMap<>(pluginTags);
                assertEquals(0.0, value(registry, "chunk-cache-hits", noOp));
                assertTrue(value(registry, "manifest-cache-misses", noOp) >= 1, "the fetches read the manifest");
                assertTrue(value(registry, "index-cache-misses", noOp) >= 1, "the index fetch reads the index");
                // The topic's requests, per kind of request and in bytes: two copies of three uploads each.
                Map<String, String> put = new LinkedHashMap<>(pluginTags);
                put.put("topic", TP.topic());
                put.put("op", "PUT");
                assertEquals(6.0, value(registry, "remote-requests-total", put));
                Set<String> names = pluginMetricNames(registry);
                int perTopic = 2 * NativeBridge.requestOps().length + 2;
                assertEquals(4 * 6 + 3 * 2 + NativeBridge.cacheMetricNames().length + perTopic, names.size(),
                        names.toString());
            } finally {
                rsm.close();
            }
            assertEquals(Set.of(), pluginMetricNames(registry), "close removes the plugin's metrics");
            assertEquals(Set.of(), JMX.queryNames(new ObjectName("io.rsm.kafka:*"), null));
            ((AutoCloseable) pluginMetrics).close();
        }
    }

    static double value(Metrics registry, String name, Map<String, String> tags) {
        KafkaMetric m = registry.metric(new MetricName(name, "plugins", "", tags));
        assertTrue(m != null, "no metric " + name + " " + tags + " in " + pluginMetricNames(registry));
        return (Double) m.metricValue();
    }

    static Set<String> pluginMetricNames(Metrics registry) {
        return registry.metrics().keySet().stream().filter(n -> n.group().equals("plugins"))
                .map(n -> n.name() + n.tags()).collect(Collectors.toCollection(TreeSet::new));
    }
}
