package io.rsm.kafka;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.zip.CRC32;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * One record as a reader sees it (the consumer, {@code rsm read --json}, or what a producer sent, once its
 * offset is known), for {@link ReadCommittedIT} to compare record by record: offset, timestamp and its
 * type, key, value and headers, and one line of text for each.
 */
final class RecordAsRead {
    final long offset;
    final long timestamp;
    final String timestampType;
    final byte[] key;
    final byte[] value;
    final List<String> headerKeys;
    final List<byte[]> headerValues;

    RecordAsRead(long offset, long timestamp, String timestampType, byte[] key, byte[] value, List<String> headerKeys,
            List<byte[]> headerValues) {
        this.offset = offset;
        this.timestamp = timestamp;
        this.timestampType = timestampType;
        this.key = key;
        this.value = value;
        this.headerKeys = headerKeys;
        this.headerValues = headerValues;
    }

    static RecordAsRead of(ConsumerRecord<byte[], byte[]> r) {
        List<String> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        for (Header h : r.headers()) {
            keys.add(h.key());
            values.add(h.value());
        }
        return new RecordAsRead(r.offset(), r.timestamp(), r.timestampType().toString(), r.key(), r.value(), keys,
                values);
    }

    boolean sameAs(RecordAsRead o) {
        if (offset != o.offset || timestamp != o.timestamp || !timestampType.equals(o.timestampType)
                || !Arrays.equals(key, o.key) || !Arrays.equals(value, o.value)
                || !headerKeys.equals(o.headerKeys) || headerValues.size() != o.headerValues.size()) {
            return false;
        }
        for (int i = 0; i < headerValues.size(); i++) {
            if (!Arrays.equals(headerValues.get(i), o.headerValues.get(i))) {
                return false;
            }
        }
        return true;
    }

    /** One line: short fields in base64, the value as its length and CRC-32. */
    String line() {
        StringBuilder sb = new StringBuilder();
        sb.append(offset).append(' ').append(timestamp).append(' ').append(timestampType).append(" key=")
                .append(b64(key)).append(" value=");
        if (value == null) {
            sb.append("null");
        } else {
            CRC32 crc = new CRC32();
            crc.update(value);
            sb.append(value.length).append("B/crc").append(Long.toHexString(crc.getValue()));
        }
        sb.append(" headers=[");
        for (int i = 0; i < headerKeys.size(); i++) {
            sb.append(i == 0 ? "" : ",").append(headerKeys.get(i)).append('=').append(b64(headerValues.get(i)));
        }
        return sb.append(']').toString();
    }

    static String b64(byte[] b) {
        return b == null ? "null" : "b64:" + Base64.getEncoder().encodeToString(b);
    }
}
