package dev.nupa.cluster;

import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.spi.cluster.ClusterManager;

/**
 * A clustered Vert.x on a fabric node: Vert.x's Hazelcast or Infinispan cluster manager ({@link ClusterConfig}) keeps
 * the members and the event bus's subscriptions over Linux sockets, and the event bus's connections between members go
 * over the fabric, to each node's IPv4 address (see docs/cluster.md).
 *
 * <pre>{@code
 * Vertx vertx = NupaCluster.create(StackConfig.defaults(fabric, 0),
 *         ClusterConfig.loopback(5701, List.of("127.0.0.1:5701", "127.0.0.1:5702"))).await();
 * vertx.eventBus().consumer("greeter", msg -> msg.reply("hello " + msg.body()));
 * }</pre>
 */
public final class NupaCluster {
    private NupaCluster() {
    }

    /** A clustered Vert.x instance on the node {@code node} describes, in the cluster {@code cluster} describes. */
    public static Future<Vertx> create(StackConfig node, ClusterConfig cluster) {
        return create(node, cluster, new VertxOptions());
    }

    /**
     * As {@link #create(StackConfig, ClusterConfig)} with {@code options} for the rest of Vert.x (the event bus's host
     * and public host are the node's fabric address whatever they say). Fails, with nothing left joined, when the node
     * cannot open (a fabric address in use) or the cluster manager cannot start (its port taken); the message says which.
     */
    public static Future<Vertx> create(StackConfig node, ClusterConfig cluster, VertxOptions options) {
        if (cluster.eventBusPort() != 0) {
            options = new VertxOptions(options);
            options.getEventBusOptions().setPort(cluster.eventBusPort());
        }
        ClusterManager manager;
        try {
            manager = manager(cluster);
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
        return NupaVertx.clustered(node, options, manager).recover(e -> Future.failedFuture(explain(node, cluster, e)));
    }

    /**
     * The cluster manager {@code cluster} describes, not yet joined, for code that builds Vert.x itself
     * ({@link NupaVertx#clustered} takes it, or any other {@link ClusterManager}).
     */
    public static ClusterManager manager(ClusterConfig cluster) {
        return switch (cluster.manager()) {
            case HAZELCAST -> HazelcastManager.create(cluster);
            case INFINISPAN -> InfinispanManager.create(cluster);
        };
    }

    /** One line: what did not start, and why (the node's, the cluster manager's or the event bus's own message). */
    private static IllegalStateException explain(StackConfig node, ClusterConfig cluster, Throwable e) {
        return new IllegalStateException("clustered Vert.x on fabric node " + node.address() + " of " + node.fabric()
                + " did not start: " + (e.getMessage() != null ? e.getMessage() : e.toString()), e);
    }
}
