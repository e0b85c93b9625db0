package io.rsm.kafka;

import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * A JMX connection to the broker, kept open, for the figures of each phase of {@link BrokerStoreFaultsIT}:
 * single attributes, sums over a pattern, and the snapshot of the counters the phases compare.
 */
final class BrokerJmx implements AutoCloseable {
    private final JMXConnector connector;
    private final MBeanServerConnection server;

    BrokerJmx(int port) throws IOException {
        connector = JMXConnectorFactory.connect(
                new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + port + "/jmxrmi"));
        server = connector.getMBeanServerConnection();
    }

    /** The attribute of one MBean, or null when it is not there (yet). */
    Double value(String name, String attribute) {
        try {
            Object v = server.getAttribute(new ObjectName(name), attribute);
            return v instanceof Number ? ((Number) v).doubleValue() : null;
        } catch (Exception e) {
            return null;
        }
    }

    /** The sum of an attribute over the MBeans matching a pattern, or null when none matches. */
    Double sum(String pattern, String attribute) {
        try {
            Double total = null;
            for (ObjectName name : server.queryNames(new ObjectName(pattern), null)) {
                Object v = server.getAttribute(name, attribute);
                if (v instanceof Number) {
                    total = (total == null ? 0 : total) + ((Number) v).doubleValue();
                }
            }
            return total;
        } catch (Exception e) {
            return null;
        }
    }

    /** The counters the phases compare, by a short name (those the broker does not have are left out). */
    Map<String, Double> snapshot() {
        Map<String, Double> m = new TreeMap<>();
        String plugin = "io.rsm.kafka:type=remote-storage-manager-metrics,broker-id=1";
        put(m, "kafka.fetch.errors", value("kafka.server:type=BrokerTopicMetrics,name=RemoteFetchErrorsPerSec",
                "Count"));
        put(m, "kafka.fetch.requests", value(
                "kafka.server:type=BrokerTopicMetrics,name=RemoteFetchRequestsPerSec", "Count"));
        put(m, "kafka.copy.errors", value("kafka.server:type=BrokerTopicMetrics,name=RemoteCopyErrorsPerSec",
                "Count"));
        put(m, "plugin.fetch.errors", value(plugin + ",operation=fetch-segment", "error-total"));
        put(m, "plugin.fetch.requests", value(plugin + ",operation=fetch-segment", "request-total"));
        put(m, "plugin.fetch.bytes", value(plugin + ",operation=fetch-segment", "byte-total"));
        put(m, "store.bytes.read", value(plugin, "store-bytes-read"));
        put(m, "plugin.index.errors", value(plugin + ",operation=fetch-index", "error-total"));
        put(m, "plugin.copy.errors", value(plugin + ",operation=copy-segment", "error-total"));
        put(m, "plugin.copies", value(plugin + ",operation=copy-segment", "request-total"));
        put(m, "plugin.requests", sum(plugin + ",topic=" + BrokerStoreFaultsIT.TOPIC + ",op=*",
                "remote-requests-total"));
        put(m, "plugin.requests.failed", sum(plugin + ",topic=" + BrokerStoreFaultsIT.TOPIC + ",op=*",
                "remote-requests-failed-total"));
        put(m, "breaker.opened", value(plugin, "store-breaker-opened"));
        put(m, "breaker.refused", value(plugin, "store-breaker-refused"));
        put(m, "throttled", value(plugin, "store-throttled"));
        put(m, "retries.refused", value(plugin, "store-retries-refused"));
        return m;
    }

    private static void put(Map<String, Double> m, String key, Double v) {
        if (v != null) {
            m.put(key, v);
        }
    }

    @Override
    public void close() throws IOException {
        connector.close();
    }
}
