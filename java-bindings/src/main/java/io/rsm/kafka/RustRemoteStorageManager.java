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
 * <p>Metrics (calls, failures, bytes and latency per operation, and the store's cache counters, see
 * {@link PluginMetricsRecorder}) go to a registry of the plugin's own, reported over JMX;
 * {@code MonitorableRustRemoteStorageManager}, for brokers 4.1 and later, hands them to the broker's registry
 * instead (KIP-877).
 */
public class RustRemoteStorageManager implements RemoteStorageManager {
    /** The setting (under {@code rsm.config.}) that names the store. */
    public static final String STORE_URL = "store.url";
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
        Objects.requireNonNull(configs, "configs");
        try {
            NativeBridge.ensureLoaded();
        } catch (UnsatisfiedLinkError e) {
            throw new KafkaException("rsm plugin: the native library is not available: " + e.getMessage(), e);
        }
        List<String> keys = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            if (BROKER_KEYS.contains(e.getKey())) {
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
        String what = "copy of segment " + metadata.remoteLogSegmentId();
        long start = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            byte[] epochs = bytes(data.leaderEpochIndex());
            byte[] custom = NativeBridge.copy(store(), MetadataCodec.encode(metadata),
                    data.logSegment().toString(), data.offsetIndex().toString(), data.timeIndex().toString(),
                    data.transactionIndex().map(Path::toString).orElse(null),
                    data.producerSnapshotIndex().toString(), epochs);
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
        return fetch(metadata, startPosition, -1);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition, int endPosition)
            throws RemoteStorageException {
        if (endPosition < 0) {
            throw new RemoteStorageException("end position " + endPosition + " is negative");
        }
        return fetch(metadata, startPosition, endPosition);
    }

    private InputStream fetch(RemoteLogSegmentMetadata metadata, int start, int end) throws RemoteStorageException {
        String what = "segment " + metadata.remoteLogSegmentId() + " from position " + start;
        long t0 = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            long h = NativeBridge.fetchSegment(store(), MetadataCodec.encode(metadata), start, end);
            InputStream in = new NativeInputStream(h, what, m == null ? null : m.bytesOf(Operation.FETCH_SEGMENT));
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
        String what = indexType + " index of segment " + metadata.remoteLogSegmentId();
        long start = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            long h = NativeBridge.fetchIndex(store(), MetadataCodec.encode(metadata), indexCode(indexType));
            InputStream in = new NativeInputStream(h, what, m == null ? null : m.bytesOf(Operation.FETCH_INDEX));
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
        long start = System.nanoTime();
        PluginMetricsRecorder m = metrics;
        boolean ok = false;
        try {
            NativeBridge.delete(store(), MetadataCodec.encode(metadata));
            ok = true;
        } catch (Throwable t) {
            throw toRemoteStorageException(t, "delete of segment " + metadata.remoteLogSegmentId());
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
                    return retriable(message, e);
                default:
                    return new RemoteStorageException(message, e);
            }
        }
        return new RemoteStorageException(what + ": unexpected failure in the rsm plugin: " + t, t);
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
