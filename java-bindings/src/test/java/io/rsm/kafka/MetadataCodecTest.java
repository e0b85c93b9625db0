package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Constructor;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Both sides of the metadata encoding agree: a shared golden vector, and Kafka's objects decoded natively. */
class MetadataCodecTest {
    /** The same bytes as {@code GOLDEN} in ffi/jni/src/codec.rs. */
    static final String GOLDEN = "01"
            + "0102030405060708fffffffffffffffe"
            + "00066f7264657273"
            + "00000007"
            + "f0f1f2f3f4f5f6f81122334455667788"
            + "0000000000000064"
            + "00000000000000c7"
            + "0000018bcfe5687b"
            + "00000003"
            + "0000018bcfe569c8"
            + "00001000"
            + "01"
            + "03" // flags: transaction index empty, custom metadata
            + "00000002"
            + "000000000000000000000064"
            + "000000020000000000000096"
            + "00000002cafe";
    /** Kafka 3.9's metadata cannot say the transaction index is empty: the same bytes with that flag off. */
    static final String GOLDEN_WITHOUT_TXN_FLAG = GOLDEN.substring(0, 172) + "02" + GOLDEN.substring(174);
    /** Kafka 4.0's constructor with {@code txnIdxEmpty} (KIP-1058); null on 3.9, which has the one without. */
    static final Constructor<RemoteLogSegmentMetadata> WITH_TXN_FLAG = constructorWithTxnFlag();

    @BeforeAll
    static void load() {
        NativeBridge.ensureLoaded();
    }

    static RemoteLogSegmentMetadata sample() {
        TopicIdPartition tp = new TopicIdPartition(new Uuid(0x0102030405060708L, -2L), new TopicPartition("orders", 7));
        Map<Integer, Long> epochs = new HashMap<>();
        epochs.put(0, 100L);
        epochs.put(2, 150L);
        return metadata(new RemoteLogSegmentId(tp, new Uuid(-0x0f0e0d0c0b0a0908L, 0x1122334455667788L)),
                100, 199, 1_700_000_000_123L, 3, 1_700_000_000_456L, 4096,
                Optional.of(new CustomMetadata(new byte[] {(byte) 0xca, (byte) 0xfe})),
                RemoteLogSegmentState.COPY_SEGMENT_FINISHED, epochs, true);
    }

    private static Constructor<RemoteLogSegmentMetadata> constructorWithTxnFlag() {
        try {
            return RemoteLogSegmentMetadata.class.getConstructor(RemoteLogSegmentId.class, long.class, long.class,
                    long.class, int.class, long.class, int.class, Optional.class, RemoteLogSegmentState.class,
                    Map.class, boolean.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** Kafka's metadata, with the transaction-index flag where the API has it (4.0 and later). */
    static RemoteLogSegmentMetadata metadata(RemoteLogSegmentId id, long start, long end, long maxTs, int broker,
            long eventTs, int size, Optional<CustomMetadata> custom, RemoteLogSegmentState state,
            Map<Integer, Long> epochs, boolean txnIdxEmpty) {
        if (WITH_TXN_FLAG == null) {
            return new RemoteLogSegmentMetadata(id, start, end, maxTs, broker, eventTs, size, custom, state, epochs);
        }
        try {
            return WITH_TXN_FLAG.newInstance(id, start, end, maxTs, broker, eventTs, size, custom, state, epochs,
                    txnIdxEmpty);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void theTransactionIndexFlagIsReadWhereKafkasApiHasIt() {
        // KIP-1058's flag exists from Kafka 4.0 on.
        assertEquals(TestSegments.kafkaApiAtLeast(4, 0), WITH_TXN_FLAG != null, System.getProperty("kafka.api.version"));
        assertEquals(WITH_TXN_FLAG != null, MetadataCodec.txnIdxEmpty(sample()));
    }

    @Test
    void javaWritesTheGoldenVectorAndRustReadsItBack() {
        RemoteLogSegmentMetadata md = sample();
        byte[] enc = MetadataCodec.encode(md);
        assertEquals(WITH_TXN_FLAG != null ? GOLDEN : GOLDEN_WITHOUT_TXN_FLAG, MetadataCodec.hex(enc));
        assertEquals(MetadataCodec.describe(md), NativeBridge.describeMetadata(enc));
    }

    @Test
    void randomMetadataCrossesTheBoundaryIntact() {
        Random r = new Random(7);
        for (int i = 0; i < 300; i++) {
            String topic = "t" + Integer.toString(r.nextInt(1_000_000), 36) + (i % 7 == 0 ? "-\u00e9\u4e16" : "");
            TopicIdPartition tp = new TopicIdPartition(new Uuid(r.nextLong(), r.nextLong()),
                    new TopicPartition(topic, r.nextInt(1000)));
            long start = r.nextInt(Integer.MAX_VALUE) * (long) r.nextInt(100);
            Map<Integer, Long> epochs = new HashMap<>();
            int n = 1 + r.nextInt(5);
            for (int e = 0; e < n; e++) {
                epochs.put(r.nextInt(1000), start + e);
            }
            Optional<CustomMetadata> custom = r.nextBoolean() ? Optional.empty()
                    : Optional.of(new CustomMetadata(randomBytes(r, r.nextInt(128))));
            RemoteLogSegmentState state = RemoteLogSegmentState.values()[r.nextInt(4)];
            RemoteLogSegmentMetadata md = metadata(
                    new RemoteLogSegmentId(tp, new Uuid(r.nextLong(), r.nextLong())), start, start + r.nextInt(1 << 20),
                    r.nextLong(), r.nextInt(), r.nextLong(), r.nextInt(Integer.MAX_VALUE), custom, state, epochs,
                    r.nextBoolean());
            assertEquals(MetadataCodec.describe(md), NativeBridge.describeMetadata(MetadataCodec.encode(md)));
        }
    }

    @Test
    void malformedBytesAreInvalidArgumentsNamingWhatIsWrong() {
        byte[] good = MetadataCodec.encode(sample());
        for (int n : new int[] {0, 1, 17, good.length - 1}) {
            NativeStorageException e = assertThrows(NativeStorageException.class,
                    () -> NativeBridge.describeMetadata(Arrays.copyOf(good, n)));
            assertEquals(NativeStorageException.INVALID_ARGUMENT, e.kind(), e.getMessage());
            assertTrue(e.getMessage().contains("segment metadata encoding"), e.getMessage());
        }
        byte[] v9 = good.clone();
        v9[0] = 9;
        NativeStorageException e = assertThrows(NativeStorageException.class, () -> NativeBridge.describeMetadata(v9));
        assertTrue(e.getMessage().contains("version 9"), e.getMessage());
        e = assertThrows(NativeStorageException.class, () -> NativeBridge.describeMetadata(null));
        assertEquals(NativeStorageException.INVALID_ARGUMENT, e.kind());
    }

    private static byte[] randomBytes(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }
}
