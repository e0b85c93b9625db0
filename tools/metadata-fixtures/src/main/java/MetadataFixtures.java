// Writes known answers from Kafka's own classes (see pom.xml): records.txt, the hex of
// RemoteLogMetadataSerde.serialize for a fixed table of events, and partitions.txt, the metadata
// partition of a fixed table of partitions by RemoteLogMetadataTopicPartitioner and by the seeds'
// formula (Java's String.hashCode of TopicPartition.toString()). The table is the same, case by case, as
// rsm-metadata/tests/kafka_records.rs. Compiles against every Kafka version from 3.9.2: what only newer
// versions have (txnIdxEmpty) is reached by reflection, and a case a version can not express is written
// as "unsupported", one Kafka refuses to build as "rejected".

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogMetadataTopicPartitioner;
import org.apache.kafka.server.log.remote.metadata.storage.RemoteLogSegmentMetadataSnapshot;
import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteState;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Supplier;

public final class MetadataFixtures {
    static final String NON_ASCII = "zahlungsstr\u00f6me-\u65e5\u672c-\ud83d\ude00";

    static final TopicIdPartition TP_A = new TopicIdPartition(
        new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L), new TopicPartition("orders", 0));
    static final TopicIdPartition TP_B = new TopicIdPartition(
        new Uuid(-1L, 1L), new TopicPartition(NON_ASCII, Integer.MAX_VALUE));
    static final TopicIdPartition TP_C = new TopicIdPartition(
        new Uuid(Long.MIN_VALUE, Long.MAX_VALUE), new TopicPartition("a", 7));
    static final Uuid SEG1 = new Uuid(0x1111111111111111L, 0x2222222222222222L);
    static final Uuid SEG2 = new Uuid(-2L, -3L);

    /** Thrown when a case needs what this Kafka version does not have. */
    static final class Unsupported extends RuntimeException {
        Unsupported(String m) {
            super(m);
        }
    }

    static Map<Integer, Long> epochs(long... pairs) {
        Map<Integer, Long> m = new TreeMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            m.put((int) pairs[i], pairs[i + 1]);
        }
        return m;
    }

    static Map<Integer, Long> manyEpochs() {
        Map<Integer, Long> m = new TreeMap<>();
        for (int i = 0; i < 130; i++) {
            m.put(i, 10L * i);
        }
        return m;
    }

    static Optional<CustomMetadata> custom(int... bytes) {
        byte[] b = new byte[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            b[i] = (byte) bytes[i];
        }
        return Optional.of(new CustomMetadata(b));
    }

    static Optional<CustomMetadata> customOfLength(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 7);
        }
        return Optional.of(new CustomMetadata(b));
    }

    static Object construct(Class<?> c, Object[] args, boolean txnIdxEmpty) {
        try {
            Object[] with = java.util.Arrays.copyOf(args, args.length + 1);
            with[args.length] = txnIdxEmpty;
            for (Constructor<?> k : c.getConstructors()) {
                Class<?>[] p = k.getParameterTypes();
                if (p.length == with.length && p[p.length - 1] == boolean.class && p[7] == Optional.class) {
                    return k.newInstance(with);
                }
            }
            if (txnIdxEmpty) {
                throw new Unsupported("no txnIdxEmpty in " + c.getSimpleName());
            }
            for (Constructor<?> k : c.getConstructors()) {
                Class<?>[] p = k.getParameterTypes();
                if (p.length == args.length && p[7] == Optional.class) {
                    return k.newInstance(args);
                }
            }
            throw new IllegalStateException("no constructor of " + c);
        } catch (InvocationTargetException e) {
            throw new IllegalArgumentException(e.getCause().toString().replace('\n', ' '));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static RemoteLogSegmentMetadata segment(TopicIdPartition tp, Uuid id, long start, long end, long maxTs,
                                            int broker, long eventTs, int size, Map<Integer, Long> epochs,
                                            Optional<CustomMetadata> custom, RemoteLogSegmentState state,
                                            boolean txnIdxEmpty) {
        Object[] args = {new RemoteLogSegmentId(tp, id), start, end, maxTs, broker, eventTs, size, custom, state,
            epochs};
        return (RemoteLogSegmentMetadata) construct(RemoteLogSegmentMetadata.class, args, txnIdxEmpty);
    }

    static RemoteLogSegmentMetadataSnapshot snapshot(Uuid id, long start, long end, long maxTs, int broker,
                                                     long eventTs, int size, Map<Integer, Long> epochs,
                                                     Optional<CustomMetadata> custom,
                                                     RemoteLogSegmentState state, boolean txnIdxEmpty) {
        Object[] args = {id, start, end, maxTs, broker, eventTs, size, custom, state, epochs};
        return (RemoteLogSegmentMetadataSnapshot) construct(RemoteLogSegmentMetadataSnapshot.class, args,
            txnIdxEmpty);
    }

    static RemoteLogSegmentMetadataUpdate update(TopicIdPartition tp, Uuid id, long eventTs,
                                                 Optional<CustomMetadata> custom, RemoteLogSegmentState state,
                                                 int broker) {
        return new RemoteLogSegmentMetadataUpdate(new RemoteLogSegmentId(tp, id), eventTs, custom, state, broker);
    }

    static RemotePartitionDeleteMetadata delete(TopicIdPartition tp, RemotePartitionDeleteState state,
                                                long eventTs, int broker) {
        return new RemotePartitionDeleteMetadata(tp, state, eventTs, broker);
    }

    /** The table: the same cases, by name, as CASES in rsm-metadata/tests/kafka_records.rs. */
    static final Object[][] CASES = {
        {"segment_started_one_epoch", (Supplier<RemoteLogMetadata>) () -> segment(TP_A, SEG1, 0, 99,
            1_700_000_000_000L, 1, 1_700_000_000_123L, 4096, epochs(0, 0), Optional.empty(),
            RemoteLogSegmentState.COPY_SEGMENT_STARTED, false)},
        {"segment_finished_epochs_custom", (Supplier<RemoteLogMetadata>) () -> segment(TP_A, SEG2, 1000, 1999,
            -1, 3, -1, 1 << 20, epochs(1, 1000, 4, 1500, 9, 1900), custom(0, 1, 2, 0x7f, 0x80, 0xff),
            RemoteLogSegmentState.COPY_SEGMENT_FINISHED, false)},
        {"segment_txn_idx_empty", (Supplier<RemoteLogMetadata>) () -> segment(TP_B, SEG1, 0, 0, 0, 0, 0, 0,
            epochs(0, 0), custom(), RemoteLogSegmentState.DELETE_SEGMENT_STARTED, true)},
        {"segment_big_offsets", (Supplier<RemoteLogMetadata>) () -> segment(TP_C, SEG2, Long.MAX_VALUE - 1000,
            Long.MAX_VALUE, Long.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE, Integer.MAX_VALUE,
            epochs(Integer.MAX_VALUE, Long.MAX_VALUE - 1000), customOfLength(200),
            RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, false)},
        {"segment_non_ascii_many_epochs", (Supplier<RemoteLogMetadata>) () -> segment(TP_B, SEG2, 0, 1290, -1,
            -1, -1, 123_456, manyEpochs(), Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED,
            false)},
        {"segment_empty_epochs", (Supplier<RemoteLogMetadata>) () -> segment(TP_A, SEG1, 0, 1, 2, 3, 4, 5,
            epochs(), Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, false)},
        {"update_finished_custom", (Supplier<RemoteLogMetadata>) () -> update(TP_A, SEG1, 1_700_000_000_456L,
            custom(0xde, 0xad, 0xbe, 0xef), RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 1)},
        {"update_delete_started", (Supplier<RemoteLogMetadata>) () -> update(TP_B, SEG2, -1, Optional.empty(),
            RemoteLogSegmentState.DELETE_SEGMENT_STARTED, 2)},
        {"update_delete_finished", (Supplier<RemoteLogMetadata>) () -> update(TP_C, SEG1, Long.MAX_VALUE,
            custom(), RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, Integer.MAX_VALUE)},
        {"partition_delete_marked", (Supplier<RemoteLogMetadata>) () -> delete(TP_A,
            RemotePartitionDeleteState.DELETE_PARTITION_MARKED, 1_700_000_000_789L, 3000)},
        {"partition_delete_started", (Supplier<RemoteLogMetadata>) () -> delete(TP_B,
            RemotePartitionDeleteState.DELETE_PARTITION_STARTED, -1, 0)},
        {"partition_delete_finished", (Supplier<RemoteLogMetadata>) () -> delete(TP_C,
            RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, Long.MAX_VALUE, Integer.MAX_VALUE)},
        {"snapshot_started", (Supplier<RemoteLogMetadata>) () -> snapshot(SEG1, 0, 99, 1, 1, 2, 4096,
            epochs(0, 0), Optional.empty(), RemoteLogSegmentState.COPY_SEGMENT_STARTED, false)},
        {"snapshot_finished_txn_idx_empty", (Supplier<RemoteLogMetadata>) () -> snapshot(SEG2, 5, 10, -1, 7,
            -1, 1 << 30, epochs(3, 5, 4, 8), custom(1, 2, 3), RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
            true)},
        {"snapshot_empty_epochs", (Supplier<RemoteLogMetadata>) () -> snapshot(SEG1, 0, 0, 0, 0, 0, 0, epochs(),
            custom(), RemoteLogSegmentState.DELETE_SEGMENT_STARTED, false)},
    };

    static final String[] TOPICS = {"orders", "a", "", NON_ASCII, "__consumer_offsets", "payments.eu-west-1",
        "\u00e9v\u00e9nements", "topic_with_a_rather_long_name_0123456789"};
    static final int[] PARTITIONS = {0, 1, 7, 99, Integer.MAX_VALUE};
    static final int[] COUNTS = {1, 3, 50, 64};
    static final Uuid[] TOPIC_IDS = {Uuid.ZERO_UUID, Uuid.ONE_UUID, TP_A.topicId(), TP_B.topicId(),
        TP_C.topicId(), new Uuid(0x5a5a5a5a5a5a5a5aL, -0x5a5a5a5a5a5a5a5bL)};

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xff));
        }
        return s.toString();
    }

    public static void main(String[] args) throws IOException {
        String version = args[0];
        Path dir = Path.of(args[1]);
        Files.createDirectories(dir);
        RemoteLogMetadataSerde serde = new RemoteLogMetadataSerde();
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(dir.resolve("records.txt"),
            StandardCharsets.UTF_8))) {
            out.println("# Kafka " + version + ": <case> <hex of RemoteLogMetadataSerde.serialize>, or <case> "
                + "unsupported|rejected <why>. Written by tools/metadata-fixtures.");
            for (Object[] c : CASES) {
                String name = (String) c[0];
                @SuppressWarnings("unchecked")
                Supplier<RemoteLogMetadata> make = (Supplier<RemoteLogMetadata>) c[1];
                try {
                    RemoteLogMetadata md = make.get();
                    byte[] bytes = serde.serialize(md);
                    RemoteLogMetadata back = serde.deserialize(bytes);
                    if (!back.equals(md)) {
                        throw new IllegalStateException(name + ": Kafka's own round trip differs");
                    }
                    out.println(name + " " + hex(bytes));
                } catch (Unsupported e) {
                    out.println(name + " unsupported " + e.getMessage());
                } catch (IllegalArgumentException e) {
                    out.println(name + " rejected " + e.getMessage());
                }
            }
        }
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(dir.resolve("partitions.txt"),
            StandardCharsets.UTF_8))) {
            out.println("# Kafka " + version + ". kafka <msb> <lsb> <partition> <count> "
                + "<RemoteLogMetadataTopicPartitioner.metadataPartition>");
            out.println("# seeds <partition> <count> <hashCode of topic-partition> <hashCode % count> "
                + "<Math.floorMod(hashCode, count)> <topic, the rest of the line>");
            for (Uuid id : TOPIC_IDS) {
                for (int p : PARTITIONS) {
                    for (int n : COUNTS) {
                        int answer = new RemoteLogMetadataTopicPartitioner(n)
                            .metadataPartition(new TopicIdPartition(id, new TopicPartition("t", p)));
                        out.println("kafka " + id.getMostSignificantBits() + " " + id.getLeastSignificantBits()
                            + " " + p + " " + n + " " + answer);
                    }
                }
            }
            out.println("# murmur2 <hex of the bytes> <Utils.murmur2>");
            for (int len = 0; len <= 9; len++) {
                byte[] b = new byte[len];
                for (int i = 0; i < len; i++) {
                    b[i] = (byte) (0x80 + 37 * i);
                }
                out.println("murmur2 " + hex(b) + " " + Utils.murmur2(b));
            }
            for (String t : TOPICS) {
                byte[] b = t.getBytes(StandardCharsets.UTF_8);
                out.println("murmur2 " + hex(b) + " " + Utils.murmur2(b));
            }
            for (String t : TOPICS) {
                for (int p : PARTITIONS) {
                    for (int n : COUNTS) {
                        int h = new TopicPartition(t, p).toString().hashCode();
                        out.println("seeds " + p + " " + n + " " + h + " " + (h % n) + " " + Math.floorMod(h, n)
                            + " " + t);
                    }
                }
            }
        }
    }
}
