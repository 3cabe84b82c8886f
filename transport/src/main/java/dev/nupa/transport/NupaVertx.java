package dev.nupa.transport;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.internal.VertxInternal;

/**
 * Starts Vert.x on a fabric node: its one event loop runs the node's datapath and its TCP, HTTP,
 * gRPC and UDP go over the fabric, so unmodified Vert.x code (NetServer, NetClient, HttpServer,
 * HttpClient, DatagramSocket) talks to other fabric nodes, with stack and handlers on one thread.
 *
 * <pre>{@code
 * Vertx vertx = NupaVertx.create(StackConfig.defaults(Path.of("/dev/shm/f1"), 0)); // 10.0.0.1
 * vertx.createHttpServer().requestHandler(req -> req.response().end("hello")).listen(8080);
 * }</pre>
 *
 * Closing the Vert.x instance closes the node: it leaves the fabric.
 */
public final class NupaVertx {
    private NupaVertx() {
    }

    /** A Vert.x instance on the node {@code config} describes; throws with the reason (fabric, address, IP). */
    public static Vertx create(StackConfig config) {
        return create(config, new VertxOptions());
    }

    /**
     * As {@link #create(StackConfig)} with {@code options} for the rest of Vert.x; its event-loop pool
     * size is the node's one loop whatever it says.
     */
    public static Vertx create(StackConfig config, VertxOptions options) {
        FabricStack stack = FabricStack.open(config);
        NupaTransport transport = new NupaTransport(stack);
        Vertx vertx;
        try {
            vertx = Vertx.builder()
                    .with(new VertxOptions(options).setEventLoopPoolSize(1))
                    .withTransport(new Named(transport))
                    .build();
        } catch (RuntimeException e) {
            stack.close();
            throw e;
        }
        VertxInternal vi = (VertxInternal) vertx;
        if (!(vi.transport() instanceof NupaTransport)) {
            vertx.close();
            throw new IllegalStateException("Vert.x did not take the NUPA transport; it fell back to "
                    + vi.transport().getClass().getName());
        }
        // Netty starts a loop's thread on its first task: start it now, so the node answers (ping, RST,
        // ARP-like lookups) before the application has asked anything of it, and wait until it owns the node.
        try {
            vi.nettyEventLoopGroup().next().submit(() -> { }).get(10, java.util.concurrent.TimeUnit.SECONDS);
        } catch (Exception e) {
            vertx.close();
            throw new IllegalStateException("the event loop of " + stack + " did not start: " + e, e);
        }
        return vertx;
    }

    /** The node under a Vert.x instance from {@link #create}; throws if it has none. */
    public static FabricStack stack(Vertx vertx) {
        if (((VertxInternal) vertx).transport() instanceof NupaTransport t) {
            return t.stack();
        }
        throw new IllegalArgumentException("this Vert.x instance does not run on a fabric node; create it with NupaVertx.create");
    }

    /** The public face of the transport, as Vert.x's builder takes it. */
    private record Named(NupaTransport implementation) implements io.vertx.core.transport.Transport {
        @Override
        public String name() {
            return "nupa";
        }

        @Override
        public boolean available() {
            return true;
        }

        @Override
        public Throwable unavailabilityCause() {
            return null;
        }
    }
}
