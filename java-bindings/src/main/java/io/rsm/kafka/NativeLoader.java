package io.rsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds and loads {@code librsm_jni} once per class loader, in this order:
 * <ol>
 *   <li>the file the system property {@value #LIBRARY_PROPERTY} names;</li>
 *   <li>{@code rsm_jni} on {@code java.library.path} (an operator's override);</li>
 *   <li>the copy inside the plugin jar, {@code native/<os>-<arch>/librsm_jni.so}, extracted to a temporary
 *       file that is deleted as soon as it is loaded (the mapping stays), so a killed broker leaves nothing.</li>
 * </ol>
 * The JVM binds a native library to one class loader. A second load from the same loader is skipped; a load
 * from another loader (a second broker, or a test, in the same JVM) gets its own temporary copy, because the
 * same file cannot be loaded twice.
 */
final class NativeLoader {
    /** System property naming the library file to load instead of the bundled one. */
    static final String LIBRARY_PROPERTY = "rsm.native.library";
    static final String LIBRARY_NAME = "rsm_jni";

    private static final Logger log = LoggerFactory.getLogger(NativeLoader.class);
    private static String loadedFrom;

    private NativeLoader() {}

    /** @return where the library was loaded from; loads it on the first call */
    static synchronized String load() {
        if (loadedFrom != null) {
            return loadedFrom;
        }
        String override = System.getProperty(LIBRARY_PROPERTY);
        if (override != null && !override.isBlank()) {
            Path path = Paths.get(override.trim()).toAbsolutePath();
            if (!Files.isRegularFile(path)) {
                throw new UnsatisfiedLinkError("-D" + LIBRARY_PROPERTY + "=" + override + ": no such file");
            }
            loadedFrom = loadFile(path, path.toString());
        } else {
            loadedFrom = loadFromLibraryPath();
            if (loadedFrom == null) {
                loadedFrom = loadBundled(platform());
            }
        }
        log.info("rsm native library {} loaded from {}", NativeBridge.version(), loadedFrom);
        return loadedFrom;
    }

    private static String loadFromLibraryPath() {
        String file = System.mapLibraryName(LIBRARY_NAME);
        for (String dir : System.getProperty("java.library.path", "").split(java.io.File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Paths.get(dir, file).toAbsolutePath();
            if (Files.isRegularFile(candidate)) {
                return loadFile(candidate, candidate + " (java.library.path)");
            }
        }
        return null;
    }

    private static String loadFile(Path path, String description) {
        try {
            System.load(path.toString());
            return description;
        } catch (UnsatisfiedLinkError e) {
            if (String.valueOf(e.getMessage()).contains("another classloader")) {
                // Another plugin class loader in this JVM has this very file: load a private copy.
                try (InputStream in = Files.newInputStream(path)) {
                    return extractAndLoad(in, description + ", private copy for this class loader");
                } catch (IOException io) {
                    UnsatisfiedLinkError err = new UnsatisfiedLinkError("cannot copy " + path + ": " + io);
                    err.initCause(io);
                    throw err;
                }
            }
            throw e;
        }
    }

    /** The jar resource holding the library for {@code platform}. */
    static String resourceFor(String platform) {
        return "/native/" + platform + "/" + System.mapLibraryName(LIBRARY_NAME);
    }

    static String loadBundled(String platform) {
        String resource = resourceFor(platform);
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("the rsm plugin jar has no native library for platform " + platform
                        + " (no " + resource + " in the jar): build librsm_jni for this platform (cargo build"
                        + " --release -p rsm-jni) and point -D" + LIBRARY_PROPERTY + " at it, or put it on"
                        + " java.library.path");
            }
            return extractAndLoad(in, "the plugin jar (" + resource + ")");
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("cannot extract " + resource + ": " + e);
            err.initCause(e);
            throw err;
        }
    }

    private static String extractAndLoad(InputStream in, String description) throws IOException {
        Path tmp = Files.createTempFile("librsm_jni-", "-" + System.mapLibraryName(LIBRARY_NAME));
        try {
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            System.load(tmp.toString());
        } finally {
            if (isWindows()) {
                tmp.toFile().deleteOnExit();
            } else {
                // A loaded library stays mapped after its file is unlinked.
                Files.deleteIfExists(tmp);
            }
        }
        return description;
    }

    private static boolean isWindows() {
        return System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("windows");
    }

    /** @return this JVM's platform as the jar names its folders: linux-x86_64, linux-aarch64, darwin-aarch64 */
    static String platform() {
        String os = System.getProperty("os.name", "unknown").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "unknown").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) {
            os = "linux";
        } else if (os.startsWith("mac") || os.startsWith("darwin")) {
            os = "darwin";
        } else if (os.startsWith("windows")) {
            os = "windows";
        } else {
            os = os.replaceAll("[^a-z0-9]", "");
        }
        switch (arch) {
            case "amd64":
            case "x86_64":
                arch = "x86_64";
                break;
            case "aarch64":
            case "arm64":
                arch = "aarch64";
                break;
            default:
                arch = arch.replaceAll("[^a-z0-9_]", "");
        }
        return os + "-" + arch;
    }
}
