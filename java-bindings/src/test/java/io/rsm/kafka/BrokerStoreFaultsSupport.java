package io.rsm.kafka;

import java.io.IOException;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The broker's log and the store's health for {@link BrokerStoreFaultsIT}: the broker logging as an operator runs
 * it, a phase's log lines counted as they stream, a flooded log cut down afterwards, and a request of the test's
 * own to the store through the fault proxy and directly.
 */
final class BrokerStoreFaultsSupport {
    /** A broker log longer than this is cut to its first and last halves of it once the test is over. */
    static final long LOG_KEPT_BYTES = 64L << 20;

    private BrokerStoreFaultsSupport() {}

    /**
     * Cuts a broker log longer than {@link #LOG_KEPT_BYTES} to its first and last halves of that, with a line
     * saying how much was left out: a flooded log of gigabytes stays out of the build directory.
     */
    static void trim(Path log) throws IOException {
        if (!Files.exists(log) || Files.size(log) <= LOG_KEPT_BYTES) {
            return;
        }
        long size = Files.size(log);
        Path cut = log.resolveSibling("broker.log.cut");
        int half = (int) (LOG_KEPT_BYTES / 2);
        try (RandomAccessFile in = new RandomAccessFile(log.toFile(), "r");
                java.io.OutputStream out = Files.newOutputStream(cut)) {
            byte[] buffer = new byte[half];
            in.readFully(buffer);
            out.write(buffer);
            out.write(String.format("%n... %d bytes of the broker log left out by the test ...%n", size - 2L * half)
                    .getBytes(StandardCharsets.UTF_8));
            in.seek(size - half);
            in.readFully(buffer);
            out.write(buffer);
        }
        Files.move(cut, log, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    /** The broker logging as an operator runs it: INFO, our plugin too (not the broker tests' DEBUG). */
    static void operatorLogging(KafkaBroker broker) throws IOException {
        Files.writeString(broker.work.resolve("log4j2.properties"), String.join("\n",
                "status = warn",
                "appender.file.type = File",
                "appender.file.name = FILE",
                "appender.file.fileName = " + broker.brokerLog,
                "appender.file.append = true",
                "appender.file.layout.type = PatternLayout",
                "appender.file.layout.pattern = [%d] %p [%t] %c - %m%n",
                "rootLogger.level = INFO",
                "rootLogger.appenderRef.file.ref = FILE",
                ""));
    }

    /**
     * A request of the test's own to the store (a listing of an empty prefix), through the proxy and directly,
     * each with a 5 s timeout: whether the store and the proxy answer, and in how long.
     */
    static String health(FaultProxy proxy, String endpoint) {
        return "through the proxy " + probe(proxy.url()) + ", directly " + probe(endpoint);
    }

    /** One request on a fresh connection (not a pooled one: a proxy that stopped accepting shows). */
    private static String probe(String base) {
        java.net.URI uri = java.net.URI.create(base);
        String bucket = System.getProperty("rsm.s3.bucket", "").trim();
        long t = System.nanoTime();
        try (java.net.Socket socket = new java.net.Socket()) {
            socket.connect(new java.net.InetSocketAddress(uri.getHost(), uri.getPort()), 5000);
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(("GET /" + bucket + "?list-type=2&prefix=health-check/ HTTP/1.1\r\nHost: "
                    + uri.getHost() + ":" + uri.getPort() + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            String status = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(),
                    StandardCharsets.US_ASCII)).readLine();
            return String.format("%s in %.0f ms", status == null ? "closed without an answer" : status.trim(),
                    (System.nanoTime() - t) / 1e6);
        } catch (IOException e) {
            return String.format("%s after %.0f ms", e, (System.nanoTime() - t) / 1e6);
        }
    }

    /**
     * Counts the broker log's lines of the phase (its bytes between the phase's two sizes), read as they stream
     * (a flooded phase writes gigabytes), one byte a character.
     */
    static void countLogLines(Path brokerLog, StoreFaultPhase phase) throws IOException {
        long left = phase.logEnd - phase.logStart;
        int trace = 0;
        try (java.io.InputStream in = Files.newInputStream(brokerLog);
                java.io.BufferedReader r = new java.io.BufferedReader(
                        new InputStreamReader(in, StandardCharsets.ISO_8859_1), 1 << 16)) {
            in.skipNBytes(phase.logStart);
            String line;
            while (left > 0 && (line = r.readLine()) != null) {
                left -= line.length() + 1;
                if (line.isEmpty()) {
                    continue;
                }
                trace = countLine(phase, line, trace);
            }
        }
    }

    /** Counts one log line into {@code phase}; {@code trace} says where the first ERROR's stack trace is. */
    private static int countLine(StoreFaultPhase phase, String line, int trace) {
        phase.lines++;
        phase.entries += line.startsWith("[") ? 1 : 0;
        boolean warn = line.contains("] WARN [");
        boolean error = line.contains("] ERROR [");
        phase.warnLines += warn ? 1 : 0;
        phase.errorLines += error ? 1 : 0;
        if (line.startsWith("[") && line.contains("] io.rsm")) {
            phase.pluginLines++;
        }
        // The first ERROR line and what follows it up to the next log line (its stack trace).
        boolean follows = !line.startsWith("[");
        if (trace == 0 && error || trace == 1 && follows && phase.firstError.size() < 40) {
            phase.firstError.add(line.length() > 300 ? line.substring(0, 300) + "..." : line);
            trace = 1;
        } else if (trace == 1) {
            trace = 2;
        }
        if ((warn || error) && phase.samples.size() < 12) {
            // One sample per logger and message start (numbers, ids and offsets aside).
            String rest = line.replaceFirst("^\\[[^]]*\\] ", "");
            String kind = rest.replaceFirst("\\[[^]]*\\] ", "").replaceAll("[0-9a-zA-Z_-]{20,}|[0-9]+", "#");
            kind = kind.substring(0, Math.min(90, kind.length()));
            phase.samples.putIfAbsent(kind, rest.length() > 400 ? rest.substring(0, 400) + "..." : rest);
        }
        return trace;
    }
}
