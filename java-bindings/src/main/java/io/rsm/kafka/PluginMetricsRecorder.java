package io.rsm.kafka;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.MetricValueProvider;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeCount;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.metrics.stats.Meter;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.metrics.stats.WindowedCount;
import org.apache.kafka.common.utils.Time;

/**
 * The plugin's metrics, per operation (tag {@code operation}): calls, failed calls, bytes and call latency,
 * recorded with Kafka's own {@code org.apache.kafka.common.metrics} (in the 3.9 API); and, without that tag, the
 * store's cache counters ({@code chunk-cache-hits}, ..., named by the native side), read from it when a metric
 * is read ({@link CacheCounters}); and per topic (tag {@code topic}, with tag {@code op} the kind of request),
 * the requests and bytes sent to the remote store for the topic's objects ({@link TopicRequests}), registered
 * when the plugin first works on the topic.
 *
 * <p>They go either to the broker's registry, through KIP-877's {@code PluginMetrics} (see
 * {@code MonitorableRustRemoteStorageManager}), or to a registry of the plugin's own with a {@link JmxReporter}
 * (JMX domain {@value #JMX_DOMAIN}), which {@link #close()} closes, unregistering its MBeans.
 */
final class PluginMetricsRecorder implements AutoCloseable {
    /** The metric group of the plugin's own registry (the broker's {@code PluginMetrics} has its own). */
    static final String GROUP = "remote-storage-manager-metrics";
    /** The JMX domain of the plugin's own registry. */
    static final String JMX_DOMAIN = "io.rsm.kafka";

    private static final AtomicLong INSTANCES = new AtomicLong();

    /** The operations measured; {@link #tag} is the value of the {@code operation} tag. */
    enum Operation {
        COPY_SEGMENT("copy-segment", "segment copies", "bytes of the segment files uploaded"),
        FETCH_SEGMENT("fetch-segment", "segment fetches", "bytes of segments read through the returned streams"),
        FETCH_INDEX("fetch-index", "index fetches", "bytes of indexes read through the returned streams"),
        DELETE_SEGMENT("delete-segment", "segment deletes", null);

        final String tag;
        final String calls;
        /** What the byte metrics count; {@code null}: the operation has none. */
        final String bytes;

        Operation(String tag, String calls, String bytes) {
            this.tag = tag;
            this.calls = calls;
            this.bytes = bytes;
        }
    }

    /**
     * Where sensors and metrics are registered: the broker's {@code PluginMetrics} or the plugin's own
     * {@link Metrics}. The same shape as {@code PluginMetrics}, which does not exist before Kafka 4.1.
     */
    interface SensorRegistry {
        MetricName metricName(String name, String description, LinkedHashMap<String, String> tags);

        Sensor addSensor(String name);

        void removeSensor(String name);

        /** Adds a metric whose value {@code provider} gives each time it is read (a gauge, no sensor). */
        void addMetric(MetricName name, MetricValueProvider<?> provider);

        void removeMetric(MetricName name);

        /** Called once the recorder has removed its sensors and metrics. */
        default void close() {}
    }

    private static final class Sensors {
        final Sensor calls;
        final Sensor errors;
        final Sensor bytes;

        Sensors(Sensor calls, Sensor errors, Sensor bytes) {
            this.calls = calls;
            this.errors = errors;
            this.bytes = bytes;
        }
    }

    /**
     * The caches' counters of the store open now, read through {@link NativeBridge#cacheMetrics} at most once
     * per {@link #MAX_AGE_NANOS} whatever the number of metrics read (a reporter reads them one by one). With no
     * store open, or when the read fails, the last values read (zeros before the first): reading a metric never
     * throws.
     */
    static final class CacheCounters {
        static final long MAX_AGE_NANOS = TimeUnit.SECONDS.toNanos(1);

        private final LongSupplier store;
        private long[] values = new long[0];
        private long readAt;
        private boolean fresh;

        /** @param store the handle of the store open now, 0 when none */
        CacheCounters(LongSupplier store) {
            this.store = store;
        }

        /** The counter at {@code index} of {@link NativeBridge#cacheMetricNames}. */
        synchronized long value(int index) {
            long now = System.nanoTime();
            if (!fresh || now - readAt >= MAX_AGE_NANOS) {
                long s = store.getAsLong();
                if (s != 0) {
                    try {
                        values = NativeBridge.cacheMetrics(s);
                    } catch (RuntimeException | LinkageError e) {
                        // Closed meanwhile, or a library without the method: the last values stand.
                    }
                }
                readAt = now;
                fresh = true;
            }
            return index < values.length ? values[index] : 0;
        }
    }

    /**
     * The most topics given request metrics of their own: the native side counts that many apart
     * ({@code rsm_core::backend::MAX_TOPICS}) and the rest together under {@link #OTHER_TOPICS}, which is
     * registered instead once the bound is reached.
     */
    static final int MAX_TOPICS = 10_000;
    /** The topic the native side counts the requests of topics beyond its bound under. */
    static final String OTHER_TOPICS = "(other topics)";

    /**
     * Every topic's request counts of the store open now, read through {@link NativeBridge#topicRequests} (one
     * call for every topic) at most once per {@link CacheCounters#MAX_AGE_NANOS} whatever the number of metrics
     * read. With no store open, or when the read fails, the last values read (zeros before the first): reading a
     * metric never throws.
     */
    static final class TopicRequests {
        /** The values of one kind of request, in the native side's order. */
        static final int REQUESTS = 0;
        static final int FAILED = 1;
        static final int SENT = 2;
        static final int RECEIVED = 3;
        private static final int FIELDS = 4;

        private final LongSupplier store;
        private final int ops;
        private Map<String, long[]> values = Map.of();
        private long readAt;
        private boolean fresh;

        /**
         * @param store the handle of the store open now, 0 when none
         * @param ops how many kinds of request each topic has ({@link NativeBridge#requestOps})
         */
        TopicRequests(LongSupplier store, int ops) {
            this.store = store;
            this.ops = ops;
        }

        /** The value {@code field} of the kind of request at {@code op} of {@link NativeBridge#requestOps}. */
        synchronized long value(String topic, int op, int field) {
            long[] v = current().get(topic);
            int i = op * FIELDS + field;
            return v != null && i < v.length ? v[i] : 0;
        }

        /** The value {@code field} summed over every kind of request. */
        synchronized long sum(String topic, int field) {
            long[] v = current().get(topic);
            long n = 0;
            for (int i = field; v != null && i < v.length; i += FIELDS) {
                n += v[i];
            }
            return n;
        }

        private Map<String, long[]> current() {
            long now = System.nanoTime();
            if (!fresh || now - readAt >= CacheCounters.MAX_AGE_NANOS) {
                long s = store.getAsLong();
                if (s != 0) {
                    try {
                        values = parse(NativeBridge.topicRequests(s), ops);
                    } catch (RuntimeException | LinkageError e) {
                        // Closed meanwhile, or a library without the method: the last values stand.
                    }
                }
                readAt = now;
                fresh = true;
            }
            return values;
        }

        /** {@code {String[] topics, long[] counts, String level}} as each topic's counts. */
        static Map<String, long[]> parse(Object[] answer, int ops) {
            String[] topics = (String[]) answer[0];
            long[] counts = (long[]) answer[1];
            int per = ops * FIELDS;
            if (counts.length != topics.length * per) {
                throw new IllegalStateException("topicRequests: " + counts.length + " counts for " + topics.length
                        + " topics of " + ops + " kinds of request");
            }
            Map<String, long[]> out = new HashMap<>();
            for (int t = 0; t < topics.length; t++) {
                out.put(topics[t], Arrays.copyOfRange(counts, t * per, (t + 1) * per));
            }
            return out;
        }
    }

    private final SensorRegistry registry;
    private final String description;
    private final Map<Operation, Sensors> sensors = new EnumMap<>(Operation.class);
    private final List<String> sensorNames = new ArrayList<>();
    private final List<MetricName> metricNames = new ArrayList<>();
    /** The kinds of request of {@link NativeBridge#requestOps}; none from a library that lacks them. */
    private final String[] requestOps = requestOps();
    private final TopicRequests topicRequests;
    /** The topics whose request metrics are registered. */
    private final Set<String> topics = ConcurrentHashMap.newKeySet();
    private boolean closed;

    /** @param store the handle of the store open now (0 when none), whose cache counters are published */
    PluginMetricsRecorder(SensorRegistry registry, String description, LongSupplier store) {
        this.registry = registry;
        this.description = description;
        this.topicRequests = new TopicRequests(store, requestOps.length);
        // Sensor names are global in a registry: unique per recorder, so that two never share one.
        String prefix = "io.rsm.kafka." + INSTANCES.incrementAndGet() + ".";
        try {
            for (Operation op : Operation.values()) {
                LinkedHashMap<String, String> tags = new LinkedHashMap<>();
                tags.put("operation", op.tag);
                Sensor calls = sensor(prefix + op.tag + ".calls");
                calls.add(registry.metricName("request-rate", "The number of " + op.calls + " per second", tags),
                        new Rate(TimeUnit.SECONDS, new WindowedCount()));
                calls.add(registry.metricName("request-total", "The total number of " + op.calls
                        + ", failed ones included", tags), new CumulativeCount());
                calls.add(registry.metricName("request-latency-avg", "The average time of " + op.calls
                        + " in ms (of the call; a fetch's stream is read afterwards)", tags), new Avg());
                calls.add(registry.metricName("request-latency-max", "The longest time of " + op.calls
                        + " in ms (of the call; a fetch's stream is read afterwards)", tags), new Max());
                Sensor errors = sensor(prefix + op.tag + ".errors");
                errors.add(registry.metricName("error-rate", "The number of failed " + op.calls + " per second",
                        tags), new Rate(TimeUnit.SECONDS, new WindowedCount()));
                errors.add(registry.metricName("error-total", "The total number of failed " + op.calls, tags),
                        new CumulativeCount());
                Sensor bytes = null;
                if (op.bytes != null) {
                    bytes = sensor(prefix + op.tag + ".bytes");
                    bytes.add(new Meter(TimeUnit.SECONDS,
                            registry.metricName("byte-rate", "The " + op.bytes + " per second", tags),
                            registry.metricName("byte-total", "The total " + op.bytes, tags)));
                }
                sensors.put(op, new Sensors(calls, errors, bytes));
            }
            CacheCounters counters = new CacheCounters(store);
            String[] names = cacheMetricNames();
            String[] descriptions = cacheMetricDescriptions(names);
            for (int i = 0; i < names.length; i++) {
                int index = i;
                MetricName name = registry.metricName(names[i], descriptions[i], new LinkedHashMap<>());
                registry.addMetric(name, (Measurable) (config, now) -> counters.value(index));
                metricNames.add(name);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The cache counters' names; none from a library that lacks them (a stale override of the jar's own). */
    private static String[] cacheMetricNames() {
        try {
            return NativeBridge.cacheMetricNames();
        } catch (LinkageError e) {
            return new String[0];
        }
    }

    /**
     * What each of the counters {@code names} counts, as the native side declares it; a generic text for each from a
     * library that lacks the descriptions (a stale override of the jar's own).
     */
    private static String[] cacheMetricDescriptions(String[] names) {
        try {
            String[] d = NativeBridge.cacheMetricDescriptions();
            if (d.length == names.length) {
                return d;
            }
        } catch (LinkageError e) {
            // Below: a generic text.
        }
        String[] generic = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            generic[i] = "The cache counter " + names[i];
        }
        return generic;
    }

    /** The kinds of request; none from a library that lacks them (a stale override of the jar's own). */
    private static String[] requestOps() {
        try {
            return NativeBridge.requestOps();
        } catch (LinkageError e) {
            return new String[0];
        }
    }

    /**
     * Registers the request metrics of {@code topic} the first time the plugin works on it (after that, one
     * look-up): {@code remote-requests-total} and {@code remote-requests-failed-total} per kind of request (tag
     * {@code op}), {@code remote-bytes-sent-total} and {@code remote-bytes-received-total}, all tagged
     * {@code topic}. Beyond {@link #MAX_TOPICS} topics, {@link #OTHER_TOPICS} is registered instead. Never throws:
     * a registry that refuses the metrics leaves the topic without them.
     */
    void topic(String topic) {
        if (topic == null || topics.contains(topic)) {
            return;
        }
        synchronized (sensorNames) {
            if (closed || requestOps.length == 0 || topics.contains(topic) || topics.contains(OTHER_TOPICS)) {
                return;
            }
            String name = topics.size() < MAX_TOPICS ? topic : OTHER_TOPICS;
            List<MetricName> added = new ArrayList<>();
            try {
                for (int i = 0; i < requestOps.length; i++) {
                    int op = i;
                    LinkedHashMap<String, String> tags = new LinkedHashMap<>();
                    tags.put("topic", name);
                    tags.put("op", requestOps[i]);
                    added.add(gauge("remote-requests-total", "Requests of this kind sent to the remote store about"
                            + " the topic's objects, failed ones included (for a cloud store every HTTP request its"
                            + " client sent: retries, multipart parts, batches)", tags,
                            () -> topicRequests.value(name, op, TopicRequests.REQUESTS)));
                    added.add(gauge("remote-requests-failed-total", "Requests of this kind about the topic's"
                            + " objects that failed (an error, or an HTTP status of 400 or above)", tags,
                            () -> topicRequests.value(name, op, TopicRequests.FAILED)));
                }
                LinkedHashMap<String, String> tags = new LinkedHashMap<>();
                tags.put("topic", name);
                added.add(gauge("remote-bytes-sent-total", "Bytes sent to the remote store about the topic's"
                        + " objects (uploads)", tags, () -> topicRequests.sum(name, TopicRequests.SENT)));
                added.add(gauge("remote-bytes-received-total", "Bytes received from the remote store about the"
                        + " topic's objects (reads)", tags, () -> topicRequests.sum(name, TopicRequests.RECEIVED)));
            } catch (RuntimeException e) {
                for (MetricName m : added) {
                    try {
                        registry.removeMetric(m);
                    } catch (RuntimeException ignored) {
                        // Gone already.
                    }
                }
                metricNames.removeAll(added);
                topics.add(topic);
                return;
            }
            topics.add(name);
            topics.add(topic);
        }
    }

    private MetricName gauge(String name, String description, LinkedHashMap<String, String> tags,
                             LongSupplier value) {
        MetricName m = registry.metricName(name, description, tags);
        registry.addMetric(m, (Measurable) (config, now) -> value.getAsLong());
        metricNames.add(m);
        return m;
    }

    private Sensor sensor(String name) {
        Sensor s = registry.addSensor(name);
        sensorNames.add(name);
        return s;
    }

    /**
     * The plugin's own registry, reported over JMX as
     * {@code io.rsm.kafka:type=remote-storage-manager-metrics,broker-id=<id>,operation=<operation>}, the cache
     * counters as {@code io.rsm.kafka:type=remote-storage-manager-metrics,broker-id=<id>}. Another
     * recorder of the same broker id in this JVM (tests; a broker has one plugin instance) adds
     * {@code instance=<n>}, so that neither replaces, nor on close unregisters, the other's MBeans.
     */
    static PluginMetricsRecorder ownJmx(Object brokerId, LongSupplier store) {
        LinkedHashMap<String, String> base = new LinkedHashMap<>();
        if (brokerId != null) {
            base.put("broker-id", String.valueOf(brokerId));
        }
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        LinkedHashMap<String, String> tags = new LinkedHashMap<>(base);
        for (int n = 2; server.isRegistered(objectName(tags, Operation.COPY_SEGMENT)); n++) {
            tags = new LinkedHashMap<>(base);
            tags.put("instance", Integer.toString(n));
        }
        // Over JMX only the plugin's metrics, not the registry's own count of them.
        JmxReporter jmx = new JmxReporter();
        jmx.configure(Map.of(JmxReporter.EXCLUDE_CONFIG, ".*:type=kafka-metrics-count(,.*)?"));
        Metrics metrics = new Metrics(new MetricConfig().tags(tags), List.of(jmx), Time.SYSTEM,
                new KafkaMetricsContext(JMX_DOMAIN));
        SensorRegistry registry = new SensorRegistry() {
            @Override
            public MetricName metricName(String name, String description, LinkedHashMap<String, String> t) {
                return metrics.metricName(name, GROUP, description, t);
            }

            @Override
            public Sensor addSensor(String name) {
                return metrics.sensor(name);
            }

            @Override
            public void removeSensor(String name) {
                metrics.removeSensor(name);
            }

            @Override
            public void addMetric(MetricName name, MetricValueProvider<?> provider) {
                metrics.addMetric(name, provider);
            }

            @Override
            public void removeMetric(MetricName name) {
                metrics.removeMetric(name);
            }

            @Override
            public void close() {
                metrics.close();
            }
        };
        return new PluginMetricsRecorder(registry, "JMX " + jmxPrefix(tags) + "[,operation=*]", store);
    }

    private static String jmxPrefix(Map<String, String> tags) {
        StringBuilder b = new StringBuilder(JMX_DOMAIN).append(":type=").append(GROUP);
        for (Map.Entry<String, String> e : tags.entrySet()) {
            b.append(',').append(e.getKey()).append('=').append(jmxValue(e.getValue()));
        }
        return b.toString();
    }

    /** A tag value as JmxReporter writes it: as is if plain, else quoted (Kafka's Sanitizer, internal). */
    private static String jmxValue(String v) {
        return v.matches("[\\w-%\\. \t]*") ? v : ObjectName.quote(v);
    }

    /** The object name the plugin's own registry gives an operation's MBean. */
    static ObjectName objectName(Map<String, String> tags, Operation op) {
        String name = jmxPrefix(tags) + ",operation=" + op.tag;
        try {
            return new ObjectName(name);
        } catch (MalformedObjectNameException e) {
            throw new IllegalArgumentException(name, e);
        }
    }

    /** Records one call: its latency from {@code startNanos}, and a failure unless {@code ok}. */
    void call(Operation op, long startNanos, boolean ok) {
        Sensors s = sensors.get(op);
        s.calls.record((System.nanoTime() - startNanos) / 1e6);
        if (!ok) {
            s.errors.record(1);
        }
    }

    void bytes(Operation op, long n) {
        if (n > 0) {
            sensors.get(op).bytes.record(n);
        }
    }

    /** Counts the bytes read from a fetch's stream. */
    LongConsumer bytesOf(Operation op) {
        Sensor s = sensors.get(op).bytes;
        return n -> s.record(n);
    }

    /**
     * Counts a failure of a fetch that happened in its stream, after the call that returned the stream was
     * counted as made: the stream's reads failed (a store that stopped answering, bytes that failed their check).
     */
    Runnable failureOf(Operation op) {
        Sensor s = sensors.get(op).errors;
        return () -> s.record(1);
    }

    /** Removes the sensors and the metrics; closing twice is harmless. */
    @Override
    public void close() {
        synchronized (sensorNames) {
            if (closed) {
                return;
            }
            closed = true;
            for (String name : sensorNames) {
                try {
                    registry.removeSensor(name);
                } catch (RuntimeException e) {
                    // The broker closed its PluginMetrics first: the metrics are gone already.
                }
            }
            sensorNames.clear();
            for (MetricName name : metricNames) {
                try {
                    registry.removeMetric(name);
                } catch (RuntimeException e) {
                    // As for the sensors.
                }
            }
            metricNames.clear();
            registry.close();
        }
    }

    @Override
    public String toString() {
        return description;
    }
}
