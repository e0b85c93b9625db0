package io.rsm.kafka;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.apache.kafka.common.Uuid;

/**
 * One real Kafka broker (KRaft, combined broker and controller) from Maven Central, run as a subprocess from
 * a resolved class path: storage formatted with a random cluster id, tiered storage on, our plugin jar in
 * {@code remote.log.storage.manager.class.path} (or, as an operator may install it, on the broker's own class
 * path as {@link #MONITORABLE}, which the broker hands its metrics registry), tiering to the given store. JMX is
 * open on a loopback port, to read the plugin's metrics.
 */
final class KafkaBroker implements AutoCloseable {
    final String version;
    final Path work;
    /** The first (for a combined node, the only) log directory. */
    final Path logDir;
    /** Every log directory (two on a cluster's broker: JBOD). */
    final List<Path> logDirs;
    /** Whether this node is a broker (else a controller only). */
    final boolean isBroker;
    final TestStore store;
    final Path brokerLog;
    final int port;
    final int controllerPort;
    final int jmxPort;
    /** The plugin class the broker loads. */
    final String pluginClass;
    private final String classpath;
    private final Path properties;
    private final Map<String, String> settings = new TreeMap<>();
    private Process process;

    /** The plugin class for brokers 4.1 and later with the jar on their own class path (KIP-877 metrics). */
    static final String MONITORABLE = "io.rsm.kafka.MonitorableRustRemoteStorageManager";

    /**
     * A broker of {@code version} (its class path resolved in {@code classpath}) in {@code work}, with our
     * {@code pluginJar}: in {@code remote.log.storage.manager.class.path} as {@link RustRemoteStorageManager},
     * or, with {@code onBrokerClassPath}, on the broker's own class path as {@link #MONITORABLE}. One node,
     * broker and controller combined.
     */
    KafkaBroker(String version, String classpath, Path work, Path pluginJar, TestStore store,
            boolean onBrokerClassPath) throws IOException {
        this(version, onBrokerClassPath ? classpath + java.io.File.pathSeparator + pluginJar : classpath, work,
                store, true, freePort(), freePort(), combined(pluginJar, store, onBrokerClassPath));
    }

    /**
     * One node of a cluster: {@code settings} give everything but the ports and directories, which this
     * fills in ({@code listeners}, {@code log.dirs}: two directories when {@code broker}, JBOD; the
     * controller's port is {@code controllerPort}, this node's own listener {@code port}).
     */
    KafkaBroker(String version, String classpath, Path work, TestStore store, boolean broker, int port,
            int controllerPort, Map<String, String> settings) throws IOException {
        this.version = version;
        this.classpath = classpath;
        String pc = settings.getOrDefault("remote.log.storage.manager.class.name", "");
        this.pluginClass = pc;
        this.jmxPort = freePort();
        this.work = work;
        this.store = store;
        this.brokerLog = work.resolve("broker.log");
        this.port = port;
        this.controllerPort = controllerPort;
        this.isBroker = broker;
        Files.createDirectories(work);
        this.settings.putAll(settings);
        boolean combined = settings.getOrDefault("process.roles", "").contains("controller") && broker;
        if (broker) {
            this.logDir = work.resolve("kafka-logs");
            this.logDirs = combined ? List.of(logDir) : List.of(logDir, work.resolve("kafka-logs-2"));
            this.settings.put("listeners", "PLAINTEXT://127.0.0.1:" + port
                    + (combined ? ",CONTROLLER://127.0.0.1:" + controllerPort : ""));
            this.settings.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
            this.settings.put("log.dirs", String.join(",", logDirs.stream().map(Path::toString).toList()));
            if (combined) {
                // A quorum of this one node.
                this.settings.putIfAbsent("controller.quorum.voters",
                        settings.get("node.id") + "@127.0.0.1:" + controllerPort);
            } else {
                this.settings.put("metadata.log.dir", work.resolve("metadata").toString());
            }
        } else {
            this.logDir = work.resolve("metadata");
            this.logDirs = List.of(logDir);
            this.settings.put("listeners", "CONTROLLER://127.0.0.1:" + controllerPort);
            this.settings.put("log.dirs", logDir.toString());
        }
        properties = work.resolve("server.properties");
        writeProperties();
        Files.writeString(work.resolve("log4j2.properties"), String.join("\n",
                "status = warn",
                "appender.file.type = File",
                "appender.file.name = FILE",
                "appender.file.fileName = " + brokerLog,
                "appender.file.append = true",
                "appender.file.layout.type = PatternLayout",
                "appender.file.layout.pattern = [%d] %p [%t] %c - %m%n",
                "rootLogger.level = INFO",
                "rootLogger.appenderRef.file.ref = FILE",
                // Our plugin at debug, so serving lines show.
                "logger.rsm.name = io.rsm",
                "logger.rsm.level = DEBUG",
                "logger.rlm.name = org.apache.kafka.server.log.remote",
                "logger.rlm.level = DEBUG",
                "logger.rlmq.name = org.apache.kafka.server.log.remote.metadata.storage",
                "logger.rlmq.level = INFO",
                ""));
    }

    /** The settings of a single combined node (node id 1) tiering to {@code store}. */
    private static Map<String, String> combined(Path pluginJar, TestStore store, boolean onBrokerClassPath) {
        Map<String, String> p = new TreeMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("num.partitions", "1");
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "3");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("rlmm.config.remote.log.metadata.topic.replication.factor", "1");
        p.putAll(tiered(pluginJar, store, onBrokerClassPath));
        return p;
    }

    /**
     * The settings every test broker shares: listener names, quick retention checks, and tiered storage with
     * our plugin ({@code onBrokerClassPath}: as {@link #MONITORABLE}, the jar on the broker's class path) on
     * {@code store}.
     */
    static Map<String, String> tiered(Path pluginJar, TestStore store, boolean onBrokerClassPath) {
        Map<String, String> p = new TreeMap<>();
        p.put("controller.listener.names", "CONTROLLER");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("group.initial.rebalance.delay.ms", "0");
        // Local retention and file deletion checked every second, so local segments go soon after upload.
        p.put("log.retention.check.interval.ms", "1000");
        // The first retention check otherwise comes 30 s after start-up.
        p.put("log.initial.task.delay.ms", "1000");
        p.put("log.segment.delete.delay.ms", "500");
        // Tiered storage with our plugin.
        p.put("remote.log.storage.system.enable", "true");
        p.put("remote.log.storage.manager.class.name",
                onBrokerClassPath ? MONITORABLE : RustRemoteStorageManager.class.getName());
        if (!onBrokerClassPath) {
            p.put("remote.log.storage.manager.class.path", pluginJar.toString());
        }
        p.put("remote.log.metadata.manager.listener.name", "PLAINTEXT");
        p.put("rlmm.config.remote.log.metadata.topic.num.partitions", "3");
        p.put("remote.log.manager.task.interval.ms", "500");
        p.put("rsm.config.chunk.size", "262144");
        p.putAll(store.brokerSettings());
        return p;
    }

    /** Sets (or, with a null value, removes) one setting, for the next start. */
    void set(String key, String value) throws IOException {
        if (value == null) {
            settings.remove(key);
        } else {
            settings.put(key, value);
        }
        writeProperties();
    }

    private void writeProperties() throws IOException {
        StringBuilder text = new StringBuilder();
        settings.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(properties, text.toString());
    }

    String bootstrap() {
        return "127.0.0.1:" + port;
    }

    private List<String> java(boolean jmx, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx768m");
        if (jmx) {
            cmd.addAll(List.of("-Dcom.sun.management.jmxremote.port=" + jmxPort,
                    "-Dcom.sun.management.jmxremote.rmi.port=" + jmxPort,
                    "-Dcom.sun.management.jmxremote.host=127.0.0.1", "-Djava.rmi.server.hostname=127.0.0.1",
                    "-Dcom.sun.management.jmxremote.authenticate=false", "-Dcom.sun.management.jmxremote.ssl=false"));
        }
        cmd.add("-Dlog4j2.configurationFile=" + work.resolve("log4j2.properties"));
        cmd.add("-cp");
        cmd.add(classpath);
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Formats the storage directory with a random cluster id. */
    void format() throws Exception {
        format(Uuid.randomUuid().toString());
    }

    /** Formats the storage directories for the cluster {@code clusterId}. */
    void format(String clusterId) throws Exception {
        Process f = new ProcessBuilder(java(false, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c",
                properties.toString()))
                .directory(work.toFile())
                .redirectErrorStream(true)
                .redirectOutput(work.resolve("format.out").toFile())
                .start();
        if (!f.waitFor(120, TimeUnit.SECONDS) || f.exitValue() != 0) {
            f.destroyForcibly();
            throw new IllegalStateException("formatting failed: " + Files.readString(work.resolve("format.out")));
        }
    }

    void start() throws Exception {
        process = new ProcessBuilder(java(true, "kafka.Kafka", properties.toString()))
                .directory(work.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(work.resolve("broker.out").toFile()))
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("broker " + version + " exited: " + tail());
            }
            // A controller-only node is up once its listener answers; a broker once it also says so.
            if (!isBroker || Files.exists(brokerLog) && Files.readString(brokerLog).contains("Kafka Server started")) {
                try (Socket s = new Socket("127.0.0.1", isBroker ? port : controllerPort)) {
                    if (s.isConnected()) {
                        return;
                    }
                } catch (IOException notYet) {
                    // keep waiting
                }
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("broker " + version + " did not start: " + tail());
    }

    /** Stops the broker cleanly (SIGTERM, as an operator would), waiting for it to exit. */
    void stop() throws Exception {
        if (process == null) {
            return;
        }
        process.destroy();
        if (!process.waitFor(90, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
        process = null;
    }

    /** Kills the node's JVM with SIGKILL (kill -9: no shutdown hook, nothing flushed), waiting for it to die. */
    void kill() throws Exception {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("node " + work + " did not die of SIGKILL");
        }
        process = null;
    }

    /** Whether the node's JVM is running. */
    boolean running() {
        return process != null && process.isAlive();
    }

    /** The node id of its settings. */
    int nodeId() {
        return Integer.parseInt(settings.get("node.id"));
    }

    /**
     * Whether a broker log line tells of a failure of remote storage: an exception or error (or a warning of
     * our plugin or of remote storage) on a line about our plugin or remote storage.
     */
    static boolean remoteStorageFailure(String line) {
        boolean failure = line.contains("Exception") || line.contains(" ERROR ")
                || (line.contains(" WARN ") && (line.contains("io.rsm") || line.contains("RemoteStorage")));
        boolean ours = line.contains("rsm") || line.contains("RemoteStorage") || line.contains("remote")
                || line.contains("Remote");
        return failure && ours;
    }

    /**
     * The attributes of the MBeans matching {@code pattern} in the broker's JVM, by object name (attribute
     * values as numbers).
     */
    Map<String, Map<String, Double>> mbeans(String pattern) throws IOException {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + jmxPort + "/jmxrmi");
        Map<String, Map<String, Double>> out = new TreeMap<>();
        try (JMXConnector c = JMXConnectorFactory.connect(url)) {
            MBeanServerConnection s = c.getMBeanServerConnection();
            for (ObjectName name : s.queryNames(new ObjectName(pattern), null)) {
                Map<String, Double> attributes = new TreeMap<>();
                for (MBeanAttributeInfo a : s.getMBeanInfo(name).getAttributes()) {
                    Object v = s.getAttribute(name, a.getName());
                    if (v instanceof Number) {
                        attributes.put(a.getName(), ((Number) v).doubleValue());
                    }
                }
                out.put(name.toString(), attributes);
            }
        } catch (JMException e) {
            throw new IOException("JMX query " + pattern + ": " + e, e);
        }
        return out;
    }

    String log() throws IOException {
        return Files.exists(brokerLog) ? Files.readString(brokerLog, StandardCharsets.UTF_8) : "";
    }

    String tail() throws IOException {
        String out = Files.exists(work.resolve("broker.out")) ? Files.readString(work.resolve("broker.out")) : "";
        String all = log() + "\n--- stdout ---\n" + out;
        return all.length() > 6000 ? all.substring(all.length() - 6000) : all;
    }

    @Override
    public void close() throws IOException {
        try {
            stop();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            throw e;
        } catch (Exception e) {
            throw new IOException(e);
        }
    }

    /**
     * The first broker the system property {@code rsm.brokers} names ({@code version=classpath-file,...}, the
     * newest first): its version and its class path, read from the file. Fails the test when the property is
     * not given.
     */
    static String[] firstOfBrokersProperty() throws IOException {
        String spec = System.getProperty("rsm.brokers", "").trim();
        org.junit.jupiter.api.Assertions.assertTrue(!spec.isEmpty(), "no broker class path given (rsm.brokers)");
        String[] first = spec.split(",")[0].trim().split("=", 2);
        return new String[] {first[0], Files.readString(java.nio.file.Paths.get(first[1])).trim()};
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }
}
