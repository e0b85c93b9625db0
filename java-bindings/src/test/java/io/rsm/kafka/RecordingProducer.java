package io.rsm.kafka;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A producer of {@link ReadCommittedIT}, transactional (given a transactional id) or plain, that keeps the
 * records of its open transaction (or of a plain producer's chunk) until it knows whether they count as
 * committed; and the records it sends (keys null, empty or not UTF-8, values null, text or binary, headers
 * with null or binary values).
 */
final class RecordingProducer implements AutoCloseable {
    static final long T0 = System.currentTimeMillis() - TimeUnit.HOURS.toMillis(1);
    static final byte[] NO_BYTES = null;
    static final String TEXT = "text \"quoted\" back\\slash tab\t newline\n ctl\u0001 ünïcödé ключ 🙂 ";

    final String name;
    final boolean transactional;
    final KafkaProducer<byte[], byte[]> producer;
    final List<SentRecord> open = new ArrayList<>();
    boolean inTransaction;
    int committed;
    int aborted;

    RecordingProducer(KafkaBroker broker, String name, String compression, String transactionalId) {
        this.name = name;
        this.transactional = transactionalId != null;
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 32768);
        if (transactional) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            p.put(ProducerConfig.ACKS_CONFIG, "all");
        } else if (compression.equals("snappy")) {
            // The second plain producer: neither idempotent nor waiting for all replicas.
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
            p.put(ProducerConfig.ACKS_CONFIG, "1");
        } else {
            p.put(ProducerConfig.ACKS_CONFIG, "all");
        }
        producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        if (transactional) {
            producer.initTransactions();
        }
    }

    /** Sends {@code n} records (in the open transaction, begun if none is) and waits until they are in the log. */
    void send(String topic, Random random, int[] seq, int n, List<RecordAsRead> committedOut, List<RecordAsRead> allOut)
            throws Exception {
        if (transactional && !inTransaction) {
            producer.beginTransaction();
            inTransaction = true;
        }
        for (int i = 0; i < n; i++) {
            ProducerRecord<byte[], byte[]> r = record(topic, random, name, seq[0]++);
            open.add(new SentRecord(producer.send(r), r));
        }
        // In the log now, so the producers' batches interleave (and an abort drops nothing unsent).
        producer.flush();
        if (!transactional) {
            for (SentRecord s : open) {
                RecordAsRead rec = s.rec();
                committedOut.add(rec);
                allOut.add(rec);
            }
            open.clear();
        }
    }

    /** Ends the open transaction, committing or aborting it. */
    void end(boolean commit, List<RecordAsRead> committedOut, List<RecordAsRead> allOut) throws Exception {
        if (!inTransaction) {
            return;
        }
        if (commit) {
            producer.commitTransaction();
            committed++;
        } else {
            producer.abortTransaction();
            aborted++;
        }
        inTransaction = false;
        for (SentRecord s : open) {
            RecordAsRead rec = s.rec();
            allOut.add(rec);
            if (commit) {
                committedOut.add(rec);
            }
        }
        open.clear();
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(30));
    }

    static ProducerRecord<byte[], byte[]> record(String topic, Random r, String producer, int seq) {
        byte[] key;
        if (seq % 13 == 0) {
            key = null;
        } else if (seq % 29 == 0) {
            key = new byte[0];
        } else if (seq % 31 == 0) {
            key = new byte[] {(byte) 0xff, (byte) 0xfe, (byte) seq, (byte) (seq >> 8)};
        } else if (seq % 7 == 0) {
            key = ("ключ-🙂-" + seq).getBytes(StandardCharsets.UTF_8);
        } else {
            key = (producer + "-" + seq).getBytes(StandardCharsets.UTF_8);
        }
        byte[] value;
        if (seq % 17 == 0) {
            value = null;
        } else if (seq % 10 == 0) {
            StringBuilder sb = new StringBuilder();
            int length = 200 + r.nextInt(600);
            while (sb.length() < length) {
                sb.append(TEXT).append(seq).append(' ');
            }
            value = sb.toString().getBytes(StandardCharsets.UTF_8);
        } else {
            // Binary (0xff is never UTF-8) and incompressible, so the segments fill.
            value = new byte[600 + r.nextInt(800)];
            r.nextBytes(value);
            value[0] = (byte) 0xff;
        }
        List<Header> headers = new ArrayList<>();
        if (seq % 4 != 0) {
            headers.add(new RecordHeader("producer", producer.getBytes(StandardCharsets.UTF_8)));
            headers.add(new RecordHeader("seq", ByteBuffer.allocate(4).putInt(seq).array()));
            if (seq % 7 == 0) {
                headers.add(new RecordHeader("nullable", NO_BYTES));
            }
            if (seq % 11 == 0) {
                headers.add(new RecordHeader("bin", new byte[] {(byte) 0xc3, (byte) 0x28}));
            }
        }
        long ts = T0 + seq * 3L + r.nextInt(5);
        return new ProducerRecord<>(topic, 0, ts, key, value, headers);
    }
}
