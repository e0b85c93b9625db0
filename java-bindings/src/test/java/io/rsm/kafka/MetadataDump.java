package io.rsm.kafka;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadataUpdate;
import org.apache.kafka.server.log.remote.storage.RemotePartitionDeleteMetadata;

/**
 * Reads a metadata topic from its start and prints every record as Kafka's own serde
 * ({@code RemoteLogMetadataSerde}, from the broker's class path) decodes it, one line per record in the form
 * {@code rsm metadata} prints, so the two readers can be compared line by line. Run in a JVM with the broker's
 * class path: {@code MetadataDump BOOTSTRAP TOPIC OUT_FILE}.
 */
public final class MetadataDump {
    private MetadataDump() {}

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }

    static String line(int partition, long offset, Object md) {
        String at = "p" + partition + "@" + offset + " ";
        if (md instanceof RemoteLogSegmentMetadata) {
            RemoteLogSegmentMetadata m = (RemoteLogSegmentMetadata) md;
            String epochs = m.segmentLeaderEpochs().entrySet().stream()
                    .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(","));
            return at + "segment " + m.remoteLogSegmentId().topicIdPartition() + " " + m.remoteLogSegmentId().id()
                    + " state=" + m.state() + " start=" + m.startOffset() + " end=" + m.endOffset()
                    + " maxTs=" + m.maxTimestampMs() + " broker=" + m.brokerId() + " eventTs=" + m.eventTimestampMs()
                    + " size=" + m.segmentSizeInBytes() + " epochs={" + epochs + "} custom="
                    + m.customMetadata().map(c -> hex(c.value())).orElse("none");
        }
        if (md instanceof RemoteLogSegmentMetadataUpdate) {
            RemoteLogSegmentMetadataUpdate u = (RemoteLogSegmentMetadataUpdate) md;
            return at + "update " + u.remoteLogSegmentId().topicIdPartition() + " " + u.remoteLogSegmentId().id()
                    + " state=" + u.state() + " eventTs=" + u.eventTimestampMs() + " broker=" + u.brokerId()
                    + " custom=" + u.customMetadata().map(c -> hex(c.value())).orElse("none");
        }
        if (md instanceof RemotePartitionDeleteMetadata) {
            RemotePartitionDeleteMetadata d = (RemotePartitionDeleteMetadata) md;
            return at + "partitionDelete " + d.topicIdPartition() + " state=" + d.state() + " eventTs="
                    + d.eventTimestampMs() + " broker=" + d.brokerId();
        }
        return at + "other " + md.getClass().getSimpleName();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        Object serde = Class.forName(
                "org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde")
                .getConstructor().newInstance();
        java.lang.reflect.Method deserialize = serde.getClass().getMethod("deserialize", byte[].class);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        List<String> lines = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).collect(Collectors.toList());
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> end = consumer.endOffsets(parts);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (parts.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("did not read " + topic + " to its end " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    Object md = deserialize.invoke(serde, (Object) r.value());
                    lines.add(line(r.partition(), r.offset(), md));
                }
            }
        }
        lines.sort(null);
        Files.writeString(Paths.get(args[2]), String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
    }
}
