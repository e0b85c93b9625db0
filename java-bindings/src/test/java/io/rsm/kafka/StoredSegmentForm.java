package io.rsm.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;

/**
 * What a tiered segment's objects hold, read from the store without our SDK: the manifest's version and whether
 * a record value shows in plain text in the log object ({@link BrokerEndToEndIT}'s check of the stored form).
 */
final class StoredSegmentForm {
    private StoredSegmentForm() {}

    /**
     * What the first segment's objects hold, read from the store without our SDK: a record value the first
     * producer sent uncompressed ({@code plain}) is in the stored log as it was sent, unless the plugin
     * compresses (every chunk: the heuristic is off) and encrypts, when the manifest is of version 5 (chunks
     * compressed in frames, each sealed), or 6 when {@code topic}'s data keys are wrapped by a KMS, and the
     * value is nowhere in the log object.
     */
    static void checkStoredForm(TestStore store, String remoteDir, String topic, byte[] plain) throws IOException {
        assertTrue(plain.length >= 64, "a value long enough to look for: " + plain.length);
        byte[] probe = Arrays.copyOf(plain, 64);
        String log = null;
        String manifest = null;
        for (String key : store.keysUnder(remoteDir)) {
            String name = key.substring(key.lastIndexOf('/') + 1);
            if (name.startsWith("00000000000000000000-") && name.endsWith(".log")) {
                log = key;
            } else if (name.startsWith("00000000000000000000-") && name.endsWith(".manifest")) {
                manifest = key;
            }
        }
        assertNotNull(log, "the first segment's log object under " + remoteDir);
        assertNotNull(manifest, "the first segment's manifest under " + remoteDir);
        byte[] m = store.read(manifest);
        int version = ((m[4] & 0xff) << 8) | (m[5] & 0xff);
        boolean found = indexOf(store.read(log), probe) >= 0;
        if (store.transformed()) {
            boolean kms = topic.equals(store.kmsTopic());
            assertEquals(kms ? 6 : 5, version, "a segment compressed in frames and encrypted"
                    + (kms ? " under a KMS key" : "") + ": its manifest version");
            assertFalse(found, "a record value in plain text in the encrypted log object " + log);
        } else {
            assertEquals(2, version, "a plain segment's manifest version");
            assertTrue(found, "the record value in the plain log object " + log);
        }
    }

    static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
