package io.rsm.kafka;

/**
 * The native methods of {@code librsm_jni} (crate {@code rsm-jni}, {@code ffi/jni/src/lib.rs}), and the one
 * place that makes sure the library is loaded and initialised before any of them runs.
 *
 * <p>Every native method throws {@link NativeStorageException} on failure, a Rust panic included; handles are
 * registry ids, so a stale or doubled handle is an error (or, for the close methods, {@code false}), never a
 * crash.
 */
final class NativeBridge {
    private static volatile boolean ready;

    private NativeBridge() {}

    /**
     * Loads and initialises the native library once per class loader (later calls return at once).
     *
     * @throws UnsatisfiedLinkError when there is no library for this platform, or it does not load
     */
    static void ensureLoaded() {
        if (ready) {
            return;
        }
        synchronized (NativeBridge.class) {
            if (ready) {
                return;
            }
            NativeLoader.load();
            init(NativeStorageException.class, NativeLog.currentLevel());
            NativeLog.start();
            ready = true;
        }
    }

    static native void init(Class<?> exceptionClass, int logLevel);

    static native String version();

    static native long openStore(String[] keys, String[] values);

    static native boolean closeStore(long store);

    /** The names of the caches' counters ({@code rsm_facade::CACHE_METRICS}), in {@link #cacheMetrics}'s order. */
    static native String[] cacheMetricNames();

    /**
     * What each of the caches' counters counts ({@code rsm_facade::STORE_METRICS}, where each is declared once), in
     * {@link #cacheMetricNames}'s order.
     */
    static native String[] cacheMetricDescriptions();

    /**
     * The store's cache counters, named by {@link #cacheMetricNames} (a count beyond {@code Long.MAX_VALUE} reads
     * as {@code Long.MAX_VALUE}).
     */
    static native long[] cacheMetrics(long store);

    /** The kinds of request ({@code PUT}, {@code GET}, ...), in the order of each topic's {@link #topicRequests}. */
    static native String[] requestOps();

    /**
     * Every topic's requests so far, in one call: {@code {String[] topics, long[] counts, String level}}, where
     * {@code counts} holds, for each topic in order and each kind of request of {@link #requestOps} in order, its
     * requests, failed requests, bytes sent and bytes received; {@code level} is {@code store} (a cloud store's
     * HTTP requests) or {@code contract} (calls on the store). A count beyond {@code Long.MAX_VALUE} reads as
     * {@code Long.MAX_VALUE}.
     */
    static native Object[] topicRequests(long store);

    static native byte[] copy(long store, byte[] metadata, String log, String offsetIndex, String timeIndex,
                              String transactionIndex, String producerSnapshot, byte[] leaderEpochCheckpoint);

    static native long fetchSegment(long store, byte[] metadata, long start, long end);

    static native long fetchIndex(long store, byte[] metadata, int indexType);

    static native void delete(long store, byte[] metadata);

    static native int read(long stream, byte[] buf, int off, int len);

    static native long skip(long stream, long n);

    static native int available(long stream);

    static native boolean closeStream(long stream);

    /** @param what 0 for stores, 1 for streams */
    static native long liveHandles(int what);

    static native String describeMetadata(byte[] metadata);

    static native String pollLog(long timeoutMillis);

    static native void setLogLevel(int level);

    static native long droppedLogEvents();

    /** Diagnostics on the shipped library; see {@code selfTest} in {@code ffi/jni/src/lib.rs}. */
    static native void selfTest(int what, long handle, String message);
}
