package dev.nupa.examples;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import dev.nupa.cluster.ClusterRequests;
import dev.nupa.cluster.NupaCluster;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;

/**
 * A client of {@link ClusterService} on the clustered event bus, on another fabric node (default 1, 10.0.0.2): it joins
 * the cluster, sends COUNT requests to {@code greeter} (the services answer in turn) and prints the replies, publishes
 * COUNT messages to {@code news} (every service prints each), asks once more so that what it published has gone out, and
 * leaves. Takes {@link ClusterService}'s options ({@code --ip}, {@code --route}, {@code --member},
 * {@code --cluster-manager}).
 */
public final class ClusterClient {
    private ClusterClient() {
    }

    public static void main(String[] args) throws Exception {
        ClusterService.Options o;
        int firstPort;
        int count;
        try {
            o = ClusterService.Options.parse(args, 1);
            if (o.rest().size() > 4) {
                throw new IllegalArgumentException("too many arguments");
            }
            firstPort = o.intArg(2, 5701);
            count = o.intArg(3, 3);
        } catch (RuntimeException e) {
            System.err.println("cluster-client: " + e.getMessage() + "; usage: ClusterClient " + ClusterService.Options.USAGE
                    + "FABRIC_FILE [NODE [FIRST_PORT [COUNT]]]   (e.g. /dev/shm/f1 1 5701 3)");
            System.exit(2);
            return;
        }
        Vertx vertx;
        try {
            vertx = NupaCluster.create(o.stack(), ClusterService.cluster(o.member(), firstPort, o.manager())).await();
        } catch (Exception e) {
            System.err.println("cluster-client: " + e.getMessage());
            System.exit(1);
            return;
        }
        String me = ClusterService.address(vertx);
        try {
            System.out.println(greet(vertx, "client at " + me + " (first)"));
            for (int i = 1; i <= count; i++) {
                System.out.println(greet(vertx, "request " + i));
            }
            // A publish reaches the subscribers this member knows of; the service's news subscriber reaches its view
            // through the cluster manager's registry apart from the greeter, so ask it once before publishing.
            request(vertx, "news", "subscriber check from " + me);
            for (int i = 1; i <= count; i++) {
                vertx.eventBus().publish("news", "news " + i + " from " + me);
            }
            // Sent on the connections the requests opened, after the news: its reply comes once they are out.
            System.out.println(greet(vertx, "client at " + me + " (last)"));
        } finally {
            vertx.close().await(30, TimeUnit.SECONDS);
        }
    }

    private static String greet(Vertx vertx, String who) throws Exception {
        return request(vertx, "greeter", who);
    }

    /**
     * One request to {@code address}. A service that has just joined reaches this member through the registry a
     * moment later: while no consumer is known there, it asks again, for up to 30 s ({@link ClusterRequests}).
     */
    private static String request(Vertx vertx, String address, String body) throws Exception {
        return ClusterRequests.<String>requestOnceKnown(vertx, address, body, Duration.ofSeconds(30)).map(Message::body)
                .await(40, TimeUnit.SECONDS);
    }
}
