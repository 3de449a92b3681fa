package ember;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A one-node HDFS for ember's tests: starts Hadoop's MiniDFSCluster on a
 * free port of 127.0.0.1, with permissions enforced, copies files into it,
 * prints {@code READY hdfs://127.0.0.1:PORT} and stays up until standard
 * input closes (or the process is killed); then it stops and removes its
 * base folder.
 *
 * <p>Arguments: {@code BASE_DIR [--put LOCAL HDFS_PATH]... [--locked
 * HDFS_PATH]}. {@code --put} copies a local file or folder; {@code
 * --locked} writes a small file with mode 000 (only the superuser, the
 * user that runs this, may read it).
 */
public final class MiniHdfs {
    private MiniHdfs() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: MiniHdfs BASE_DIR [--put LOCAL HDFS_PATH]... [--locked HDFS_PATH]");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
        conf.setBoolean("dfs.permissions.enabled", true);
        conf.setInt("dfs.replication", 1);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
            .numDataNodes(1)
            .nameNodePort(0)
            .nameNodeHttpPort(0)
            .build();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> cluster.shutdown(true)));
        cluster.waitActive();
        FileSystem fs = cluster.getFileSystem();
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--put":
                    fs.copyFromLocalFile(false, true, new Path(args[i + 1]), new Path(args[i + 2]));
                    i += 2;
                    break;
                case "--locked":
                    locked(fs, new Path(args[i + 1]));
                    i += 1;
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        System.out.println("READY hdfs://127.0.0.1:" + cluster.getNameNodePort());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // Stays up until standard input closes.
        }
        System.exit(0);
    }

    /** A small text file only the superuser may read. */
    private static void locked(FileSystem fs, Path path) throws Exception {
        try (FSDataOutputStream out = fs.create(path, true)) {
            out.write("locked words\n".getBytes(StandardCharsets.UTF_8));
        }
        fs.setPermission(path, new FsPermission((short) 0));
    }
}
