package io.rsm.kafka;

import org.apache.kafka.common.header.Header;

/**
 * What was produced at one offset: key, value, headers and timestamp, as {@link BrokerRecords#produce} sent
 * it and {@link BrokerRecords#consumeAndCompare} expects it back.
 */
final class ExpectedRecord {
    final byte[] key;
    final byte[] value;
    final Header[] headers;
    final long timestamp;

    ExpectedRecord(byte[] key, byte[] value, Header[] headers, long timestamp) {
        this.key = key;
        this.value = value;
        this.headers = headers;
        this.timestamp = timestamp;
    }
}
