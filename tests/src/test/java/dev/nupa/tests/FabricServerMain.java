package dev.nupa.tests;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import dev.nupa.examples.HelloServer;
import dev.nupa.ip.Route;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;

/**
 * The example services ({@link HelloServer}: HTTP 8080, TCP echo 7, UDP echo 9, gRPC 50051) on fabric node
 * ADDRESS with routes beyond its subnet, for peers on the far side of a gateway. Args: FABRIC ADDRESS [ROUTE...].
 */
public final class FabricServerMain {
    private FabricServerMain() {
    }

    public static void main(String[] args) throws Exception {
        List<Route> routes = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            routes.add(Route.parse(args[i]));
        }
        Vertx vertx = NupaVertx.create(StackConfig.defaults(Path.of(args[0]), Integer.parseInt(args[1])).withRoutes(routes));
        HelloServer.start(vertx).await();
        System.out.println("READY " + NupaVertx.stack(vertx).ip().config());
        Thread.currentThread().join();
    }
}
