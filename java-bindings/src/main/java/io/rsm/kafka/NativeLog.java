package io.rsm.kafka;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands the native library's {@code tracing} events to SLF4J, on one daemon thread per class loader.
 *
 * <p>A Rust event with target {@code rsm_core::tiered} goes to the logger {@code io.rsm.native.rsm_core.tiered}
 * at its level. The native side only formats events at or above the level SLF4J has for {@value #ROOT}, which
 * this thread re-reads every second, so a level changed at run time (log4j reconfiguration) takes effect.
 */
final class NativeLog implements Runnable {
    /** The logger whose level the native side follows; every native logger is below it. */
    static final String ROOT = "io.rsm.native";
    private static final long POLL_MILLIS = 200;
    private static final long LEVEL_REFRESH_MILLIS = 1000;

    private static final Map<String, Logger> LOGGERS = new ConcurrentHashMap<>();
    private static final List<Consumer<String>> LISTENERS = new CopyOnWriteArrayList<>();
    private static Thread thread;

    private NativeLog() {}

    /** @return the SLF4J level of {@value #ROOT} as the native side numbers it (0 off ... 5 trace) */
    static int currentLevel() {
        Logger l = LoggerFactory.getLogger(ROOT);
        if (l.isTraceEnabled()) {
            return 5;
        } else if (l.isDebugEnabled()) {
            return 4;
        } else if (l.isInfoEnabled()) {
            return 3;
        } else if (l.isWarnEnabled()) {
            return 2;
        } else if (l.isErrorEnabled()) {
            return 1;
        }
        return 0;
    }

    static synchronized void start() {
        if (thread != null) {
            return;
        }
        thread = new Thread(new NativeLog(), "rsm-native-log");
        thread.setDaemon(true);
        thread.start();
    }

    /** Tests: sees every event passed to SLF4J, as {@code LEVEL logger message}. */
    static void addListener(Consumer<String> listener) {
        LISTENERS.add(listener);
    }

    static void removeListener(Consumer<String> listener) {
        LISTENERS.remove(listener);
    }

    @Override
    public void run() {
        long nextRefresh = 0;
        while (true) {
            try {
                long now = System.currentTimeMillis();
                if (now >= nextRefresh) {
                    NativeBridge.setLogLevel(currentLevel());
                    nextRefresh = now + LEVEL_REFRESH_MILLIS;
                }
                String event = NativeBridge.pollLog(POLL_MILLIS);
                if (event != null) {
                    dispatch(event);
                }
            } catch (Throwable t) {
                // Never let the bridge die: back off and go on.
                try {
                    LoggerFactory.getLogger(ROOT).warn("rsm native log bridge: {}", t.toString());
                    Thread.sleep(1000);
                } catch (Throwable ignored) {
                    // Keep going.
                }
            }
        }
    }

    static void dispatch(String event) {
        int sep = event.indexOf('\u0001');
        if (event.isEmpty() || sep < 1) {
            return;
        }
        int level = event.charAt(0) - '0';
        String target = event.substring(1, sep);
        String message = event.substring(sep + 1);
        String name = ROOT + "." + target.replace("::", ".");
        Logger logger = LOGGERS.computeIfAbsent(name, LoggerFactory::getLogger);
        String levelName;
        switch (level) {
            case 1:
                if (!logger.isErrorEnabled()) {
                    return;
                }
                logger.error(message);
                levelName = "ERROR";
                break;
            case 2:
                if (!logger.isWarnEnabled()) {
                    return;
                }
                logger.warn(message);
                levelName = "WARN";
                break;
            case 3:
                if (!logger.isInfoEnabled()) {
                    return;
                }
                logger.info(message);
                levelName = "INFO";
                break;
            case 4:
                if (!logger.isDebugEnabled()) {
                    return;
                }
                logger.debug(message);
                levelName = "DEBUG";
                break;
            default:
                if (!logger.isTraceEnabled()) {
                    return;
                }
                logger.trace(message);
                levelName = "TRACE";
        }
        for (Consumer<String> l : LISTENERS) {
            l.accept(levelName + " " + name + " " + message);
        }
    }
}
