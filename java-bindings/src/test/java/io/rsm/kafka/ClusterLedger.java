package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.HashSet;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a scenario's producers had acknowledged: offset to value, per partition, and which were aborted. One
 * partition's ledger, filled by {@link ClusterClient}'s producers and read back by {@link ClusterScenarios#check}.
 */
final class ClusterLedger {
    final TreeMap<Long, byte[]> values = new TreeMap<>();
    final Set<Long> aborted = new HashSet<>();

    synchronized void add(long offset, byte[] value, boolean abortedTxn) {
        assertNull(values.put(offset, value), "two acknowledged records at offset " + offset);
        if (abortedTxn) {
            aborted.add(offset);
        }
    }

    synchronized int size() {
        return values.size();
    }

    synchronized long end() {
        return values.isEmpty() ? 0 : values.lastKey() + 1;
    }
}
