package dev.nupa.node;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

import dev.nupa.gateway.vertx.GatewayVerticle;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.l2.Link;
import dev.nupa.l2.PcapWriter;
import dev.nupa.roce.ip.Ipv4RoceIp;
import dev.nupa.roce.vertx.RoceVerticle;
import dev.nupa.tcp.TcpLayer;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.opentelemetry.api.OpenTelemetry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.tracing.opentelemetry.OpenTelemetryTracingFactory;

/**
 * A node, assembled: a Vert.x instance whose event loop is the node's datapath (the Vert.x transport,
 * {@link NupaVertx}) with the link (fabric, neighbor directory), IP (IPv4, ICMP, UDP) and TCP under
 * it, RDMA (verbs context and connection manager) deployed on it, and a local capture if asked for (`nupa capture`
 * observers are served by the fabric node itself, docs/fabric-layout.md 12). Applications use
 * the node through that Vert.x instance, unmodified:
 *
 * <pre>{@code
 * NupaNode node = NupaNode.create(NodeConfig.defaults(Path.of("/dev/shm/f1"), 0)).await();
 * DatagramSocket s = node.vertx().createDatagramSocket();
 * s.handler(p -> s.send(p.data(), p.sender().port(), p.sender().host()));
 * s.listen(7, "0.0.0.0");
 * }</pre>
 */
public final class NupaNode {
    private final Vertx vertx;
    private final Link link;
    private final Ipv4Stack ip;
    private final TcpLayer tcp;
    private final RoceVerticle roceVerticle;
    private final PcapWriter pcap;
    private volatile GatewayVerticle gateway;
    private final OpenTelemetry openTelemetry;
    private TcpTelemetry tcpTelemetry;
    private RdmaTelemetry rdmaTelemetry;

    private NupaNode(Vertx vertx, Link link, Ipv4Stack ip, TcpLayer tcp, RoceVerticle roce, PcapWriter pcap,
                     OpenTelemetry openTelemetry) {
        this.openTelemetry = openTelemetry;
        this.vertx = vertx;
        this.link = link;
        this.ip = ip;
        this.tcp = tcp;
        this.roceVerticle = roce;
        this.pcap = pcap;
    }

    /**
     * Starts Vert.x on a node of its own (the Vert.x transport, {@link NupaVertx}): the node's event
     * loop is its datapath, so the sockets, verbs and handlers of the node all run on that one
     * thread, with no hand-over. {@link #close()} closes that Vert.x instance and the node leaves
     * the fabric. The Future fails with the reason (fabric, address, IP, route, capture file).
     */
    public static Future<NupaNode> create(NodeConfig config) {
        PcapWriter pcap = null;
        Vertx vertx;
        try {
            if (config.capture() != null) { // first: a capture that cannot be written starts nothing
                pcap = PcapWriter.open(config.capture());
            }
            StackConfig stack = new StackConfig(config.fabric(), config.address(), config.geometry(), config.mtu(),
                    config.idle(), config.ip(), config.routes(), config.tcp(), config.tcpBufferMemory(),
                    config.gateway() == null ? 1 : config.gateway().queues(), config.linkFaults(), config.access()); // a loop per TAP queue
            vertx = config.openTelemetry() == null ? NupaVertx.create(stack)
                    : NupaVertx.create(stack, tracingOptions(), new OpenTelemetryTracingFactory(config.openTelemetry()));
        } catch (IOException e) {
            return Future.failedFuture(new UncheckedIOException("cannot write capture " + config.capture() + ": "
                    + e.getMessage(), e));
        } catch (RuntimeException e) {
            closeQuietly(pcap);
            return Future.failedFuture(e);
        }
        FabricStack fabricStack = NupaVertx.stack(vertx);
        RoceVerticle roce = new RoceVerticle(fabricStack.link(), fabricStack.neighbors(),
                fabricStack.ip() == null ? null : new Ipv4RoceIp(fabricStack.ip()));
        if (pcap != null) {
            fabricStack.link().setCapture(pcap);
        }
        NupaNode node = new NupaNode(vertx, fabricStack.link(), fabricStack.ip(), fabricStack.tcp(), roce, pcap,
                config.openTelemetry());
        // Without a context: on a failure it completes after the node's event loop is gone.
        Promise<NupaNode> started = Promise.promise();
        if (config.openTelemetry() != null) {
            node.tcpTelemetry().tracer(config.openTelemetry().getTracer("dev.nupa.node.tcp"));
        }
        vertx.deployVerticle(roce).compose(id -> {
            if (config.gateway() == null) {
                return Future.succeededFuture(id);
            }
            node.gateway = new GatewayVerticle(NupaVertx.stacks(vertx).stream().map(FabricStack::ip).toList(), config.gateway());
            return vertx.deployVerticle(node.gateway);
        }).onComplete(ar -> {
            if (ar.succeeded()) {
                if (config.openTelemetry() != null) {
                    node.rdmaTelemetry().tracer(config.openTelemetry().getTracer("dev.nupa.node.rdma"));
                }
                LinkFaultTable.publish(node.link());
                started.complete(node);
            } else {
                node.close().onComplete(v -> started.fail(ar.cause()));
            }
        });
        return started.future();
    }

    public Vertx vertx() {
        return vertx;
    }

    public Ipv4Stack ip() {
        return ip;
    }

    public Link link() {
        return link;
    }

    public TcpLayer tcp() {
        return tcp;
    }

    /**
     * The node's RDMA: its verbs context and connection manager live on the datapath thread; reach them
     * with {@code rdma().execute(ctx -> ...)} (docs/rdma.md, docs/embedding.md).
     */
    public RoceVerticle rdma() {
        return roceVerticle;
    }

    /**
     * The node's TCP as spans and histograms ({@link TcpTelemetry}): started, and made the TCP layer's observer, on
     * first use (a traced node, or {@link NodeMetrics}); until then the layer calls nothing.
     */
    synchronized TcpTelemetry tcpTelemetry() {
        if (tcpTelemetry == null) {
            TcpTelemetry t = new TcpTelemetry();
            link.execute(() -> tcp.setObserver(t));
            tcpTelemetry = t;
        }
        return tcpTelemetry;
    }

    /**
     * The node's RDMA work requests as spans and a histogram ({@link RdmaTelemetry}): started, and made the verbs
     * context's observer, on first use (a traced node, or {@link NodeMetrics}).
     */
    synchronized RdmaTelemetry rdmaTelemetry() {
        if (rdmaTelemetry == null) {
            RdmaTelemetry t = new RdmaTelemetry();
            roceVerticle.execute(ctx -> ctx.setObserver(t));
            rdmaTelemetry = t;
        }
        return rdmaTelemetry;
    }

    /** Where the node's spans go, or null when it is not traced ({@link NodeConfig#withOpenTelemetry}). */
    public OpenTelemetry openTelemetry() {
        return openTelemetry;
    }

    /** Tracing on for Vert.x; each server and client then follows its own tracing policy (PROPAGATE by default). */
    static io.vertx.core.VertxOptions tracingOptions() {
        return new io.vertx.core.VertxOptions().setTracingOptions(new io.vertx.core.tracing.TracingOptions());
    }

    /** The gateway's Ethernet side, or null when the node is no gateway. */
    public GatewayVerticle gateway() {
        return gateway;
    }

    /** Takes the node down: closes its Vert.x instance; the node leaves the fabric, its capture is flushed and closed. */
    public Future<Void> close() {
        if (pcap != null && link.capture() == pcap) {
            link.setCapture(null); // the file is closed below; frames sent meanwhile are not written to it
        }
        return vertx.close().andThen(v -> {
            closeQuietly(pcap);
            TcpTelemetry t;
            RdmaTelemetry r;
            synchronized (this) {
                t = tcpTelemetry;
                r = rdmaTelemetry;
            }
            if (t != null) {
                t.close(); // what the loop recorded before it stopped becomes spans and histogram points
            }
            if (r != null) {
                r.close();
            }
        });
    }

    private static void closeQuietly(PcapWriter pcap) {
        if (pcap != null) {
            try {
                pcap.close();
            } catch (RuntimeException e) {
                // reported by the capture's lost count; the node is down either way
            }
        }
    }

    /** Closes and waits (for command-line use). */
    public void closeAndWait() {
        try {
            close().await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("node did not close cleanly: " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "node " + link().address() + " " + ip().config() + " mtu " + link().mtu();
    }
}
