package io.rsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.Objects;
import java.util.function.LongConsumer;

/**
 * An {@link InputStream} over a native stream handle: each read copies, into the caller's array, at most what
 * the native stream already holds (a short read is normal), {@code -1} at the end. {@link #close()} frees the
 * native buffers and stops the read at once; if the broker drops the stream without closing it, a
 * {@link Cleaner} does the same once the stream is unreachable. Not safe for concurrent use by several
 * threads (no {@code InputStream} is); a close from another thread is safe. The bytes each read returns are
 * passed to the optional metrics callback (skipped bytes are not read, so not counted), and the stream's first
 * failed read to the optional failure callback (a fetch that fails inside its stream is a failed fetch).
 *
 * <p>Small reads are served from a buffer of {@value #BUFFER_BYTES} bytes filled by one native read: the
 * broker reads each batch as a 17-byte header and then the rest of the batch, and a native call per read would
 * cost more than the copy. A read of at least {@value #DIRECT_READ_BYTES} bytes that finds the buffer empty
 * goes straight into the caller's array.
 */
final class NativeInputStream extends InputStream {
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "rsm-native-stream-cleaner");
        t.setDaemon(true);
        return t;
    });

    private final long handle;
    private final String what;
    private final Cleaner.Cleanable cleanable;
    private final LongConsumer bytesRead;
    /** Told once, on the stream's first failed read; may be {@code null}. */
    private final Runnable failed;
    private boolean failureCounted;
    /** The buffer of small reads. */
    static final int BUFFER_BYTES = 64 * 1024;
    /** Reads at least this long bypass the buffer when it is empty. */
    static final int DIRECT_READ_BYTES = 8 * 1024;

    private final byte[] one = new byte[1];
    /** Bytes read ahead from the native stream, {@code buffer[pos..limit)}; allocated on the first small read. */
    private byte[] buffer;
    private int pos;
    private int limit;
    private volatile boolean closed;

    /** Frees a native stream; holds no reference to the stream object, so the Cleaner can run it. */
    private static final class Release implements Runnable {
        private final long handle;

        Release(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            try {
                NativeBridge.closeStream(handle);
            } catch (Throwable ignored) {
                // Closing cannot fail for a valid handle; a stale one is harmless.
            }
        }
    }

    /** @param bytesRead told the number of bytes of every read that returns some; may be {@code null} */
    NativeInputStream(long handle, String what, LongConsumer bytesRead) {
        this(handle, what, bytesRead, null);
    }

    /**
     * @param bytesRead told the number of bytes of every read that returns some; may be {@code null}
     * @param failed run once, when a read (or skip) of the stream first fails: the fetch failed, though its call
     *     returned a stream; may be {@code null}
     */
    NativeInputStream(long handle, String what, LongConsumer bytesRead, Runnable failed) {
        this.handle = handle;
        this.what = what;
        this.bytesRead = bytesRead;
        this.failed = failed;
        this.cleanable = CLEANER.register(this, new Release(handle));
    }

    private void ensureOpen() throws IOException {
        if (closed) {
            throw new IOException(what + ": stream closed");
        }
    }

    private IOException failure(Throwable t) {
        if (failed != null && !failureCounted) {
            failureCounted = true;
            failed.run();
        }
        IOException e = new IOException(what + ": " + t.getMessage(),
                RustRemoteStorageManager.toRemoteStorageException(t, what));
        return RustRemoteStorageManager.isRetriable(t) ? RustRemoteStorageManager.withoutFrames(e) : e;
    }

    @Override
    public int read() throws IOException {
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length);
        ensureOpen();
        if (len == 0) {
            return 0;
        }
        int n;
        if (pos == limit && len < DIRECT_READ_BYTES) {
            if (buffer == null) {
                buffer = new byte[BUFFER_BYTES];
            }
            int filled = nativeRead(buffer, 0, buffer.length);
            if (filled < 0) {
                return -1;
            }
            pos = 0;
            limit = filled;
        }
        if (pos < limit) {
            n = Math.min(len, limit - pos);
            System.arraycopy(buffer, pos, b, off, n);
            pos += n;
        } else {
            n = nativeRead(b, off, len);
        }
        if (n > 0 && bytesRead != null) {
            bytesRead.accept(n);
        }
        return n;
    }

    private int nativeRead(byte[] b, int off, int len) throws IOException {
        try {
            return NativeBridge.read(handle, b, off, len);
        } catch (NativeStorageException e) {
            throw failure(e);
        } finally {
            // The Cleaner must not free the handle while a call on it runs.
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public long skip(long n) throws IOException {
        ensureOpen();
        if (n <= 0) {
            return 0;
        }
        int buffered = (int) Math.min(n, limit - pos);
        pos += buffered;
        if (buffered == n) {
            return n;
        }
        try {
            return buffered + NativeBridge.skip(handle, n - buffered);
        } catch (NativeStorageException e) {
            throw failure(e);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public int available() throws IOException {
        if (closed) {
            return 0;
        }
        try {
            return (limit - pos) + NativeBridge.available(handle);
        } catch (NativeStorageException e) {
            throw failure(e);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Frees the native stream now; closing twice is harmless. */
    @Override
    public void close() {
        closed = true;
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "NativeInputStream[" + what + ", handle " + handle + (closed ? ", closed]" : "]");
    }
}
