package io.rsm.kafka;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.apache.kafka.common.Uuid;

/**
 * A real KRaft cluster from Maven Central, each node a subprocess: one controller (a quorum of one voter, in
 * a JVM of its own, so brokers can be killed, wiped and restarted without touching the quorum) and three
 * brokers, each with two log directories (JBOD) and our plugin jar on its
 * {@code remote.log.storage.manager.class.path}, all tiering to one shared store. Internal topics, the
 * remote log metadata topic included, have replication factor 3 and {@code min.insync.replicas} 2.
 */
final class KafkaCluster implements AutoCloseable {
    static final int CONTROLLER_ID = 100;
    final String version;
    final TestStore store;
    final KafkaBroker controller;
    /** The brokers, node ids 1, 2 and 3 at indexes 0, 1 and 2. */
    final List<KafkaBroker> brokers = new ArrayList<>();

    KafkaCluster(String version, String classpath, Path work, Path pluginJar, TestStore store) throws IOException {
        this.version = version;
        this.store = store;
        int controllerPort = KafkaBroker.freePort();
        Map<String, String> common = new TreeMap<>(KafkaBroker.tiered(pluginJar, store, false));
        common.put("controller.quorum.voters", CONTROLLER_ID + "@127.0.0.1:" + controllerPort);
        // A killed broker is fenced, and its partitions led by another, within a few seconds.
        common.put("broker.session.timeout.ms", "4000");
        common.put("broker.heartbeat.interval.ms", "500");

        Map<String, String> c = new TreeMap<>(common);
        c.put("process.roles", "controller");
        c.put("node.id", String.valueOf(CONTROLLER_ID));
        c.put("listener.security.protocol.map", "CONTROLLER:PLAINTEXT");
        c.remove("inter.broker.listener.name");
        controller = new KafkaBroker(version, classpath, work.resolve("controller"), store, false, controllerPort,
                controllerPort, c);

        for (int id = 1; id <= 3; id++) {
            Map<String, String> b = new TreeMap<>(common);
            b.put("process.roles", "broker");
            b.put("node.id", String.valueOf(id));
            b.put("num.partitions", "1");
            b.put("default.replication.factor", "3");
            b.put("min.insync.replicas", "2");
            b.put("offsets.topic.replication.factor", "3");
            b.put("offsets.topic.num.partitions", "3");
            b.put("transaction.state.log.replication.factor", "3");
            b.put("transaction.state.log.min.isr", "2");
            b.put("transaction.state.log.num.partitions", "3");
            b.put("share.coordinator.state.topic.replication.factor", "3");
            b.put("share.coordinator.state.topic.min.isr", "2");
            b.put("rlmm.config.remote.log.metadata.topic.replication.factor", "3");
            // A follower out of step leaves the ISR after 6 s (30 s by default), so a scenario's wait is short.
            b.put("replica.lag.time.max.ms", "6000");
            brokers.add(new KafkaBroker(version, classpath, work.resolve("broker-" + id), store, true,
                    KafkaBroker.freePort(), controllerPort, b));
        }
    }

    /** Formats every node for one new cluster id and starts the controller, then the brokers side by side. */
    void start() throws Exception {
        String clusterId = Uuid.randomUuid().toString();
        controller.format(clusterId);
        for (KafkaBroker b : brokers) {
            b.format(clusterId);
        }
        controller.start();
        ExecutorService pool = Executors.newFixedThreadPool(brokers.size());
        try {
            List<Future<?>> started = new ArrayList<>();
            for (KafkaBroker b : brokers) {
                started.add(pool.submit(() -> {
                    b.start();
                    return null;
                }));
            }
            for (Future<?> f : started) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** The broker with node id {@code id}. */
    KafkaBroker broker(int id) {
        return brokers.get(id - 1);
    }

    /** Every running broker's listener, for clients. */
    String bootstrap() {
        return brokers.stream().filter(KafkaBroker::running).map(KafkaBroker::bootstrap)
                .collect(Collectors.joining(","));
    }

    @Override
    public void close() throws IOException {
        IOException first = null;
        for (KafkaBroker b : brokers) {
            try {
                b.close();
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        controller.close();
        if (first != null) {
            throw first;
        }
    }
}
