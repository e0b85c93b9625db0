package io.rsm.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * Our plugin against another {@link RemoteStorageManager} with per-chunk transforms (by default Aiven's
 * {@code io.aiven.kafka.tieredstorage.RemoteStorageManager}, loaded by class name: its jars are only on the
 * run-time class path), both in this one JVM, on the filesystem store, on the same segment files.
 *
 * <p>Two kinds of segment: {@code json}, JSON-like records in uncompressed batches (compressible), and
 * {@code gzip-batches}, the same kind of records in producer-compressed (gzip) batches (compression of the
 * chunks gains little). Four settings per plugin: {@code none}, {@code compression} (zstd; with each plugin's
 * heuristic on, which skips data already compressed), {@code encryption} (AES-256-GCM chunks; ours wraps the
 * data key under a 256-bit key from a file, Aiven's under an RSA key pair) and {@code both}. Both plugins cut
 * the segment into chunks of the same size (4 MiB, ours' default, unless set) and have no chunk cache (the
 * default of each); each keeps its default manifest cache.
 *
 * <p>Measured: the copy of a kind's segments under fresh ids, as each does it by default (ours syncs every
 * object and directory it writes; Aiven's filesystem store does not, so Aiven's copy with its store synced
 * afterwards is given too), warm-up rounds then several rounds, the managers in rotating order; and a
 * 1 MiB remote fetch read batch after batch as {@link FetchLatencyBench}'s second measure reads it
 * ({@code fetchLogSegment} at a batch boundary, until 1 MiB, close), at random positions, the same positions for every
 * manager, in rotating order, after a warm-up. Every fetch's bytes, and one whole read of every segment from
 * every manager, are compared with the segment file; any difference fails the run.
 *
 * <p>Arguments: {@code <work dir> [fetches per kind, default 300] [copy rounds, default 5] [peer class]
 * [copy warm-up rounds, default 10]}; system property {@code rsm.bench.chunk.size} sets both plugins' chunk size.
 * Prints {@code RESULT-SIZE <kind> <setting> <plugin> <stored bytes> <segment bytes>},
 * {@code RESULT-COPY <kind> <setting> <plugin> <median ms> ms <MiB/s> MiB/s for <MiB> MiB},
 * {@code RESULT-FETCH <kind> <setting> <plugin> <median us> <p90 us> <n>} (and {@code COPY-ROUNDS} lines with
 * every measured copy, to see a drift), then a table with the ratios.
 * The system property {@code rsm.bench.ours.config} ({@code k=v,k=v}) adds settings to ours, for a diagnostic
 * run. Run by hand (see benches/README.md); not part of any test run.
 */
public final class TransformsBench {
    static final String DEFAULT_PEER = "io.aiven.kafka.tieredstorage.RemoteStorageManager";
    static final int FETCH_BYTES = 1 << 20;
    /** The chunk size of both plugins: 4 MiB (ours' default), or system property rsm.bench.chunk.size. */
    static final int CHUNK_SIZE = Integer.getInteger("rsm.bench.chunk.size", 4 << 20);
    static final String[] SETTINGS = {"none", "compression", "encryption", "both"};
    static final String[] KINDS = {"json", "gzip-batches"};
    static final String OURS = "rsm";
    static final String PEER = "aiven";

    private TransformsBench() {}

    /** One configured manager: a plugin with one setting, on its own store directory. */
    static final class Manager {
        final String plugin;
        final String setting;
        final RemoteStorageManager rsm;
        final Path store;

        Manager(String plugin, String setting, RemoteStorageManager rsm, Path store) {
            this.plugin = plugin;
            this.setting = setting;
            this.rsm = rsm;
            this.store = store;
        }

        String name() {
            return setting + " " + plugin;
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        int iterations = args.length > 1 ? Integer.parseInt(args[1]) : 300;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        String peerClass = args.length > 3 ? args[3] : DEFAULT_PEER;
        int warmupRounds = args.length > 4 ? Integer.parseInt(args[4]) : 10;
        Files.createDirectories(dir);
        TopicIdPartition tp = new TopicIdPartition(Uuid.randomUuid(), new TopicPartition("bench", 0));

        // Two segments of about 32 MiB per kind: batches of about 16 KiB (40 records of ~400 bytes)
        // uncompressed, or about 14 KiB once gzip-compressed (128 records).
        Map<String, List<TestSegments.Segment>> segments = new LinkedHashMap<>();
        Map<TestSegments.Segment, byte[]> bytes = new HashMap<>();
        segments.put("json", new ArrayList<>());
        segments.put("gzip-batches", new ArrayList<>());
        for (int i = 0; i < 2; i++) {
            segments.get("json").add(TestSegments.writeJson(dir.resolve("segments-json"), i * 1_000_000L, 2000,
                    40, false, 300 + i));
            segments.get("gzip-batches").add(TestSegments.writeJson(dir.resolve("segments-gzip"),
                    i * 1_000_000L, 2300, 128, true, 400 + i));
        }
        for (List<TestSegments.Segment> l : segments.values()) {
            for (TestSegments.Segment s : l) {
                bytes.put(s, Files.readAllBytes(s.log));
            }
        }

        // Keys, made here for this run: ours a 256-bit key in hex, Aiven's an RSA key pair in PEM.
        Path keys = Files.createDirectories(dir.resolve("keys"));
        byte[] kek = new byte[32];
        new SecureRandom().nextBytes(kek);
        StringBuilder hex = new StringBuilder();
        for (byte b : kek) {
            hex.append(String.format("%02x", b));
        }
        Path oursKey = keys.resolve("k1.hex");
        Files.writeString(oursKey, hex + "\n");
        KeyPairGenerator rsa = KeyPairGenerator.getInstance("RSA");
        rsa.initialize(4096);
        KeyPair pair = rsa.generateKeyPair();
        Path publicPem = keys.resolve("public.pem");
        Path privatePem = keys.resolve("private.pem");
        Files.writeString(publicPem, pem("PUBLIC KEY", pair.getPublic().getEncoded()));
        Files.writeString(privatePem, pem("PRIVATE KEY", pair.getPrivate().getEncoded()));

        List<Manager> managers = new ArrayList<>();
        for (String setting : SETTINGS) {
            boolean compress = setting.equals("compression") || setting.equals("both");
            boolean encrypt = setting.equals("encryption") || setting.equals("both");

            Path oursStore = dir.resolve("store-" + OURS + "-" + setting);
            Map<String, Object> oc = new HashMap<>();
            oc.put("store.url", TestStore.fileUrl(oursStore));
            oc.put("broker.id", 1);
            oc.put("chunk.size", String.valueOf(CHUNK_SIZE));
            if (compress) {
                oc.put("compression.enabled", "true");
                oc.put("compression.heuristic.enabled", "true");
            }
            if (encrypt) {
                oc.put("encryption.enabled", "true");
                oc.put("encryption.key.id", "k1");
                oc.put("encryption.keys", "k1");
                oc.put("encryption.key.k1.file", oursKey.toString());
            }
            // Extra settings of ours for a diagnostic run (system property rsm.bench.ours.config, k=v,k=v).
            for (String kv : System.getProperty("rsm.bench.ours.config", "").split(",")) {
                if (!kv.isBlank()) {
                    String[] p = kv.split("=", 2);
                    oc.put(p[0].trim(), p[1].trim());
                }
            }
            RustRemoteStorageManager ours = new RustRemoteStorageManager();
            ours.configure(oc);
            managers.add(new Manager(OURS, setting, ours, oursStore));

            Path peerStore = Files.createDirectories(dir.resolve("store-" + PEER + "-" + setting));
            Map<String, Object> pc = new HashMap<>();
            pc.put("storage.backend.class", "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage");
            pc.put("storage.root", peerStore.toString());
            pc.put("chunk.size", String.valueOf(CHUNK_SIZE));
            pc.put("broker.id", 1);
            if (compress) {
                pc.put("compression.enabled", "true");
                pc.put("compression.heuristic.enabled", "true");
            }
            if (encrypt) {
                pc.put("encryption.enabled", "true");
                pc.put("encryption.key.pair.id", "k1");
                pc.put("encryption.key.pairs", "k1");
                pc.put("encryption.key.pairs.k1.public.key.file", publicPem.toString());
                pc.put("encryption.key.pairs.k1.private.key.file", privatePem.toString());
            }
            RemoteStorageManager peer = (RemoteStorageManager) Class.forName(peerClass).getDeclaredConstructor()
                    .newInstance();
            peer.configure(pc);
            managers.add(new Manager(PEER, setting, peer, peerStore));
        }
        int n = managers.size();

        // The segments each manager keeps for the fetches; the first copy of each also gives the stored size.
        Map<String, List<List<RemoteLogSegmentMetadata>>> kept = new HashMap<>();
        Map<String, long[]> stored = new HashMap<>();
        for (String kind : KINDS) {
            List<List<RemoteLogSegmentMetadata>> perManager = new ArrayList<>();
            long[] sizes = new long[n];
            for (int m = 0; m < n; m++) {
                Manager mg = managers.get(m);
                long before = treeBytes(mg.store);
                List<RemoteLogSegmentMetadata> mds = new ArrayList<>();
                for (TestSegments.Segment s : segments.get(kind)) {
                    RemoteLogSegmentMetadata md = s.metadata(tp);
                    mg.rsm.copyLogSegmentData(md, s.data());
                    mds.add(md);
                }
                sizes[m] = treeBytes(mg.store) - before;
                perManager.add(mds);
            }
            kept.put(kind, perManager);
            stored.put(kind, sizes);
        }

        // Every segment read whole from every manager must be the file.
        byte[] buf = new byte[64 * 1024];
        for (String kind : KINDS) {
            List<TestSegments.Segment> segs = segments.get(kind);
            for (int m = 0; m < n; m++) {
                for (int k = 0; k < segs.size(); k++) {
                    byte[] want = bytes.get(segs.get(k));
                    byte[] got = new byte[want.length];
                    int read = 0;
                    try (InputStream in = managers.get(m).rsm.fetchLogSegment(kept.get(kind).get(m).get(k), 0)) {
                        for (int r; (r = in.read(buf)) >= 0; ) {
                            if (read + r > got.length) {
                                throw new IllegalStateException(managers.get(m).name() + " " + kind
                                        + ": more bytes than the segment's " + want.length);
                            }
                            System.arraycopy(buf, 0, got, read, r);
                            read += r;
                        }
                    }
                    if (read != want.length || !Arrays.equals(got, want)) {
                        throw new IllegalStateException(managers.get(m).name() + " " + kind + " segment " + k
                                + ": read " + read + " bytes that are not the file's " + want.length);
                    }
                }
            }
        }
        System.out.println("every segment read back whole from every manager equals its file");

        // Copies: each kind's segments under fresh ids; warm-up rounds (a JIT's AES-GCM can take several to
        // reach its steady speed), then `rounds`, rotating who goes first.
        Map<String, List<List<Double>>> copyMs = new HashMap<>();
        Map<String, List<List<Double>>> copySyncedMs = new HashMap<>();
        for (String kind : KINDS) {
            copyMs.put(kind, lists(n));
            copySyncedMs.put(kind, lists(n));
        }
        for (int round = -warmupRounds; round < rounds; round++) {
            for (String kind : KINDS) {
                for (int j = 0; j < n; j++) {
                    int m = Math.floorMod(round + j, n);
                    Manager mg = managers.get(m);
                    List<RemoteLogSegmentMetadata> fresh = new ArrayList<>();
                    long t = System.nanoTime();
                    for (TestSegments.Segment s : segments.get(kind)) {
                        RemoteLogSegmentMetadata md = s.metadata(tp);
                        mg.rsm.copyLogSegmentData(md, s.data());
                        fresh.add(md);
                    }
                    double ms = (System.nanoTime() - t) / 1e6;
                    double synced = ms;
                    if (!mg.plugin.equals(OURS)) {
                        FetchLatencyBench.syncTree(mg.store);
                        synced = (System.nanoTime() - t) / 1e6;
                    }
                    if (round >= 0) {
                        copyMs.get(kind).get(m).add(ms);
                        copySyncedMs.get(kind).get(m).add(synced);
                    }
                    for (RemoteLogSegmentMetadata md : fresh) {
                        mg.rsm.deleteLogSegmentData(md);
                    }
                }
            }
        }

        // Fetches: the same random batch boundaries (at least 1 MiB before the end) for every manager.
        Map<String, List<List<Long>>> fetchUs = new HashMap<>();
        Random random = new Random(1);
        for (String kind : KINDS) {
            List<TestSegments.Segment> segs = segments.get(kind);
            List<List<Long>> sinks = lists(n);
            for (int i = -50; i < iterations; i++) {
                int k = random.nextInt(segs.size());
                TestSegments.Segment s = segs.get(k);
                int pos = s.randomBatchPosition(random, FETCH_BYTES);
                for (int j = 0; j < n; j++) {
                    int m = Math.floorMod(i + j, n);
                    long us = fetch(managers.get(m), kept.get(kind).get(m).get(k), pos, bytes.get(s), kind);
                    if (i >= 0) {
                        sinks.get(m).add(us);
                    }
                }
            }
            fetchUs.put(kind, sinks);
        }

        // Results.
        Map<String, double[]> copyMed = new HashMap<>();
        Map<String, double[]> copySyncedMed = new HashMap<>();
        Map<String, long[][]> fetchPct = new HashMap<>();
        for (String kind : KINDS) {
            long total = 0;
            for (TestSegments.Segment s : segments.get(kind)) {
                total += s.size();
            }
            double mib = total / 1048576.0;
            double[] cm = new double[n];
            double[] cs = new double[n];
            long[][] fp = new long[n][];
            for (int m = 0; m < n; m++) {
                Manager mg = managers.get(m);
                System.out.println("RESULT-SIZE " + kind + " " + mg.setting + " " + mg.plugin + " "
                        + stored.get(kind)[m] + " " + total);
                cm[m] = FetchLatencyBench.median(copyMs.get(kind).get(m));
                cs[m] = FetchLatencyBench.median(copySyncedMs.get(kind).get(m));
                System.out.println(String.format(Locale.ROOT, "RESULT-COPY %s %s %s %.0f ms %.0f MiB/s for %.0f MiB",
                        kind, mg.setting, mg.plugin, cm[m], mib / (cm[m] / 1000), mib));
                StringBuilder each = new StringBuilder();
                for (double ms : copyMs.get(kind).get(m)) {
                    each.append(each.length() == 0 ? "" : ",").append(Math.round(ms));
                }
                System.out.println("COPY-ROUNDS " + kind + " " + mg.setting + " " + mg.plugin + " " + each + " ms");
                if (!mg.plugin.equals(OURS)) {
                    System.out.println(String.format(Locale.ROOT,
                            "RESULT-COPY %s %s %s+sync %.0f ms %.0f MiB/s for %.0f MiB",
                            kind, mg.setting, mg.plugin, cs[m], mib / (cs[m] / 1000), mib));
                }
                List<Long> sorted = new ArrayList<>(fetchUs.get(kind).get(m));
                Collections.sort(sorted);
                fp[m] = new long[] {FetchLatencyBench.percentile(sorted, 50), FetchLatencyBench.percentile(sorted, 90)};
                System.out.println("RESULT-FETCH " + kind + " " + mg.setting + " " + mg.plugin + " " + fp[m][0] + " "
                        + fp[m][1] + " " + sorted.size());
            }
            copyMed.put(kind, cm);
            copySyncedMed.put(kind, cs);
            fetchPct.put(kind, fp);
        }

        // The table. Ratios are speed ratios (higher is faster): for copies the other's time over this one's,
        // for fetches the other's median over this one's.
        System.out.println();
        System.out.println(String.format(Locale.ROOT, "%-13s %-12s %-6s %9s %9s %11s %9s %9s %8s",
                "kind", "setting", "plugin", "copy ms", "MiB/s", "+sync ms", "fetch p50", "p90 us", "stored%"));
        for (String kind : KINDS) {
            long total = 0;
            for (TestSegments.Segment s : segments.get(kind)) {
                total += s.size();
            }
            double mib = total / 1048576.0;
            for (int m = 0; m < n; m++) {
                Manager mg = managers.get(m);
                double cm = copyMed.get(kind)[m];
                System.out.println(String.format(Locale.ROOT, "%-13s %-12s %-6s %9.0f %9.0f %11s %9d %9d %7.1f%%",
                        kind, mg.setting, mg.plugin, cm, mib / (cm / 1000),
                        mg.plugin.equals(OURS) ? "-" : String.format(Locale.ROOT, "%.0f", copySyncedMed.get(kind)[m]),
                        fetchPct.get(kind)[m][0], fetchPct.get(kind)[m][1], 100.0 * stored.get(kind)[m] / total));
            }
        }
        System.out.println();
        System.out.println("speed ratios (x > 1: faster than the reference)");
        System.out.println(String.format(Locale.ROOT, "%-13s %-12s %14s %14s %14s %14s %14s %14s %14s",
                "kind", "setting", "copy rsm/aiv", "rsm/aiv+sync", "fetch rsm/aiv", "copy rsm/aiv0",
                "copy aiv/aiv0", "fetch rsm/aiv0", "fetch aiv/aiv0"));
        for (String kind : KINDS) {
            double[] cm = copyMed.get(kind);
            double[] cs = copySyncedMed.get(kind);
            long[][] fp = fetchPct.get(kind);
            int aivenNone = index(managers, PEER, "none");
            for (String setting : SETTINGS) {
                int o = index(managers, OURS, setting);
                int a = index(managers, PEER, setting);
                System.out.println(String.format(Locale.ROOT,
                        "%-13s %-12s %14.2f %14.2f %14.2f %14.2f %14.2f %14.2f %14.2f", kind, setting,
                        cm[a] / cm[o], cs[a] / cm[o], (double) fp[a][0] / fp[o][0], cm[aivenNone] / cm[o],
                        cm[aivenNone] / cm[a], (double) fp[aivenNone][0] / fp[o][0],
                        (double) fp[aivenNone][0] / fp[a][0]));
            }
        }

        for (Manager mg : managers) {
            mg.rsm.close();
        }
        if (NativeBridge.liveHandles(1) != 0) {
            throw new IllegalStateException("native streams left open: " + NativeBridge.liveHandles(1));
        }
    }

    /**
     * One broker-style 1 MiB read (as {@link FetchLatencyBench#fetch}), the batches gathered in a buffer that is
     * compared with the file once the clock has stopped; returns microseconds.
     */
    private static final byte[] FETCHED = new byte[FETCH_BYTES + (4 << 20)];

    static long fetch(Manager mg, RemoteLogSegmentMetadata md, int pos, byte[] file, String kind) throws Exception {
        byte[] out = FETCHED;
        int got = 0;
        ByteBuffer header = ByteBuffer.allocate(17);
        long t = System.nanoTime();
        try (InputStream in = mg.rsm.fetchLogSegment(md, pos)) {
            while (got < FETCH_BYTES) {
                readFully(in, header.array(), 17, 0);
                int batchLength = header.getInt(8);
                byte[] batch = new byte[12 + batchLength];
                System.arraycopy(header.array(), 0, batch, 0, 17);
                readFully(in, batch, batch.length - 17, 17);
                System.arraycopy(batch, 0, out, got, batch.length);
                got += batch.length;
            }
        }
        long us = (System.nanoTime() - t) / 1000;
        if (!Arrays.equals(out, 0, got, file, pos, pos + got)) {
            throw new IllegalStateException(mg.name() + " " + kind + ": the " + got + " bytes fetched at " + pos
                    + " are not the file's");
        }
        return us;
    }

    private static void readFully(InputStream in, byte[] b, int len, int off) throws IOException {
        TestSegments.readFully(in, b, len, off);
    }

    private static int index(List<Manager> managers, String plugin, String setting) {
        for (int i = 0; i < managers.size(); i++) {
            if (managers.get(i).plugin.equals(plugin) && managers.get(i).setting.equals(setting)) {
                return i;
            }
        }
        throw new IllegalArgumentException(plugin + " " + setting);
    }

    private static <T> List<List<T>> lists(int n) {
        List<List<T>> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            l.add(new ArrayList<>());
        }
        return l;
    }

    /** The bytes of the regular files under {@code root}. */
    private static long treeBytes(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
