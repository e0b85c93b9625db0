package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Rust tracing events reach SLF4J at their level, and only the levels SLF4J has enabled (here: info). */
class LogBridgeTest {
    @Test
    void nativeEventsReachSlf4jAtTheEnabledLevels() throws Exception {
        NativeBridge.ensureLoaded();
        assertEquals(3, NativeLog.currentLevel(), "slf4j-simple runs at info in these tests");
        String marker = "bridge-" + UUID.randomUUID();
        List<String> seen = new CopyOnWriteArrayList<>();
        Consumer<String> listener = line -> {
            if (line.contains(marker)) {
                seen.add(line);
            }
        };
        NativeLog.addListener(listener);
        try {
            NativeBridge.selfTest(4, 0, marker);
            long deadline = System.currentTimeMillis() + 10_000;
            while (seen.size() < 3 && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
            Thread.sleep(300);
            String logger = NativeLog.ROOT + ".rsm_jni.selftest";
            assertEquals(List.of("ERROR " + logger + " " + marker, "WARN " + logger + " " + marker,
                    "INFO " + logger + " " + marker), seen.stream().sorted((a, b) -> rank(a) - rank(b))
                    .collect(Collectors.toList()));
            assertTrue(NativeBridge.droppedLogEvents() >= 0);
        } finally {
            NativeLog.removeListener(listener);
        }
    }

    private static int rank(String line) {
        return line.startsWith("ERROR") ? 0 : line.startsWith("WARN") ? 1 : 2;
    }
}
