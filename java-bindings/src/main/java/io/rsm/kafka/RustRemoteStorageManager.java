package io.rsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import io.rsm.kafka.PluginMetricsRecorder.Operation;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka's {@link RemoteStorageManager} over the Rust tiered-storage SDK (through JNI).
 *
 * <p>Install: put the plugin jar in {@code remote.log.storage.manager.class.path}, set
 * {@code remote.log.storage.manager.class.name=io.rsm.kafka.RustRemoteStorageManager} and the store with
 * {@code rsm.config.store.url=file:///var/lib/kafka/tiered} (see java-bindings/README.md for every setting).
 *
 * <p>Every failure reaches the broker as a {@link RemoteStorageException}: a missing segment or index as
 * {@link RemoteResourceNotFoundException}, a transient store failure as
 * {@code RetriableRemoteStorageException} where the broker's API has it (Kafka 4.2 and later; a plain
 * {@code RemoteStorageException} before), and everything else, a panic in the native code and an
 * {@link OutOfMemoryError} included, as a {@code RemoteStorageException} with the cause attached. No
 * {@link Error} escapes a storage call.
 *
 * <p>Metrics (calls, failures, bytes and latency per operation, the store's cache counters, and per topic the
 * requests and bytes sent to the store, see {@link PluginMetricsRecorder}) go to a registry of the plugin's own,
 * reported over JMX; {@code MonitorableRustRemoteStorageManager}, for brokers 4.1 and later, hands them to the
 * broker's registry instead (KIP-877).
 */
public class RustRemoteStorageManager implements RemoteStorageManager {
    /** The setting (under {@code rsm.config.}) that names the store. */
    public static final String STORE_URL = "store.url";
    /**
     * Tests only: {@code true} lets {@link #STORE_URL} be {@code memory:}, a store in the broker's memory that
     * loses every tiered segment when the broker stops. Without it the plugin refuses {@code memory:}.
     */
    public static final String MEMORY_ALLOWED = "store.memory.allowed";
    /** How the broker names a plugin setting: {@code rsm.config.} and the key. */
    static final String PREFIX = "rsm.config.";
    /** Settings the broker adds to the plugin's map; the plugin does not pass them to the store. */
    static final Set<String> BROKER_KEYS = Set.of("broker.id", "node.id");

    private static final Logger log = LoggerFactory.getLogger(RustRemoteStorageManager.class);
    private static final Constructor<? extends RemoteStorageException> RETRIABLE = retriableConstructor();

    private volatile long store;
    private volatile String description = "unconfigured";
    /** Where the metrics go; {@code null} until configured and after close. Changed under {@code this}. */
    private volatile PluginMetricsRecorder metrics;
    /** The broker's registry, once handed over (KIP-877); used from then on instead of the plugin's own. */
    private PluginMetricsRecorder.SensorRegistry brokerRegistry;
    /** The broker's {@code broker.id} setting: a tag of the plugin's own metrics. */
    private Object brokerId;

    /** Kafka instantiates the plugin by reflection and then calls {@link #configure}. */
    public RustRemoteStorageManager() {}

    /**
     * Opens the store. {@code configs} holds the broker's {@code rsm.config.*} settings without the prefix,
     * plus {@code broker.id}. Unknown or malformed settings throw a {@link ConfigException} naming the key.
     */
    @Override
    public synchronized void configure(Map<String, ?> configs) {
        if (configs == null) {
            throw new ConfigException("rsm plugin: configure: argument configs is null");
        }
        boolean memoryAllowed = memoryAllowed(configs.get(MEMORY_ALLOWED));
        if (isMemoryUrl(configs.get(STORE_URL)) && !memoryAllowed) {
            throw new ConfigException("rsm plugin: `" + PREFIX + STORE_URL + "`=" + configs.get(STORE_URL)
                    + " is a store in the broker's memory: every tiered segment is lost when the broker stops."
                    + " Set a durable store (file:///var/lib/kafka/tiered, s3://bucket/prefix, ...); `"
                    + PREFIX + MEMORY_ALLOWED + "=true` allows it, for tests only");
        }
        try {
            NativeBridge.ensureLoaded();
        } catch (UnsatisfiedLinkError e) {
            throw new KafkaException("rsm plugin: the native library is not available: " + e.getMessage(), e);
        }
        List<String> keys = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            if (BROKER_KEYS.contains(e.getKey()) || MEMORY_ALLOWED.equals(e.getKey())) {
                continue;
            }
            Object v = e.getValue();
            keys.add(e.getKey());
            values.add(v == null ? "" : v instanceof Password ? ((Password) v).value() : String.valueOf(v));
        }
        long handle;
        try {
            handle = NativeBridge.openStore(keys.toArray(new String[0]), values.toArray(new String[0]));
        } catch (NativeStorageException e) {
            if (e.kind() == NativeStorageException.CONFIG) {
                ConfigException c = new ConfigException("rsm plugin: " + e.getMessage());
                c.initCause(e);
                throw c;
            }
            throw new KafkaException("rsm plugin: cannot open the store: " + e.getMessage(), e);
        }
        long previous = store;
        store = handle;
        description = String.valueOf(configs.get(STORE_URL));
        if (previous != 0) {
            NativeBridge.closeStore(previous);
        }
        brokerId = configs.get("broker.id");
        if (metrics == null) {
            metrics = newRecorder();
        }
        log.info("rsm plugin configured: store {} for broker {} ({} settings), metrics in {}", description,
                brokerId, keys.size(), metrics);
        if (isMemoryUrl(configs.get(STORE_URL))) {
            log.warn("rsm plugin: the store is in memory ({}{}=true): every tiered segment is lost when the"
                    + " broker stops; for tests only", PREFIX, MEMORY_ALLOWED);
        }
    }

    /** Whether a store URL names the volatile in-memory store ({@code memory:}), as the native side reads it. */
    static boolean isMemoryUrl(Object url) {
        if (url == null) {
            return false;
        }
        String u = url.toString().trim();
        int sep = u.indexOf("://");
        String scheme = sep >= 0 ? u.substring(0, sep) : u.endsWith(":") ? u.substring(0, u.length() - 1) : u;
        return scheme.equalsIgnoreCase("memory");
    }

    /** The value of {@link #MEMORY_ALLOWED}: absent is {@code false}; anything but true or false is refused. */
    private static boolean memoryAllowed(Object value) {
        if (value == null) {
            return false;
        }
        String v = (value instanceof Password ? ((Password) value).value() : value.toString()).trim();
        if (v.equalsIgnoreCase("true")) {
            return true;
        }
        if (v.equalsIgnoreCase("false") || v.isEmpty()) {
            return false;
        }
        throw new ConfigException("rsm plugin: `" + PREFIX + MEMORY_ALLOWED + "`: `" + v
                + "` is not true or false");
    }

    /** In the broker's registry if it handed one over and it still takes sensors; else the plugin's own. */
    private PluginMetricsRecorder newRecorder() {
        if (brokerRegistry != null) {
            try {
                return new PluginMetricsRecorder(brokerRegistry, "the broker's metrics (KIP-877)", () -> store);
            } catch (RuntimeException e) {
                log.warn("rsm plugin: the broker's metrics registry refused the plugin's metrics, which go to its"
                        + " own JMX registry instead: {}", e.toString());
            }
        }
        return PluginMetricsRecorder.ownJmx(brokerId, () -> store);
    }

    /**
     * Moves the metrics to the broker's registry ({@code MonitorableRustRemoteStorageManager} calls this from
     * {@code withPluginMetrics}, which Kafka calls right after {@link #configure}). The plugin's own registry,
     * if any, is closed: its MBeans go.
     */
    synchronized void useBrokerMetrics(PluginMetricsRecorder.SensorRegistry registry) {
        brokerRegistry = Objects.requireNonNull(registry, "registry");
        PluginMetricsRecorder old = metrics;
        if (old != null) {
            metrics = newRecorder();
            old.close();
            log.info("rsm plugin: metrics in {}", metrics);
        }
    }

    /** Where the metrics go now (tests). */
    PluginMetricsRecorder metrics() {
        return metrics;
    }

    private long store() throws RemoteStorageException {
        long s = store;
        if (s == 0) {
            throw new RemoteStorageException("rsm plugin: not configured, or closed");
        }
        return s;
    }

    @Override
    public Optional<CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata metadata, LogSegmentData data)
            throws RemoteStorageException {
        String what = "copyLogSegmentData";
        long start = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            what = "copy of segment " + segmentId(metadata, what);
            topicSeen(m, metadata);
            argument(data, "logSegmentData", what);
            byte[] epochs = bytes(argument(data.leaderEpochIndex(), "logSegmentData.leaderEpochIndex", what));
            Optional<Path> txn = argument(data.transactionIndex(), "logSegmentData.transactionIndex", what);
            // The start of an upload, for an operator following a copy (and a test killing a broker mid-copy).
            log.debug("rsm plugin: copying segment {} (offsets {}..{}, {} bytes)", segmentId(metadata, what),
                    metadata.startOffset(), metadata.endOffset(), metadata.segmentSizeInBytes());
            byte[] custom = NativeBridge.copy(store(), MetadataCodec.encode(metadata),
                    path(data.logSegment(), "logSegmentData.logSegment", what),
                    path(data.offsetIndex(), "logSegmentData.offsetIndex", what),
                    path(data.timeIndex(), "logSegmentData.timeIndex", what),
                    txn.map(Path::toString).orElse(null),
                    path(data.producerSnapshotIndex(), "logSegmentData.producerSnapshotIndex", what), epochs);
            ok = true;
            if (m != null) {
                m.bytes(Operation.COPY_SEGMENT, uploadedBytes(data, epochs.length));
            }
            return custom == null ? Optional.empty() : Optional.of(new CustomMetadata(custom));
        } catch (Throwable t) {
            // A local file the broker handed over that is missing is a failed copy, not a missing resource.
            throw toRemoteStorageException(t, what, false);
        } finally {
            if (m != null) {
                m.call(Operation.COPY_SEGMENT, start, ok);
            }
        }
    }

    /** The bytes a copy uploaded: the segment's files and the leader-epoch checkpoint. */
    private static long uploadedBytes(LogSegmentData data, int epochBytes) {
        long n = epochBytes;
        List<Path> files = new ArrayList<>(List.of(data.logSegment(), data.offsetIndex(), data.timeIndex(),
                data.producerSnapshotIndex()));
        data.transactionIndex().ifPresent(files::add);
        for (Path p : files) {
            try {
                n += Files.size(p);
            } catch (IOException | RuntimeException e) {
                // Gone since the copy read it (the broker's retention); the metric misses it.
            }
        }
        return n;
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition)
            throws RemoteStorageException {
        return fetch(metadata, startPosition, -1, false);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition, int endPosition)
            throws RemoteStorageException {
        return fetch(metadata, startPosition, endPosition, true);
    }

    /**
     * The segment's bytes from {@code startPosition} to its end, for positions past 2 GiB (KIP-1333). Kafka's
     * interface declares it as a default method after 4.4 (the int form deprecated), which this overrides; on
     * 3.9 to 4.4 it is a method of this class only.
     */
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, long startPosition)
            throws RemoteStorageException {
        return fetch(metadata, startPosition, -1, false);
    }

    /** The segment's bytes from {@code startPosition} to {@code endPosition} inclusive, 64-bit (KIP-1333). */
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, long startPosition, long endPosition)
            throws RemoteStorageException {
        return fetch(metadata, startPosition, endPosition, true);
    }

    /** A fetch from {@code start} to {@code end} (inclusive) if {@code hasEnd}, else to the segment's end. */
    private InputStream fetch(RemoteLogSegmentMetadata metadata, long start, long end, boolean hasEnd)
            throws RemoteStorageException {
        String what = "fetchLogSegment";
        long t0 = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            what = "segment " + segmentId(metadata, what) + " from position " + start;
            topicSeen(m, metadata);
            if (start < 0) {
                throw new RemoteStorageException(what + ": argument startPosition " + start + " is negative");
            }
            if (hasEnd && end < start) {
                throw new RemoteStorageException(what + ": argument endPosition " + end
                        + " is before startPosition " + start);
            }
            long h = NativeBridge.fetchSegment(store(), MetadataCodec.encode(metadata), start, hasEnd ? end : -1);
            InputStream in = new NativeInputStream(h, what, m == null ? null : m.bytesOf(Operation.FETCH_SEGMENT),
                    m == null ? null : m.failureOf(Operation.FETCH_SEGMENT));
            ok = true;
            return in;
        } catch (Throwable t) {
            throw toRemoteStorageException(t, what);
        } finally {
            if (m != null) {
                m.call(Operation.FETCH_SEGMENT, t0, ok);
            }
        }
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata metadata, IndexType indexType)
            throws RemoteStorageException {
        String what = "fetchIndex";
        long start = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            what = "index of segment " + segmentId(metadata, what);
            topicSeen(m, metadata);
            argument(indexType, "indexType", what);
            what = indexType + " " + what;
            long h = NativeBridge.fetchIndex(store(), MetadataCodec.encode(metadata), indexCode(indexType));
            InputStream in = new NativeInputStream(h, what, m == null ? null : m.bytesOf(Operation.FETCH_INDEX),
                    m == null ? null : m.failureOf(Operation.FETCH_INDEX));
            ok = true;
            return in;
        } catch (Throwable t) {
            RemoteStorageException e = toRemoteStorageException(t, what);
            // A segment without transactions has no transaction index: Kafka asks for it anyway and takes
            // not-found as the answer, so that is no failure in the metrics.
            ok = indexType == IndexType.TRANSACTION && e instanceof RemoteResourceNotFoundException;
            throw e;
        } finally {
            if (m != null) {
                m.call(Operation.FETCH_INDEX, start, ok);
            }
        }
    }

    /** The native side's number for an index type (its position in Kafka's declaration, fixed here). */
    static int indexCode(IndexType type) {
        switch (type) {
            case OFFSET: return 0;
            case TIMESTAMP: return 1;
            case PRODUCER_SNAPSHOT: return 2;
            case TRANSACTION: return 3;
            case LEADER_EPOCH: return 4;
            default: throw new IllegalArgumentException("unknown index type " + type);
        }
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        String what = "deleteLogSegmentData";
        long start = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            what = "delete of segment " + segmentId(metadata, what);
            topicSeen(m, metadata);
            NativeBridge.delete(store(), MetadataCodec.encode(metadata));
            ok = true;
        } catch (Throwable t) {
            throw toRemoteStorageException(t, what);
        } finally {
            if (m != null) {
                m.call(Operation.DELETE_SEGMENT, start, ok);
            }
        }
    }

    /**
     * Releases the store and removes the metrics (the plugin's own MBeans go); streams already open stay
     * readable until closed. Closing twice is harmless.
     */
    @Override
    public synchronized void close() {
        long s = store;
        store = 0;
        PluginMetricsRecorder m = metrics;
        metrics = null;
        if (m != null) {
            m.close();
        }
        if (s != 0) {
            NativeBridge.closeStore(s);
            log.info("rsm plugin closed: store {}", description);
        }
    }

    /** {@code value}, or a {@link RemoteStorageException} naming the argument {@code name} if it is null. */
    private static <T> T argument(T value, String name, String what) throws RemoteStorageException {
        if (value == null) {
            throw new RemoteStorageException(what + ": argument " + name + " is null");
        }
        return value;
    }

    /** Registers the request metrics of the segment's topic the first time the plugin works on it. */
    private static void topicSeen(PluginMetricsRecorder m, RemoteLogSegmentMetadata metadata) {
        if (m != null && metadata.remoteLogSegmentId().topicIdPartition() != null) {
            m.topic(metadata.remoteLogSegmentId().topicIdPartition().topic());
        }
    }

    /** The segment id of {@code metadata}, checked: neither may be null. */
    private static Object segmentId(RemoteLogSegmentMetadata metadata, String what) throws RemoteStorageException {
        return argument(argument(metadata, "remoteLogSegmentMetadata", what).remoteLogSegmentId(),
                "remoteLogSegmentMetadata.remoteLogSegmentId", what);
    }

    /** A local file the broker handed over, as the native side takes it. */
    private static String path(Path p, String name, String what) throws RemoteStorageException {
        return argument(p, name, what).toString();
    }

    private static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    static RemoteStorageException toRemoteStorageException(Throwable t, String what) {
        return toRemoteStorageException(t, what, true);
    }

    /**
     * Maps any failure to the exception the broker expects: never an {@link Error}, never a bare
     * {@link RuntimeException}.
     */
    static RemoteStorageException toRemoteStorageException(Throwable t, String what, boolean notFoundIsResource) {
        if (t instanceof RemoteStorageException) {
            return (RemoteStorageException) t;
        }
        if (t instanceof NativeStorageException) {
            NativeStorageException e = (NativeStorageException) t;
            String message = what + ": " + e.getMessage();
            switch (e.kind()) {
                case NativeStorageException.NOT_FOUND:
                    return notFoundIsResource ? new RemoteResourceNotFoundException(message, e)
                            : new RemoteStorageException(message, e);
                case NativeStorageException.RETRIABLE:
                    return withoutFrames(retriable(message, withoutFrames(e)));
                default:
                    return new RemoteStorageException(message, e);
            }
        }
        return new RemoteStorageException(what + ": unexpected failure in the rsm plugin: " + t, t);
    }

    /** No stack frames: see {@link #withoutFrames}. */
    private static final StackTraceElement[] NO_FRAMES = new StackTraceElement[0];

    /**
     * {@code t} without its stack frames, for a transient failure of the store: Kafka's remote log reader logs
     * every failed remote read at ERROR with its stack trace (some 30 lines of the broker's and our frames
     * that say nothing the message does not), once per fetch the consumer retries; the message names the
     * segment, the key and the store's error.
     */
    static <T extends Throwable> T withoutFrames(T t) {
        t.setStackTrace(NO_FRAMES);
        return t;
    }

    /** Whether {@code t} is a transient failure of the store, as the native library reported it. */
    static boolean isRetriable(Throwable t) {
        return t instanceof NativeStorageException
                && ((NativeStorageException) t).kind() == NativeStorageException.RETRIABLE;
    }

    private static RemoteStorageException retriable(String message, Throwable cause) {
        if (RETRIABLE != null) {
            try {
                return RETRIABLE.newInstance(message, cause);
            } catch (ReflectiveOperationException | RuntimeException e) {
                // Fall through to the baseline exception.
            }
        }
        return new RemoteStorageException(message, cause);
    }

    /** {@code RetriableRemoteStorageException(String, Throwable)} where the broker's API has it (Kafka 4.2+). */
    private static Constructor<? extends RemoteStorageException> retriableConstructor() {
        try {
            Class<?> c = Class.forName("org.apache.kafka.server.log.remote.storage.RetriableRemoteStorageException",
                    false, RemoteStorageException.class.getClassLoader());
            return c.asSubclass(RemoteStorageException.class).getConstructor(String.class, Throwable.class);
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            return null;
        }
    }

    @Override
    public String toString() {
        return "RustRemoteStorageManager[" + description + "]";
    }
}
