package dev.nupa.perf;

import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The no-role half of the perf contract: both sides as child processes on a fresh fabric file, then cleanup. */
public final class PerfRunner {
    static final String READY = "ready";

    private PerfRunner() {
    }

    /** A fresh fabric file's path for the tools that make their own ({@link ShmFabric#freshPath}). */
    public static Path freshFabricPath(String what) {
        return ShmFabric.freshPath(what);
    }

    static int runBoth(PerfOptions o, String command, FabricGeometry geometry, List<String> extra) throws Exception {
        Path path = freshFabricPath("perf");
        ShmFabric.create(path, geometry).close();
        Process[] children = new Process[2];
        Thread cleanup = new Thread(() -> {
            Children.stop(children[1], 10); // time for the client to write what it measured (--report)
            Children.kill(children[0]);
            deleteQuietly(path);
        });
        Runtime.getRuntime().addShutdownHook(cleanup);
        try {
            boolean pin = !o.noPin && Runtime.getRuntime().availableProcessors() >= 2;
            List<String> jvm = new java.util.ArrayList<>(o.childJvmOptions());
            if (o.gcLog) {
                jvm.add("-Xlog:gc:stderr");
            }
            children[0] = Children.start(jvm, o.childArgs(command, "--server", path, pin ? 0 : -1, extra));
            BufferedReader serverOut = Children.stdout(children[0]);
            Children.awaitLine(children[0], serverOut, READY);
            Thread.ofPlatform().daemon().start(() -> relay(serverOut));
            children[1] = Children.start(jvm, o.childArgs(command, "--client", path, pin ? 1 : -1, extra));
            relay(Children.stdout(children[1]));
            int client = Children.waitFor(children[1], 3600);
            int server = Children.waitFor(children[0], 30);
            if (client != 0) {
                return client;
            }
            return server;
        } finally {
            cleanup.run();
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs anyway
            }
        }
    }

    private static void relay(BufferedReader in) {
        try {
            String line;
            while ((line = in.readLine()) != null) {
                System.out.println(line);
            }
            System.out.flush();
        } catch (java.io.IOException e) {
            // the child is gone; its exit status tells the rest
        }
    }

    public static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (java.io.IOException e) {
            System.err.println("nupa: could not remove " + path + ": " + e.getMessage());
        }
    }
}
