package io.rsm.kafka;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One phase of {@link BrokerStoreFaultsIT}: its name, the fault proxy's command, and what was seen during it
 * (sends and their acknowledgement latency, remote reads, the proxy's and the broker's counters, the broker
 * log's lines).
 */
final class StoreFaultPhase {
    final String name;
    final String command;
    final boolean fault;
    final List<Long> ackMicros = Collections.synchronizedList(new ArrayList<>());
    final AtomicLong sent = new AtomicLong();
    final AtomicLong sendErrors = new AtomicLong();
    final AtomicLong remoteRead = new AtomicLong();
    final AtomicLong consumerErrors = new AtomicLong();
    /** When the consumer first got remote records in this phase (System.nanoTime), or 0. */
    volatile long firstRemoteRead;
    volatile double queueMax = -1;
    long start;
    long end;
    FaultProxy.Stats proxyStart;
    FaultProxy.Stats proxyEnd;
    Map<String, Double> jmxStart;
    Map<String, Double> jmxEnd;
    long logStart;
    long logEnd;
    long lines;
    /** Log entries: lines that start one (a stack trace belongs to the entry it follows). */
    long entries;
    long warnLines;
    long errorLines;
    long pluginLines;
    /** The first WARN and ERROR lines of the phase, one per logger and message start. */
    final Map<String, String> samples = new LinkedHashMap<>();
    /** For a pass phase, how a request of the test's own fared at its end, through the proxy and directly. */
    String health;
    /** The phase's first ERROR line with the stack trace that follows it. */
    final List<String> firstError = new ArrayList<>();

    StoreFaultPhase(String name, String command) {
        this.name = name;
        this.command = command;
        this.fault = !command.equals("pass");
    }

    double seconds() {
        return (end - start) / 1e9;
    }

    double delta(String key) {
        Double a = jmxStart.get(key);
        Double b = jmxEnd.get(key);
        return a == null || b == null ? Double.NaN : b - a;
    }

    /** Seconds from the phase's start to the consumer's first remote records in it, or -1. */
    double recovery() {
        long first = firstRemoteRead;
        return first == 0 ? -1 : Math.max(0, first - start) / 1e9;
    }
}
