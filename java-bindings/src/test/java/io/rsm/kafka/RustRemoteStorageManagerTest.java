package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.management.ObjectName;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager.IndexType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The plugin against the filesystem store, through the real native library the jar carries. */
class RustRemoteStorageManagerTest {
    static final TopicIdPartition TP = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("orders", 3));

    @TempDir
    static Path segmentsDir;
    static TestSegments.Segment plain;
    static TestSegments.Segment withTxn;

    @TempDir
    Path storeDir;
    RustRemoteStorageManager rsm;

    @BeforeAll
    static void writeSegments() throws IOException {
        // About 1.3 MB each: with 64 KiB chunks a full read spans ~20 chunks.
        plain = TestSegments.write(segmentsDir, 0, 60, 40, 512, false, 1);
        withTxn = TestSegments.write(segmentsDir, plain.lastOffset + 1, 60, 40, 512, true, 2);
    }

    @BeforeEach
    void open() {
        rsm = new RustRemoteStorageManager();
        rsm.configure(settings());
    }

    Map<String, Object> settings() {
        Map<String, Object> s = new HashMap<>();
        s.put("store.url", TestStore.fileUrl(storeDir.resolve("store")));
        s.put("chunk.size", "65536");
        s.put("fs.fsync", "false");
        s.put("broker.id", 7);
        s.put("node.id", 7);
        return s;
    }

    @AfterEach
    void closeAndCheckLeaks() throws Exception {
        rsm.close();
        rsm.close();
        assertEquals(0, NativeBridge.liveHandles(0), "stores left open");
        assertEquals(0, NativeBridge.liveHandles(1), "native streams left open");
        assertEquals(Set.of(), ManagementFactory.getPlatformMBeanServer()
                .queryNames(new ObjectName("io.rsm.kafka:*"), null), "metrics MBeans left registered");
    }

    static byte[] readAll(InputStream in) throws IOException {
        try (in) {
            return in.readAllBytes();
        }
    }

    @Test
    void copyThenFetchEverySegmentRangeAndIndexByteIdentical() throws Exception {
        Random random = new Random(42);
        for (TestSegments.Segment s : List.of(plain, withTxn)) {
            RemoteLogSegmentMetadata md = s.metadata(TP);
            assertTrue(rsm.copyLogSegmentData(md, s.data()).isEmpty());
            byte[] log = Files.readAllBytes(s.log);
            assertArrayEquals(log, readAll(rsm.fetchLogSegment(md, 0)));
            // Batch boundaries, as the broker reads, and arbitrary ranges, both ends inclusive.
            for (int p : s.batchPositions) {
                assertArrayEquals(Arrays.copyOfRange(log, p, log.length), readAll(rsm.fetchLogSegment(md, p)));
            }
            for (int i = 0; i < 30; i++) {
                int start = random.nextInt(log.length);
                int end = start + random.nextInt(log.length - start);
                assertArrayEquals(Arrays.copyOfRange(log, start, end + 1),
                        readAll(rsm.fetchLogSegment(md, start, end)), start + ".." + end);
            }
            // An end beyond the segment stops at its end.
            assertArrayEquals(Arrays.copyOfRange(log, 100, log.length),
                    readAll(rsm.fetchLogSegment(md, 100, Integer.MAX_VALUE)));
            assertArrayEquals(Files.readAllBytes(s.offsetIndex), readAll(rsm.fetchIndex(md, IndexType.OFFSET)));
            assertArrayEquals(Files.readAllBytes(s.timeIndex), readAll(rsm.fetchIndex(md, IndexType.TIMESTAMP)));
            assertArrayEquals(Files.readAllBytes(s.snapshot),
                    readAll(rsm.fetchIndex(md, IndexType.PRODUCER_SNAPSHOT)));
            assertArrayEquals(s.leaderEpochs, readAll(rsm.fetchIndex(md, IndexType.LEADER_EPOCH)));
            if (s.txnIndex.isPresent()) {
                assertArrayEquals(Files.readAllBytes(s.txnIndex.get()),
                        readAll(rsm.fetchIndex(md, IndexType.TRANSACTION)));
            } else {
                RemoteStorageException e = assertThrows(RemoteResourceNotFoundException.class,
                        () -> rsm.fetchIndex(md, IndexType.TRANSACTION));
                assertTrue(e.getMessage().contains("TRANSACTION index"), e.getMessage());
            }
        }
    }

    @Test
    void theBrokersHeaderReadThenEarlyCloseAndShortReads() throws Exception {
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        byte[] log = Files.readAllBytes(plain.log);
        int second = plain.batchPositions.get(1);
        InputStream in = rsm.fetchLogSegment(md, second, log.length - 1);
        byte[] header = new byte[17];
        int n = 0;
        while (n < 17) {
            int r = in.read(header, n, 17 - n);
            assertTrue(r > 0);
            n += r;
        }
        assertArrayEquals(Arrays.copyOfRange(log, second, second + 17), header);
        assertEquals(1, NativeBridge.liveHandles(1));
        in.close();
        assertEquals(0, NativeBridge.liveHandles(1), "close frees the native stream at once");
        in.close();
        assertThrows(IOException.class, () -> in.read());
        assertEquals(0, in.available());

        // A huge buffer gets a short read, never a native buffer of that size: on this filesystem store the
        // segment's blocks are read straight into the array, at most 2 MiB a call (a store read over a network
        // gives what one native piece holds: at most the first ranged read of a fetch, 1 MiB + 128 KiB widened
        // to its 64 KiB CRC blocks).
        try (InputStream big = rsm.fetchLogSegment(md, 0)) {
            byte[] buf = new byte[16 << 20];
            assertEquals(0, big.read(buf, 5, 0));
            assertThrows(IndexOutOfBoundsException.class, () -> big.read(buf, buf.length - 1, 2));
            // The native side checks too, and asks for no memory of the requested size.
            long h = handleOf(big);
            for (int[] bad : new int[][] {{0, Integer.MAX_VALUE}, {-1, 5}, {5, -1}, {buf.length, 1}}) {
                NativeStorageException e = assertThrows(NativeStorageException.class,
                        () -> NativeBridge.read(h, buf, bad[0], bad[1]));
                assertEquals(NativeStorageException.INVALID_ARGUMENT, e.kind(), e.getMessage());
            }
            // The stream still works after refused reads.
            int r = big.read(buf, 0, buf.length);
            assertTrue(r > 0 && r <= 2 << 20, "short read of at most 2 MiB, got " + r);
            assertArrayEquals(Arrays.copyOfRange(log, 0, r), Arrays.copyOfRange(buf, 0, r));
        }
    }

    /** Small reads come from the stream's buffer, large ones straight from native; the bytes are the same. */
    @Test
    void mixedSmallAndLargeReadsAndSkipsReturnTheSegmentsBytes() throws Exception {
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        byte[] log = Files.readAllBytes(plain.log);
        java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
        int expectedSkipped = 0;
        int[] pattern = {17, 3000, 20_000, 1, 70_000, 8191, 8192, 5};
        try (InputStream in = rsm.fetchLogSegment(md, 0)) {
            byte[] buf = new byte[70_000];
            for (int i = 0; ; i++) {
                if (i % 5 == 4) {
                    long skipped = in.skip(777);
                    assertTrue(skipped >= 0 && skipped <= 777, "skip " + skipped);
                    // Skipped bytes stand in as zeros below, at their place.
                    got.write(new byte[(int) skipped]);
                    expectedSkipped += (int) skipped;
                    continue;
                }
                int n = in.read(buf, 0, pattern[i % pattern.length]);
                if (n < 0) {
                    break;
                }
                assertTrue(n > 0 && in.available() >= 0);
                got.write(buf, 0, n);
            }
        }
        byte[] all = got.toByteArray();
        assertEquals(log.length, all.length, "every byte read or skipped once");
        int zeroed = 0;
        for (int i = 0; i < log.length; i++) {
            if (all[i] != log[i]) {
                assertEquals(0, all[i], "byte " + i + " differs and was not skipped");
                zeroed++;
            }
        }
        assertTrue(zeroed <= expectedSkipped && expectedSkipped > 0, zeroed + " of " + expectedSkipped);
    }

    @Test
    void singleByteReadsSkipAvailableAndEnd() throws Exception {
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        byte[] log = Files.readAllBytes(plain.log);
        int start = log.length - 5000;
        try (InputStream in = rsm.fetchLogSegment(md, start)) {
            assertEquals(log[start] & 0xff, in.read());
            assertEquals(log[start + 1] & 0xff, in.read());
            assertTrue(in.available() >= 0);
            assertEquals(1000, in.skip(1000));
            assertEquals(0, in.skip(0));
            assertEquals(0, in.skip(-5));
            byte[] rest = in.readAllBytes();
            assertArrayEquals(Arrays.copyOfRange(log, start + 1002, log.length), rest);
            assertEquals(-1, in.read());
            assertEquals(-1, in.read(new byte[10], 0, 10));
            assertEquals(0, in.skip(10), "skip at the end");
        }
        try (InputStream in = rsm.fetchLogSegment(md, 0)) {
            assertEquals(log.length, in.skip(Long.MAX_VALUE), "a huge skip discards to the end, no buffer");
            assertEquals(-1, in.read());
        }
    }

    @Test
    void aStreamTheBrokerForgetsIsFreedByTheCleaner() throws Exception {
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        WeakReference<InputStream> ref = new WeakReference<>(forgottenStream(md));
        assertEquals(1, NativeBridge.liveHandles(1));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (NativeBridge.liveHandles(1) != 0 && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(null, ref.get());
        assertEquals(0, NativeBridge.liveHandles(1), "the Cleaner closed the native stream");
    }

    private InputStream forgottenStream(RemoteLogSegmentMetadata md) throws Exception {
        InputStream in = rsm.fetchLogSegment(md, 0);
        assertEquals(plain.batchPositions.size() > 0 ? 0 : 1, in.read(new byte[17], 0, 17) > 0 ? 0 : 1);
        return in;
    }

    @Test
    void missingSegmentsAndIndexesAreNotFoundAndDeleteIsIdempotent() throws Exception {
        RemoteLogSegmentMetadata never = plain.metadata(TP);
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(never, 0));
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(never, 0, 10));
        for (IndexType t : IndexType.values()) {
            assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchIndex(never, t));
        }
        rsm.deleteLogSegmentData(never);

        RemoteLogSegmentMetadata md = withTxn.metadata(TP);
        rsm.copyLogSegmentData(md, withTxn.data());
        // Copies are idempotent: a retry with the same id overwrites.
        rsm.copyLogSegmentData(md, withTxn.data());
        assertArrayEquals(Files.readAllBytes(withTxn.log), readAll(rsm.fetchLogSegment(md, 0)));
        rsm.deleteLogSegmentData(md);
        rsm.deleteLogSegmentData(md);
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(md, 0));
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchIndex(md, IndexType.OFFSET));
    }

    /**
     * KIP-1333's 64-bit overloads, as a broker after 4.4 calls them: the same bytes as the int ones, an end past
     * 2 GiB stops at the segment's end, and a start past 2 GiB is outside this segment, not a wrapped int.
     */
    @Test
    void theLongOverloadsServeWhatTheIntOnesServe() throws Exception {
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        byte[] log = Files.readAllBytes(plain.log);
        long start = plain.batchPositions.get(1);
        assertArrayEquals(readAll(rsm.fetchLogSegment(md, (int) start)), readAll(rsm.fetchLogSegment(md, start)));
        assertArrayEquals(Arrays.copyOfRange(log, (int) start, (int) start + 100),
                readAll(rsm.fetchLogSegment(md, start, start + 99L)));
        assertArrayEquals(Arrays.copyOfRange(log, 100, log.length),
                readAll(rsm.fetchLogSegment(md, 100L, 5L * Integer.MAX_VALUE)));
        long past = 1L << 32;
        RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(md, past));
        assertTrue(e.getMessage().contains("start position " + past), e.getMessage());
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(md, -1L));
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(md, 10L, 5L));
        // Public, so that a broker whose interface declares them (as default methods) calls these.
        for (Class<?>[] args : List.of(new Class<?>[] {RemoteLogSegmentMetadata.class, long.class},
                new Class<?>[] {RemoteLogSegmentMetadata.class, long.class, long.class})) {
            assertTrue(java.lang.reflect.Modifier.isPublic(
                    RustRemoteStorageManager.class.getMethod("fetchLogSegment", args).getModifiers()));
        }
    }

    @Test
    void badArgumentsAndBadFilesAreRemoteStorageExceptions() throws Exception {
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        int size = plain.size();
        RemoteStorageException e = assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(md, size));
        assertFalse(e instanceof RemoteResourceNotFoundException);
        assertTrue(e.getMessage().contains("outside segment"), e.getMessage());
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(md, -1));
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(md, 10, 5));
        assertThrows(RemoteStorageException.class, () -> rsm.fetchLogSegment(md, 10, -1));

        // A local file that vanished fails the copy; it is not a missing remote resource.
        Path gone = segmentsDir.resolve("missing.log");
        TestSegments.Segment s = plain;
        org.apache.kafka.server.log.remote.storage.LogSegmentData data =
                new org.apache.kafka.server.log.remote.storage.LogSegmentData(gone, s.offsetIndex, s.timeIndex,
                        s.txnIndex, s.snapshot, java.nio.ByteBuffer.wrap(s.leaderEpochs));
        RemoteStorageException c = assertThrows(RemoteStorageException.class,
                () -> rsm.copyLogSegmentData(plain.metadata(TP), data));
        assertFalse(c instanceof RemoteResourceNotFoundException, c.toString());
        assertTrue(c.getMessage().contains("missing.log"), c.getMessage());

        // A corrupt batch is refused (the copy checks every batch's CRC-32C).
        Path bad = segmentsDir.resolve("corrupt.log");
        byte[] log = Files.readAllBytes(plain.log);
        log[plain.batchPositions.get(3) + 70] ^= 0x55;
        Files.write(bad, log);
        org.apache.kafka.server.log.remote.storage.LogSegmentData badData =
                new org.apache.kafka.server.log.remote.storage.LogSegmentData(bad, s.offsetIndex, s.timeIndex,
                        s.txnIndex, s.snapshot, java.nio.ByteBuffer.wrap(s.leaderEpochs));
        RemoteLogSegmentMetadata badMd = plain.metadata(TP);
        RemoteStorageException ce = assertThrows(RemoteStorageException.class,
                () -> rsm.copyLogSegmentData(badMd, badData));
        assertTrue(ce.getMessage().toLowerCase().contains("crc"), ce.getMessage());
        assertThrows(RemoteResourceNotFoundException.class, () -> rsm.fetchLogSegment(badMd, 0),
                "a failed copy leaves no segment behind");
    }

    @Test
    void settingsAreCheckedAtConfigureTimeNamingTheKey() {
        Map<String, Object> typo = settings();
        typo.put("chunk.sise", "1");
        ConfigException e = assertThrows(ConfigException.class, () -> new RustRemoteStorageManager().configure(typo));
        assertTrue(e.getMessage().contains("`chunk.sise`: unknown setting"), e.getMessage());

        Map<String, Object> bad = settings();
        bad.put("chunk.size", "12");
        e = assertThrows(ConfigException.class, () -> new RustRemoteStorageManager().configure(bad));
        assertTrue(e.getMessage().contains("`chunk.size`: 12 is out of range"), e.getMessage());

        Map<String, Object> noUrl = settings();
        noUrl.remove("store.url");
        e = assertThrows(ConfigException.class, () -> new RustRemoteStorageManager().configure(noUrl));
        assertTrue(e.getMessage().contains("`store.url`: is required"), e.getMessage());

        Map<String, Object> badUrl = settings();
        badUrl.put("store.url", "gopher://x");
        e = assertThrows(ConfigException.class, () -> new RustRemoteStorageManager().configure(badUrl));
        assertTrue(e.getMessage().contains("`store.url`: unsupported store URL scheme `gopher`"), e.getMessage());

        Map<String, Object> typed = settings();
        typed.put("fetch.concurrency", 8);
        typed.put("key.prefix", new Password("tiered/"));
        RustRemoteStorageManager ok = new RustRemoteStorageManager();
        ok.configure(typed);
        ok.close();
    }

    @Test
    void callsBeforeConfigureOrAfterCloseFailCleanly() throws Exception {
        RemoteStorageManager fresh = new RustRemoteStorageManager();
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        assertThrows(RemoteStorageException.class, () -> fresh.fetchLogSegment(md, 0));
        assertThrows(RemoteStorageException.class, () -> fresh.copyLogSegmentData(md, plain.data()));
        fresh.close();
    }

    @Test
    void streamsOutliveTheirStoreUntilClosed() throws Exception {
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        InputStream in = rsm.fetchLogSegment(md, 0);
        rsm.close();
        assertArrayEquals(Files.readAllBytes(plain.log), readAll(in));
        rsm.configure(settings());
    }

    @Test
    void concurrentFetchesFromManyThreads() throws Exception {
        RemoteLogSegmentMetadata a = plain.metadata(TP);
        RemoteLogSegmentMetadata b = withTxn.metadata(TP);
        rsm.copyLogSegmentData(a, plain.data());
        rsm.copyLogSegmentData(b, withTxn.data());
        byte[] la = Files.readAllBytes(plain.log);
        byte[] lb = Files.readAllBytes(withTxn.log);
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 24; t++) {
                int seed = t;
                futures.add(pool.submit(() -> {
                    Random r = new Random(seed);
                    for (int i = 0; i < 10; i++) {
                        boolean first = r.nextBoolean();
                        byte[] log = first ? la : lb;
                        int start = r.nextInt(log.length);
                        assertArrayEquals(Arrays.copyOfRange(log, start, log.length),
                                readAll(rsm.fetchLogSegment(first ? a : b, start)));
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void everyNativeFailureKindMapsToTheBrokersExceptions() {
        String retriable = "org.apache.kafka.server.log.remote.storage.RetriableRemoteStorageException";
        boolean brokerHasRetriable;
        try {
            Class.forName(retriable);
            brokerHasRetriable = true;
        } catch (ClassNotFoundException e) {
            brokerHasRetriable = false;
        }
        for (int kind = 1; kind <= 6; kind++) {
            int k = kind;
            NativeStorageException n = assertThrows(NativeStorageException.class,
                    () -> NativeBridge.selfTest(10 + k, 0, "boom " + k));
            assertEquals(kind, n.kind());
            RemoteStorageException mapped = RustRemoteStorageManager.toRemoteStorageException(n, "op");
            assertTrue(mapped.getMessage().startsWith("op: "), mapped.getMessage());
            assertTrue(mapped.getMessage().contains("boom " + k), mapped.getMessage());
            String expected = kind == 1 ? RemoteResourceNotFoundException.class.getName()
                    : kind == 2 && brokerHasRetriable ? retriable : RemoteStorageException.class.getName();
            assertEquals(expected, mapped.getClass().getName(), "kind " + kind);
            // A transient failure of the store carries no stack frames (Kafka logs each failed remote read
            // with its trace); the others keep theirs.
            boolean framed = kind != NativeStorageException.RETRIABLE;
            assertEquals(framed, mapped.getStackTrace().length > 0, "kind " + kind);
            assertEquals(framed, mapped.getCause().getStackTrace().length > 0, "kind " + kind);
        }
        // Before Kafka 4.2 there is no RetriableRemoteStorageException; from 4.2 there is.
        assertEquals(TestSegments.kafkaApiAtLeast(4, 2), brokerHasRetriable, System.getProperty("kafka.api.version"));
        // Whatever else escapes (an Error included) becomes a RemoteStorageException with the cause kept.
        OutOfMemoryError oom = new OutOfMemoryError("Java heap space");
        RemoteStorageException m = RustRemoteStorageManager.toRemoteStorageException(oom, "copy");
        assertEquals(RemoteStorageException.class, m.getClass());
        assertEquals(oom, m.getCause());
    }

    @Test
    void aRustPanicIsAnExceptionNotACrash() throws Exception {
        NativeStorageException p = assertThrows(NativeStorageException.class,
                () -> NativeBridge.selfTest(1, 0, "on purpose"));
        assertEquals(NativeStorageException.PANIC, p.kind());
        assertTrue(p.getMessage().contains("panic in the native library: self test: on purpose"), p.getMessage());
        assertEquals(RemoteStorageException.class,
                RustRemoteStorageManager.toRemoteStorageException(p, "x").getClass());
        NativeStorageException q = assertThrows(NativeStorageException.class, () -> NativeBridge.selfTest(2, 0, null));
        assertEquals(NativeStorageException.PANIC, q.kind());
        assertTrue(q.getMessage().contains("non-string panic payload"), q.getMessage());

        // A panic while a stream's lock is held: that stream fails cleanly afterwards; others are fine.
        RemoteLogSegmentMetadata md = plain.metadata(TP);
        rsm.copyLogSegmentData(md, plain.data());
        InputStream victim = rsm.fetchLogSegment(md, 0);
        long handle = handleOf(victim);
        assertThrows(NativeStorageException.class, () -> NativeBridge.selfTest(3, handle, null));
        IOException io = assertThrows(IOException.class, () -> victim.read(new byte[10]));
        assertTrue(io.getMessage().contains("a panic interrupted an earlier call"), io.getMessage());
        assertInstanceOf(RemoteStorageException.class, io.getCause());
        victim.close();
        assertArrayEquals(Files.readAllBytes(plain.log), readAll(rsm.fetchLogSegment(md, 0)));
        // Stale and forged handles are errors, not crashes.
        assertThrows(NativeStorageException.class, () -> NativeBridge.read(handle, new byte[4], 0, 4));
        assertThrows(NativeStorageException.class, () -> NativeBridge.read(-99, new byte[4], 0, 4));
        assertFalse(NativeBridge.closeStream(handle));
        assertFalse(NativeBridge.closeStore(12345678L));
    }

    private static long handleOf(InputStream in) throws Exception {
        java.lang.reflect.Field f = NativeInputStream.class.getDeclaredField("handle");
        f.setAccessible(true);
        return f.getLong(in);
    }
}
