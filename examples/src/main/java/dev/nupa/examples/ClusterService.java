package dev.nupa.examples;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

/**
 * A service on the clustered event bus, on a fabric node (default 0, 10.0.0.1): the consumer {@code greeter} answers each
 * request, and a subscriber to {@code news} prints what is published. The members' messages go over the fabric;
 * the cluster manager (Hazelcast, or Infinispan with {@code --cluster-manager infinispan}: every member the same) keeps
 * the members on loopback, at ports FIRST_PORT..FIRST_PORT+3 (members 0 to 3, by default the node's number; default
 * 5701). Serves until Ctrl-C, then leaves the cluster and the fabric. {@link ClusterClient} uses it.
 * Options (before the other arguments) for a node on another fabric than 10.0.0.0/24 or behind a gateway:
 * {@code --ip IP/LEN} (the node's address), {@code --route "NET/LEN via GW"} (repeatable), {@code --member K} (its
 * membership port FIRST_PORT+K, when two fabrics' nodes share a number).
 */
public final class ClusterService {
    /** Nodes 0 to MEMBERS-1 may join: the cluster manager lists their membership ports. */
    static final int MEMBERS = 4;

    private ClusterService() {
    }

    /** Registers the greeter and the news subscriber on {@code vertx}; completes once the cluster knows them. */
    public static Future<?> start(Vertx vertx) {
        String from = address(vertx);
        return Future.all(
                vertx.eventBus().<String>consumer("greeter", m -> m.reply("hello " + m.body() + " from " + from)).completion(),
                vertx.eventBus().<String>consumer("news", m -> {
                    System.out.println("news: " + m.body());
                    if (m.replyAddress() != null) {
                        m.reply("subscribed"); // a publisher asking whether a subscriber is known yet
                    }
                }).completion());
    }

    /** The node's fabric IPv4 address, where its event bus listens. */
    static String address(Vertx vertx) {
        return Ipv4Address.toString(NupaVertx.stack(vertx).ip().address());
    }

    /**
     * The cluster managers' INFO lines (joins, partitions, views, rebalances), kept out of the examples' output; warnings
     * still show. Held here: java.util.logging keeps only weak references to its loggers.
     */
    private static final List<Logger> MANAGER_LOGS = List.of(Logger.getLogger("com.hazelcast"),
            Logger.getLogger("org.infinispan"), Logger.getLogger("org.jgroups"));

    /** The cluster of the examples: this member's membership port, and the ports of members 0 to 3. */
    static ClusterConfig cluster(int member, int firstPort, ClusterConfig.Manager manager) {
        MANAGER_LOGS.forEach(l -> l.setLevel(Level.WARNING));
        if (member < 0 || member >= MEMBERS) {
            throw new IllegalArgumentException("the examples' cluster has members 0 to " + (MEMBERS - 1) + ", not " + member
                    + " (--member K chooses another)");
        }
        List<String> members = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            members.add("127.0.0.1:" + (firstPort + i));
        }
        return ClusterConfig.loopback(firstPort + member, members).withManager(manager);
    }

    /**
     * The examples' options: {@code --ip}, {@code --route}, {@code --member}, {@code --cluster-manager}; what is left is
     * positional.
     */
    record Options(StackConfig stack, int member, ClusterConfig.Manager manager, List<String> rest) {
        static final String USAGE = "[--ip IP/LEN] [--route \"NET/LEN via GW\"]... [--member K] [--cluster-manager hazelcast|infinispan] ";

        /** Parses {@code args} for a node whose number is the first positional argument after the fabric file. */
        static Options parse(String[] args, int defaultNode) {
            String ip = null;
            List<Route> routes = new ArrayList<>();
            int member = -1;
            ClusterConfig.Manager manager = ClusterConfig.Manager.HAZELCAST;
            List<String> rest = new ArrayList<>();
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--ip", "--route", "--member", "--cluster-manager" -> {
                        if (i + 1 == args.length) {
                            throw new IllegalArgumentException(args[i] + " needs a value");
                        }
                        String v = args[++i];
                        switch (args[i - 1]) {
                            case "--ip" -> ip = v;
                            case "--route" -> routes.add(Route.parse(v));
                            case "--cluster-manager" -> manager = ClusterConfig.Manager.parse(v);
                            default -> member = Integer.parseInt(v);
                        }
                    }
                    default -> rest.add(args[i]);
                }
            }
            if (rest.isEmpty()) {
                throw new IllegalArgumentException("the fabric file is missing");
            }
            int node = rest.size() > 1 ? Integer.parseInt(rest.get(1)) : defaultNode;
            StackConfig stack = StackConfig.defaults(Path.of(rest.get(0)), node);
            if (ip != null) {
                stack = stack.withIp(IpConfig.parse(ip));
            }
            if (!routes.isEmpty()) {
                stack = stack.withRoutes(routes);
            }
            return new Options(stack, member >= 0 ? member : node, manager, rest);
        }

        int intArg(int index, int otherwise) {
            return rest.size() > index ? Integer.parseInt(rest.get(index)) : otherwise;
        }
    }

    public static void main(String[] args) throws Exception {
        Options o;
        int firstPort;
        try {
            o = Options.parse(args, 0);
            if (o.rest().size() > 3) {
                throw new IllegalArgumentException("too many arguments");
            }
            firstPort = o.intArg(2, 5701);
        } catch (RuntimeException e) {
            System.err.println("cluster-service: " + e.getMessage() + "; usage: ClusterService " + Options.USAGE
                    + "FABRIC_FILE [NODE [FIRST_PORT]]   (e.g. /dev/shm/f1 0 5701)");
            System.exit(2);
            return;
        }
        int member = o.member();
        Vertx vertx;
        try {
            vertx = NupaCluster.create(o.stack(), cluster(member, firstPort, o.manager())).await();
        } catch (Exception e) {
            System.err.println("cluster-service: " + e.getMessage());
            System.exit(1);
            return;
        }
        start(vertx).await();
        System.out.printf("cluster service on %s: greeter answers, news is printed (%s on 127.0.0.1:%d); Ctrl-C stops%n",
                address(vertx), o.manager() == ClusterConfig.Manager.HAZELCAST ? "Hazelcast" : "Infinispan", firstPort + member);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> vertx.close().await()));
    }
}
