package io.rsm.kafka;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;

/**
 * A record sent, before the broker gave its offset: the producer's future and the record, made a
 * {@link RecordAsRead} once the offset is known.
 */
final class SentRecord {
    final Future<RecordMetadata> future;
    final ProducerRecord<byte[], byte[]> record;

    SentRecord(Future<RecordMetadata> future, ProducerRecord<byte[], byte[]> record) {
        this.future = future;
        this.record = record;
    }

    RecordAsRead rec() throws Exception {
        ProducerRecord<byte[], byte[]> r = record;
        List<String> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        for (Header h : r.headers()) {
            keys.add(h.key());
            values.add(h.value());
        }
        long offset = future.get(60, TimeUnit.SECONDS).offset();
        return new RecordAsRead(offset, r.timestamp(), "CreateTime", r.key(), r.value(), keys, values);
    }
}
