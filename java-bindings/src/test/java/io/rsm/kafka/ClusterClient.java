package io.rsm.kafka;

import static io.rsm.kafka.EndToEndSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The clients of a test {@link KafkaCluster} that {@link ClusterScenarios} is written with: its admin client,
 * idempotent and transactional producers filling a {@link ClusterLedger}, consumers, and the partition state
 * (leader, ISR, replicas, offsets, log directories, remote directory) and the waits built on them, and the
 * read-back of a ledger under both isolation levels.
 */
class ClusterClient implements AutoCloseable {
    static final int SEGMENT_BYTES = 1 << 20;
    static final int VALUE_BYTES = 1000;

    final KafkaCluster cluster;
    final Admin admin;

    ClusterClient(KafkaCluster cluster) {
        this.cluster = cluster;
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60000);
        this.admin = Admin.create(p);
    }

    static long lines(KafkaBroker b) throws IOException {
        return b.log().lines().count();
    }

    static Map<String, String> tieredTopic(Map<String, String> extra) {
        Map<String, String> cfg = new HashMap<>();
        cfg.put("remote.storage.enable", "true");
        cfg.put("segment.bytes", String.valueOf(SEGMENT_BYTES));
        cfg.put("retention.ms", "-1");
        cfg.put("min.insync.replicas", "2");
        cfg.putAll(extra);
        return cfg;
    }

    void createTopic(String topic, int partitions, int replication, Map<String, String> cfg,
            Map<Integer, List<Integer>> assignment) throws Exception {
        NewTopic t = assignment == null ? new NewTopic(topic, partitions, (short) replication)
                : new NewTopic(topic, assignment);
        admin.createTopics(List.of(t.configs(cfg))).all().get(60, TimeUnit.SECONDS);
        for (int p = 0; p < partitions; p++) {
            TopicPartition tp = new TopicPartition(topic, p);
            waitFor("leader and full ISR of " + tp, 60, () -> leader(tp) > 0 && isr(tp).size() == replication);
        }
    }

    void alterTopic(String topic, Map<String, String> cfg) throws Exception {
        List<AlterConfigOp> ops = cfg.entrySet().stream()
                .map(e -> new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET))
                .collect(Collectors.toList());
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, topic), ops)).all()
                .get(60, TimeUnit.SECONDS);
    }

    Properties producerConfig() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 65536);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 180000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15000);
        return p;
    }

    private static final AtomicLong SEQUENCE = new AtomicLong();

    static byte[] value(TopicPartition tp) {
        long seq = SEQUENCE.incrementAndGet();
        byte[] v = new byte[VALUE_BYTES];
        new Random(seq).nextBytes(v);
        byte[] tag = (tp + "#" + seq + ";").getBytes(StandardCharsets.UTF_8);
        System.arraycopy(tag, 0, v, 0, tag.length);
        return v;
    }

    KafkaProducer<byte[], byte[]> producer() {
        return new KafkaProducer<>(producerConfig(), new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Produces {@code count} records to {@code tp} with an idempotent acks=all producer; all acknowledged. */
    void produce(TopicPartition tp, int count, ClusterLedger ledger) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            produce(producer, tp, count, ledger);
        }
    }

    /** Produces {@code count} records to {@code tp} with {@code producer}, waiting until all are acknowledged. */
    static void produce(KafkaProducer<byte[], byte[]> producer, TopicPartition tp, int count, ClusterLedger ledger)
            throws Exception {
        List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] v = value(tp);
            values.add(v);
            sent.add(producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), null, v)));
        }
        producer.flush();
        for (int i = 0; i < sent.size(); i++) {
            ledger.add(sent.get(i).get(3, TimeUnit.MINUTES).offset(), values.get(i), false);
        }
    }

    /** Transactions of {@code perTxn} records each on {@code tp}, every third aborted. */
    void produceTransactions(TopicPartition tp, int txns, int perTxn, ClusterLedger ledger) throws Exception {
        Properties p = producerConfig();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "cluster-" + tp);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            producer.initTransactions();
            for (int t = 0; t < txns; t++) {
                boolean abort = t % 3 == 2;
                producer.beginTransaction();
                List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                List<byte[]> values = new ArrayList<>();
                for (int i = 0; i < perTxn; i++) {
                    byte[] v = value(tp);
                    values.add(v);
                    sent.add(producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), null, v)));
                }
                producer.flush();
                for (int i = 0; i < sent.size(); i++) {
                    ledger.add(sent.get(i).get(60, TimeUnit.SECONDS).offset(), values.get(i), abort);
                }
                if (abort) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
    }

    KafkaConsumer<byte[], byte[]> consumer(String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * Reads {@code tp} back under read_uncommitted and read_committed: every record of {@code ledger} exactly
     * once, in order (the aborted ones under read_uncommitted only); returns how many the ledger holds.
     */
    int readBack(TopicPartition tp, ClusterLedger ledger) {
        TreeMap<Long, byte[]> all;
        Set<Long> aborted;
        synchronized (ledger) {
            all = new TreeMap<>(ledger.values);
            aborted = new HashSet<>(ledger.aborted);
        }
        long from = all.isEmpty() ? 0 : all.firstKey();
        long end = all.isEmpty() ? 0 : all.lastKey() + 1;
        for (String isolation : List.of("read_uncommitted", "read_committed")) {
            TreeMap<Long, byte[]> expected = new TreeMap<>(all);
            if (isolation.equals("read_committed")) {
                expected.keySet().removeAll(aborted);
            }
            List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
            try (KafkaConsumer<byte[], byte[]> c = consumer(isolation)) {
                c.assign(List.of(tp));
                c.seek(tp, from);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
                while (c.position(tp) < end) {
                    if (System.nanoTime() > deadline) {
                        fail(isolation + " read of " + tp + " stalled at " + c.position(tp) + " of " + end);
                    }
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                        if (r.offset() < end) {
                            got.add(r);
                        }
                    }
                }
            }
            Iterator<Map.Entry<Long, byte[]>> want = expected.entrySet().iterator();
            for (ConsumerRecord<byte[], byte[]> r : got) {
                assertTrue(want.hasNext(), isolation + ": a record past the acknowledged ones at " + tp + "@" + r.offset());
                Map.Entry<Long, byte[]> w = want.next();
                assertEquals(w.getKey(), r.offset(), isolation + ": the next record of " + tp);
                assertTrue(Arrays.equals(w.getValue(), r.value()), isolation + ": value at " + tp + "@" + r.offset());
            }
            assertTrue(!want.hasNext(), isolation + ": acknowledged record missing at " + tp + "@"
                    + (want.hasNext() ? want.next().getKey() : -1));
        }
        return all.size();
    }

    /** Waits until the partition's latest tiered offset stops moving (every closed segment copied). */
    void awaitTiered(TopicPartition tp) throws InterruptedException {
        long[] last = {-2};
        long[] since = {System.nanoTime()};
        waitFor("closed segments of " + tp + " tiered", 180, () -> {
            long tiered = offset(tp, OffsetSpec.latestTiered());
            if (tiered != last[0]) {
                last[0] = tiered;
                since[0] = System.nanoTime();
                return false;
            }
            return tiered >= 0 && System.nanoTime() - since[0] > TimeUnit.SECONDS.toNanos(3);
        });
    }

    long offset(TopicPartition tp, OffsetSpec spec) {
        return EndToEndSupport.offset(admin, tp, spec);
    }

    TopicPartitionInfo partition(TopicPartition tp) {
        try {
            TopicDescription d = admin.describeTopics(List.of(tp.topic())).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(tp.topic());
            return d.partitions().get(tp.partition());
        } catch (Exception e) {
            throw new IllegalStateException("describing " + tp + ": " + e, e);
        }
    }

    /** The partition's leader's node id, or -1 without one. */
    int leader(TopicPartition tp) {
        Node l = partition(tp).leader();
        return l == null ? -1 : l.id();
    }

    List<Integer> isr(TopicPartition tp) {
        return partition(tp).isr().stream().map(Node::id).collect(Collectors.toList());
    }

    List<Integer> replicas(TopicPartition tp) {
        return partition(tp).replicas().stream().map(Node::id).collect(Collectors.toList());
    }

    void awaitIsr(TopicPartition tp, int size) throws InterruptedException {
        waitFor(size + " replicas in the ISR of " + tp, 180, () -> isr(tp).size() == size);
    }

    /** Makes broker {@code id} the leader of {@code tp}: first in the replica list, then a preferred election. */
    void makeLeader(TopicPartition tp, int id) throws Exception {
        List<Integer> order = new ArrayList<>(replicas(tp));
        if (order.get(0) != id) {
            order.remove(Integer.valueOf(id));
            order.add(0, id);
            admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(order))))
                    .all().get(60, TimeUnit.SECONDS);
            waitFor("replica order of " + tp, 60, () -> replicas(tp).equals(order));
        }
        waitFor("broker " + id + " leads " + tp, 120, () -> {
            try {
                admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).all().get(30, TimeUnit.SECONDS);
            } catch (Exception alreadyOrNotYet) {
                // ElectionNotNeeded when it leads already; the check below decides.
            }
            return leader(tp) == id;
        });
    }

    ReplicaLogDirInfo replicaLogDir(TopicPartitionReplica replica) {
        try {
            return admin.describeReplicaLogDirs(List.of(replica)).all().get(30, TimeUnit.SECONDS).get(replica);
        } catch (Exception e) {
            throw new IllegalStateException("describing the log directory of " + replica + ": " + e, e);
        }
    }

    /** The base offset of the first local segment of {@code tp} on broker {@code b}. */
    static long localLogStart(KafkaBroker b, TopicPartition tp) {
        for (Path dir : b.logDirs) {
            List<Long> bases = EndToEndSupport.baseOffsets(dir.resolve(tp.topic() + "-" + tp.partition()), ".log");
            if (!bases.isEmpty()) {
                return bases.get(0);
            }
        }
        return -1;
    }

    String remoteDir(TopicPartition tp) throws InterruptedException {
        Uuid id = EndToEndSupport.topicId(admin, tp.topic());
        return tp.topic() + "-" + id + "/" + tp.partition() + "/";
    }

    /** Every object key of the store outside {@code dir}. */
    Set<String> keysOutside(String dir) {
        return cluster.store.keysUnder("").stream().filter(k -> !k.startsWith(dir)).collect(Collectors.toSet());
    }

    /** The bytes the plugin of broker {@code b} served from remote segments since it started (JMX). */
    static double fetchBytes(KafkaBroker b) throws IOException {
        for (Map.Entry<String, Map<String, Double>> e : b.mbeans("io.rsm.kafka:*").entrySet()) {
            if (e.getKey().contains("operation=fetch-segment")) {
                return e.getValue().getOrDefault("byte-total", 0.0);
            }
        }
        return 0;
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(10));
    }
}
