// Kafka's own remote time-retention rule, run from its compiled classes (kafka-storage 4.4.0), for
// rsm-tiering/tests/kafka_rule.rs. Launched as a single source file on the broker's class path:
//
//   java -cp "$(cat "$RSM_TEST_KAFKA_CLASSPATH")" rsm-tiering/tests/KafkaRetentionRule.java < cases
//
// Reads lines "<now ms> <retention.ms> <segment max timestamp ms>" from standard input and prints, for each,
// the same three numbers and Kafka's decision ("true": the segment is deleted by time retention).
//
// The decision is made by Kafka's code, end to end: RLMExpirationTask.buildRetentionTimeData(retentionMs)
// (whose clock is the RemoteLogManager's `time`, here answering <now ms>) builds the RetentionTimeData (or
// none: time retention off), a real RLMExpirationTask.RemoteLogRetentionHandler is constructed over it, and its
// isSegmentBreachedByRetentionTime is asked about a RemoteLogSegmentMetadata with that max timestamp. The
// RemoteLogManager and RLMExpirationTask are allocated without their constructors (which need a broker); only
// the fields these two methods read are set: the manager's `time` and the task's `logger` (a no-op logger) and
// outer-instance field.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;

public class KafkaRetentionRule {
    private static final String RLM = "org.apache.kafka.server.log.remote.storage.RemoteLogManager";

    public static void main(String[] args) throws Exception {
        Field unsafeField = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        unsafeField.setAccessible(true);
        sun.misc.Unsafe unsafe = (sun.misc.Unsafe) unsafeField.get(null);

        Class<?> managerClass = Class.forName(RLM);
        Class<?> taskClass = Class.forName(RLM + "$RLMExpirationTask");
        Class<?> handlerClass = Class.forName(RLM + "$RLMExpirationTask$RemoteLogRetentionHandler");

        // The clock buildRetentionTimeData reads: RemoteLogManager.time.milliseconds().
        AtomicLong now = new AtomicLong();
        Time clock = (Time) Proxy.newProxyInstance(Time.class.getClassLoader(), new Class<?>[] {Time.class},
                (proxy, method, margs) -> {
                    switch (method.getName()) {
                        case "milliseconds":
                            return now.get();
                        case "toString":
                            return "KafkaRetentionRule clock";
                        default:
                            throw new UnsupportedOperationException("Time." + method.getName());
                    }
                });
        Object manager = unsafe.allocateInstance(managerClass);
        set(managerClass, manager, "time", clock);

        Object task = unsafe.allocateInstance(taskClass);
        set(taskClass, task, "this$0", manager);
        set(taskClass, task, "logger", org.slf4j.helpers.NOPLogger.NOP_LOGGER);

        Method buildRetentionTimeData = taskClass.getDeclaredMethod("buildRetentionTimeData", long.class);
        buildRetentionTimeData.setAccessible(true);
        Constructor<?> handlerConstructor =
                handlerClass.getDeclaredConstructor(taskClass, Optional.class, Optional.class);
        handlerConstructor.setAccessible(true);
        Method breached = handlerClass.getDeclaredMethod("isSegmentBreachedByRetentionTime",
                RemoteLogSegmentMetadata.class);
        breached.setAccessible(true);

        TopicIdPartition partition = new TopicIdPartition(Uuid.randomUuid(), 0, "rsm-retention-rule");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length != 3) {
                throw new IllegalArgumentException("line " + (n + 1) + ": want <now> <retention.ms> <max timestamp>: " + line);
            }
            long nowMs = Long.parseLong(f[0]);
            long retentionMs = Long.parseLong(f[1]);
            long maxTimestampMs = Long.parseLong(f[2]);
            now.set(nowMs);
            Object timeData;
            Object handler;
            boolean decision;
            try {
                timeData = buildRetentionTimeData.invoke(task, retentionMs);
                handler = handlerConstructor.newInstance(task, Optional.empty(), timeData);
                RemoteLogSegmentMetadata segment = new RemoteLogSegmentMetadata(
                        new RemoteLogSegmentId(partition, Uuid.randomUuid()), 0L, 99L, maxTimestampMs, 0, nowMs,
                        1024, Map.of(0, 0L));
                decision = (Boolean) breached.invoke(handler, segment);
            } catch (InvocationTargetException e) {
                throw new RuntimeException("Kafka's code failed on line " + (n + 1) + ": " + line, e.getCause());
            }
            out.append(nowMs).append(' ').append(retentionMs).append(' ').append(maxTimestampMs).append(' ')
                    .append(decision).append('\n');
            n++;
        }
        System.out.print(out);
        System.out.flush();
        System.err.println("KafkaRetentionRule: " + n + " cases decided by " + managerClass.getProtectionDomain()
                .getCodeSource().getLocation());
    }

    /** Sets a (possibly final) instance field declared by {@code owner}. */
    private static void set(Class<?> owner, Object target, String name, Object value) throws Exception {
        Field f = owner.getDeclaredField(name);
        f.setAccessible(true);
        f.set(target, value);
    }
}
