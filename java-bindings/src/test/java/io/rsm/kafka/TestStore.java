package io.rsm.kafka;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The remote store a test broker tiers to: the plugin's {@code rsm.config.*} settings for it, and a view of the
 * keys it holds that does not go through our SDK (a directory walk, or S3's ListObjectsV2 over plain HTTP), so
 * the end-to-end test sees what really landed in the store.
 */
abstract class TestStore {
    /** The plugin's transform settings on top of the store's, and their secrets. */
    private final Map<String, String> transforms = new TreeMap<>();
    private final List<String> transformSecrets = new ArrayList<>();

    /** A short name for reports ("filesystem", "s3"). */
    abstract String name();

    /** The broker's {@code rsm.config.*} lines that reach this store. */
    abstract Map<String, String> storeSettings();

    /** The secret values among {@link #storeSettings()}. */
    List<String> storeSecrets() {
        return List.of();
    }

    /** The bytes of the object {@code key} (relative to the store's root). */
    abstract byte[] read(String key) throws IOException;

    /** The broker's {@code rsm.config.*} lines: the store's, and the transforms' if any. */
    final Map<String, String> brokerSettings() {
        Map<String, String> p = new TreeMap<>(storeSettings());
        p.putAll(transforms);
        return p;
    }

    /**
     * The arguments that point the {@code rsm} command at this store, as the plugin sees it:
     * {@code --store URL} and a {@code --set key=value} per other setting.
     */
    final List<String> cliArgs() {
        List<String> out = new ArrayList<>();
        brokerSettings().forEach((k, v) -> {
            String key = k.substring("rsm.config.".length());
            if (key.equals("store.url")) {
                out.add(0, v);
                out.add(0, "--store");
            } else {
                out.add("--set");
                out.add(key + "=" + v);
            }
        });
        return out;
    }

    /** The secret values among {@link #brokerSettings()} (and a key file's content): none may show in the broker's log. */
    final List<String> secrets() {
        List<String> out = new ArrayList<>(storeSecrets());
        out.addAll(transformSecrets);
        return out;
    }

    /**
     * This store with the plugin's compression (its heuristic off) and encryption on: a fresh random
     * key-encryption key in a file under {@code keyDir}, as an operator keeps one.
     */
    TestStore compressedAndEncrypted(Path keyDir) throws IOException {
        byte[] kek = new byte[32];
        new java.security.SecureRandom().nextBytes(kek);
        StringBuilder hex = new StringBuilder();
        for (byte b : kek) {
            hex.append(String.format("%02x", b));
        }
        Path file = Files.createDirectories(keyDir).resolve("kek-e2e-1.key");
        Files.writeString(file, hex + "\n");
        transforms.put("rsm.config.compression.enabled", "true");
        // The test's records are random bytes or producer-compressed batches, which the heuristic would leave
        // as they are: without it every chunk goes through zstd and then AES-GCM.
        transforms.put("rsm.config.compression.heuristic.enabled", "false");
        transforms.put("rsm.config.encryption.enabled", "true");
        transforms.put("rsm.config.encryption.key.id", "e2e-1");
        transforms.put("rsm.config.encryption.keys", "e2e-1");
        transforms.put("rsm.config.encryption.key.e2e-1.file", file.toString());
        transformSecrets.add(hex.toString());
        return this;
    }

    /** The topic whose segments are wrapped under a KMS key ({@link #withKmsKeyFor}), or null. */
    private String kmsTopic;

    /**
     * This store (encrypted already) with the segments of {@code topic} wrapped under an AWS KMS key of the
     * store's server (moto's KMS, on the S3 endpoint), the other topics' under the key file: the plugin's
     * per-topic key setting and its KMS client through the broker.
     */
    TestStore withKmsKeyFor(String topic) throws IOException {
        throw new UnsupportedOperationException(name() + " has no KMS");
    }

    /** The topic {@link #withKmsKeyFor} named, or null. */
    String kmsTopic() {
        return kmsTopic;
    }

    /** Whether {@link #compressedAndEncrypted} was asked for. */
    boolean transformed() {
        return !transforms.isEmpty();
    }

    /**
     * The keys under {@code prefix} (relative to the store's root, e.g. {@code topic-id/0/}), relative to
     * that root. A store that cannot be read right now gives what it could read; the callers poll.
     */
    abstract List<String> keysUnder(String prefix);

    /** The filesystem store under {@code root}. */
    static TestStore filesystem(Path root) {
        return new Filesystem(root);
    }

    /**
     * An S3 store on the server named by the system properties {@code rsm.s3.endpoint}, {@code rsm.s3.bucket},
     * {@code rsm.s3.region}, {@code rsm.s3.access.key} and {@code rsm.s3.secret.key} (tools/java-tests.sh
     * passes moto's), under a fresh prefix. Null when no endpoint is given.
     */
    static TestStore s3FromSystemProperties() {
        String endpoint = System.getProperty("rsm.s3.endpoint", "").trim();
        if (endpoint.isEmpty()) {
            return null;
        }
        String prefix = "e2e-" + UUID.randomUUID().toString().substring(0, 8) + "/";
        return new S3(endpoint, required("rsm.s3.bucket"), prefix, required("rsm.s3.region"),
                required("rsm.s3.access.key"), required("rsm.s3.secret.key"));
    }

    private static String required(String property) {
        String v = System.getProperty(property, "").trim();
        if (v.isEmpty()) {
            throw new IllegalStateException("system property " + property + " is not set");
        }
        return v;
    }

    @Override
    public String toString() {
        return name() + (transformed() ? " (compressed and encrypted)" : "");
    }

    /**
     * The {@code file://} URL of a filesystem store at {@code dir}, which is made first: a filesystem store's
     * directory must exist when the store opens, as an operator makes it.
     */
    static String fileUrl(Path dir) {
        try {
            return "file://" + Files.createDirectories(dir);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static final class Filesystem extends TestStore {
        private final Path root;

        Filesystem(Path root) {
            this.root = root;
        }

        @Override
        String name() {
            return "filesystem";
        }

        @Override
        Map<String, String> storeSettings() {
            Map<String, String> p = new TreeMap<>();
            p.put("rsm.config.store.url", fileUrl(root));
            p.put("rsm.config.fs.fsync", "false");
            return p;
        }

        @Override
        byte[] read(String key) throws IOException {
            return Files.readAllBytes(root.resolve(key));
        }

        @Override
        List<String> keysUnder(String prefix) {
            List<String> out = new ArrayList<>();
            Path dir = root.resolve(prefix);
            if (!Files.isDirectory(dir)) {
                return out;
            }
            // The plugin writes temporary files and renames them, and deletes segments, while we look: an entry
            // that vanished between the directory's read and its visit is skipped, and the rest still listed
            // (Files.walk would stop at it, handing back a partial listing).
            try {
                Files.walkFileTree(dir, new SimpleFileVisitor<Path>() {
                    @Override
                    public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) {
                        if (attrs.isRegularFile()) {
                            out.add(root.relativize(f).toString());
                        }
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult visitFileFailed(Path f, IOException e) throws IOException {
                        if (e instanceof NoSuchFileException) {
                            return FileVisitResult.CONTINUE;
                        }
                        throw e;
                    }
                });
            } catch (NoSuchFileException e) {
                // The directory itself went away: nothing under it.
            } catch (IOException e) {
                throw new UncheckedIOException("listing " + dir, e);
            }
            return out;
        }
    }

    /** S3 through unsigned ListObjectsV2 and GET requests: moto does not check signatures. */
    private static final class S3 extends TestStore {
        private static final Pattern KEY = Pattern.compile("<Key>([^<]*)</Key>");
        private static final Pattern NEXT = Pattern.compile("<NextContinuationToken>([^<]*)</NextContinuationToken>");
        private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        private final String endpoint;
        private final String bucket;
        private final String prefix;
        private final String region;
        private final String accessKey;
        private final String secretKey;

        S3(String endpoint, String bucket, String prefix, String region, String accessKey, String secretKey) {
            this.endpoint = endpoint.replaceAll("/+$", "");
            this.bucket = bucket;
            this.prefix = prefix;
            this.region = region;
            this.accessKey = accessKey;
            this.secretKey = secretKey;
        }

        @Override
        String name() {
            return "s3";
        }

        @Override
        Map<String, String> storeSettings() {
            Map<String, String> p = new TreeMap<>();
            p.put("rsm.config.store.url", "s3://" + bucket + "/" + prefix);
            p.put("rsm.config.s3.endpoint.url", endpoint);
            p.put("rsm.config.s3.region", region);
            p.put("rsm.config.aws.access.key.id", accessKey);
            p.put("rsm.config.aws.secret.access.key", secretKey);
            return p;
        }

        @Override
        List<String> storeSecrets() {
            return List.of(secretKey);
        }

        @Override
        TestStore withKmsKeyFor(String topic) throws IOException {
            // moto does not check signatures: an unsigned CreateKey that names the region makes the key.
            String who = "AWS4-HMAC-SHA256 Credential=" + accessKey + "/20260101/" + region
                    + "/kms/aws4_request, SignedHeaders=host, Signature=0";
            HttpRequest request = HttpRequest.newBuilder(URI.create(endpoint + "/")).timeout(Duration.ofSeconds(30))
                    .header("Authorization", who).header("Content-Type", "application/x-amz-json-1.1")
                    .header("X-Amz-Target", "TrentService.CreateKey")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"Description\":\"rsm e2e\"}")).build();
            String body;
            try {
                HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() != 200) {
                    throw new IOException("KMS CreateKey: HTTP " + response.statusCode() + " " + response.body());
                }
                body = response.body();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            Matcher m = Pattern.compile("\"KeyId\":\\s*\"([^\"]+)\"").matcher(body);
            if (!m.find()) {
                throw new IOException("KMS CreateKey: no KeyId in " + body);
            }
            super.kmsTopic = topic;
            super.transforms.put("rsm.config.encryption.keys", "e2e-1,e2e-kms");
            super.transforms.put("rsm.config.encryption.key.e2e-kms.kms.key.id", m.group(1));
            super.transforms.put("rsm.config.encryption.topic." + topic + ".key.id", "e2e-kms");
            super.transforms.put("rsm.config.encryption.kms.endpoint", endpoint);
            super.transforms.put("rsm.config.encryption.kms.region", region);
            super.transforms.put("rsm.config.encryption.kms.access.key.id", accessKey);
            super.transforms.put("rsm.config.encryption.kms.secret.access.key", secretKey);
            return this;
        }

        @Override
        byte[] read(String key) throws IOException {
            String path = "/" + bucket + "/" + prefix + key;
            // moto lists for anyone but reads a private object only for a request that says who sends it; it
            // does not check the signature, so this one names the access key and signs nothing.
            String who = "AWS4-HMAC-SHA256 Credential=" + accessKey + "/20260101/" + region
                    + "/s3/aws4_request, SignedHeaders=host, Signature=0";
            HttpRequest request = HttpRequest.newBuilder(URI.create(endpoint + path)).timeout(Duration.ofSeconds(30))
                    .header("Authorization", who).GET().build();
            try {
                HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
                if (response.statusCode() != 200) {
                    throw new IOException("GET " + request.uri() + ": HTTP " + response.statusCode());
                }
                return response.body();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
        }

        @Override
        List<String> keysUnder(String relative) {
            List<String> out = new ArrayList<>();
            String token = null;
            try {
                do {
                    String query = "list-type=2&prefix=" + encode(prefix + relative)
                            + (token == null ? "" : "&continuation-token=" + encode(token));
                    HttpRequest request = HttpRequest.newBuilder(URI.create(endpoint + "/" + bucket + "?" + query))
                            .timeout(Duration.ofSeconds(10)).GET().build();
                    HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                    if (response.statusCode() != 200) {
                        throw new IllegalStateException("ListObjectsV2 " + request.uri() + ": HTTP "
                                + response.statusCode() + " " + response.body());
                    }
                    Matcher keys = KEY.matcher(response.body());
                    while (keys.find()) {
                        out.add(unescape(keys.group(1)).substring(prefix.length()));
                    }
                    Matcher next = NEXT.matcher(response.body());
                    token = next.find() ? unescape(next.group(1)) : null;
                } while (token != null);
            } catch (IOException e) {
                throw new IllegalStateException("cannot list s3://" + bucket + "/" + prefix + relative, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            return out;
        }

        private static String encode(String s) {
            return URLEncoder.encode(s, StandardCharsets.UTF_8);
        }

        private static String unescape(String xml) {
            return xml.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'")
                    .replace("&amp;", "&");
        }
    }
}
