package io.rsm.kafka;

import java.util.LinkedHashMap;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.MetricValueProvider;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;

/**
 * {@link RustRemoteStorageManager} for Kafka 4.1 and later brokers that load the plugin from their own class
 * path ({@code libs/}, with {@code remote.log.storage.manager.class.path} empty): the broker hands it its
 * metrics registry (KIP-877), and the plugin's metrics appear among the broker's, as
 * {@code kafka.server:type=plugins,config=remote.log.storage.manager.class.name,
 * class=MonitorableRustRemoteStorageManager,operation=...}.
 *
 * <p>Compiled on its own against the 4.1 API ({@code src/main/java-kafka41}, see the pom): a 4.0 broker has no
 * {@link Monitorable} and cannot load this class; it uses {@link RustRemoteStorageManager}, whose metrics go
 * to JMX through the plugin's own registry.
 */
public class MonitorableRustRemoteStorageManager extends RustRemoteStorageManager implements Monitorable {
    /** Kafka instantiates the plugin by reflection, calls {@link #configure}, then {@link #withPluginMetrics}. */
    public MonitorableRustRemoteStorageManager() {}

    @Override
    public void withPluginMetrics(PluginMetrics metrics) {
        useBrokerMetrics(new PluginMetricsRecorder.SensorRegistry() {
            @Override
            public MetricName metricName(String name, String description, LinkedHashMap<String, String> tags) {
                return metrics.metricName(name, description, tags);
            }

            @Override
            public Sensor addSensor(String name) {
                return metrics.addSensor(name);
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
            // close: the broker closes its PluginMetrics itself, after the plugin.
        });
    }

    @Override
    public String toString() {
        return "Monitorable" + super.toString();
    }
}
