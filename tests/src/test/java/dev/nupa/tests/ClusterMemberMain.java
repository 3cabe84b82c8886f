package dev.nupa.tests;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;

/**
 * A member of a clustered Vert.x in a process of its own, for {@code EventBusClusterTest} and
 * {@code EventBusAcrossFabricsTest}. Arguments: [--cluster-manager hazelcast|infinispan] FABRIC NODE MEMBERSHIP_PORT
 * MEMBERS (host:port,...) CLUSTER_NAME ID [IP/LEN ROUTE] (the node's address, default the fabric's plan, and a route
 * such as {@code 10.0.1.0/24 via 10.0.0.1}); Hazelcast unless told otherwise.
 * It serves, on the event bus over the fabric:
 * <ul>
 * <li>{@code svc}: replies {@code ID:BODY} (every member: point-to-point goes round robin);</li>
 * <li>{@code only.ID}: replies {@code ID:BODY} (this member alone);</li>
 * <li>{@code news}: counts what is published;</li>
 * <li>{@code seq.ID}: checks that each sender's numbers (header {@code from}, body the number) arrive in order;</li>
 * <li>{@code ctl.ID}: {@code count} answers the news count, {@code seq} answers {@code received=N outOfOrder=M},
 * {@code spray TARGET N} sends 0..N-1 to {@code seq.TARGET} as sender ID and answers once sent.</li>
 * </ul>
 * Prints {@code READY ID} once its consumers are registered in the cluster, then runs until killed.
 */
public final class ClusterMemberMain {
    private ClusterMemberMain() {
    }

    public static void main(String[] args) {
        ClusterConfig.Manager manager = ClusterConfig.Manager.HAZELCAST;
        if (args.length > 1 && args[0].equals("--cluster-manager")) {
            manager = ClusterConfig.Manager.parse(args[1]);
            args = Arrays.copyOfRange(args, 2, args.length);
        }
        Path fabric = Path.of(args[0]);
        int node = Integer.parseInt(args[1]);
        int port = Integer.parseInt(args[2]);
        List<String> members = List.of(args[3].split(","));
        String name = args[4];
        String id = args[5];
        StackConfig stack = StackConfig.defaults(fabric, node);
        if (args.length > 7) {
            stack = stack.withIp(IpConfig.parse(args[6])).withRoutes(List.of(Route.parse(args[7])));
        }
        ClusterConfig cluster = ClusterConfig.loopback(port, members).withManager(manager).withName(name)
                .withFailureDetection(Duration.ofSeconds(5));
        Vertx vertx;
        try {
            vertx = NupaCluster.create(stack, cluster).await();
        } catch (Exception e) {
            System.out.println("FAILED " + e.getMessage());
            System.exit(2);
            return;
        }
        EventBus bus = vertx.eventBus();
        long[] news = {0};
        long[] received = {0};
        long[] outOfOrder = {0};
        Map<String, Long> next = new HashMap<>();
        Future.all(List.of(
                bus.<String>consumer("svc", m -> m.reply(id + ":" + m.body())).completion(),
                bus.<String>consumer("only." + id, m -> m.reply(id + ":" + m.body())).completion(),
                bus.<String>consumer("news", m -> news[0]++).completion(),
                bus.<Long>consumer("seq." + id, m -> {
                    String from = m.headers().get("from");
                    long expected = next.getOrDefault(from, 0L);
                    if (m.body() != expected) {
                        outOfOrder[0]++;
                    }
                    next.put(from, m.body() + 1);
                    received[0]++;
                }).completion(),
                bus.<String>consumer("ctl." + id, m -> {
                    String[] cmd = m.body().split(" ");
                    switch (cmd[0]) {
                        case "count" -> m.reply(Long.toString(news[0]));
                        case "seq" -> m.reply("received=" + received[0] + " outOfOrder=" + outOfOrder[0]);
                        case "spray" -> {
                            DeliveryOptions from = new DeliveryOptions().addHeader("from", id);
                            long n = Long.parseLong(cmd[2]);
                            for (long i = 0; i < n; i++) {
                                bus.send("seq." + cmd[1], i, from);
                            }
                            m.reply("sent " + n);
                        }
                        default -> m.fail(400, "unknown command " + m.body());
                    }
                }).completion()))
                .onSuccess(v -> System.out.println("READY " + id))
                .onFailure(e -> {
                    System.out.println("FAILED " + e);
                    System.exit(3);
                });
    }
}
