package io.rsm.kafka;

/**
 * A failure reported by the native library: its kind and its full message (every cause included).
 *
 * <p>Thrown only by the native methods of {@link NativeBridge}; {@link RustRemoteStorageManager} maps it to
 * Kafka's exceptions (see {@link RustRemoteStorageManager#toRemoteStorageException}). The kinds are the Rust
 * facade's {@code ResultCode} numbers, derived from an error's kind and its transient or permanent status (any
 * transient failure is {@link #RETRIABLE}), plus {@link #JNI}.
 */
public final class NativeStorageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The segment, index or object does not exist. */
    public static final int NOT_FOUND = 1;
    /** A transient failure of the store: retrying may succeed. */
    public static final int RETRIABLE = 2;
    /** A permanent failure of the store. */
    public static final int STORAGE = 3;
    /** Data failed a checksum or format check. */
    public static final int CORRUPT = 4;
    /** The caller passed something invalid. */
    public static final int INVALID_ARGUMENT = 5;
    /** A setting is missing, unknown or malformed; the message names the key. */
    public static final int CONFIG = 6;
    /** A panic in the native library, caught at the boundary. */
    public static final int PANIC = 100;
    /** A failure of JNI itself. */
    public static final int JNI = 101;

    private final int kind;

    /**
     * Called by the native library.
     *
     * @param kind one of the kind constants
     * @param message the full message
     */
    public NativeStorageException(int kind, String message) {
        super(message);
        this.kind = kind;
    }

    /** @return the kind, one of the constants of this class */
    public int kind() {
        return kind;
    }

    /** @return the name of a kind, for messages */
    static String kindName(int kind) {
        switch (kind) {
            case NOT_FOUND: return "NOT_FOUND";
            case RETRIABLE: return "RETRIABLE";
            case STORAGE: return "STORAGE";
            case CORRUPT: return "CORRUPT";
            case INVALID_ARGUMENT: return "INVALID_ARGUMENT";
            case CONFIG: return "CONFIG";
            case PANIC: return "PANIC";
            case JNI: return "JNI";
            default: return "KIND_" + kind;
        }
    }
}
