package io.rsm.kafka;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.StringJoiner;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;

/**
 * Writes Kafka's {@link RemoteLogSegmentMetadata} in the compact byte encoding the native library reads
 * ({@code ffi/jni/src/codec.rs} documents the layout; version {@value #VERSION}). Big-endian throughout.
 */
final class MetadataCodec {
    static final byte VERSION = 1;
    private static final int FLAG_TXN_IDX_EMPTY = 1;
    private static final int FLAG_CUSTOM = 2;

    /**
     * {@code RemoteLogSegmentMetadata.isTxnIdxEmpty()}, which Kafka 4.0 added (KIP-1058); null on 3.9, whose
     * metadata does not say, so the flag stays off (the broker then asks for the index and gets not-found).
     */
    private static final Method TXN_IDX_EMPTY = txnIdxEmptyMethod();

    private MetadataCodec() {}

    private static Method txnIdxEmptyMethod() {
        try {
            return RemoteLogSegmentMetadata.class.getMethod("isTxnIdxEmpty");
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** Whether Kafka says the segment's transaction index is empty (always false where it cannot say). */
    static boolean txnIdxEmpty(RemoteLogSegmentMetadata md) {
        if (TXN_IDX_EMPTY == null) {
            return false;
        }
        try {
            return (Boolean) TXN_IDX_EMPTY.invoke(md);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("RemoteLogSegmentMetadata.isTxnIdxEmpty() failed", e);
        }
    }

    static byte[] encode(RemoteLogSegmentMetadata md) {
        TopicIdPartition tp = md.remoteLogSegmentId().topicIdPartition();
        Uuid id = md.remoteLogSegmentId().id();
        byte[] topic = tp.topic().getBytes(StandardCharsets.UTF_8);
        if (topic.length > 0xffff) {
            throw new IllegalArgumentException("topic name longer than 65535 bytes");
        }
        NavigableMap<Integer, Long> epochs = md.segmentLeaderEpochs();
        Optional<byte[]> custom = md.customMetadata().map(CustomMetadata::value);
        int size = 1 + 16 + 2 + topic.length + 4 + 16 + 8 * 3 + 4 + 8 + 4 + 1 + 1 + 4 + 12 * epochs.size()
                + custom.map(c -> 4 + c.length).orElse(0);
        ByteBuffer b = ByteBuffer.allocate(size);
        b.put(VERSION);
        b.putLong(tp.topicId().getMostSignificantBits());
        b.putLong(tp.topicId().getLeastSignificantBits());
        b.putShort((short) topic.length);
        b.put(topic);
        b.putInt(tp.partition());
        b.putLong(id.getMostSignificantBits());
        b.putLong(id.getLeastSignificantBits());
        b.putLong(md.startOffset());
        b.putLong(md.endOffset());
        b.putLong(md.maxTimestampMs());
        b.putInt(md.brokerId());
        b.putLong(md.eventTimestampMs());
        b.putInt(md.segmentSizeInBytes());
        b.put(md.state().id());
        int flags = (txnIdxEmpty(md) ? FLAG_TXN_IDX_EMPTY : 0) | (custom.isPresent() ? FLAG_CUSTOM : 0);
        b.put((byte) flags);
        b.putInt(epochs.size());
        for (Map.Entry<Integer, Long> e : epochs.entrySet()) {
            b.putInt(e.getKey());
            b.putLong(e.getValue());
        }
        custom.ifPresent(c -> {
            b.putInt(c.length);
            b.put(c);
        });
        return b.array();
    }

    /** The same one-line text the native side makes from the decoded bytes ({@code describe_metadata}). */
    static String describe(RemoteLogSegmentMetadata md) {
        TopicIdPartition tp = md.remoteLogSegmentId().topicIdPartition();
        StringJoiner epochs = new StringJoiner(",", "{", "}");
        md.segmentLeaderEpochs().forEach((e, o) -> epochs.add(e + "=" + o));
        String custom = md.customMetadata().map(c -> hex(c.value())).orElse("none");
        return "topicId=" + tp.topicId() + " topic=" + tp.topic() + " partition=" + tp.partition()
                + " id=" + md.remoteLogSegmentId().id() + " start=" + md.startOffset() + " end=" + md.endOffset()
                + " maxTs=" + md.maxTimestampMs() + " broker=" + md.brokerId() + " eventTs=" + md.eventTimestampMs()
                + " size=" + md.segmentSizeInBytes() + " state=" + md.state().id() + " txnIdxEmpty="
                + txnIdxEmpty(md) + " epochs=" + epochs + " custom=" + custom;
    }

    static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte x : bytes) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.toString();
    }
}
