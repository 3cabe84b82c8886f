package dev.nupa.transport;

import java.util.List;

import dev.nupa.ip.wire.Ipv4Address;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.spi.VertxTracerFactory;
import io.vertx.core.spi.cluster.ClusterManager;
import io.vertx.core.internal.VertxInternal;

/**
 * Starts Vert.x on a fabric node: its event loops run the node's datapath (a stack per loop, see
 * {@link StackConfig#loops}) and its TCP, HTTP, gRPC and UDP go over the fabric, so unmodified Vert.x
 * code (NetServer, NetClient, HttpServer, HttpClient, DatagramSocket) talks to other fabric nodes, with
 * stack and handlers on one thread.
 *
 * <pre>{@code
 * Vertx vertx = NupaVertx.create(StackConfig.defaults(Path.of("/dev/shm/f1"), 0)); // 10.0.0.1
 * vertx.createHttpServer().requestHandler(req -> req.response().end("hello")).listen(8080);
 * }</pre>
 *
 * Closing the Vert.x instance closes the node: it leaves the fabric. Code that builds Vert.x itself takes
 * {@link #transport}; a program that is not to change at all gets its nodes from system properties
 * ({@link NupaVertxProvider}, {@code nupa run}).
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
     * size is the node's {@link StackConfig#loops} whatever it says.
     */
    public static Vertx create(StackConfig config, VertxOptions options) {
        return create(config, options, null);
    }

    /**
     * As {@link #create(StackConfig, VertxOptions)}, tracing with {@code tracer} when it is not null (Vert.x's tracing
     * SPI, e.g. vertx-opentelemetry's factory; the options' tracing options, if any, go to it).
     */
    public static Vertx create(StackConfig config, VertxOptions options, VertxTracerFactory tracer) {
        return create(new NupaTransport(config), config.loops(), options, tracer);
    }

    /**
     * A Vert.x instance on {@code node}, built already ({@link NupaStack#builder}: with layers such as RDMA or a
     * gateway): its event loops run the node's stacks, one each, and closing the Vert.x instance closes the node. If
     * the Vert.x build fails, the node is closed and the failure thrown. {@code tracer} may be null.
     */
    public static Vertx create(NupaStack node, VertxOptions options, VertxTracerFactory tracer) {
        return create(new NupaTransport(node), node.stacks().size(), options, tracer);
    }

    /**
     * A clustered Vert.x instance on the node {@code config} describes, with {@code manager} (Hazelcast, Infinispan, ...:
     * module cluster's {@code NupaCluster} configures them) keeping the members and the event bus's subscriptions. The
     * event bus's connections between members go over the fabric: its host and public host are the node's IPv4 address,
     * whatever {@code options} say; the cluster manager's own traffic goes over the sockets it is configured with.
     * The node opens first, so a wrong fabric or a taken address fails before the manager joins anything. If joining or
     * starting the event bus fails, Vert.x leaves the cluster and closes, the node with it, and the future fails with
     * the reason.
     */
    public static Future<Vertx> clustered(StackConfig config, VertxOptions options, ClusterManager manager) {
        NupaStack node;
        try {
            node = NupaStack.builder(config).open();
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
        String ip = Ipv4Address.toString(node.primary().ip().address());
        VertxOptions o = new VertxOptions(options).setEventLoopPoolSize(node.stacks().size());
        o.getEventBusOptions().setHost(ip).setClusterPublicHost(ip);
        NupaTransport transport = new NupaTransport(node);
        Future<Vertx> built;
        try {
            built = Vertx.builder().with(o).withTransport(new Named(transport)).withClusterManager(manager).buildClustered();
        } catch (RuntimeException e) {
            transport.abandon();
            return Future.failedFuture(e);
        }
        return built.transform(ar -> {
            if (ar.failed()) {
                transport.abandon(); // Vert.x has closed itself (and its loops) already; this covers a build that never got that far
                return Future.failedFuture(ar.cause());
            }
            if (((VertxInternal) ar.result()).transport() != transport) {
                return ar.result().close().transform(v -> Future.failedFuture(new IllegalStateException(
                        "Vert.x did not take the NUPA transport; it fell back to " + ((VertxInternal) ar.result()).transport().getClass().getName())));
            }
            return Future.succeededFuture(ar.result());
        });
    }

    private static Vertx create(NupaTransport transport, int loops, VertxOptions options, VertxTracerFactory tracer) {
        Vertx vertx;
        try {
            var builder = Vertx.builder()
                    .with(new VertxOptions(options).setEventLoopPoolSize(loops))
                    .withTransport(new Named(transport));
            if (tracer != null) {
                builder.withTracer(tracer);
            }
            vertx = builder.build();
        } catch (RuntimeException e) {
            transport.abandon();
            throw e;
        }
        if (((VertxInternal) vertx).transport() != transport) {
            vertx.close();
            transport.abandon();
            throw new IllegalStateException("Vert.x did not take the NUPA transport; it fell back to "
                    + ((VertxInternal) vertx).transport().getClass().getName());
        }
        return vertx;
    }

    /**
     * Runs {@code vertx}'s UDP and HTTP paths {@code rounds} times each over its own loopback (127.0.0.1), then as
     * many times between two throwaway nodes on a private fabric file, waits for the JIT compilers to settle, and
     * closes what it opened. A fresh JVM loads a path's classes and interprets its code the first times it runs: a
     * service that calls this before it starts listening pays that at start (about 3 s for 500 rounds on 2 vCPUs), not
     * with its first requests (see docs/vertx-transport.md). Call it off the event loop, e.g.
     * {@code NupaVertx.warmUp(vertx, 500).await()}.
     */
    public static Future<Void> warmUp(Vertx vertx, int rounds) {
        if (rounds < 1) {
            throw new IllegalArgumentException("warm-up rounds " + rounds + " is below 1; give how many round trips to run, e.g. 500");
        }
        return Warmup.run(vertx, rounds);
    }

    /**
     * The transport of a Vert.x instance on the node {@code config} describes, for code that builds Vert.x itself
     * (a framework, a test base): {@code Vertx.builder().withTransport(NupaVertx.transport(config)).build()}. The
     * node opens as that Vert.x is built (a wrong fabric or a taken address fails the build with the reason), its
     * event loops are the node's whatever the options say, and closing the Vert.x instance closes the node. One
     * transport serves one Vert.x instance.
     */
    public static io.vertx.core.transport.Transport transport(StackConfig config) {
        return new Named(new NupaTransport(config));
    }

    /** The node under a Vert.x instance from {@link #create}; throws if it has none. */
    public static NupaStack node(Vertx vertx) {
        return transport(vertx).node();
    }

    /** The node under a Vert.x instance from {@link #create} (its primary loop's stack); throws if it has none. */
    public static FabricStack stack(Vertx vertx) {
        return transport(vertx).stack();
    }

    /** The stacks of the node's event loops, the primary first. */
    public static List<FabricStack> stacks(Vertx vertx) {
        return transport(vertx).stacks();
    }

    private static NupaTransport transport(Vertx vertx) {
        if (((VertxInternal) vertx).transport() instanceof NupaTransport t) {
            return t;
        }
        throw new IllegalArgumentException("this Vert.x instance does not run on a fabric node; create it with NupaVertx.create, "
                + "with NupaVertx.transport, or with the nupa.fabric system property set");
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
