package io.rsm.kafka;

import static io.rsm.kafka.EndToEndSupport.percentile;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The table {@link BrokerStoreFaultsIT} prints: the figures of each {@link StoreFaultPhase}, a row each, with
 * what each column shows, and the number formats of its cells.
 */
final class StoreFaultPhaseTable {
    private StoreFaultPhaseTable() {}

    /** What each column of {@link #table} shows. */
    static final String COLUMNS = String.join(" ",
            "columns: s = phase length; sent = records sent; ack-p50/p99 = acks=all latency (ms);",
            "s-err = failed sends; remote = remote records the consumer read; c-err = consumer exceptions;",
            "req/s = requests the proxy received a second; fault/s = those the phase's fault applied to (for the",
            "reset phase: every request, though answers of up to 40000 B pass whole); conn = connections the proxy",
            "accepted; p-req, p-fail = the plugin's own count of the topic's store requests and failed ones",
            "(remote-requests-total, -failed-total); log/s = broker log lines a second (INFO and up); ent/s = log",
            "entries a second (a stack trace counted with its entry); warn, error =",
            "WARN and ERROR lines; ours = lines of io.rsm loggers; queue = Kafka's RemoteLogReaderTaskQueueSize,",
            "largest sample; k-ferr = Kafka's RemoteFetchErrorsPerSec count; p-ferr, p-ierr, p-cerr = the plugin's",
            "fetch-segment, fetch-index and copy-segment error-total; b-open, b-ref = the plugin's",
            "store-breaker-opened, -refused; thrtl = store-throttled; rd-MB = MB the plugin read from the store",
            "(store-bytes-read); sv-MB = MB it served to the broker (fetch-segment byte-total); recover = for a pass",
            "phase, s from its start to the consumer's first remote records in it");

    /** The figures of one phase, a row each, each column as wide as its widest cell. */
    static String table(List<StoreFaultPhase> phases) {
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("phase", "s", "sent", "ack-p50", "ack-p99", "s-err", "remote", "c-err", "req/s", "fault/s",
                "conn", "p-req", "p-fail", "log/s", "ent/s", "warn", "error", "ours", "queue", "k-ferr", "p-ferr", "p-ierr",
                "p-cerr", "b-open", "b-ref", "thrtl", "rd-MB", "sv-MB", "recover"));
        for (StoreFaultPhase p : phases) {
            double s = p.seconds();
            List<Long> acks = new ArrayList<>(p.ackMicros);
            Collections.sort(acks);
            long requests = p.proxyEnd.received() - p.proxyStart.received();
            long faulted = p.proxyEnd.faulted() - p.proxyStart.faulted();
            rows.add(List.of(p.name, f1(s), String.valueOf(p.sent.get()), f1(percentile(acks, 50) / 1000.0),
                    f1(percentile(acks, 99) / 1000.0), String.valueOf(p.sendErrors.get()),
                    String.valueOf(p.remoteRead.get()), String.valueOf(p.consumerErrors.get()), f1(requests / s),
                    f1(faulted / s), String.valueOf(p.proxyEnd.connections() - p.proxyStart.connections()),
                    n(p.delta("plugin.requests")), n(p.delta("plugin.requests.failed")), f1(p.lines / s), f1(p.entries / s),
                    String.valueOf(p.warnLines), String.valueOf(p.errorLines), String.valueOf(p.pluginLines),
                    n(p.queueMax), n(p.delta("kafka.fetch.errors")), n(p.delta("plugin.fetch.errors")),
                    n(p.delta("plugin.index.errors")), n(p.delta("plugin.copy.errors")), n(p.delta("breaker.opened")),
                    n(p.delta("breaker.refused")), n(p.delta("throttled")), mb(p.delta("store.bytes.read")),
                    mb(p.delta("plugin.fetch.bytes")), p.fault || p.recovery() < 0 ? "-" : f1(p.recovery())));
        }
        int[] widths = new int[rows.get(0).size()];
        for (List<String> row : rows) {
            for (int i = 0; i < row.size(); i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        }
        StringBuilder sb = new StringBuilder();
        for (List<String> row : rows) {
            for (int i = 0; i < row.size(); i++) {
                String cell = row.get(i);
                String pad = " ".repeat(widths[i] - cell.length());
                // The phase's name to the left, the figures to the right.
                sb.append(i == 0 ? cell + pad : " " + pad + cell);
            }
            sb.append('\n');
        }
        return sb.append(COLUMNS).append('\n').toString();
    }

    static String f1(double v) {
        return String.format("%.1f", v);
    }

    static String mb(double bytes) {
        return Double.isNaN(bytes) || bytes < 0 ? "n/a" : String.format("%.1f", bytes / 1e6);
    }

    static String n(double v) {
        return Double.isNaN(v) || v < 0 ? "n/a" : String.format("%.0f", v);
    }
}
