package io.rsm.kafka;

import static io.rsm.kafka.EndToEndSupport.percentile;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Records produced to a single test broker and read back, for {@link BrokerEndToEndIT} (and
 * {@link MetadataInteropIT}'s producing): {@link ExpectedRecord}s with keys, headers and explicit timestamps
 * produced and compared record by record when read back, the values of a partition under an isolation level,
 * and the latency of a consumer's fetch served from remote storage.
 */
final class BrokerRecords {
    static final long T0 = System.currentTimeMillis() - TimeUnit.HOURS.toMillis(2);

    private BrokerRecords() {}

    /** Every record value of [0, end) in the given isolation level, in offset order. */
    static List<byte[]> consumeValues(KafkaBroker broker, TopicPartition tp, String isolation, long end) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        List<byte[]> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
            while (c.position(tp) < end) {
                if (System.nanoTime() > deadline) {
                    fail(isolation + " read stalled at " + c.position(tp) + " of " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    out.add(r.value());
                }
            }
        }
        return out;
    }

    static int produce(KafkaBroker broker, String topic, String compression, int count, int first,
                       TreeMap<Long, ExpectedRecord> expected, int batchSize) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, batchSize);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            List<ExpectedRecord> records = new ArrayList<>();
            for (int i = first; i < first + count; i++) {
                Random r = new Random(i);
                byte[] key = i % 97 == 0 ? null : ("key-" + i).getBytes(StandardCharsets.UTF_8);
                byte[] value;
                if (compression.equals("none")) {
                    value = new byte[200 + r.nextInt(1400)];
                    r.nextBytes(value);
                } else {
                    // Half text, half noise: compressible, but not so much that segments stay few.
                    StringBuilder sb = new StringBuilder();
                    while (sb.length() < 300 + r.nextInt(700)) {
                        sb.append("record ").append(i).append(" says ").append(r.nextInt(1000)).append("; ");
                    }
                    byte[] text = sb.toString().getBytes(StandardCharsets.UTF_8);
                    value = new byte[text.length * 2];
                    System.arraycopy(text, 0, value, 0, text.length);
                    byte[] noise = new byte[text.length];
                    r.nextBytes(noise);
                    System.arraycopy(noise, 0, value, text.length, noise.length);
                }
                Header[] headers = i % 5 == 0 ? new Header[0] : new Header[] {
                        new RecordHeader("seq", ByteBuffer.allocate(4).putInt(i).array()),
                        new RecordHeader("producer", compression.getBytes(StandardCharsets.UTF_8))};
                long ts = T0 + i * 10L;
                records.add(new ExpectedRecord(key, value, headers, ts));
                sent.add(producer.send(new ProducerRecord<>(topic, 0, ts, key, value, List.of(headers))));
            }
            producer.flush();
            for (int i = 0; i < sent.size(); i++) {
                expected.put(sent.get(i).get(60, TimeUnit.SECONDS).offset(), records.get(i));
            }
        }
        return first + count;
    }

    static KafkaConsumer<byte[], byte[]> consumer(KafkaBroker broker, int maxPollRecords) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Reads offsets [from, to) and compares every record with what was produced; returns how many. */
    static int consumeAndCompare(KafkaBroker broker, TopicPartition tp, long from, long to,
                                 Map<Long, ExpectedRecord> expected) {
        int checked = 0;
        try (KafkaConsumer<byte[], byte[]> c = consumer(broker, 2000)) {
            c.assign(List.of(tp));
            c.seek(tp, from);
            long next = from;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
            while (next < to) {
                if (System.nanoTime() > deadline) {
                    fail("consuming " + from + ".." + to + " stalled at " + next);
                }
                ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (r.offset() >= to) {
                        break;
                    }
                    assertEquals(next, r.offset(), "offsets are contiguous");
                    ExpectedRecord e = expected.get(r.offset());
                    assertNotNull(e, "offset " + r.offset());
                    assertArrayEquals(e.key, r.key(), "key at " + r.offset());
                    assertArrayEquals(e.value, r.value(), "value at " + r.offset());
                    assertEquals(e.timestamp, r.timestamp(), "timestamp at " + r.offset());
                    Header[] got = r.headers().toArray();
                    assertEquals(e.headers.length, got.length, "headers at " + r.offset());
                    for (int i = 0; i < got.length; i++) {
                        assertEquals(e.headers[i].key(), got[i].key());
                        assertArrayEquals(e.headers[i].value(), got[i].value());
                    }
                    next++;
                    checked++;
                }
            }
        }
        return checked;
    }

    /** Times the consumer's first poll after a seek to a remote offset, 1 MiB per fetch; median and p90. */
    static String remoteFetchLatency(KafkaBroker broker, TopicPartition tp, long earliestLocal) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 1 << 20);
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 1 << 20);
        List<Long> micros = new ArrayList<>();
        Random random = new Random(9);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            c.assign(List.of(tp));
            for (int i = 0; i < 60; i++) {
                c.seek(tp, random.nextInt((int) earliestLocal));
                long t = System.nanoTime();
                while (c.poll(Duration.ofMillis(100)).isEmpty()) {
                    if (System.nanoTime() - t > TimeUnit.SECONDS.toNanos(30)) {
                        fail("no records from remote within 30 s");
                    }
                }
                micros.add((System.nanoTime() - t) / 1000);
            }
        }
        Collections.sort(micros);
        return String.format("median %.1f, p90 %.1f over %d seeks (consumer poll to first records)",
                percentile(micros, 50) / 1000.0, percentile(micros, 90) / 1000.0, micros.size());
    }
}
