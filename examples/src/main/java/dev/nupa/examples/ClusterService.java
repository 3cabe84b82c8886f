package dev.nupa.examples;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

/**
 * A service on the clustered event bus, on a fabric node (default 0, 10.0.0.1): the consumer {@code greeter} answers each
 * request, and a subscriber to {@code news} prints what is published. The members' messages go over the fabric;
 * Hazelcast keeps the members on loopback, at ports FIRST_PORT..FIRST_PORT+3 (nodes 0 to 3; default 5701). Serves until
 * Ctrl-C, then leaves the cluster and the fabric. {@link ClusterClient} uses it.
 */
public final class ClusterService {
    /** Nodes 0 to MEMBERS-1 may join: Hazelcast lists their membership ports. */
    static final int MEMBERS = 4;

    private ClusterService() {
    }

    /** Registers the greeter and the news subscriber on {@code vertx}; completes once the cluster knows them. */
    public static Future<?> start(Vertx vertx) {
        String from = address(vertx);
        return Future.all(
                vertx.eventBus().<String>consumer("greeter", m -> m.reply("hello " + m.body() + " from " + from)).completion(),
                vertx.eventBus().<String>consumer("news", m -> System.out.println("news: " + m.body())).completion());
    }

    /** The node's fabric IPv4 address, where its event bus listens. */
    static String address(Vertx vertx) {
        return Ipv4Address.toString(NupaVertx.stack(vertx).ip().address());
    }

    /** Hazelcast's INFO lines (joins, partitions, connections), kept out of the examples' output; warnings still show. */
    private static final Logger HAZELCAST_LOG = Logger.getLogger("com.hazelcast");

    /** The cluster of the examples: this node's membership port, and the ports of nodes 0 to 3. */
    static ClusterConfig cluster(int node, int firstPort) {
        HAZELCAST_LOG.setLevel(Level.WARNING);
        if (node < 0 || node >= MEMBERS) {
            throw new IllegalArgumentException("the examples' cluster has nodes 0 to " + (MEMBERS - 1) + ", not " + node);
        }
        List<String> members = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            members.add("127.0.0.1:" + (firstPort + i));
        }
        return ClusterConfig.loopback(firstPort + node, members);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: ClusterService FABRIC_FILE [NODE [FIRST_PORT]]   (e.g. /dev/shm/f1 0 5701)");
            System.exit(2);
        }
        int node = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        int firstPort = args.length > 2 ? Integer.parseInt(args[2]) : 5701;
        Vertx vertx;
        try {
            vertx = NupaCluster.create(StackConfig.defaults(Path.of(args[0]), node), cluster(node, firstPort)).await();
        } catch (Exception e) {
            System.err.println("cluster-service: " + e.getMessage());
            System.exit(1);
            return;
        }
        start(vertx).await();
        System.out.printf("cluster service on %s: greeter answers, news is printed (Hazelcast on 127.0.0.1:%d); Ctrl-C stops%n",
                address(vertx), firstPort + node);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> vertx.close().await()));
    }
}
