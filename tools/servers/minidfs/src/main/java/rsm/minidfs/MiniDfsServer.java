package rsm.minidfs;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;

/**
 * Runs a MiniDFS cluster (one NameNode and {@code --datanodes} DataNodes in this JVM) on loopback for the
 * HDFS backend's tests, until SIGTERM/SIGINT or, with {@code --exit-on-stdin-close}, until stdin closes.
 *
 * <p>Once the cluster is active it prints exactly one line on stdout:
 * {@code MINIDFS_READY hdfs://127.0.0.1:<port> nn-http=127.0.0.1:<port> dn-http=127.0.0.1:<port>,...}
 * (the name node URL, then the HTTP addresses serving {@code /jmx}). Everything else (Hadoop's logs)
 * goes to stderr.
 *
 * <p>Options: {@code --base-dir DIR} (required; the cluster's storage, wiped at start and at exit),
 * {@code --port N} (NameNode RPC port, 0 = a free one), {@code --datanodes N} (default 1),
 * {@code --block-size BYTES} (default 16 MiB, so a 64 MiB object spans several blocks),
 * {@code --conf-dir DIR} (writes a client core-site.xml and hdfs-site.xml there).
 *
 * <p>The settings keep the cluster easy for any client, hdfs-native included: simple authentication (no
 * Kerberos), permissions off, replication no higher than the number of DataNodes, everything on 127.0.0.1.
 */
public final class MiniDfsServer {
    private MiniDfsServer() {}

    public static void main(String[] args) throws Exception {
        String baseDir = null;
        int port = 0;
        int dataNodes = 1;
        long blockSize = 16L << 20;
        String confDir = null;
        boolean exitOnStdinClose = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--base-dir": baseDir = value(args, ++i, a); break;
                case "--port": port = Integer.parseInt(value(args, ++i, a)); break;
                case "--datanodes": dataNodes = Integer.parseInt(value(args, ++i, a)); break;
                case "--block-size": blockSize = Long.parseLong(value(args, ++i, a)); break;
                case "--conf-dir": confDir = value(args, ++i, a); break;
                case "--exit-on-stdin-close": exitOnStdinClose = true; break;
                default: usage("unknown option " + a);
            }
        }
        if (baseDir == null) {
            usage("--base-dir is required");
        }
        if (dataNodes < 1 || port < 0 || port > 65535 || blockSize < (1 << 20)) {
            usage("bad --datanodes, --port or --block-size");
        }

        Configuration conf = new HdfsConfiguration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(baseDir).getAbsolutePath());
        conf.set("hadoop.security.authentication", "simple");
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.setInt("dfs.replication", Math.min(3, dataNodes));
        conf.setLong("dfs.blocksize", blockSize);
        // A lone DataNode cannot be replaced in a write pipeline; do not try.
        conf.setBoolean("dfs.client.block.write.replace-datanode-on-failure.enable", dataNodes > 2);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        // The NameNode's metadata shares the disk with the build. By default it goes into safe mode (and refuses
        // every write and delete for the rest of the run) once that disk has less than 100 MB free, which a
        // moment of a big link step on a full disk can reach; a test cluster should fail only the writes that
        // really do not fit.
        conf.setLong("dfs.namenode.resource.du.reserved", 0L);

        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                .nameNodePort(port)
                .nameNodeHttpPort(0)
                .numDataNodes(dataNodes)
                .format(true)
                .manageNameDfsDirs(true)
                .manageDataDfsDirs(true)
                .checkDataNodeAddrConfig(true)
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("minidfs: shutting down");
            try {
                cluster.shutdown(true);
            } finally {
                stopped.countDown();
            }
        }, "minidfs-shutdown"));
        cluster.waitActive();
        cluster.waitClusterUp();

        String url = "hdfs://127.0.0.1:" + cluster.getNameNodePort();
        if (confDir != null) {
            writeClientConf(new File(confDir), url, Math.min(3, dataNodes), blockSize);
        }
        // The HTTP addresses serve /jmx, whose per-RPC and per-DataNode-op counters let a test count the
        // requests an operation cost on the servers' side.
        StringBuilder dn = new StringBuilder();
        for (DataNode d : cluster.getDataNodes()) {
            dn.append(dn.length() == 0 ? "" : ",").append("127.0.0.1:").append(d.getInfoPort());
        }
        System.out.println("MINIDFS_READY " + url + " nn-http=127.0.0.1:"
                + cluster.getNameNode().getHttpAddress().getPort() + " dn-http=" + dn);
        System.out.flush();

        if (exitOnStdinClose) {
            InputStream in = System.in;
            byte[] buf = new byte[256];
            while (in.read(buf) >= 0) {
                // Ignore input; only its end matters.
            }
            System.err.println("minidfs: stdin closed");
            System.exit(0);
        }
        stopped.await();
    }

    private static void writeClientConf(File dir, String url, int replication, long blockSize)
            throws IOException {
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IOException("cannot create " + dir);
        }
        Configuration core = new Configuration(false);
        core.set("fs.defaultFS", url);
        write(core, new File(dir, "core-site.xml"));
        Configuration hdfs = new Configuration(false);
        hdfs.setInt("dfs.replication", replication);
        hdfs.setLong("dfs.blocksize", blockSize);
        write(hdfs, new File(dir, "hdfs-site.xml"));
    }

    private static void write(Configuration c, File f) throws IOException {
        try (OutputStream out = new FileOutputStream(f)) {
            c.writeXml(out);
        }
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            usage(option + " needs a value");
        }
        return args[i];
    }

    private static void usage(String why) {
        System.err.println("minidfs: " + why);
        System.err.println("usage: MiniDfsServer --base-dir DIR [--port N] [--datanodes N] "
                + "[--block-size BYTES] [--conf-dir DIR] [--exit-on-stdin-close]");
        System.exit(2);
    }
}
