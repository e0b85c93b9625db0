package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Follows a growing log file from its current end, line by line: {@link ClusterScenarios} waits on a broker's
 * log with it for the moment to act (the leader starting to copy a segment).
 */
final class LogTail implements AutoCloseable {
    private final RandomAccessFile file;
    private final StringBuilder partial = new StringBuilder();

    LogTail(Path path) throws IOException {
        file = new RandomAccessFile(path.toFile(), "r");
        file.seek(file.length());
    }

    /** Waits (polling every millisecond) for a new line matching {@code match}; returns it. */
    String await(int seconds, Predicate<String> match) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        byte[] buf = new byte[1 << 16];
        while (System.nanoTime() < deadline) {
            int n = file.read(buf);
            if (n <= 0) {
                Thread.sleep(1);
                continue;
            }
            partial.append(new String(buf, 0, n, StandardCharsets.UTF_8));
            int nl;
            while ((nl = partial.indexOf("\n")) >= 0) {
                String line = partial.substring(0, nl);
                partial.delete(0, nl + 1);
                if (match.test(line)) {
                    return line;
                }
            }
        }
        fail("no matching line within " + seconds + " s");
        return null;
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
