package io.rsm.kafka;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The Rust tests' fault-injecting HTTP proxy ({@code facade/tests/proxy/mod.rs}) as a process: the cargo example
 * {@code facade/examples/fault_proxy.rs} in front of a plain-HTTP store (moto), switched between faults by
 * commands on its stdin, each answered with one line on its stdout. Its stderr goes to a file.
 */
final class FaultProxy implements AutoCloseable {
    /** The proxy's loopback port. */
    final int port;
    private final Process process;
    private final Writer commands;
    private final BufferedReader answers;

    /** What the proxy has seen so far: requests, connections, and requests by the fault that applied to them. */
    record Stats(long received, long connections, Map<String, Long> byFault) {
        /** Requests the fault of their moment applied to (every one but those passed on as {@code Pass}). */
        long faulted() {
            return received - byFault.getOrDefault("Pass", 0L);
        }
    }

    /** Starts {@code binary} in front of {@code upstream} ({@code http://host:port}), its stderr to {@code log}. */
    FaultProxy(Path binary, String upstream, Path log) throws IOException {
        process = new ProcessBuilder(binary.toString(), upstream)
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String first = answers.readLine();
        if (first == null || !first.startsWith("port ")) {
            process.destroyForcibly();
            throw new IOException("fault proxy " + binary + " did not say its port: " + first);
        }
        port = Integer.parseInt(first.substring("port ".length()).trim());
    }

    /** The proxy's URL, to give the client in place of the store's. */
    String url() {
        return "http://127.0.0.1:" + port;
    }

    /**
     * Sends one command ({@code pass}, {@code blackhole}, {@code refuse}, {@code reset N},
     * {@code slow FIRST_MS BYTES_PER_SEC}, {@code slowdown}, {@code stats}) and returns the proxy's answer.
     */
    synchronized String command(String line) throws IOException {
        commands.write(line + "\n");
        commands.flush();
        String answer = answers.readLine();
        if (answer == null) {
            throw new IOException("the fault proxy exited (command " + line + ")");
        }
        if (answer.startsWith("error")) {
            throw new IllegalArgumentException("fault proxy: " + answer);
        }
        return answer;
    }

    /** Treats every request read from now on as {@code fault} says (a command such as {@code reset 40000}). */
    void set(String fault) throws IOException {
        command(fault);
    }

    Stats stats() throws IOException {
        String[] words = command("stats").trim().split("\\s+");
        Map<String, Long> byFault = new TreeMap<>();
        for (String w : List.of(words).subList(3, words.length)) {
            String[] kv = w.split("=", 2);
            byFault.put(kv[0], Long.parseLong(kv[1]));
        }
        return new Stats(Long.parseLong(words[1]), Long.parseLong(words[2]), byFault);
    }

    boolean alive() {
        return process.isAlive();
    }

    /** Ends the proxy: its stdin closes, on which it exits. */
    @Override
    public void close() throws IOException {
        try {
            commands.close();
        } catch (IOException ignored) {
            // It is gone already.
        }
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
