package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLoaderTest {
    @TempDir
    Path dir;

    @Test
    void platformNamesAndAClearErrorWhenTheJarHasNoLibraryForIt() {
        assertEquals("linux-x86_64", NativeLoader.platform(), "these tests run on linux-x86_64");
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLoader.loadBundled("plan9-mips"));
        assertTrue(e.getMessage().contains("no native library for platform plan9-mips"), e.getMessage());
        assertTrue(e.getMessage().contains("-D" + NativeLoader.LIBRARY_PROPERTY), e.getMessage());
        assertTrue(NativeBridge.class.getResource(NativeLoader.resourceFor("linux-x86_64")) != null,
                "the build put the library in the jar's platform folder");
    }

    @Test
    void loadingTwiceIsHarmlessAndASecondPluginClassLoaderGetsItsOwnCopy() throws Exception {
        NativeBridge.ensureLoaded();
        String first = NativeLoader.load();
        NativeBridge.ensureLoaded();
        assertEquals(first, NativeLoader.load());

        // What the broker does: a child-first loader over the plugin's classes, the Kafka API from the parent.
        URL classes = RustRemoteStorageManager.class.getProtectionDomain().getCodeSource().getLocation();
        try (URLClassLoader plugin = new ChildFirst(new URL[] {classes}, getClass().getClassLoader())) {
            Class<?> c = plugin.loadClass(RustRemoteStorageManager.class.getName());
            assertNotSame(RustRemoteStorageManager.class, c);
            RemoteStorageManager other = (RemoteStorageManager) c.getConstructor().newInstance();
            Map<String, Object> s = new HashMap<>();
            s.put("store.url", TestStore.fileUrl(dir.resolve("store")));
            s.put("broker.id", 1);
            other.configure(s);
            TopicIdPartition tp = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("t", 0));
            TestSegments.Segment seg = TestSegments.write(dir.resolve("seg"), 0, 5, 10, 100, false, 3);
            RemoteLogSegmentMetadata md = seg.metadata(tp);
            other.copyLogSegmentData(md, seg.data());
            try (InputStream in = other.fetchLogSegment(md, 0)) {
                assertArrayEquals(Files.readAllBytes(seg.log), in.readAllBytes());
            }
            other.close();
        }
        // This loader's library still works.
        assertEquals(0, NativeBridge.liveHandles(1));
    }

    /** Loads io.rsm classes itself, everything else from the parent: the shape of Kafka's plugin loader. */
    static final class ChildFirst extends URLClassLoader {
        ChildFirst(URL[] urls, ClassLoader parent) {
            super(urls, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                if (!name.startsWith("io.rsm.")) {
                    return super.loadClass(name, resolve);
                }
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    c = findClass(name);
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }
}
